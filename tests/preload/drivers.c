/* Driver lifetimes, contexts, graph capture and the forwarding cache,
 * against the fake CUDA driver (tests/preload/cases/172-faults_drivers.sh).
 *   drivers unload|fwdcache|ctx2|ctx_retry|manyctx|capture
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
	X(cuCtxCreate_v2, (CUcontext *, unsigned, int))                       \
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

/* Wait for an event: it decides nothing by its timing; 60 s is the bound
 * on a broken run. */
#define WAIT_FOR(cond)                                                        \
	do {                                                                  \
		for (int i_ = 0; i_ < 60000 && !(cond); i_++) {              \
			struct timespec ts_ = {0, 1000000};                   \
			nanosleep(&ts_, NULL);                                \
		}                                                             \
		CHECK(cond);                                                  \
	} while (0)

/* How many times a file holds a string. */
static int count_in(const char *path, const char *what)
{
	FILE *f = path ? fopen(path, "r") : NULL;
	char line[1024];
	int n = 0;
	while (f && fgets(line, sizeof(line), f))
		n += strstr(line, what) != NULL;
	if (f)
		fclose(f);
	return n;
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

static void *free_on_thread(void *p)
{
	free(p); /* this thread has no current context */
	return NULL;
}

/* 10: device 0 in use; the primary context of device 1 is retained and
 * released; then a thread with no current context (as the cache's decay
 * thread) frees a registered block: it is unregistered, not leaked. */
static void ctx2(void)
{
	use_device0();
	char *b = malloc(8 * MB);
	memset(b, 1, 8 * MB);
	CHECK(tp_flags(b) & HOSTPIN_REGISTERED);
	CUcontext c1;
	CHECK(D.cuDevicePrimaryCtxRetain(&c1, 1) == 0);
	CHECK(D.cuDevicePrimaryCtxRelease_v2(1) == 0);
	pthread_t t;
	CHECK(pthread_create(&t, NULL, free_on_thread, b) == 0);
	CHECK(pthread_join(t, NULL) == 0);
	CHECK(!is_registered(b, 8 * MB));
	CHECK(st().leaked_blocks == 0);
	CHECK(st().pinned_blocks_now == 0);
}

/* 10, retried: the thread without a context cannot push one (the push
 * fails: FAKE_CUDA_FAIL=cuCtxPushCurrent_v2:1); the block is kept
 * registered, not leaked, and released at the program's next copy. */
static void ctx_retry(void)
{
	use_device0();
	CUdeviceptr d;
	CHECK(D.cuMemAlloc_v2(&d, 8 * MB) == 0);
	char *b = malloc(8 * MB), *c = malloc(8 * MB);
	memset(b, 1, 8 * MB);
	memset(c, 2, 8 * MB);
	CHECK(tp_flags(b) & HOSTPIN_REGISTERED);
	pthread_t t;
	CHECK(pthread_create(&t, NULL, free_on_thread, b) == 0);
	CHECK(pthread_join(t, NULL) == 0);
	CHECK(is_registered(b, 8 * MB)); /* not released yet */
	CHECK(st().leaked_blocks == 0);
	CHECK(D.cuMemcpyHtoDAsync_v2(d, c, 8 * MB, NULL) == 0);
	CHECK(!is_registered(b, 8 * MB)); /* released now */
	free(c);
	CHECK(st().leaked_blocks == 0 && st().pinned_blocks_now == 0);
}

/* 10, the table: the program makes 70 contexts of its own and registers a
 * block through each (FAKE_CUDA_OWN_CTXS); the runner checks that hostpin
 * said once that it follows no more than 64. */
static void manyctx(void)
{
	use_device0(); /* a primary context active: CUDA is ready */
	for (int i = 0; i < 70; i++) {
		CUcontext c;
		CHECK(D.cuCtxCreate_v2(&c, 0, 0) == 0);
		CHECK(D.cuCtxSetCurrent(c) == 0);
		char *p = malloc(4 * MB);
		memset(p, i, 4 * MB);
		CHECK(tp_flags(p) & HOSTPIN_REGISTERED);
		free(p);
	}
	CHECK(st().leaked_blocks == 0 && st().pinned_blocks_now == 0);
}

/* 11: one thread captures a graph in global mode; meanwhile another copies
 * a block past HOSTPIN_PIN_AFTER, frees a registered block the cache does
 * not keep, and frees one the cache keeps and its decay thread gives back.
 * The capture must stay valid; after it ends the copied block is
 * registered and the two released ones are unregistered. */
static CUstream cap_s;
static int began[2], go[2], cap_rc = -1;
static void *capturer(void *arg)
{
	(void)arg;
	char c = 0;
	CHECK(D.cuCtxSetCurrent(ctx0) == 0);
	CHECK(D.cuStreamBeginCapture_v2(cap_s, 0) == 0); /* global mode */
	CHECK(write(began[1], &c, 1) == 1);
	CHECK(read(go[0], &c, 1) == 1);
	void *g;
	cap_rc = D.cuStreamEndCapture(cap_s, &g);
	return NULL;
}

static char *copied(size_t n, int v, CUdeviceptr d, CUstream s, int times)
{
	char *p = malloc(n);
	memset(p, v, n);
	for (int i = 0; i < times; i++)
		CHECK(D.cuMemcpyHtoDAsync_v2(d, p, n, s) == 0);
	return p;
}

static void capture(void)
{
	use_device0();
	CUdeviceptr d;
	CUstream s2;
	CHECK(D.cuMemAlloc_v2(&d, 32 * MB) == 0);
	CHECK(D.cuStreamCreate(&cap_s, 0) == 0 && D.cuStreamCreate(&s2, 0) == 0);
	CHECK(pipe(began) == 0 && pipe(go) == 0);
	/* registered at their second copy (HOSTPIN_PIN_AFTER=2) */
	char *a = copied(8 * MB, 1, d, s2, 2), *big = copied(32 * MB, 2, d, s2, 2);
	CHECK(D.cuStreamSynchronize(s2) == 0);
	CHECK((tp_flags(a) & HOSTPIN_REGISTERED) && (tp_flags(big) & HOSTPIN_REGISTERED));
	pthread_t t;
	char c = 0;
	CHECK(pthread_create(&t, NULL, capturer, NULL) == 0);
	CHECK(read(began[0], &c, 1) == 1);
	/* ---- while the capture runs ---- */
	char *b = copied(8 * MB, 3, d, s2, 2); /* its registration waits */
	CHECK(!(tp_flags(b) & HOSTPIN_REGISTERED));
	free(big); /* over HOSTPIN_CACHE: released now, unregistration waits */
	free(a);   /* cached, then given back by the decay thread */
	/* the event: hostpin deferred both releases (its debug log), or the
	 * driver saw both unregistrations (and failed them) */
	const char *hl = getenv("HOSTPIN_LOG_FILE"), *fl = getenv("FAKE_CUDA_LOG");
	WAIT_FOR(count_in(hl, "unregistration waits") >= 2 ||
		 count_in(fl, "capture-invalidated-by cuMemHostUnregister") >= 2);
	CHECK(st().cached_blocks == 0);
	CHECK(is_registered(a, 8 * MB) && is_registered(big, 32 * MB));
	/* ---- the capture ends ---- */
	CHECK(write(go[1], &c, 1) == 1);
	CHECK(pthread_join(t, NULL) == 0);
	CHECK(cap_rc == 0);
	CHECK(!capture_broken());
	CHECK((tp_flags(b) & HOSTPIN_REGISTERED) && is_registered(b, 8 * MB));
	CHECK(!is_registered(a, 8 * MB) && !is_registered(big, 32 * MB));
	CHECK(D.cuStreamSynchronize(s2) == 0);
	free(b); /* cached; the decay thread gives it back */
	WAIT_FOR(st().pinned_blocks_now == 0);
	CHECK(st().cached_blocks == 0 && st().leaked_blocks == 0);
}

int main(int argc, char **argv)
{
	CHECK(argc == 2);
	CHECK(tp_query() != NULL);
	drv_init();
	const char *m = argv[1];
	if (!strcmp(m, "unload")) unload();
	else if (!strcmp(m, "fwdcache")) fwdcache();
	else if (!strcmp(m, "ctx2")) ctx2();
	else if (!strcmp(m, "ctx_retry")) ctx_retry();
	else if (!strcmp(m, "manyctx")) manyctx();
	else if (!strcmp(m, "capture")) capture();
	else return 2;
	printf("drivers %s: ok\n", m);
	return 0;
}
