/* Hooks on the CUDA driver's copy (async and sync), registration, context
 * and lookup entry points.  Every way a program reaches the driver ends
 * here: a call linked to the exported name; a pointer from cuGetProcAddress
 * (how the CUDA runtime, static or dynamic, reaches the driver) or from
 * cudaGetDriverEntryPoint; a pointer from dlsym on the driver's handle
 * (hooks_dlsym.c).
 *
 * Each entry point is written out below by its own name: the exported
 * NAME, whose linked calls forward to the next definition, and the
 * looked-up lk_NAME handed out in place of the driver's NAME, which calls
 * exactly the function the driver returned.  Both call one body per kind
 * of entry point.  hooks_cudrv.def lists the names once more, for the
 * slots and the lookup table. */
#include <string.h>

#include "../hooks.h"
#include "../base/resolve.h"
#include "../copy/stage.h"

/* One side of a 2D or 3D descriptor, if it is host memory (or unified or
 * device, which may be: under unified addressing the CUDA 13.2 runtime
 * hands cudaMemcpy3DPeer's pointers to the driver as device memory,
 * whatever they are; device memory is never in the registry, so only a
 * hostpin block counts): every byte from its first to its last row. */
static void host_side(hp_copy_t *c, hp_CUmemorytype m, const void *host,
		      hp_CUdeviceptr dev, size_t x, size_t y, size_t z,
		      size_t pitch, size_t height, size_t w, size_t h, size_t d)
{
	const char *p = m == HP_CU_MEMORYTYPE_HOST ? host
			: m == HP_CU_MEMORYTYPE_UNIFIED || m == HP_CU_MEMORYTYPE_DEVICE
			    ? (const char *)(uintptr_t)dev
			    : NULL;
	if (p == NULL || w == 0 || h == 0 || d == 0)
		return;
	size_t rows = (d - 1) * height + (h - 1);
	hp_copy_host(c, p + (z * height + y) * pitch + x, rows * pitch + w);
}
static void host_2d(hp_copy_t *c, const hp_CUDA_MEMCPY2D *p)
{
	if (p == NULL)
		return;
	host_side(c, p->srcMemoryType, p->srcHost, p->srcDevice, p->srcXInBytes,
		  p->srcY, 0, p->srcPitch, 0, p->WidthInBytes, p->Height, 1);
	host_side(c, p->dstMemoryType, p->dstHost, p->dstDevice, p->dstXInBytes,
		  p->dstY, 0, p->dstPitch, 0, p->WidthInBytes, p->Height, 1);
}
/* Both sides of a 3D descriptor (plain or peer: the same field names). */
#define HOST_3D_SIDES(c, p)                                                   \
	do {                                                                  \
		host_side(c, p->srcMemoryType, p->srcHost, p->srcDevice,      \
			  p->srcXInBytes, p->srcY, p->srcZ, p->srcPitch,      \
			  p->srcHeight, p->WidthInBytes, p->Height,           \
			  p->Depth);                                          \
		host_side(c, p->dstMemoryType, p->dstHost, p->dstDevice,      \
			  p->dstXInBytes, p->dstY, p->dstZ, p->dstPitch,      \
			  p->dstHeight, p->WidthInBytes, p->Height,           \
			  p->Depth);                                          \
	} while (0)
static void host_3d(hp_copy_t *c, const hp_CUDA_MEMCPY3D *p)
{
	if (p != NULL)
		HOST_3D_SIDES(c, p);
}
/* A 3D peer copy takes host memory on either side too. */
static void host_3dpeer(hp_copy_t *c, const hp_CUDA_MEMCPY3D_PEER *p)
{
	if (p != NULL)
		HOST_3D_SIDES(c, p);
}
static void host_batch(hp_copy_t *c, hp_CUdeviceptr *dsts,
		       hp_CUdeviceptr *srcs, size_t *sizes, size_t count)
{
	/* Any pointer of a batch may be a host one (unified addressing). */
	for (size_t i = 0; dsts && srcs && sizes && i < count; i++) {
		hp_copy_host(c, (const void *)(uintptr_t)srcs[i], sizes[i]);
		hp_copy_host(c, (const void *)(uintptr_t)dsts[i], sizes[i]);
	}
}
void hp_copy_host_ops(hp_copy_t *c, const hp_CUDA_MEMCPY3D_BATCH_OP *ops,
		      size_t n)
{
	for (size_t i = 0; ops && i < n; i++) {
		size_t b = ops[i].extent.width * ops[i].extent.height *
			   ops[i].extent.depth;
		if (ops[i].src.type == HP_CU_MEMCPY_OPERAND_TYPE_POINTER)
			hp_copy_host(c, (const void *)(uintptr_t)
					    ops[i].src.op.ptr.ptr, b);
		if (ops[i].dst.type == HP_CU_MEMCPY_OPERAND_TYPE_POINTER)
			hp_copy_host(c, (const void *)(uintptr_t)
					    ops[i].dst.op.ptr.ptr, b);
	}
}

/* The function a linked call forwards to: its caller's next definition
 * (resolve.h), or the loaded driver's own (a driver another object loaded
 * RTLD_LOCAL). */
static void *sym_next_at(hp_fwd_t *f, const void *ra)
{
	void *p = hp_fwd(f, ra);
	if (p == NULL) {
		HP_GUARDED(p = hp_cuda_sym(f->name); hp_backend_events_act());
		if (p == NULL)
			HP_LOG_ONCE(HP_LOG_WARN, "%s called but no CUDA driver "
				    "defines it: the call fails", f->name);
	}
	return p;
}
static void *lk_next(_Atomic(void *) *slot)
{
	/* acquire: pairs with the release in learn() */
	return atomic_load_explicit(slot, memory_order_acquire);
}

/* Per entry point: sym_NAME, where its linked calls go on (resolve.h), and
 * lkslot_NAME, the function the driver returned for it (learn()). */
#define HP_CUDRV(base, since, stream, name)                                   \
	static hp_fwd_t sym_##name = HP_FWD_INIT(#name);                      \
	static _Atomic(void *) lkslot_##name;
#include "hooks_cudrv.def"
#undef HP_CUDRV

/* What the exported NAME calls: its caller's next definition (the caller
 * is the hook's own caller). */
#define NEXT(name) sym_next_at(&sym_##name, __builtin_return_address(0))
/* What lk_NAME calls: the function the driver returned for NAME. */
#define LOOKED_UP(name) lk_next(&lkslot_##name)

/* ---- the bodies ----
 * f: the function to call; ptsz: the entry point is the per-thread-stream
 * form (stream 0 is the per-thread stream).  A copy body is hooks.h's
 * HP_COPY_BODY: the host sides, the call, then the end of the copy: an
 * asynchronous copy waits or is tracked (hp_copy_end), a synchronous one
 * is counted towards registration, with no wait (hp_copy_sync_end). */
#define ASYNC_END hp_copy_end(&c_, s, ptsz, e_ == HP_CUDA_SUCCESS)
#define SYNC_END hp_copy_sync_end(&c_, e_ == HP_CUDA_SUCCESS)
/* Staged copies (stage.c): when the copy is staged, it ends here with the
 * staging's result, counted as a copy through unregistered memory. */
#define STAGED(call, END)                                                     \
	int st_, sd_ = (call);                                                \
	if (sd_ == 2) { /* direct, split at registrations' ends */           \
		hp_CUresult e_ = (hp_CUresult)st_;                            \
		END;                                                          \
		return e_;                                                    \
	}                                                                     \
	if (sd_) {                                                            \
		hp_copy_sync_end(&c_, st_ == 0);                              \
		return (hp_CUresult)st_;                                      \
	}

HP_BODY hp_CUresult htod_async(void *f, int ptsz, hp_CUdeviceptr d,
			      const void *h, size_t n, hp_cudaStream_t s)
{
	HP_COPY_BODY(f, hp_cuMemcpyHtoDAsync_v2_t, hp_CUresult, (d, h, n, s),
		     hp_copy_host(&c_, h, n);
		     STAGED(hp_stage_htod(&c_, d, h, n, s, ptsz, 0, &st_),
			    ASYNC_END),
		     ASYNC_END)
}
HP_BODY hp_CUresult dtoh_async(void *f, int ptsz, void *h, hp_CUdeviceptr d,
			      size_t n, hp_cudaStream_t s)
{
	HP_COPY_BODY(f, hp_cuMemcpyDtoHAsync_v2_t, hp_CUresult, (h, d, n, s),
		     hp_copy_host(&c_, h, n);
		     STAGED(hp_stage_dtoh(&c_, h, d, n, s, ptsz, 0, &st_),
			    ASYNC_END),
		     ASYNC_END)
}
HP_BODY hp_CUresult copy_async(void *f, int ptsz, hp_CUdeviceptr d,
			      hp_CUdeviceptr sr, size_t n, hp_cudaStream_t s)
{
	HP_COPY_BODY(f, hp_cuMemcpyAsync_t, hp_CUresult, (d, sr, n, s),
		     hp_copy_host(&c_, (const void *)(uintptr_t)sr, n);
		     hp_copy_host(&c_, (const void *)(uintptr_t)d, n),
		     ASYNC_END)
}
HP_BODY hp_CUresult copy2d_async(void *f, int ptsz, const hp_CUDA_MEMCPY2D *p,
				hp_cudaStream_t s)
{
	HP_COPY_BODY(f, hp_cuMemcpy2DAsync_v2_t, hp_CUresult, (p, s),
		     host_2d(&c_, p);
		     STAGED(hp_stage_2d(&c_, p, s, ptsz, 0, &st_), ASYNC_END),
		     ASYNC_END)
}
HP_BODY hp_CUresult copy3d_async(void *f, int ptsz, const hp_CUDA_MEMCPY3D *p,
				hp_cudaStream_t s)
{
	HP_COPY_BODY(f, hp_cuMemcpy3DAsync_v2_t, hp_CUresult, (p, s),
		     host_3d(&c_, p);
		     STAGED(hp_stage_3d(&c_, p, s, ptsz, 0, &st_), ASYNC_END),
		     ASYNC_END)
}
HP_BODY hp_CUresult copy3dpeer_async(void *f, int ptsz,
				    const hp_CUDA_MEMCPY3D_PEER *p,
				    hp_cudaStream_t s)
{
	HP_COPY_BODY(f, hp_cuMemcpy3DPeerAsync_t, hp_CUresult, (p, s),
		     host_3dpeer(&c_, p), ASYNC_END)
}
HP_BODY hp_CUresult htoa_async(void *f, int ptsz, hp_CUarray a, size_t off,
			      const void *h, size_t n, hp_cudaStream_t s)
{
	HP_COPY_BODY(f, hp_cuMemcpyHtoAAsync_v2_t, hp_CUresult,
		     (a, off, h, n, s), hp_copy_host(&c_, h, n), ASYNC_END)
}
HP_BODY hp_CUresult atoh_async(void *f, int ptsz, void *h, hp_CUarray a,
			      size_t off, size_t n, hp_cudaStream_t s)
{
	HP_COPY_BODY(f, hp_cuMemcpyAtoHAsync_v2_t, hp_CUresult,
		     (h, a, off, n, s), hp_copy_host(&c_, h, n), ASYNC_END)
}
HP_BODY hp_CUresult batch_async(void *f, int ptsz, hp_CUdeviceptr *d,
			       hp_CUdeviceptr *sr, size_t *sz, size_t n,
			       hp_CUmemcpyAttributes *at, size_t *ai,
			       size_t na, size_t *fail, hp_cudaStream_t s)
{
	HP_COPY_BODY(f, hp_cuMemcpyBatchAsync_t, hp_CUresult,
		     (d, sr, sz, n, at, ai, na, fail, s),
		     host_batch(&c_, d, sr, sz, n), ASYNC_END)
}
HP_BODY hp_CUresult batch_async_v2(void *f, int ptsz, hp_CUdeviceptr *d,
				  hp_CUdeviceptr *sr, size_t *sz, size_t n,
				  hp_CUmemcpyAttributes *at, size_t *ai,
				  size_t na, hp_cudaStream_t s)
{
	HP_COPY_BODY(f, hp_cuMemcpyBatchAsync_v2_t, hp_CUresult,
		     (d, sr, sz, n, at, ai, na, s),
		     host_batch(&c_, d, sr, sz, n), ASYNC_END)
}
HP_BODY hp_CUresult batch3d_async(void *f, int ptsz, size_t n,
				 hp_CUDA_MEMCPY3D_BATCH_OP *ops, size_t *fail,
				 unsigned long long fl, hp_cudaStream_t s)
{
	HP_COPY_BODY(f, hp_cuMemcpy3DBatchAsync_t, hp_CUresult,
		     (n, ops, fail, fl, s), hp_copy_host_ops(&c_, ops, n),
		     ASYNC_END)
}
HP_BODY hp_CUresult batch3d_async_v2(void *f, int ptsz, size_t n,
				    hp_CUDA_MEMCPY3D_BATCH_OP *ops,
				    unsigned long long fl, hp_cudaStream_t s)
{
	HP_COPY_BODY(f, hp_cuMemcpy3DBatchAsync_v2_t, hp_CUresult,
		     (n, ops, fl, s), hp_copy_host_ops(&c_, ops, n), ASYNC_END)
}

/* CUDA 13.2's single copies with attributes.  Either side of the 1D form
 * may be host memory (unified addressing): a large one from or into host
 * memory hostpin has not registered is staged when the other side is
 * device memory (copy_dir). */
HP_BODY hp_CUresult copy_attr_async(void *f, int ptsz, hp_CUdeviceptr d,
				   hp_CUdeviceptr sr, size_t n,
				   hp_CUmemcpyAttributes *at,
				   hp_cudaStream_t s)
{
	HP_COPY_BODY(f, hp_cuMemcpyWithAttributesAsync_t, hp_CUresult,
		     (d, sr, n, at, s),
		     hp_copy_host(&c_, (const void *)(uintptr_t)sr, n);
		     hp_copy_host(&c_, (const void *)(uintptr_t)d, n);
		     STAGED(hp_stage_unified(&c_, d, sr, n, s, ptsz, 0, &st_),
			    ASYNC_END),
		     ASYNC_END)
}
HP_BODY hp_CUresult copy3d_attr_async(void *f, int ptsz,
				     hp_CUDA_MEMCPY3D_BATCH_OP *op,
				     unsigned long long fl, hp_cudaStream_t s)
{
	HP_COPY_BODY(f, hp_cuMemcpy3DWithAttributesAsync_t, hp_CUresult,
		     (op, fl, s), hp_copy_host_ops(&c_, op, 1), ASYNC_END)
}

/* Synchronous copies: the per-thread default stream form is _ptds. */
HP_BODY hp_CUresult htod_sync(void *f, int ptsz, hp_CUdeviceptr d,
			     const void *h, size_t n)
{
	HP_COPY_BODY(f, hp_cuMemcpyHtoD_v2_t, hp_CUresult, (d, h, n),
		     hp_copy_host(&c_, h, n);
		     STAGED(hp_stage_htod(&c_, d, h, n, NULL, ptsz, 1, &st_),
			    SYNC_END),
		     SYNC_END)
}
HP_BODY hp_CUresult dtoh_sync(void *f, int ptsz, void *h, hp_CUdeviceptr d,
			     size_t n)
{
	HP_COPY_BODY(f, hp_cuMemcpyDtoH_v2_t, hp_CUresult, (h, d, n),
		     hp_copy_host(&c_, h, n);
		     STAGED(hp_stage_dtoh(&c_, h, d, n, NULL, ptsz, 1, &st_),
			    SYNC_END),
		     SYNC_END)
}
HP_BODY hp_CUresult copy_sync(void *f, hp_CUdeviceptr d, hp_CUdeviceptr sr,
			     size_t n)
{
	HP_COPY_BODY(f, hp_cuMemcpy_t, hp_CUresult, (d, sr, n),
		     hp_copy_host(&c_, (const void *)(uintptr_t)sr, n);
		     hp_copy_host(&c_, (const void *)(uintptr_t)d, n), SYNC_END)
}
/* A 2D copy between pitched host memory and device memory is staged
 * (stage.c); cuMemcpy2DUnaligned passes through: it takes pitches that
 * cuMemcpy2DAsync, which makes the staged DMAs, may refuse. */
HP_BODY hp_CUresult copy2d_sync(void *f, int ptsz, const hp_CUDA_MEMCPY2D *p)
{
	HP_COPY_BODY(f, hp_cuMemcpy2D_v2_t, hp_CUresult, (p),
		     host_2d(&c_, p);
		     STAGED(hp_stage_2d(&c_, p, NULL, ptsz, 1, &st_), SYNC_END),
		     SYNC_END)
}
HP_BODY hp_CUresult copy2d_unaligned_sync(void *f, const hp_CUDA_MEMCPY2D *p)
{
	HP_COPY_BODY(f, hp_cuMemcpy2DUnaligned_v2_t, hp_CUresult, (p),
		     host_2d(&c_, p), SYNC_END)
}
/* A 3D copy between pitched host memory and device memory is staged too,
 * slice by slice (stage.c). */
HP_BODY hp_CUresult copy3d_sync(void *f, int ptsz, const hp_CUDA_MEMCPY3D *p)
{
	HP_COPY_BODY(f, hp_cuMemcpy3D_v2_t, hp_CUresult, (p),
		     host_3d(&c_, p);
		     STAGED(hp_stage_3d(&c_, p, NULL, ptsz, 1, &st_), SYNC_END),
		     SYNC_END)
}
HP_BODY hp_CUresult htoa_sync(void *f, hp_CUarray a, size_t off,
			     const void *h, size_t n)
{
	HP_COPY_BODY(f, hp_cuMemcpyHtoA_v2_t, hp_CUresult, (a, off, h, n),
		     hp_copy_host(&c_, h, n), SYNC_END)
}
HP_BODY hp_CUresult atoh_sync(void *f, void *h, hp_CUarray a, size_t off,
			     size_t n)
{
	HP_COPY_BODY(f, hp_cuMemcpyAtoH_v2_t, hp_CUresult, (h, a, off, n),
		     hp_copy_host(&c_, h, n), SYNC_END)
}

/* Registrations made by the program itself. */
HP_BODY hp_CUresult host_register(void *f, void *p, size_t n, unsigned flags)
{
	hp_cuMemHostRegister_v2_t fn = (hp_cuMemHostRegister_v2_t)f;
	if (fn == NULL)
		return HP_CUDA_ERROR_NOT_FOUND;
	if (!hp_hook_enter())
		return fn(p, n, flags);
	hp_step_aside(p, n);
	hp_CUresult e = fn(p, n, flags);
	if (e != HP_CUDA_SUCCESS)
		hp_step_aside_failed(p);
	hp_hook_leave();
	return e;
}
HP_BODY hp_CUresult host_unregister(void *f, void *p)
{
	hp_cuMemHostUnregister_t fn = (hp_cuMemHostUnregister_t)f;
	if (fn == NULL)
		return HP_CUDA_ERROR_NOT_FOUND;
	if (!hp_hook_enter())
		return fn(p);
	/* hostpin's own registration is not the program's to release: it
	 * gets the driver's answer for memory it never registered */
	hp_CUresult e = fn(hp_foreign_asked(p));
	if (e == HP_CUDA_SUCCESS)
		hp_step_aside_released(p);
	hp_hook_leave();
	return e;
}

/* What the driver answers about memory (invariant 14).  A block hostpin
 * registered is pageable memory to the program: asked about an address
 * in one, the driver is asked about a page of hostpin's own that nothing
 * registers instead (hp_foreign_asked), so the answer is exactly
 * the driver's answer for pageable memory (an error for most queries,
 * cuPointerGetAttributes' defaults), whatever the driver's version.  The
 * program's own registrations, cudaHostAlloc memory and device memory
 * pass through. */
static hp_CUdeviceptr asked_dev(hp_CUdeviceptr p)
{
	return (hp_CUdeviceptr)(uintptr_t)hp_foreign_asked((void *)(uintptr_t)p);
}
HP_BODY hp_CUresult ptr_attr(void *f, void *data, int attr, hp_CUdeviceptr p)
{
	hp_cuPointerGetAttribute_t fn = (hp_cuPointerGetAttribute_t)f;
	return fn ? fn(data, attr, asked_dev(p)) : HP_CUDA_ERROR_NOT_FOUND;
}
HP_BODY hp_CUresult ptr_attrs(void *f, unsigned n, int *attrs, void **data,
			     hp_CUdeviceptr p)
{
	hp_cuPointerGetAttributes_t fn = (hp_cuPointerGetAttributes_t)f;
	return fn ? fn(n, attrs, data, asked_dev(p)) : HP_CUDA_ERROR_NOT_FOUND;
}
HP_BODY hp_CUresult host_flags(void *f, unsigned *flags, void *p)
{
	hp_cuMemHostGetFlags_t fn = (hp_cuMemHostGetFlags_t)f;
	return fn ? fn(flags, hp_foreign_asked(p)) : HP_CUDA_ERROR_NOT_FOUND;
}
HP_BODY hp_CUresult host_devptr_v2(void *f, hp_CUdeviceptr *d, void *p,
				  unsigned fl)
{
	hp_cuMemHostGetDevicePointer_v2_t fn =
	    (hp_cuMemHostGetDevicePointer_v2_t)f;
	return fn ? fn(d, hp_foreign_asked(p), fl) : HP_CUDA_ERROR_NOT_FOUND;
}
HP_BODY hp_CUresult host_devptr(void *f, unsigned *d, void *p, unsigned fl)
{
	hp_cuMemHostGetDevicePointer_t fn = (hp_cuMemHostGetDevicePointer_t)f;
	return fn ? fn(d, hp_foreign_asked(p), fl) : HP_CUDA_ERROR_NOT_FOUND;
}

/* Entry points that end a context.  The registrations a context made die
 * with it; the blocks it held go back to pending (backend_cuda.c), to be
 * registered again once a context is active.  After the call: only a
 * successful one ended anything; a release ends the context only when it
 * dropped the last reference. */
HP_BODY hp_CUresult ctx_reset(void *f, hp_CUdevice dev)
{
	hp_cuDevicePrimaryCtxReset_t fn = (hp_cuDevicePrimaryCtxReset_t)f;
	if (fn == NULL)
		return HP_CUDA_ERROR_NOT_FOUND;
	if (!hp_hook_enter())
		return fn(dev);
	hp_CUresult e = fn(dev);
	if (e == HP_CUDA_SUCCESS)
		HP_GUARDED(hp_cuda_device_reset(dev));
	hp_hook_leave();
	return e;
}
HP_BODY hp_CUresult ctx_release(void *f, hp_CUdevice dev)
{
	hp_cuDevicePrimaryCtxRelease_t fn = (hp_cuDevicePrimaryCtxRelease_t)f;
	if (fn == NULL)
		return HP_CUDA_ERROR_NOT_FOUND;
	if (!hp_hook_enter())
		return fn(dev);
	hp_CUresult e = fn(dev);
	if (e == HP_CUDA_SUCCESS)
		HP_GUARDED(hp_cuda_device_released(dev));
	hp_hook_leave();
	return e;
}
HP_BODY hp_CUresult ctx_destroy(void *f, hp_CUcontext ctx)
{
	hp_cuCtxDestroy_t fn = (hp_cuCtxDestroy_t)f;
	if (fn == NULL)
		return HP_CUDA_ERROR_NOT_FOUND;
	if (!hp_hook_enter())
		return fn(ctx);
	hp_CUresult e = fn(ctx);
	if (e == HP_CUDA_SUCCESS)
		HP_GUARDED(hp_cuda_ctx_destroyed(ctx));
	hp_hook_leave();
	return e;
}

/* CUDA graph capture (capture.c).  Counted at the begin (before the
 * driver's: from then on hostpin makes no call a capture prohibits) and
 * the end (after it; then what waited runs).  The form without a mode
 * captures in global mode (0). */
typedef hp_CUresult (*hp_cuStreamBeginCapture_t)(hp_cudaStream_t);
typedef hp_CUresult (*hp_cuStreamBeginCapture_v2_t)(hp_cudaStream_t, int);
typedef hp_CUresult (*hp_cuStreamEndCapture_t)(hp_cudaStream_t, void **);
static hp_cudaStream_t cap_stream(hp_cudaStream_t s, int ptsz)
{
	return s == NULL && ptsz ? HP_CU_STREAM_PER_THREAD : s;
}
HP_BODY hp_CUresult begin_capture_v2(void *f, int ptsz, hp_cudaStream_t s,
				    int mode)
{
	hp_cuStreamBeginCapture_v2_t fn = (hp_cuStreamBeginCapture_v2_t)f;
	if (fn == NULL)
		return HP_CUDA_ERROR_NOT_FOUND;
	if (!hp_hook_enter())
		return fn(s, mode);
	int c;
	HP_GUARDED(c = hp_capture_begin(cap_stream(s, ptsz), mode));
	hp_CUresult e = fn(s, mode);
	if (e != HP_CUDA_SUCCESS)
		HP_GUARDED(hp_capture_begin_failed(cap_stream(s, ptsz), c));
	hp_hook_leave();
	return e;
}
HP_BODY hp_CUresult begin_capture(void *f, int ptsz, hp_cudaStream_t s)
{
	hp_cuStreamBeginCapture_t fn = (hp_cuStreamBeginCapture_t)f;
	if (fn == NULL)
		return HP_CUDA_ERROR_NOT_FOUND;
	if (!hp_hook_enter())
		return fn(s);
	int c;
	HP_GUARDED(c = hp_capture_begin(cap_stream(s, ptsz), 0));
	hp_CUresult e = fn(s);
	if (e != HP_CUDA_SUCCESS)
		HP_GUARDED(hp_capture_begin_failed(cap_stream(s, ptsz), c));
	hp_hook_leave();
	return e;
}
/* cuStreamBeginCaptureToGraph (CUDA 12.3): a capture into a graph the
 * program made, in the mode it names; counted as any other. */
typedef hp_CUresult (*hp_cuStreamBeginCaptureToGraph_t)(
    hp_cudaStream_t, void *, const void *, const void *, size_t, int);
HP_BODY hp_CUresult begin_capture_tg(void *f, int ptsz, hp_cudaStream_t s,
				    void *g, const void *deps,
				    const void *data, size_t n, int mode)
{
	hp_cuStreamBeginCaptureToGraph_t fn =
	    (hp_cuStreamBeginCaptureToGraph_t)f;
	if (fn == NULL)
		return HP_CUDA_ERROR_NOT_FOUND;
	if (!hp_hook_enter())
		return fn(s, g, deps, data, n, mode);
	int c;
	HP_GUARDED(c = hp_capture_begin(cap_stream(s, ptsz), mode));
	hp_CUresult e = fn(s, g, deps, data, n, mode);
	if (e != HP_CUDA_SUCCESS)
		HP_GUARDED(hp_capture_begin_failed(cap_stream(s, ptsz), c));
	hp_hook_leave();
	return e;
}
HP_BODY hp_CUresult end_capture(void *f, int ptsz, hp_cudaStream_t s, void **g)
{
	hp_cuStreamEndCapture_t fn = (hp_cuStreamEndCapture_t)f;
	if (fn == NULL)
		return HP_CUDA_ERROR_NOT_FOUND;
	if (!hp_hook_enter())
		return fn(s, g);
	hp_CUresult e = fn(s, g);
	HP_GUARDED(hp_capture_end(cap_stream(s, ptsz), e));
	hp_hook_leave();
	return e;
}

/* Lookups: what the driver found is handed out wrapped where hostpin wraps
 * it (hp_cudrv_wrap, below). */
static void *wrap_found(const char *symbol, void *fn, int version,
			unsigned long long flags)
{
	if (fn == NULL || symbol == NULL ||
	    atomic_load_explicit(&hp_state, memory_order_acquire) !=
		HP_ST_READY ||
	    hp_in_child)
		return fn;
	return hp_cudrv_wrap(symbol, fn, version, flags);
}
HP_BODY hp_CUresult gpa(void *f, const char *symbol, void **pfn, int ver,
		       hp_cuuint64_t flags)
{
	hp_cuGetProcAddress_t fn = (hp_cuGetProcAddress_t)f;
	if (fn == NULL)
		return HP_CUDA_ERROR_NOT_FOUND;
	hp_CUresult e = fn(symbol, pfn, ver, flags);
	if (e == HP_CUDA_SUCCESS && pfn != NULL)
		*pfn = wrap_found(symbol, *pfn, ver, flags);
	return e;
}
HP_BODY hp_CUresult gpa_v2(void *f, const char *symbol, void **pfn, int ver,
			  hp_cuuint64_t flags, int *status)
{
	hp_cuGetProcAddress_v2_t fn = (hp_cuGetProcAddress_v2_t)f;
	if (fn == NULL)
		return HP_CUDA_ERROR_NOT_FOUND;
	hp_CUresult e = fn(symbol, pfn, ver, flags, status);
	if (e == HP_CUDA_SUCCESS && pfn != NULL)
		*pfn = wrap_found(symbol, *pfn, ver, flags);
	return e;
}

/* ---- asynchronous copies ----
 * NAME, lk_NAME, and the per-thread-stream forms NAME_ptsz, lk_NAME_ptsz. */
HP_EXPORT hp_CUresult cuMemcpyHtoDAsync_v2(hp_CUdeviceptr d, const void *h,
					   size_t n, hp_cudaStream_t s)
{
	return htod_async(NEXT(cuMemcpyHtoDAsync_v2), 0, d, h, n, s);
}

static hp_CUresult lk_cuMemcpyHtoDAsync_v2(hp_CUdeviceptr d, const void *h,
					   size_t n, hp_cudaStream_t s)
{
	return htod_async(LOOKED_UP(cuMemcpyHtoDAsync_v2), 0, d, h, n, s);
}

HP_EXPORT hp_CUresult cuMemcpyHtoDAsync_v2_ptsz(hp_CUdeviceptr d, const void *h,
						size_t n, hp_cudaStream_t s)
{
	return htod_async(NEXT(cuMemcpyHtoDAsync_v2_ptsz), 1, d, h, n, s);
}

static hp_CUresult lk_cuMemcpyHtoDAsync_v2_ptsz(hp_CUdeviceptr d, const void *h,
						size_t n, hp_cudaStream_t s)
{
	return htod_async(LOOKED_UP(cuMemcpyHtoDAsync_v2_ptsz), 1, d, h, n, s);
}

HP_EXPORT hp_CUresult cuMemcpyDtoHAsync_v2(void *h, hp_CUdeviceptr d, size_t n,
					   hp_cudaStream_t s)
{
	return dtoh_async(NEXT(cuMemcpyDtoHAsync_v2), 0, h, d, n, s);
}

static hp_CUresult lk_cuMemcpyDtoHAsync_v2(void *h, hp_CUdeviceptr d, size_t n,
					   hp_cudaStream_t s)
{
	return dtoh_async(LOOKED_UP(cuMemcpyDtoHAsync_v2), 0, h, d, n, s);
}

HP_EXPORT hp_CUresult cuMemcpyDtoHAsync_v2_ptsz(void *h, hp_CUdeviceptr d,
						size_t n, hp_cudaStream_t s)
{
	return dtoh_async(NEXT(cuMemcpyDtoHAsync_v2_ptsz), 1, h, d, n, s);
}

static hp_CUresult lk_cuMemcpyDtoHAsync_v2_ptsz(void *h, hp_CUdeviceptr d,
						size_t n, hp_cudaStream_t s)
{
	return dtoh_async(LOOKED_UP(cuMemcpyDtoHAsync_v2_ptsz), 1, h, d, n, s);
}

HP_EXPORT hp_CUresult cuMemcpyAsync(hp_CUdeviceptr d, hp_CUdeviceptr sr,
				    size_t n, hp_cudaStream_t s)
{
	return copy_async(NEXT(cuMemcpyAsync), 0, d, sr, n, s);
}

static hp_CUresult lk_cuMemcpyAsync(hp_CUdeviceptr d, hp_CUdeviceptr sr,
				    size_t n, hp_cudaStream_t s)
{
	return copy_async(LOOKED_UP(cuMemcpyAsync), 0, d, sr, n, s);
}

HP_EXPORT hp_CUresult cuMemcpyAsync_ptsz(hp_CUdeviceptr d, hp_CUdeviceptr sr,
					 size_t n, hp_cudaStream_t s)
{
	return copy_async(NEXT(cuMemcpyAsync_ptsz), 1, d, sr, n, s);
}

static hp_CUresult lk_cuMemcpyAsync_ptsz(hp_CUdeviceptr d, hp_CUdeviceptr sr,
					 size_t n, hp_cudaStream_t s)
{
	return copy_async(LOOKED_UP(cuMemcpyAsync_ptsz), 1, d, sr, n, s);
}

HP_EXPORT hp_CUresult cuMemcpy2DAsync_v2(const hp_CUDA_MEMCPY2D *p,
					 hp_cudaStream_t s)
{
	return copy2d_async(NEXT(cuMemcpy2DAsync_v2), 0, p, s);
}

static hp_CUresult lk_cuMemcpy2DAsync_v2(const hp_CUDA_MEMCPY2D *p,
					 hp_cudaStream_t s)
{
	return copy2d_async(LOOKED_UP(cuMemcpy2DAsync_v2), 0, p, s);
}

HP_EXPORT hp_CUresult cuMemcpy2DAsync_v2_ptsz(const hp_CUDA_MEMCPY2D *p,
					      hp_cudaStream_t s)
{
	return copy2d_async(NEXT(cuMemcpy2DAsync_v2_ptsz), 1, p, s);
}

static hp_CUresult lk_cuMemcpy2DAsync_v2_ptsz(const hp_CUDA_MEMCPY2D *p,
					      hp_cudaStream_t s)
{
	return copy2d_async(LOOKED_UP(cuMemcpy2DAsync_v2_ptsz), 1, p, s);
}

HP_EXPORT hp_CUresult cuMemcpy3DAsync_v2(const hp_CUDA_MEMCPY3D *p,
					 hp_cudaStream_t s)
{
	return copy3d_async(NEXT(cuMemcpy3DAsync_v2), 0, p, s);
}

static hp_CUresult lk_cuMemcpy3DAsync_v2(const hp_CUDA_MEMCPY3D *p,
					 hp_cudaStream_t s)
{
	return copy3d_async(LOOKED_UP(cuMemcpy3DAsync_v2), 0, p, s);
}

HP_EXPORT hp_CUresult cuMemcpy3DAsync_v2_ptsz(const hp_CUDA_MEMCPY3D *p,
					      hp_cudaStream_t s)
{
	return copy3d_async(NEXT(cuMemcpy3DAsync_v2_ptsz), 1, p, s);
}

static hp_CUresult lk_cuMemcpy3DAsync_v2_ptsz(const hp_CUDA_MEMCPY3D *p,
					      hp_cudaStream_t s)
{
	return copy3d_async(LOOKED_UP(cuMemcpy3DAsync_v2_ptsz), 1, p, s);
}

HP_EXPORT hp_CUresult cuMemcpy3DPeerAsync(const hp_CUDA_MEMCPY3D_PEER *p,
					  hp_cudaStream_t s)
{
	return copy3dpeer_async(NEXT(cuMemcpy3DPeerAsync), 0, p, s);
}

static hp_CUresult lk_cuMemcpy3DPeerAsync(const hp_CUDA_MEMCPY3D_PEER *p,
					  hp_cudaStream_t s)
{
	return copy3dpeer_async(LOOKED_UP(cuMemcpy3DPeerAsync), 0, p, s);
}

HP_EXPORT hp_CUresult cuMemcpy3DPeerAsync_ptsz(const hp_CUDA_MEMCPY3D_PEER *p,
					       hp_cudaStream_t s)
{
	return copy3dpeer_async(NEXT(cuMemcpy3DPeerAsync_ptsz), 1, p, s);
}

static hp_CUresult lk_cuMemcpy3DPeerAsync_ptsz(const hp_CUDA_MEMCPY3D_PEER *p,
					       hp_cudaStream_t s)
{
	return copy3dpeer_async(LOOKED_UP(cuMemcpy3DPeerAsync_ptsz), 1, p, s);
}

HP_EXPORT hp_CUresult cuMemcpyHtoAAsync_v2(hp_CUarray a, size_t off,
					   const void *h, size_t n,
					   hp_cudaStream_t s)
{
	return htoa_async(NEXT(cuMemcpyHtoAAsync_v2), 0, a, off, h, n, s);
}

static hp_CUresult lk_cuMemcpyHtoAAsync_v2(hp_CUarray a, size_t off,
					   const void *h, size_t n,
					   hp_cudaStream_t s)
{
	return htoa_async(LOOKED_UP(cuMemcpyHtoAAsync_v2), 0, a, off, h, n, s);
}

HP_EXPORT hp_CUresult cuMemcpyHtoAAsync_v2_ptsz(hp_CUarray a, size_t off,
						const void *h, size_t n,
						hp_cudaStream_t s)
{
	return htoa_async(NEXT(cuMemcpyHtoAAsync_v2_ptsz), 1, a, off, h, n, s);
}

static hp_CUresult lk_cuMemcpyHtoAAsync_v2_ptsz(hp_CUarray a, size_t off,
						const void *h, size_t n,
						hp_cudaStream_t s)
{
	return htoa_async(LOOKED_UP(cuMemcpyHtoAAsync_v2_ptsz), 1, a, off, h, n,
			  s);
}

HP_EXPORT hp_CUresult cuMemcpyAtoHAsync_v2(void *h, hp_CUarray a, size_t off,
					   size_t n, hp_cudaStream_t s)
{
	return atoh_async(NEXT(cuMemcpyAtoHAsync_v2), 0, h, a, off, n, s);
}

static hp_CUresult lk_cuMemcpyAtoHAsync_v2(void *h, hp_CUarray a, size_t off,
					   size_t n, hp_cudaStream_t s)
{
	return atoh_async(LOOKED_UP(cuMemcpyAtoHAsync_v2), 0, h, a, off, n, s);
}

HP_EXPORT hp_CUresult cuMemcpyAtoHAsync_v2_ptsz(void *h, hp_CUarray a,
						size_t off, size_t n,
						hp_cudaStream_t s)
{
	return atoh_async(NEXT(cuMemcpyAtoHAsync_v2_ptsz), 1, h, a, off, n, s);
}

static hp_CUresult lk_cuMemcpyAtoHAsync_v2_ptsz(void *h, hp_CUarray a,
						size_t off, size_t n,
						hp_cudaStream_t s)
{
	return atoh_async(LOOKED_UP(cuMemcpyAtoHAsync_v2_ptsz), 1, h, a, off, n,
			  s);
}

HP_EXPORT hp_CUresult cuMemcpyBatchAsync(hp_CUdeviceptr *d, hp_CUdeviceptr *sr,
					 size_t *sz, size_t n,
					 hp_CUmemcpyAttributes *at, size_t *ai,
					 size_t na, size_t *fail,
					 hp_cudaStream_t s)
{
	return batch_async(NEXT(cuMemcpyBatchAsync), 0, d, sr, sz, n, at, ai,
			   na, fail, s);
}

static hp_CUresult lk_cuMemcpyBatchAsync(hp_CUdeviceptr *d, hp_CUdeviceptr *sr,
					 size_t *sz, size_t n,
					 hp_CUmemcpyAttributes *at, size_t *ai,
					 size_t na, size_t *fail,
					 hp_cudaStream_t s)
{
	return batch_async(LOOKED_UP(cuMemcpyBatchAsync), 0, d, sr, sz, n, at,
			   ai, na, fail, s);
}

HP_EXPORT hp_CUresult cuMemcpyBatchAsync_ptsz(hp_CUdeviceptr *d,
					      hp_CUdeviceptr *sr, size_t *sz,
					      size_t n,
					      hp_CUmemcpyAttributes *at,
					      size_t *ai, size_t na,
					      size_t *fail, hp_cudaStream_t s)
{
	return batch_async(NEXT(cuMemcpyBatchAsync_ptsz), 1, d, sr, sz, n, at,
			   ai, na, fail, s);
}

static hp_CUresult lk_cuMemcpyBatchAsync_ptsz(hp_CUdeviceptr *d,
					      hp_CUdeviceptr *sr, size_t *sz,
					      size_t n,
					      hp_CUmemcpyAttributes *at,
					      size_t *ai, size_t na,
					      size_t *fail, hp_cudaStream_t s)
{
	return batch_async(LOOKED_UP(cuMemcpyBatchAsync_ptsz), 1, d, sr, sz, n,
			   at, ai, na, fail, s);
}

HP_EXPORT hp_CUresult cuMemcpyBatchAsync_v2(hp_CUdeviceptr *d,
					    hp_CUdeviceptr *sr, size_t *sz,
					    size_t n, hp_CUmemcpyAttributes *at,
					    size_t *ai, size_t na,
					    hp_cudaStream_t s)
{
	return batch_async_v2(NEXT(cuMemcpyBatchAsync_v2), 0, d, sr, sz, n, at,
			      ai, na, s);
}

static hp_CUresult lk_cuMemcpyBatchAsync_v2(hp_CUdeviceptr *d,
					    hp_CUdeviceptr *sr, size_t *sz,
					    size_t n, hp_CUmemcpyAttributes *at,
					    size_t *ai, size_t na,
					    hp_cudaStream_t s)
{
	return batch_async_v2(LOOKED_UP(cuMemcpyBatchAsync_v2), 0, d, sr, sz, n,
			      at, ai, na, s);
}

HP_EXPORT hp_CUresult cuMemcpyBatchAsync_v2_ptsz(hp_CUdeviceptr *d,
						 hp_CUdeviceptr *sr, size_t *sz,
						 size_t n,
						 hp_CUmemcpyAttributes *at,
						 size_t *ai, size_t na,
						 hp_cudaStream_t s)
{
	return batch_async_v2(NEXT(cuMemcpyBatchAsync_v2_ptsz), 1, d, sr, sz, n,
			      at, ai, na, s);
}

static hp_CUresult lk_cuMemcpyBatchAsync_v2_ptsz(hp_CUdeviceptr *d,
						 hp_CUdeviceptr *sr, size_t *sz,
						 size_t n,
						 hp_CUmemcpyAttributes *at,
						 size_t *ai, size_t na,
						 hp_cudaStream_t s)
{
	return batch_async_v2(LOOKED_UP(cuMemcpyBatchAsync_v2_ptsz), 1, d, sr,
			      sz, n, at, ai, na, s);
}

HP_EXPORT hp_CUresult cuMemcpy3DBatchAsync(size_t n,
					   hp_CUDA_MEMCPY3D_BATCH_OP *ops,
					   size_t *fail, unsigned long long fl,
					   hp_cudaStream_t s)
{
	return batch3d_async(NEXT(cuMemcpy3DBatchAsync), 0, n, ops, fail, fl,
			     s);
}

static hp_CUresult lk_cuMemcpy3DBatchAsync(size_t n,
					   hp_CUDA_MEMCPY3D_BATCH_OP *ops,
					   size_t *fail, unsigned long long fl,
					   hp_cudaStream_t s)
{
	return batch3d_async(LOOKED_UP(cuMemcpy3DBatchAsync), 0, n, ops, fail,
			     fl, s);
}

HP_EXPORT hp_CUresult cuMemcpy3DBatchAsync_ptsz(size_t n,
						hp_CUDA_MEMCPY3D_BATCH_OP *ops,
						size_t *fail,
						unsigned long long fl,
						hp_cudaStream_t s)
{
	return batch3d_async(NEXT(cuMemcpy3DBatchAsync_ptsz), 1, n, ops, fail,
			     fl, s);
}

static hp_CUresult lk_cuMemcpy3DBatchAsync_ptsz(size_t n,
						hp_CUDA_MEMCPY3D_BATCH_OP *ops,
						size_t *fail,
						unsigned long long fl,
						hp_cudaStream_t s)
{
	return batch3d_async(LOOKED_UP(cuMemcpy3DBatchAsync_ptsz), 1, n, ops,
			     fail, fl, s);
}

HP_EXPORT hp_CUresult cuMemcpy3DBatchAsync_v2(size_t n,
					      hp_CUDA_MEMCPY3D_BATCH_OP *ops,
					      unsigned long long fl,
					      hp_cudaStream_t s)
{
	return batch3d_async_v2(NEXT(cuMemcpy3DBatchAsync_v2), 0, n, ops, fl,
				s);
}

static hp_CUresult lk_cuMemcpy3DBatchAsync_v2(size_t n,
					      hp_CUDA_MEMCPY3D_BATCH_OP *ops,
					      unsigned long long fl,
					      hp_cudaStream_t s)
{
	return batch3d_async_v2(LOOKED_UP(cuMemcpy3DBatchAsync_v2), 0, n, ops,
				fl, s);
}

HP_EXPORT hp_CUresult cuMemcpy3DBatchAsync_v2_ptsz(
    size_t n, hp_CUDA_MEMCPY3D_BATCH_OP *ops, unsigned long long fl,
    hp_cudaStream_t s)
{
	return batch3d_async_v2(NEXT(cuMemcpy3DBatchAsync_v2_ptsz), 1, n, ops,
				fl, s);
}

static hp_CUresult lk_cuMemcpy3DBatchAsync_v2_ptsz(
    size_t n, hp_CUDA_MEMCPY3D_BATCH_OP *ops, unsigned long long fl,
    hp_cudaStream_t s)
{
	return batch3d_async_v2(LOOKED_UP(cuMemcpy3DBatchAsync_v2_ptsz), 1, n,
				ops, fl, s);
}

HP_EXPORT hp_CUresult cuMemcpyWithAttributesAsync(hp_CUdeviceptr d, hp_CUdeviceptr sr,
		size_t n, hp_CUmemcpyAttributes *at, hp_cudaStream_t s)
{
	return copy_attr_async(NEXT(cuMemcpyWithAttributesAsync), 0, d, sr, n, at, s);
}

static hp_CUresult lk_cuMemcpyWithAttributesAsync(hp_CUdeviceptr d, hp_CUdeviceptr sr,
		size_t n, hp_CUmemcpyAttributes *at, hp_cudaStream_t s)
{
	return copy_attr_async(LOOKED_UP(cuMemcpyWithAttributesAsync), 0, d, sr, n, at, s);
}

HP_EXPORT hp_CUresult cuMemcpyWithAttributesAsync_ptsz(hp_CUdeviceptr d, hp_CUdeviceptr sr,
		size_t n, hp_CUmemcpyAttributes *at, hp_cudaStream_t s)
{
	return copy_attr_async(NEXT(cuMemcpyWithAttributesAsync_ptsz), 1, d, sr, n, at, s);
}

static hp_CUresult lk_cuMemcpyWithAttributesAsync_ptsz(hp_CUdeviceptr d, hp_CUdeviceptr sr,
		size_t n, hp_CUmemcpyAttributes *at, hp_cudaStream_t s)
{
	return copy_attr_async(LOOKED_UP(cuMemcpyWithAttributesAsync_ptsz), 1, d, sr, n, at, s);
}

HP_EXPORT hp_CUresult cuMemcpy3DWithAttributesAsync(hp_CUDA_MEMCPY3D_BATCH_OP *op,
		unsigned long long fl, hp_cudaStream_t s)
{
	return copy3d_attr_async(NEXT(cuMemcpy3DWithAttributesAsync), 0, op, fl, s);
}

static hp_CUresult lk_cuMemcpy3DWithAttributesAsync(hp_CUDA_MEMCPY3D_BATCH_OP *op,
		unsigned long long fl, hp_cudaStream_t s)
{
	return copy3d_attr_async(LOOKED_UP(cuMemcpy3DWithAttributesAsync), 0, op, fl, s);
}

HP_EXPORT hp_CUresult cuMemcpy3DWithAttributesAsync_ptsz(hp_CUDA_MEMCPY3D_BATCH_OP *op,
		unsigned long long fl, hp_cudaStream_t s)
{
	return copy3d_attr_async(NEXT(cuMemcpy3DWithAttributesAsync_ptsz), 1, op, fl, s);
}

static hp_CUresult lk_cuMemcpy3DWithAttributesAsync_ptsz(hp_CUDA_MEMCPY3D_BATCH_OP *op,
		unsigned long long fl, hp_cudaStream_t s)
{
	return copy3d_attr_async(LOOKED_UP(cuMemcpy3DWithAttributesAsync_ptsz), 1, op, fl, s);
}

/* ---- synchronous copies ----
 * NAME, lk_NAME, and the per-thread default stream forms NAME_ptds,
 * lk_NAME_ptds. */
HP_EXPORT hp_CUresult cuMemcpyHtoD_v2(hp_CUdeviceptr d, const void *h, size_t n)
{
	return htod_sync(NEXT(cuMemcpyHtoD_v2), 0, d, h, n);
}

static hp_CUresult lk_cuMemcpyHtoD_v2(hp_CUdeviceptr d, const void *h, size_t n)
{
	return htod_sync(LOOKED_UP(cuMemcpyHtoD_v2), 0, d, h, n);
}

HP_EXPORT hp_CUresult cuMemcpyHtoD_v2_ptds(hp_CUdeviceptr d, const void *h,
					   size_t n)
{
	return htod_sync(NEXT(cuMemcpyHtoD_v2_ptds), 1, d, h, n);
}

static hp_CUresult lk_cuMemcpyHtoD_v2_ptds(hp_CUdeviceptr d, const void *h,
					   size_t n)
{
	return htod_sync(LOOKED_UP(cuMemcpyHtoD_v2_ptds), 1, d, h, n);
}

HP_EXPORT hp_CUresult cuMemcpyDtoH_v2(void *h, hp_CUdeviceptr d, size_t n)
{
	return dtoh_sync(NEXT(cuMemcpyDtoH_v2), 0, h, d, n);
}

static hp_CUresult lk_cuMemcpyDtoH_v2(void *h, hp_CUdeviceptr d, size_t n)
{
	return dtoh_sync(LOOKED_UP(cuMemcpyDtoH_v2), 0, h, d, n);
}

HP_EXPORT hp_CUresult cuMemcpyDtoH_v2_ptds(void *h, hp_CUdeviceptr d, size_t n)
{
	return dtoh_sync(NEXT(cuMemcpyDtoH_v2_ptds), 1, h, d, n);
}

static hp_CUresult lk_cuMemcpyDtoH_v2_ptds(void *h, hp_CUdeviceptr d, size_t n)
{
	return dtoh_sync(LOOKED_UP(cuMemcpyDtoH_v2_ptds), 1, h, d, n);
}

HP_EXPORT hp_CUresult cuMemcpy(hp_CUdeviceptr d, hp_CUdeviceptr sr, size_t n)
{
	return copy_sync(NEXT(cuMemcpy), d, sr, n);
}

static hp_CUresult lk_cuMemcpy(hp_CUdeviceptr d, hp_CUdeviceptr sr, size_t n)
{
	return copy_sync(LOOKED_UP(cuMemcpy), d, sr, n);
}

HP_EXPORT hp_CUresult cuMemcpy_ptds(hp_CUdeviceptr d, hp_CUdeviceptr sr,
				    size_t n)
{
	return copy_sync(NEXT(cuMemcpy_ptds), d, sr, n);
}

static hp_CUresult lk_cuMemcpy_ptds(hp_CUdeviceptr d, hp_CUdeviceptr sr,
				    size_t n)
{
	return copy_sync(LOOKED_UP(cuMemcpy_ptds), d, sr, n);
}

HP_EXPORT hp_CUresult cuMemcpy2D_v2(const hp_CUDA_MEMCPY2D *p)
{
	return copy2d_sync(NEXT(cuMemcpy2D_v2), 0, p);
}

static hp_CUresult lk_cuMemcpy2D_v2(const hp_CUDA_MEMCPY2D *p)
{
	return copy2d_sync(LOOKED_UP(cuMemcpy2D_v2), 0, p);
}

HP_EXPORT hp_CUresult cuMemcpy2D_v2_ptds(const hp_CUDA_MEMCPY2D *p)
{
	return copy2d_sync(NEXT(cuMemcpy2D_v2_ptds), 1, p);
}

static hp_CUresult lk_cuMemcpy2D_v2_ptds(const hp_CUDA_MEMCPY2D *p)
{
	return copy2d_sync(LOOKED_UP(cuMemcpy2D_v2_ptds), 1, p);
}

HP_EXPORT hp_CUresult cuMemcpy2DUnaligned_v2(const hp_CUDA_MEMCPY2D *p)
{
	return copy2d_unaligned_sync(NEXT(cuMemcpy2DUnaligned_v2), p);
}

static hp_CUresult lk_cuMemcpy2DUnaligned_v2(const hp_CUDA_MEMCPY2D *p)
{
	return copy2d_unaligned_sync(LOOKED_UP(cuMemcpy2DUnaligned_v2), p);
}

HP_EXPORT hp_CUresult cuMemcpy2DUnaligned_v2_ptds(const hp_CUDA_MEMCPY2D *p)
{
	return copy2d_unaligned_sync(NEXT(cuMemcpy2DUnaligned_v2_ptds), p);
}

static hp_CUresult lk_cuMemcpy2DUnaligned_v2_ptds(const hp_CUDA_MEMCPY2D *p)
{
	return copy2d_unaligned_sync(LOOKED_UP(cuMemcpy2DUnaligned_v2_ptds), p);
}

HP_EXPORT hp_CUresult cuMemcpy3D_v2(const hp_CUDA_MEMCPY3D *p)
{
	return copy3d_sync(NEXT(cuMemcpy3D_v2), 0, p);
}

static hp_CUresult lk_cuMemcpy3D_v2(const hp_CUDA_MEMCPY3D *p)
{
	return copy3d_sync(LOOKED_UP(cuMemcpy3D_v2), 0, p);
}

HP_EXPORT hp_CUresult cuMemcpy3D_v2_ptds(const hp_CUDA_MEMCPY3D *p)
{
	return copy3d_sync(NEXT(cuMemcpy3D_v2_ptds), 1, p);
}

static hp_CUresult lk_cuMemcpy3D_v2_ptds(const hp_CUDA_MEMCPY3D *p)
{
	return copy3d_sync(LOOKED_UP(cuMemcpy3D_v2_ptds), 1, p);
}

HP_EXPORT hp_CUresult cuMemcpyHtoA_v2(hp_CUarray a, size_t off, const void *h,
				      size_t n)
{
	return htoa_sync(NEXT(cuMemcpyHtoA_v2), a, off, h, n);
}

static hp_CUresult lk_cuMemcpyHtoA_v2(hp_CUarray a, size_t off, const void *h,
				      size_t n)
{
	return htoa_sync(LOOKED_UP(cuMemcpyHtoA_v2), a, off, h, n);
}

HP_EXPORT hp_CUresult cuMemcpyHtoA_v2_ptds(hp_CUarray a, size_t off,
					   const void *h, size_t n)
{
	return htoa_sync(NEXT(cuMemcpyHtoA_v2_ptds), a, off, h, n);
}

static hp_CUresult lk_cuMemcpyHtoA_v2_ptds(hp_CUarray a, size_t off,
					   const void *h, size_t n)
{
	return htoa_sync(LOOKED_UP(cuMemcpyHtoA_v2_ptds), a, off, h, n);
}

HP_EXPORT hp_CUresult cuMemcpyAtoH_v2(void *h, hp_CUarray a, size_t off,
				      size_t n)
{
	return atoh_sync(NEXT(cuMemcpyAtoH_v2), h, a, off, n);
}

static hp_CUresult lk_cuMemcpyAtoH_v2(void *h, hp_CUarray a, size_t off,
				      size_t n)
{
	return atoh_sync(LOOKED_UP(cuMemcpyAtoH_v2), h, a, off, n);
}

HP_EXPORT hp_CUresult cuMemcpyAtoH_v2_ptds(void *h, hp_CUarray a, size_t off,
					   size_t n)
{
	return atoh_sync(NEXT(cuMemcpyAtoH_v2_ptds), h, a, off, n);
}

static hp_CUresult lk_cuMemcpyAtoH_v2_ptds(void *h, hp_CUarray a, size_t off,
					   size_t n)
{
	return atoh_sync(LOOKED_UP(cuMemcpyAtoH_v2_ptds), h, a, off, n);
}

/* ---- registrations made by the program itself, ends of a context ---- */
HP_EXPORT hp_CUresult cuMemHostRegister(void *p, size_t n, unsigned flags)
{
	return host_register(NEXT(cuMemHostRegister), p, n, flags);
}

static hp_CUresult lk_cuMemHostRegister(void *p, size_t n, unsigned flags)
{
	return host_register(LOOKED_UP(cuMemHostRegister), p, n, flags);
}

HP_EXPORT hp_CUresult cuMemHostRegister_v2(void *p, size_t n, unsigned flags)
{
	return host_register(NEXT(cuMemHostRegister_v2), p, n, flags);
}

static hp_CUresult lk_cuMemHostRegister_v2(void *p, size_t n, unsigned flags)
{
	return host_register(LOOKED_UP(cuMemHostRegister_v2), p, n, flags);
}

HP_EXPORT hp_CUresult cuMemHostUnregister(void *p)
{
	return host_unregister(NEXT(cuMemHostUnregister), p);
}

static hp_CUresult lk_cuMemHostUnregister(void *p)
{
	return host_unregister(LOOKED_UP(cuMemHostUnregister), p);
}

HP_EXPORT hp_CUresult cuDevicePrimaryCtxReset(hp_CUdevice dev)
{
	return ctx_reset(NEXT(cuDevicePrimaryCtxReset), dev);
}

static hp_CUresult lk_cuDevicePrimaryCtxReset(hp_CUdevice dev)
{
	return ctx_reset(LOOKED_UP(cuDevicePrimaryCtxReset), dev);
}

HP_EXPORT hp_CUresult cuDevicePrimaryCtxReset_v2(hp_CUdevice dev)
{
	return ctx_reset(NEXT(cuDevicePrimaryCtxReset_v2), dev);
}

static hp_CUresult lk_cuDevicePrimaryCtxReset_v2(hp_CUdevice dev)
{
	return ctx_reset(LOOKED_UP(cuDevicePrimaryCtxReset_v2), dev);
}

HP_EXPORT hp_CUresult cuDevicePrimaryCtxRelease(hp_CUdevice dev)
{
	return ctx_release(NEXT(cuDevicePrimaryCtxRelease), dev);
}

static hp_CUresult lk_cuDevicePrimaryCtxRelease(hp_CUdevice dev)
{
	return ctx_release(LOOKED_UP(cuDevicePrimaryCtxRelease), dev);
}

HP_EXPORT hp_CUresult cuDevicePrimaryCtxRelease_v2(hp_CUdevice dev)
{
	return ctx_release(NEXT(cuDevicePrimaryCtxRelease_v2), dev);
}

static hp_CUresult lk_cuDevicePrimaryCtxRelease_v2(hp_CUdevice dev)
{
	return ctx_release(LOOKED_UP(cuDevicePrimaryCtxRelease_v2), dev);
}

HP_EXPORT hp_CUresult cuCtxDestroy(hp_CUcontext ctx)
{
	return ctx_destroy(NEXT(cuCtxDestroy), ctx);
}

static hp_CUresult lk_cuCtxDestroy(hp_CUcontext ctx)
{
	return ctx_destroy(LOOKED_UP(cuCtxDestroy), ctx);
}

HP_EXPORT hp_CUresult cuCtxDestroy_v2(hp_CUcontext ctx)
{
	return ctx_destroy(NEXT(cuCtxDestroy_v2), ctx);
}

static hp_CUresult lk_cuCtxDestroy_v2(hp_CUcontext ctx)
{
	return ctx_destroy(LOOKED_UP(cuCtxDestroy_v2), ctx);
}

/* ---- what the driver answers about memory ---- */
HP_EXPORT hp_CUresult cuPointerGetAttribute(void *data, int attr,
					    hp_CUdeviceptr p)
{
	return ptr_attr(NEXT(cuPointerGetAttribute), data, attr, p);
}

static hp_CUresult lk_cuPointerGetAttribute(void *data, int attr,
					    hp_CUdeviceptr p)
{
	return ptr_attr(LOOKED_UP(cuPointerGetAttribute), data, attr, p);
}

HP_EXPORT hp_CUresult cuPointerGetAttributes(unsigned n, int *attrs,
					     void **data, hp_CUdeviceptr p)
{
	return ptr_attrs(NEXT(cuPointerGetAttributes), n, attrs, data, p);
}

static hp_CUresult lk_cuPointerGetAttributes(unsigned n, int *attrs,
					     void **data, hp_CUdeviceptr p)
{
	return ptr_attrs(LOOKED_UP(cuPointerGetAttributes), n, attrs, data, p);
}

HP_EXPORT hp_CUresult cuMemHostGetFlags(unsigned *flags, void *p)
{
	return host_flags(NEXT(cuMemHostGetFlags), flags, p);
}

static hp_CUresult lk_cuMemHostGetFlags(unsigned *flags, void *p)
{
	return host_flags(LOOKED_UP(cuMemHostGetFlags), flags, p);
}

HP_EXPORT hp_CUresult cuMemHostGetDevicePointer_v2(hp_CUdeviceptr *d, void *p,
						   unsigned fl)
{
	return host_devptr_v2(NEXT(cuMemHostGetDevicePointer_v2), d, p, fl);
}

static hp_CUresult lk_cuMemHostGetDevicePointer_v2(hp_CUdeviceptr *d, void *p,
						   unsigned fl)
{
	return host_devptr_v2(LOOKED_UP(cuMemHostGetDevicePointer_v2), d, p,
			      fl);
}

HP_EXPORT hp_CUresult cuMemHostGetDevicePointer(unsigned *d, void *p,
						unsigned fl)
{
	return host_devptr(NEXT(cuMemHostGetDevicePointer), d, p, fl);
}

static hp_CUresult lk_cuMemHostGetDevicePointer(unsigned *d, void *p,
						unsigned fl)
{
	return host_devptr(LOOKED_UP(cuMemHostGetDevicePointer), d, p, fl);
}

/* ---- graph capture ---- */
HP_EXPORT hp_CUresult cuStreamBeginCapture(hp_cudaStream_t s)
{
	return begin_capture(NEXT(cuStreamBeginCapture), 0, s);
}

static hp_CUresult lk_cuStreamBeginCapture(hp_cudaStream_t s)
{
	return begin_capture(LOOKED_UP(cuStreamBeginCapture), 0, s);
}

HP_EXPORT hp_CUresult cuStreamBeginCapture_ptsz(hp_cudaStream_t s)
{
	return begin_capture(NEXT(cuStreamBeginCapture_ptsz), 1, s);
}

static hp_CUresult lk_cuStreamBeginCapture_ptsz(hp_cudaStream_t s)
{
	return begin_capture(LOOKED_UP(cuStreamBeginCapture_ptsz), 1, s);
}

HP_EXPORT hp_CUresult cuStreamBeginCapture_v2(hp_cudaStream_t s, int mode)
{
	return begin_capture_v2(NEXT(cuStreamBeginCapture_v2), 0, s, mode);
}

static hp_CUresult lk_cuStreamBeginCapture_v2(hp_cudaStream_t s, int mode)
{
	return begin_capture_v2(LOOKED_UP(cuStreamBeginCapture_v2), 0, s, mode);
}

HP_EXPORT hp_CUresult cuStreamBeginCapture_v2_ptsz(hp_cudaStream_t s, int mode)
{
	return begin_capture_v2(NEXT(cuStreamBeginCapture_v2_ptsz), 1, s, mode);
}

static hp_CUresult lk_cuStreamBeginCapture_v2_ptsz(hp_cudaStream_t s, int mode)
{
	return begin_capture_v2(LOOKED_UP(cuStreamBeginCapture_v2_ptsz), 1, s,
				mode);
}

HP_EXPORT hp_CUresult cuStreamBeginCaptureToGraph(hp_cudaStream_t s, void *g,
					       const void *deps,
					       const void *data, size_t n,
					       int mode)
{
	return begin_capture_tg(NEXT(cuStreamBeginCaptureToGraph), 0, s, g,
				deps, data, n, mode);
}

static hp_CUresult lk_cuStreamBeginCaptureToGraph(hp_cudaStream_t s, void *g,
						  const void *deps,
						  const void *data, size_t n,
						  int mode)
{
	return begin_capture_tg(LOOKED_UP(cuStreamBeginCaptureToGraph), 0, s,
				g, deps, data, n, mode);
}

HP_EXPORT hp_CUresult cuStreamBeginCaptureToGraph_ptsz(
    hp_cudaStream_t s, void *g, const void *deps, const void *data, size_t n,
    int mode)
{
	return begin_capture_tg(NEXT(cuStreamBeginCaptureToGraph_ptsz), 1, s,
				g, deps, data, n, mode);
}

static hp_CUresult lk_cuStreamBeginCaptureToGraph_ptsz(
    hp_cudaStream_t s, void *g, const void *deps, const void *data, size_t n,
    int mode)
{
	return begin_capture_tg(LOOKED_UP(cuStreamBeginCaptureToGraph_ptsz), 1,
				s, g, deps, data, n, mode);
}

HP_EXPORT hp_CUresult cuStreamEndCapture(hp_cudaStream_t s, void **g)
{
	return end_capture(NEXT(cuStreamEndCapture), 0, s, g);
}

static hp_CUresult lk_cuStreamEndCapture(hp_cudaStream_t s, void **g)
{
	return end_capture(LOOKED_UP(cuStreamEndCapture), 0, s, g);
}

HP_EXPORT hp_CUresult cuStreamEndCapture_ptsz(hp_cudaStream_t s, void **g)
{
	return end_capture(NEXT(cuStreamEndCapture_ptsz), 1, s, g);
}

static hp_CUresult lk_cuStreamEndCapture_ptsz(hp_cudaStream_t s, void **g)
{
	return end_capture(LOOKED_UP(cuStreamEndCapture_ptsz), 1, s, g);
}

/* ---- lookups ---- */
HP_EXPORT hp_CUresult cuGetProcAddress(const char *symbol, void **pfn, int ver,
				       hp_cuuint64_t flags)
{
	return gpa(NEXT(cuGetProcAddress), symbol, pfn, ver, flags);
}

static hp_CUresult lk_cuGetProcAddress(const char *symbol, void **pfn, int ver,
				       hp_cuuint64_t flags)
{
	return gpa(LOOKED_UP(cuGetProcAddress), symbol, pfn, ver, flags);
}

HP_EXPORT hp_CUresult cuGetProcAddress_v2(const char *symbol, void **pfn,
					  int ver, hp_cuuint64_t flags,
					  int *status)
{
	return gpa_v2(NEXT(cuGetProcAddress_v2), symbol, pfn, ver, flags,
		      status);
}

static hp_CUresult lk_cuGetProcAddress_v2(const char *symbol, void **pfn,
					  int ver, hp_cuuint64_t flags,
					  int *status)
{
	return gpa_v2(LOOKED_UP(cuGetProcAddress_v2), symbol, pfn, ver, flags,
		      status);
}

/* ---- the lookup table, from the same list ----
 * Per entry point: the name cuGetProcAddress takes, the CUDA version from
 * which the driver hands out this form, which stream form it is (an entry
 * point without a stream serves both), its exported name, and the
 * looked-up wrapper with its slot. */
enum { LEGACY, PER_THREAD, ANY };
static const struct variant {
	const char *base;
	int since;
	int stream;
	const char *name;
	_Atomic(void *) *slot;
	void *wrapper;
} variants[] = {
#define HP_CUDRV(base, since, stream, name)                                   \
	{#base, since, stream, #name, &lkslot_##name, (void *)lk_##name},
#include "hooks_cudrv.def"
#undef HP_CUDRV
};
#define NVARIANTS (sizeof(variants) / sizeof(variants[0]))

int hp_cudrv_wrapped_name(const char *name)
{
	for (size_t i = 0; i < NVARIANTS; i++)
		if (strcmp(variants[i].name, name) == 0)
			return 1;
	return 0;
}

/* Which form of `symbol` the driver hands out for (version, flags): the
 * newest one at or below version, in the stream form the flags ask. */
static const struct variant *pick(const char *symbol, int version,
				  unsigned long long flags)
{
	int stream = (flags & HP_CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)
			 ? PER_THREAD
			 : LEGACY;
	const struct variant *best = NULL;
	for (size_t i = 0; i < NVARIANTS; i++) {
		const struct variant *v = &variants[i];
		if ((v->stream == stream || v->stream == ANY) &&
		    v->since <= version && strcmp(v->base, symbol) == 0 &&
		    (best == NULL || v->since > best->since))
			best = v;
	}
	return best;
}

static int is_driver_base(const char *symbol)
{
	for (size_t i = 0; i < NVARIANTS; i++)
		if (strcmp(variants[i].base, symbol) == 0)
			return 1;
	return 0;
}

/* Learn fn as the looked-up form's next; 0 if the slot holds another
 * that is still loaded (one whose driver was unloaded is replaced: the
 * driver loaded again). */
static int learn(_Atomic(void *) *slot, void *fn)
{
	void *cur = NULL;
	hp_obj_t o;
	/* release: pairs with the acquire in lk_next */
	while (!atomic_compare_exchange_strong_explicit(
	    slot, &cur, fn, memory_order_release, memory_order_acquire)) {
		if (cur == fn)
			return 1;
		if (hp_obj_of(cur, &o))
			return 0;
	}
	return 1;
}

void *hp_cudrv_wrap(const char *symbol, void *fn, int version,
		    unsigned long long flags)
{
	const struct variant *v = NULL;
	if (hp_is_self(fn))
		return fn; /* already one of hostpin's */
	if (version == 0) {
		for (size_t i = 0; i < NVARIANTS && !v; i++)
			if (strcmp(variants[i].name, symbol) == 0)
				v = &variants[i];
	} else {
		v = pick(symbol, version, flags);
		if (v == NULL && is_driver_base(symbol) &&
		    strstr(symbol, "Memcpy") && strstr(symbol, "Async"))
			/* a form older than any hostpin hooks (CUDA < 3.2
			 * 32-bit copies): followed as an unknown one */
			return hp_unknown_wrap(symbol, fn);
	}
	/* A copy entry point hostpin has no hook for (a newer CUDA): its
	 * calls keep pageable semantics (unknown.c); registration stays on. */
	if (v == NULL && hp_coverage_unguarded(symbol))
		return hp_unknown_wrap(symbol, fn);
	if (v == NULL)
		return fn;
	if (!learn(v->slot, fn)) {
		/* a second driver, or a layer that returns its own: leave
		 * its function alone rather than call the wrong one */
		HP_LOG_ONCE(HP_LOG_WARN, "%s: two different definitions seen; "
			    "the second is not guarded", v->name);
		return fn;
	}
	return v->wrapper;
}
