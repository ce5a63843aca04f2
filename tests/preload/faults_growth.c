/* realloc growth under faults (tests/preload/cases/181-faults_growth.sh).
 * Modes:
 *   align     64 blocks of 3 MiB and more, each with a mapping of the
 *             program's just after it (no growth in place), grown by
 *             realloc: every grown block is 2 MiB aligned, its contents
 *             kept, tracked, and freed; then 16 blocks of a little more
 *             than 1 MiB grown to 3 MiB: 2 MiB aligned too.
 *   growfail  (libfaults_growfail.so preloaded after hostpin, armed for
 *             any growing mremap) a realloc growth whose mremap fails while
 *             hostpin's record pool is exhausted and RLIMIT_AS is at the
 *             address space in use: NULL with ENOMEM, the old block tracked
 *             and intact, and free() of it works.
 *   movefail  the same, armed for the first mremap that moves into a place
 *             given (MREMAP_FIXED), the block unable to grow in place (a
 *             page of the program's just after it).
 *   unpinfail (fake CUDA driver, FAKE_CUDA_FAIL=cuMemHostUnregister:1) a
 *             realloc growth of a registered block whose unregistration
 *             the driver refuses, with no memory for a copy (RLIMIT_AS at
 *             the address space in use): NULL with ENOMEM, and the old
 *             block stays the program's: intact, and its free() works (the
 *             driver's second unregistration succeeds). */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>

#define FAULTS_NAME "faults_growth"
#include "faults_common.h"

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

/* A page of the program's at p (a block's end): the block cannot grow in
 * place.  Where something is mapped there already, that does as well. */
static void *wall(char *p)
{
	void *w = mmap(p, 4096, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (w != MAP_FAILED && w != p) { /* a kernel without NOREPLACE */
		munmap(w, 4096);
		w = MAP_FAILED;
	}
	return w == MAP_FAILED ? NULL : w;
}

/* ---- align: grown blocks stay 2 MiB aligned ---- */
static void align(void)
{
	enum { N = 64 };
	char *b[N];
	void *w[N];
	for (int i = 0; i < N; i++) {
		size_t n = 3 * MIB + 4096 * (size_t)i;
		b[i] = malloc(n);
		CHECK(b[i] && ((uintptr_t)b[i] & (2 * MIB - 1)) == 0);
		CHECK(tracked(b[i], HOSTPIN_KIND_MALLOC));
		memset(b[i], i + 1, 3 * MIB);
		w[i] = wall(b[i] + n); /* it moves */
	}
	int bad = 0;
	for (int i = 0; i < N; i++) {
		char *q = realloc(b[i], 5 * MIB + 4096 * (size_t)i);
		CHECK(q);
		if ((uintptr_t)q & (2 * MIB - 1))
			bad++;
		CHECK(part_is(q, 3 * MIB, i + 1));
		CHECK(tracked(q, HOSTPIN_KIND_MALLOC));
		memset(q + 3 * MIB, 7, 2 * MIB);
		b[i] = q;
	}
	if (bad) {
		fprintf(stderr, "faults_growth: %d of %d grown blocks are not "
			"2 MiB aligned\n", bad, N);
		exit(1);
	}
	for (int i = 0; i < N; i++) {
		free(b[i]);
		if (w[i])
			munmap(w[i], 4096);
	}
	/* Blocks of less than 2 MiB (page aligned, the last of them
	 * unaligned to 2 MiB) grown past it: aligned as a new block of their
	 * size, whether the pages after them were free or not. */
	for (int i = 0; i < 16; i++) {
		b[i] = malloc(MIB + 4096 * (size_t)(i + 1));
		CHECK(b[i] && tracked(b[i], HOSTPIN_KIND_MALLOC));
		memset(b[i], i + 1, MIB);
	}
	for (int i = 0; i < 16; i++) {
		char *q = realloc(b[i], 3 * MIB);
		CHECK(q && tracked(q, HOSTPIN_KIND_MALLOC));
		if ((uintptr_t)q & (2 * MIB - 1))
			bad++;
		CHECK(part_is(q, MIB, i + 1));
		b[i] = q;
	}
	if (bad) {
		fprintf(stderr, "faults_growth: %d of 16 blocks grown past "
			"2 MiB are not 2 MiB aligned\n", bad);
		exit(1);
	}
	for (int i = 0; i < 16; i++)
		free(b[i]);
}

/* ---- growfail, movefail ---- */
static void growfail(int move)
{
	void (*arm)(int) = (void (*)(int))dlsym(RTLD_DEFAULT, "growfail_arm");
	int (*disarm)(void) = (int (*)(void))dlsym(RTLD_DEFAULT,
						 "growfail_disarm");
	CHECK(arm && disarm);
	char *p = malloc(4 * MIB);
	CHECK(p && tracked(p, HOSTPIN_KIND_MALLOC));
	memset(p, 0x3c, 4 * MIB);
	void *w = move ? wall(p + 4 * MIB) : NULL;
	arm(move);
	errno = 0;
	char *q = realloc(p, 64 * MIB);
	int e = errno;
	int exhausted = disarm(); /* restores RLIMIT_AS; 1 if the pool ran out */
	if (q != NULL) {
		/* the injection did not hold: nothing was tested */
		fprintf(stderr, "faults_growth: realloc grew with the %s "
			"(%p, injection %s)\n", move ? "move failing" :
			"address space full", (void *)q,
			exhausted ? "made" : "never made");
		exit(1);
	}
	CHECK(exhausted == 1);
	CHECK(e == ENOMEM);
	CHECK(tracked(p, HOSTPIN_KIND_MALLOC));
	CHECK(part_is(p, 4 * MIB, 0x3c));
	free(p); /* hostpin's block: a free that glibc would abort */
	if (w)
		munmap(w, 4096);
	/* and hostpin's blocks keep working */
	char *m = malloc(8 * MIB);
	CHECK(m && tracked(m, HOSTPIN_KIND_MALLOC));
	memset(m, 1, 8 * MIB);
	m = realloc(m, 16 * MIB);
	CHECK(m && tracked(m, HOSTPIN_KIND_MALLOC) && part_is(m, 8 * MIB, 1));
	free(m);
}

/* ---- unpinfail ---- */
static void unpinfail(void)
{
	cuda_up();
	char *p = malloc(4 * MIB);
	CHECK(p && tracked(p, HOSTPIN_KIND_MALLOC | HOSTPIN_REGISTERED));
	memset(p, 0x5c, 4 * MIB);
	struct rlimit saved, lim;
	CHECK(getrlimit(RLIMIT_AS, &saved) == 0);
	lim = saved;
	lim.rlim_cur = vm_bytes();
	CHECK(setrlimit(RLIMIT_AS, &lim) == 0);
	errno = 0;
	char *q = realloc(p, 64 * MIB);
	int e = errno;
	CHECK(setrlimit(RLIMIT_AS, &saved) == 0);
	if (q != NULL) {
		fprintf(stderr, "faults_growth: realloc grew with no address "
			"space left (%p)\n", (void *)q);
		exit(1);
	}
	CHECK(e == ENOMEM);
	CHECK(part_is(p, 4 * MIB, 0x5c));
	CHECK(tracked(p, HOSTPIN_KIND_MALLOC));
	free(p); /* unfixed: "double free of hostpin block" */
}

int main(int argc, char **argv)
{
	CHECK(argc == 2);
	const char *m = argv[1];
	if (!strcmp(m, "align"))
		align();
	else if (!strcmp(m, "growfail"))
		growfail(0);
	else if (!strcmp(m, "movefail"))
		growfail(1);
	else if (!strcmp(m, "unpinfail"))
		unpinfail();
	else
		return 2;
	printf("faults_growth %s: ok\n", m);
	return 0;
}
