/* Hooks on the CUDA driver's copy (async and sync), registration and lookup entry
 * points.  Every way a program reaches the driver ends here: a call linked
 * to the exported name; a pointer from cuGetProcAddress (how the CUDA
 * runtime, static or dynamic, reaches the driver) or from
 * cudaGetDriverEntryPoint; a pointer from dlsym on the driver's handle
 * (hooks_dlsym.c).  Linked calls forward to the next definition; looked-up
 * ones to exactly the function the driver returned. */
#include <string.h>

#include "hooks.h"
#include "resolve.h"

/* One side of a 2D or 3D descriptor, if it is host memory (or unified,
 * which may be): every byte from its first to its last row. */
static void host_side(hp_copy_t *c, hp_CUmemorytype m, const void *host,
		      hp_CUdeviceptr dev, size_t x, size_t y, size_t z,
		      size_t pitch, size_t height, size_t w, size_t h, size_t d)
{
	const char *p = m == HP_CU_MEMORYTYPE_HOST	  ? host
			: m == HP_CU_MEMORYTYPE_UNIFIED ? (const char *)(uintptr_t)dev
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
/* In an exported hook: the caller is the hook's own caller. */
#define sym_next(f, name) sym_next_at(f, __builtin_return_address(0))

static void *lk_next(_Atomic(void *) *slot)
{
	/* acquire: pairs with the release in learn() */
	return atomic_load_explicit(slot, memory_order_acquire);
}

/* DRV_HOOK(name, type, params, args, HOSTS, END): the exported wrapper
 * `name` and the looked-up one `lk_name`, each with its own next slot, both
 * with hooks.h's copy body; DRV for an async copy, DRVS for a sync one. */
#define DRV_HOOK(name, type, params, args, HOSTS, END)                        \
	static hp_fwd_t sym_##name = HP_FWD_INIT(#name);                      \
	static _Atomic(void *) lkslot_##name;                                 \
	HP_EXPORT hp_CUresult name params                                     \
	{                                                                     \
		HP_COPY_BODY(sym_next(&sym_##name, #name), type, hp_CUresult, \
			     args, HOSTS, END)                                \
	}                                                                     \
	static hp_CUresult lk_##name params                                   \
	{                                                                     \
		HP_COPY_BODY(lk_next(&lkslot_##name), type, hp_CUresult, args, \
			     HOSTS, END)                                      \
	}
#define DRV(name, type, params, args, HOSTS, stream, ptsz)                    \
	DRV_HOOK(name, type, params, args, HOSTS,                             \
		 hp_copy_end(&c_, stream, ptsz, e_ == HP_CUDA_SUCCESS))
/* Both stream forms of one entry point. */
#define DRV2(name, params, args, HOSTS, stream)                               \
	DRV(name, hp_##name##_t, params, args, HOSTS, stream, 0)              \
	DRV(name##_ptsz, hp_##name##_t, params, args, HOSTS, stream, 1)

DRV2(cuMemcpyHtoDAsync_v2,
     (hp_CUdeviceptr d, const void *h, size_t n, hp_cudaStream_t s),
     (d, h, n, s), hp_copy_host(&c_, h, n), s)
DRV2(cuMemcpyDtoHAsync_v2,
     (void *h, hp_CUdeviceptr d, size_t n, hp_cudaStream_t s), (h, d, n, s),
     hp_copy_host(&c_, h, n), s)
DRV2(cuMemcpyAsync,
     (hp_CUdeviceptr d, hp_CUdeviceptr sr, size_t n, hp_cudaStream_t s),
     (d, sr, n, s),
     hp_copy_host(&c_, (const void *)(uintptr_t)sr, n);
     hp_copy_host(&c_, (const void *)(uintptr_t)d, n), s)
DRV2(cuMemcpy2DAsync_v2, (const hp_CUDA_MEMCPY2D *p, hp_cudaStream_t s),
     (p, s), host_2d(&c_, p), s)
DRV2(cuMemcpy3DAsync_v2, (const hp_CUDA_MEMCPY3D *p, hp_cudaStream_t s),
     (p, s), host_3d(&c_, p), s)
DRV2(cuMemcpy3DPeerAsync,
     (const hp_CUDA_MEMCPY3D_PEER *p, hp_cudaStream_t s), (p, s),
     host_3dpeer(&c_, p), s)
DRV2(cuMemcpyHtoAAsync_v2,
     (hp_CUarray a, size_t off, const void *h, size_t n, hp_cudaStream_t s),
     (a, off, h, n, s), hp_copy_host(&c_, h, n), s)
DRV2(cuMemcpyAtoHAsync_v2,
     (void *h, hp_CUarray a, size_t off, size_t n, hp_cudaStream_t s),
     (h, a, off, n, s), hp_copy_host(&c_, h, n), s)
DRV2(cuMemcpyBatchAsync,
     (hp_CUdeviceptr *d, hp_CUdeviceptr *sr, size_t *sz, size_t n,
      hp_CUmemcpyAttributes *at, size_t *ai, size_t na, size_t *fail,
      hp_cudaStream_t s),
     (d, sr, sz, n, at, ai, na, fail, s), host_batch(&c_, d, sr, sz, n), s)
DRV2(cuMemcpyBatchAsync_v2,
     (hp_CUdeviceptr *d, hp_CUdeviceptr *sr, size_t *sz, size_t n,
      hp_CUmemcpyAttributes *at, size_t *ai, size_t na, hp_cudaStream_t s),
     (d, sr, sz, n, at, ai, na, s), host_batch(&c_, d, sr, sz, n), s)
DRV2(cuMemcpy3DBatchAsync,
     (size_t n, hp_CUDA_MEMCPY3D_BATCH_OP *ops, size_t *fail,
      unsigned long long fl, hp_cudaStream_t s),
     (n, ops, fail, fl, s), hp_copy_host_ops(&c_, ops, n), s)
DRV2(cuMemcpy3DBatchAsync_v2,
     (size_t n, hp_CUDA_MEMCPY3D_BATCH_OP *ops, unsigned long long fl,
      hp_cudaStream_t s),
     (n, ops, fl, s), hp_copy_host_ops(&c_, ops, n), s)

/* ---- synchronous copies: counted towards registration, no wait ----
 * DRVS / DRVS2 as DRV / DRV2, with the per-thread
 * default stream form named _ptds. */
#define DRVS(name, type, params, args, HOSTS)                                 \
	DRV_HOOK(name, type, params, args, HOSTS,                             \
		 hp_copy_sync_end(&c_, e_ == HP_CUDA_SUCCESS))
#define DRVS2(name, params, args, HOSTS)                                      \
	DRVS(name, hp_##name##_t, params, args, HOSTS)                        \
	DRVS(name##_ptds, hp_##name##_t, params, args, HOSTS)

DRVS2(cuMemcpyHtoD_v2, (hp_CUdeviceptr d, const void *h, size_t n), (d, h, n),
      hp_copy_host(&c_, h, n))
DRVS2(cuMemcpyDtoH_v2, (void *h, hp_CUdeviceptr d, size_t n), (h, d, n),
      hp_copy_host(&c_, h, n))
DRVS2(cuMemcpy, (hp_CUdeviceptr d, hp_CUdeviceptr sr, size_t n), (d, sr, n),
      hp_copy_host(&c_, (const void *)(uintptr_t)sr, n);
      hp_copy_host(&c_, (const void *)(uintptr_t)d, n))
DRVS2(cuMemcpy2D_v2, (const hp_CUDA_MEMCPY2D *p), (p), host_2d(&c_, p))
DRVS2(cuMemcpy2DUnaligned_v2, (const hp_CUDA_MEMCPY2D *p), (p),
      host_2d(&c_, p))
DRVS2(cuMemcpy3D_v2, (const hp_CUDA_MEMCPY3D *p), (p), host_3d(&c_, p))
DRVS2(cuMemcpyHtoA_v2,
      (hp_CUarray a, size_t off, const void *h, size_t n), (a, off, h, n),
      hp_copy_host(&c_, h, n))
DRVS2(cuMemcpyAtoH_v2, (void *h, hp_CUarray a, size_t off, size_t n),
      (h, a, off, n), hp_copy_host(&c_, h, n))

/* ---- registrations made by the program itself ---- */
#define REG_BODY(fnexpr)                                                      \
	hp_cuMemHostRegister_v2_t fn_ = (hp_cuMemHostRegister_v2_t)(fnexpr);  \
	if (fn_ == NULL)                                                      \
		return HP_CUDA_ERROR_NOT_FOUND;                               \
	if (!hp_hook_enter())                                                 \
		return fn_(p, n, flags);                                      \
	hp_step_aside(p, n);                                                  \
	hp_CUresult e_ = fn_(p, n, flags);                                    \
	if (e_ != HP_CUDA_SUCCESS)                                            \
		hp_step_aside_failed(p);                                      \
	hp_hook_leave();                                                      \
	return e_;
#define UNREG_BODY(fnexpr)                                                    \
	hp_cuMemHostUnregister_t fn_ = (hp_cuMemHostUnregister_t)(fnexpr);    \
	if (fn_ == NULL)                                                      \
		return HP_CUDA_ERROR_NOT_FOUND;                               \
	if (!hp_hook_enter())                                                 \
		return fn_(p);                                                \
	hp_CUresult e_ = fn_(p);                                              \
	if (e_ == HP_CUDA_SUCCESS)                                            \
		hp_step_aside_released(p);                                    \
	hp_hook_leave();                                                      \
	return e_;
#define DRV_REG(name)                                                         \
	static hp_fwd_t sym_##name = HP_FWD_INIT(#name);                      \
	static _Atomic(void *) lkslot_##name;                                 \
	HP_EXPORT hp_CUresult name(void *p, size_t n, unsigned flags)         \
	{                                                                     \
		REG_BODY(sym_next(&sym_##name, #name))                        \
	}                                                                     \
	static hp_CUresult lk_##name(void *p, size_t n, unsigned flags)       \
	{                                                                     \
		REG_BODY(lk_next(&lkslot_##name))                             \
	}
DRV_REG(cuMemHostRegister)
DRV_REG(cuMemHostRegister_v2)
static hp_fwd_t sym_cuMemHostUnregister = HP_FWD_INIT("cuMemHostUnregister");
static _Atomic(void *) lkslot_cuMemHostUnregister;
HP_EXPORT hp_CUresult cuMemHostUnregister(void *p)
{
	UNREG_BODY(sym_next(&sym_cuMemHostUnregister, "cuMemHostUnregister"))
}
static hp_CUresult lk_cuMemHostUnregister(void *p)
{
	UNREG_BODY(lk_next(&lkslot_cuMemHostUnregister))
}

/* ---- entry points that end a context ----
 * The registrations a context made die with it; the blocks it held go back
 * to pending (backend_cuda.c), to be registered again once a context is
 * active.  After the call: only a successful one ended anything. */
#define CTX_BODY(fnexpr, type, arg, BEFORE, AFTER)                            \
	type fn_ = (type)(fnexpr);                                            \
	if (fn_ == NULL)                                                      \
		return HP_CUDA_ERROR_NOT_FOUND;                               \
	if (!hp_hook_enter())                                                 \
		return fn_(arg);                                              \
	BEFORE;                                                               \
	hp_CUresult e_ = fn_(arg);                                            \
	if (e_ == HP_CUDA_SUCCESS)                                            \
		HP_GUARDED(AFTER);                                            \
	hp_hook_leave();                                                      \
	return e_;
#define DRV_CTX(name, type, ptype, BEFORE, AFTER)                             \
	static hp_fwd_t sym_##name = HP_FWD_INIT(#name);                      \
	static _Atomic(void *) lkslot_##name;                                 \
	HP_EXPORT hp_CUresult name(ptype a_)                                  \
	{                                                                     \
		CTX_BODY(sym_next(&sym_##name, #name), type, a_, BEFORE,      \
			 AFTER)                                               \
	}                                                                     \
	static hp_CUresult lk_##name(ptype a_)                                \
	{                                                                     \
		CTX_BODY(lk_next(&lkslot_##name), type, a_, BEFORE, AFTER)    \
	}
DRV_CTX(cuDevicePrimaryCtxReset, hp_cuDevicePrimaryCtxReset_t, hp_CUdevice, ,
	hp_cuda_device_reset(a_))
DRV_CTX(cuDevicePrimaryCtxReset_v2, hp_cuDevicePrimaryCtxReset_t, hp_CUdevice,
	, hp_cuda_device_reset(a_))
/* A release ends the context only when it dropped the last reference. */
DRV_CTX(cuDevicePrimaryCtxRelease, hp_cuDevicePrimaryCtxRelease_t, hp_CUdevice,
	, hp_cuda_device_released(a_))
DRV_CTX(cuDevicePrimaryCtxRelease_v2, hp_cuDevicePrimaryCtxRelease_t,
	hp_CUdevice, , hp_cuda_device_released(a_))
DRV_CTX(cuCtxDestroy, hp_cuCtxDestroy_t, hp_CUcontext, ,
	hp_cuda_ctx_destroyed(a_))
DRV_CTX(cuCtxDestroy_v2, hp_cuCtxDestroy_t, hp_CUcontext, ,
	hp_cuda_ctx_destroyed(a_))

/* ---- CUDA graph capture (capture.c) ----
 * Counted at the begin (before the driver's: from then on hostpin makes no
 * call a capture prohibits) and the end (after it; then what waited runs).
 * The form without a mode captures in global mode; a per-thread-stream
 * form's stream 0 is the per-thread stream. */
typedef hp_CUresult (*hp_cuStreamBeginCapture_t)(hp_cudaStream_t);
typedef hp_CUresult (*hp_cuStreamBeginCapture_v2_t)(hp_cudaStream_t, int);
typedef hp_CUresult (*hp_cuStreamEndCapture_t)(hp_cudaStream_t, void **);
static hp_cudaStream_t cap_stream(hp_cudaStream_t s, int ptsz)
{
	return s == NULL && ptsz ? HP_CU_STREAM_PER_THREAD : s;
}
#define CAP_BEGIN_BODY(fnexpr, type, args, s, mode)                           \
	type fn_ = (type)(fnexpr);                                            \
	if (fn_ == NULL)                                                      \
		return HP_CUDA_ERROR_NOT_FOUND;                               \
	if (!hp_hook_enter())                                                 \
		return fn_ args;                                              \
	int c_;                                                               \
	HP_GUARDED(c_ = hp_capture_begin(s, mode));                           \
	hp_CUresult e_ = fn_ args;                                            \
	if (e_ != HP_CUDA_SUCCESS)                                            \
		HP_GUARDED(hp_capture_begin_failed(s, c_));                   \
	hp_hook_leave();                                                      \
	return e_;
#define CAP_END_BODY(fnexpr, args, s)                                         \
	hp_cuStreamEndCapture_t fn_ = (hp_cuStreamEndCapture_t)(fnexpr);      \
	if (fn_ == NULL)                                                      \
		return HP_CUDA_ERROR_NOT_FOUND;                               \
	if (!hp_hook_enter())                                                 \
		return fn_ args;                                              \
	hp_CUresult e_ = fn_ args;                                            \
	HP_GUARDED(hp_capture_end(s, e_));                                    \
	hp_hook_leave();                                                      \
	return e_;
/* The exported and looked-up forms of one entry point (name, its
 * per-thread-stream twin name_ptsz). */
#define CAP_HOOK(name, ptsz, params, BODY)                                    \
	static hp_fwd_t sym_##name = HP_FWD_INIT(#name);                      \
	static _Atomic(void *) lkslot_##name;                                 \
	HP_EXPORT hp_CUresult name params                                     \
	{                                                                     \
		BODY(sym_next(&sym_##name, #name), ptsz)                      \
	}                                                                     \
	static hp_CUresult lk_##name params                                   \
	{                                                                     \
		BODY(lk_next(&lkslot_##name), ptsz)                           \
	}
#define BEGIN1(fnexpr, pt)                                                    \
	CAP_BEGIN_BODY(fnexpr, hp_cuStreamBeginCapture_t, (s), cap_stream(s, pt), 0)
#define BEGIN2(fnexpr, pt)                                                    \
	CAP_BEGIN_BODY(fnexpr, hp_cuStreamBeginCapture_v2_t, (s, mode),       \
		       cap_stream(s, pt), mode)
#define END1(fnexpr, pt) CAP_END_BODY(fnexpr, (s, g), cap_stream(s, pt))
CAP_HOOK(cuStreamBeginCapture, 0, (hp_cudaStream_t s), BEGIN1)
CAP_HOOK(cuStreamBeginCapture_ptsz, 1, (hp_cudaStream_t s), BEGIN1)
CAP_HOOK(cuStreamBeginCapture_v2, 0, (hp_cudaStream_t s, int mode), BEGIN2)
CAP_HOOK(cuStreamBeginCapture_v2_ptsz, 1, (hp_cudaStream_t s, int mode), BEGIN2)
CAP_HOOK(cuStreamEndCapture, 0, (hp_cudaStream_t s, void **g), END1)
CAP_HOOK(cuStreamEndCapture_ptsz, 1, (hp_cudaStream_t s, void **g), END1)

/* ---- lookups ---- */
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

#define GPA_BODY(fnexpr, type, args)                                          \
	type fn_ = (type)(fnexpr);                                            \
	if (fn_ == NULL)                                                      \
		return HP_CUDA_ERROR_NOT_FOUND;                               \
	hp_CUresult e_ = fn_ args;                                            \
	if (e_ == HP_CUDA_SUCCESS && pfn != NULL)                             \
		*pfn = wrap_found(symbol, *pfn, ver, flags);                  \
	return e_;
static hp_fwd_t sym_cuGetProcAddress = HP_FWD_INIT("cuGetProcAddress"),
		sym_cuGetProcAddress_v2 = HP_FWD_INIT("cuGetProcAddress_v2");
static _Atomic(void *) lkslot_cuGetProcAddress, lkslot_cuGetProcAddress_v2;
HP_EXPORT hp_CUresult cuGetProcAddress(const char *symbol, void **pfn,
				       int ver, hp_cuuint64_t flags)
{
	GPA_BODY(sym_next(&sym_cuGetProcAddress, "cuGetProcAddress"),
		 hp_cuGetProcAddress_t, (symbol, pfn, ver, flags))
}
static hp_CUresult lk_cuGetProcAddress(const char *symbol, void **pfn,
				       int ver, hp_cuuint64_t flags)
{
	GPA_BODY(lk_next(&lkslot_cuGetProcAddress), hp_cuGetProcAddress_t,
		 (symbol, pfn, ver, flags))
}
HP_EXPORT hp_CUresult cuGetProcAddress_v2(const char *symbol, void **pfn,
					  int ver, hp_cuuint64_t flags,
					  int *status)
{
	GPA_BODY(sym_next(&sym_cuGetProcAddress_v2, "cuGetProcAddress_v2"),
		 hp_cuGetProcAddress_v2_t, (symbol, pfn, ver, flags, status))
}
static hp_CUresult lk_cuGetProcAddress_v2(const char *symbol, void **pfn,
					  int ver, hp_cuuint64_t flags,
					  int *status)
{
	GPA_BODY(lk_next(&lkslot_cuGetProcAddress_v2),
		 hp_cuGetProcAddress_v2_t, (symbol, pfn, ver, flags, status))
}

/* Every driver entry point hostpin wraps: the name cuGetProcAddress takes,
 * the CUDA version from which the driver hands out this form, whether it
 * is the per-thread-stream form, its exported name, and the looked-up
 * wrapper with its slot. */
static const struct variant {
	const char *base;
	int since;
	int ptsz;
	const char *name;
	_Atomic(void *) *slot;
	void *wrapper;
} variants[] = {
#define V(base, since, name)                                                  \
	{#base, since, 0, #name, &lkslot_##name, (void *)lk_##name},          \
	    {#base, since, 1, #name "_ptsz", &lkslot_##name##_ptsz,           \
	     (void *)lk_##name##_ptsz},
/* A synchronous copy: its per-thread default stream form is _ptds. */
#define VS(base, since, name)                                                 \
	{#base, since, 0, #name, &lkslot_##name, (void *)lk_##name},          \
	    {#base, since, 1, #name "_ptds", &lkslot_##name##_ptds,           \
	     (void *)lk_##name##_ptds},
#define V1(base, since, name)                                                 \
	{#base, since, 0, #name, &lkslot_##name, (void *)lk_##name},          \
	    {#base, since, 1, #name, &lkslot_##name, (void *)lk_##name},
	V(cuMemcpyHtoDAsync, 3020, cuMemcpyHtoDAsync_v2)
	V(cuMemcpyDtoHAsync, 3020, cuMemcpyDtoHAsync_v2)
	V(cuMemcpyAsync, 4000, cuMemcpyAsync)
	V(cuMemcpy2DAsync, 3020, cuMemcpy2DAsync_v2)
	V(cuMemcpy3DAsync, 3020, cuMemcpy3DAsync_v2)
	V(cuMemcpy3DPeerAsync, 4000, cuMemcpy3DPeerAsync)
	V(cuMemcpyHtoAAsync, 3020, cuMemcpyHtoAAsync_v2)
	V(cuMemcpyAtoHAsync, 3020, cuMemcpyAtoHAsync_v2)
	V(cuMemcpyBatchAsync, 12080, cuMemcpyBatchAsync)
	V(cuMemcpyBatchAsync, 13000, cuMemcpyBatchAsync_v2)
	V(cuMemcpy3DBatchAsync, 12080, cuMemcpy3DBatchAsync)
	V(cuMemcpy3DBatchAsync, 13000, cuMemcpy3DBatchAsync_v2)
	VS(cuMemcpyHtoD, 3020, cuMemcpyHtoD_v2)
	VS(cuMemcpyDtoH, 3020, cuMemcpyDtoH_v2)
	VS(cuMemcpy, 4000, cuMemcpy)
	VS(cuMemcpy2D, 3020, cuMemcpy2D_v2)
	VS(cuMemcpy2DUnaligned, 3020, cuMemcpy2DUnaligned_v2)
	VS(cuMemcpy3D, 3020, cuMemcpy3D_v2)
	VS(cuMemcpyHtoA, 3020, cuMemcpyHtoA_v2)
	VS(cuMemcpyAtoH, 3020, cuMemcpyAtoH_v2)
	V1(cuMemHostRegister, 4000, cuMemHostRegister)
	V1(cuMemHostRegister, 6050, cuMemHostRegister_v2)
	V1(cuMemHostUnregister, 4000, cuMemHostUnregister)
	V1(cuDevicePrimaryCtxReset, 7000, cuDevicePrimaryCtxReset)
	V1(cuDevicePrimaryCtxReset, 11000, cuDevicePrimaryCtxReset_v2)
	V1(cuDevicePrimaryCtxRelease, 7000, cuDevicePrimaryCtxRelease)
	V1(cuDevicePrimaryCtxRelease, 11000, cuDevicePrimaryCtxRelease_v2)
	V1(cuCtxDestroy, 2000, cuCtxDestroy)
	V1(cuCtxDestroy, 4000, cuCtxDestroy_v2)
	V(cuStreamBeginCapture, 10000, cuStreamBeginCapture)
	V(cuStreamBeginCapture, 10010, cuStreamBeginCapture_v2)
	V(cuStreamEndCapture, 10000, cuStreamEndCapture)
	V1(cuGetProcAddress, 11030, cuGetProcAddress)
	V1(cuGetProcAddress, 12000, cuGetProcAddress_v2)
#undef V
#undef VS
#undef V1
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
	int ptsz = (flags & HP_CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
	const struct variant *best = NULL;
	for (size_t i = 0; i < NVARIANTS; i++) {
		const struct variant *v = &variants[i];
		if (v->ptsz == ptsz && v->since <= version &&
		    strcmp(v->base, symbol) == 0 &&
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
		if (v == NULL && is_driver_base(symbol)) {
			/* a form older than any hostpin knows (CUDA < 3.2
			 * 32-bit copies): say so once, hand it out as is */
			HP_LOG_ONCE(HP_LOG_WARN, "%s asked at CUDA version %d: "
				    "a form hostpin does not guard", symbol,
				    version);
			hp_stat_fail("unguarded copy entry point looked up");
			return fn;
		}
	}
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
