/* A CUDA context that ended while a block was being registered (issue 39):
 * hp_pin_restart_if_ended, after a registration, releases what the block
 * may have lost with the context and leaves it pending again;
 * hp_pin_recheck_ended looks again once the caller's claim on the block
 * ends, for an end whose walk skipped it while it was held.  The pin
 * policy itself (when to pin, the caps, pin and unpin) is pin.c's.  Runs
 * with hp_in_hook raised by its caller, as pin.c. */
#include <errno.h>

#include "../record.h"

/* A CUDA context ended while r was being registered (ep: the contexts'
 * epoch before; the caller holds r): a registration in pieces made some
 * before the end (dead with it) and some after (alive), and the end's
 * walk skipped r (held): were it left registered, copies would go direct
 * through a dead piece and it would never be registered again.  Its live
 * pieces are released (a dead one answers "not registered") and it goes
 * back to pending, registered again by its next copies or adoption
 * (issue 39).  Only if the context that ended may be one its pieces were
 * made through: all made through one context that lives on, at the
 * generation it had then (hp_cuda_pin_intact), r stays registered. */
void hp_pin_restart_if_ended(hp_rec_t *r, uintptr_t base, size_t len,
			     unsigned ep, int drain)
{
	if (!(hp_rflags(r) & HOSTPIN_REGISTERED) || hp_cuda_ctx_epoch() == ep)
		return;
	/* every piece made through one context that lives on, at the
	 * generation it had then: another context ended (another device's
	 * primary released or reset, a context destroyed), not this
	 * block's, whose registration lives on */
	if ((hp_backend == &hp_backend_cuda ||
	     hp_backend_auto_chosen() == &hp_backend_cuda) &&
	    hp_cuda_pin_intact(base, len))
		return;
	uintptr_t owner = atomic_load_explicit(&r->user[HP_U_OWNER],
					       memory_order_relaxed);
	/* registered, r's copies went direct on other threads (a
	 * synchronous form's DMA not yet waited for): none is unregistered
	 * under (invariant 1; issue 39, seed 9100082) */
	drain = drain && !hp_in_child;
	if (drain && hp_hold_drain(r) != 0) {
		HP_LOG_ONCE(HP_LOG_WARN, "block %p (%zu bytes): a CUDA "
			    "context ended while it was being registered, "
			    "and a copy through it has been in flight for "
			    "10 s: left registered", (void *)base, len);
		return;
	}
	int e = hp_unpin_do(r, base, len, 1, NULL);
	if (drain)
		hp_hold_drain_end(r);
	if (e == EAGAIN && owner && hp_pin_died(r)) {
		/* no context to unregister through, and its own ended: it
		 * died with it (a registration made through a context
		 * that ended during the call is undone at once:
		 * backend_cuda.c), as the end's walk would have found */
		if (hp_backend->quiesce)
			hp_cuda_forget(r);
		hp_set_rflags(r, hp_rflags(r) &
				     ~(HOSTPIN_REGISTERED | HP_F_ENDED));
		HP_CTR_SUB(pinned_blocks_now, 1);
		HP_CTR_SUB(pinned_bytes_now, len);
		hp_site_account(hp_rsite(r), len, 0);
		e = 0;
	}
	if (e != 0)
		return; /* still registered: left as it is (invariant 1) */
	atomic_store_explicit(&r->user[HP_U_OWNER], 0, memory_order_relaxed);
	hp_set_rflags(r, hp_rflags(r) | HOSTPIN_PENDING);
	HP_CTR_ADD(pending_blocks, 1);
	hp_log(HP_LOG_INFO, "block %p (%zu bytes): a CUDA context ended while "
	       "it was being registered: pending again", (void *)base, len);
}

void hp_pin_recheck_ended(hp_rec_t *r, uint32_t st, uintptr_t base,
			  size_t len, unsigned ep, int drain)
{
	/* the window: r held, hp_pin_restart_if_ended has looked; an end
	 * now finds r held and skips it (no driver call here: the test
	 * hook holds a thread in it) */
	hp_test_pause("recheck_held");
	hp_busy_end(r, st);
	hp_test_pause("recheck_look");
	struct timespec t0 = {0, 0};
	for (unsigned spins = 0;; spins++) {
		/* the end bumps the epoch before its walk: a walk that found
		 * r held, after hp_pin_restart_if_ended looked, shows here */
		atomic_thread_fence(memory_order_seq_cst);
		unsigned now = hp_cuda_ctx_epoch();
		if (now == ep || !(hp_rflags(r) & HOSTPIN_REGISTERED))
			return;
		hp_snap_t s;
		if (hp_registry_lookup_base(&hp_reg, base, &s) != r ||
		    s.len != len)
			return; /* released, or moved */
		uint32_t w = hp_word_state(s.word), st2 = hp_busy_begin(r, &s);
		if (!st2) {
			/* another thread's now (BUSY), or being released
			 * (RELEASING): not every holder meets the end (a free
			 * into the cache keeps the registration, a discard
			 * during a capture zeroes): looked at again once it
			 * let go, or gone (audit b).  Leaked: stays. */
			if ((w != HP_REC_BUSY && w != HP_REC_RELEASING) ||
			    hp_waited(&t0, spins, 10))
				return;
			if (!spins)
				hp_test_pause("recheck_wait");
			sched_yield();
			continue;
		}
		hp_pin_restart_if_ended(r, base, len, ep, drain);
		hp_busy_end(r, st2);
		/* left registered (its own context lives): an end after
		 * `now`, whose walk found r held, is looked at again */
		ep = now;
	}
}

