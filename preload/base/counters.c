/* The live counters and the clock every layer counts with.  hp_own is this
 * process's, in its own memory, always; hp_ctrp points at their copy in
 * the node's ledger once that gives the process a slot (node/ledger.c
 * repoints it), so counting never waits for the ledger and no other
 * process can change what this one counts.
 * Depends on nothing above the base: the ledger, the backends and the
 * policy all count here. */
#include <time.h>

#include "../hp.h"

struct hp_counters hp_own;
struct hp_counters *_Atomic hp_ctrp = &hp_own;

uint64_t hp_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void hp_stat_add_peak(_Atomic uint64_t *now, _Atomic uint64_t *peak,
		      uint64_t n)
{
	/* relaxed: statistics only; nothing is ordered by them. */
	uint64_t v = atomic_fetch_add_explicit(now, n, memory_order_relaxed) + n;
	uint64_t p = atomic_load_explicit(peak, memory_order_relaxed);
	while (v > p && !atomic_compare_exchange_weak_explicit(
			    peak, &p, v, memory_order_relaxed,
			    memory_order_relaxed))
		;
}
