/* Check suite for the staging ring's hand-out of slots (ring.c, issue 43):
 * how many slots a copy takes, alone or beside another stream's copy, when
 * it lets one go, and when the ring grows.  Rings built here, one segment
 * of HP_RING_SLOTS, no DMA pending (no driver call is made). */
#include <check.h>
#include <pthread.h>
#include <string.h>

#include "../../preload/copy/ring.h"
#include "unit.h"

#define A ((hp_cudaStream_t)0xa)
#define B ((hp_cudaStream_t)0xb)

/* a ready ring of one segment, claimed by claims copies, slots taken as
 * the mask says (bit i: slot i) */
static void ring(struct hp_ring *R, int claims, unsigned mask)
{
	memset(R, 0, sizeof(*R));
	pthread_mutex_init(&R->mu, NULL);
	R->state = 1, R->nseg = 1, R->claims = claims;
	for (int i = 0; i < HP_RING_SLOTS; i++)
		R->taken[i] = (mask >> i) & 1;
}

START_TEST(a_copy_alone_leaves_the_last_slot)
{
	struct hp_ring R;
	ring(&R, 1, 0);
	for (int held = 0; held < HP_RING_SLOTS - 1; held++)
		ck_assert_int_eq(hp_ring_take(&R, A, held), held);
	ck_assert_int_eq(hp_ring_take(&R, A, HP_RING_SLOTS - 1), -1);
	ck_assert_int_eq(R.grow, 0);
}
END_TEST

START_TEST(two_copies_take_two_slots_each)
{
	/* A holds two; B, beside it, takes the other two (it used to get one:
	 * the last was left to a third stream, and B waited for its own DMA
	 * at every chunk) */
	struct hp_ring R;
	ring(&R, 2, 0x3);
	ck_assert_int_eq(hp_ring_take(&R, B, 0), 2);
	ck_assert_int_eq(hp_ring_take(&R, B, 1), 3);
	ck_assert_int_eq(hp_ring_take(&R, B, 2), -1);
	/* and no more than two, with slots left */
	ring(&R, 2, 0);
	ck_assert_int_eq(hp_ring_take(&R, A, 0), 0);
	ck_assert_int_eq(hp_ring_take(&R, A, 1), 1);
	ck_assert_int_eq(hp_ring_take(&R, A, 2), -1);
}
END_TEST

START_TEST(a_copy_over_its_share_lets_one_go)
{
	struct hp_ring R;
	ring(&R, 1, 0x7);
	ck_assert(!hp_ring_over(&R, 3)); /* alone: three of four */
	R.claims = 2; /* another copy claimed the ring */
	ck_assert(hp_ring_over(&R, 3));
	ck_assert(!hp_ring_over(&R, 2));
	R.claims = 4; /* two each at least */
	ck_assert(!hp_ring_over(&R, 2));
}
END_TEST

START_TEST(the_last_slot_taken_grows_nothing_without_a_spare_cpu)
{
	/* the copy that takes the last slot no copy holds asks for no growth
	 * where no CPU is to spare beside the copy threads (here: not picked)
	 * (one beside two copies took the CPU they copy with) */
	ck_assert(!hp_pool_spare());
	struct hp_ring R;
	ring(&R, 2, 0x7);
	ck_assert_int_eq(hp_ring_take(&R, B, 0), 3);
	ck_assert_int_eq(R.grow, 0);
}
END_TEST

START_TEST(a_copy_that_finds_none_grows_the_ring)
{
	struct hp_ring R;
	ring(&R, 3, 0xf);
	ck_assert_int_eq(hp_ring_take(&R, B, 0), -1);
	ck_assert_int_eq(R.grow, 1); /* asked of the growth thread */
}
END_TEST

Suite *ring_suite(void)
{
	Suite *s = suite_create("ring");
	TCase *t = tcase_create("slots");
	tcase_add_test(t, a_copy_alone_leaves_the_last_slot);
	tcase_add_test(t, two_copies_take_two_slots_each);
	tcase_add_test(t, a_copy_over_its_share_lets_one_go);
	tcase_add_test(t, the_last_slot_taken_grows_nothing_without_a_spare_cpu);
	tcase_add_test(t, a_copy_that_finds_none_grows_the_ring);
	suite_add_tcase(s, t);
	return s;
}
