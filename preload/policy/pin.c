/* The pin policy: what happens to a range between the registry and the
 * backend.  The HOSTPIN_MAX_PINNED cap, pin and unpin, tracking, adoption of
 * pending blocks, stepping aside for the program's own registrations, and
 * the forked child's forgetting.  Every function here runs with hp_in_hook
 * raised by its caller, so whatever it calls that allocates or maps goes
 * straight to the next allocator.
 *
 * When to pin (hostpin(7), "Pinning policy").  Registering costs about
 * 0.1-0.4 s/GiB and commits every page; a copy from pageable memory costs
 * about 0.06-0.1 s/GiB more than one from registered memory.  A block copied
 * once loses by being registered, one copied every step wins, and most
 * memory a program maps is never copied at all.  So, as UCX and libfabric
 * register on first use, a block is registered when device copies show it
 * is worth it: the copy hooks count copies per block (HP_U_COPIES, sync and
 * async entry points alike), and before the HOSTPIN_PIN_AFTER-th one runs
 * the block is registered (hp_pin_copied, from the outermost hook, never
 * from inside the driver).  HP_F_LAZY marks a block still waiting.  Until
 * then nothing is pre-faulted, so memory the program never touched stays
 * uncommitted.  HOSTPIN_PIN_AFTER=0 registers at allocation (or adoption),
 * as before.  Where no copy can be counted the block is pinned when tracked:
 * the mlock backend locks on fault (MLOCK_ONFAULT: untouched pages stay
 * uncommitted, touched ones stay resident), and Level Zero, whose copies
 * hostpin does not hook, imports at allocation or adoption. */
#include <errno.h>
#include <sys/mman.h>

#ifndef MADV_HUGEPAGE
#define MADV_HUGEPAGE 14
#endif

#include "../node/ledger.h"
#include "../record.h"
#include "../base/resolve.h"

/* ---- pin policy ---- */

/* The backend's ready(), and what it reported while it looked (a driver
 * unloaded) acted on before anything is registered through a new one. */
static int ready_now(void)
{
	int r = hp_backend->ready();
	hp_backend_events_act();
	return r;
}

/* Blocks marked HP_F_LAZY since adoption last looked. */
static _Atomic int lazy_seen;

static int adopt_one(hp_rec_t *r, const hp_snap_t *s, void *arg);

/* A block just tracked was left pending (lazy: waiting for copies) while
 * the device became ready (auto chose a backend that counts no copies) on
 * another thread, whose adoption may have looked before the block was
 * there: adopt it here.  The busy claim decides who pins it, this thread or
 * an adopter; neither skips it for good, whatever the timing. */
static void adopt_again(hp_rec_t *r, uintptr_t base, int lazy)
{
	hp_snap_t s;
	if (hp_registry_lookup(&hp_reg, base, &s) == r && s.base == base)
		adopt_one(r, &s, lazy ? (void *)&lazy_seen : NULL);
}

/* 1 if the backend in use registers with a driver whose copies hostpin
 * counts (CUDA; auto before its choice, which adoption corrects if it
 * chooses Level Zero) and HOSTPIN_PIN_AFTER asks to wait for them. */
int hp_pin_counts_copies(void)
{
	if (hp_opt[HP_OPT_PIN_AFTER] == 0 || hp_in_child)
		return 0;
	if (hp_backend == &hp_backend_cuda)
		return 1;
	if (hp_backend != &hp_backend_auto)
		return 0;
	const hp_backend_t *c = hp_backend_auto_chosen();
	return c == NULL || c == &hp_backend_cuda;
}

/* Reserve len bytes under HOSTPIN_MAX_PINNED; 0 if over the cap, or over
 * HOSTPIN_NODE_MAX_PINNED with what the node's other hostpin processes
 * pin (ledger.h; processes racing here may overshoot by a block each). */
static uint64_t node_pinned(void)
{
	return HP_LEDGER_SUM(pinned_bytes_now) + HP_LEDGER_SUM(ring_bytes);
}

static int cap_reserve(size_t len)
{
	uint64_t node_max = hp_opt[HP_OPT_NODE_MAX_PINNED];
	if (node_pinned() + len > node_max &&
	    (!hp_ledger_reap() || node_pinned() + len > node_max))
		return 0;
	uint64_t max = hp_opt[HP_OPT_MAX_PINNED];
	uint64_t ring = atomic_load_explicit(&hp_ctr.ring_bytes,
					     memory_order_relaxed);
	uint64_t cur = atomic_load_explicit(&hp_ctr.pinned_bytes_now,
					    memory_order_relaxed);
	do {
		if (cur + ring + len > max)
			return 0;
	} while (!atomic_compare_exchange_weak_explicit(
	    &hp_ctr.pinned_bytes_now, &cur, cur + len, memory_order_relaxed,
	    memory_order_relaxed));
	return 1;
}

int hp_cap_reserve_ring(size_t len)
{
	uint64_t node_max = hp_opt[HP_OPT_NODE_MAX_PINNED];
	if (node_pinned() + len > node_max &&
	    (!hp_ledger_reap() || node_pinned() + len > node_max))
		return 0;
	if (atomic_load_explicit(&hp_ctr.pinned_bytes_now, memory_order_relaxed) +
		atomic_load_explicit(&hp_ctr.ring_bytes, memory_order_relaxed) +
		len > hp_opt[HP_OPT_MAX_PINNED])
		return 0;
	HP_CTR_ADD(ring_bytes, len);
	return 1;
}

/* Registration faults every page of the block: first its node (a block
 * placed before the device was known moves) and huge pages for hostpin's
 * own blocks, then the parallel pre-fault (fault; 0: the caller pre-faults
 * piece by piece).  (The mlock backend locks on fault and pre-faults
 * nothing.) */
static void before_fault(hp_rec_t *r, uintptr_t base, size_t len, int fault)
{
	int node = hp_numa_want();
	if (node >= 0)
		hp_numa_place(r, base, len, node, hp_rnode(r) >= 0);
	if ((hp_rflags(r) & HOSTPIN_KIND_MALLOC) && len >= ((size_t)2 << 20) &&
	    !(atomic_load_explicit(&r->user[HP_U_NODE], memory_order_relaxed) &
	      HP_NODE_THP_ADVISED) &&
	    hp_thp_ok())
		hp_real.madvise((void *)base, len, MADV_HUGEPAGE);
	if (fault)
		hp_prefault((void *)base, len);
}

void hp_pin(hp_rec_t *r, uintptr_t base, size_t len)
{
	hp_pin_each(r, base, len, NULL);
}

void hp_pin_each(hp_rec_t *r, uintptr_t base, size_t len,
		 int (*done)(uintptr_t upto))
{
	/* A range the program registered itself is left alone until the
	 * program unregisters it (hp_foreign_end pins it then): not pending,
	 * so adoption never walks the registry for it. */
	if (hp_backend == &hp_backend_none || hp_in_child ||
	    (hp_rflags(r) & (HP_F_FOREIGN | HP_F_LAZY)))
		return;
	if (hp_foreign_overlaps(base, len)) {
		/* a survivor of a partial munmap under a program range */
		hp_set_rflags(r, hp_rflags(r) | HP_F_FOREIGN);
		return;
	}
	if (!cap_reserve(len)) {
		HP_CTR_ADD(over_cap, 1);
		char h1[24], h2[24];
		HP_LOG_ONCE(HP_LOG_WARN,
			    "HOSTPIN_MAX_PINNED (%s) or "
			    "HOSTPIN_NODE_MAX_PINNED (%s) reached: "
			    "further blocks are served unpinned",
			    hp_human(hp_opt[HP_OPT_MAX_PINNED], h1),
			    hp_human(hp_opt[HP_OPT_NODE_MAX_PINNED], h2));
		return;
	}
	const char *why = "unknown";
	int e = EAGAIN;
	if ((hp_backend->pin_flags & HOSTPIN_REGISTERED) &&
	    hp_alloc_from_device()) {
		/* The driver, runtime or loader allocated this inside one of
		 * its own calls: no call into it from there (invariant 11);
		 * pending, adopted later. */
	} else if ((hp_backend->pin_flags & HOSTPIN_REGISTERED) &&
		   hp_capture_busy()) {
		/* a CUDA graph capture in progress: pending, registered
		 * when it ends (invariant 13) */
	} else if (!ready_now()) {
		/* e stays EAGAIN */
	} else if (hp_coverage_refuses(hp_backend, &why)) {
		e = EPERM; /* refused: a copy could bypass the hooks */
	} else if (hp_backend == &hp_backend_mlock &&
		   !hp_memlock_fits(len, atomic_load_explicit(
				    &hp_ctr.pinned_bytes_now,
				    memory_order_relaxed) - len, &why)) {
		e = ENOMEM; /* the kernel would refuse: no pre-fault work */
	} else {
		uint64_t t0 = hp_now_ns();
		/* piece by piece (done): each piece pre-faulted just before
		 * it is registered, so the first carries DMA early */
		int dev = hp_backend != &hp_backend_mlock;
		if (dev)
			before_fault(r, base, len, !done);
		e = hp_cells_pin_each(base, len, &why, done, dev && done);
		HP_CTR_ADD(pin_ns, hp_now_ns() - t0);
		HP_CTR_ADD(pin_calls, 1);
	}
	hp_backend_events_act(); /* what the node and pin calls reported */
	if (e == EAGAIN) { /* not now: the device runtime is not ready */
		HP_CTR_SUB(pinned_bytes_now, len);
		if (!(hp_rflags(r) & HOSTPIN_PENDING)) {
			hp_set_rflags(r, hp_rflags(r) | HOSTPIN_PENDING);
			HP_CTR_ADD(pending_blocks, 1);
		}
		return;
	}
	if (hp_rflags(r) & HOSTPIN_PENDING) {
		hp_set_rflags(r, hp_rflags(r) & ~HOSTPIN_PENDING);
		HP_CTR_SUB(pending_blocks, 1);
	}
	if (e == ECANCELED) { /* the block's owner or the program took over */
		HP_CTR_SUB(pinned_bytes_now, len);
		return;
	}
	if (e) {
		/* HOSTPIN_MLOCK: a block the device refused is at least kept
		 * resident. */
		int locked = hp_opt[HP_OPT_MLOCK] &&
			     hp_backend->pin_flags != HOSTPIN_LOCKED &&
			     mlock((void *)base, len) == 0;
		if (locked) {
			hp_set_rflags(r, hp_rflags(r) | HOSTPIN_LOCKED);
			HP_CTR_ADD(pinned_blocks_now, 1);
		} else {
			HP_CTR_SUB(pinned_bytes_now, len);
		}
		int first = hp_stat_fail(why);
		if (hp_opt[HP_OPT_STRICT])
			hp_fatal("cannot pin %zu bytes at %p: %s (errno %d); "
				 "HOSTPIN_STRICT=1: aborting",
				 len, (void *)base, why, e);
		if (first)
			hp_log(HP_LOG_WARN,
			       "cannot pin %zu bytes at %p: %s (errno %d); the "
			       "memory stays usable, %s (reported once per "
			       "reason; counted in the statistics)",
			       len, (void *)base, why, e,
			       locked ? "locked (HOSTPIN_MLOCK)" : "unpinned");
		return;
	}
	int bad = hp_coverage_bad();
	if (bad && done)
		done(base); /* no copy uses what is unregistered next */
	if (bad && hp_backend->unpin((void *)base, len, &why) == 0) {
		/* the check failed while this registration was made */
		hp_backend_events_act();
		HP_CTR_SUB(pinned_bytes_now, len);
		return;
	}
	hp_backend_events_act();
	hp_set_rflags(r, hp_rflags(r) | hp_backend->pin_flags);
	atomic_store_explicit(&r->user[HP_U_OWNER],
			      hp_backend->owner ? hp_backend->owner() : 0,
			      memory_order_relaxed); /* as the flags */
	HP_CTR_ADD(pinned_blocks_now, 1);
	hp_site_account(hp_rsite(r), len, 1);
	/* the reservation is now real: account the peak */
	hp_stat_add_peak(&hp_ctr.pinned_bytes_now, &hp_ctr.pinned_bytes_peak, 0);
}

/* Undo hp_pin(); non-zero if the backend refused (the caller must then leak
 * the range: invariant 1).  EAGAIN: not now (a graph capture is in
 * progress, no context to unregister through); quiet: say nothing of it. */
/* This thread's last refusal was a block freed inside a driver call. */
static HP_TLS int in_driver_refused;

static int unpin_do(hp_rec_t *r, uintptr_t base, size_t len, int quiet)
{
	unsigned f = hp_rflags(r);
	const char *why = "unknown";
	int e = 0;
	if ((f & HOSTPIN_REGISTERED) && !hp_in_child && hp_capture_busy()) {
		/* no wait for its copies and no unregistration while a CUDA
		 * graph is captured (invariant 13) */
		why = "a CUDA graph capture is in progress", e = EAGAIN;
		goto refused;
	}
	if ((f & HOSTPIN_REGISTERED) && quiet && !hp_in_child &&
	    hp_alloc_from_device()) {
		/* freed by the driver inside one of its own calls (a buffer
		 * of zeContextDestroy's): no call into it from there
		 * (invariant 11); released once the call returned */
		why = "freed inside a driver call", e = EAGAIN;
		in_driver_refused = 1;
		goto refused;
	}
	if (hp_backend->quiesce) {
		hp_backend->quiesce(r);
		hp_backend_events_act();
	}
	f = hp_rflags(r);
	if (f & HOSTPIN_PENDING) {
		hp_set_rflags(r, f & ~HOSTPIN_PENDING);
		HP_CTR_SUB(pending_blocks, 1);
	}
	if (!(f & HP_PIN_MASK))
		return 0;
	HP_CTR_ADD(unpin_calls, 1);
	if (f & hp_backend->pin_flags) {
		e = hp_in_child ? 0 : hp_cells_unpin(base, len, &why);
		hp_backend_events_act();
	} else if ((f & HOSTPIN_LOCKED) && munlock((void *)base, len) != 0)
		why = "munlock failed", e = errno; /* the HOSTPIN_MLOCK fallback */
refused:
	if (e) {
		if (e == EAGAIN && quiet)
			return e;
		if (hp_stat_fail(why))
			hp_log(HP_LOG_WARN,
			       "cannot unpin %zu bytes at %p: %s (errno %d); "
			       "leaking the mapping rather than reusing it "
			       "(reported once per reason)",
			       len, (void *)base, why, e);
		return e;
	}
	hp_set_rflags(r, hp_rflags(r) & ~HP_PIN_MASK);
	HP_CTR_SUB(pinned_blocks_now, 1);
	HP_CTR_SUB(pinned_bytes_now, len);
	hp_site_account(hp_rsite(r), len, 0);
	return 0;
}

int hp_unpin(hp_rec_t *r, uintptr_t base, size_t len)
{
	return unpin_do(r, base, len, 0);
}

void hp_count_track(unsigned kind, size_t len, int add)
{
	if (kind & HOSTPIN_KIND_MALLOC) {
		if (add) {
			hp_stat_add_peak(&hp_ctr.blocks_now,
					 &hp_ctr.blocks_peak, 1);
			hp_stat_add_peak(&hp_ctr.bytes_now, &hp_ctr.bytes_peak,
					 len);
			HP_CTR_ADD(large_blocks, 1);
		} else {
			HP_CTR_SUB(blocks_now, 1);
			HP_CTR_SUB(bytes_now, len);
		}
	} else {
		if (add)
			HP_CTR_ADD(large_blocks, 1);
		HP_CTR_ADD(mmap_ranges_now, add ? 1 : -1ull);
		HP_CTR_ADD(mmap_bytes_now, add ? len : 0 - len);
	}
}

const char *hp_track_reason(int e)
{
	return e == ENOMEM ? "no memory for hostpin's own records of it (a "
			     "registry node or record cannot be mapped)"
			   : hp_strerror(e);
}

int hp_track(uintptr_t base, size_t len, unsigned kind)
{
	return hp_track_as(base, len, kind, 0, 0);
}

/* Whether a record covering a is being released (1) or held (2): its range
 * may be on its way out; 0 otherwise. */
static unsigned in_flux(uintptr_t a)
{
	hp_snap_t s;
	if (hp_registry_lookup(&hp_reg, a, &s) == NULL)
		return 0;
	uint32_t st = hp_word_state(s.word);
	return st == HP_REC_RELEASING ? 1 : st == HP_REC_BUSY ? 2 : 0;
}

static void track_rec(hp_rec_t *r, uintptr_t base, size_t len,
		      unsigned kind, unsigned carry, uint64_t copies);

/* Insert [base, base+len) LIVE: a new record into *r, or (attach) the
 * caller's record *r; 0 or an errno. */
static int insert_waiting(uintptr_t base, size_t len, hp_rec_t **r, int attach)
{
	int e;
	/* A range the kernel just handed out should carry no record (every
	 * release takes its record out first, grow_block's included); as a
	 * safeguard, wait for the record of a block on its way out, never for
	 * a live one, and not for ever (a hold this thread has itself never
	 * ends here). */
	struct timespec t0 = {0, 0};
	for (unsigned spins = 0;; spins++) {
		e = attach ? hp_registry_attach(&hp_reg, *r, base, len,
						HP_REC_LIVE)
			   : hp_registry_insert(&hp_reg, base, len, HP_REC_LIVE,
						r);
		if (e != EEXIST)
			break;
		unsigned f = in_flux(base) | in_flux(base + len - 1);
		/* a release ends (10 s bounds a thread that never runs); a
		 * hold may be this thread's own: a few spins only */
		if (f == 0 || ((f & 2) && spins >= (1u << 16)) ||
		    hp_waited(&t0, spins, 10))
			break;
		sched_yield();
	}
	return e;
}

int hp_track_as(uintptr_t base, size_t len, unsigned kind, unsigned carry,
		uint64_t copies)
{
	hp_rec_t *r;
	int e = insert_waiting(base, len, &r, 0);
	if (e) {
		HP_LOG_ONCE(HP_LOG_WARN, "cannot track %zu bytes at %p: %s "
			    "(errno %d); left to the system, untracked", len,
			    (void *)base, hp_track_reason(e), e);
		return e;
	}
	track_rec(r, base, len, kind, carry, copies);
	return 0;
}

int hp_track_again(hp_rec_t *r, uintptr_t base, size_t len, unsigned kind,
		   uint64_t copies)
{
	int e = insert_waiting(base, len, &r, 1);
	if (e == 0)
		track_rec(r, base, len, kind, 0, copies);
	return e;
}

/* hp_track_as for a record already inserted (held by the caller). */
static void track_rec(hp_rec_t *r, uintptr_t base, size_t len, unsigned kind,
		      unsigned carry, uint64_t copies)
{
	carry &= HP_F_CHURN;
	atomic_store_explicit(&r->user[HP_U_FLAGS], kind | carry,
			      memory_order_relaxed);
	/* relaxed: a count, ordering nothing (copy.c) */
	atomic_store_explicit(&r->user[HP_U_COPIES], copies,
			      memory_order_relaxed);
	if (kind & HOSTPIN_KIND_MALLOC)
		hp_set_rsite(r, hp_site_capture());
	hp_count_track(kind, len, 1);
	if (kind & HOSTPIN_KIND_MALLOC) {
		hp_numa_place(r, base, len, hp_numa_want(), 0);
		hp_backend_events_act(); /* the device's node was asked */
	}
	if (carry)
		return; /* purged twice while registered: left unregistered */
	if (hp_pin_counts_copies()) {
		hp_set_rflags(r, hp_rflags(r) | HP_F_LAZY);
		/* release: pairs with the exchange in hp_adopt_pending; the
		 * flag is set before an adopter that sees this walks */
		atomic_store_explicit(&lazy_seen, 1, memory_order_release);
		/* seq_cst: pairs with the fence in hp_adopt_pending (Dekker):
		 * either its adopter sees lazy_seen, or this sees the choice
		 * of a backend that counts no copies (auto, at zeInit) */
		atomic_thread_fence(memory_order_seq_cst);
		if (!hp_pin_counts_copies())
			adopt_again(r, base, 1);
		return;
	}
	hp_pin(r, base, len);
	if (hp_rflags(r) & HOSTPIN_PENDING) {
		/* seq_cst: as above, with pending_blocks, counted by hp_pin:
		 * either the adoption that follows readiness (zeInit on
		 * another thread) sees this block, or this sees readiness */
		atomic_thread_fence(memory_order_seq_cst);
		if (!hp_alloc_from_device() && ready_now())
			adopt_again(r, base, 0);
	}
}

void hp_pin_copied(hp_rec_t *r, const hp_snap_t *s)
{
	if (!(hp_rflags(r) & HP_F_LAZY))
		return;
	/* relaxed: a count; the claim below orders the registration */
	uint64_t n = atomic_fetch_add_explicit(&r->user[HP_U_COPIES], 1,
					       memory_order_relaxed) + 1;
	uint32_t st;
	if (n < hp_opt[HP_OPT_PIN_AFTER] || !(st = hp_busy_begin(r, s)))
		return; /* not yet; or held: a later copy registers it */
	if (hp_rflags(r) & HP_F_LAZY) {
		hp_set_rflags(r, hp_rflags(r) & ~HP_F_LAZY);
		hp_log(HP_LOG_DEBUG, "block %p (%zu bytes): copy %llu, "
		       "registering", (void *)s->base, s->len,
		       (unsigned long long)n);
		/* registered in the background, this copy and those until
		 * then staged; else here, before this copy */
		if (!hp_register_later(r, s))
			hp_pin(r, s->base, s->len);
	}
	hp_busy_end(r, st);
}

void hp_pin_earn_again(hp_rec_t *r, const hp_snap_t *s)
{
	if (!hp_pin_counts_copies()) {
		hp_pin(r, s->base, s->len);
		return;
	}
	/* relaxed: a count; the caller holds r (busy), whose claim orders */
	atomic_store_explicit(&r->user[HP_U_COPIES], 0, memory_order_relaxed);
	hp_set_rflags(r, hp_rflags(r) | HP_F_LAZY);
	/* release: as in track_rec */
	atomic_store_explicit(&lazy_seen, 1, memory_order_release);
}

/* Released blocks whose unregistration waits (HP_F_DEFER). */
static _Atomic int deferred_n;
/* Some of them wait because a driver freed them inside its own call. */
static _Atomic int driver_deferred;

/* A leaked record stays in the registry as LEAKED: never reused.  defer:
 * the caller unmaps the whole range next; an unregistration that cannot be
 * made now is retried later instead (hp_retry_deferred).  keep: the record
 * leaves the registry but stays the caller's (hp_track_again). */
static int untrack(hp_rec_t *r, const hp_snap_t *s, int defer, int keep)
{
	unsigned kind = hp_rflags(r) & HP_KIND_MASK;
	in_driver_refused = 0;
	int e = unpin_do(r, s->base, s->len, defer);
	if (e) {
		/* s->word is the state before the release claim: a cached
		 * block left the counts when hp_cache_keep took it */
		if (e == EAGAIN && defer &&
		    hp_word_state(s->word) != HP_REC_CACHED)
			hp_count_track(kind, s->len, 0);
		if (e == EAGAIN && defer)
			hp_set_rflags(r, hp_rflags(r) | HP_F_DEFER);
		/* relaxed: we hold r (claimed); the claim's CAS orders */
		uint64_t w = atomic_load_explicit(&r->word, memory_order_relaxed);
		hp_registry_claim(r, w, HP_REC_LEAKED);
		if (e == EAGAIN && defer) {
			atomic_fetch_add(&deferred_n, 1);
			if (in_driver_refused)
				/* release: the block's DEFER flag and state
				 * before a retrier that sees the flag */
				atomic_store_explicit(&driver_deferred, 1,
						      memory_order_release);
			hp_log(HP_LOG_DEBUG, "block %p (%zu bytes): its "
			       "unregistration waits (a CUDA graph capture in "
			       "progress, no context now, or freed inside a "
			       "driver call); kept mapped",
			       (void *)s->base, s->len);
		} else {
			HP_CTR_ADD(leaked_blocks, 1);
		}
		return EBUSY;
	}
	if (hp_word_state(s->word) != HP_REC_CACHED)
		hp_count_track(kind, s->len, 0);
	if (keep)
		hp_registry_detach(&hp_reg, r);
	else
		hp_registry_remove(&hp_reg, r);
	return 0;
}

int hp_untrack(hp_rec_t *r, const hp_snap_t *s) { return untrack(r, s, 0, 0); }

int hp_untrack_keep(hp_rec_t *r, const hp_snap_t *s)
{
	return untrack(r, s, 0, 1);
}

int hp_untrack_release(hp_rec_t *r, const hp_snap_t *s)
{
	return untrack(r, s, 1, 0);
}

static int retry_one(hp_rec_t *r, const hp_snap_t *s, void *arg)
{
	int *again = arg;
	if (hp_word_state(s->word) != HP_REC_LEAKED ||
	    !(hp_rflags(r) & HP_F_DEFER) ||
	    !hp_registry_claim(r, s->word, HP_REC_RELEASING))
		return 0;
	int e = unpin_do(r, s->base, s->len, 1);
	/* relaxed: we hold r (claimed); the claim's CAS orders */
	uint64_t w = atomic_load_explicit(&r->word, memory_order_relaxed);
	if (e == EAGAIN) {
		hp_registry_claim(r, w, HP_REC_LEAKED); /* not yet */
		*again = 1;
		return 1;
	}
	hp_set_rflags(r, hp_rflags(r) & ~HP_F_DEFER);
	atomic_fetch_sub(&deferred_n, 1);
	if (e) { /* refused for good: leaked (unpin_do said so) */
		hp_registry_claim(r, w, HP_REC_LEAKED);
		HP_CTR_ADD(leaked_blocks, 1);
		return 0;
	}
	hp_log(HP_LOG_DEBUG, "block %p (%zu bytes): deferred unregistration "
	       "done, unmapped", (void *)s->base, s->len);
	hp_registry_remove(&hp_reg, r);
	hp_real.munmap((void *)s->base, s->len);
	return 0;
}

void hp_retry_deferred_driver(void)
{
	/* acquire: pairs with the release in untrack */
	if (!atomic_load_explicit(&driver_deferred, memory_order_acquire) ||
	    hp_alloc_from_device() ||
	    !atomic_exchange_explicit(&driver_deferred, 0,
				      memory_order_acquire))
		return;
	hp_retry_deferred();
}

void hp_retry_deferred(void)
{
	if (atomic_load(&deferred_n) == 0 || hp_in_child ||
	    hp_capture_busy() || hp_alloc_from_device())
		return;
	int again = 0;
	hp_in_hook++;
	hp_registry_each(&hp_reg, retry_one, &again);
	hp_in_hook--;
}

/* ---- adoption (foreign registrations: foreign.c) ---- */

/* arg non-NULL: lazy blocks too (the backend counts no copies). */
static int adopt_one(hp_rec_t *r, const hp_snap_t *s, void *arg)
{
	uint32_t st;
	unsigned want = HOSTPIN_PENDING | (arg ? HP_F_LAZY : 0);
	if (!(hp_rflags(r) & want) || !(st = hp_busy_begin(r, s)))
		return 0;
	if (arg) /* copies are not counted here: pin now */
		hp_set_rflags(r, hp_rflags(r) & ~HP_F_LAZY);
	hp_pin(r, s->base, s->len);
	if (!(hp_rflags(r) & HOSTPIN_PENDING) && (hp_rflags(r) & HP_PIN_MASK))
		HP_CTR_ADD(adopted_blocks, 1);
	hp_busy_end(r, st);
	return 0;
}

void hp_adopt_pending(void)
{
	/* seq_cst: pairs with the fences in hp_track_as; the device's
	 * readiness published before this call (zeInit's discovery, auto's
	 * choice) against the blocks tracked meanwhile */
	atomic_thread_fence(memory_order_seq_cst);
	int lazy = atomic_load_explicit(&lazy_seen, memory_order_relaxed);
	if ((atomic_load_explicit(&hp_ctr.pending_blocks,
				  memory_order_relaxed) == 0 && !lazy) ||
	    hp_in_child || hp_capture_busy() || !ready_now())
		return;
	/* auto chose a backend whose copies are not counted: its lazy
	 * blocks are pinned now, once. */
	/* acq_rel: pairs with the release in hp_track_as (the flags of the
	 * blocks it announced are visible to the walk) */
	lazy = lazy && !hp_pin_counts_copies() &&
	       atomic_exchange_explicit(&lazy_seen, 0, memory_order_acq_rel);
	if (lazy || atomic_load_explicit(&hp_ctr.pending_blocks,
					 memory_order_relaxed))
		hp_registry_each(&hp_reg, adopt_one, lazy ? &lazy_seen : NULL);
}

/* A registration the driver dropped by itself (its context ended, or the
 * driver was unloaded): back to pending, with no call into the driver. */
struct lost {
	uintptr_t owner; /* the context that ended; 0: any */
	unsigned want, clear; /* flags that select a block, flags dropped */
	int n;
};

static int lost_one(hp_rec_t *r, const hp_snap_t *s, void *arg)
{
	struct lost *l = arg;
	uint32_t st;
	if (!(hp_rflags(r) & l->want) ||
	    (l->owner &&
	     atomic_load_explicit(&r->user[HP_U_OWNER], memory_order_relaxed) !=
		 l->owner) ||
	    !(st = hp_busy_begin(r, s)))
		return 0;
	/* Nothing to unregister, and no copy left to wait for: the copies'
	 * events died with the context or the driver. */
	if (hp_backend->quiesce)
		hp_cuda_forget(r);
	hp_set_rflags(r, (hp_rflags(r) & ~l->clear) | HOSTPIN_PENDING);
	atomic_store_explicit(&r->user[HP_U_OWNER], 0, memory_order_relaxed);
	HP_CTR_SUB(pinned_blocks_now, 1);
	HP_CTR_SUB(pinned_bytes_now, s->len);
	hp_site_account(hp_rsite(r), s->len, 0);
	HP_CTR_ADD(pending_blocks, 1);
	hp_busy_end(r, st);
	l->n++;
	return 0;
}

/* The registrations of owner (backend->owner, not 0) are gone: their
 * blocks go back to pending.  The number of blocks. */
static int owner_lost(uintptr_t owner)
{
	struct lost l = {owner, hp_backend->pin_flags & HOSTPIN_REGISTERED,
			 HOSTPIN_REGISTERED, 0};
	if (owner && !hp_in_child)
		hp_registry_each(&hp_reg, lost_one, &l);
	return l.n;
}

static int unregister_one(hp_rec_t *r, const hp_snap_t *s, void *arg)
{
	(void)arg;
	uint32_t st;
	if (!(hp_rflags(r) & HOSTPIN_REGISTERED) || !(st = hp_busy_begin(r, s)))
		return 0;
	hp_unpin(r, s->base, s->len); /* waits for its copies first */
	hp_busy_end(r, st);
	return 0;
}

void hp_pin_unregister_all(void)
{
	if (!hp_in_child)
		hp_registry_each(&hp_reg, unregister_one, NULL);
}

/* ---- what the backend reported ---- */

/* The CUDA contexts in ended[] ended: their blocks go back to pending. */
static void owners_lost(const uintptr_t *ended, int n)
{
	for (int i = 0; i < n; i++) {
		int k = owner_lost(ended[i]);
		if (k)
			hp_log(HP_LOG_INFO, "a CUDA context ended: %d registered "
			       "block(s) go back to pending", k);
	}
}

void hp_cuda_device_reset(int dev)
{
	uintptr_t ended[HP_CUDA_MAX_CTXS];
	owners_lost(ended, hp_cuda_ctxs_reset(dev, ended));
}

void hp_cuda_device_released(int dev)
{
	uintptr_t ended[HP_CUDA_MAX_CTXS];
	owners_lost(ended, hp_cuda_ctxs_released(dev, ended));
}

void hp_cuda_ctx_destroyed(struct CUctx_st *ctx)
{
	uintptr_t ended[HP_CUDA_MAX_CTXS];
	owners_lost(ended, hp_cuda_ctx_end(ctx, ended));
}

/* The device was unloaded: every block registered with it goes back to
 * pending, without a call into it. */
static void device_lost(void)
{
	struct lost l = {0, hp_backend->pin_flags, HP_PIN_MASK, 0};
	hp_in_hook++;
	hp_registry_each(&hp_reg, lost_one, &l);
	hp_in_hook--;
}

void hp_backend_events_act(void)
{
	if (atomic_load_explicit(&hp_backend_events, memory_order_relaxed) == 0)
		return;
	/* acquire: pairs with the release in hp_backend_report */
	unsigned ev = atomic_exchange_explicit(&hp_backend_events, 0,
					       memory_order_acquire);
	if (ev & HP_EV_DEVICE_LOST)
		device_lost();
}

/* ---- fork ---- */

static int child_forget(hp_rec_t *r, const hp_snap_t *s, void *arg)
{
	(void)s, (void)arg;
	/* Memory locks and device registrations are not inherited: the
	 * child's blocks are plain memory, and it never unpins them. */
	unsigned f = hp_rflags(r);
	if (f & HP_PIN_MASK)
		HP_CTR_SUB(pinned_blocks_now, 1);
	if (f & HOSTPIN_PENDING)
		HP_CTR_SUB(pending_blocks, 1);
	hp_set_rflags(r, f & ~(HP_PIN_MASK | HOSTPIN_PENDING));
	return 0;
}

void hp_pin_fork_child(void)
{
	hp_in_hook++;
	hp_backend->fork_child();
	hp_registry_each(&hp_reg, child_forget, NULL);
	atomic_store_explicit(&hp_ctr.pinned_bytes_now, 0, memory_order_relaxed);
	/* nor the staging rings' registrations: the parent's slot counts
	 * them, the child's must not count them again */
	atomic_store_explicit(&hp_ctr.ring_bytes, 0, memory_order_relaxed);
	hp_in_hook--;
}

