/* Driver lifetimes, contexts, graph capture and the forwarding cache,
 * against the fake CUDA driver (tests/preload/cases/172-faults_drivers.sh).
 *   drivers unload|fwdcache|ctx2|capture
 * Built twice: -DDL (the driver found with dlopen, as a plug-in loads it;
 * "unload") and linked to the fake libcuda.so.1 (the rest).  Exits non-zero
 * when something it checks does not hold; the runner checks the fake
 * driver's log. */
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <time.h>

#include "tp.h"

#define MB ((size_t)1 << 20)
typedef int CUresult;
typedef struct CUctx_st *CUcontext;
typedef struct CUstream_st *CUstream;
typedef unsigned long long CUdeviceptr;

#define DRV_FNS(X)                                                            \
	X(cuInit, (unsigned))                                                 \
	X(cuDevicePrimaryCtxRetain, (CUcontext *, int))                       \
	X(cuDevicePrimaryCtxRelease_v2, (int))                                \
	X(cuCtxSetCurrent, (CUcontext))                                       \
	X(cuStreamCreate, (CUstream *, unsigned))                             \
	X(cuStreamBeginCapture_v2, (CUstream, int))                           \
	X(cuStreamEndCapture, (CUstream, void **))                            \
	X(cuMemAlloc_v2, (CUdeviceptr *, size_t))                             \
	X(cuMemcpyHtoDAsync_v2, (CUdeviceptr, const void *, size_t, CUstream)) \
	X(cuStreamSynchronize, (CUstream))                                    \
	X(cuGetProcAddress_v2,                                                \
	  (const char *, void **, int, unsigned long long, int *))
#ifndef DL
#define DECL(name, params) CUresult name params;
DRV_FNS(DECL)
#undef DECL
#endif
static struct {
#define FIELD(name, params) CUresult(*name) params;
	DRV_FNS(FIELD)
#undef FIELD
} D;
static void *drv;
static int (*is_registered)(const void *, size_t);
static int (*capture_broken)(void);

static void drv_init(void)
{
#ifdef DL
	drv = dlopen(getenv("FAKE_CUDA_PATH"), RTLD_NOW | RTLD_LOCAL);
	CHECK(drv != NULL);
#define GET(name, params) CHECK((*(void **)&D.name = dlsym(drv, #name)));
#else
	drv = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	CHECK(drv != NULL);
#define GET(name, params) D.name = name;
#endif
	DRV_FNS(GET)
#undef GET
	*(void **)&is_registered = dlsym(drv, "fake_cuda_is_registered");
	*(void **)&capture_broken = dlsym(drv, "fake_cuda_capture_broken");
	CHECK(is_registered && capture_broken);
}

static CUcontext ctx0;
static void use_device0(void)
{
	CHECK(D.cuInit(0) == 0);
	CHECK(D.cuDevicePrimaryCtxRetain(&ctx0, 0) == 0);
	CHECK(D.cuCtxSetCurrent(ctx0) == 0);
}

static struct hostpin_stats st(void)
{
	struct hostpin_stats s;
	CHECK(tp_stats(&s) == 0);
	return s;
}

/* Wait for an event (the decay thread gave every cached block back): it
 * decides nothing by its timing; 60 s is the bound on a broken run. */
static __attribute__((unused)) void wait_cache_empty(void)
{
	for (int i = 0; i < 60000 && st().cached_blocks; i++) {
		struct timespec ts = {0, 1000000};
		nanosleep(&ts, NULL);
	}
	CHECK(st().cached_blocks == 0);
}

/* 9: a registration fails (FAKE_CUDA_FAIL); the driver is unloaded; the
 * exit report (HOSTPIN_STATS=1) names the reason from hostpin's own
 * memory. */
static void unload(void)
{
	use_device0();
	char *p = malloc(8 * MB);
	memset(p, 1, 8 * MB);
	CHECK(!(tp_flags(p) & HOSTPIN_REGISTERED)); /* the injected failure */
	free(p);
	CHECK(st().pin_failures == 1);
	CHECK(dlclose(drv) == 0);
	/* really gone: the runtime did not keep it */
	CHECK(dlopen(getenv("FAKE_CUDA_PATH"), RTLD_NOW | RTLD_NOLOAD) == NULL);
}

/* 12: thousands of unloads while hooks are called; then the hook's
 * forwarding must come from the cache (the runner counts resolutions in
 * the debug log after the mark). */
static void fwdcache(void)
{
	const char *lib = getenv("HP_EXTRA_LIB");
	void *f;
	for (int i = 0; i < 6000; i++) {
		void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
		CHECK(h != NULL);
		CHECK(D.cuGetProcAddress_v2("cuInit", &f, 12000, 0, NULL) == 0);
		CHECK(dlclose(h) == 0);
	}
	CHECK(write(2, "MARK\n", 5) == 5);
	for (int i = 0; i < 200; i++)
		CHECK(D.cuGetProcAddress_v2("cuInit", &f, 12000, 0, NULL) == 0);
}

int main(int argc, char **argv)
{
	CHECK(argc == 2);
	CHECK(tp_query() != NULL);
	drv_init();
	const char *m = argv[1];
	if (!strcmp(m, "unload")) unload();
	else if (!strcmp(m, "fwdcache")) fwdcache();
	else return 2;
	printf("drivers %s: ok\n", m);
	return 0;
}
