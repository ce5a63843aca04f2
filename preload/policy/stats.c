/* Failures by reason: each pin failure counted under its reason's name, so
 * the report (hooks/report.c) can say why, and each reason logged once. */
#include <string.h>

#include "../hp.h"

/* The last slot counts every reason beyond the others, under its own name.
 * A reason is copied into the slot: the string handed in may live in an
 * object that is unloaded later (a driver's error name), and the report at
 * exit must not read it then.  A slot's state: 0 empty, 1 being written,
 * 2 named. */
#define MAX_REASONS HP_STAT_REASONS
#define REASON_LEN 96
static const char other_reasons[] = "other reasons";
static struct {
	_Atomic int state;
	char name[REASON_LEN];
	_Atomic uint64_t n;
} reasons[MAX_REASONS];

/* The name of slot i once named, else NULL. */
static const char *reason_name(int i)
{
	/* acquire: pairs with the release that published the name */
	return atomic_load_explicit(&reasons[i].state, memory_order_acquire) ==
		       2
		   ? reasons[i].name
		   : NULL;
}

/* Compare a stored (possibly truncated) name with reason. */
static int same_reason(const char *stored, const char *reason)
{
	size_t n = strnlen(reason, REASON_LEN - 1);
	return strncmp(stored, reason, n) == 0 && stored[n] == '\0';
}

static void name_slot(int i, const char *reason)
{
	size_t n = strnlen(reason, REASON_LEN - 1);
	memcpy(reasons[i].name, reason, n);
	reasons[i].name[n] = '\0';
	/* release: pairs with the acquire in reason_name */
	atomic_store_explicit(&reasons[i].state, 2, memory_order_release);
}

int hp_stat_fail(const char *reason)
{
	HP_CTR_ADD(fail_count, 1); /* the ledger's view: no reasons */
	if (reason == NULL)
		reason = "unknown";
	for (int i = 0; i < MAX_REASONS - 1; i++) {
		int st = atomic_load_explicit(&reasons[i].state,
					      memory_order_acquire);
		/* claim the empty slot; a racing claimer of the same slot
		 * waits for the name, then compares */
		if (st == 0 &&
		    atomic_compare_exchange_strong_explicit(
			&reasons[i].state, &st, 1, memory_order_acq_rel,
			memory_order_acquire)) {
			name_slot(i, reason);
			st = 2;
		}
		while (st == 1) /* a few stores away */
			st = atomic_load_explicit(&reasons[i].state,
						  memory_order_acquire);
		if (same_reason(reasons[i].name, reason))
			return atomic_fetch_add_explicit(&reasons[i].n, 1,
							 memory_order_relaxed) ==
			       0;
	}
	int st = 0;
	if (atomic_compare_exchange_strong_explicit(
		&reasons[MAX_REASONS - 1].state, &st, 1, memory_order_acq_rel,
		memory_order_acquire))
		name_slot(MAX_REASONS - 1, other_reasons);
	return atomic_fetch_add_explicit(&reasons[MAX_REASONS - 1].n, 1,
					 memory_order_relaxed) == 0;
}

static uint64_t fail_total(void)
{
	uint64_t t = 0;
	for (int i = 0; i < MAX_REASONS; i++)
		t += atomic_load_explicit(&reasons[i].n, memory_order_relaxed);
	return t;
}

/* The name of reason slot i and its count; NULL for an empty slot. */
const char *hp_stat_reason(int i, uint64_t *n)
{
	const char *r = i >= 0 && i < MAX_REASONS ? reason_name(i) : NULL;
	if (r)
		*n = atomic_load_explicit(&reasons[i].n, memory_order_relaxed);
	return r;
}

uint64_t hp_stat_fail_total(void)
{
	return fail_total();
}

/* The copy engine's staged copies, and those cut for want of a slot
 * (hp.h). */
static _Atomic uint64_t staged_copies, staged_bytes, cut_copies, cut_bytes;

void hp_stat_staged(uint64_t bytes)
{
	/* relaxed: statistics order nothing */
	atomic_fetch_add_explicit(&staged_copies, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&staged_bytes, bytes, memory_order_relaxed);
}

void hp_stat_staged_get(uint64_t *copies, uint64_t *bytes)
{
	*copies = atomic_load_explicit(&staged_copies, memory_order_relaxed);
	*bytes = atomic_load_explicit(&staged_bytes, memory_order_relaxed);
}

void hp_stat_cut(uint64_t bytes)
{
	/* relaxed: statistics order nothing */
	atomic_fetch_add_explicit(&cut_copies, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&cut_bytes, bytes, memory_order_relaxed);
}

void hp_stat_cut_get(uint64_t *copies, uint64_t *bytes)
{
	*copies = atomic_load_explicit(&cut_copies, memory_order_relaxed);
	*bytes = atomic_load_explicit(&cut_bytes, memory_order_relaxed);
}
