/* Check suite for the pin policy (pin.c, heap.c, cache.c, maps.c) against a
 * fake backend that records its calls and checks the order the invariants
 * ask for.  hostpin is compiled into this runner with its libc names
 * renamed (Makefile), so the tests call the policy directly. */
#include <check.h>
#include <pthread.h>
#include <sched.h>
#include <errno.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../../preload/hostpin.h"
#include "../../preload/record.h"
#include "unit.h"

static struct {
	int ready, fail_unpin, pins, unpins, quiesces;
	int fail_pin_at; /* the pin call (1-based) that fails; 0: none */
	int gate; /* pin and unpin pass the capture gate, as the CUDA backend */
	int capture_at; /* this pin call counts a global capture (its begin) */
	/* the third pin stores in *third_seen whether *ended was set */
	_Atomic int *third_seen, *ended;
	int unpin_while_unmapped; /* invariant 1 broken */
	int quiesce_after_unpin;  /* a copy could still use an unpinned block */
	int last_quiesce_pins;    /* unpins seen when quiesce last ran */
} fk;

static int mapped(void *p)
{
	unsigned char v;
	return mincore(p, HP_PAGE_SIZE, &v) == 0;
}

static int fk_probe(void) { return 1; }
static int fk_ready(void) { return fk.ready; }
static int fk_pin(void *b, size_t l, const char **why)
{
	(void)b, (void)l;
	if (fk.gate && !hp_capture_enter())
		return EAGAIN; /* as cuda_pin: pending until the capture ends */
	if (++fk.pins == fk.capture_at)
		hp_cuda_gate_close(); /* another thread begins a capture */
	if (fk.pins == 3 && fk.third_seen)
		*fk.third_seen = *fk.ended;
	int e = 0;
	if (fk.pins == fk.fail_pin_at) {
		*why = "fake refuses";
		e = EIO;
	}
	if (fk.gate)
		hp_capture_leave();
	return e;
}
static int fk_unpin(void *b, size_t l, const char **why)
{
	(void)l;
	if (!mapped(b))
		fk.unpin_while_unmapped++;
	if (fk.last_quiesce_pins != fk.unpins)
		fk.quiesce_after_unpin++;
	if (fk.gate && !hp_capture_enter()) {
		*why = "a capture";
		return EAGAIN;
	}
	if (fk.gate)
		hp_capture_leave();
	if (fk.fail_unpin) {
		*why = "fake refuses";
		return EIO;
	}
	fk.unpins++;
	return 0;
}
static void fk_fork(void) {}
static void fk_quiesce(struct hp_rec *r)
{
	(void)r;
	fk.quiesces++;
	fk.last_quiesce_pins = fk.unpins;
}
static const hp_backend_t fake = {
	.name = "fake", .probe = fk_probe, .ready = fk_ready, .pin = fk_pin,
	.unpin = fk_unpin, .fork_child = fk_fork, .quiesce = fk_quiesce,
	.pin_flags = HOSTPIN_REGISTERED,
};

#define MB ((size_t)1 << 20)

static void setup(void)
{
	memset(&fk, 0, sizeof(fk));
	fk.ready = 1;
	ck_assert_int_eq(atomic_load(&hp_state), HP_ST_READY);
	hp_backend = &fake;
	/* Check forks each test: hostpin's fork handler marked this child;
	 * for the fake backend it is a process of its own. */
	hp_in_child = 0;
	hp_opt[HP_OPT_CACHE] = 0;
	hp_opt[HP_OPT_PREFAULT_THREADS] = 1;
	hp_opt[HP_OPT_MAX_PINNED] = (uint64_t)1 << 40;
}

static void *alloc(size_t n)
{
	void *p;
	HP_GUARDED(p = hp_block_alloc(n, 0, 0));
	ck_assert_ptr_nonnull(p);
	return p;
}

static void release(void *p)
{
	int mine;
	HP_GUARDED(mine = hp_block_free(p));
	ck_assert_int_eq(mine, 1);
}

static unsigned flags(void *p)
{
	struct hostpin_range r;
	return hostpin_query(p, &r) ? r.flags : 0;
}

START_TEST(pinned_at_once_and_unpinned_before_unmap)
{
	char *p = alloc(8 * MB);
	ck_assert(flags(p) & HOSTPIN_REGISTERED);
	ck_assert_int_eq(fk.pins, 1);
	release(p);
	ck_assert_int_eq(fk.unpins, 1);
	ck_assert_int_eq(fk.unpin_while_unmapped, 0);
	ck_assert(!mapped(p)); /* and then unmapped */
	ck_assert_int_eq(fk.quiesce_after_unpin, 0);
}
END_TEST

START_TEST(pending_until_ready_then_adopted)
{
	fk.ready = 0;
	char *p = alloc(8 * MB);
	ck_assert(flags(p) & HOSTPIN_PENDING);
	ck_assert_int_eq(fk.pins, 0);
	ck_assert_uint_eq(atomic_load(&hp_ctr.pending_blocks), 1);
	fk.ready = 1;
	HP_GUARDED(hp_adopt_pending());
	ck_assert(flags(p) & HOSTPIN_REGISTERED);
	ck_assert(!(flags(p) & HOSTPIN_PENDING));
	ck_assert_uint_eq(atomic_load(&hp_ctr.pending_blocks), 0);
	ck_assert_uint_eq(atomic_load(&hp_ctr.adopted_blocks), 1);
	release(p);
}
END_TEST

/* Defect: a range the program registered itself went PENDING after a
 * madvise, and every later allocation walked the registry to adopt it. */
START_TEST(foreign_range_is_never_pending)
{
	char *p = alloc(8 * MB);
	HP_GUARDED(hp_foreign_begin(p + MB, MB));
	ck_assert(!(flags(p) & HOSTPIN_REGISTERED));
	ck_assert_int_eq(fk.unpins, 1);
	int r;
	HP_GUARDED(r = hp_madvise_do(p, 4 * MB, MADV_DONTNEED));
	ck_assert_int_eq(r, 0);
	ck_assert(!(flags(p) & HOSTPIN_PENDING));
	ck_assert_uint_eq(atomic_load(&hp_ctr.pending_blocks), 0);
	ck_assert(!(flags(p) & HOSTPIN_REGISTERED));
	HP_GUARDED(hp_foreign_end(p + MB));
	ck_assert(flags(p) & HOSTPIN_REGISTERED); /* ours again */
	release(p);
}
END_TEST

START_TEST(refused_unpin_leaks_and_never_reuses)
{
	char *p = alloc(8 * MB);
	fk.fail_unpin = 1;
	release(p);
	ck_assert(mapped(p)); /* still registered: never unmapped */
	ck_assert_uint_eq(atomic_load(&hp_ctr.leaked_blocks), 1);
	ck_assert_int_eq(hostpin_query(p, NULL), 0);
	fk.fail_unpin = 0;
	char *q = alloc(8 * MB);
	ck_assert_ptr_ne(p, q);
	release(q);
}
END_TEST

START_TEST(cap_holds)
{
	hp_opt[HP_OPT_MAX_PINNED] = 16 * MB;
	char *a = alloc(8 * MB), *b = alloc(8 * MB), *c = alloc(8 * MB);
	ck_assert(flags(a) & HOSTPIN_REGISTERED);
	ck_assert(flags(b) & HOSTPIN_REGISTERED);
	ck_assert(!(flags(c) & HOSTPIN_REGISTERED));
	ck_assert_uint_eq(atomic_load(&hp_ctr.over_cap), 1);
	ck_assert_uint_le(atomic_load(&hp_ctr.pinned_bytes_now), 16 * MB);
	release(a), release(b), release(c);
	ck_assert_uint_eq(atomic_load(&hp_ctr.pinned_bytes_now), 0);
}
END_TEST

START_TEST(cached_block_quiesced_then_reused_pinned)
{
	hp_opt[HP_OPT_CACHE] = 64 * MB;
	char *p = alloc(8 * MB);
	release(p);
	ck_assert_int_eq(fk.quiesces, 1); /* before the block can be reused */
	ck_assert_int_eq(fk.unpins, 0);   /* kept registered */
	char *q = alloc(8 * MB);
	ck_assert_ptr_eq(p, q);
	ck_assert_int_eq(fk.pins, 1);
	ck_assert(flags(q) & HOSTPIN_REGISTERED);
	release(q);
}
END_TEST

START_TEST(munmap_of_part_keeps_the_rest_pinned)
{
	char *m = HP_REAL(mmap)(NULL, 16 * MB, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	HP_GUARDED(hp_mmap_track(m, 16 * MB, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS, NULL));
	ck_assert(flags(m) & HOSTPIN_REGISTERED);
	HP_GUARDED(hp_range_release((uintptr_t)m + 4 * MB, 4 * MB));
	ck_assert_int_eq(fk.unpin_while_unmapped, 0);
	ck_assert(flags(m) & HOSTPIN_REGISTERED);
	ck_assert(flags(m + 12 * MB) & HOSTPIN_REGISTERED);
	ck_assert_int_eq(hostpin_query(m + 5 * MB, NULL), 0);
	HP_REAL(munmap)(m + 4 * MB, 4 * MB);
	HP_GUARDED(hp_range_release((uintptr_t)m, 16 * MB));
	ck_assert_int_eq(hostpin_query(m, NULL), 0);
	ck_assert_int_eq(fk.unpin_while_unmapped, 0);
}
END_TEST

/* Registration piece by piece (pinpart.c, for the background registration
 * thread): each piece reported once made; on a failure the prefix is
 * withdrawn (done(base)) before any piece is unregistered, and exactly the
 * pieces made are. */
static uintptr_t pe_base, pe_up[16];
static int pe_n, pe_unpins_at_withdraw;
static int pe_done(uintptr_t upto)
{
	if (pe_n < 16) {
		pe_up[pe_n] = upto;
		/* seen by pc_end_capture's thread */
		__atomic_store_n(&pe_n, pe_n + 1, __ATOMIC_SEQ_CST);
	}
	if (upto == pe_base)
		pe_unpins_at_withdraw = fk.unpins;
	return 0;
}

/* Under HOSTPIN_REGISTER_CHUNK=4M: 24 MiB mapped at *m, and its first
 * 4 MiB boundary, returned (16 MiB of the mapping follow it). */
static uintptr_t pe_area(char **m)
{
	hp_opt[HP_OPT_REGISTER_CHUNK] = 4 * MB;
	*m = HP_REAL(mmap)(NULL, 24 * MB, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert(*m != MAP_FAILED);
	return ((uintptr_t)*m + 4 * MB - 1) & ~(uintptr_t)(4 * MB - 1);
}

START_TEST(pieces_reported_then_withdrawn_before_undo)
{
	char *m;
	uintptr_t base = pe_area(&m);
	const char *why = "";
	pe_base = base, pe_n = 0, pe_unpins_at_withdraw = -1;
	fk.fail_pin_at = 3; /* the third piece */
	ck_assert_int_eq(hp_cells_pin_each(base, 16 * MB, &why, pe_done, 0), EIO);
	ck_assert_int_eq(pe_n, 3);
	ck_assert(pe_up[0] == base + 4 * MB && pe_up[1] == base + 8 * MB);
	ck_assert(pe_up[2] == base);
	ck_assert_int_eq(pe_unpins_at_withdraw, 0); /* withdrawn first */
	ck_assert_int_eq(fk.unpins, 2); /* then the two pieces undone */
	fk.fail_pin_at = 0, fk.pins = 0, pe_n = 0;
	ck_assert_int_eq(hp_cells_pin_each(base, 16 * MB, &why, pe_done, 1), 0);
	ck_assert_int_eq(fk.pins, 4);
	ck_assert_int_eq(pe_n, 4);
	for (int i = 0; i < 4; i++)
		ck_assert(pe_up[i] == base + (size_t)(i + 1) * 4 * MB);
	ck_assert_int_eq(hp_cells_unpin(base, 16 * MB, &why), 0);
	HP_REAL(munmap)(m, 24 * MB);
	/* whole registrations (REGISTER_CHUNK=0): pieces of HP_REG_PIECE_MAX
	 * from the base (untouched memory: nothing is faulted) */
	hp_opt[HP_OPT_REGISTER_CHUNK] = 0;
	size_t big = HP_REG_PIECE_MAX + 512 * MB;
	m = HP_REAL(mmap)(NULL, big, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	ck_assert(m != MAP_FAILED);
	fk.pins = 0, pe_n = 0, pe_base = (uintptr_t)m;
	ck_assert_int_eq(hp_cells_pin_each((uintptr_t)m, big, &why, pe_done, 0), 0);
	ck_assert_int_eq(fk.pins, 2);
	ck_assert_int_eq(pe_n, 2);
	ck_assert(pe_up[0] == (uintptr_t)m + HP_REG_PIECE_MAX);
	ck_assert(pe_up[1] == (uintptr_t)m + big);
	HP_REAL(munmap)(m, big);
}
END_TEST

/* A capture that begins (in global mode) while a block is registered piece
 * by piece waits for the piece in flight only (the capture gate is held
 * per piece): the pieces made stay, the next is made only once the capture
 * ended (hp_register_piece_hold sleeps until then).  A helper thread ends
 * the capture once the second piece is reported; the third pin sees
 * whether it had ended. */
static _Atomic int pc_ended, pc_third_after_end = -1;
static void *pc_end_capture(void *arg)
{
	(void)arg;
	while (__atomic_load_n(&pe_n, __ATOMIC_SEQ_CST) < 2)
		sched_yield();
	hp_cuda_gate_open(); /* the capture ends */
	pc_ended = 1;
	hp_register_wake();
	return NULL;
}
START_TEST(pieces_wait_for_a_capture_begun_between_them)
{
	char *m;
	uintptr_t base = pe_area(&m);
	const char *why = "";
	pe_base = base, pe_n = 0;
	fk.gate = 1, fk.capture_at = 2; /* counted during the second piece */
	fk.third_seen = &pc_third_after_end, fk.ended = &pc_ended;
	pthread_t t;
	ck_assert_int_eq(pthread_create(&t, NULL, pc_end_capture, NULL), 0);
	ck_assert_int_eq(hp_cells_pin_each(base, 16 * MB, &why, pe_done, 0), 0);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	ck_assert_int_eq(fk.pins, 4);
	ck_assert_int_eq(pe_n, 4);
	ck_assert_int_eq(pc_third_after_end, 1); /* made after the capture */
	ck_assert(!hp_capture_busy());
	ck_assert_int_eq(hp_cells_unpin(base, 16 * MB, &why), 0);
	ck_assert_int_eq(fk.unpins, 4);
	fk.third_seen = NULL, fk.ended = NULL;
	HP_REAL(munmap)(m, 24 * MB);
	hp_opt[HP_OPT_REGISTER_CHUNK] = 0;
}
END_TEST

/* A brief holder (the registration thread taking a queued block, an
 * adoption) that claims a block between a free's look at it and its claim
 * for release, and lets go again: the release waits it out and claims the
 * block (it was reported as a "racing release", a double free, and
 * aborted: final-crash-96518902). */
static hp_rec_t *bh_rec;
/* The holder lets go once the releasing thread has been seen waiting for
 * it (a sched_yield of its claim loop's BUSY branch), never after a time:
 * a release that reached its claim only after the holder had let go would
 * test nothing.  sched_yield is this runner's own, counting the yields of
 * the thread bh_main names while bh_counting is set; any other call goes
 * to the kernel as it is. */
static pthread_t bh_main;
static _Atomic int bh_counting, bh_yields;
int sched_yield(void)
{
	if (atomic_load(&bh_counting) && pthread_equal(pthread_self(), bh_main))
		atomic_fetch_add(&bh_yields, 1);
	return (int)syscall(SYS_sched_yield);
}
static void *bh_let_go(void *arg)
{
	(void)arg;
	/* 60 s: the bound on a broken run, not a timing; a claim that
	 * returned without waiting ends the wait too (the test then fails on
	 * its answer, not on a timeout) */
	for (int i = 0; i < 60000 && atomic_load(&bh_yields) == 0 &&
			atomic_load(&bh_counting);
	     i++) {
		struct timespec ts = {0, 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	hp_busy_end(bh_rec, HP_REC_LIVE);
	return NULL;
}

START_TEST(release_waits_out_a_brief_holder)
{
	char *p = alloc(8 * MB);
	hp_snap_t s, s2;
	hp_rec_t *r = hp_registry_lookup(&hp_reg, (uintptr_t)p, &s);
	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(hp_word_state(s.word), HP_REC_LIVE);
	ck_assert(hp_registry_lookup(&hp_reg, (uintptr_t)p, &s2) == r);
	ck_assert_int_eq(hp_busy_begin(r, &s2), HP_REC_LIVE);
	bh_rec = r;
	bh_main = pthread_self();
	atomic_store(&bh_yields, 0);
	atomic_store(&bh_counting, 1);
	pthread_t t;
	ck_assert_int_eq(pthread_create(&t, NULL, bh_let_go, NULL), 0);
	int won = hp_claim_release(r, &s); /* s: the LIVE snapshot */
	atomic_store(&bh_counting, 0);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	int yields = atomic_load(&bh_yields);
	ck_assert_int_gt(yields, 0); /* it waited for the holder */
	ck_assert_int_eq(won, 1);
	hp_busy_end(r, HP_REC_LIVE); /* the program's again: free it */
	release(p);
}
END_TEST

Suite *policy_suite(void)
{
	Suite *s = suite_create("policy");
	TCase *t = tcase_create("fake backend");
	tcase_add_checked_fixture(t, setup, NULL);
	tcase_add_test(t, pinned_at_once_and_unpinned_before_unmap);
	tcase_add_test(t, pending_until_ready_then_adopted);
	tcase_add_test(t, foreign_range_is_never_pending);
	tcase_add_test(t, refused_unpin_leaks_and_never_reuses);
	tcase_add_test(t, cap_holds);
	tcase_add_test(t, cached_block_quiesced_then_reused_pinned);
	tcase_add_test(t, munmap_of_part_keeps_the_rest_pinned);
	tcase_add_test(t, pieces_reported_then_withdrawn_before_undo);
	tcase_add_test(t, pieces_wait_for_a_capture_begun_between_them);
	tcase_add_test(t, release_waits_out_a_brief_holder);
	suite_add_tcase(s, t);
	return s;
}
