/* Check suite for the copy threads' decisions (speed.c, issue 43): how
 * many threads stage, at what rate, and whether staging beats the driver's
 * pageable path, fed the numbers speed.c measures (MB/s), so that every
 * modelled regime — a link slower or faster than one core's memcpy, 1 to 8
 * threads, a CPU busy at the start or turning busy while the process runs
 * — passes through rather than stages below pageable.  No clock. */
#include <check.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "../../preload/copy/ntcopy.h"
#include "../../preload/copy/stage.h"
#include "unit.h"

#define MC 9000u /* one core's memcpy, MB/s */
/* the pageable path's share of the link (speed.c's, the H200's ratios) */
static const unsigned pct[2] = {13, 23};

static uint64_t min64(uint64_t a, uint64_t b) { return a < b ? a : b; }

/* pageable's rate of direction d on link l, and staging's least rate that
 * pays (a quarter more: speed.c's margin) */
static uint64_t pageable(unsigned l, int d) { return (uint64_t)l * pct[d] / 100; }

START_TEST(threads_follow_the_link_bounded_by_the_cpus)
{
	unsigned need;
	/* a link five times memcpy: five threads where the CPUs allow */
	ck_assert_uint_eq(hp_speed_threads(5 * MC, MC, 16, 0, &need), 5);
	ck_assert_uint_eq(need, 5);
	ck_assert_uint_eq(hp_speed_threads(5 * MC, MC, 2, 0, &need), 2);
	/* a link slower than memcpy: one */
	ck_assert_uint_eq(hp_speed_threads(MC / 2, MC, 16, 0, &need), 1);
	/* asked: whatever the CPUs */
	ck_assert_uint_eq(hp_speed_threads(5 * MC, MC, 2, 8, &need), 8);
	/* memcpy not measured: the cap */
	ck_assert_uint_eq(hp_speed_threads(5 * MC, 0, 3, 0, &need), 3);
}
END_TEST

START_TEST(rate_counts_the_cores_the_threads_get)
{
	/* idle: one core each, at most the CPUs */
	ck_assert_uint_eq(hp_speed_rate(2, 2, 2, 0, MC), 2 * MC);
	ck_assert_uint_eq(hp_speed_rate(8, 2, 2, 0, MC), 2 * MC);
	/* two spinning processes on two CPUs: half of them */
	ck_assert_uint_eq(hp_speed_rate(2, 2, 2, 2, MC), MC);
	/* one thread among seven runnable on two CPUs: 2/8 of a core each */
	ck_assert_uint_eq(hp_speed_rate(1, 2, 2, 7, MC), MC / 4);
	/* a thousand runnable: slow, but known (0 would mean "measure") */
	ck_assert(!hp_speed_pays(hp_speed_rate(1, 2, 2, 1000, MC), MC, 0));
}
END_TEST

/* Every regime: the threads' rate estimated at the start, staged at the
 * link or that rate, whichever is lower; staging is chosen only where that
 * beats the pageable path, both ways. */
START_TEST(every_regime_stages_only_above_pageable)
{
	const unsigned links[] = {MC / 2, 5 * MC};
	const unsigned cpus[] = {1, 2, 16};
	for (unsigned li = 0; li < 2; li++)
		for (unsigned ci = 0; ci < 3; ci++)
			for (unsigned n = 1; n <= 8; n++)
				for (unsigned busy = 0; busy <= 64; busy += 4) {
					unsigned l = links[li];
					uint64_t r = hp_speed_rate(n, cpus[ci],
								   cpus[ci],
								   busy, MC);
					for (int d = 0; d < 2; d++) {
						uint64_t p = pageable(l, d);
						/* staged: a quarter above */
						if (hp_speed_pays(r, l, d))
							ck_assert_uint_ge(
								min64(l, r) * 4,
								p * 5);
						/* passed: not above */
						else
							ck_assert_uint_le(
								min64(l, r) * 4,
								p * 5 + 4);
					}
				}
	/* nothing measured yet: one round measures */
	ck_assert(hp_speed_pays(0, 5 * MC, 0));
}
END_TEST

/* A CPU that turns busy while the process runs: the estimate at the start
 * (idle, 16 CPUs) staged, then rounds at a third of pageable's rate: the
 * second in a row closes the gate (the rate falls to it), for every
 * number of threads and both links; after the pause, the node idle again
 * (estimated from its load: speed.c) and a round at speed, it stages;
 * reopened, its first round is a probe: one slow round closes it. */
START_TEST(a_cpu_turning_busy_passes_through_after_two_rounds)
{
	const unsigned links[] = {MC / 2, 5 * MC};
	for (unsigned li = 0; li < 2; li++)
		for (unsigned n = 1; n <= 8; n++)
			for (int d = 0; d < 2; d++) {
				unsigned l = links[li], sl = 0;
				uint64_t a = hp_speed_rate(n, 16, 16, 0, MC);
				uint64_t slow = pageable(l, d) / 3;
				if (!hp_speed_pays(a, l, d))
					continue; /* never staged: above */
				a = hp_speed_next(a, slow, l, d, &sl);
				ck_assert(hp_speed_pays(a, l, d));
				a = hp_speed_next(a, slow, l, d, &sl);
				ck_assert_msg(!hp_speed_pays(a, l, d),
					      "link %u, %u threads, %s: two "
					      "rounds at %llu MB/s (pageable "
					      "%llu) still stage", l, n,
					      d ? "D2H" : "H2D",
					      (unsigned long long)slow,
					      (unsigned long long)pageable(l, d));
				a = hp_speed_rate(n, 16, 16, 0, MC);
				ck_assert(hp_speed_pays(a, l, d));
				sl = 1; /* reopened (hp_pool_worth) */
				uint64_t b = hp_speed_next(a, slow, l, d, &sl);
				ck_assert(!hp_speed_pays(b, l, d));
				sl = 1;
				a = hp_speed_next(a, n * MC, l, d, &sl);
				ck_assert(hp_speed_pays(a, l, d));
				ck_assert_uint_eq(sl, 0);
			}
}
END_TEST

/* One round just under the gate's threshold, between rounds at speed (an
 * H100 run: staged 64 MiB copies at the pageable path's rate for the
 * second the gate then stayed closed): the gate stays open, for every
 * link and direction, however many times it happens, as long as no two
 * come in a row; a second in a row closes it. */
START_TEST(a_lone_slow_round_keeps_the_gate_open)
{
	const unsigned links[] = {MC / 2, 5 * MC, 55000};
	for (unsigned li = 0; li < 3; li++)
		for (int d = 0; d < 2; d++) {
			unsigned l = links[li], sl = 0;
			uint64_t p = pageable(l, d), a = 4 * MC;
			uint64_t under = p * 5 / 4 - 1; /* just short of paying */
			ck_assert(!hp_speed_pays(under, l, d));
			for (int k = 0; k < 20; k++) {
				a = hp_speed_next(a, k % 2 ? under : 4 * MC, l,
						  d, &sl);
				ck_assert_msg(hp_speed_pays(a, l, d),
					      "link %u %s: round %d closed "
					      "the gate", l, d ? "D2H" : "H2D",
					      k);
			}
			/* even far below, and from a rate just paying */
			sl = 0;
			a = hp_speed_next(p * 5 / 4 + 2, 1, l, d, &sl);
			ck_assert(hp_speed_pays(a, l, d));
			a = hp_speed_next(a, 1, l, d, &sl);
			ck_assert(!hp_speed_pays(a, l, d));
		}
}
END_TEST

/* The same through the gate itself (speed.c's state, fed rounds as
 * stage.c feeds them): rounds of 64 MiB H2D at 40 GB/s on a 55 GB/s link,
 * then one at 8 GB/s (pageable's 7.15 and a quarter: 8.94): the next copy
 * is still staged; a second such round in a row passes it through (issue
 * 43 item 4). */
START_TEST(one_slow_round_does_not_close_the_gate)
{
	hp_opt[HP_OPT_STAGE_LINK] = 55;
	hp_opt[HP_OPT_STAGE_THREADS] = 2;
	(void)hp_pool_threads(); /* the pick, made here */
	const size_t b = (size_t)64 << 20;
	const uint64_t at40 = (uint64_t)b * 1000 / 40000,
		       at8 = (uint64_t)b * 1000 / 8000;
	for (int k = 0; k < 12; k++)
		hp_pool_seen(1, b, at40);
	ck_assert(hp_pool_worth(1));
	hp_pool_seen(1, b, at8);
	ck_assert_msg(hp_pool_worth(1), "one round at 8 GB/s closed the gate");
	hp_pool_seen(1, b, at40);
	hp_pool_seen(1, b, at8);
	ck_assert(hp_pool_worth(1));
	hp_pool_seen(1, b, at8);
	ck_assert_msg(!hp_pool_worth(1), "two rounds in a row at 8 GB/s: "
		      "still staged");
	ck_assert(!hp_pool_worth(1)); /* paused */
}
END_TEST

/* The first copy's gate does not pick on its path (issue 43): where the
 * copy threads cannot beat the pageable path (a 100000 GB/s link), the
 * first copy that asks is answered "not known yet" (it asks for its ring
 * and passes through: none is made yet) while the pick runs in the
 * background; once made (hp_pool_can, what the growth thread waits for
 * before a ring's first segment), neither direction can be staged (no
 * ring is made) and the gate passes copies through.  Before: the first
 * copy measured memcpy and started the copy threads on its own path. */
START_TEST(the_first_copy_does_not_pick)
{
	hp_opt[HP_OPT_STAGE_LINK] = 100000;
	hp_opt[HP_OPT_STAGE_THREADS] = 1;
	ck_assert_msg(hp_pool_worth(1), "the first copy's gate picked on "
		      "its path");
	ck_assert(!hp_pool_can(1));
	ck_assert(!hp_pool_can(0));
	ck_assert(!hp_pool_worth(1));
	ck_assert(!hp_pool_worth(0));
}
END_TEST

/* The memcpy measured is a copy thread's work: parts of pool.c's part
 * (1 MiB) into one slot's window (8 MiB, HOSTPIN_STAGE_BUFFER's default
 * slot), from a source resident before the clock (warm), by the routine
 * given (speed.c: the ring's non-temporal copy).  Before: two 16 MiB
 * memcpys with glibc's cached stores. */
static struct {
	size_t calls, bytes, bad;
	uintptr_t dlo, dhi, slo, shi;
} mc_seen;
static void mc_copy(char *d, const char *s, size_t n)
{
	if (mc_seen.calls++ == 0) {
		mc_seen.dlo = mc_seen.dhi = (uintptr_t)d;
		mc_seen.slo = mc_seen.shi = (uintptr_t)s;
		if (!hp_speed_resident(s, (size_t)32 << 20) ||
		    !hp_speed_resident(d, (size_t)8 << 20))
			mc_seen.bad++;
	}
	mc_seen.bad += n != (size_t)1 << 20;
	uintptr_t de = (uintptr_t)d + n, se = (uintptr_t)s + n;
	mc_seen.dlo = (uintptr_t)d < mc_seen.dlo ? (uintptr_t)d : mc_seen.dlo;
	mc_seen.dhi = de > mc_seen.dhi ? de : mc_seen.dhi;
	mc_seen.slo = (uintptr_t)s < mc_seen.slo ? (uintptr_t)s : mc_seen.slo;
	mc_seen.shi = se > mc_seen.shi ? se : mc_seen.shi;
	mc_seen.bytes += n;
	memcpy(d, s, n);
}

START_TEST(memcpy_is_measured_as_a_copy_thread_fills_a_slot)
{
	ck_assert_uint_gt(hp_speed_memcpy(mc_copy), 0);
	ck_assert_uint_eq(mc_seen.bad, 0);
	ck_assert_uint_eq(mc_seen.dhi - mc_seen.dlo, (size_t)8 << 20);
	ck_assert_uint_eq(mc_seen.shi - mc_seen.slo, (size_t)32 << 20);
	ck_assert_uint_eq(mc_seen.bytes % ((size_t)32 << 20), 0);
	ck_assert_uint_ge(mc_seen.bytes / ((size_t)32 << 20), 2);
}
END_TEST

/* The busy threads from /proc/loadavg: the runnable now or the last
 * minute's load, the larger, this thread not counted. */
START_TEST(busy_reads_runnable_and_the_minute)
{
	/* two spinners just started: runnable 3 (them and this one) */
	ck_assert_uint_eq(hp_speed_busy("0.21 1.16 1.97 3/179 31491\n"), 2);
	/* other jobs over the last minute, none runnable this instant */
	ck_assert_uint_eq(hp_speed_busy("9.74 7.99 4.96 1/188 25537\n"), 9);
	ck_assert_uint_eq(hp_speed_busy("2.50 1.00 1.00 1/10 1\n"), 2);
	ck_assert_uint_eq(hp_speed_busy("0.00 0.00 0.00 1/90 7\n"), 0);
	ck_assert_uint_eq(hp_speed_busy(""), 0);
	/* what it means on two CPUs, a link five times memcpy: one copy
	 * thread beside two spinners gets two thirds of a core, which a
	 * quarter above pageable asks more than: passed through */
	unsigned b = hp_speed_busy("0.21 1.16 1.97 3/179 31491\n");
	ck_assert(!hp_speed_pays(hp_speed_rate(1, 2, 2, b, MC), 5 * MC, 0));
}
END_TEST

START_TEST(a_faster_round_counts_half)
{
	unsigned sl = 0; /* a slow link: every round pays */
	ck_assert_uint_eq(hp_speed_next(0, 5000, 1000, 0, &sl), 5000);
	ck_assert_uint_eq(hp_speed_next(4000, 8000, 1000, 0, &sl), 6000);
	ck_assert_uint_eq(hp_speed_next(8000, 4000, 1000, 0, &sl), 4000);
	ck_assert_uint_eq(sl, 0);
}
END_TEST

/* Two copies staged at once share the copy threads and the link: each
 * round's rate counts at twice what it moved alone, as two pageable copies
 * share the link (before: each copy saw half the CPU's rate and passed
 * through, below what both staged together move). */
START_TEST(rounds_at_once_count_together)
{
	/* 64 MiB in 20 ms: 3355 MB/s alone, twice that for two at once */
	uint64_t one = hp_speed_round((size_t)64 << 20, 20000000, 1);
	ck_assert_uint_eq(one, 3355);
	ck_assert_uint_eq(hp_speed_round((size_t)64 << 20, 20000000, 2),
			  2 * one);
	ck_assert_uint_eq(hp_speed_round((size_t)64 << 20, 20000000, 0), one);
	/* a link five times memcpy: 64 MiB in 15 ms does not pay for one
	 * copy (pageable's share of the link and a quarter more: 7312 MB/s),
	 * two such copies at once do */
	ck_assert(!hp_speed_pays(hp_speed_round((size_t)64 << 20, 15000000, 1),
				 5 * MC, 0));
	ck_assert(hp_speed_pays(hp_speed_round((size_t)64 << 20, 15000000, 2),
				5 * MC, 0));
}
END_TEST

/* pool.c's copy into a slot (ntcopy.h): every length and alignment moves
 * exactly its bytes, none past the end of the destination, none read
 * past the source's (its last byte at the end of a page before a page it
 * may not read), with the 16-byte stores and, where the CPU has them, the
 * 64-byte ones: lengths up to past four lines (their loops' turns and the
 * lines after them), and lengths about one and two 16 KiB blocks (the
 * four 4 KiB streams, then the lines after them).  Before: a length whose
 * last 64 bytes held 16 or more past the 64-byte blocks stored up to 48
 * bytes too many (a 2D copy's packed rows overwrote the next row's
 * start). */
START_TEST(non_temporal_copy_stays_inside)
{
	static const size_t big[] = {16320, 16383, 16384, 16385, 16448,
				     16384 + 64 * 5 + 7, 32768, 32768 + 100,
				     50000};
	size_t nb = sizeof(big) / sizeof(big[0]), most = 50000;
	size_t map = (most + 4095) / 4096 * 4096 + 4096;
	char *m = mmap(NULL, map + 4096, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert(m != MAP_FAILED);
	ck_assert_int_eq(mprotect(m + map, 4096, PROT_NONE), 0);
	size_t dn = most + 256;
	char *d = aligned_alloc(64, dn);
	ck_assert(d != NULL);
	int wide = 0;
#if defined(__x86_64__) && !defined(HP_NO_NT)
	wide = hp_nt_wide();
#endif
	for (int w = 0; w <= wide; w++)
		for (size_t c = 0; c <= 1100 + nb; c++)
			for (size_t a = 0; a < 64; a++) {
				size_t len = c <= 1100 ? c : big[c - 1101];
				const char *src = m + map - len;
				for (size_t i = 0; i < len; i++)
					((char *)src)[i] = (char)(i * 7 + 1);
				/* as far as a stray store could reach */
				size_t e = len + 256;
				memset(d, 0x5a, e);
				hp_nt_stream_as(d + 64 + a, src, len, w);
				hp_nt_fence();
				size_t bad = memcmp(d + 64 + a, src, len) != 0;
				for (size_t i = 0; i < e; i++)
					if ((i < 64 + a || i >= 64 + a + len) &&
					    d[i] != 0x5a)
						bad = i + 1;
				ck_assert_msg(!bad, "wide %d len %zu align %zu: "
					      "%zu", w, len, a, bad);
			}
	free(d);
	munmap(m, map + 4096);
}
END_TEST

/* What a staged D2H round's destination was (stage.c): resident, or fresh
 * (its pages faulted in by the drains, as by the driver's pageable path:
 * such a round is not weighed against pageable's warm rate).  Its first,
 * middle and last pages are looked at; one not in memory is fresh. */
START_TEST(a_fresh_destination_is_not_resident)
{
	size_t n = (size_t)64 << 12;
	char *m = mmap(NULL, n, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert(m != MAP_FAILED);
	ck_assert(!hp_speed_resident(m, n)); /* fresh */
	m[0] = 1;
	ck_assert(!hp_speed_resident(m, n)); /* its first page only */
	memset(m, 1, n);
	ck_assert(hp_speed_resident(m, n)); /* touched */
	ck_assert(hp_speed_resident(m + 5, n - 9)); /* not page-aligned */
	ck_assert(madvise(m + n / 2, 4096, MADV_DONTNEED) == 0);
	ck_assert(!hp_speed_resident(m, n)); /* its middle page gone */
	ck_assert(hp_speed_resident(m, 4096)); /* one page */
	ck_assert(hp_speed_resident(m, 0));
	munmap(m, n);
	ck_assert(!hp_speed_resident(m, n)); /* not mapped */
}
END_TEST

Suite *speed_suite(void)
{
	Suite *s = suite_create("speed");
	TCase *t = tcase_create("decide");
	tcase_add_test(t, threads_follow_the_link_bounded_by_the_cpus);
	tcase_add_test(t, rate_counts_the_cores_the_threads_get);
	tcase_add_test(t, every_regime_stages_only_above_pageable);
	tcase_add_test(t, a_cpu_turning_busy_passes_through_after_two_rounds);
	tcase_add_test(t, a_lone_slow_round_keeps_the_gate_open);
	tcase_add_test(t, one_slow_round_does_not_close_the_gate);
	tcase_add_test(t, the_first_copy_does_not_pick);
	tcase_add_test(t, memcpy_is_measured_as_a_copy_thread_fills_a_slot);
	tcase_add_test(t, busy_reads_runnable_and_the_minute);
	tcase_add_test(t, a_faster_round_counts_half);
	tcase_add_test(t, non_temporal_copy_stays_inside);
	tcase_add_test(t, rounds_at_once_count_together);
	tcase_add_test(t, a_fresh_destination_is_not_resident);
	suite_add_tcase(s, t);
	return s;
}
