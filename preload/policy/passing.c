/* Copies that reach the driver with a block's memory as it is (issue 39,
 * "decided once"; items 6 and 10).  A copy planned as a pageable
 * pass-through (under HOSTPIN_STAGE_MIN, the rest of a staged copy, an
 * entry point hostpin does not plan) was decided while its block was not
 * registered, and the decision must stay true until the driver has the
 * copy: a registration begun meanwhile would hand the driver a range only
 * partly registered (a registration in pieces), or turn the copy into one
 * through registered memory that hostpin does not wait for.  So every copy
 * is counted on its blocks from hp_copy_host to its end (copy.c; a batch's
 * entry until its call returned), and a registration of a block waits for
 * the copies counted before it began, or is put off:
 *
 *   the registration thread (register.c) first makes the block its own
 *   (pre.r: copies planned from then on see it, staged or cut at its
 *   pieces), then waits for the copies counted before (hp_pass_drain);
 *   a registration inside a program's call (hp_pin: the copy that earns
 *   it, adoption) never waits for another thread's copy: it marks the
 *   block HP_F_PINNING and, if a copy is counted on it, is put off
 *   (pending: the block's next copy registers it, hp_copy_host); a copy
 *   counted after the mark sees it and waits for the registration's end
 *   (copy.c's hold) before it is planned.
 *
 * The counts are kept per stripe of records (a count shared with another
 * block only makes a registration wait a little longer, or be put off
 * once more) and per epoch, two counts a stripe as in sleepable RCU: the
 * registration thread, the one thread that flips the epoch, waits for the
 * count of the epoch before the last flip, flips, and waits for the count
 * of the epoch before this flip; copies counted after it never hold it, so
 * a block copied without a pause is still registered.  A copy counted late
 * in an old epoch (it read the epoch before a flip) came after the block
 * was made the thread's, and its plan sees that (the pre.mu lock orders
 * the two). */
#include <time.h>

#include "../record.h"

#define STRIPES 512
static _Atomic unsigned pass_n[STRIPES][2];
static _Atomic unsigned pass_epoch;

static unsigned stripe_of(const hp_rec_t *r)
{
	uintptr_t k = (uintptr_t)r;
	return (unsigned)(((k >> 4) ^ (k >> 12)) % STRIPES);
}

unsigned hp_pass_add(hp_rec_t *r)
{
	unsigned s = stripe_of(r);
	/* seq_cst: the epoch before the count; the count before the plan's
	 * or hold's look at the block (hp_pass_pinning, pre.mu) */
	unsigned e = atomic_load(&pass_epoch) & 1u;
	atomic_fetch_add(&pass_n[s][e], 1);
	return s * 2 + e + 1;
}

void hp_pass_sub(unsigned t)
{
	if (t)
		atomic_fetch_sub(&pass_n[(t - 1) / 2][(t - 1) % 2], 1);
}

int hp_pass_pinning(hp_rec_t *r)
{
	/* the count before the flag; hp_pass_begin: the flag before the
	 * count (one of the two sees the other) */
	atomic_thread_fence(memory_order_seq_cst);
	return !hp_in_child && (hp_rflags(r) & HP_F_PINNING) != 0;
}

static unsigned counted(unsigned s)
{
	return atomic_load(&pass_n[s][0]) + atomic_load(&pass_n[s][1]);
}

int hp_pass_begin(hp_rec_t *r)
{
	hp_set_rflags(r, hp_rflags(r) | HP_F_PINNING);
	atomic_thread_fence(memory_order_seq_cst);
	if (counted(stripe_of(r)) == 0)
		return 1;
	hp_set_rflags(r, hp_rflags(r) & ~HP_F_PINNING);
	return 0;
}

void hp_pass_end(hp_rec_t *r)
{
	hp_set_rflags(r, hp_rflags(r) & ~HP_F_PINNING);
}

/* Until *n is 0 (1), or stop says to give up (0). */
static int drain(_Atomic unsigned *n, int (*stop)(void))
{
	for (unsigned i = 0; atomic_load(n) != 0; i++) {
		if (stop())
			return 0;
		if (i < 100) {
			sched_yield();
			continue;
		}
		struct timespec ts = {0, 1000000};
		nanosleep(&ts, NULL);
	}
	return 1;
}

int hp_pass_drain(hp_rec_t *r, uintptr_t base, int (*stop)(void))
{
	unsigned s = stripe_of(r);
	atomic_thread_fence(memory_order_seq_cst);
	if (counted(s) == 0)
		return 1;
	hp_log(HP_LOG_DEBUG, "block %p: its registration waits for the copies "
	       "passed through to the driver before it", (void *)base);
	unsigned e = atomic_load(&pass_epoch) & 1u;
	if (!drain(&pass_n[s][e ^ 1u], stop))
		return 0;
	atomic_fetch_add(&pass_epoch, 1);
	return drain(&pass_n[s][e], stop);
}
