/* A CUDA program over the fake driver and runtime, run under hostpin.
 *   cuda_prog adopt|thread|sync|inflight|foreign|work|fork|fault|coverage|...
 * HP_PATH picks the copy entry point and the way it was found (path_init).
 * Exits non-zero when what it sees differs from what the program would
 * see without hostpin; the runner checks the fake driver's log. */
#include <pthread.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cuda_layouts.h"
#include "tp.h"

typedef int cudaError_t;
typedef struct CUstream_st *cudaStream_t;
enum { H2D = 1, D2H = 2 };

/* The runtime: linked (the dynamic runtime, or the static one compiled in
 * with -DFAKE_STATIC), or, with -DVIA_DLOPEN, found through
 * dlsym(dlopen("libcudart.so.12", RTLD_LOCAL)) the way ctypes finds it. */
#define RT_FNS(X)                                                             \
	X(cudaSetDevice, (int)) X(cudaMalloc, (void **, size_t))              \
	X(cudaMemcpy, (void *, const void *, size_t, int))                    \
	X(cudaMemcpyAsync, (void *, const void *, size_t, int, cudaStream_t)) \
	X(cudaMemcpyAsync_ptsz,                                               \
	  (void *, const void *, size_t, int, cudaStream_t))                  \
	X(cudaMemcpy2DAsync, (void *, size_t, const void *, size_t, size_t,   \
			      size_t, int, cudaStream_t))                     \
	X(cudaMemcpy3DAsync, (const void *, cudaStream_t))                    \
	X(cudaMemcpyToSymbolAsync,                                            \
	  (const void *, const void *, size_t, size_t, int, cudaStream_t))    \
	X(cudaMemcpyFromSymbolAsync,                                          \
	  (void *, const void *, size_t, size_t, int, cudaStream_t))          \
	X(cudaMemcpyBatchAsync, (void **, void **, size_t *, size_t, void *,  \
				 size_t *, size_t, size_t *, cudaStream_t))   \
	X(cudaDeviceSynchronize, (void))                                      \
	X(cudaHostRegister, (void *, size_t, unsigned))                       \
	X(cudaHostUnregister, (void *))                                       \
	X(cudaHostAlloc, (void **, size_t, unsigned))                         \
	X(cudaStreamCreate, (cudaStream_t *))                                 \
	X(cudaStreamBeginCapture, (cudaStream_t, int))                        \
	X(cudaStreamEndCapture, (cudaStream_t, void **))                      \
	X(cudaGetDriverEntryPoint, (const char *, void **, unsigned long long, \
				    int *))                                   \
	X(cudaGetDriverEntryPointByVersion,                                   \
	  (const char *, void **, unsigned, unsigned long long, int *))       \
	X(cudaMemcpy3DPeerAsync, (const void *, cudaStream_t))                \
	X(cudaDeviceReset, (void))
#ifndef VIA_DLOPEN
#define DECL(name, params) cudaError_t name params;
RT_FNS(DECL)
#undef DECL
#endif
static struct {
#define FIELD(name, params) cudaError_t(*name) params;
	RT_FNS(FIELD)
#undef FIELD
} R;

static void *libcuda(void)
{
	/* the driver the runtime loaded; a lookup on its handle */
	void *h = dlopen("libcuda.so.1", RTLD_NOW);
	CHECK(h != NULL);
	return h;
}

static void rt_init(void)
{
#ifdef VIA_DLOPEN
	void *h = dlopen("libcudart.so.12", RTLD_NOW | RTLD_LOCAL);
	CHECK(h != NULL);
#define GET(name, params) *(void **)&R.name = dlsym(h, #name); CHECK(R.name);
#else
#define GET(name, params) R.name = name;
#endif
	RT_FNS(GET)
#undef GET
}
static int (*cu_is_registered)(const void *, size_t);
static int (*cu_capture_broken)(void);
static int (*cu_reg)(void *, size_t, unsigned);
static int (*cu_unreg)(void *);
#define MB ((size_t)1 << 20)
static int hp; /* hostpin loaded */

static int registered(const void *p) { return (tp_flags(p) & HOSTPIN_REGISTERED) != 0; }

/* ---- the copy path under test (HP_PATH): every way to reach a copy ---- */
typedef int (*h2d_t)(void *dev, const void *h, size_t n, cudaStream_t s);
typedef int (*d2h_t)(void *h, const void *dev, size_t n, cudaStream_t s);
static h2d_t h2d;
static d2h_t d2h;
static int path_ptsz; /* stream 0 means the per-thread stream */
static void *drv_fn[4];  /* driver functions the path looked up */
static const char *path = "rt";

static int rt_h2d(void *dv, const void *h, size_t n, cudaStream_t s)
{ return R.cudaMemcpyAsync(dv, h, n, H2D, s); }
static int rt_d2h(void *h, const void *dv, size_t n, cudaStream_t s)
{ return R.cudaMemcpyAsync(h, dv, n, D2H, s); }
static int rtp_h2d(void *dv, const void *h, size_t n, cudaStream_t s)
{ return R.cudaMemcpyAsync_ptsz(dv, h, n, H2D, s); }
static int rtp_d2h(void *h, const void *dv, size_t n, cudaStream_t s)
{ return R.cudaMemcpyAsync_ptsz(h, dv, n, D2H, s); }
/* two rows of n/2 */
static int rt2d_h2d(void *dv, const void *h, size_t n, cudaStream_t s)
{ return R.cudaMemcpy2DAsync(dv, n / 2, h, n / 2, n / 2, 2, H2D, s); }
static int rt2d_d2h(void *h, const void *dv, size_t n, cudaStream_t s)
{ return R.cudaMemcpy2DAsync(h, n / 2, dv, n / 2, n / 2, 2, D2H, s); }
static int rt3d(void *dst, const void *src, size_t n, int kind, cudaStream_t s)
{
	/* 2 x 2 rows of n/4 */
	struct parms3d p = {0};
	p.src = (struct pitched){(void *)src, n / 4, n / 4, 2};
	p.dst = (struct pitched){dst, n / 4, n / 4, 2};
	p.ext[0] = n / 4, p.ext[1] = 2, p.ext[2] = 2;
	p.kind = kind;
	return R.cudaMemcpy3DAsync(&p, s);
}
static int rt3d_h2d(void *dv, const void *h, size_t n, cudaStream_t s) { return rt3d(dv, h, n, H2D, s); }
static int rt3d_d2h(void *h, const void *dv, size_t n, cudaStream_t s) { return rt3d(h, dv, n, D2H, s); }
static int rtsym_h2d(void *dv, const void *h, size_t n, cudaStream_t s)
{ return R.cudaMemcpyToSymbolAsync(dv, h, n, 0, H2D, s); }
static int rtsym_d2h(void *h, const void *dv, size_t n, cudaStream_t s)
{ return R.cudaMemcpyFromSymbolAsync(h, dv, n, 0, D2H, s); }
static int rtbatch(void *dst, const void *src, size_t n, cudaStream_t s)
{
	void *d[2] = {dst, (char *)dst + n / 2};
	void *sr[2] = {(void *)src, (char *)src + n / 2};
	size_t sz[2] = {n / 2, n / 2}, fail = 0;
	return R.cudaMemcpyBatchAsync(d, sr, sz, 2, NULL, NULL, 0, &fail, s);
}
static int rtbatch_h2d(void *dv, const void *h, size_t n, cudaStream_t s) { return rtbatch(dv, h, n, s); }
static int rtbatch_d2h(void *h, const void *dv, size_t n, cudaStream_t s) { return rtbatch(h, dv, n, s); }

/* driver forms, through whatever pointers the path found */
typedef int (*htod_t)(dptr, const void *, size_t, cudaStream_t);
typedef int (*dtoh_t)(void *, dptr, size_t, cudaStream_t);
static int drv_h2d(void *dv, const void *h, size_t n, cudaStream_t s)
{ return ((htod_t)drv_fn[0])((dptr)(uintptr_t)dv, h, n, s); }
static int drv_d2h(void *h, const void *dv, size_t n, cudaStream_t s)
{ return ((dtoh_t)drv_fn[1])(h, (dptr)(uintptr_t)dv, n, s); }
typedef int (*any_t)(dptr, dptr, size_t, cudaStream_t);
static int any_h2d(void *dv, const void *h, size_t n, cudaStream_t s)
{ return ((any_t)drv_fn[0])((dptr)(uintptr_t)dv, (dptr)(uintptr_t)h, n, s); }
static int any_d2h(void *h, const void *dv, size_t n, cudaStream_t s)
{ return ((any_t)drv_fn[0])((dptr)(uintptr_t)h, (dptr)(uintptr_t)dv, n, s); }
static int drv2d(void *dst, const void *src, size_t n, int kind, cudaStream_t s)
{
	M2D m = {0};
	m.srcMemoryType = kind == H2D ? 1 : 2, m.dstMemoryType = kind == H2D ? 2 : 1;
	m.srcHost = src, m.srcDevice = (dptr)(uintptr_t)src, m.srcPitch = n / 2;
	m.dstHost = dst, m.dstDevice = (dptr)(uintptr_t)dst, m.dstPitch = n / 2;
	m.WidthInBytes = n / 2, m.Height = 2;
	return ((int (*)(const M2D *, cudaStream_t))drv_fn[0])(&m, s);
}
static int drv2d_h2d(void *dv, const void *h, size_t n, cudaStream_t s) { return drv2d(dv, h, n, H2D, s); }
static int drv2d_d2h(void *h, const void *dv, size_t n, cudaStream_t s) { return drv2d(h, dv, n, D2H, s); }
static int drv3d(void *dst, const void *src, size_t n, int kind, cudaStream_t s)
{
	M3D m = {0};
	m.srcMemoryType = kind == H2D ? 1 : 2, m.dstMemoryType = kind == H2D ? 2 : 1;
	m.srcHost = src, m.srcDevice = (dptr)(uintptr_t)src, m.srcPitch = n / 4, m.srcHeight = 2;
	m.dstHost = dst, m.dstDevice = (dptr)(uintptr_t)dst, m.dstPitch = n / 4, m.dstHeight = 2;
	m.WidthInBytes = n / 4, m.Height = 2, m.Depth = 2;
	return ((int (*)(const M3D *, cudaStream_t))drv_fn[0])(&m, s);
}
static int drv3d_h2d(void *dv, const void *h, size_t n, cudaStream_t s) { return drv3d(dv, h, n, H2D, s); }
/* cudaMemcpy3DPeerParms: no kind, either side may be host memory */
static int rtpeer(void *dst, const void *src, size_t n, cudaStream_t s)
{
	struct peer3d p = {0};
	p.src = (struct pitched){(void *)src, n / 4, n / 4, 2};
	p.dst = (struct pitched){dst, n / 4, n / 4, 2};
	p.ext[0] = n / 4, p.ext[1] = 2, p.ext[2] = 2;
	return R.cudaMemcpy3DPeerAsync(&p, s);
}
static int rtpeer_h2d(void *dv, const void *h, size_t n, cudaStream_t s) { return rtpeer(dv, h, n, s); }
static int rtpeer_d2h(void *h, const void *dv, size_t n, cudaStream_t s) { return rtpeer(h, dv, n, s); }
static int drv3d_d2h(void *h, const void *dv, size_t n, cudaStream_t s) { return drv3d(h, dv, n, D2H, s); }
/* arrays: the "device buffer" is a CUarray over device memory */
struct fake_array { char *mem; size_t size; };
static int arr_h2d(void *a, const void *h, size_t n, cudaStream_t s)
{ return ((int (*)(void *, size_t, const void *, size_t, cudaStream_t))drv_fn[0])(a, 0, h, n, s); }
static int arr_d2h(void *h, const void *a, size_t n, cudaStream_t s)
{ return ((int (*)(void *, const void *, size_t, size_t, cudaStream_t))drv_fn[1])(h, a, 0, n, s); }
static int drvbatch(void *dst, const void *src, size_t n, cudaStream_t s)
{
	dptr d[2] = {(dptr)(uintptr_t)dst, (dptr)(uintptr_t)dst + n / 2};
	dptr sr[2] = {(dptr)(uintptr_t)src, (dptr)(uintptr_t)src + n / 2};
	size_t sz[2] = {n / 2, n / 2};
	return ((int (*)(dptr *, dptr *, size_t *, size_t, void *, size_t *, size_t, cudaStream_t))drv_fn[0])(d, sr, sz, 2, NULL, NULL, 0, s);
}
static int drvbatch_h2d(void *dv, const void *h, size_t n, cudaStream_t s) { return drvbatch(dv, h, n, s); }
static int drvbatch_d2h(void *h, const void *dv, size_t n, cudaStream_t s) { return drvbatch(h, dv, n, s); }
typedef struct { int type; union { struct { dptr ptr; size_t rl, lh; int loc[2]; } ptr; struct { void *a; size_t x, y, z; } arr; } op; } OPND;
typedef struct { OPND src, dst; size_t w, h, d; int order; unsigned flags; } BOP;
static int drv3dbatch(void *dst, const void *src, size_t n, cudaStream_t s)
{
	BOP op = {0};
	op.src.type = op.dst.type = 1;
	op.src.op.ptr.ptr = (dptr)(uintptr_t)src;
	op.dst.op.ptr.ptr = (dptr)(uintptr_t)dst;
	op.w = n, op.h = op.d = 1;
	return ((int (*)(size_t, BOP *, unsigned long long, cudaStream_t))drv_fn[0])(1, &op, 0, s);
}
static int drv3dbatch_h2d(void *dv, const void *h, size_t n, cudaStream_t s) { return drv3dbatch(dv, h, n, s); }
static int drv3dbatch_d2h(void *h, const void *dv, size_t n, cudaStream_t s) { return drv3dbatch(h, dv, n, s); }

/* CUDA 13.2's single copies with attributes (the attributes: the fake
 * reads none) */
typedef int (*attr_t)(dptr, dptr, size_t, const void *, cudaStream_t);
static const long attrs_any[8];
static int attr_h2d(void *dv, const void *h, size_t n, cudaStream_t s)
{ return ((attr_t)drv_fn[0])((dptr)(uintptr_t)dv, (dptr)(uintptr_t)h, n, attrs_any, s); }
static int attr_d2h(void *h, const void *dv, size_t n, cudaStream_t s)
{ return ((attr_t)drv_fn[0])((dptr)(uintptr_t)h, (dptr)(uintptr_t)dv, n, attrs_any, s); }
static int drv3dattr(void *dst, const void *src, size_t n, cudaStream_t s)
{
	BOP op = {0};
	op.src.type = op.dst.type = 1;
	op.src.op.ptr.ptr = (dptr)(uintptr_t)src;
	op.dst.op.ptr.ptr = (dptr)(uintptr_t)dst;
	op.w = n, op.h = op.d = 1;
	return ((int (*)(BOP *, unsigned long long, cudaStream_t))drv_fn[0])(&op, 0, s);
}
static int drv3dattr_h2d(void *dv, const void *h, size_t n, cudaStream_t s) { return drv3dattr(dv, h, n, s); }
static int drv3dattr_d2h(void *h, const void *dv, size_t n, cudaStream_t s) { return drv3dattr(h, dv, n, s); }
/* a copy entry point of a CUDA newer than hostpin (the fake's "13.5"):
 * eight arguments, two on the stack */
typedef int (*future_t)(dptr, dptr, size_t, cudaStream_t, int, int, int, long);
static int future_h2d(void *dv, const void *h, size_t n, cudaStream_t s)
{ return ((future_t)drv_fn[0])((dptr)(uintptr_t)dv, (dptr)(uintptr_t)h, n, s, 5, 6, 7, 8); }
static int future_d2h(void *h, const void *dv, size_t n, cudaStream_t s)
{ return ((future_t)drv_fn[0])((dptr)(uintptr_t)h, (dptr)(uintptr_t)dv, n, s, 5, 6, 7, 8); }

#ifdef LINKED_DRIVER
/* linked to the driver's exported names (only their addresses are used) */
#define DRV_LINKED(X)                                                         \
	X(cuMemcpyHtoDAsync_v2) X(cuMemcpyDtoHAsync_v2) X(cuMemcpyAsync)      \
	X(cuMemcpy2DAsync_v2) X(cuMemcpy3DAsync_v2) X(cuMemcpyHtoAAsync_v2)   \
	X(cuMemcpyAtoHAsync_v2) X(cuMemcpyBatchAsync_v2)                      \
	X(cuMemcpy3DBatchAsync_v2) X(cuGetProcAddress_v2)                     \
	X(cuMemHostRegister_v2) X(cuMemHostUnregister)                        \
	X(cuMemcpy3DPeerAsync) X(cuDevicePrimaryCtxReset_v2)                  \
	X(cuDevicePrimaryCtxRelease_v2) X(cuDevicePrimaryCtxRetain)           \
	X(cuCtxSetCurrent) X(cuCtxDestroy_v2) X(cuPointerGetAttribute)        \
	X(cuPointerGetAttributes) X(cuMemHostGetFlags)                        \
	X(cuMemHostGetDevicePointer_v2)
#define DECL_D(n) int n(void);
DRV_LINKED(DECL_D)
#undef DECL_D
#define LINKED 1
static void *linked_sym(const char *n)
{
#define L(x) if (strcmp(n, #x) == 0) return (void *)x;
	DRV_LINKED(L)
#undef L
	return NULL;
}
#else
#define LINKED 0
static void *linked_sym(const char *n) { (void)n; return NULL; }
#endif

typedef int (*gpa_t)(const char *, void **, int, unsigned long long, int *);
static int gpa_version = 12000;
static void *by_gpa(const char *base, int ptsz)
{
	void *f = NULL;
	gpa_t g = LINKED ? (gpa_t)linked_sym("cuGetProcAddress_v2")
			 : (gpa_t)dlsym(libcuda(), "cuGetProcAddress_v2");
	CHECK(g && g(base, &f, gpa_version, ptsz ? 2 : 0, NULL) == 0 && f);
	return f;
}

static void path_init(void)
{
	const char *p = getenv("HP_PATH");
	path = p ? p : "rt";
	h2d = rt_h2d, d2h = rt_d2h;
#define IS(x) (strcmp(path, x) == 0)
	if (IS("rt_ptsz")) h2d = rtp_h2d, d2h = rtp_d2h, path_ptsz = 1;
	else if (IS("rt2d")) h2d = rt2d_h2d, d2h = rt2d_d2h;
	else if (IS("rt3d")) h2d = rt3d_h2d, d2h = rt3d_d2h;
	else if (IS("rtsym")) h2d = rtsym_h2d, d2h = rtsym_d2h;
	else if (IS("rtbatch")) h2d = rtbatch_h2d, d2h = rtbatch_d2h;
	else if (IS("rt3dpeer")) h2d = rtpeer_h2d, d2h = rtpeer_d2h;
	else if (IS("gpa3dpeer") || IS("entry3dpeer")) {
		h2d = drv3d_h2d, d2h = drv3d_d2h;
		if (IS("gpa3dpeer"))
			drv_fn[0] = by_gpa("cuMemcpy3DPeerAsync", 0);
		else
			CHECK(R.cudaGetDriverEntryPoint("cuMemcpy3DPeerAsync", &drv_fn[0], 0, NULL) == 0 && drv_fn[0]);
	}
	else if (IS("gpaattr") || IS("gpaattr_ptsz") || IS("dlattr")) {
		h2d = attr_h2d, d2h = attr_d2h, gpa_version = 13020;
		path_ptsz = IS("gpaattr_ptsz");
		drv_fn[0] = IS("dlattr") ? dlsym(libcuda(), "cuMemcpyWithAttributesAsync")
					 : by_gpa("cuMemcpyWithAttributesAsync", path_ptsz);
		CHECK(drv_fn[0]);
	} else if (IS("gpa3dattr")) {
		h2d = drv3dattr_h2d, d2h = drv3dattr_d2h, gpa_version = 13020;
		drv_fn[0] = by_gpa("cuMemcpy3DWithAttributesAsync", 0);
	} else if (IS("gpafuture") || IS("dlfuture")) {
		h2d = future_h2d, d2h = future_d2h, gpa_version = 13050;
		drv_fn[0] = IS("dlfuture") ? dlsym(libcuda(), "cuMemcpyFutureAsync")
					   : by_gpa("cuMemcpyFutureAsync", 0);
		CHECK(drv_fn[0]);
	}
	else if (IS("rt")) ;
	else {
		/* the driver's forms: linked, dlsym on its handle, or from
		 * cuGetProcAddress / cudaGetDriverEntryPoint */
		h2d = drv_h2d, d2h = drv_d2h;
		const char *a = "cuMemcpyHtoDAsync_v2", *b = "cuMemcpyDtoHAsync_v2";
		if (IS("drvany")) a = b = "cuMemcpyAsync", h2d = any_h2d, d2h = any_d2h;
		if (IS("drv2d")) a = b = "cuMemcpy2DAsync_v2", h2d = drv2d_h2d, d2h = drv2d_d2h;
		if (IS("drv3d")) a = b = "cuMemcpy3DAsync_v2", h2d = drv3d_h2d, d2h = drv3d_d2h;
		/* CUDA_MEMCPY3D_PEER has the 3D layout (contexts NULL) */
		if (IS("drv3dpeer")) a = b = "cuMemcpy3DPeerAsync", h2d = drv3d_h2d, d2h = drv3d_d2h;
		if (IS("drvarr")) a = "cuMemcpyHtoAAsync_v2", b = "cuMemcpyAtoHAsync_v2", h2d = arr_h2d, d2h = arr_d2h;
		if (IS("drvbatch")) a = b = "cuMemcpyBatchAsync_v2", h2d = drvbatch_h2d, d2h = drvbatch_d2h;
		if (IS("drv3dbatch")) a = b = "cuMemcpy3DBatchAsync_v2", h2d = drv3dbatch_h2d, d2h = drv3dbatch_d2h;
		if (IS("gpa") || IS("gpa_ptsz")) {
			int pt = IS("gpa_ptsz");
			drv_fn[0] = by_gpa("cuMemcpyHtoDAsync", pt);
			drv_fn[1] = by_gpa("cuMemcpyDtoHAsync", pt);
			path_ptsz = pt;
		} else if (IS("entry") || IS("entry_v")) {
			const char *n[2] = {"cuMemcpyHtoDAsync", "cuMemcpyDtoHAsync"};
			for (int i = 0; i < 2; i++)
				CHECK((IS("entry") ? R.cudaGetDriverEntryPoint(n[i], &drv_fn[i], 0, NULL)
						   : R.cudaGetDriverEntryPointByVersion(n[i], &drv_fn[i], 12000, 0, NULL)) == 0 && drv_fn[i]);
		} else if (IS("dldrv") || !LINKED) {
			CHECK((drv_fn[0] = dlsym(libcuda(), a)) && (drv_fn[1] = dlsym(libcuda(), b)));
		} else {
			drv_fn[0] = linked_sym(a), drv_fn[1] = linked_sym(b);
			CHECK(drv_fn[0] && drv_fn[1]);
		}
	}
#undef IS
}

static void *dev(size_t n, int pattern)
{
	void *d;
	if (strcmp(path, "drvarr") == 0) {
		struct { size_t w, h; int f; unsigned c; } desc = {n, 1, 1, 1};
		int (*mk)(void **, const void *) = (int (*)(void **, const void *))dlsym(libcuda(), "cuArrayCreate_v2");
		CHECK(mk && mk(&d, &desc) == 0);
	} else {
		CHECK(R.cudaMalloc(&d, n) == 0);
	}
	char *h = (void *)syscall(SYS_mmap, NULL, n, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	memset(h, pattern, n);
	CHECK(h2d(d, h, n, NULL) == 0);
	R.cudaDeviceSynchronize();
	syscall(SYS_munmap, h, n);
	return d;
}

/* Read the device buffer back through pageable memory. */
static void dev_read(void *h, void *d, size_t n)
{
	char *t = (void *)syscall(SYS_mmap, NULL, n, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(d2h(t, d, n, NULL) == 0);
	R.cudaDeviceSynchronize();
	memcpy(h, t, n);
	syscall(SYS_munmap, t, n);
}

static int all(const char *p, size_t n, int v)
{
	for (size_t i = 0; i < n; i += 509)
		if (p[i] != (char)v)
			return 0;
	return p[n - 1] == (char)v;
}

static void adopt(void)
{
	char *b[4];
	for (int i = 0; i < 4; i++) {
		b[i] = malloc(4 * MB);
		tp_fill(b[i], 4 * MB, (unsigned)i);
		if (hp)
			CHECK(tp_flags(b[i]) & HOSTPIN_PENDING);
	}
	CHECK(R.cudaSetDevice(1) == 0); /* the job uses device 1, not 0 */
	char *late = malloc(4 * MB);
	if (hp)
		CHECK(registered(late)); /* ready: registered at once */
	void *d = dev(4 * MB, 0);
	/* The first copy from a block allocated before CUDA existed: it is
	 * registered before the copy runs. */
	CHECK(h2d(d, b[2], 4 * MB, NULL) == 0);
	if (hp) {
		CHECK(cu_is_registered(b[2], 4 * MB));
		for (int i = 0; i < 4; i++)
			CHECK(registered(b[i]));
	}
	R.cudaDeviceSynchronize();
	for (int i = 0; i < 4; i++) {
		CHECK(tp_verify(b[i], 4 * MB, (unsigned)i));
		free(b[i]);
	}
	free(late);
}

static void *thread_alloc(void *arg)
{
	(void)arg;
	char *p = malloc(8 * MB); /* this thread has no current context */
	memset(p, 1, 8 * MB);
	if (hp)
		CHECK(registered(p));
	free(p);
	return NULL;
}

static void thread(void)
{
	CHECK(R.cudaSetDevice(1) == 0);
	char *volatile m = malloc(2 * MB); /* a block on the main thread */
	m[0] = 1;
	free(m);
	pthread_t t;
	pthread_create(&t, NULL, thread_alloc, NULL);
	pthread_join(t, NULL);
}

/* Program semantics of async copies, as on pageable memory. */
static int sync_semantics(void)
{
	CHECK(R.cudaSetDevice(0) == 0);
	size_t n = 8 * MB;
	char *b = malloc(n);
	memset(b, 0, n);
	if (hp)
		CHECK(registered(b));
	void *d = dev(n, 0x5a);
	int ok = 1;
	/* D2H: the buffer holds the data when the call returns */
	CHECK(d2h(b, d, n, NULL) == 0);
	ok &= all(b, n, 0x5a);
	/* H2D: overwriting the source after the call changes nothing */
	memset(b, 0x11, n);
	CHECK(h2d(d, b, n, NULL) == 0);
	memset(b, 0x22, n);
	R.cudaDeviceSynchronize();
	dev_read(b, d, n);
	ok &= all(b, n, 0x11);
	free(b);
	return ok;
}

static void inflight(void)
{
	CHECK(R.cudaSetDevice(0) == 0);
	size_t n = 8 * MB;
	void *d = dev(n, 0x33);
	char *a = malloc(n);
	if (hp)
		CHECK(registered(a));
	CHECK(d2h(a, d, n, NULL) == 0);
	free(a); /* the copy may still be queued */
	char *b = malloc(n);
	memset(b, 0x77, n);
	/* the fake runs queued copies here: a late one into a reused block
	 * would show */
	R.cudaDeviceSynchronize();
	CHECK(all(b, n, 0x77));
	free(b);
}

static void foreign(void)
{
	CHECK(R.cudaSetDevice(0) == 0);
	char *p = malloc(16 * MB);
	tp_fill(p, 16 * MB, 9);
	if (hp)
		CHECK(registered(p));
	/* The program registers part of a hostpin block itself. */
	CHECK(R.cudaHostRegister(p + 4 * MB, 4 * MB, 0) == 0);
	if (hp)
		CHECK(!registered(p));
	CHECK(R.cudaHostUnregister(p + 4 * MB) == 0);
	if (hp)
		CHECK(registered(p));
	/* and the whole of it, through the driver API */
	CHECK(cu_reg(p, 16 * MB, 0) == 0);
	CHECK(cu_unreg(p) == 0);
	if (hp)
		CHECK(registered(p));
	CHECK(tp_verify(p, 16 * MB, 9));
	free(p);
	/* cudaHostAlloc memory is the runtime's: hostpin leaves it alone */
	void *h;
	CHECK(R.cudaHostAlloc(&h, 8 * MB, 0) == 0);
	CHECK(tp_flags(h) == 0);
	memset(h, 1, 8 * MB);
}

static void work(void)
{
	CHECK(R.cudaSetDevice(0) == 0);
	size_t n = 4 * MB;
	void *d = dev(n, 0);
	char *b[8];
	for (int i = 0; i < 8; i++) {
		b[i] = malloc(n);
		tp_fill(b[i], n, (unsigned)i);
	}
	for (int i = 0; i < 8; i++) {
		CHECK(R.cudaMemcpyAsync(d, b[i], n, H2D, NULL) == 0);
		memset(b[i], 0, n);
		CHECK(R.cudaMemcpyAsync(b[i], d, n, D2H, NULL) == 0);
		R.cudaDeviceSynchronize();
		CHECK(tp_verify(b[i], n, (unsigned)i));
		if (i & 1) {
			b[i] = realloc(b[i], 3 * n);
			CHECK(b[i] && tp_verify(b[i], n, (unsigned)i));
		}
	}
	for (int i = 0; i < 8; i++)
		free(b[i]);
}

/* A training-loop pattern: fresh large buffers every step, copied to the
 * device, freed. */
static void churn(void)
{
	CHECK(R.cudaSetDevice(0) == 0);
	size_t sz[3] = {8 * MB, 16 * MB, 32 * MB};
	void *d = dev(32 * MB, 0);
	for (int step = 0; step < 20; step++)
		for (int k = 0; k < 3; k++) {
			char *b = malloc(sz[k]);
			memset(b, step, sz[k]);
			if (hp)
				CHECK(registered(b));
			CHECK(R.cudaMemcpyAsync(d, b, sz[k], H2D, NULL) == 0);
			free(b);
		}
}

/* HOSTPIN_MLOCK=1 and a registration the driver refuses: the block is
 * locked instead, and unlocked when freed. */
static void mlock_fallback(void)
{
	CHECK(R.cudaSetDevice(0) == 0);
	char *p = malloc(8 * MB);
	memset(p, 1, 8 * MB);
	CHECK(!registered(p));
	CHECK(tp_flags(p) & HOSTPIN_LOCKED);
	CHECK(tp_locked(p, 8 * MB) == 1);
	free(p);
}

/* The program unregisters hostpin's own registration: hostpin notices,
 * registers the block again, and does not fail at free. */
/* The program unregisters memory it never registered (hostpin's block):
 * the driver's answer for pageable memory, and hostpin's registration
 * stays (invariant 14). */
static void drop(void)
{
	CHECK(R.cudaSetDevice(0) == 0);
	char *p = malloc(8 * MB);
	memset(p, 1, 8 * MB);
	CHECK(R.cudaHostUnregister(p) == 713);
	CHECK(cu_unreg(p + 4 * MB) == 713);
	if (hp)
		CHECK(registered(p) && cu_is_registered(p, 8 * MB));
	free(p);
}

/* What the driver answers about memory hostpin registered is what it
 * answers for pageable memory (invariant 14), however the query is found;
 * the program's own registrations and cudaHostAlloc memory it sees. */
typedef int (*attr1_t)(void *, int, dptr);
typedef int (*attrs_t)(unsigned, int *, void **, dptr);
typedef int (*hflags_t)(unsigned *, void *);
typedef int (*hdevp_t)(dptr *, void *, unsigned);
static int looks_pageable(void *const fns[4], const void *q)
{
	unsigned t = 99, f = 99, ty = 7;
	dptr dp = 7, d = 7;
	void *hpp = (void *)7;
	int ord = 7, at[4] = {2, 3, 4, 9};
	void *data[4] = {&ty, &dp, &hpp, &ord};
	return ((attr1_t)fns[0])(&t, 2, (dptr)(uintptr_t)q) == 1 && t == 99 &&
	       ((attrs_t)fns[1])(4, at, data, (dptr)(uintptr_t)q) == 0 &&
	       ty == 0 && dp == 0 && hpp == NULL && ord == -2 &&
	       ((hflags_t)fns[2])(&f, (void *)q) == 1 &&
	       ((hdevp_t)fns[3])(&d, (void *)q, 0) == 1;
}
static int looks_pinned(void *const fns[4], const void *q)
{
	unsigned t = 0, f = 99;
	dptr d = 0;
	return ((attr1_t)fns[0])(&t, 2, (dptr)(uintptr_t)q) == 0 && t == 1 &&
	       ((hflags_t)fns[2])(&f, (void *)q) == 0 &&
	       ((hdevp_t)fns[3])(&d, (void *)q, 0) == 0 && d == (dptr)(uintptr_t)q;
}
static void invisible(void)
{
	CHECK(R.cudaSetDevice(0) == 0);
	static const char *names[4] = {"cuPointerGetAttribute",
				       "cuPointerGetAttributes",
				       "cuMemHostGetFlags",
				       "cuMemHostGetDevicePointer"};
	void *ways[3][4];
	int nways = 0;
	for (int i = 0; i < 4; i++) {
		/* dlsym on the driver's handle; cuGetProcAddress */
		ways[0][i] = dlsym(libcuda(), i == 3 ? "cuMemHostGetDevicePointer_v2" : names[i]);
		ways[1][i] = by_gpa(names[i], 0);
		ways[2][i] = LINKED ? linked_sym(i == 3 ? "cuMemHostGetDevicePointer_v2" : names[i]) : NULL;
		CHECK(ways[0][i] && ways[1][i]);
	}
	nways = LINKED ? 3 : 2;
	size_t n = 16 * MB;
	char *p = malloc(n);
	memset(p, 3, n);
	if (hp)
		CHECK(registered(p) && cu_is_registered(p, n));
	for (int w = 0; w < nways; w++)
		CHECK(looks_pageable(ways[w], p) && looks_pageable(ways[w], p + n / 2 + 5));
	/* the program's own registration of it is the program's to see */
	CHECK(cu_reg(p, n, 0) == 0);
	for (int w = 0; w < nways; w++)
		CHECK(looks_pinned(ways[w], p));
	CHECK(cu_unreg(p) == 0);
	for (int w = 0; w < nways; w++)
		CHECK(looks_pageable(ways[w], p));
	free(p);
	/* cudaHostAlloc memory is the runtime's pinned memory */
	void *h;
	CHECK(R.cudaHostAlloc(&h, 8 * MB, 0) == 0);
	for (int w = 0; w < nways; w++)
		CHECK(looks_pinned(ways[w], h));
}

/* DeepSpeed's native pinned-memory backend: posix_memalign, mlock, the
 * program's own registration, copies, unregistration, free; again at the
 * same address.  hostpin registers none of it (runner: the fake's log). */
static void dsloop(void)
{
	CHECK(R.cudaSetDevice(0) == 0);
	size_t n = 64 * MB;
	void *d = dev(n, 0);
	for (int round = 0; round < 5; round++) {
		void *p = NULL;
		CHECK(posix_memalign(&p, 4096, n) == 0);
		CHECK(mlock(p, n) == 0);
		CHECK(R.cudaHostRegister(p, n, 0) == 0);
		for (int i = 0; i < 3; i++) {
			memset(p, round * 3 + i, n);
			CHECK(R.cudaMemcpyAsync(d, p, n, H2D, NULL) == 0);
			R.cudaDeviceSynchronize();
		}
		CHECK(R.cudaHostUnregister(p) == 0);
		munlock(p, n);
		free(p);
	}
}

/* An async copy from a registered block inside CUDA graph capture: the
 * HOSTPIN_COPY=sync wait must not happen there (it would invalidate the
 * capture). */
static void capture(void)
{
	CHECK(R.cudaSetDevice(0) == 0);
	cudaStream_t s;
	CHECK(R.cudaStreamCreate(&s) == 0);
	void *d = dev(8 * MB, 0);
	char *p = malloc(8 * MB);
	memset(p, 3, 8 * MB);
	if (hp)
		CHECK(registered(p));
	CHECK(R.cudaStreamBeginCapture(s, 0) == 0);
	CHECK(R.cudaMemcpyAsync(d, p, 8 * MB, H2D, s) == 0);
	void *g;
	CHECK(R.cudaStreamEndCapture(s, &g) == 0);
	CHECK(!cu_capture_broken());
	R.cudaDeviceSynchronize();
	free(p);
}

static void forked(void)
{
	CHECK(R.cudaSetDevice(0) == 0);
	tp_fork_check(hp);
}

/* An injected failure in the driver function the path reaches: the program
 * gets the driver's error, unchanged, and the next call works. */
static void fault(void)
{
	CHECK(R.cudaSetDevice(0) == 0);
	size_t n = 8 * MB;
	void *d = dev(n, 0x3c);
	char *b = malloc(n);
	memset(b, 0, n);
	if (hp)
		CHECK(registered(b));
	int e = d2h(b, d, n, NULL);
	CHECK(e == 2); /* CUDA_ERROR_OUT_OF_MEMORY, as injected */
	CHECK(d2h(b, d, n, NULL) == 0);
	CHECK(all(b, n, 0x3c));
	free(b);
}

/* Whether a block is registered once the device is active (the coverage
 * check decides): HP_EXPECT_REG=0|1. */
static void coverage(void)
{
	CHECK(R.cudaSetDevice(0) == 0);
	char *p = malloc(8 * MB);
	memset(p, 1, 8 * MB);
	int want = atoi(getenv("HP_EXPECT_REG") ? getenv("HP_EXPECT_REG") : "1");
	CHECK(registered(p) == want);
	if (want)
		CHECK(sync_semantics());
	free(p);
}

/* ---- as a plug-in (-DAS_PLUGIN): plughost opens it and calls plug_main;
 * the runtime and the driver are then in the plug-in's scope only ---- */
#ifdef AS_PLUGIN
#define main plug_main
void *plug_kept[2]; /* blocks that outlive the plug-in (plughost) */
static void keep(void)
{
	CHECK(R.cudaSetDevice(0) == 0);
	tp_plug_keep(plug_kept, hp);
}
/* Loaded again after an unload: the blocks kept are registered again. */
static void readopt(void)
{
	CHECK(R.cudaSetDevice(0) == 0);
	free(malloc(4 * MB)); /* a new block adopts the pending ones */
	tp_plug_kept(plug_kept, hp);
}
/* dlsym(RTLD_DEFAULT) from here finds the runtime in this scope, and the
 * copy it returns reaches this plug-in's own runtime. */
static void rtdefault(void)
{
	typedef cudaError_t (*cp_t)(void *, const void *, size_t, int,
				    cudaStream_t);
	cp_t cp = (cp_t)dlsym(RTLD_DEFAULT, "cudaMemcpyAsync");
	CHECK(cp != NULL);
	void *rt = dlopen(RT_SONAME, RTLD_NOW | RTLD_NOLOAD);
	CHECK(rt != NULL);
	int *copies = (int *)dlsym(rt, "fake_cudart_copies");
	CHECK(copies != NULL);
	CHECK(R.cudaSetDevice(0) == 0);
	size_t n = 4 * MB;
	void *d = dev(n, 0);
	char *b = malloc(n);
	tp_fill(b, n, 3);
	int before = *copies;
	CHECK(cp(d, b, n, H2D, NULL) == 0);
	CHECK(R.cudaMemcpyAsync(b, d, n, D2H, NULL) == 0);
	R.cudaDeviceSynchronize();
	CHECK(*copies == before + 2); /* both reached this scope's runtime */
	CHECK(tp_verify(b, n, 3));
	free(b);
	dlclose(rt);
}
#endif

/* Range shapes, refused releases, coverage and context lifetime. */
#include "cuda_ranges.h"

int main(int argc, char **argv)
{
	CHECK(argc == 2);
	hp = tp_query() != NULL && getenv("HP_EXPECT_ACTIVE") != NULL;
	const char *m = argv[1];
	if (getenv("HP_LOAD_EXTRA"))
		CHECK(dlopen(getenv("HP_LOAD_EXTRA"), RTLD_NOW | RTLD_LOCAL));
	rt_init();
	path_init();
	/* the fake driver's own test entry points */
	void *h = libcuda();
	*(void **)&cu_is_registered = dlsym(h, "fake_cuda_is_registered");
	*(void **)&cu_capture_broken = dlsym(h, "fake_cuda_capture_broken");
	*(void **)&cu_reg = dlsym(h, "cuMemHostRegister_v2");
	*(void **)&cu_unreg = dlsym(h, "cuMemHostUnregister");
	if (LINKED)
		*(void **)&cu_reg = linked_sym("cuMemHostRegister_v2"),
		*(void **)&cu_unreg = linked_sym("cuMemHostUnregister");
	CHECK(cu_is_registered && cu_capture_broken && cu_reg && cu_unreg);
#ifdef AS_PLUGIN
	dlclose(h); /* the plug-in's unload takes the driver with it */
	if (!strcmp(m, "keep")) { keep(); printf("plug %s: ok\n", m); return 0; }
	if (!strcmp(m, "readopt")) { readopt(); printf("plug %s: ok\n", m); return 0; }
	if (!strcmp(m, "rtdefault")) { rtdefault(); printf("plug %s: ok\n", m); return 0; }
#endif
	if (!strcmp(m, "adopt")) adopt();
	else if (!strcmp(m, "thread")) thread();
	else if (!strcmp(m, "sync")) { if (!sync_semantics()) { puts("cuda_prog: async semantics seen"); return 1; } }
	else if (!strcmp(m, "inflight")) inflight();
	else if (!strcmp(m, "foreign")) foreign();
	else if (!strcmp(m, "work")) work();
	else if (!strcmp(m, "fork")) forked();
	else if (!strcmp(m, "churn")) churn();
	else if (!strcmp(m, "drop")) drop();
	else if (!strcmp(m, "invisible")) invisible();
	else if (!strcmp(m, "dsloop")) dsloop();
	else if (!strcmp(m, "capture")) capture();
	else if (!strcmp(m, "noinit")) tp_pending_only(hp);
	else if (!strcmp(m, "mlock_fallback")) mlock_fallback();
	else if (!strcmp(m, "fault")) fault();
	else if (!strcmp(m, "coverage")) coverage();
	else if (ranges_mode(m)) ;
	else return 2;
	printf("cuda_prog %s: ok\n", m);
	return 0;
}
