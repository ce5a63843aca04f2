/* Check suite for the copies counted on blocks (policy/passing.c): one
 * count per stripe of records and epoch, that hostpin's step aside
 * (hp_hold_drain) and the registration thread (hp_pass_drain) wait for.
 * A wait ends once the copies counted BEFORE it began have ended, whatever
 * copies of another block of the same stripe began since (issue 39: a
 * step aside waited for those, and gave up after 10 s with 712, the
 * program's registration refused).  Records here are bare memory (the
 * counts and flags need nothing else); which thread waits is seen in
 * /proc, never after a time. */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../../preload/hostpin.h"
#include "../../preload/record.h"
#include "unit.h"

/* Two records of one stripe: 2 MiB apart (passing.c's hash of the
 * address), asserted. */
static char *area;
static hp_rec_t *ra, *rb;

static void setup(void)
{
	area = mmap(NULL, 4u << 20, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert(area != MAP_FAILED);
	ra = (hp_rec_t *)(void *)area;
	rb = (hp_rec_t *)(void *)(area + (2u << 20));
	ck_assert_uint_eq(hp_count_stripe(ra), hp_count_stripe(rb));
}

static void teardown(void)
{
	munmap(area, 4u << 20);
}

static _Atomic pid_t w_tid;
static _Atomic int w_ret = -1;

static void *aside(void *arg)
{
	(void)arg;
	w_tid = (pid_t)syscall(SYS_gettid);
	w_ret = hp_hold_drain(ra);
	return NULL;
}

static int never(void) { return 0; }
static void *registrar(void *arg)
{
	(void)arg;
	w_tid = (pid_t)syscall(SYS_gettid);
	w_ret = hp_pass_drain(ra, 0, never);
	return NULL;
}

/* The waiting thread sleeps between its looks (it yields first, and
 * flips the epoch before it sleeps); 60 s bounds a broken run. */
static void wait_sleeping(void)
{
	for (int i = 0; i < 60000; i++) {
		char path[64], buf[64] = "";
		pid_t t = atomic_load(&w_tid);
		snprintf(path, sizeof(path), "/proc/self/task/%d/syscall",
			 (int)t);
		FILE *f = t ? fopen(path, "r") : NULL;
		if (f) {
			if (!fgets(buf, sizeof(buf), f))
				buf[0] = 0;
			fclose(f);
		}
		long sc = atol(buf);
		if (t && (sc == SYS_nanosleep || sc == SYS_clock_nanosleep))
			return;
		ck_assert_int_eq(atomic_load(&w_ret), -1);
		struct timespec ts = {0, 1000000};
		nanosleep(&ts, NULL);
	}
	ck_abort_msg("the waiting thread never slept");
}

/* A copy of A in flight (its ticket returned), fn on a thread of its own
 * (*w) until it sleeps: waiting for that copy. */
static unsigned start_waiter(void *(*fn)(void *), pthread_t *w)
{
	unsigned ta = hp_hold_add(ra);
	atomic_store(&w_tid, 0);
	atomic_store(&w_ret, -1);
	ck_assert_int_eq(pthread_create(w, NULL, fn, NULL), 0);
	wait_sleeping();
	return ta;
}

/* A copy of A in flight; the step aside from A waits for it; then a copy
 * of B (another block of A's stripe) begins and stays: once A's copy
 * ends, the step aside ends (0), B's still in flight. */
START_TEST(aside_waits_only_for_copies_counted_before)
{
	pthread_t w;
	unsigned ta = start_waiter(aside, &w);
	ck_assert(hp_hold_waits(ra) & HP_F_ASIDE);
	unsigned tb = hp_hold_add(rb);
	ck_assert_uint_eq(hp_hold_waits(rb), 0);
	hp_hold_sub(ta);
	ck_assert_int_eq(pthread_join(w, NULL), 0);
	ck_assert_int_eq(w_ret, 0); /* EBUSY after 10 s: it waited for B's */
	hp_hold_drain_end(ra);
	ck_assert_uint_eq(hp_hold_waits(ra), 0);
	hp_hold_sub(tb);
}
END_TEST

/* The same for the registration thread's wait for copies passed
 * through; and a copy no longer passing (its plan: staged, by pieces)
 * holds no registration, but still a step aside. */
START_TEST(registration_waits_only_for_passing_copies_before)
{
	pthread_t w;
	unsigned ta = start_waiter(registrar, &w);
	unsigned tb = hp_hold_add(rb);
	hp_hold_sub(ta);
	ck_assert_int_eq(pthread_join(w, NULL), 0);
	ck_assert_int_eq(w_ret, 1);
	/* B's copy no longer passing: a registration in a program's call
	 * goes ahead (1), nothing waits */
	ck_assert_int_eq(hp_pass_begin(ra), 0); /* B's copy passes still */
	tb = hp_pass_sub(tb);
	ck_assert_int_eq(hp_pass_begin(ra), 1);
	ck_assert(hp_rflags(ra) & HP_F_PINNING);
	hp_pass_end(ra);
	ck_assert_int_eq(hp_pass_drain(ra, 0, never), 1);
	hp_hold_sub(tb);
	ck_assert_int_eq(hp_hold_drain(ra), 0);
	hp_hold_drain_end(ra);
}
END_TEST

Suite *counts_suite(void)
{
	Suite *s = suite_create("counts");
	TCase *t = tcase_create("copies counted");
	tcase_add_checked_fixture(t, setup, teardown);
	/* the old wait gave up after 10 s: a failure, not a timeout */
	tcase_set_timeout(t, 60);
	tcase_add_test(t, aside_waits_only_for_copies_counted_before);
	tcase_add_test(t, registration_waits_only_for_passing_copies_before);
	suite_add_tcase(s, t);
	return s;
}
