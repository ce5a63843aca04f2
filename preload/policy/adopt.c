/* Adoption and loss (the pin policy's other half: pin.c): blocks left
 * pending (no device yet, a capture, a driver call) or waiting for copies
 * that no backend counts are pinned once the device is ready; what the
 * backend reports (a context ended, the driver unloaded) sends the
 * registrations it dropped back to pending with no call into the driver;
 * a forked child forgets what it did not inherit.  Every function here
 * runs with hp_in_hook raised by its caller. */
#include "../record.h"

static int adopt_one(hp_rec_t *r, const hp_snap_t *s, void *arg);
static void ends_again(void);

/* A block just tracked was left pending (lazy: waiting for copies) while
 * the device became ready (auto chose a backend that counts no copies) on
 * another thread, whose adoption may have looked before the block was
 * there: adopt it here.  The busy claim decides who pins it, this thread or
 * an adopter; neither skips it for good, whatever the timing. */
void hp_adopt_again(hp_rec_t *r, uintptr_t base, int lazy)
{
	hp_snap_t s;
	if (hp_registry_lookup(&hp_reg, base, &s) == r && s.base == base)
		adopt_one(r, &s, lazy ? (void *)&hp_lazy_seen : NULL);
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
	ends_again(); /* its blocks pending again: adopted below */
	int lazy = atomic_load_explicit(&hp_lazy_seen, memory_order_relaxed);
	if ((atomic_load_explicit(&hp_ctr.pending_blocks,
				  memory_order_relaxed) == 0 && !lazy) ||
	    hp_in_child || hp_capture_busy() || !hp_pin_ready_now())
		return;
	/* auto chose a backend whose copies are not counted: its lazy
	 * blocks are pinned now, once. */
	/* acq_rel: pairs with the release in hp_track_as (the flags of the
	 * blocks it announced are visible to the walk) */
	lazy = lazy && !hp_pin_counts_copies() &&
	       atomic_exchange_explicit(&hp_lazy_seen, 0, memory_order_acq_rel);
	if (lazy || atomic_load_explicit(&hp_ctr.pending_blocks,
					 memory_order_relaxed))
		hp_registry_each(&hp_reg, adopt_one, lazy ? &hp_lazy_seen : NULL);
}

/* A registration the driver dropped by itself (its context ended, or the
 * driver was unloaded): back to pending, with no call into the driver. */
struct lost {
	uintptr_t owner; /* the context that ended; 0: any */
	unsigned want, clear; /* flags that select a block, flags dropped */
	int n;
};

/* r held: its registration gone with the driver or its context (clear:
 * the flags dropped), back to pending. */
static void lose(hp_rec_t *r, size_t len, unsigned clear)
{
	/* Nothing to unregister, and no copy left to wait for: the copies'
	 * events died with the context or the driver. */
	if (hp_backend->quiesce)
		hp_cuda_forget(r);
	hp_set_rflags(r, (hp_rflags(r) & ~(clear | HP_F_ENDED)) |
			 HOSTPIN_PENDING);
	atomic_store_explicit(&r->user[HP_U_OWNER], 0, memory_order_relaxed);
	HP_CTR_SUB(pinned_blocks_now, 1);
	HP_CTR_SUB(pinned_bytes_now, len);
	hp_site_account(hp_rsite(r), len, 0);
	HP_CTR_ADD(pending_blocks, 1);
}

static int lost_one(hp_rec_t *r, const hp_snap_t *s, void *arg)
{
	struct lost *l = arg;
	uint32_t st;
	/* A block held by another thread is skipped: its holder meets the
	 * end itself (a registration: hp_pin_restart_if_ended, then
	 * hp_pin_recheck_ended; an unregistration the ended context
	 * refused: hp_pin_died in hp_unpin_do, hp_pin_lost_held for a
	 * discard; a discard's registration again and a partial unmap's
	 * survivors: hp_pin_lost_held in pinpart.c; a free into the cache:
	 * hp_pin_lost_held in hp_cache_keep) */
	if (!(hp_rflags(r) & l->want) ||
	    (l->owner &&
	     atomic_load_explicit(&r->user[HP_U_OWNER], memory_order_relaxed) !=
		 l->owner) ||
	    !(st = hp_busy_begin(r, s)))
		return 0;
	lose(r, s->len, l->clear);
	hp_busy_end(r, st);
	l->n++;
	return 0;
}

/* Set when hp_pin_died said no only because a capture ran (the blocks
 * marked HP_F_ENDED): looked at again once no capture runs (ends_again,
 * from hp_adopt_pending: the capture's end, a large allocation, a copy
 * of a pending block). */
static _Atomic int ends_put_off;

int hp_pin_died(const hp_rec_t *r)
{
	hp_rec_t *w = (hp_rec_t *)(uintptr_t)r;
	uintptr_t owner = atomic_load_explicit(&r->user[HP_U_OWNER],
					       memory_order_relaxed);
	if (!owner || !(hp_rflags(w) & HOSTPIN_REGISTERED) || hp_in_child ||
	    hp_cuda_ctx_gen(owner, 0) != 0)
		return 0;
	/* this thread holds the capture gate (a release, a discard): a
	 * capture counted meanwhile waits for it, so the refusal was the
	 * driver's */
	if (!hp_capture_busy() || hp_capture_held())
		return 1;
	/* A capture runs: an unregistration refused now may be the
	 * capture's refusal, not the driver's (a piece made through another
	 * context may live): put off.  The caller holds r. */
	hp_set_rflags(w, hp_rflags(w) | HP_F_ENDED);
	/* release: pairs with the acquire in ends_again */
	atomic_store_explicit(&ends_put_off, 1, memory_order_release);
	return 0;
}

/* r marked HP_F_ENDED (hp_pin_died), flagged registered through a context
 * that ended: unregistered now (a piece made through another context
 * lives; one of the ended context's answers that it died with it:
 * hp_unpin_do counts it done), pending again, adopted next.  One held by
 * another thread or being released meanwhile, or refused again for a
 * capture (or no context to unregister through), is looked at again at
 * the next adoption; one the driver refuses stays registered (invariant
 * 1). */
static int put_off_one(hp_rec_t *r, const hp_snap_t *s, void *arg)
{
	int *again = arg;
	uint32_t st;
	if (!(hp_rflags(r) & HP_F_ENDED))
		return 0;
	if (!(st = hp_busy_begin(r, s))) {
		/* held, or being released: looked at again; a leaked one
		 * (a release deferred: hp_retry_deferred's) is left */
		uint32_t w = hp_word_state(s->word);
		*again |= w == HP_REC_BUSY || w == HP_REC_RELEASING;
		return 0;
	}
	unsigned f = hp_rflags(r);
	int e = (f & HP_F_ENDED) && (f & HOSTPIN_REGISTERED)
		    ? hp_unpin_do(r, s->base, s->len, 1, NULL)
		    : -1;
	if (e == 0) {
		atomic_store_explicit(&r->user[HP_U_OWNER], 0,
				      memory_order_relaxed);
		hp_set_rflags(r, hp_rflags(r) | HOSTPIN_PENDING);
		HP_CTR_ADD(pending_blocks, 1);
		hp_log(HP_LOG_INFO, "a CUDA context ended during a graph "
		       "capture while a block of %zu bytes was held: pending "
		       "again", s->len);
	} else if (e == EAGAIN)
		*again = 1;
	else
		hp_set_rflags(r, hp_rflags(r) & ~HP_F_ENDED);
	hp_busy_end(r, st);
	return 0;
}

static void ends_again(void)
{
	if (atomic_load_explicit(&ends_put_off, memory_order_relaxed) == 0 ||
	    hp_in_child || hp_capture_busy())
		return;
	/* acquire: pairs with the release in hp_pin_died */
	if (!atomic_exchange_explicit(&ends_put_off, 0, memory_order_acquire))
		return;
	int again = 0;
	hp_registry_each(&hp_reg, put_off_one, &again);
	if (again)
		atomic_store_explicit(&ends_put_off, 1, memory_order_release);
}

int hp_pin_lost_held(hp_rec_t *r, size_t len)
{
	if (!hp_pin_died(r))
		return 0;
	lose(r, len, HOSTPIN_REGISTERED);
	hp_log(HP_LOG_INFO, "a CUDA context ended while a block of %zu bytes "
	       "was held: pending again", len);
	return 1;
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
	if (n > 0)
		hp_register_end_met();
}

static int event_drop(hp_rec_t *r, const hp_snap_t *s, void *arg)
{
	(void)s;
	(void)arg;
	hp_cuda_quiesce(r);
	return 0;
}

void hp_cuda_ctx_ending(void)
{
	if (hp_backend->quiesce && !hp_in_child)
		hp_registry_each(&hp_reg, event_drop, NULL);
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

/* In a forked child, after the registration thread's own hold ended
 * (hp_register_fork_child): the holds (hp_busy_begin) the parent's other
 * threads had on blocks at the fork end too, since no thread here ends
 * them (the child's free of such a block spun for ever). */
static int child_unbusy(hp_rec_t *r, const hp_snap_t *s, void *arg)
{
	(void)arg;
	/* a hold is taken from LIVE or CACHED (hp_busy_begin); the cache
	 * says which */
	if (hp_word_state(s->word) == HP_REC_BUSY)
		hp_busy_end(r, hp_cache_holds(r) ? HP_REC_CACHED
						 : HP_REC_LIVE);
	return 0;
}

void hp_pin_fork_unbusy(void)
{
	hp_registry_each(&hp_reg, child_unbusy, NULL);
}

void hp_pin_fork_child(void)
{
	hp_in_hook++;
	hp_backend->fork_child();
	hp_registry_each(&hp_reg, child_forget, NULL);
	HP_CTR_SET(pinned_bytes_now, 0);
	/* nor the staging rings' registrations: the parent's slot counts
	 * them, the child's must not count them again */
	HP_CTR_SET(ring_bytes, 0);
	hp_in_hook--;
}

