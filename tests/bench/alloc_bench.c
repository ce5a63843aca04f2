/* Allocation paths, run with and without LD_PRELOAD=libhostpin.so by
 * scripts/bench.
 *   alloc_bench small THREADS PAIRS   malloc/free pairs, mixed sizes below
 *                                     the threshold; prints ns per pair
 *   alloc_bench churn ROUNDS          allocate, touch every page, free:
 *                                     4, 16, 64, 256 MiB; prints ms/round */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static long pairs;

static void *small(void *arg)
{
	(void)arg;
	static const size_t sizes[8] = {16, 32, 48, 64, 128, 256, 1024, 4000};
	void *keep[64] = {0};
	for (long i = 0; i < pairs; i++) {
		/* a short-lived pair, plus a slowly rotating live set */
		void *p = malloc(sizes[i & 7]);
		*(volatile char *)p = 1;
		free(p);
		if ((i & 15) == 0) {
			int k = (int)((i >> 4) & 63);
			free(keep[k]);
			keep[k] = malloc(sizes[(i >> 4) & 7] * 4);
		}
	}
	for (int k = 0; k < 64; k++)
		free(keep[k]);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc >= 4 && strcmp(argv[1], "small") == 0) {
		int th = atoi(argv[2]);
		pairs = atol(argv[3]);
		pthread_t t[8];
		double t0 = now();
		for (int i = 0; i < th; i++)
			pthread_create(&t[i], NULL, small, NULL);
		for (int i = 0; i < th; i++)
			pthread_join(t[i], NULL);
		printf("%.2f\n", (now() - t0) * 1e9 / (double)pairs);
		return 0;
	}
	if (argc >= 3 && strcmp(argv[1], "churn") == 0) {
		int rounds = atoi(argv[2]);
		double t0 = now();
		for (int r = 0; r < rounds; r++)
			for (size_t mb = 4; mb <= 256; mb *= 4) {
				size_t n = mb << 20;
				char *p = malloc(n);
				for (size_t i = 0; i < n; i += 4096)
					p[i] = (char)i;
				free(p);
			}
		printf("%.2f\n", (now() - t0) * 1e3 / rounds);
		return 0;
	}
	fprintf(stderr, "usage: alloc_bench small THREADS PAIRS | churn ROUNDS\n");
	return 2;
}
