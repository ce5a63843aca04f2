/* A fake CUDA runtime over the fake driver, built as libcudart.so.12 and
 * also compiled into a test program as a static runtime.  Like the real
 * runtime it never calls the driver through its symbols: at its first call
 * it dlopens libcuda.so.1, looks up cuGetProcAddress_v2 on that handle, and
 * asks it for every driver entry point it uses.  Its streams and events are
 * the driver's.  FAKE_STATIC: hidden symbols, as in an executable that
 * links cudart_static. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#ifdef FAKE_STATIC
#define API __attribute__((visibility("hidden")))
#else
#define API __attribute__((visibility("default")))
#endif

typedef int cudaError_t;
typedef int CUresult;
typedef struct CUctx_st *CUcontext;
typedef struct CUstream_st *stream_t;
typedef struct event *event_t;
typedef unsigned long long dptr;
enum { H2H = 0, H2D = 1, D2H = 2, D2D = 3, DEFAULT = 4 };
#define VERSION 12080

static struct {
	CUresult (*gpa)(const char *, void **, int, unsigned long long, int *);
	CUresult (*init)(unsigned);
	CUresult (*retain)(CUcontext *, int);
	CUresult (*set)(CUcontext);
	CUresult (*get)(CUcontext *);
	CUresult (*ctxsync)(void);
	CUresult (*alloc)(dptr *, size_t);
	CUresult (*reg)(void *, size_t, unsigned);
	CUresult (*unreg)(void *);
	CUresult (*screate)(stream_t *, unsigned);
	CUresult (*ssync)(stream_t);
	CUresult (*sbegin)(stream_t, int);
	CUresult (*send)(stream_t, void **);
	CUresult (*sbegin_tg)(stream_t, void *, const void *, const void *,
			      size_t, int);
	CUresult (*scap)(stream_t, int *);
	CUresult (*ecreate)(event_t *, unsigned);
	CUresult (*erecord)(event_t, stream_t);
	CUresult (*esync)(event_t);
	CUresult (*edestroy)(event_t);
	/* copies: [0] legacy stream form, [1] per-thread form */
	CUresult (*htod[2])(dptr, const void *, size_t, stream_t);
	CUresult (*dtoh[2])(void *, dptr, size_t, stream_t);
	CUresult (*any[2])(dptr, dptr, size_t, stream_t);
	CUresult (*m2d[2])(const void *, stream_t);
	CUresult (*m3d[2])(const void *, stream_t);
	CUresult (*batch[2])(dptr *, dptr *, size_t *, size_t, void *, size_t *,
			     size_t, size_t *, stream_t);
	CUresult (*batch3d[2])(size_t, void *, size_t *, unsigned long long,
			       stream_t);
	CUresult (*m3dpeer[2])(const void *, stream_t);
	CUresult (*preset)(int);
	CUresult (*prelease)(int);
	/* synchronous copies: [1] the _ptds form */
	CUresult (*shtod[2])(dptr, const void *, size_t);
	CUresult (*sdtoh[2])(void *, dptr, size_t);
	CUresult (*sany[2])(dptr, dptr, size_t);
	CUresult (*s2d[2])(const void *);
	CUresult (*s3d[2])(const void *);
	CUresult (*a3desc)(void *, void *);
} d;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int cur_dev = -1;
static CUcontext dev_ctx;
static pthread_mutex_t init_mu = PTHREAD_MUTEX_INITIALIZER;

static void *get(const char *name, int ptsz)
{
	void *f = NULL;
	if (d.gpa(name, &f, VERSION, ptsz ? 2 : 1, NULL) != 0 || f == NULL) {
		fprintf(stderr, "fake cudart: no %s from the driver\n", name);
		abort();
	}
	return f;
}

static void *drv_handle;
/* A runtime that is unloaded lets its driver go, as the real one does. */
__attribute__((destructor)) static void unload(void)
{
	if (drv_handle)
		dlclose(drv_handle);
}

static void load(void)
{
	void *h = drv_handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (h == NULL) {
		fprintf(stderr, "fake cudart: %s\n", dlerror());
		abort();
	}
	*(void **)&d.gpa = dlsym(h, "cuGetProcAddress_v2");
	if (d.gpa == NULL)
		abort();
#define G(f, n) *(void **)&d.f = get(n, 0)
#define G2(f, n) *(void **)&d.f[0] = get(n, 0), *(void **)&d.f[1] = get(n, 1)
	G(init, "cuInit"); G(retain, "cuDevicePrimaryCtxRetain");
	G(set, "cuCtxSetCurrent"); G(get, "cuCtxGetCurrent");
	G(ctxsync, "cuCtxSynchronize"); G(alloc, "cuMemAlloc");
	G(reg, "cuMemHostRegister"); G(unreg, "cuMemHostUnregister");
	G(screate, "cuStreamCreate"); G(ssync, "cuStreamSynchronize");
	G(sbegin, "cuStreamBeginCapture"); G(send, "cuStreamEndCapture");
	G(sbegin_tg, "cuStreamBeginCaptureToGraph");
	G(scap, "cuStreamIsCapturing"); G(ecreate, "cuEventCreate");
	G(erecord, "cuEventRecord"); G(esync, "cuEventSynchronize");
	G(edestroy, "cuEventDestroy");
	G(a3desc, "cuArray3DGetDescriptor");
	G2(htod, "cuMemcpyHtoDAsync"); G2(dtoh, "cuMemcpyDtoHAsync");
	G2(any, "cuMemcpyAsync"); G2(m2d, "cuMemcpy2DAsync");
	G2(m3d, "cuMemcpy3DAsync"); G2(batch, "cuMemcpyBatchAsync");
	G2(batch3d, "cuMemcpy3DBatchAsync");
	G2(m3dpeer, "cuMemcpy3DPeerAsync");
	G(preset, "cuDevicePrimaryCtxReset"); G(prelease, "cuDevicePrimaryCtxRelease");
	G2(shtod, "cuMemcpyHtoD"); G2(sdtoh, "cuMemcpyDtoH");
	G2(sany, "cuMemcpy"); G2(s2d, "cuMemcpy2D"); G2(s3d, "cuMemcpy3D");
#undef G
#undef G2
}

static void ctx(void)
{
	pthread_once(&once, load);
	CUcontext c = NULL;
	d.get(&c);
	if (c == NULL && dev_ctx)
		d.set(dev_ctx);
}

API cudaError_t cudaSetDevice(int dev)
{
	pthread_once(&once, load);
	pthread_mutex_lock(&init_mu);
	if (cur_dev != dev) {
		d.init(0);
		d.retain(&dev_ctx, dev);
		cur_dev = dev;
	}
	pthread_mutex_unlock(&init_mu);
	return d.set(dev_ctx);
}

API cudaError_t cudaRuntimeGetVersion(int *v)
{
	*v = VERSION;
	return 0;
}

API cudaError_t cudaMalloc(void **p, size_t n)
{
	ctx();
	dptr x;
	cudaError_t e = d.alloc(&x, n);
	*p = (void *)(uintptr_t)x;
	return e;
}

API cudaError_t cudaFree(void *p)
{
	(void)p;
	return 0;
}

API cudaError_t cudaStreamCreate(stream_t *s)
{
	ctx();
	return d.screate(s, 0);
}

API cudaError_t cudaStreamSynchronize(stream_t s)
{
	ctx();
	return d.ssync(s);
}

API cudaError_t cudaStreamBeginCapture(stream_t s, int mode)
{
	ctx();
	return d.sbegin(s, mode);
}

API cudaError_t cudaStreamBeginCaptureToGraph(stream_t s, void *g,
					      const void *deps,
					      const void *data, size_t n,
					      int mode)
{
	ctx();
	return d.sbegin_tg(s, g, deps, data, n, mode);
}

API cudaError_t cudaStreamEndCapture(stream_t s, void **g)
{
	return d.send(s, g);
}

API cudaError_t cudaStreamIsCapturing(stream_t s, int *st)
{
	ctx();
	return d.scap(s, st);
}

API cudaError_t cudaDeviceSynchronize(void)
{
	ctx();
	return d.ctxsync();
}

static cudaError_t copy(void *dst, const void *src, size_t n, int kind,
			stream_t s, int pt)
{
	ctx();
	if (kind == H2D)
		return d.htod[pt]((dptr)(uintptr_t)dst, src, n, s);
	if (kind == D2H)
		return d.dtoh[pt](dst, (dptr)(uintptr_t)src, n, s);
	return d.any[pt]((dptr)(uintptr_t)dst, (dptr)(uintptr_t)src, n, s);
}

/* Copies this runtime served: which of two runtimes a call reached. */
API int fake_cudart_copies;
API cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n, int k,
				stream_t s)
{
	fake_cudart_copies++;
	return copy(dst, src, n, k, s, 0);
}

API cudaError_t cudaMemcpyAsync_ptsz(void *dst, const void *src, size_t n,
				     int k, stream_t s)
{
	return copy(dst, src, n, k, s, 1);
}

/* Synchronous copies: through the driver's synchronous entry points. */
static cudaError_t scopy(void *dst, const void *src, size_t n, int kind,
			 int pt)
{
	ctx();
	if (kind == H2D)
		return d.shtod[pt]((dptr)(uintptr_t)dst, src, n);
	if (kind == D2H)
		return d.sdtoh[pt](dst, (dptr)(uintptr_t)src, n);
	return d.sany[pt]((dptr)(uintptr_t)dst, (dptr)(uintptr_t)src, n);
}

API cudaError_t cudaMemcpy(void *dst, const void *src, size_t n, int kind)
{
	return scopy(dst, src, n, kind, 0);
}

API cudaError_t cudaMemcpy_ptds(void *dst, const void *src, size_t n,
				int kind)
{
	return scopy(dst, src, n, kind, 1);
}

API cudaError_t cudaMemcpyToSymbol(const void *sym, const void *src, size_t n,
				   size_t off, int kind)
{
	return scopy((char *)sym + off, src, n, kind, 0);
}

API cudaError_t cudaMemcpyToSymbol_ptds(const void *sym, const void *src,
					size_t n, size_t off, int kind)
{
	return scopy((char *)sym + off, src, n, kind, 1);
}

API cudaError_t cudaMemcpyFromSymbol(void *dst, const void *sym, size_t n,
				     size_t off, int kind)
{
	return scopy(dst, (const char *)sym + off, n, kind, 0);
}

API cudaError_t cudaMemcpyFromSymbol_ptds(void *dst, const void *sym,
					  size_t n, size_t off, int kind)
{
	return scopy(dst, (const char *)sym + off, n, kind, 1);
}

/* The driver's 2D/3D descriptors, as cuda.h lays them out. */
typedef struct {
	size_t sx, sy;
	int st;
	const void *sh;
	dptr sd;
	void *sa;
	size_t sp;
	size_t dx, dy;
	int dt;
	void *dh;
	dptr dd;
	void *da;
	size_t dp;
	size_t w, h;
} M2D;
static int mtype(int kind, int src)
{
	if (kind == DEFAULT)
		return 4;
	if (src)
		return kind == H2D || kind == H2H ? 1 : 2;
	return kind == D2H || kind == H2H ? 1 : 2;
}

/* A 2D copy through the driver: async on stream s, or sync (the s2d forms). */
static cudaError_t copy2d(void *dst, size_t dp, const void *src, size_t sp,
			  size_t w, size_t h, int kind, stream_t s, int pt,
			  int sync)
{
	ctx();
	M2D m = {0};
	m.st = mtype(kind, 1), m.dt = mtype(kind, 0);
	m.sh = src, m.sd = (dptr)(uintptr_t)src, m.sp = sp;
	m.dh = dst, m.dd = (dptr)(uintptr_t)dst, m.dp = dp;
	m.w = w, m.h = h;
	return sync ? d.s2d[pt](&m) : d.m2d[pt](&m, s);
}

API cudaError_t cudaMemcpy2D(void *dst, size_t dp, const void *src, size_t sp,
			     size_t w, size_t h, int kind)
{
	return copy2d(dst, dp, src, sp, w, h, kind, NULL, 0, 1);
}

API cudaError_t cudaMemcpy2D_ptds(void *dst, size_t dp, const void *src,
				  size_t sp, size_t w, size_t h, int kind)
{
	return copy2d(dst, dp, src, sp, w, h, kind, NULL, 1, 1);
}

API cudaError_t cudaMemcpy2DAsync(void *dst, size_t dp, const void *src,
				  size_t sp, size_t w, size_t h, int kind,
				  stream_t s)
{
	return copy2d(dst, dp, src, sp, w, h, kind, s, 0, 0);
}

API cudaError_t cudaMemcpy2DAsync_ptsz(void *dst, size_t dp, const void *src,
				       size_t sp, size_t w, size_t h, int kind,
				       stream_t s)
{
	return copy2d(dst, dp, src, sp, w, h, kind, s, 1, 0);
}

struct pitched {
	void *ptr;
	size_t pitch, xsize, ysize;
};
struct parms3d {
	void *srcArray;
	size_t spos[3];
	struct pitched src;
	void *dstArray;
	size_t dpos[3];
	struct pitched dst;
	size_t ext[3];
	int kind;
};
typedef struct {
	size_t sx, sy, sz, slod;
	int st;
	const void *sh;
	dptr sd;
	void *sa, *r0;
	size_t sp, sheight;
	size_t dx, dy, dz, dlod;
	int dt;
	void *dh;
	dptr dd;
	void *da, *r1;
	size_t dp, dheight;
	size_t w, h, depth;
} M3D;

static cudaError_t copy3d_(const struct parms3d *p, stream_t s, int pt,
			   int sync);
static cudaError_t copy3d(const struct parms3d *p, stream_t s, int pt)
{
	return copy3d_(p, s, pt, 0);
}

API cudaError_t cudaMemcpy3D(const struct parms3d *p)
{
	return copy3d_(p, NULL, 0, 1);
}

API cudaError_t cudaMemcpy3D_ptds(const struct parms3d *p)
{
	return copy3d_(p, NULL, 1, 1);
}

/* sync: the driver's synchronous cuMemcpy3D */
static cudaError_t copy3d_(const struct parms3d *p, stream_t s, int pt,
			   int sync)
{
	ctx();
	M3D m = {0};
	m.st = mtype(p->kind, 1), m.dt = mtype(p->kind, 0);
	m.sh = p->src.ptr, m.sd = (dptr)(uintptr_t)p->src.ptr;
	m.sp = p->src.pitch, m.sheight = p->src.ysize;
	m.sx = p->spos[0], m.sy = p->spos[1], m.sz = p->spos[2];
	m.dh = p->dst.ptr, m.dd = (dptr)(uintptr_t)p->dst.ptr;
	m.dp = p->dst.pitch, m.dheight = p->dst.ysize;
	m.dx = p->dpos[0], m.dy = p->dpos[1], m.dz = p->dpos[2];
	m.w = p->ext[0], m.h = p->ext[1], m.depth = p->ext[2];
	/* an array side: the extent's width and its position in its
	 * elements (a channel's bytes times the channels), as the driver
	 * describes it */
	void *arr = p->srcArray ? p->srcArray : p->dstArray;
	if (arr) {
		struct { size_t w, h, d; int fmt; unsigned ch, fl; } a;
		if (d.a3desc(&a, arr) != 0)
			return 1; /* cudaErrorInvalidValue */
		size_t es = (a.fmt == 0x02 || a.fmt == 0x09 || a.fmt == 0x10 ? 2
			     : a.fmt == 0x03 || a.fmt == 0x0a || a.fmt == 0x20 ? 4
										: 1) *
			    (a.ch ? a.ch : 1);
		m.w *= es;
		if (p->srcArray)
			m.st = 3, m.sa = p->srcArray, m.sx *= es;
		if (p->dstArray)
			m.dt = 3, m.da = p->dstArray, m.dx *= es;
	}
	return sync ? d.s3d[pt](&m) : d.m3d[pt](&m, s);
}

API cudaError_t cudaMemcpy3DAsync(const struct parms3d *p, stream_t s)
{
	return copy3d(p, s, 0);
}

API cudaError_t cudaMemcpy3DAsync_ptsz(const struct parms3d *p, stream_t s)
{
	return copy3d(p, s, 1);
}

/* Symbols are device pointers in this fake. */
API cudaError_t cudaMemcpyToSymbolAsync(const void *sym, const void *src,
					size_t n, size_t off, int kind,
					stream_t s)
{
	return copy((char *)sym + off, src, n, kind, s, 0);
}

API cudaError_t cudaMemcpyToSymbolAsync_ptsz(const void *sym, const void *src,
					     size_t n, size_t off, int kind,
					     stream_t s)
{
	return copy((char *)sym + off, src, n, kind, s, 1);
}

API cudaError_t cudaMemcpyFromSymbolAsync(void *dst, const void *sym,
					  size_t n, size_t off, int kind,
					  stream_t s)
{
	return copy(dst, (const char *)sym + off, n, kind, s, 0);
}

API cudaError_t cudaMemcpyFromSymbolAsync_ptsz(void *dst, const void *sym,
					       size_t n, size_t off, int kind,
					       stream_t s)
{
	return copy(dst, (const char *)sym + off, n, kind, s, 1);
}

/* CUDA 12.8's form: failIdx before the stream. */
API cudaError_t cudaMemcpyBatchAsync(void **dsts, void **srcs, size_t *sizes,
				     size_t n, void *at, size_t *ai,
				     size_t na, size_t *fail, stream_t s)
{
	ctx();
	return d.batch[0]((dptr *)dsts, (dptr *)srcs, sizes, n, at, ai, na,
			  fail, s);
}

API cudaError_t cudaMemcpy3DBatchAsync(size_t n, void *ops, size_t *fail,
				       unsigned long long fl, stream_t s)
{
	ctx();
	return d.batch3d[0](n, ops, fail, fl, s);
}

API cudaError_t cudaEventCreateWithFlags(event_t *e, unsigned flags)
{
	ctx();
	return d.ecreate(e, flags);
}

API cudaError_t cudaEventRecord(event_t e, stream_t s)
{
	return d.erecord(e, s);
}

API cudaError_t cudaEventSynchronize(event_t e) { return d.esync(e); }
API cudaError_t cudaEventDestroy(event_t e) { return d.edestroy(e); }

API cudaError_t cudaHostRegister(void *p, size_t n, unsigned flags)
{
	ctx();
	return d.reg(p, n, flags);
}

API cudaError_t cudaHostUnregister(void *p)
{
	ctx();
	return d.unreg(p);
}

API cudaError_t cudaHostAlloc(void **p, size_t n, unsigned flags)
{
	ctx();
	/* Like the real runtime: its own mapping (through libc's mmap, which
	 * hostpin sees and must leave alone), then registered. */
	*p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		  -1, 0);
	if (*p == MAP_FAILED)
		return 2;
	return d.reg(*p, n, flags | 1);
}

API cudaError_t cudaFreeHost(void *p) { return d.unreg(p); }

API cudaError_t cudaGetDriverEntryPoint(const char *sym, void **fn,
					unsigned long long flags, int *st)
{
	pthread_once(&once, load);
	return d.gpa(sym, fn, VERSION, flags, st);
}

API cudaError_t cudaGetDriverEntryPointByVersion(const char *sym, void **fn,
						 unsigned v,
						 unsigned long long flags,
						 int *st)
{
	pthread_once(&once, load);
	return d.gpa(sym, fn, (int)v, flags, st);
}

/* cudaMemcpy3DPeerParms: no kind; the driver's peer descriptor says which
 * side is host memory (unified addressing: the fake's device memory is
 * known to the driver, anything else is host). */
struct peer3d {
	void *srcArray;
	size_t spos[3];
	struct pitched src;
	int srcDevice;
	void *dstArray;
	size_t dpos[3];
	struct pitched dst;
	int dstDevice;
	size_t ext[3];
};

static cudaError_t copy3dpeer(const struct peer3d *p, stream_t s, int pt)
{
	ctx();
	M3D m = {0};
	m.st = m.dt = 4; /* unified */
	m.sh = p->src.ptr, m.sd = (dptr)(uintptr_t)p->src.ptr;
	m.sp = p->src.pitch, m.sheight = p->src.ysize;
	m.sx = p->spos[0], m.sy = p->spos[1], m.sz = p->spos[2];
	m.dh = p->dst.ptr, m.dd = (dptr)(uintptr_t)p->dst.ptr;
	m.dp = p->dst.pitch, m.dheight = p->dst.ysize;
	m.dx = p->dpos[0], m.dy = p->dpos[1], m.dz = p->dpos[2];
	m.w = p->ext[0], m.h = p->ext[1], m.depth = p->ext[2];
	return d.m3dpeer[pt](&m, s);
}

API cudaError_t cudaMemcpy3DPeerAsync(const struct peer3d *p, stream_t s)
{
	return copy3dpeer(p, s, 0);
}

API cudaError_t cudaMemcpy3DPeerAsync_ptsz(const struct peer3d *p, stream_t s)
{
	return copy3dpeer(p, s, 1);
}

API cudaError_t cudaGetDevice(int *dev)
{
	*dev = cur_dev < 0 ? 0 : cur_dev;
	return 0;
}

/* Destroys the current device's primary context (its registrations die
 * with it) and drops the runtime's reference: the next cudaSetDevice
 * creates it again. */
API cudaError_t cudaDeviceReset(void)
{
	pthread_once(&once, load);
	pthread_mutex_lock(&init_mu);
	int dev = cur_dev < 0 ? 0 : cur_dev;
	CUresult r = d.preset(dev);
	if (r == 0 && cur_dev >= 0)
		r = d.prelease(dev);
	cur_dev = -1;
	dev_ctx = NULL;
	pthread_mutex_unlock(&init_mu);
	d.set(NULL);
	return r;
}
