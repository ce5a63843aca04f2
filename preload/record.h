/* Registry records as the policy uses them: states, the words a record
 * carries, and the claim helpers that make a free and an munmap racing on
 * one range release it exactly once. */
#ifndef HP_RECORD_H
#define HP_RECORD_H

#include <time.h>
#include <sched.h>

#include "hostpin.h"
#include "hp.h"

/* Registry record states.  BUSY: held briefly by adoption, madvise or a
 * foreign registration; a release waits for it to end. */
enum { HP_REC_LIVE = 1, HP_REC_RELEASING = 2, HP_REC_LEAKED = 3,
       HP_REC_BUSY = 4, HP_REC_CACHED = 5 };
/* rec->user[] words: flags (the allocation site in the upper half); the
 * owner of its registration (backend->owner: the CUDA context it was
 * registered through), written by the record's holder; the stream and
 * event of the last async copy that used the block (HOSTPIN_COPY=async), a
 * pair that the CUDA backend's copy fences (backend_cuda.c) read and write
 * only under their lock for the record. */
enum { HP_U_FLAGS = 0, HP_U_OWNER = 1, HP_U_STREAM = 2, HP_U_EVENT = 3,
       HP_U_COPIES = 4, HP_U_NODE = 5 };
/* HP_U_COPIES: device copies seen through the block (copy.c counts them,
 * relaxed: a count, ordering nothing).  HP_U_NODE: the NUMA node its pages
 * were placed on, plus one (0: not placed). */
/* Internal flag: one or more application registrations overlap; hostpin
 * stepped aside (not in hostpin.h's public set).  foreign.c keeps the
 * ranges. */
#define HP_F_FOREIGN 0x100u
/* Does a registration or import of the program overlap [base, base+len)? */
HP_HIDDEN int hp_foreign_overlaps(uintptr_t base, size_t len);
/* Internal flag: registered at its HOSTPIN_PIN_AFTER-th copy, not yet. */
#define HP_F_LAZY 0x200u
/* Internal flag: a whole device registration of the range was undone by a
 * purge or partial unmap once (pinpart.c): the next one leaves it
 * unregistered. */
#define HP_F_CHURN 0x400u
/* Internal flag: a released block (LEAKED) whose unregistration waits
 * (a CUDA graph capture, or no context now): hp_retry_deferred unregisters
 * and unmaps it later. */
#define HP_F_DEFER 0x800u
/* Internal flag: earned registration; queued for the background
 * registration thread (register.c), its copies staged meanwhile. */
#define HP_F_QUEUED 0x1000u
/* Internal flag: hostpin undoes the block's registration to step aside for
 * the program's (foreign.c): a copy starting now waits until it is done
 * (hp_copy_host), those already started are waited for first. */
#define HP_F_ASIDE 0x2000u
/* Internal flag: registered now inside a program's call (hp_pin), no
 * copy counted on it (passing.c): a copy starting now waits until it is
 * done (hp_copy_host), then sees the block registered or not. */
#define HP_F_PINNING 0x4000u
/* Internal flag: flagged registered through a CUDA context that ended
 * while another thread held it, met by its holder during a graph capture
 * (hp_pin_died says no then): looked at again once no capture runs
 * (adopt.c's ends_again, from hp_adopt_pending). */
#define HP_F_ENDED 0x8000u
/* passing.c: the copies through r between their hp_copy_host and their end
 * (copy.c), counted once per stripe of records and epoch: hp_hold_add's
 * token (never 0) counts the copy in flight and as one that may reach the
 * driver with r's memory as it is (passing); hp_pass_sub(token) lets go of
 * the passing count (its plan never hands the driver r as it is) and
 * returns the token for hp_hold_sub, the copy's end.  After the counts,
 * hp_hold_fence, then hp_hold_waits(r): the flags the copy must let go
 * and wait for (HP_F_ASIDE: r is being stepped aside from; HP_F_PINNING:
 * r is being registered inside a program's call).  hp_count_stripe: r's
 * stripe (records of one stripe share their counts).
 * hp_pass_begin: r (claimed) marked HP_F_PINNING, 1 if no passing copy is
 * counted on it (register it, then hp_pass_end), else 0, unmarked (put it
 * off).  hp_pass_drain, the registration thread's (r, at base, made its
 * own): wait for the passing copies counted before; 0 if stop() said to
 * give up meanwhile.
 * hp_hold_drain: mark r (registered, claimed) HP_F_ASIDE and wait for the
 * copies counted on it before to end (invariant 1: no unregistration
 * under a copy in flight, whatever HOSTPIN_COPY says): 0 (hp_hold_drain_end
 * clears the flag once r is unregistered), or EBUSY after
 * HP_ASIDE_WAIT_NS and HP_ASIDE_WAIT_LOOKS (the flag cleared: a copy's
 * stream may wait for the waiting thread).  Never from a thread that
 * holds a count on r itself (a copy's own path).  Copies counted after a
 * wait began never hold it (epochs, passing.c). */
/* hp_hold_add_all: the token of a copy of more blocks than it records
 * (HP_COPY_RECS), counted as a copy through every block; then, after
 * hp_hold_fence, hp_hold_all_waits: 1 while a mark anywhere (HP_F_PINNING,
 * HP_F_ASIDE, the registration thread's block) says such a copy must let
 * go and wait (passing.c). */
HP_HIDDEN unsigned hp_hold_add(hp_rec_t *r);
HP_HIDDEN unsigned hp_hold_add_all(void);
HP_HIDDEN int hp_hold_all_waits(void);
HP_HIDDEN unsigned hp_pass_sub(unsigned token);
HP_HIDDEN void hp_hold_sub(unsigned token);
HP_HIDDEN void hp_hold_fence(void);
HP_HIDDEN unsigned hp_hold_waits(hp_rec_t *r);
HP_HIDDEN unsigned hp_count_stripe(const hp_rec_t *r);
HP_HIDDEN int hp_pass_begin(hp_rec_t *r);
HP_HIDDEN void hp_pass_end(hp_rec_t *r);
HP_HIDDEN int hp_pass_drain(hp_rec_t *r, uintptr_t base, int (*stop)(void));
HP_HIDDEN int hp_hold_drain(hp_rec_t *r);
HP_HIDDEN void hp_hold_drain_end(hp_rec_t *r);
/* How long a step aside waits for copies in flight: a copy may wait for a
 * stream that waits, in turn, for the registering thread (a host function
 * or a stream memory wait on a flag it sets after its registration; issue
 * 39, the batch pass, item 4): without hostpin nothing waits there.  After
 * this long hostpin stays registered and the program's call is refused as
 * the driver refuses memory already registered (EBUSY).  ... and as many
 * looks of the waiting thread, 1 ms apart: a stall of the whole process
 * meanwhile (stopped, a machine under load, a cgroup's CPU quota) passes
 * the 10 s without the copy getting a chance to end, and refused the
 * program's registration though nothing waited for it (issue 39:
 * regress-diff-c-96518885.prog, 712 in 1 full run in 27). */
#define HP_ASIDE_WAIT_NS (10ull * 1000000000ull)
#define HP_ASIDE_WAIT_LOOKS 10000u
/* register_queue.c: queue a block that earned registration (claimed by the
 * caller, HP_F_LAZY cleared) for the registration thread; 1 if queued, 0
 * if it must be registered now (HOSTPIN_REGISTER_BACKGROUND=0, no staging
 * for it, a forked child, no thread). */
HP_HIDDEN int hp_register_later(hp_rec_t *r, const hp_snap_t *s);
/* pin.c: hp_pin, registering piece by piece and reporting each piece to
 * done (hp_cells_pin_each: done's non-zero answer cancels the rest, the
 * pieces made undone, the block left unregistered); also done(base) before
 * a registration made is undone.  The registration thread's
 * (register.c). */
HP_HIDDEN void hp_pin_each(hp_rec_t *r, uintptr_t base, size_t len,
			   int (*done)(uintptr_t upto));
/* register.c: if r is the block the registration thread is registering,
 * cancel what is left of it and wait until the thread let go of it (the
 * pieces made undone): 1; 0 if r is not that block; -1 at once if a
 * capture parks the thread (or it holds r freed during one): the pieces
 * made cannot be undone before the capture's end, which may be the
 * caller's own to make (a purge then zeroes instead: maps_advise.c; a
 * munmap is refused: maps.c).  hp_register_holds: 1 if the thread holds r. */
HP_HIDDEN int hp_register_cancel(const hp_rec_t *r);
HP_HIDDEN int hp_register_holds(const hp_rec_t *r);
/* 1 while the registration thread has made r (NULL: any block) its own
 * (register.c's pre.r, from before its drain of the passing copies to
 * its last piece): a copy of more blocks than it records (passing.c's
 * ALL), counted since, lets go and waits (copy.c: hold).  Read
 * without a lock, seq_cst.  hp_register_parked: the thread sleeps between
 * two pieces for a capture's end. */
HP_HIDDEN int hp_register_taken(const hp_rec_t *r);
HP_HIDDEN int hp_register_parked(void);
/* The same for free(): while a capture parks the thread (the pieces made
 * cannot be undone before its end), 2 at once: the thread then undoes
 * them and releases the block itself (hp_block_release_freed). */
HP_HIDDEN int hp_register_cancel_free(const hp_rec_t *r);
/* The same for realloc: while a capture parks the thread, 3 at once, the
 * block still the thread's (mapped until the capture's end): the caller
 * moves it and frees the old one (handed over as above). */
HP_HIDDEN int hp_register_cancel_realloc(const hp_rec_t *r);
/* heap.c: release the malloc block r at base, which the program freed
 * while the registration thread held it. */
HP_HIDDEN void hp_block_release_freed(hp_rec_t *r, uintptr_t base);
/* The same, without cancelling: sleep until the thread let go of r. */
HP_HIDDEN int hp_register_wait(const hp_rec_t *r);
/* After a CUDA context's end and its walk (which skips a held block):
 * if the registration thread holds a block whose last piece it made
 * before the end, sleep until it met the end and let go (issue 39 item
 * 5): no block stays flagged registered over a dead piece once the
 * program's call returned. */
HP_HIDDEN void hp_register_end_met(void);
/* The registration thread between two pieces of a block: the capture gate
 * for the next piece, sleeping while a capture holds it: 1; 2: held, but
 * what is left was cancelled meanwhile (or the process exits): undo the
 * pieces made; 0: the process exits during a capture (nothing held).
 * hp_register_wake: a capture ended. */
HP_HIDDEN int hp_register_piece_hold(void);
HP_HIDDEN void hp_register_wake(void);
/* register.c and register_queue.c between them: the job of the block
 * base, len queued as jr, run by the thread (0: done or gone; 1: held by
 * another thread now, try again); the thread's sleep while a capture
 * prohibits its registrations (a capture's end, a cancel or the exit wakes
 * it: hp_register_wake); whether the process exits (the registration in
 * progress cancelled) or the queue stopped (the exit, a forked child); a
 * forked child's reset of the queue; 1 on the registration thread. */
HP_HIDDEN int hp_register_run(hp_rec_t *jr, uintptr_t base, size_t len);
HP_HIDDEN void hp_register_capture_sleep(void);
HP_HIDDEN int hp_register_exiting(void);
HP_HIDDEN int hp_register_stopped(void);
HP_HIDDEN void hp_register_queue_fork_child(void);
HP_HIDDEN extern HP_TLS int hp_registrar;
#define HP_KIND_MASK (HOSTPIN_KIND_MALLOC | HOSTPIN_KIND_MMAP)
#define HP_PIN_MASK (HOSTPIN_LOCKED | HOSTPIN_REGISTERED)
#define HP_SITE_SHIFT 32

static inline size_t hp_page_up(size_t n)
{
	return (n + HP_PAGE_SIZE - 1) & ~(HP_PAGE_SIZE - 1);
}

/* relaxed throughout: flags are written by the thread that owns the record
 * (it won the claim or created it); other readers only report. */
static inline unsigned hp_rsite(hp_rec_t *r)
{
	return (unsigned)(atomic_load_explicit(&r->user[HP_U_FLAGS],
					       memory_order_relaxed) >>
			  HP_SITE_SHIFT);
}

static inline unsigned hp_rflags(hp_rec_t *r)
{
	return (unsigned)atomic_load_explicit(&r->user[HP_U_FLAGS],
					      memory_order_relaxed);
}

/* r's flags (or read(r), of its words) for a thread that holds no claim
 * on r and may find it back in the registry's pool: a copy's record
 * (hp_copy_t), whose block another thread freed after the copy's walk.
 * 0 while r is FREE: its flags word is then the pool's link (registry.c,
 * put_rec), whose bits may read as any flag (cases/197-copy_freed.sh).  A
 * record reused meanwhile reads as the block it holds now (another
 * generation: which may be the memory the copy reaches, at the same
 * address, so never taken for gone).  The word read again after the
 * flags: a change means they may be the link; read again. */
static inline unsigned hp_rec_read_live(hp_rec_t *r,
					unsigned (*read)(hp_rec_t *))
{
	for (;;) {
		/* acquire: the block's flags as the word's writer left them */
		uint64_t w = atomic_load_explicit(&r->word,
						  memory_order_acquire);
		if (hp_word_state(w) == HP_REC_FREE)
			return 0;
		unsigned f = read(r);
		/* pairs with put_rec's release store of the link: a link
		 * read here, the word's FREE (or a reuse) is seen below */
		atomic_thread_fence(memory_order_acquire);
		if (atomic_load_explicit(&r->word, memory_order_relaxed) == w)
			return f;
	}
}

static inline unsigned hp_rflags_live(hp_rec_t *r)
{
	return hp_rec_read_live(r, hp_rflags);
}

static inline void hp_set_rflags(hp_rec_t *r, unsigned f)
{
	atomic_store_explicit(&r->user[HP_U_FLAGS],
			      ((uintptr_t)hp_rsite(r) << HP_SITE_SHIFT) | f,
			      memory_order_relaxed);
}

static inline void hp_set_rsite(hp_rec_t *r, unsigned site)
{
	atomic_store_explicit(&r->user[HP_U_FLAGS],
			      ((uintptr_t)site << HP_SITE_SHIFT) | hp_rflags(r),
			      memory_order_relaxed);
}

/* Claim r (LIVE or CACHED) for release, waiting out a BUSY holder; 0 if it
 * is in no state to be released (someone else releases it, or it leaked). */
/* For a wait on another thread's record: non-zero once secs seconds have
 * passed since the first call with *t0 zeroed (the clock is read every
 * 1024 spins). */
static inline int hp_waited(struct timespec *t0, unsigned spins, long secs)
{
	if (spins & 1023)
		return 0;
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	if (t0->tv_sec == 0 && t0->tv_nsec == 0) {
		*t0 = now;
		return 0;
	}
	return now.tv_sec - t0->tv_sec >= secs;
}

static inline int hp_claim_release(hp_rec_t *r, hp_snap_t *s)
{
	/* The state to claim from: the snapshot's, or (a BUSY snapshot)
	 * whichever of LIVE and CACHED its holder leaves.  A holder that
	 * comes and goes between the snapshot and the claim (the
	 * registration thread, adoption) leaves it as it was: claim again;
	 * a record that changed hands meanwhile (another generation, or
	 * CACHED taken, LIVE cached) is not ours to release. */
	uint32_t from = hp_word_state(s->word);
	uint64_t gen = s->word >> 32;
	for (;;) {
		uint32_t st = hp_word_state(s->word);
		if (st == HP_REC_LIVE || st == HP_REC_CACHED) {
			if ((from == HP_REC_BUSY || st == from) &&
			    hp_registry_claim(r, s->word, HP_REC_RELEASING))
				return 1;
			if (from != HP_REC_BUSY && st != from)
				return 0;
		} else if (st == HP_REC_BUSY) {
			/* the registration thread's block: what is left
			 * cancelled, after one piece at most, asleep; other
			 * holds are brief */
			int c = hp_register_cancel(r);
			if (c < 0)
				return 0; /* parked for a capture: not now */
			if (!c)
				sched_yield();
		} else {
			return 0; /* someone else releases it, or it leaked */
		}
		if (hp_registry_lookup(&hp_reg, s->base, s) != r ||
		    s->word >> 32 != gen)
			return 0;
	}
}

/* Hold r briefly (adoption, madvise, a foreign registration): returns the
 * state to restore with hp_busy_end, or 0 if r is neither LIVE nor CACHED. */
static inline uint32_t hp_busy_begin(hp_rec_t *r, const hp_snap_t *s)
{
	uint32_t st = hp_word_state(s->word);
	if ((st != HP_REC_LIVE && st != HP_REC_CACHED) ||
	    !hp_registry_claim(r, s->word, HP_REC_BUSY))
		return 0;
	return st;
}

static inline void hp_busy_end(hp_rec_t *r, uint32_t st)
{
	/* relaxed: we hold r (claimed); the claim's CAS orders */
	hp_registry_claim(r, atomic_load_explicit(&r->word, memory_order_relaxed), st);
}

/* ---- pin.c: the pin policy between records and the backend ---- */
/* Reserve the staging ring's len bytes under HOSTPIN_MAX_PINNED and
 * HOSTPIN_NODE_MAX_PINNED with the blocks' pinned bytes (counted in
 * ring_bytes, hence the ledger); 0 if over a cap.  Given back with
 * HP_CTR_SUB(ring_bytes, len). */
HP_HIDDEN int hp_cap_reserve_ring(size_t len);
/* hp_pin: r registered (claimed); put off (pending) while a copy counted
 * on it may reach the driver with its memory as it is (passing.c).
 * hp_pin_fresh: the same for a block just tracked (no copy uses it). */
HP_HIDDEN void hp_pin(hp_rec_t *r, uintptr_t base, size_t len);
HP_HIDDEN void hp_pin_fresh(hp_rec_t *r, uintptr_t base, size_t len);
/* After hp_pin_each (r held; ep: hp_cuda_ctx_epoch() before it): if a
 * CUDA context ended meanwhile, one that r's pieces may have been made
 * through (not known to be another's), r's registration is released and r
 * is pending again (pin_ended.c).  drain: first wait for the copies
 * counted on r (hp_hold_drain; the registration thread's, whose block
 * other threads copy through once it is registered); 0 on a copy's own
 * path. */
HP_HIDDEN void hp_pin_restart_if_ended(hp_rec_t *r, uintptr_t base,
				       size_t len, unsigned ep, int drain);
/* The same once r's busy claim ends (st: hp_busy_end's; the context
 * end's walk skipped r while it was held, after hp_pin_restart_if_ended
 * looked): the claim ended here, r claimed again if it is still the block
 * [base, base+len) (waiting for another holder or a release in progress
 * to let go), and again while an end came during that claim
 * (pin_ended.c). */
HP_HIDDEN void hp_pin_recheck_ended(hp_rec_t *r, uint32_t st, uintptr_t base,
				    size_t len, unsigned ep, int drain);
/* adopt.c: r held, an unregistration of it refused (EAGAIN) as its
 * owner's CUDA context ended (the end's walk skipped r, held): its
 * registrations died with the context; r goes back to pending as the walk
 * would have left it: 1.  0 if its owner is alive (or none, a capture). */
HP_HIDDEN int hp_pin_lost_held(hp_rec_t *r, size_t len);
/* adopt.c: is r registered through a CUDA context that ended (no capture
 * in the way)?  Its registrations died with it.  The caller holds r;
 * during a capture: no, r marked HP_F_ENDED, looked at again once no
 * capture runs. */
HP_HIDDEN int hp_pin_died(const hp_rec_t *r);
/* Undo hp_pin; non-zero if the backend refused (the caller must then leak
 * the range: invariant 1). */
HP_HIDDEN int hp_unpin(hp_rec_t *r, uintptr_t base, size_t len);
/* hp_unpin; EAGAIN: not now (a graph capture, no context to unregister
 * through); quiet: say nothing of that; *in_driver (if given) set when the
 * refusal is a block freed inside a driver call. */
HP_HIDDEN int hp_unpin_do(hp_rec_t *r, uintptr_t base, size_t len, int quiet,
			  int *in_driver);
/* The backend's ready(), and what it reported while it looked acted on. */
HP_HIDDEN int hp_pin_ready_now(void);
/* Blocks marked HP_F_LAZY since adoption last looked (adopt.c). */
HP_HIDDEN extern _Atomic int hp_lazy_seen;
/* adopt.c: a block just tracked, left pending (lazy: waiting for copies)
 * while the device became ready on another thread: adopt it here. */
HP_HIDDEN void hp_adopt_again(hp_rec_t *r, uintptr_t base, int lazy);
/* Insert and pin a range we own or track; 0 or an errno. */
HP_HIDDEN int hp_track(uintptr_t base, size_t len, unsigned kind);
/* Why hp_track failed, for its one message (ENOMEM: the registry's own
 * mappings failed). */
HP_HIDDEN const char *hp_track_reason(int e);
/* hp_track for a range that continues another (a survivor of a partial
 * unmap, a block or mapping moved by realloc or mremap): its flags carry
 * over (HP_F_CHURN: tracked, never pinned), and so does its copy count
 * (HP_U_COPIES), so that HOSTPIN_PIN_AFTER counts the buffer's copies, not
 * the copies since it last moved. */
HP_HIDDEN int hp_track_as(uintptr_t base, size_t len, unsigned kind,
			  unsigned carry, uint64_t copies);
/* Unpin and forget a claimed record (s: the snapshot its release claim was
 * made from, so a CACHED block is not counted out twice); 0, or EBUSY if it
 * had to be leaked. */
HP_HIDDEN int hp_untrack(hp_rec_t *r, const hp_snap_t *s);
/* hp_untrack that keeps the record the caller's, out of the registry, for
 * hp_track_again (a block that moves: heap.c). */
HP_HIDDEN int hp_untrack_keep(hp_rec_t *r, const hp_snap_t *s);
/* hp_track_as with the caller's record kept by hp_untrack_keep: needs no
 * memory for a record, nor for nodes at a range it had or that was
 * prepared (hp_registry_prepare); 0, or the registry's errno (the record
 * stays the caller's). */
HP_HIDDEN int hp_track_again(hp_rec_t *r, uintptr_t base, size_t len,
			     unsigned kind, uint64_t copies);
/* hp_untrack for a block whose whole range the caller unmaps next (free,
 * a cache eviction): when its unregistration cannot be made now, the block
 * is kept mapped and registered (LEAKED, HP_F_DEFER) and released by
 * hp_retry_deferred (backend.h) later; EBUSY then too (do not unmap). */
HP_HIDDEN int hp_untrack_release(hp_rec_t *r, const hp_snap_t *s);
HP_HIDDEN void hp_count_track(unsigned kind, size_t len, int add);
/* A device copy through r (copy.c, hook outermost, guarded): count it, and
 * register the block before the copy runs once the count is reached. */
HP_HIDDEN void hp_pin_copied(hp_rec_t *r, const hp_snap_t *s);
/* A block the program registered itself, then released (foreign.c; r held
 * busy): not registered at once, but after HOSTPIN_PIN_AFTER copies from
 * now, as a new block (at once where copies are not counted). */
HP_HIDDEN void hp_pin_earn_again(hp_rec_t *r, const hp_snap_t *s);
/* 1 if blocks wait for their HOSTPIN_PIN_AFTER-th copy (the backend's
 * copies are counted). */
HP_HIDDEN int hp_pin_counts_copies(void);

/* ---- numa.c: page placement and huge pages ---- */
/* The node a block allocated now should live on (the device's, else this
 * thread's); -1 when placement is off or the machine has one node. */
HP_HIDDEN int hp_numa_want(void);
/* Place [base, base+len) of r on node (hp_numa_want's) before its pages
 * are faulted, or move them there (move: pages may exist). */
HP_HIDDEN void hp_numa_place(hp_rec_t *r, uintptr_t base, size_t len, int node,
			     int move);
/* In the HP_U_NODE word: the program advised (NO)HUGEPAGE on the block
 * itself, so hostpin never advises it again (set by any thread: atomic). */
#define HP_NODE_THP_ADVISED ((uintptr_t)1 << 32)
static inline int hp_rnode(hp_rec_t *r)
{
	return (int)(atomic_load_explicit(&r->user[HP_U_NODE],
					  memory_order_relaxed) &
		     0xffffffffu) - 1;
}

/* The numa_node of PCI function bdf ("0000:3b:00.0", any case) in sysfs;
 * -1 if unknown. */
HP_HIDDEN int hp_pci_numa_node(const char *bdf);

/* ---- pinpart.c: pins in cells, and operations on part of a range ---- */
/* The backend's pin / unpin of [base, base+len), one call per cell of the
 * HOSTPIN_REGISTER_CHUNK grid for a device backend. */
HP_HIDDEN int hp_cells_pin(uintptr_t base, size_t len, const char **why);
HP_HIDDEN int hp_cells_unpin(uintptr_t base, size_t len, const char **why);
/* hp_cells_pin one registration at a time (the pieces of
 * hp_cells_piece_end), done(end of the registered prefix) after each; on a
 * failure done(base) before the pieces made are undone (the caller makes
 * sure then that no copy uses them); when done answers non-zero after a
 * piece, the same, and ECANCELED.  fault: each piece pre-faulted
 * (hp_prefault) just before it is registered.  done NULL: hp_cells_pin. */
HP_HIDDEN int hp_cells_pin_each(uintptr_t base, size_t len, const char **why,
				int (*done)(uintptr_t upto), int fault);
/* For a range [base, base+len) a device backend registered: the end of its
 * registration that holds x (its cell's, cut every HP_REG_PIECE_MAX bytes
 * from the cell's start); base+len where one lock covers it all. */
HP_HIDDEN uintptr_t hp_cells_piece_end(uintptr_t base, size_t len,
				       uintptr_t x);
/* r held (BUSY): unpin the cells of r that [a, b) touches, call
 * discard(arg), pin them again.  0, or EBUSY if the unpin was refused
 * (discard not called). */
HP_HIDDEN int hp_pin_discard(hp_rec_t *r, const hp_snap_t *s, uintptr_t a,
			     uintptr_t b, void (*discard)(void *), void *arg);
/* r claimed (RELEASING): unpin and forget the part of r in [a, b); what
 * lies outside becomes new records that keep their pins.  0, or non-zero
 * when the caller must untrack r whole (nothing pinned, foreign, all of it
 * released, or an unpin refused). */
HP_HIDDEN int hp_pin_split(hp_rec_t *r, const hp_snap_t *s, uintptr_t a,
			   uintptr_t b);

/* ---- cache.c ---- */
/* Take a cached block of len bytes (a page multiple) aligned to align; its
 * real length (up to len + len/8) in *got. */
HP_HIDDEN void *hp_cache_take(size_t len, size_t align, size_t *got);
/* Keep a claimed (RELEASING) block for reuse; 0 if it does not fit. */
HP_HIDDEN int hp_cache_keep(hp_rec_t *r, hp_snap_t *s);

#endif
