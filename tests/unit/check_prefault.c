/* Check suite for pre-faulting (prefault.c) on kernels with and without
 * MADV_POPULATE_WRITE (Linux 5.14): the next madvise is replaced by one
 * that plays the kernel's part.  Check runs each test in a child of its
 * own, so the replacement ends with the test. */
#include <check.h>
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "../../preload/hp.h"
#include "unit.h"

#define POPULATE_WRITE 23 /* MADV_POPULATE_WRITE, whatever the headers say */
#define MB ((size_t)1 << 20)

static hp_fn_madvise next_madvise;
static int old_kernel;
static _Atomic int probes;       /* empty ranges asked about */
static _Atomic size_t populated; /* bytes asked to be populated */

static int fake_madvise(void *p, size_t n, int advice)
{
	if (advice != POPULATE_WRITE)
		return next_madvise(p, n, advice);
	if (n == 0)
		atomic_fetch_add(&probes, 1);
	atomic_fetch_add(&populated, n);
	if (old_kernel) {
		errno = EINVAL; /* advice unknown to a kernel before 5.14 */
		return -1;
	}
	return next_madvise(p, n, advice);
}

static char *block;

static void setup(void)
{
	ck_assert_int_eq(atomic_load(&hp_state), HP_ST_READY);
	hp_in_child = 0; /* Check's fork: a process of its own */
	hp_opt[HP_OPT_PREFAULT_THREADS] = 4;
	next_madvise = HP_REAL(madvise);
	atomic_store(&hp_real.madvise, fake_madvise);
	block = HP_REAL(mmap)(NULL, 16 * MB, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(block, MAP_FAILED);
	for (size_t i = 0; i < 16 * MB; i += 4096 * 7)
		block[i] = (char)(i / 4096);
}

static int intact(void)
{
	for (size_t i = 0; i < 16 * MB; i += 4096 * 7)
		if (block[i] != (char)(i / 4096))
			return 0;
	return 1;
}

START_TEST(populates_every_part_when_the_kernel_knows_the_advice)
{
	HP_GUARDED(hp_prefault(block, 16 * MB));
	size_t bytes = atomic_load(&populated);
	ck_assert_uint_eq(bytes, 16 * MB);
	ck_assert(intact());
}
END_TEST

/* A 4.18 kernel (RHEL 8): one probe per block, no part asked for, and the
 * block as it was; the pin faults the pages in itself. */
START_TEST(asks_once_and_populates_nothing_on_an_older_kernel)
{
	old_kernel = 1;
	HP_GUARDED(hp_prefault(block, 16 * MB));
	size_t bytes = atomic_load(&populated);
	int asked = atomic_load(&probes);
	ck_assert_uint_eq(bytes, 0);
	ck_assert_int_eq(asked, 1);
	ck_assert(intact());
}
END_TEST

Suite *prefault_suite(void)
{
	Suite *s = suite_create("prefault");
	TCase *t = tcase_create("populate");
	tcase_add_checked_fixture(t, setup, NULL);
	tcase_add_test(t, populates_every_part_when_the_kernel_knows_the_advice);
	tcase_add_test(t, asks_once_and_populates_nothing_on_an_older_kernel);
	suite_add_tcase(s, t);
	return s;
}
