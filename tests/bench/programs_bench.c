/* Allocation patterns of real programs, timed; run with and without hostpin
 * by scripts/bench-programs, which reports the ratios.
 *   programs_bench grow MIB     realloc growth to MIB MiB in 64 KiB steps,
 *                               every new byte written
 *   programs_bench purge N      N 64 KiB MADV_DONTNEED purges of a touched
 *                               256 MiB mapping, each purged page touched
 *                               again (an allocator reusing it)
 *   programs_bench unmap N      N 64 KiB munmaps (holes) in a touched
 *                               256 MiB mapping
 * Prints the seconds the pattern took (set-up excluded).  HP_FAKE_CUDA:
 * first bring up the fake driver's context (tests/preload/cuda_up.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "../preload/cuda_up.h"

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#define MB ((size_t)1 << 20)
#define STEP ((size_t)64 << 10)

static double grow(size_t mib)
{
	double t0 = now();
	char *p = NULL;
	for (size_t have = 0; have < mib * MB; have += STEP) {
		char *q = realloc(p, have + STEP);
		if (q == NULL)
			exit(1);
		p = q;
		memset(p + have, (int)(have / STEP), STEP);
	}
	double t = now() - t0;
	free(p);
	return t;
}

/* Offsets of the n 64 KiB pieces: spread over the mapping, distinct. */
static size_t piece(int i, int n, size_t len)
{
	return (size_t)i * (len / STEP / (size_t)n) * STEP + (size_t)(i % 7) * 4096;
}

static double purge(int n, int unmap)
{
	size_t len = 256 * MB;
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		exit(1);
	memset(p, 1, len);
	double t0 = now();
	for (int i = 0; i < n; i++) {
		char *a = p + piece(i, n, len);
		if (unmap) {
			if (munmap(a, STEP))
				exit(2);
		} else {
			if (madvise(a, STEP, MADV_DONTNEED))
				exit(2);
			memset(a, 2, STEP);
		}
	}
	double t = now() - t0;
	munmap(p, len);
	return t;
}

int main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	tp_cuda_maybe();
	double t;
	if (!strcmp(argv[1], "grow"))
		t = grow((size_t)atol(argv[2]));
	else if (!strcmp(argv[1], "purge"))
		t = purge(atoi(argv[2]), 0);
	else if (!strcmp(argv[1], "unmap"))
		t = purge(atoi(argv[2]), 1);
	else
		return 2;
	printf("%.6f\n", t);
	return 0;
}
