/* Item 2 of issue 32: the CUDA driver reached only through a plug-in that
 * is closed (its driver unloaded with it) after a staged copy.
 *   late_plug PLUGIN   (built without AS_PLUGIN: the host)
 * The plug-in (built with -DAS_PLUGIN, linking the fake driver) stages a
 * copy; the host closes it, checks that the driver is gone, and exits:
 * nothing of hostpin's may call into the unloaded driver then (a call
 * there is a SIGSEGV). */
#include <stdint.h>

#include "tp.h"

#define MB ((size_t)1 << 20)

#ifdef AS_PLUGIN
typedef struct CUctx_st *CUcontext;
typedef struct CUstream_st *CUstream;
int cuInit(unsigned);
int cuDevicePrimaryCtxRetain(CUcontext *, int);
int cuCtxSetCurrent(CUcontext);
int cuMemAlloc_v2(unsigned long long *, size_t);
int cuMemcpyHtoDAsync_v2(unsigned long long, const void *, size_t, CUstream);
int cuMemcpyDtoHAsync_v2(void *, unsigned long long, size_t, CUstream);
int cuStreamSynchronize(CUstream);

int plug_main(void);
int plug_main(void)
{
	CUcontext c;
	size_t n = 16 * MB;
	CHECK(cuInit(0) == 0 && cuDevicePrimaryCtxRetain(&c, 0) == 0 &&
	      cuCtxSetCurrent(c) == 0);
	unsigned long long d;
	CHECK(cuMemAlloc_v2(&d, n) == 0);
	char *h = mmap(NULL, n, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(h != MAP_FAILED);
	memset(h, 5, n);
	CHECK(cuMemcpyHtoDAsync_v2(d, h, n, NULL) == 0); /* staged */
	CHECK(cuMemcpyDtoHAsync_v2(h, d, n, NULL) == 0); /* staged */
	CHECK(cuStreamSynchronize(NULL) == 0);
	return 0;
}
#else
int main(int argc, char **argv)
{
	CHECK(argc == 2);
	setvbuf(stdout, NULL, _IONBF, 0);
	void *p = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	CHECK(p != NULL);
	int (*pm)(void);
	*(void **)&pm = dlsym(p, "plug_main");
	CHECK(pm != NULL && pm() == 0);
	CHECK(dlclose(p) == 0);
	CHECK(dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD) == NULL);
	puts("late_plug unload: ok");
	return 0; /* exit: hostpin's exit hooks run now */
}
#endif
