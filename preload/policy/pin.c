/* The pin policy: what happens to a range between the registry and the
 * backend.  When to pin, the HOSTPIN_MAX_PINNED cap, pin and unpin
 * (tracking and deferred releases: track.c; adoption of pending blocks,
 * registrations the driver dropped, the forked child: adopt.c; a CUDA
 * context that ended during a registration: pin_ended.c).  Every
 * function here runs with hp_in_hook
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
 * uncommitted, touched ones stay resident).  Level Zero's copies are
 * counted like CUDA's (hooks/ze_copy.c). */
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
int hp_pin_ready_now(void)
{
	int r = hp_backend->ready();
	hp_backend_events_act();
	return r;
}

/* Blocks marked HP_F_LAZY since adoption last looked. */
_Atomic int hp_lazy_seen;

/* 1 if the backend in use registers with a driver whose copies hostpin
 * counts (CUDA, Level Zero; auto, before its choice and after) and
 * HOSTPIN_PIN_AFTER asks to wait for them. */
int hp_pin_counts_copies(void)
{
	if (hp_opt[HP_OPT_PIN_AFTER] == 0 || hp_in_child)
		return 0;
	if (hp_backend == &hp_backend_cuda ||
	    hp_backend == &hp_backend_level_zero)
		return 1;
	if (hp_backend != &hp_backend_auto)
		return 0;
	const hp_backend_t *c = hp_backend_auto_chosen();
	return c == NULL || c == &hp_backend_cuda ||
	       c == &hp_backend_level_zero;
}

/* What the node's hostpin processes pin now, this one's included
 * (ledger.h): their blocks and their staging rings. */
static uint64_t node_pinned(void)
{
	hp_ledger_check(); /* a ledger file removed: the one at its path */
	return HP_LEDGER_SUM(pinned_bytes_now) + HP_LEDGER_SUM(ring_bytes);
}

/* Reserve len bytes of a block (ring 0: pinned_bytes_now) or of a staging
 * ring (ring 1: ring_bytes) under HOSTPIN_MAX_PINNED, by compare-and-swap
 * on this process's own counter (in its own memory: no other process can
 * reset it), and under HOSTPIN_NODE_MAX_PINNED with what the node's other
 * hostpin processes pin (ledger.h; processes racing there may overshoot
 * by a block each).  1 if reserved; 0 if over a cap. */
static int cap_reserve(size_t len, int ring)
{
	uint64_t node_max = hp_opt[HP_OPT_NODE_MAX_PINNED];
	if (hp_sat_add(node_pinned(), len) > node_max &&
	    (!hp_ledger_reap() || hp_sat_add(node_pinned(), len) > node_max))
		return 0;
	uint64_t max = hp_opt[HP_OPT_MAX_PINNED];
	_Atomic uint64_t *mine = ring ? &hp_own.ring_bytes : &hp_own.pinned_bytes_now;
	_Atomic uint64_t *other = ring ? &hp_own.pinned_bytes_now : &hp_own.ring_bytes;
	/* relaxed: the counter itself is the reservation; it orders nothing */
	uint64_t cur = atomic_load_explicit(mine, memory_order_relaxed);
	do {
		if (hp_sat_add(hp_sat_add(cur, atomic_load_explicit(
						   other, memory_order_relaxed)),
			       len) > max)
			return 0;
	} while (!atomic_compare_exchange_weak_explicit(
	    mine, &cur, cur + len, memory_order_relaxed, memory_order_relaxed));
	hp_ctr_note(1); /* the ledger's copy, for the other processes */
	return 1;
}

int hp_cap_reserve_ring(size_t len)
{
	return cap_reserve(len, 1);
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

static void pin_each(hp_rec_t *r, uintptr_t base, size_t len,
		     int (*done)(uintptr_t upto), int copied);

void hp_pin(hp_rec_t *r, uintptr_t base, size_t len)
{
	unsigned ep = hp_cuda_ctx_epoch();
	pin_each(r, base, len, NULL, 1);
	hp_pin_restart_if_ended(r, base, len, ep, 0);
}

void hp_pin_fresh(hp_rec_t *r, uintptr_t base, size_t len)
{
	unsigned ep = hp_cuda_ctx_epoch();
	pin_each(r, base, len, NULL, 0);
	hp_pin_restart_if_ended(r, base, len, ep, 0);
}

/* One registration attempt of the reserved block (hp_pin_each): 0, or why
 * not (EAGAIN: not now, the device runtime is not ready; EPERM: refused;
 * ENOMEM: the kernel would refuse; others: the backend's), with *why. */
static int pin_try(hp_rec_t *r, uintptr_t base, size_t len,
		   int (*done)(uintptr_t upto), const char **why)
{
	if ((hp_backend->pin_flags & HOSTPIN_REGISTERED) &&
	    hp_alloc_from_device())
		/* The driver, runtime or loader allocated this inside one of
		 * its own calls: no call into it from there (invariant 11);
		 * pending, adopted later. */
		return EAGAIN;
	if ((hp_backend->pin_flags & HOSTPIN_REGISTERED) && hp_capture_busy() &&
	    !hp_capture_held())
		/* a CUDA graph capture in progress: pending, registered
		 * when it ends (invariant 13); one whose begin waits for this
		 * thread's hold (maps.c's releases) has not begun */
		return EAGAIN;
	if (!hp_pin_ready_now())
		return EAGAIN;
	if (hp_coverage_refuses(hp_backend, why))
		return EPERM; /* refused: a copy could bypass the hooks */
	if (hp_backend == &hp_backend_mlock &&
	    !hp_memlock_fits(len, atomic_load_explicit(&hp_ctr.pinned_bytes_now,
						       memory_order_relaxed) -
				      len,
			     why))
		return ENOMEM; /* the kernel would refuse: no pre-fault work */
	uint64_t t0 = hp_now_ns();
	/* piece by piece (done): each piece pre-faulted just before it is
	 * registered, so the first carries DMA early */
	int dev = hp_backend != &hp_backend_mlock;
	if (dev)
		before_fault(r, base, len, !done);
	int e = hp_cells_pin_each(base, len, why, done, dev && done);
	HP_CTR_ADD(pin_ns, hp_now_ns() - t0);
	HP_CTR_ADD(pin_calls, 1);
	return e;
}

/* After a registration that failed with e (not EAGAIN, not ECANCELED):
 * HOSTPIN_MLOCK keeps a block the device refused at least resident; the
 * failure counted and said (once per reason).  1 if the block was locked
 * (its reservation stays). */
static int pin_failed(hp_rec_t *r, uintptr_t base, size_t len, int e,
		      const char *why)
{
	int locked = hp_opt[HP_OPT_MLOCK] &&
		     hp_backend->pin_flags != HOSTPIN_LOCKED &&
		     mlock((void *)base, len) == 0;
	if (locked) {
		hp_set_rflags(r, hp_rflags(r) | HOSTPIN_LOCKED);
		HP_CTR_ADD(pinned_blocks_now, 1);
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
	return locked;
}

/* What follows attempt e of the reserved block: pending (EAGAIN), given up
 * (ECANCELED: the block's owner or the program took over), failed, or
 * registered.  1 if the block holds its reservation now. */
static int pin_settle(hp_rec_t *r, uintptr_t base, size_t len, int e,
		      const char *why, int (*done)(uintptr_t upto))
{
	if (e == EAGAIN) { /* not now: the device runtime is not ready */
		if (!(hp_rflags(r) & HOSTPIN_PENDING)) {
			hp_set_rflags(r, hp_rflags(r) | HOSTPIN_PENDING);
			HP_CTR_ADD(pending_blocks, 1);
		}
		return 0;
	}
	if (hp_rflags(r) & HOSTPIN_PENDING) {
		hp_set_rflags(r, hp_rflags(r) & ~HOSTPIN_PENDING);
		HP_CTR_SUB(pending_blocks, 1);
	}
	if (e == ECANCELED)
		return 0;
	if (e)
		return pin_failed(r, base, len, e, why);
	int bad = hp_coverage_bad();
	if (bad && done)
		done(base); /* no copy uses what is unregistered next */
	if (bad && hp_backend->unpin((void *)base, len, &why) == 0) {
		/* the check failed while this registration was made */
		hp_backend_events_act();
		return 0;
	}
	hp_backend_events_act();
	hp_set_rflags(r, hp_rflags(r) | hp_backend->pin_flags);
	atomic_store_explicit(&r->user[HP_U_OWNER],
			      hp_backend->owner ? hp_backend->owner() : 0,
			      memory_order_relaxed); /* as the flags */
	HP_CTR_ADD(pinned_blocks_now, 1);
	hp_site_account(hp_rsite(r), len, 1);
	/* the reservation is now real: account the peak */
	HP_CTR_PEAK(pinned_bytes_now, pinned_bytes_peak, 0);
	/* its share counts node-wide now: the ledger file is watched */
	hp_ledger_watch();
	return 1;
}

void hp_pin_each(hp_rec_t *r, uintptr_t base, size_t len,
		 int (*done)(uintptr_t upto))
{
	pin_each(r, base, len, done, 0);
}

/* copied: a registration inside a program's call of a block copies may
 * be using (hp_pin): put off while one counted on it may reach the driver
 * with its memory as it is (passing.c; the registration thread waited for
 * them before: register.c). */
static void pin_each(hp_rec_t *r, uintptr_t base, size_t len,
		     int (*done)(uintptr_t upto), int copied)
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
	if (!cap_reserve(len, 0)) {
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
	int mark = copied && !hp_in_child;
	int e = EAGAIN;
	if (mark && !hp_pass_begin(r)) /* pending: its next copy's */
		mark = 0, why = "a copy passed through is in flight";
	else
		e = pin_try(r, base, len, done, &why);
	hp_backend_events_act(); /* what the node and pin calls reported */
	/* the one place the reservation is given back */
	if (!pin_settle(r, base, len, e, why, done))
		HP_CTR_SUB(pinned_bytes_now, len);
	if (mark)
		hp_pass_end(r);
}

/* Undo hp_pin(); non-zero if the backend refused (the caller must then leak
 * the range: invariant 1).  EAGAIN: not now (a graph capture is in
 * progress, no context to unregister through); quiet: say nothing of it. */
int hp_unpin_do(hp_rec_t *r, uintptr_t base, size_t len, int quiet,
		int *in_driver)
{
	unsigned f = hp_rflags(r);
	const char *why = "unknown";
	int e = 0;
	if ((f & HOSTPIN_REGISTERED) && !hp_in_child && hp_capture_busy() &&
	    !hp_capture_held()) {
		/* no wait for its copies and no unregistration while a CUDA
		 * graph is captured (invariant 13; not yet begun while this
		 * thread holds the gate) */
		why = "a CUDA graph capture is in progress", e = EAGAIN;
		goto refused;
	}
	if ((f & HOSTPIN_REGISTERED) && quiet && !hp_in_child &&
	    hp_alloc_from_device()) {
		/* freed by the driver inside one of its own calls (a buffer
		 * of zeContextDestroy's): no call into it from there
		 * (invariant 11); released once the call returned */
		why = "freed inside a driver call", e = EAGAIN;
		if (in_driver)
			*in_driver = 1;
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
		/* refused as its context ended while r was held (the end's
		 * walk skipped r): died with it, nothing left to undo */
		if (e == EAGAIN && hp_pin_died(r)) {
			if (hp_backend->quiesce)
				hp_cuda_forget(r);
			e = 0;
		}
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
	hp_set_rflags(r, hp_rflags(r) & ~(HP_PIN_MASK | HP_F_ENDED));
	HP_CTR_SUB(pinned_blocks_now, 1);
	HP_CTR_SUB(pinned_bytes_now, len);
	hp_site_account(hp_rsite(r), len, 0);
	return 0;
}

int hp_unpin(hp_rec_t *r, uintptr_t base, size_t len)
{
	return hp_unpin_do(r, base, len, 0, NULL);
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
		unsigned ep = hp_cuda_ctx_epoch();
		if (!hp_register_later(r, s)) {
			hp_pin(r, s->base, s->len);
			hp_pin_recheck_ended(r, st, s->base, s->len, ep, 0);
			return;
		}
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
	atomic_store_explicit(&hp_lazy_seen, 1, memory_order_release);
}
