/* Check suite for the copying threads' spread over the CPUs (spread.c,
 * issue 43): where a thread copying into or out of the ring moves when
 * another copying thread is noted on its CPU, that it moves within its own
 * affinity mask and leaves the mask as it was.  The CPU a thread runs on
 * is the test's (hp_spread_cpu), so that no verdict waits on the kernel's
 * placement; the affinity calls are real. */
#include <check.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>

#include "../../preload/copy/stage.h"
#include "unit.h"

extern int (*hp_spread_cpu)(void);
extern void (*hp_spread_between)(int to);

static unsigned short noted[CPU_SETSIZE];

static cpu_set_t set2(int a, int b)
{
	cpu_set_t m;
	CPU_ZERO(&m);
	CPU_SET(a, &m);
	if (b >= 0)
		CPU_SET(b, &m);
	return m;
}

START_TEST(a_thread_alone_on_its_cpu_stays)
{
	cpu_set_t m = set2(0, 1);
	memset(noted, 0, sizeof(noted));
	noted[0] = 1; /* itself */
	ck_assert_int_eq(hp_spread_pick(0, &m, noted), -1);
}
END_TEST

START_TEST(a_second_copying_thread_moves_to_a_free_cpu)
{
	cpu_set_t m = set2(0, 2);
	memset(noted, 0, sizeof(noted));
	noted[0] = 2, noted[1] = 0; /* CPU 1 free, not in the mask */
	ck_assert_int_eq(hp_spread_pick(0, &m, noted), 2);
	CPU_SET(1, &m);
	ck_assert_int_eq(hp_spread_pick(0, &m, noted), 1);
}
END_TEST

START_TEST(no_free_cpu_or_a_one_cpu_mask_and_it_stays)
{
	cpu_set_t m = set2(0, 1);
	memset(noted, 0, sizeof(noted));
	noted[0] = 2, noted[1] = 1;
	ck_assert_int_eq(hp_spread_pick(0, &m, noted), -1);
	m = set2(0, -1); /* pinned by the program: never moved */
	noted[1] = 0;
	ck_assert_int_eq(hp_spread_pick(0, &m, noted), -1);
}
END_TEST

/* the test's CPU: a, until a move, then b (where the kernel put it) */
static int cpu_a, cpu_b;
static unsigned long moves0;
static int fake_cpu(void)
{
	return hp_spread_moves() == moves0 ? cpu_a : cpu_b;
}

/* cpu_a and cpu_b: the first two CPUs this thread may use (cpu_b -1: one) */
static void first_two_cpus(void)
{
	cpu_set_t all;
	ck_assert_int_eq(pthread_getaffinity_np(pthread_self(), sizeof(all),
						&all), 0);
	cpu_a = cpu_b = -1;
	for (int k = 0; k < CPU_SETSIZE; k++)
		if (CPU_ISSET(k, &all)) {
			if (cpu_a < 0)
				cpu_a = k;
			else if (cpu_b < 0)
				cpu_b = k;
		}
}

static void *other(void *arg)
{
	(void)arg;
	hp_spread(); /* noted on cpu_a, its note kept */
	return NULL;
}

START_TEST(a_collision_moves_the_thread_and_keeps_its_mask)
{
	cpu_set_t m, after;
	first_two_cpus();
	/* one CPU here: a one-CPU mask, so no move (below) */
	m = set2(cpu_a, cpu_b);
	ck_assert_int_eq(pthread_setaffinity_np(pthread_self(), sizeof(m), &m),
			 0);
	moves0 = hp_spread_moves();
	hp_spread_cpu = fake_cpu;
	pthread_t t;
	pthread_create(&t, NULL, other, NULL);
	pthread_join(t, NULL);
	ck_assert_uint_eq(hp_spread_noted(cpu_a), 1);
	hp_spread(); /* this thread on cpu_a too */
	ck_assert_int_eq(pthread_getaffinity_np(pthread_self(), sizeof(after),
						&after), 0);
	ck_assert(CPU_EQUAL(&after, &m)); /* the mask as it was */
	if (cpu_b < 0) {
		ck_assert_uint_eq(hp_spread_moves(), moves0);
		ck_assert_uint_eq(hp_spread_noted(cpu_a), 2);
		return;
	}
	ck_assert_uint_eq(hp_spread_moves(), moves0 + 1);
	ck_assert_uint_eq(hp_spread_noted(cpu_a), 1); /* the other's */
	ck_assert_uint_eq(hp_spread_noted(cpu_b), 1); /* this one's */
	hp_spread(); /* alone on cpu_b now: stays */
	ck_assert_uint_eq(hp_spread_moves(), moves0 + 1);
	hp_spread_leave();
	ck_assert_uint_eq(hp_spread_noted(cpu_b), 0);
}
END_TEST

/* Two threads that meet on a CPU look at once and pick the same free CPU:
 * the one whose claim comes second stays (a 64 MiB first copy ran at 10.8
 * GB/s against 19 when the caller and its copy thread both moved to the
 * one free vCPU and met there again).  The other claim is made here
 * between this thread's pick and its move (hp_spread_between). */
static void *claimer(void *arg)
{
	(void)arg;
	hp_spread(); /* noted on the CPU the test gives it: cpu_a */
	return NULL;
}

static void claim_first(int to)
{
	hp_spread_between = NULL;
	int a = cpu_a;
	cpu_a = to; /* the claimer's CPU: the one this thread picked */
	pthread_t t;
	pthread_create(&t, NULL, claimer, NULL);
	pthread_join(t, NULL);
	cpu_a = a;
}

START_TEST(a_free_cpu_claimed_since_the_look_and_the_thread_stays)
{
	cpu_set_t m, after;
	first_two_cpus();
	if (cpu_b < 0)
		return; /* one CPU: nowhere to move (the test above) */
	m = set2(cpu_a, cpu_b);
	ck_assert_int_eq(pthread_setaffinity_np(pthread_self(), sizeof(m), &m),
			 0);
	moves0 = hp_spread_moves();
	hp_spread_cpu = fake_cpu;
	unsigned na = hp_spread_noted(cpu_a), nb = hp_spread_noted(cpu_b);
	ck_assert_uint_eq(nb, 0); /* free: the pick's */
	pthread_t t;
	pthread_create(&t, NULL, other, NULL); /* a copying thread on cpu_a */
	pthread_join(t, NULL);
	hp_spread_between = claim_first;
	hp_spread(); /* this one on cpu_a too: picks cpu_b, claimed first */
	hp_spread_between = NULL;
	ck_assert_uint_eq(hp_spread_moves(), moves0); /* not moved */
	ck_assert_uint_eq(hp_spread_noted(cpu_b), 1); /* the claimer's */
	ck_assert_uint_eq(hp_spread_noted(cpu_a), na + 2);
	ck_assert_int_eq(pthread_getaffinity_np(pthread_self(), sizeof(after),
						&after), 0);
	ck_assert(CPU_EQUAL(&after, &m));
	hp_spread_leave();
	ck_assert_uint_eq(hp_spread_noted(cpu_a), na + 1);
}
END_TEST

/* pool.c's give-way: a calling thread that copied ALONE_PARTS (2) parts in
 * a row while the helpers took none gives its CPU way, at most once every
 * GIVE_WAY_NS (2 ms); never without helpers; a helper's part starts the
 * count again. */
START_TEST(a_caller_alone_gives_way_once_in_a_while)
{
	struct hp_give_way g = {0};
	uint64_t ms = 1000000;
	ck_assert_int_eq(hp_pool_give_way(&g, 0, 0, 10 * ms), 0);
	ck_assert_int_eq(hp_pool_give_way(&g, 0, 0, 10 * ms), 0);
	ck_assert_int_eq(hp_pool_give_way(&g, 0, 0, 10 * ms), 0); /* none */
	g = (struct hp_give_way){0};
	ck_assert_int_eq(hp_pool_give_way(&g, 1, 5, 10 * ms), 0); /* looked */
	ck_assert_int_eq(hp_pool_give_way(&g, 1, 5, 10 * ms), 0); /* 1 */
	ck_assert_int_eq(hp_pool_give_way(&g, 1, 5, 10 * ms), 1); /* 2 */
	ck_assert_int_eq(hp_pool_give_way(&g, 1, 5, 11 * ms), 0);
	ck_assert_int_eq(hp_pool_give_way(&g, 1, 5, 11 * ms), 0); /* < 2 ms */
	ck_assert_int_eq(hp_pool_give_way(&g, 1, 6, 13 * ms), 0); /* theirs */
	ck_assert_int_eq(hp_pool_give_way(&g, 1, 6, 13 * ms), 0);
	ck_assert_int_eq(hp_pool_give_way(&g, 1, 6, 13 * ms), 1);
}
END_TEST

Suite *spread_suite(void)
{
	Suite *s = suite_create("spread");
	TCase *t = tcase_create("cpus");
	tcase_add_test(t, a_thread_alone_on_its_cpu_stays);
	tcase_add_test(t, a_second_copying_thread_moves_to_a_free_cpu);
	tcase_add_test(t, no_free_cpu_or_a_one_cpu_mask_and_it_stays);
	tcase_add_test(t, a_collision_moves_the_thread_and_keeps_its_mask);
	tcase_add_test(t, a_free_cpu_claimed_since_the_look_and_the_thread_stays);
	tcase_add_test(t, a_caller_alone_gives_way_once_in_a_while);
	suite_add_tcase(s, t);
	return s;
}
