/* The cost of hostpin's copy hook: cudaMemcpyAsync from a small host
 * buffer hostpin does not own, against a stub runtime whose copy returns at
 * once (built from this file with -DSTUB_RUNTIME as libcudart.so.12), so
 * that the hook's own work (forwarding, the registry lookup, the policy)
 * is what is timed.  Run with and without LD_PRELOAD=libhostpin.so.
 *   copyhook_bench N   prints ns per call */
#ifdef STUB_RUNTIME
#include <stddef.h>
int cudaSetDevice(int d) { return d; }
int cudaMalloc(void **p, size_t n) { static char dev[4096]; *p = n <= sizeof(dev) ? dev : NULL; return *p == NULL; }
int cudaMemcpyAsync(void *d, const void *s, size_t n, int k, void *st)
{ (void)d, (void)s, (void)n, (void)k, (void)st; return 0; }
#else
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int cudaSetDevice(int);
int cudaMalloc(void **, size_t);
int cudaMemcpyAsync(void *, const void *, size_t, int, void *);

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000000;
	static char host[256];
	void *dev = NULL;
	if (cudaSetDevice(0) || cudaMalloc(&dev, sizeof(host)))
		return 1;
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (long i = 0; i < n; i++)
		if (cudaMemcpyAsync(dev, host, sizeof(host), 1, NULL))
			return 1;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("%.1f\n", ((double)(t1.tv_sec - t0.tv_sec) * 1e9 +
			  (double)(t1.tv_nsec - t0.tv_nsec)) / (double)n);
	return 0;
}
#endif
