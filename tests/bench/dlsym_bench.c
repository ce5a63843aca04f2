/* Ordinary dlsym lookups, run with and without LD_PRELOAD=libhostpin.so by
 * scripts/bench (hostpin exports dlsym and dlvsym).
 *   dlsym_bench N   prints ns per lookup for: RTLD_DEFAULT "puts", a handle
 *                   of libm "cos", RTLD_NEXT "malloc", and a handle lookup
 *                   of a name starting with "cu" that hostpin does not wrap */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000000;
	void *m = dlopen("libm.so.6", RTLD_NOW);
	struct {
		void *h;
		const char *name;
	} c[4] = {{RTLD_DEFAULT, "puts"}, {m, "cos"}, {RTLD_NEXT, "malloc"},
		  {m, "cuberoot_none"}};
	for (int k = 0; k < 4; k++) {
		double t0 = now();
		for (long i = 0; i < n; i++) {
			void *volatile p = dlsym(c[k].h, c[k].name);
			(void)p;
		}
		printf("%.1f ", (now() - t0) * 1e9 / (double)n);
	}
	printf("\n");
	return 0;
}
