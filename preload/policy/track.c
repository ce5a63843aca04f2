/* Tracking (the pin policy's records: pin.c pins and unpins): a range
 * enters the registry LIVE and is pinned now or counted until it earns it;
 * it leaves once unpinned, or stays LEAKED when the backend refused (never
 * reused: invariant 1), or waits, still mapped and registered, for an
 * unregistration that cannot be made now (HP_F_DEFER: a CUDA graph
 * capture, no context, a block freed inside a driver call), retried later.
 * Every function here runs with hp_in_hook raised by its caller. */
#include <errno.h>
#include <sched.h>
#include <sys/mman.h>

#include "../node/ledger.h"
#include "../record.h"
#include "../base/resolve.h"

void hp_count_track(unsigned kind, size_t len, int add)
{
	if (kind & HOSTPIN_KIND_MALLOC) {
		if (add) {
			HP_CTR_PEAK(blocks_now, blocks_peak, 1);
			HP_CTR_PEAK(bytes_now, bytes_peak, len);
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
		atomic_store_explicit(&hp_lazy_seen, 1, memory_order_release);
		/* seq_cst: pairs with the fence in hp_adopt_pending (Dekker):
		 * either its adopter sees lazy_seen, or this sees the choice
		 * of a backend that counts no copies (auto, at zeInit) */
		atomic_thread_fence(memory_order_seq_cst);
		if (!hp_pin_counts_copies())
			hp_adopt_again(r, base, 1);
		return;
	}
	hp_pin_fresh(r, base, len);
	if (hp_rflags(r) & HOSTPIN_PENDING) {
		/* seq_cst: as above, with pending_blocks, counted by hp_pin:
		 * either the adoption that follows readiness (zeInit on
		 * another thread) sees this block, or this sees readiness */
		atomic_thread_fence(memory_order_seq_cst);
		if (!hp_alloc_from_device() && hp_pin_ready_now())
			hp_adopt_again(r, base, 0);
	}
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
	int in_driver_refused = 0;
	int e = hp_unpin_do(r, s->base, s->len, defer, &in_driver_refused);
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
	int e = hp_unpin_do(r, s->base, s->len, 1, NULL);
	/* relaxed: we hold r (claimed); the claim's CAS orders */
	uint64_t w = atomic_load_explicit(&r->word, memory_order_relaxed);
	if (e == EAGAIN) {
		/* not yet; the others may be (a Level Zero copy still to
		 * run holds this one only) */
		hp_registry_claim(r, w, HP_REC_LEAKED);
		*again = 1;
		return 0;
	}
	hp_set_rflags(r, hp_rflags(r) & ~HP_F_DEFER);
	atomic_fetch_sub(&deferred_n, 1);
	if (e) { /* refused for good: leaked (hp_unpin_do said so) */
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
