/* The copy itself, as a staged copy does it (issue 43 item 2): a large
 * source copied through a ring of 4 slots of SLOT bytes (the default ring:
 * 8 MiB), in parts of PART bytes (pool.c: 1 MiB), by THREADS threads each
 * copying its own share of every slot (no hand-off: the CPU's ceiling).
 * Variants, run interleaved so that a busy machine slows each alike:
 *   memcpy   glibc's memcpy per part (what pool.c does)
 *   nt       non-temporal stores per part: pool.c's own loop (ntcopy.h)
 *   whole    glibc's memcpy of each thread's whole share of a slot
 * Prints, per variant, GB/s median (min-max) over ROUNDS rounds, and each
 * variant's ratio to memcpy within a round, median (min-max).
 *   copy_bench [MIB [THREADS [ROUNDS [SLOT_MIB [PART_KIB]]]]] */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../preload/copy/ntcopy.h" /* the library's own loop */

#define VARIANTS 3
static const char *name[VARIANTS] = {"memcpy", "nt", "whole"};
static char *src, *ring;
static size_t n, slot, part;
static int threads, variant;
static pthread_barrier_t bar;

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void *worker(void *arg)
{
	int t = (int)(intptr_t)arg;
	/* page-aligned shares, the last thread the rest */
	size_t share = (slot / (size_t)threads) & ~(size_t)4095;
	size_t mine = t == threads - 1 ? slot - (size_t)t * share : share;
	for (;;) {
		pthread_barrier_wait(&bar);
		if (variant < 0)
			return NULL;
		for (size_t off = 0; off < n; off += slot) {
			char *d = ring + (off / slot % 4) * slot + t * share;
			const char *s = src + off + t * share;
			if (variant == 2) {
				memcpy(d, s, mine);
				continue;
			}
			for (size_t p = 0; p < mine; p += part) {
				size_t l = mine - p < part ? mine - p : part;
				if (variant == 0)
					memcpy(d + p, s + p, l);
				else
					hp_nt_copy(d + p, s + p, l);
			}
		}
		pthread_barrier_wait(&bar);
	}
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static void cell(double *v, int k)
{
	qsort(v, (size_t)k, sizeof(double), cmp);
	printf(" %.2f (%.2f-%.2f)", v[k / 2], v[0], v[k - 1]);
}

int main(int argc, char **argv)
{
	n = (size_t)(argc > 1 ? atol(argv[1]) : 256) << 20;
	threads = argc > 2 ? atoi(argv[2]) : 1;
	int rounds = argc > 3 ? atoi(argv[3]) : 7;
	slot = (size_t)(argc > 4 ? atol(argv[4]) : 8) << 20;
	part = (size_t)(argc > 5 ? atol(argv[5]) : 1024) << 10;
	if (threads < 1 || rounds < 1 || rounds > 64 || n % slot)
		return 2;
	if (posix_memalign((void **)&src, 4096, n) ||
	    posix_memalign((void **)&ring, 4096, 4 * slot))
		return 1;
	memset(src, 1, n);
	memset(ring, 0, 4 * slot);
	pthread_barrier_init(&bar, NULL, (unsigned)threads + 1);
	pthread_t th[64];
	for (int t = 0; t < threads; t++)
		pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t);
	double gbs[VARIANTS][64], ratio[VARIANTS][64];
	for (int r = 0; r < rounds; r++) {
		for (int k = 0; k < VARIANTS; k++) {
			variant = (k + r) % VARIANTS; /* rotate the order */
			double t0 = now();
			pthread_barrier_wait(&bar);
			pthread_barrier_wait(&bar);
			gbs[variant][r] = (double)n / (now() - t0) / 1e9;
		}
		for (int k = 0; k < VARIANTS; k++)
			ratio[k][r] = gbs[k][r] / gbs[0][r];
	}
	variant = -1;
	pthread_barrier_wait(&bar);
	printf("copy_bench: %zu MiB through 4 x %zu MiB slots, parts of %zu "
	       "KiB, %d thread(s), %d rounds\n", n >> 20, slot >> 20,
	       part >> 10, threads, rounds);
	for (int k = 0; k < VARIANTS; k++) {
		printf("%-7s GB/s", name[k]);
		cell(gbs[k], rounds);
		printf("  x memcpy");
		cell(ratio[k], rounds);
		printf("\n");
	}
	return 0;
}
