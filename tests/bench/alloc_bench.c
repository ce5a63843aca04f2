/* Allocation paths, run with and without LD_PRELOAD=libhostpin.so by
 * scripts/bench.
 *   alloc_bench small THREADS PAIRS   malloc/free pairs, mixed sizes below
 *                                     the threshold; prints ns per pair
 *   alloc_bench churn ROUNDS [MB]     allocate, touch every page, free:
 *                                     4, 16, 64, 256 MiB (or only MB);
 *                                     prints ms per round after the first,
 *                                     minor faults per round after the
 *                                     first, peak RSS in MiB
 *   alloc_bench pin MB ROUNDS         allocate a fresh MB block (pinned by
 *                                     hostpin) and free it; prints s/GiB
 *   alloc_bench pair MB PAIRS         malloc(MB) and free, untouched;
 *                                     prints microseconds per pair
 * With BENCH_CUDART=path, the program first loads that CUDA runtime and
 * calls cudaSetDevice(0), as a GPU job would. */
#include <dlfcn.h>
#include <pthread.h>
#include <sys/resource.h>
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

static long minflt(void)
{
	struct rusage u;
	getrusage(RUSAGE_SELF, &u);
	return u.ru_minflt;
}

static long maxrss_mb(void)
{
	struct rusage u;
	getrusage(RUSAGE_SELF, &u);
	return u.ru_maxrss >> 10;
}

static void touch_round(const size_t *mbs, int n)
{
	for (int k = 0; k < n; k++) {
		size_t len = mbs[k] << 20;
		char *volatile p = malloc(len); /* volatile: not elided */
		for (size_t i = 0; i < len; i += 4096)
			p[i] = (char)i;
		free(p);
	}
}

int main(int argc, char **argv)
{
	const char *rt = getenv("BENCH_CUDART");
	if (rt && *rt) {
		void *h = dlopen(rt, RTLD_NOW | RTLD_GLOBAL);
		int (*set)(int) = h ? (int (*)(int))dlsym(h, "cudaSetDevice") : NULL;
		if (!set || set(0) != 0) {
			fprintf(stderr, "cannot use %s\n", rt);
			return 1;
		}
	}
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
		size_t all[4] = {4, 16, 64, 256}, one[1];
		const size_t *mbs = all;
		int n = 4;
		if (argc > 3) {
			one[0] = (size_t)atol(argv[3]);
			mbs = one, n = 1;
		}
		touch_round(mbs, n); /* the first round pays for setup */
		long f0 = minflt();
		double t0 = now();
		for (int r = 0; r < rounds; r++)
			touch_round(mbs, n);
		printf("%.3f %ld %ld\n", (now() - t0) * 1e3 / rounds,
		       (minflt() - f0) / rounds, maxrss_mb());
		return 0;
	}
	if (argc >= 4 && strcmp(argv[1], "pin") == 0) {
		size_t len = (size_t)atol(argv[2]) << 20;
		int rounds = atoi(argv[3]);
		double t = 0;
		for (int r = 0; r < rounds; r++) {
			double t0 = now();
			char *volatile p = malloc(len);
			t += now() - t0;
			p[0] = 1;
			free(p);
		}
		printf("%.4f\n", t / rounds / ((double)len / (1 << 30)));
		return 0;
	}
	if (argc >= 4 && strcmp(argv[1], "pair") == 0) {
		size_t len = (size_t)atol(argv[2]) << 20;
		long n = atol(argv[3]);
		double t0 = now();
		for (long i = 0; i < n; i++) {
			char *volatile p = malloc(len);
			free(p);
		}
		printf("%.2f\n", (now() - t0) * 1e6 / (double)n);
		return 0;
	}
	fprintf(stderr, "usage: alloc_bench small THREADS PAIRS | churn ROUNDS "
			"[MB] | pin MB ROUNDS | pair MB PAIRS\n");
	return 2;
}
