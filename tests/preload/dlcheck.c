/* dlsym and dlvsym under hostpin behave as without it:
 *   dlcheck NEXT-OWNER: libnext's RTLD_NEXT lookup of malloc names
 *   NEXT-OWNER (libc.so.6 when hostpin comes first, libhostpin.so when it
 *   comes after libnext); handle and RTLD_DEFAULT lookups work; a wrapped
 *   CUDA name that no library defines is not found. */
#include <math.h>

#include "tp.h"

int main(int argc, char **argv)
{
	CHECK(argc == 2);
	const char *(*f)(void) = (const char *(*)(void))dlsym(RTLD_DEFAULT, "next_malloc_owner");
	const char *(*fv)(void) = (const char *(*)(void))dlsym(RTLD_DEFAULT, "next_malloc_owner_v");
	const char *(*fd)(void) = (const char *(*)(void))dlsym(RTLD_DEFAULT, "default_puts_owner");
	CHECK(f && fv && fd);
	/* dlvsym asks for glibc's version node, which an unversioned
	 * definition (hostpin's) never matches: libc's, in either order. */
	if (strcmp(f(), argv[1]) || strcmp(fv(), "libc.so.6")) {
		fprintf(stderr, "RTLD_NEXT from libnext: %s / %s, want %s\n", f(), fv(), argv[1]);
		return 1;
	}
	CHECK(strcmp(fd(), "libc.so.6") == 0);
	void *m = dlopen("libm.so.6", RTLD_NOW);
	double (*c)(double) = (double (*)(double))dlsym(m, "cos");
	CHECK(c && c(0.0) == 1.0);
	CHECK(dlsym(m, "no_such_symbol") == NULL && dlerror() != NULL);
	/* no CUDA library in this process: hostpin's exports must not make
	 * the driver seem present */
	CHECK(dlsym(RTLD_DEFAULT, "cuMemcpyBatchAsync_v2") == NULL);
	CHECK(dlsym(RTLD_DEFAULT, "cudaMemcpyAsync") == NULL);
	/* hostpin's own wrappers with nothing to forward to (no runtime, no
	 * driver): the call fails with "not found", it does not abort */
	void *q = dlsym(RTLD_DEFAULT, "hostpin_query");
	Dl_info di;
	if (q && dladdr(q, &di)) {
		void *hp = dlopen(di.dli_fname, RTLD_NOW | RTLD_NOLOAD);
		int (*rt)(void *, const void *, size_t, int, void *) =
		    (int (*)(void *, const void *, size_t, int, void *))dlsym(hp, "cudaMemcpyAsync");
		int (*dr)(unsigned long long, const void *, size_t, void *) =
		    (int (*)(unsigned long long, const void *, size_t, void *))dlsym(hp, "cuMemcpyHtoDAsync_v2");
		CHECK(rt && dr);
		char b[16];
		CHECK(rt(b, b, sizeof(b), 1, NULL) == 500); /* cudaErrorSymbolNotFound */
		CHECK(dr(0, b, sizeof(b), NULL) == 500);    /* CUDA_ERROR_NOT_FOUND */
	}
	printf("dlcheck: ok (%s)\n", f());
	return 0;
}
