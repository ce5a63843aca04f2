/* How the CUDA runtime's hooks are put together (hooks/cudart_*.c), one
 * file per family of entry points: asynchronous copies, synchronous copies,
 * memory (registrations the program makes, the end of a context), graph
 * capture, and driver lookups with the table of the runtime's names.  They
 * act where the runtime is dynamically linked.  The runtime calls the driver
 * underneath; the driver's hooks then pass straight through
 * (hp_hook_enter), so each copy gets one policy decision, here.
 *
 * Each entry point is written out by its own name, calling one body per
 * kind of entry point with the definition its caller would have reached
 * without hostpin (resolve.h).  hooks_cudart.def lists the names once more,
 * each with its family: a family's file builds from its own lines the
 * next_NAME slots of its names and its part of the table of lookups on a
 * runtime's handle. */
#ifndef HP_CUDART_H
#define HP_CUDART_H
#include <string.h>

#include "../hooks.h"
#include "../base/resolve.h"
#include "../copy/stage.h"

/* What the exported NAME calls: the definition its caller would have
 * reached without hostpin. */
#define NEXT(name) HP_FWD(next_##name)

static inline void host_kind(hp_copy_t *c, int kind, const void *dst,
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
static inline void host_pitched(hp_copy_t *c, const void *p, size_t pitch,
			 size_t ysize, size_t w, size_t h, size_t d)
{
	if (p && w && h && d)
		hp_copy_host(c, p, ((d - 1) * ysize + (h - 1)) * pitch + w);
}

static inline int kind_src_host(int k)
{
	return k == HP_cudaMemcpyHostToDevice || k == HP_cudaMemcpyHostToHost ||
	       k == HP_cudaMemcpyDefault;
}

static inline int kind_dst_host(int k)
{
	return k == HP_cudaMemcpyDeviceToHost || k == HP_cudaMemcpyHostToHost ||
	       k == HP_cudaMemcpyDefault;
}

static inline void host_kind_2d(hp_copy_t *c, int kind, const void *dst, size_t dp,
			 const void *src, size_t sp, size_t w, size_t h)
{
	if (kind_src_host(kind))
		host_pitched(c, src, sp, 0, w, h, 1);
	if (kind_dst_host(kind))
		host_pitched(c, dst, dp, 0, w, h, 1);
}

static inline const char *pos3d(const struct hp_cudaPitchedPtr *p, size_t x,
			 size_t y, size_t z)
{
	return p->ptr ? (const char *)p->ptr + (z * p->ysize + y) * p->pitch + x
		      : NULL;
}

/* Bytes an element of a copy with a CUDA array a (cudaMemcpy3DParms: its
 * extent's width and the array's position count the array's elements; a
 * pointer's position counts bytes): the driver's description of a
 * (hp_cuda_array_geom); 1 without an array; 0 if the driver cannot say
 * (logged once: the copy then goes to the runtime as it is). */
static inline size_t array_elem(void *a)
{
	struct hp_cuda_array g;
	if (a == NULL)
		return 1;
	return hp_cuda_stage_fns() && hp_cuda_array_geom(a, &g) == 0 ? g.es : 0;
}

static inline void host_3dparms(hp_copy_t *c, const hp_cudaMemcpy3DParms *p)
{
	if (p == NULL)
		return;
	size_t w = p->extent.width, h = p->extent.height, d = p->extent.depth;
	/* with an array side: the host rows are width elements of the
	 * array's size (where not known, width bytes, as before) */
	size_t es = p->srcArray || p->dstArray
			? array_elem(p->srcArray ? p->srcArray : p->dstArray)
			: 1;
	if (es > 1 && w <= SIZE_MAX / es)
		w *= es;
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
static inline void host_3dpeer(hp_copy_t *c, const hp_cudaMemcpy3DPeerParms *p)
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

static inline void host_batch(hp_copy_t *c, void *const *dsts,
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
static inline int rt_version(const void *ra)
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

/* Staged copies (plan.c), for the kinds that name their direction: the
 * DMA goes through the driver on the program's stream (the runtime's
 * streams are the driver's).  A driver error is not in the runtime's
 * terms: the whole copy then goes to the runtime as it is (it is
 * idempotent, and queued after what was staged), which answers in its
 * own terms. */
#define RT_HOW(sync) (HP_STAGE_RETRY | ((sync) ? HP_STAGE_SYNC : 0))
static inline int stage_kind(hp_copy_t *c, void *dst, const void *src,
		      size_t n, int kind, hp_cudaStream_t s, int ptsz,
		      int sync)
{
	if (kind == HP_cudaMemcpyHostToDevice)
		return hp_stage_htod(c, (uintptr_t)dst, src, n, s, ptsz,
				     RT_HOW(sync));
	if (kind == HP_cudaMemcpyDeviceToHost)
		return hp_stage_dtoh(c, dst, (uintptr_t)src, n, s, ptsz,
				     RT_HOW(sync));
	return HP_COPY_PASSED;
}
/* CUDA 13.2's copy with attributes names no direction: asked of the
 * driver (plan.c).  Errors as stage_kind. */
static inline int stage_unified(hp_copy_t *c, void *dst, const void *src,
			 size_t n, hp_cudaStream_t s, int ptsz)
{
	return hp_stage_unified(c, (uintptr_t)dst, (uintptr_t)src, n, s, ptsz,
				RT_HOW(0));
}
/* CALL: stage_kind and the others: a copy the engine made (and ended, as
 * its plan says: with HP_STAGE_RETRY a success, or an error of a copy the
 * driver must not get whole, which the runtime's call would hand it:
 * the driver's code, which the runtime's numbering of a copy's errors
 * shares) returns its result; a passed one (HP_COPY_PASSED) is the
 * hook's own call. */
#define STAGED_BY(CALL)                                                       \
	int st_ = (CALL);                                                     \
	if (st_ != HP_COPY_PASSED)                                            \
		return (hp_cudaError_t)st_;
#define STAGED_KIND(sync) STAGED_BY(stage_kind(&c_, dst, src, n, kind, s, ptsz, sync))

/* A 2D copy whose kind names its direction (stage.c): its descriptor in
 * the driver's terms, host side HOST and device side DEVICE.  Errors as
 * stage_kind. */
static inline int stage_kind_2d(hp_copy_t *c, void *dst, size_t dp,
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
		return HP_COPY_PASSED;
	}
	return hp_stage_2d(c, &q, s, ptsz, RT_HOW(sync));
}
#define STAGED_KIND_2D(sync)                                                  \
	STAGED_BY(stage_kind_2d(&c_, dst, dp, src, sp, w, h, kind, s, ptsz, sync))

/* A 3D copy whose kind names its direction, between pitched pointers, or
 * between a pitched host pointer and a CUDA array on the device side: the
 * driver's descriptor (positions and the extent's width in bytes: an
 * array's element size asked of the driver; a pitched pointer's ysize its
 * slice height), staged slice by slice (stage.c).  Errors as
 * stage_kind. */
static inline int stage_kind_3d(hp_copy_t *c, const hp_cudaMemcpy3DParms *p,
			 hp_cudaStream_t s, int ptsz, int sync)
{
	if (p == NULL || (p->srcArray && p->dstArray) ||
	    (p->kind != HP_cudaMemcpyHostToDevice &&
	     p->kind != HP_cudaMemcpyDeviceToHost))
		return HP_COPY_PASSED;
	int htod = p->kind == HP_cudaMemcpyHostToDevice;
	if ((htod && p->srcArray) || (!htod && p->dstArray))
		return HP_COPY_PASSED; /* no host side */
	size_t es = array_elem(htod ? p->dstArray : p->srcArray);
	if (es == 0 || p->extent.width > SIZE_MAX / es ||
	    p->srcPos.x > SIZE_MAX / es || p->dstPos.x > SIZE_MAX / es)
		return HP_COPY_PASSED;
	hp_CUDA_MEMCPY3D q;
	memset(&q, 0, sizeof(q));
	q.srcXInBytes = p->srcPos.x, q.srcY = p->srcPos.y, q.srcZ = p->srcPos.z;
	q.srcPitch = p->srcPtr.pitch, q.srcHeight = p->srcPtr.ysize;
	q.dstXInBytes = p->dstPos.x, q.dstY = p->dstPos.y, q.dstZ = p->dstPos.z;
	q.dstPitch = p->dstPtr.pitch, q.dstHeight = p->dstPtr.ysize;
	q.WidthInBytes = p->extent.width * es, q.Height = p->extent.height;
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
	if (p->dstArray) /* its position in elements */
		q.dstMemoryType = HP_CU_MEMORYTYPE_ARRAY, q.dstDevice = 0,
		q.dstArray = p->dstArray, q.dstXInBytes *= es;
	if (p->srcArray)
		q.srcMemoryType = HP_CU_MEMORYTYPE_ARRAY, q.srcDevice = 0,
		q.srcArray = p->srcArray, q.srcXInBytes *= es;
	return hp_stage_3d(c, &q, s, ptsz, RT_HOW(sync));
}
#define STAGED_KIND_3D(sync) STAGED_BY(stage_kind_3d(&c_, p, s, ptsz, sync))

/* ---- the list, by family ----
 * One line of hooks_cudart.def, HP_CUDART(family, name), goes to
 * HP_CUDART_family: a family's file defines its own as HP_CUDART_EMIT
 * before it includes this header; every other family's is empty there. */
#define HP_CUDART(fam, name) HP_CUDART_##fam(name)
#ifndef HP_CUDART_copy_async
#define HP_CUDART_copy_async(name)
#endif
#ifndef HP_CUDART_copy_sync
#define HP_CUDART_copy_sync(name)
#endif
#ifndef HP_CUDART_memory
#define HP_CUDART_memory(name)
#endif
#ifndef HP_CUDART_capture
#define HP_CUDART_capture(name)
#endif
#ifndef HP_CUDART_lookup
#define HP_CUDART_lookup(name)
#endif

/* One entry of the table of the runtime's names: the exported name, where
 * its calls go on, and hostpin's wrapper. */
struct hp_cudart_name {
	const char *name;
	hp_fwd_t *next;
	void *wrapper;
};
/* Each family's part of the table, ended by an entry without a name. */
HP_HIDDEN extern const struct hp_cudart_name hp_cudart_copy_async[];
HP_HIDDEN extern const struct hp_cudart_name hp_cudart_copy_sync[];
HP_HIDDEN extern const struct hp_cudart_name hp_cudart_memory[];
HP_HIDDEN extern const struct hp_cudart_name hp_cudart_capture[];
HP_HIDDEN extern const struct hp_cudart_name hp_cudart_lookup[];

/* In a family's file: per entry point of the family, next_NAME, where its
 * calls go on; and its entry in the table. */
#define HP_CUDART_SLOTS(name) static hp_fwd_t next_##name = HP_FWD_INIT(#name);
#define HP_CUDART_ENTRY(name) {#name, &next_##name, (void *)name},
#endif
