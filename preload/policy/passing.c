/* The copies in flight on each block, counted once (issue 39, "decided
 * once"; items 6 and 10; invariants 1 and 8).  Every copy is counted on
 * its blocks from hp_copy_host to its end (copy.c; a batch's entry until
 * its call returned), one word per stripe of records and epoch, which
 * holds two counts:
 *
 *   in flight (HOLD), until the copy's end: hostpin's own unregistration
 *   of a registered block (stepping aside for the program's registration,
 *   foreign.c; a context ended under a registration, pin.c) waits for
 *   them (hp_hold_drain; HP_F_ASIDE makes a copy counted after it wait,
 *   holding no count: a batch's entries passed before end first, batch.c);
 *
 *   passing (PASS), until the copy's plan says it never reaches the
 *   driver with the block's memory as it is (hp_pass_sub; plan.c): a
 *   decision taken while the block was not registered must stay true
 *   until the driver has the copy, for a registration begun meanwhile
 *   would hand the driver a range only partly registered (a registration
 *   in pieces), or turn the copy into one through registered memory that
 *   hostpin does not wait for.  So
 *     the registration thread (register.c) first makes the block its own
 *     (pre.r: copies planned from then on see it, staged or cut at its
 *     pieces), then waits for the passing copies counted before
 *     (hp_pass_drain);
 *     a registration inside a program's call (hp_pin: the copy that earns
 *     it, adoption) never waits for another thread's copy: it marks the
 *     block HP_F_PINNING and, if a passing copy is counted on its stripe,
 *     is put off (pending: the block's next copy registers it); a copy
 *     counted after the mark sees it and waits for the registration's end
 *     before it is planned (hp_hold_waits).
 *
 * A count shared with another block of the stripe only makes a wait a
 * little longer, or a registration be put off once more.  Each stripe has
 * two words and an epoch, as in sleepable RCU: a copy counts in the word
 * of the stripe's epoch then; a waiter waits only for the copies counted
 * before it began.  It looks at both words; a word seen at zero after it
 * began holds none of them any more; once the word not current was seen
 * empty, it flips the epoch (any waiter may: a flip is only a compare and
 * swap of the epoch it read; see drain), new copies count in the other
 * word and the one it waits for only empties.  So a block, or another
 * block of its stripe, copied without a pause never keeps a waiter
 * waiting.  A copy
 * counted late in an old word (it read the epoch before a flip) counted
 * after the waiter's flag or pre.r, and sees it (one of the two sees the
 * other: a seq_cst fence on each side). */
#include <time.h>

#include "../record.h"

#define STRIPES 512
/* The stripe of copies of more blocks than a copy records (HP_COPY_RECS,
 * c->overflow): counted there as copies through every block, the
 * conservative count (docs/design.md): every drain waits for them too,
 * every registration inside a program's call is put off while one may
 * pass, and such a copy counted after a mark anywhere (marks: HP_F_PINNING,
 * HP_F_ASIDE, the registration thread's block) waits for it to go before
 * it reaches the driver (hp_hold_all_waits). */
#define ALL STRIPES
#define HOLD 1ull
#define PASS (1ull << 32)
#define HOLD_MASK (PASS - 1)
#define PASS_MASK (~HOLD_MASK)
static _Atomic uint64_t count_n[(STRIPES + 1) * 2]; /* [stripe * 2 + word] */
static _Atomic unsigned count_epoch[STRIPES + 1];
/* blocks marked HP_F_PINNING or HP_F_ASIDE now, anywhere */
static _Atomic int marks;

unsigned hp_count_stripe(const hp_rec_t *r)
{
	uintptr_t k = (uintptr_t)r;
	return (unsigned)(((k >> 4) ^ (k >> 12)) % STRIPES);
}

static unsigned add_at(unsigned s);

/* A token: the word's index + 1, shifted, and bit 0 while passing. */
unsigned hp_hold_add(hp_rec_t *r)
{
	return add_at(hp_count_stripe(r));
}

unsigned hp_hold_add_all(void)
{
	return add_at(ALL);
}

int hp_hold_all_waits(void)
{
	return !hp_in_child &&
	       (atomic_load(&marks) != 0 || hp_register_taken(NULL));
}

static unsigned add_at(unsigned s)
{
	/* seq_cst: the epoch before the count; the count before the look at
	 * the flags (hp_hold_waits) or the block (the plan, pre.mu) */
	unsigned w = s * 2 + (atomic_load(&count_epoch[s]) & 1u);
	atomic_fetch_add(&count_n[w], HOLD | PASS);
	return (w + 1) << 1 | 1u;
}

unsigned hp_pass_sub(unsigned t)
{
	if (t & 1u)
		atomic_fetch_sub(&count_n[(t >> 1) - 1], PASS);
	return t & ~1u;
}

void hp_hold_sub(unsigned t)
{
	if (t)
		atomic_fetch_sub(&count_n[(t >> 1) - 1],
				 HOLD | ((t & 1u) ? PASS : 0));
}

void hp_hold_fence(void)
{
	/* the counts before the flags; the waiters: the flag before the
	 * counts (one of the two sees the other) */
	atomic_thread_fence(memory_order_seq_cst);
}

unsigned hp_hold_waits(hp_rec_t *r)
{
	unsigned f = hp_rflags(r) & HP_F_ASIDE;
	if (!hp_in_child)
		f |= hp_rflags(r) & HP_F_PINNING;
	return f;
}

int hp_pass_begin(hp_rec_t *r)
{
	unsigned s = hp_count_stripe(r);
	hp_set_rflags(r, hp_rflags(r) | HP_F_PINNING);
	atomic_fetch_add(&marks, 1);
	atomic_thread_fence(memory_order_seq_cst);
	if (((atomic_load(&count_n[s * 2]) | atomic_load(&count_n[s * 2 + 1]) |
	      atomic_load(&count_n[ALL * 2]) |
	      atomic_load(&count_n[ALL * 2 + 1])) &
	     PASS_MASK) == 0)
		return 1;
	hp_set_rflags(r, hp_rflags(r) & ~HP_F_PINNING);
	atomic_fetch_sub(&marks, 1);
	return 0;
}

void hp_pass_end(hp_rec_t *r)
{
	hp_set_rflags(r, hp_rflags(r) & ~HP_F_PINNING);
	atomic_fetch_sub(&marks, 1);
}

struct stop {
	int (*fn)(struct stop *, unsigned look);
	int (*pass_stop)(void);
	uint64_t t0;
};

/* Until the copies counted (the part `mask` of the words) on stripe s
 * before the call have ended (1), or st says to give up (0): the first
 * `spins` looks yield, the later ones sleep 1 ms.  A word seen at zero
 * (its part) holds none of them any more.  The epoch flips from E only
 * once the word not current under E was seen empty, both counts, while
 * the epoch was E: so 3 flips since the call began mean both words were
 * seen empty since, whoever flipped (waiters for the other count, or on
 * another block of the stripe, never keep each other waiting). */
static int drain(unsigned s, uint64_t mask, unsigned spins, struct stop *st)
{
	int seen[2] = {0, 0};
	/* seq_cst: the caller's flag or pre.r before the epoch and counts */
	atomic_thread_fence(memory_order_seq_cst);
	unsigned e0 = atomic_load(&count_epoch[s]);
	for (unsigned i = 0;; i++) {
		unsigned e = atomic_load(&count_epoch[s]);
		unsigned cur = e & 1u, old = cur ^ 1u;
		uint64_t wo = atomic_load(&count_n[s * 2 + old]);
		if ((wo & mask) == 0)
			seen[old] = 1;
		if ((atomic_load(&count_n[s * 2 + cur]) & mask) == 0)
			seen[cur] = 1;
		if ((seen[0] && seen[1]) || e - e0 >= 3)
			return 1;
		if (seen[old] && wo == 0) {
			/* the current word becomes the old one: copies
			 * counted from now on count in the other */
			atomic_compare_exchange_strong(&count_epoch[s], &e,
						       e + 1);
			continue;
		}
		if (st->fn(st, i))
			return 0;
		if (i < spins) {
			sched_yield();
			continue;
		}
		struct timespec ts = {0, 1000000};
		nanosleep(&ts, NULL);
	}
}

static int pass_stop(struct stop *st, unsigned look)
{
	(void)look;
	return st->pass_stop();
}

static int pass_drain_at(unsigned s, uintptr_t base, int (*stop)(void))
{
	atomic_thread_fence(memory_order_seq_cst);
	if (((atomic_load(&count_n[s * 2]) | atomic_load(&count_n[s * 2 + 1])) &
	     PASS_MASK) == 0)
		return 1;
	hp_log(HP_LOG_DEBUG, "block %p: its registration waits for the copies "
	       "passed through to the driver before it", (void *)base);
	struct stop st = {.fn = pass_stop, .pass_stop = stop};
	return drain(s, PASS_MASK, 100, &st);
}

/* r's stripe, then the copies of more blocks than they record (the
 * thread's pre.r, hp_register_taken, is the mark they see) */
int hp_pass_drain(hp_rec_t *r, uintptr_t base, int (*stop)(void))
{
	return pass_drain_at(hp_count_stripe(r), base, stop) &&
	       pass_drain_at(ALL, base, stop);
}

/* The step aside's bound (HP_ASIDE_WAIT_NS and as many looks, record.h):
 * looks are counted from the first sleep. */
static int aside_stop(struct stop *st, unsigned look)
{
	if (look < 1000)
		return 0;
	uint64_t t = hp_now_ns();
	if (st->t0 == 0)
		st->t0 = t;
	return t - st->t0 > HP_ASIDE_WAIT_NS &&
	       look - 1000 >= HP_ASIDE_WAIT_LOOKS;
}

/* r's stripe, then the copies of more blocks than they record (counted
 * after the mark: they wait for it, hp_hold_all_waits); a copy's count
 * moved to ALL (hp_copy_join) is there before its block's is let go. */
int hp_hold_drain(hp_rec_t *r)
{
	hp_set_rflags(r, hp_rflags(r) | HP_F_ASIDE);
	atomic_fetch_add(&marks, 1);
	struct stop st = {.fn = aside_stop};
	if (drain(hp_count_stripe(r), HOLD_MASK, 1000, &st) &&
	    drain(ALL, HOLD_MASK, 1000, &st))
		return 0;
	hp_set_rflags(r, hp_rflags(r) & ~HP_F_ASIDE);
	atomic_fetch_sub(&marks, 1);
	return EBUSY;
}

void hp_hold_drain_end(hp_rec_t *r)
{
	hp_set_rflags(r, hp_rflags(r) & ~HP_F_ASIDE);
	atomic_fetch_sub(&marks, 1);
}
