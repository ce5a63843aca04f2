/* Hooks on the CUDA runtime's copy (async and sync), registration, reset,
 * graph capture and driver-lookup entry points, where the runtime is
 * dynamically linked.  The runtime calls the driver underneath; the
 * driver's hooks then pass straight through (hp_hook_enter), so each copy
 * gets one policy decision, here.
 *
 * Each entry point is written out below by its own name, calling one body
 * per kind of entry point with the definition its caller would have
 * reached without hostpin (resolve.h).  hooks_cudart.def lists the names
 * once more, for the slots and the table of lookups on a runtime's handle
 * (hooks_dlsym.c). */
#include <string.h>

#include "../hooks.h"
#include "../base/resolve.h"
#include "../copy/stage.h"

/* Per entry point: next_NAME, where its calls go on. */
#define HP_CUDART(name) static hp_fwd_t next_##name = HP_FWD_INIT(#name);
#include "hooks_cudart.def"
#undef HP_CUDART
static hp_fwd_t next_cudaGetDevice = HP_FWD_INIT("cudaGetDevice");

/* What the exported NAME calls: the definition its caller would have
 * reached without hostpin. */
#define NEXT(name) HP_FWD(next_##name)


static void host_kind(hp_copy_t *c, int kind, const void *dst,
		      const void *src, size_t n)
{
	switch (kind) {
	case HP_cudaMemcpyHostToDevice: hp_copy_host(c, src, n); break;
	case HP_cudaMemcpyDeviceToHost: hp_copy_host(c, dst, n); break;
	case HP_cudaMemcpyDefault:
	case HP_cudaMemcpyHostToHost:
		hp_copy_host(c, src, n);
		hp_copy_host(c, dst, n);
		break;
	default: break;
	}
}

/* A pitched host side: every byte from its first row to its last. */
static void host_pitched(hp_copy_t *c, const void *p, size_t pitch,
			 size_t ysize, size_t w, size_t h, size_t d)
{
	if (p && w && h && d)
		hp_copy_host(c, p, ((d - 1) * ysize + (h - 1)) * pitch + w);
}

static int kind_src_host(int k)
{
	return k == HP_cudaMemcpyHostToDevice || k == HP_cudaMemcpyHostToHost ||
	       k == HP_cudaMemcpyDefault;
}

static int kind_dst_host(int k)
{
	return k == HP_cudaMemcpyDeviceToHost || k == HP_cudaMemcpyHostToHost ||
	       k == HP_cudaMemcpyDefault;
}

static void host_kind_2d(hp_copy_t *c, int kind, const void *dst, size_t dp,
			 const void *src, size_t sp, size_t w, size_t h)
{
	if (kind_src_host(kind))
		host_pitched(c, src, sp, 0, w, h, 1);
	if (kind_dst_host(kind))
		host_pitched(c, dst, dp, 0, w, h, 1);
}

static const char *pos3d(const struct hp_cudaPitchedPtr *p, size_t x,
			 size_t y, size_t z)
{
	return p->ptr ? (const char *)p->ptr + (z * p->ysize + y) * p->pitch + x
		      : NULL;
}

static void host_3dparms(hp_copy_t *c, const hp_cudaMemcpy3DParms *p)
{
	if (p == NULL)
		return;
	size_t w = p->extent.width, h = p->extent.height, d = p->extent.depth;
	if (!p->srcArray && kind_src_host(p->kind))
		host_pitched(c, pos3d(&p->srcPtr, p->srcPos.x, p->srcPos.y,
				      p->srcPos.z),
			     p->srcPtr.pitch, p->srcPtr.ysize, w, h, d);
	if (!p->dstArray && kind_dst_host(p->kind))
		host_pitched(c, pos3d(&p->dstPtr, p->dstPos.x, p->dstPos.y,
				      p->dstPos.z),
			     p->dstPtr.pitch, p->dstPtr.ysize, w, h, d);
}

/* A 3D peer copy has no kind: either side may be host memory (unified
 * addressing), so both are looked up. */
static void host_3dpeer(hp_copy_t *c, const hp_cudaMemcpy3DPeerParms *p)
{
	if (p == NULL)
		return;
	size_t w = p->extent.width, h = p->extent.height, d = p->extent.depth;
	if (!p->srcArray)
		host_pitched(c, pos3d(&p->srcPtr, p->srcPos.x, p->srcPos.y,
				      p->srcPos.z),
			     p->srcPtr.pitch, p->srcPtr.ysize, w, h, d);
	if (!p->dstArray)
		host_pitched(c, pos3d(&p->dstPtr, p->dstPos.x, p->dstPos.y,
				      p->dstPos.z),
			     p->dstPtr.pitch, p->dstPtr.ysize, w, h, d);
}

static void host_batch(hp_copy_t *c, void *const *dsts,
		       const void *const *srcs, const size_t *sizes,
		       size_t count)
{
	for (size_t i = 0; dsts && srcs && sizes && i < count; i++) {
		hp_copy_host(c, srcs[i], sizes[i]);
		hp_copy_host(c, dsts[i], sizes[i]);
	}
}

/* The runtime's version, asked of the runtime the caller at ra reaches:
 * the batch copies changed shape in CUDA 13 under the same names (12.8
 * passes failIdx before the stream), and cudaGetDriverEntryPoint asks the
 * driver at the runtime's own version. */
static int rt_version(const void *ra)
{
	static _Atomic int v;
	static hp_fwd_t next_cudaRuntimeGetVersion =
	    HP_FWD_INIT("cudaRuntimeGetVersion");
	int r = atomic_load_explicit(&v, memory_order_relaxed);
	if (r == 0) {
		hp_cudaRuntimeGetVersion_t f = (hp_cudaRuntimeGetVersion_t)hp_fwd(
		    &next_cudaRuntimeGetVersion, ra);
		if (f == NULL || f(&r) != 0 || r <= 0)
			r = 12080; /* batch copies exist since 12.8 */
		atomic_store_explicit(&v, r, memory_order_relaxed);
	}
	return r;
}

/* ---- the bodies ----
 * f: the function to call; ptsz: the entry point is the per-thread-stream
 * form (stream 0 is the per-thread stream); ra: the exported hook's caller.
 * A copy body is hooks.h's HP_COPY_BODY: the host sides, the call, then
 * the end of the copy: an asynchronous copy waits or is tracked
 * (hp_copy_end), a synchronous one is counted towards registration
 * (HOSTPIN_PIN_AFTER), with no wait (hp_copy_sync_end). */
#define ASYNC_END hp_copy_end(&c_, s, ptsz, e_ == 0)
#define SYNC_END hp_copy_sync_end(&c_, e_ == 0)

/* Staged copies (stage.c), for the kinds that name their direction: the
 * DMA goes through the driver on the program's stream (the runtime's
 * streams are the driver's).  A driver error is not in the runtime's
 * terms: the whole copy then goes to the runtime as it is (it is
 * idempotent, and queued after what was staged), which answers in its
 * own terms. */
static int stage_kind(const hp_copy_t *c, void *dst, const void *src,
		      size_t n, int kind, hp_cudaStream_t s, int ptsz,
		      int sync)
{
	int r = 0, k = 0;
	if (kind == HP_cudaMemcpyHostToDevice)
		k = hp_stage_htod(c, (uintptr_t)dst, src, n, s, ptsz, sync, &r);
	else if (kind == HP_cudaMemcpyDeviceToHost)
		k = hp_stage_dtoh(c, dst, (uintptr_t)src, n, s, ptsz, sync, &r);
	return r == 0 ? k : 0;
}
/* CUDA 13.2's copy with attributes names no direction: asked of the
 * driver (copy_dir.c).  Errors as stage_kind. */
static int stage_unified(const hp_copy_t *c, void *dst, const void *src,
			 size_t n, hp_cudaStream_t s, int ptsz)
{
	int r = 0, k = hp_stage_unified(c, (uintptr_t)dst, (uintptr_t)src, n,
					s, ptsz, 0, &r);
	return r == 0 ? k : 0;
}
/* CALL: stage_kind or stage_unified.  2: went direct in parts through a
 * registered block: ended as a copy through registered memory (END) */
#define STAGED_BY(CALL, END)                                                  \
	int sd_ = (CALL);                                                     \
	if (sd_ == 2) {                                                       \
		hp_cudaError_t e_ = 0;                                        \
		END;                                                          \
		return 0;                                                     \
	}                                                                     \
	if (sd_) {                                                            \
		hp_copy_sync_end(&c_, 1);                                     \
		return 0;                                                     \
	}
#define STAGED_KIND(sync, END)                                                \
	STAGED_BY(stage_kind(&c_, dst, src, n, kind, s, ptsz, sync), END)

/* A 2D copy whose kind names its direction (stage.c): its descriptor in
 * the driver's terms, host side HOST and device side DEVICE.  Errors as
 * stage_kind. */
static int stage_kind_2d(const hp_copy_t *c, void *dst, size_t dp,
			 const void *src, size_t sp, size_t w, size_t h,
			 int kind, hp_cudaStream_t s, int ptsz, int sync)
{
	hp_CUDA_MEMCPY2D q;
	memset(&q, 0, sizeof(q));
	q.srcPitch = sp, q.dstPitch = dp, q.WidthInBytes = w, q.Height = h;
	if (kind == HP_cudaMemcpyHostToDevice) {
		q.srcMemoryType = HP_CU_MEMORYTYPE_HOST, q.srcHost = src;
		q.dstMemoryType = HP_CU_MEMORYTYPE_DEVICE;
		q.dstDevice = (hp_CUdeviceptr)(uintptr_t)dst;
	} else if (kind == HP_cudaMemcpyDeviceToHost) {
		q.srcMemoryType = HP_CU_MEMORYTYPE_DEVICE;
		q.srcDevice = (hp_CUdeviceptr)(uintptr_t)src;
		q.dstMemoryType = HP_CU_MEMORYTYPE_HOST, q.dstHost = dst;
	} else {
		return 0;
	}
	int r = 0, k = hp_stage_2d(c, &q, s, ptsz, sync, &r);
	return r == 0 ? k : 0;
}
#define STAGED_KIND_2D(sync)                                                  \
	if (stage_kind_2d(&c_, dst, dp, src, sp, w, h, kind, s, ptsz, sync)) { \
		hp_copy_sync_end(&c_, 1);                                     \
		return 0;                                                     \
	}

/* A 3D copy whose kind names its direction, between pitched pointers (no
 * array): the driver's descriptor (positions and the extent's width in
 * bytes, a pitched pointer's ysize its slice height), staged slice by
 * slice (stage.c).  Errors as stage_kind. */
static int stage_kind_3d(const hp_copy_t *c, const hp_cudaMemcpy3DParms *p,
			 hp_cudaStream_t s, int ptsz, int sync)
{
	if (p == NULL || p->srcArray || p->dstArray ||
	    (p->kind != HP_cudaMemcpyHostToDevice &&
	     p->kind != HP_cudaMemcpyDeviceToHost))
		return 0;
	int htod = p->kind == HP_cudaMemcpyHostToDevice;
	hp_CUDA_MEMCPY3D q;
	memset(&q, 0, sizeof(q));
	q.srcXInBytes = p->srcPos.x, q.srcY = p->srcPos.y, q.srcZ = p->srcPos.z;
	q.srcPitch = p->srcPtr.pitch, q.srcHeight = p->srcPtr.ysize;
	q.dstXInBytes = p->dstPos.x, q.dstY = p->dstPos.y, q.dstZ = p->dstPos.z;
	q.dstPitch = p->dstPtr.pitch, q.dstHeight = p->dstPtr.ysize;
	q.WidthInBytes = p->extent.width, q.Height = p->extent.height;
	q.Depth = p->extent.depth;
	q.srcMemoryType = htod ? HP_CU_MEMORYTYPE_HOST : HP_CU_MEMORYTYPE_DEVICE;
	q.dstMemoryType = htod ? HP_CU_MEMORYTYPE_DEVICE : HP_CU_MEMORYTYPE_HOST;
	if (htod) {
		q.srcHost = p->srcPtr.ptr;
		q.dstDevice = (hp_CUdeviceptr)(uintptr_t)p->dstPtr.ptr;
	} else {
		q.srcDevice = (hp_CUdeviceptr)(uintptr_t)p->srcPtr.ptr;
		q.dstHost = p->dstPtr.ptr;
	}
	int r = 0, k = hp_stage_3d(c, &q, s, ptsz, sync, &r);
	return r == 0 ? k : 0;
}
#define STAGED_KIND_3D(sync)                                                  \
	if (stage_kind_3d(&c_, p, s, ptsz, sync)) {                           \
		hp_copy_sync_end(&c_, 1);                                     \
		return 0;                                                     \
	}

HP_BODY hp_cudaError_t copy_async(void *f, int ptsz, void *dst, const void *src,
				 size_t n, hp_cudaMemcpyKind kind,
				 hp_cudaStream_t s)
{
	HP_COPY_BODY(f, hp_cudaMemcpyAsync_t, hp_cudaError_t,
		     (dst, src, n, kind, s), host_kind(&c_, kind, dst, src, n);
		     STAGED_KIND(0, ASYNC_END), ASYNC_END)
}
/* CUDA 13.2: either side may be host memory (unified addressing). */
HP_BODY hp_cudaError_t copy_attr_async(void *f, int ptsz, void *dst,
				      const void *src, size_t n,
				      hp_cudaMemcpyAttributes *at,
				      hp_cudaStream_t s)
{
	HP_COPY_BODY(f, hp_cudaMemcpyWithAttributesAsync_t, hp_cudaError_t,
		     (dst, src, n, at, s),
		     host_kind(&c_, HP_cudaMemcpyDefault, dst, src, n);
		     STAGED_BY(stage_unified(&c_, dst, src, n, s, ptsz),
			       ASYNC_END),
		     ASYNC_END)
}
HP_BODY hp_cudaError_t copy3d_attr_async(void *f, int ptsz,
					hp_cudaMemcpy3DBatchOp *op,
					unsigned long long fl,
					hp_cudaStream_t s)
{
	HP_COPY_BODY(f, hp_cudaMemcpy3DWithAttributesAsync_t, hp_cudaError_t,
		     (op, fl, s), hp_copy_host_ops(&c_, op, 1), ASYNC_END)
}
HP_BODY hp_cudaError_t copy2d_async(void *f, int ptsz, void *dst, size_t dp,
				   const void *src, size_t sp, size_t w,
				   size_t h, hp_cudaMemcpyKind kind,
				   hp_cudaStream_t s)
{
	HP_COPY_BODY(f, hp_cudaMemcpy2DAsync_t, hp_cudaError_t,
		     (dst, dp, src, sp, w, h, kind, s),
		     host_kind_2d(&c_, kind, dst, dp, src, sp, w, h);
		     STAGED_KIND_2D(0), ASYNC_END)
}
HP_BODY hp_cudaError_t copy3d_async(void *f, int ptsz,
				   const hp_cudaMemcpy3DParms *p,
				   hp_cudaStream_t s)
{
	HP_COPY_BODY(f, hp_cudaMemcpy3DAsync_t, hp_cudaError_t, (p, s),
		     host_3dparms(&c_, p);
		     STAGED_KIND_3D(0), ASYNC_END)
}
HP_BODY hp_cudaError_t copy3dpeer_async(void *f, int ptsz,
				       const hp_cudaMemcpy3DPeerParms *p,
				       hp_cudaStream_t s)
{
	HP_COPY_BODY(f, hp_cudaMemcpy3DPeerAsync_t, hp_cudaError_t, (p, s),
		     host_3dpeer(&c_, p), ASYNC_END)
}
HP_BODY hp_cudaError_t to_symbol_async(void *f, int ptsz, const void *sym,
				      const void *src, size_t n, size_t off,
				      hp_cudaMemcpyKind kind, hp_cudaStream_t s)
{
	HP_COPY_BODY(f, hp_cudaMemcpyToSymbolAsync_t, hp_cudaError_t,
		     (sym, src, n, off, kind, s),
		     host_kind(&c_, kind, NULL, src, n), ASYNC_END)
}
HP_BODY hp_cudaError_t from_symbol_async(void *f, int ptsz, void *dst,
					const void *sym, size_t n, size_t off,
					hp_cudaMemcpyKind kind,
					hp_cudaStream_t s)
{
	HP_COPY_BODY(f, hp_cudaMemcpyFromSymbolAsync_t, hp_cudaError_t,
		     (dst, sym, n, off, kind, s),
		     host_kind(&c_, kind, dst, NULL, n), ASYNC_END)
}

/* The batch copies: one wrapper takes the longer (12.8) list and forwards
 * all of it (an extra argument is harmless in this ABI); the runtime's
 * version says where the stream is. */
typedef hp_cudaError_t (*batch_t)(void *const *, const void *const *,
				  const size_t *, size_t,
				  hp_cudaMemcpyAttributes *, size_t *, size_t,
				  void *, hp_cudaStream_t);
typedef hp_cudaError_t (*batch3d_t)(size_t, hp_cudaMemcpy3DBatchOp *, void *,
				    unsigned long long, hp_cudaStream_t);
HP_BODY hp_cudaError_t batch_async(void *f, const void *ra, int ptsz,
				  void *const *d, const void *const *sr,
				  const size_t *sz, size_t n,
				  hp_cudaMemcpyAttributes *at, size_t *ai,
				  size_t na, void *a8, hp_cudaStream_t a9)
{
	batch_t fn = (batch_t)f;
	if (fn == NULL)
		return HP_CUDA_ERROR_NOT_FOUND;
	if (!hp_hook_enter())
		return fn(d, sr, sz, n, at, ai, na, a8, a9);
	hp_copy_t c;
	hp_copy_init(&c);
	host_batch(&c, d, sr, sz, n);
	hp_cudaError_t e = fn(d, sr, sz, n, at, ai, na, a8, a9);
	hp_copy_end(&c, rt_version(ra) >= 13000 ? (hp_cudaStream_t)a8 : a9,
		    ptsz, e == 0);
	return e;
}
HP_BODY hp_cudaError_t batch3d_async(void *f, const void *ra, int ptsz,
				    size_t n, hp_cudaMemcpy3DBatchOp *ops,
				    void *a3, unsigned long long a4,
				    hp_cudaStream_t a5)
{
	batch3d_t fn = (batch3d_t)f;
	if (fn == NULL)
		return HP_CUDA_ERROR_NOT_FOUND;
	if (!hp_hook_enter())
		return fn(n, ops, a3, a4, a5);
	hp_copy_t c;
	hp_copy_init(&c);
	hp_copy_host_ops(&c, ops, n);
	hp_cudaError_t e = fn(n, ops, a3, a4, a5);
	hp_copy_end(&c, rt_version(ra) >= 13000 ? (hp_cudaStream_t)a4 : a5,
		    ptsz, e == 0);
	return e;
}

/* Synchronous copies: the per-thread default stream form is _ptds. */
HP_BODY hp_cudaError_t copy_sync(void *f, int ptsz, void *dst, const void *src,
				size_t n, hp_cudaMemcpyKind kind)
{
	hp_cudaStream_t s = NULL; /* the legacy or per-thread default stream */
	HP_COPY_BODY(f, hp_cudaMemcpy_t, hp_cudaError_t, (dst, src, n, kind),
		     host_kind(&c_, kind, dst, src, n);
		     STAGED_KIND(1, SYNC_END), SYNC_END)
}
HP_BODY hp_cudaError_t copy2d_sync(void *f, int ptsz, void *dst, size_t dp,
				  const void *src, size_t sp, size_t w,
				  size_t h, hp_cudaMemcpyKind kind)
{
	hp_cudaStream_t s = NULL; /* the legacy or per-thread default stream */
	HP_COPY_BODY(f, hp_cudaMemcpy2D_t, hp_cudaError_t,
		     (dst, dp, src, sp, w, h, kind),
		     host_kind_2d(&c_, kind, dst, dp, src, sp, w, h);
		     STAGED_KIND_2D(1), SYNC_END)
}
HP_BODY hp_cudaError_t copy3d_sync(void *f, int ptsz,
				  const hp_cudaMemcpy3DParms *p)
{
	hp_cudaStream_t s = NULL; /* the legacy or per-thread default stream */
	HP_COPY_BODY(f, hp_cudaMemcpy3D_t, hp_cudaError_t, (p),
		     host_3dparms(&c_, p);
		     STAGED_KIND_3D(1), SYNC_END)
}
HP_BODY hp_cudaError_t to_symbol_sync(void *f, const void *sym,
				     const void *src, size_t n, size_t off,
				     hp_cudaMemcpyKind kind)
{
	HP_COPY_BODY(f, hp_cudaMemcpyToSymbol_t, hp_cudaError_t,
		     (sym, src, n, off, kind),
		     host_kind(&c_, kind, NULL, src, n), SYNC_END)
}
HP_BODY hp_cudaError_t from_symbol_sync(void *f, void *dst, const void *sym,
				       size_t n, size_t off,
				       hp_cudaMemcpyKind kind)
{
	HP_COPY_BODY(f, hp_cudaMemcpyFromSymbol_t, hp_cudaError_t,
		     (dst, sym, n, off, kind),
		     host_kind(&c_, kind, dst, NULL, n), SYNC_END)
}

/* Registrations made by the program itself. */
HP_BODY hp_cudaError_t host_register(void *f, void *p, size_t n,
				    unsigned flags)
{
	hp_cudaHostRegister_t fn = (hp_cudaHostRegister_t)f;
	if (fn == NULL)
		return HP_CUDA_ERROR_NOT_FOUND;
	if (!hp_hook_enter())
		return fn(p, n, flags);
	hp_step_aside(p, n);
	hp_cudaError_t e = fn(p, n, flags);
	if (e != 0)
		hp_step_aside_failed(p);
	hp_hook_leave();
	return e;
}
HP_BODY hp_cudaError_t host_unregister(void *f, void *p)
{
	hp_cudaHostUnregister_t fn = (hp_cudaHostUnregister_t)f;
	if (fn == NULL)
		return HP_CUDA_ERROR_NOT_FOUND;
	if (!hp_hook_enter())
		return fn(p);
	/* hostpin's own registration is not the program's to release: the
	 * runtime answers (and records) as for memory never registered */
	hp_cudaError_t e = fn(hp_foreign_asked(p));
	if (e == 0)
		hp_step_aside_released(p);
	hp_hook_leave();
	return e;
}

/* The end of the current device's primary context: cudaDeviceReset (and
 * its deprecated name cudaThreadExit) destroys it with every registration
 * made through it; the device is asked before. */
typedef hp_cudaError_t (*hp_cudaGetDevice_t)(int *);
HP_BODY hp_cudaError_t device_reset(void *f, const void *ra)
{
	hp_cudaDeviceReset_t fn = (hp_cudaDeviceReset_t)f;
	if (fn == NULL)
		return HP_CUDA_ERROR_NOT_FOUND;
	if (!hp_hook_enter())
		return fn();
	int dev = -1;
	hp_cudaGetDevice_t gd =
	    (hp_cudaGetDevice_t)hp_fwd(&next_cudaGetDevice, ra);
	if (gd == NULL || gd(&dev) != 0)
		dev = -1;
	hp_cudaError_t e = fn();
	if (e == 0 && dev >= 0)
		HP_GUARDED(hp_cuda_device_reset(dev));
	hp_hook_leave();
	return e;
}

/* CUDA graph capture (capture.c): counted here where the runtime is
 * hooked, at the driver otherwise (the driver's hooks pass through inside
 * these). */
typedef hp_cudaError_t (*hp_cudaStreamBeginCapture_t)(hp_cudaStream_t, int);
typedef hp_cudaError_t (*hp_cudaStreamEndCapture_t)(hp_cudaStream_t, void **);
HP_BODY hp_cudaError_t begin_capture(void *f, int ptsz, hp_cudaStream_t s,
				    int mode)
{
	hp_cudaStreamBeginCapture_t fn = (hp_cudaStreamBeginCapture_t)f;
	if (fn == NULL)
		return HP_CUDA_ERROR_NOT_FOUND;
	if (!hp_hook_enter())
		return fn(s, mode);
	hp_cudaStream_t cs = s == NULL && ptsz ? HP_CU_STREAM_PER_THREAD : s;
	int c;
	HP_GUARDED(c = hp_capture_begin(cs, mode));
	hp_cudaError_t e = fn(s, mode);
	if (e != 0)
		HP_GUARDED(hp_capture_begin_failed(cs, c));
	hp_hook_leave();
	return e;
}
/* cudaStreamBeginCaptureToGraph (CUDA 12.3): into the program's graph, in
 * the mode it names; counted as any other. */
typedef hp_cudaError_t (*hp_cudaStreamBeginCaptureToGraph_t)(
    hp_cudaStream_t, void *, const void *, const void *, size_t, int);
HP_BODY hp_cudaError_t begin_capture_tg(void *f, int ptsz, hp_cudaStream_t s,
				       void *g, const void *deps,
				       const void *data, size_t n, int mode)
{
	hp_cudaStreamBeginCaptureToGraph_t fn =
	    (hp_cudaStreamBeginCaptureToGraph_t)f;
	if (fn == NULL)
		return HP_CUDA_ERROR_NOT_FOUND;
	if (!hp_hook_enter())
		return fn(s, g, deps, data, n, mode);
	hp_cudaStream_t cs = s == NULL && ptsz ? HP_CU_STREAM_PER_THREAD : s;
	int c;
	HP_GUARDED(c = hp_capture_begin(cs, mode));
	hp_cudaError_t e = fn(s, g, deps, data, n, mode);
	if (e != 0)
		HP_GUARDED(hp_capture_begin_failed(cs, c));
	hp_hook_leave();
	return e;
}
HP_BODY hp_cudaError_t end_capture(void *f, int ptsz, hp_cudaStream_t s,
				  void **g)
{
	hp_cudaStreamEndCapture_t fn = (hp_cudaStreamEndCapture_t)f;
	if (fn == NULL)
		return HP_CUDA_ERROR_NOT_FOUND;
	if (!hp_hook_enter())
		return fn(s, g);
	hp_cudaStream_t cs = s == NULL && ptsz ? HP_CU_STREAM_PER_THREAD : s;
	hp_cudaError_t e = fn(s, g);
	HP_GUARDED(hp_capture_end(cs, e));
	hp_hook_leave();
	return e;
}

/* Driver entry points handed out by the runtime: wrapped where hostpin
 * wraps them (hooks_cudrv.c), asked at the runtime's own version where the
 * call names none. */
static void *entry_wrap(const char *sym, void *fn, unsigned version,
			unsigned long long flags)
{
	if (fn == NULL || sym == NULL || hp_in_child ||
	    atomic_load_explicit(&hp_state, memory_order_acquire) !=
		HP_ST_READY)
		return fn;
	return hp_cudrv_wrap(sym, fn, (int)version, flags);
}
HP_BODY hp_cudaError_t entry_point(void *f, const void *ra, const char *sym,
				  void **fp, unsigned long long flags,
				  hp_cudaDriverEntryPointQueryResult *st)
{
	hp_cudaGetDriverEntryPoint_t fn = (hp_cudaGetDriverEntryPoint_t)f;
	if (fn == NULL)
		return HP_CUDA_ERROR_NOT_FOUND;
	hp_cudaError_t e = fn(sym, fp, flags, st);
	if (e == 0 && fp)
		*fp = entry_wrap(sym, *fp, (unsigned)rt_version(ra), flags);
	return e;
}
static hp_cudaError_t
entry_point_by_version(void *f, const char *sym, void **fp, unsigned v,
		       unsigned long long flags,
		       hp_cudaDriverEntryPointQueryResult *st)
{
	hp_cudaGetDriverEntryPointByVersion_t fn =
	    (hp_cudaGetDriverEntryPointByVersion_t)f;
	if (fn == NULL)
		return HP_CUDA_ERROR_NOT_FOUND;
	hp_cudaError_t e = fn(sym, fp, v, flags, st);
	if (e == 0 && fp)
		*fp = entry_wrap(sym, *fp, v, flags);
	return e;
}

/* ---- copies: NAME and the per-thread-stream form NAME_ptsz ---- */
HP_EXPORT hp_cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n,
					 hp_cudaMemcpyKind kind,
					 hp_cudaStream_t s)
{
	return copy_async(NEXT(cudaMemcpyAsync), 0, dst, src, n, kind, s);
}

HP_EXPORT hp_cudaError_t cudaMemcpyAsync_ptsz(void *dst, const void *src,
					      size_t n, hp_cudaMemcpyKind kind,
					      hp_cudaStream_t s)
{
	return copy_async(NEXT(cudaMemcpyAsync_ptsz), 1, dst, src, n, kind, s);
}

HP_EXPORT hp_cudaError_t cudaMemcpy2DAsync(void *dst, size_t dp,
					   const void *src, size_t sp, size_t w,
					   size_t h, hp_cudaMemcpyKind kind,
					   hp_cudaStream_t s)
{
	return copy2d_async(NEXT(cudaMemcpy2DAsync), 0, dst, dp, src, sp, w, h,
			    kind, s);
}

HP_EXPORT hp_cudaError_t cudaMemcpy2DAsync_ptsz(void *dst, size_t dp,
						const void *src, size_t sp,
						size_t w, size_t h,
						hp_cudaMemcpyKind kind,
						hp_cudaStream_t s)
{
	return copy2d_async(NEXT(cudaMemcpy2DAsync_ptsz), 1, dst, dp, src, sp,
			    w, h, kind, s);
}

HP_EXPORT hp_cudaError_t cudaMemcpy3DAsync(const hp_cudaMemcpy3DParms *p,
					   hp_cudaStream_t s)
{
	return copy3d_async(NEXT(cudaMemcpy3DAsync), 0, p, s);
}

HP_EXPORT hp_cudaError_t cudaMemcpy3DAsync_ptsz(const hp_cudaMemcpy3DParms *p,
						hp_cudaStream_t s)
{
	return copy3d_async(NEXT(cudaMemcpy3DAsync_ptsz), 1, p, s);
}

HP_EXPORT hp_cudaError_t cudaMemcpy3DPeerAsync(
    const hp_cudaMemcpy3DPeerParms *p, hp_cudaStream_t s)
{
	return copy3dpeer_async(NEXT(cudaMemcpy3DPeerAsync), 0, p, s);
}

HP_EXPORT hp_cudaError_t cudaMemcpy3DPeerAsync_ptsz(
    const hp_cudaMemcpy3DPeerParms *p, hp_cudaStream_t s)
{
	return copy3dpeer_async(NEXT(cudaMemcpy3DPeerAsync_ptsz), 1, p, s);
}

HP_EXPORT hp_cudaError_t cudaMemcpyToSymbolAsync(const void *sym,
						 const void *src, size_t n,
						 size_t off,
						 hp_cudaMemcpyKind kind,
						 hp_cudaStream_t s)
{
	return to_symbol_async(NEXT(cudaMemcpyToSymbolAsync), 0, sym, src, n,
			       off, kind, s);
}

HP_EXPORT hp_cudaError_t cudaMemcpyToSymbolAsync_ptsz(
    const void *sym, const void *src, size_t n, size_t off,
    hp_cudaMemcpyKind kind, hp_cudaStream_t s)
{
	return to_symbol_async(NEXT(cudaMemcpyToSymbolAsync_ptsz), 1, sym, src,
			       n, off, kind, s);
}

HP_EXPORT hp_cudaError_t cudaMemcpyFromSymbolAsync(void *dst, const void *sym,
						   size_t n, size_t off,
						   hp_cudaMemcpyKind kind,
						   hp_cudaStream_t s)
{
	return from_symbol_async(NEXT(cudaMemcpyFromSymbolAsync), 0, dst, sym,
				 n, off, kind, s);
}

HP_EXPORT hp_cudaError_t cudaMemcpyFromSymbolAsync_ptsz(
    void *dst, const void *sym, size_t n, size_t off, hp_cudaMemcpyKind kind,
    hp_cudaStream_t s)
{
	return from_symbol_async(NEXT(cudaMemcpyFromSymbolAsync_ptsz), 1, dst,
				 sym, n, off, kind, s);
}

HP_EXPORT hp_cudaError_t cudaMemcpyBatchAsync(void *const *d,
					      const void *const *sr,
					      const size_t *sz, size_t n,
					      hp_cudaMemcpyAttributes *at,
					      size_t *ai, size_t na, void *a8,
					      hp_cudaStream_t a9)
{
	return batch_async(NEXT(cudaMemcpyBatchAsync),
			   __builtin_return_address(0), 0, d, sr, sz, n, at, ai,
			   na, a8, a9);
}

HP_EXPORT hp_cudaError_t cudaMemcpyBatchAsync_ptsz(void *const *d,
						   const void *const *sr,
						   const size_t *sz, size_t n,
						   hp_cudaMemcpyAttributes *at,
						   size_t *ai, size_t na,
						   void *a8, hp_cudaStream_t a9)
{
	return batch_async(NEXT(cudaMemcpyBatchAsync_ptsz),
			   __builtin_return_address(0), 1, d, sr, sz, n, at, ai,
			   na, a8, a9);
}

HP_EXPORT hp_cudaError_t cudaMemcpy3DBatchAsync(size_t n,
						hp_cudaMemcpy3DBatchOp *ops,
						void *a3, unsigned long long a4,
						hp_cudaStream_t a5)
{
	return batch3d_async(NEXT(cudaMemcpy3DBatchAsync),
			     __builtin_return_address(0), 0, n, ops, a3, a4,
			     a5);
}

HP_EXPORT hp_cudaError_t cudaMemcpy3DBatchAsync_ptsz(
    size_t n, hp_cudaMemcpy3DBatchOp *ops, void *a3, unsigned long long a4,
    hp_cudaStream_t a5)
{
	return batch3d_async(NEXT(cudaMemcpy3DBatchAsync_ptsz),
			     __builtin_return_address(0), 1, n, ops, a3, a4,
			     a5);
}

HP_EXPORT hp_cudaError_t cudaMemcpyWithAttributesAsync(
    void *dst, const void *src, size_t n, hp_cudaMemcpyAttributes *at,
    hp_cudaStream_t s)
{
	return copy_attr_async(NEXT(cudaMemcpyWithAttributesAsync), 0, dst, src,
			       n, at, s);
}

HP_EXPORT hp_cudaError_t cudaMemcpyWithAttributesAsync_ptsz(
    void *dst, const void *src, size_t n, hp_cudaMemcpyAttributes *at,
    hp_cudaStream_t s)
{
	return copy_attr_async(NEXT(cudaMemcpyWithAttributesAsync_ptsz), 1, dst,
			       src, n, at, s);
}

HP_EXPORT hp_cudaError_t cudaMemcpy3DWithAttributesAsync(
    hp_cudaMemcpy3DBatchOp *op, unsigned long long fl, hp_cudaStream_t s)
{
	return copy3d_attr_async(NEXT(cudaMemcpy3DWithAttributesAsync), 0, op,
				 fl, s);
}

HP_EXPORT hp_cudaError_t cudaMemcpy3DWithAttributesAsync_ptsz(
    hp_cudaMemcpy3DBatchOp *op, unsigned long long fl, hp_cudaStream_t s)
{
	return copy3d_attr_async(NEXT(cudaMemcpy3DWithAttributesAsync_ptsz), 1,
				 op, fl, s);
}

/* ---- synchronous copies: NAME and the per-thread default stream form
 * NAME_ptds ---- */
HP_EXPORT hp_cudaError_t cudaMemcpy(void *dst, const void *src, size_t n,
				    hp_cudaMemcpyKind kind)
{
	return copy_sync(NEXT(cudaMemcpy), 0, dst, src, n, kind);
}

HP_EXPORT hp_cudaError_t cudaMemcpy_ptds(void *dst, const void *src, size_t n,
					 hp_cudaMemcpyKind kind)
{
	return copy_sync(NEXT(cudaMemcpy_ptds), 1, dst, src, n, kind);
}

HP_EXPORT hp_cudaError_t cudaMemcpy2D(void *dst, size_t dp, const void *src,
				      size_t sp, size_t w, size_t h,
				      hp_cudaMemcpyKind kind)
{
	return copy2d_sync(NEXT(cudaMemcpy2D), 0, dst, dp, src, sp, w, h, kind);
}

HP_EXPORT hp_cudaError_t cudaMemcpy2D_ptds(void *dst, size_t dp,
					   const void *src, size_t sp, size_t w,
					   size_t h, hp_cudaMemcpyKind kind)
{
	return copy2d_sync(NEXT(cudaMemcpy2D_ptds), 1, dst, dp, src, sp, w, h,
			   kind);
}

HP_EXPORT hp_cudaError_t cudaMemcpy3D(const hp_cudaMemcpy3DParms *p)
{
	return copy3d_sync(NEXT(cudaMemcpy3D), 0, p);
}

HP_EXPORT hp_cudaError_t cudaMemcpy3D_ptds(const hp_cudaMemcpy3DParms *p)
{
	return copy3d_sync(NEXT(cudaMemcpy3D_ptds), 1, p);
}

HP_EXPORT hp_cudaError_t cudaMemcpyToSymbol(const void *sym, const void *src,
					    size_t n, size_t off,
					    hp_cudaMemcpyKind kind)
{
	return to_symbol_sync(NEXT(cudaMemcpyToSymbol), sym, src, n, off, kind);
}

HP_EXPORT hp_cudaError_t cudaMemcpyToSymbol_ptds(const void *sym,
						 const void *src, size_t n,
						 size_t off,
						 hp_cudaMemcpyKind kind)
{
	return to_symbol_sync(NEXT(cudaMemcpyToSymbol_ptds), sym, src, n, off,
			      kind);
}

HP_EXPORT hp_cudaError_t cudaMemcpyFromSymbol(void *dst, const void *sym,
					      size_t n, size_t off,
					      hp_cudaMemcpyKind kind)
{
	return from_symbol_sync(NEXT(cudaMemcpyFromSymbol), dst, sym, n, off,
				kind);
}

HP_EXPORT hp_cudaError_t cudaMemcpyFromSymbol_ptds(void *dst, const void *sym,
						   size_t n, size_t off,
						   hp_cudaMemcpyKind kind)
{
	return from_symbol_sync(NEXT(cudaMemcpyFromSymbol_ptds), dst, sym, n,
				off, kind);
}

/* ---- registrations; the end of a context ---- */
HP_EXPORT hp_cudaError_t cudaHostRegister(void *p, size_t n, unsigned flags)
{
	return host_register(NEXT(cudaHostRegister), p, n, flags);
}

HP_EXPORT hp_cudaError_t cudaHostUnregister(void *p)
{
	return host_unregister(NEXT(cudaHostUnregister), p);
}

HP_EXPORT hp_cudaError_t cudaDeviceReset(void)
{
	return device_reset(NEXT(cudaDeviceReset), __builtin_return_address(0));
}

HP_EXPORT hp_cudaError_t cudaThreadExit(void)
{
	return device_reset(NEXT(cudaThreadExit), __builtin_return_address(0));
}

/* ---- graph capture ---- */
HP_EXPORT hp_cudaError_t cudaStreamBeginCapture(hp_cudaStream_t s, int mode)
{
	return begin_capture(NEXT(cudaStreamBeginCapture), 0, s, mode);
}

HP_EXPORT hp_cudaError_t cudaStreamBeginCapture_ptsz(
    hp_cudaStream_t s, int mode)
{
	return begin_capture(NEXT(cudaStreamBeginCapture_ptsz), 1, s, mode);
}

HP_EXPORT hp_cudaError_t cudaStreamBeginCaptureToGraph(
    hp_cudaStream_t s, void *g, const void *deps, const void *data, size_t n,
    int mode)
{
	return begin_capture_tg(NEXT(cudaStreamBeginCaptureToGraph), 0, s, g,
				deps, data, n, mode);
}

HP_EXPORT hp_cudaError_t cudaStreamBeginCaptureToGraph_ptsz(
    hp_cudaStream_t s, void *g, const void *deps, const void *data, size_t n,
    int mode)
{
	return begin_capture_tg(NEXT(cudaStreamBeginCaptureToGraph_ptsz), 1, s,
				g, deps, data, n, mode);
}

HP_EXPORT hp_cudaError_t cudaStreamEndCapture(hp_cudaStream_t s, void **g)
{
	return end_capture(NEXT(cudaStreamEndCapture), 0, s, g);
}

HP_EXPORT hp_cudaError_t cudaStreamEndCapture_ptsz(hp_cudaStream_t s, void **g)
{
	return end_capture(NEXT(cudaStreamEndCapture_ptsz), 1, s, g);
}

/* ---- driver lookups ---- */
HP_EXPORT hp_cudaError_t cudaGetDriverEntryPoint(
    const char *sym, void **fp, unsigned long long flags,
    hp_cudaDriverEntryPointQueryResult *st)
{
	return entry_point(NEXT(cudaGetDriverEntryPoint),
			   __builtin_return_address(0), sym, fp, flags, st);
}

HP_EXPORT hp_cudaError_t cudaGetDriverEntryPoint_ptsz(
    const char *sym, void **fp, unsigned long long flags,
    hp_cudaDriverEntryPointQueryResult *st)
{
	return entry_point(NEXT(cudaGetDriverEntryPoint_ptsz),
			   __builtin_return_address(0), sym, fp, flags, st);
}

HP_EXPORT hp_cudaError_t cudaGetDriverEntryPointByVersion(
    const char *sym, void **fp, unsigned v, unsigned long long flags,
    hp_cudaDriverEntryPointQueryResult *st)
{
	return entry_point_by_version(NEXT(cudaGetDriverEntryPointByVersion),
				      sym, fp, v, flags, st);
}

HP_EXPORT hp_cudaError_t cudaGetDriverEntryPointByVersion_ptsz(
    const char *sym, void **fp, unsigned v, unsigned long long flags,
    hp_cudaDriverEntryPointQueryResult *st)
{
	return entry_point_by_version(
	    NEXT(cudaGetDriverEntryPointByVersion_ptsz), sym, fp, v, flags, st);
}

/* Exported runtime names and their wrappers, from the same list, for
 * lookups on a runtime's handle (hooks_dlsym.c). */
static const struct {
	const char *name;
	hp_fwd_t *next;
	void *wrapper;
} rt_names[] = {
#define HP_CUDART(name) {#name, &next_##name, (void *)name},
#include "hooks_cudart.def"
#undef HP_CUDART
};
#define NRT (sizeof(rt_names) / sizeof(rt_names[0]))

int hp_cudart_wrapped_name(const char *name)
{
	for (size_t i = 0; i < NRT; i++)
		if (strcmp(rt_names[i].name, name) == 0)
			return 1;
	return 0;
}

void *hp_cudart_wrap(const char *symbol, void *fn, const void *ra)
{
	for (size_t i = 0; i < NRT; i++) {
		if (strcmp(rt_names[i].name, symbol) != 0)
			continue;
		/* Only the runtime hostpin's exported wrapper forwards to
		 * from the looking-up object: another runtime (another
		 * version, in another scope) keeps its own function, and its
		 * copies are guarded where it calls the driver. */
		void *next = hp_fwd(rt_names[i].next, ra);
		return next == fn ? rt_names[i].wrapper : fn;
	}
	return fn;
}
