/* A copy whose host block another thread frees while the copy is between
 * hostpin's walk of the registry and its wait for the block's marks
 * (hostpin's pause point copy_walked), run under hostpin over the fake
 * driver (late mode).  The freed record is back in the registry's pool,
 * its flags word the pool's link to the record freed before it: hostpin
 * read that link as flags and, where its bits happened to say "being
 * registered" or "stepped aside from", waited for ever for them to go
 * (issue 39: the tester's seed 113, whose `bogus` copies run to the end of
 * the address space, through blocks other threads free).
 *   copy_freed walk_free
 * Blocks freed one by one, each while a copy from it is paused there: the
 * links are records next to each other, so some have those bits.  The copy
 * goes to device address 0, which the fake refuses whole, reading nothing
 * of the freed block.  A hang is the alarm's. */
#include <sys/mman.h>

#include "late_common.h"

#define NB 256
#define BLK (2 * MB)

CUresult cuMemcpyHtoD_v2(CUdeviceptr, const void *, size_t);

static void *copier(void *arg)
{
	/* refused (no device allocation at 0): the block is never read */
	CUresult r = cuMemcpyHtoD_v2(0, arg, 4096);
	return (void *)(uintptr_t)(r != 0);
}

static void pt_gone(const char *name, const char *ext)
{
	char p[512];
	snprintf(p, sizeof(p), "%s/%s.%s", getenv("HOSTPIN_TEST_PAUSE"), name,
		 ext);
	unlink(p);
}

/* Each block's copy (fn, on a thread of its own) paused after its walk
 * while the block is freed (then after_free(block), if any); the copy
 * must then return what fn expects (its result not NULL). */
static void walk_each(char **b, void *(*fn)(void *), void (*after_free)(char *))
{
	for (int i = 0; i < NB; i++) {
		pt_file("copy_walked", "arm");
		pthread_t t;
		CHECK(pthread_create(&t, NULL, fn, b[i]) == 0);
		wait_for(pt_paused, "copy_walked", "the copy walked the registry");
		free(b[i]); /* its record back in the pool */
		if (after_free)
			after_free(b[i]);
		pt_file("copy_walked", "go");
		void *ok = NULL;
		CHECK(pthread_join(t, &ok) == 0);
		CHECK(ok != NULL);
		pt_gone("copy_walked", "paused");
		pt_gone("copy_walked", "go");
	}
}

/* the freed block's pages mapped again at once, unknown to hostpin */
static void remap(char *at)
{
	void *m = (void *)syscall(SYS_mmap, at, (size_t)4096,
				  PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
				  -1, 0);
	CHECK(m == at && tp_flags(at) == 0);
}

static int mode_walk_free(void)
{
	alarm(120);
	CHECK(getenv("HOSTPIN_TEST_PAUSE") != NULL);
	static char *b[NB];
	for (int i = 0; i < NB; i++) {
		b[i] = malloc(BLK);
		CHECK(b[i] != NULL && tp_flags(b[i]) != 0);
	}
	walk_each(b, copier, NULL);
	return 0;
}

/* walk_remap: as walk_free, but the freed block's pages mapped again at
 * once, unknown to hostpin (a raw mmap): the copy, an async H2D to a
 * device allocation, then succeeds through pageable memory.  No block is
 * registered (HOSTPIN_PIN_AFTER large): no copy may count as one through
 * registered memory (a freed record's flags word, the pool's link, read
 * as a block's flags, said "registered" where its bits happened to:
 * counted so, an event tracked on the pool's record, or a wait). */
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr, const void *, size_t, CUstream);
static CUdeviceptr remap_dev;
static void *remap_copier(void *arg)
{
	CUresult r = cuMemcpyHtoDAsync_v2(remap_dev, arg, 4096, NULL);
	if (r == 0)
		r = cuStreamSynchronize(NULL);
	return (void *)(uintptr_t)(r == 0);
}

static int mode_walk_remap(void)
{
	alarm(120);
	CHECK(getenv("HOSTPIN_TEST_PAUSE") != NULL);
	remap_dev = dev(4096);
	static char *b[NB];
	for (int i = 0; i < NB; i++) {
		b[i] = malloc(BLK);
		CHECK(b[i] != NULL && tp_flags(b[i]) != 0);
		CHECK(!(tp_flags(b[i]) & HOSTPIN_REGISTERED));
	}
	walk_each(b, remap_copier, remap);
	struct hostpin_stats st;
	CHECK(tp_stats(&st) == 0);
	printf("copies seen %llu, through registered memory %llu\n",
	       (unsigned long long)st.copies_seen,
	       (unsigned long long)st.copies_registered);
	CHECK(st.copies_registered == 0);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct staged_mode modes[] = {
	    {"walk_free", mode_walk_free}, {"walk_remap", mode_walk_remap},
	};
	return staged_main("copy_freed", argc, argv, modes);
}
