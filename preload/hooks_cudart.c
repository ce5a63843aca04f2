/* Hooks on the CUDA runtime's copy (async and sync), registration and driver-lookup
 * entry points, where the runtime is dynamically linked.  The runtime calls
 * the driver underneath; the driver's hooks then pass straight through
 * (hp_hook_enter), so each copy gets one policy decision, here. */
#include <string.h>

#include "hooks.h"
#include "resolve.h"

/* The definition this hook's caller would have reached without hostpin
 * (resolve.h); in an exported hook only. */
#define NEXT(name) ((hp_##name##_t)HP_FWD(next_##name))
#define NEXT_SLOT(name) static hp_fwd_t next_##name = HP_FWD_INIT(#name)

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

#define RT_HOOK(name, params, args, HOSTS, END)                               \
	NEXT_SLOT(name);                                                      \
	HP_EXPORT hp_cudaError_t name params                                  \
	{                                                                     \
		HP_COPY_BODY(NEXT(name), hp_##name##_t, hp_cudaError_t, args, \
			     HOSTS, END)                                      \
	}
#define RT_COPY(name, params, args, HOSTS, stream, ptsz)                      \
	RT_HOOK(name, params, args, HOSTS,                                    \
		hp_copy_end(&c_, stream, ptsz, e_ == 0))
#define RT_COPY2(name, params, args, HOSTS, stream)                           \
	RT_COPY(name, params, args, HOSTS, stream, 0)                         \
	typedef hp_##name##_t hp_##name##_ptsz_t;                             \
	RT_COPY(name##_ptsz, params, args, HOSTS, stream, 1)

RT_COPY2(cudaMemcpyAsync,
	 (void *dst, const void *src, size_t n, hp_cudaMemcpyKind kind,
	  hp_cudaStream_t s),
	 (dst, src, n, kind, s), host_kind(&c_, kind, dst, src, n), s)
RT_COPY2(cudaMemcpy2DAsync,
	 (void *dst, size_t dp, const void *src, size_t sp, size_t w,
	  size_t h, hp_cudaMemcpyKind kind, hp_cudaStream_t s),
	 (dst, dp, src, sp, w, h, kind, s),
	 host_kind_2d(&c_, kind, dst, dp, src, sp, w, h), s)
RT_COPY2(cudaMemcpy3DAsync, (const hp_cudaMemcpy3DParms *p, hp_cudaStream_t s),
	 (p, s), host_3dparms(&c_, p), s)
RT_COPY2(cudaMemcpy3DPeerAsync,
	 (const hp_cudaMemcpy3DPeerParms *p, hp_cudaStream_t s), (p, s),
	 host_3dpeer(&c_, p), s)
RT_COPY2(cudaMemcpyToSymbolAsync,
	 (const void *sym, const void *src, size_t n, size_t off,
	  hp_cudaMemcpyKind kind, hp_cudaStream_t s),
	 (sym, src, n, off, kind, s), host_kind(&c_, kind, NULL, src, n), s)
RT_COPY2(cudaMemcpyFromSymbolAsync,
	 (void *dst, const void *sym, size_t n, size_t off,
	  hp_cudaMemcpyKind kind, hp_cudaStream_t s),
	 (dst, sym, n, off, kind, s), host_kind(&c_, kind, dst, NULL, n), s)

/* Synchronous copies: counted towards registration (HOSTPIN_PIN_AFTER), no
 * wait (they return after the copy); per-thread default stream form _ptds. */
#define RT_SYNC(name, params, args, HOSTS)                                    \
	RT_HOOK(name, params, args, HOSTS, hp_copy_sync_end(&c_, e_ == 0))
#define RT_SYNC2(name, params, args, HOSTS)                                   \
	RT_SYNC(name, params, args, HOSTS)                                    \
	typedef hp_##name##_t hp_##name##_ptds_t;                             \
	RT_SYNC(name##_ptds, params, args, HOSTS)

RT_SYNC2(cudaMemcpy,
	 (void *dst, const void *src, size_t n, hp_cudaMemcpyKind kind),
	 (dst, src, n, kind), host_kind(&c_, kind, dst, src, n))
RT_SYNC2(cudaMemcpy2D,
	 (void *dst, size_t dp, const void *src, size_t sp, size_t w,
	  size_t h, hp_cudaMemcpyKind kind),
	 (dst, dp, src, sp, w, h, kind), host_kind(&c_, kind, dst, src, w * h))
RT_SYNC2(cudaMemcpy3D, (const hp_cudaMemcpy3DParms *p), (p),
	 host_3dparms(&c_, p))
RT_SYNC2(cudaMemcpyToSymbol,
	 (const void *sym, const void *src, size_t n, size_t off,
	  hp_cudaMemcpyKind kind),
	 (sym, src, n, off, kind), host_kind(&c_, kind, NULL, src, n))
RT_SYNC2(cudaMemcpyFromSymbol,
	 (void *dst, const void *sym, size_t n, size_t off,
	  hp_cudaMemcpyKind kind),
	 (dst, sym, n, off, kind), host_kind(&c_, kind, dst, NULL, n))

/* The batch copies changed shape in CUDA 13 under the same names: 12.8
 * passes failIdx before the stream.  One wrapper takes the longer list and
 * forwards all of it (an extra argument is harmless in this ABI); the
 * runtime's version says where the stream is. */
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

typedef hp_cudaError_t (*batch_t)(void *const *, const void *const *,
				  const size_t *, size_t,
				  hp_cudaMemcpyAttributes *, size_t *, size_t,
				  void *, hp_cudaStream_t);
typedef hp_cudaError_t (*batch3d_t)(size_t, hp_cudaMemcpy3DBatchOp *, void *,
				    unsigned long long, hp_cudaStream_t);
#define RT_BATCH(name, ptsz)                                                  \
	NEXT_SLOT(name);                                                      \
	HP_EXPORT hp_cudaError_t name(void *const *d, const void *const *sr,  \
				      const size_t *sz, size_t n,             \
				      hp_cudaMemcpyAttributes *at, size_t *ai, \
				      size_t na, void *a8,                    \
				      hp_cudaStream_t a9)                     \
	{                                                                     \
		batch_t fn_ = (batch_t)HP_FWD(next_##name);                   \
		if (fn_ == NULL)                                              \
			return HP_CUDA_ERROR_NOT_FOUND;                       \
		if (!hp_hook_enter())                                         \
			return fn_(d, sr, sz, n, at, ai, na, a8, a9);         \
		hp_copy_t c_;                                                 \
		hp_copy_init(&c_);                                            \
		host_batch(&c_, d, sr, sz, n);                                \
		hp_cudaError_t e_ = fn_(d, sr, sz, n, at, ai, na, a8, a9);    \
		hp_copy_end(&c_,                                              \
			    rt_version(__builtin_return_address(0)) >= 13000  \
				? (hp_cudaStream_t)a8                         \
				: a9,                                         \
			    ptsz, e_ == 0);                                   \
		return e_;                                                    \
	}
RT_BATCH(cudaMemcpyBatchAsync, 0)
RT_BATCH(cudaMemcpyBatchAsync_ptsz, 1)
#define RT_BATCH3D(name, ptsz)                                                \
	NEXT_SLOT(name);                                                      \
	HP_EXPORT hp_cudaError_t name(size_t n, hp_cudaMemcpy3DBatchOp *ops,  \
				      void *a3, unsigned long long a4,        \
				      hp_cudaStream_t a5)                     \
	{                                                                     \
		batch3d_t fn_ = (batch3d_t)HP_FWD(next_##name);               \
		if (fn_ == NULL)                                              \
			return HP_CUDA_ERROR_NOT_FOUND;                       \
		if (!hp_hook_enter())                                         \
			return fn_(n, ops, a3, a4, a5);                       \
		hp_copy_t c_;                                                 \
		hp_copy_init(&c_);                                            \
		hp_copy_host_ops(&c_, ops, n);                                \
		hp_cudaError_t e_ = fn_(n, ops, a3, a4, a5);                  \
		hp_copy_end(&c_,                                              \
			    rt_version(__builtin_return_address(0)) >= 13000  \
				? (hp_cudaStream_t)a4                         \
				: a5,                                         \
			    ptsz, e_ == 0);                                   \
		return e_;                                                    \
	}
RT_BATCH3D(cudaMemcpy3DBatchAsync, 0)
RT_BATCH3D(cudaMemcpy3DBatchAsync_ptsz, 1)

/* ---- registrations made by the program itself ---- */
NEXT_SLOT(cudaHostRegister);
NEXT_SLOT(cudaHostUnregister);

HP_EXPORT hp_cudaError_t cudaHostRegister(void *p, size_t n, unsigned flags)
{
	hp_cudaHostRegister_t fn = NEXT(cudaHostRegister);
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

HP_EXPORT hp_cudaError_t cudaHostUnregister(void *p)
{
	hp_cudaHostUnregister_t fn = NEXT(cudaHostUnregister);
	if (fn == NULL)
		return HP_CUDA_ERROR_NOT_FOUND;
	if (!hp_hook_enter())
		return fn(p);
	hp_cudaError_t e = fn(p);
	if (e == 0)
		hp_step_aside_released(p);
	hp_hook_leave();
	return e;
}

/* ---- the end of the current device's primary context ----
 * cudaDeviceReset (and its deprecated name cudaThreadExit) destroys it with
 * every registration made through it; the device is asked before. */
typedef hp_cudaError_t (*hp_cudaGetDevice_t)(int *);
#define RT_RESET(name)                                                        \
	NEXT_SLOT(name);                                                      \
	HP_EXPORT hp_cudaError_t name(void)                                   \
	{                                                                     \
		hp_cudaDeviceReset_t fn_ =                                    \
		    (hp_cudaDeviceReset_t)HP_FWD(next_##name);                \
		if (fn_ == NULL)                                              \
			return HP_CUDA_ERROR_NOT_FOUND;                       \
		if (!hp_hook_enter())                                         \
			return fn_();                                         \
		int dev_ = -1;                                                \
		hp_cudaGetDevice_t gd_ = NEXT(cudaGetDevice);                 \
		if (gd_ == NULL || gd_(&dev_) != 0)                           \
			dev_ = -1;                                            \
		hp_cudaError_t e_ = fn_();                                    \
		if (e_ == 0 && dev_ >= 0)                                     \
			HP_GUARDED(hp_cuda_device_reset(dev_));               \
		hp_hook_leave();                                              \
		return e_;                                                    \
	}
NEXT_SLOT(cudaGetDevice);
RT_RESET(cudaDeviceReset)
RT_RESET(cudaThreadExit)

/* ---- CUDA graph capture (capture.c): counted here where the runtime is
 * hooked, at the driver otherwise (the driver's hooks pass through inside
 * these) ---- */
typedef hp_cudaError_t (*hp_cudaStreamBeginCapture_t)(hp_cudaStream_t, int);
typedef hp_cudaError_t (*hp_cudaStreamEndCapture_t)(hp_cudaStream_t, void **);
#define RT_CAPTURE(name, ptsz)                                                \
	NEXT_SLOT(name##BeginCapture##ptsz);                                  \
	HP_EXPORT hp_cudaError_t name##BeginCapture##ptsz(hp_cudaStream_t s,  \
							  int mode)           \
	{                                                                     \
		hp_cudaStreamBeginCapture_t fn_ =                             \
		    (hp_cudaStreamBeginCapture_t)HP_FWD(                      \
			next_##name##BeginCapture##ptsz);                     \
		if (fn_ == NULL)                                              \
			return HP_CUDA_ERROR_NOT_FOUND;                       \
		if (!hp_hook_enter())                                         \
			return fn_(s, mode);                                  \
		hp_cudaStream_t cs_ = s == NULL && sizeof(#ptsz) > 1          \
					  ? HP_CU_STREAM_PER_THREAD           \
					  : s;                                \
		int c_;                                                       \
		HP_GUARDED(c_ = hp_capture_begin(cs_, mode));                 \
		hp_cudaError_t e_ = fn_(s, mode);                             \
		if (e_ != 0)                                                  \
			HP_GUARDED(hp_capture_begin_failed(cs_, c_));         \
		hp_hook_leave();                                              \
		return e_;                                                    \
	}                                                                     \
	NEXT_SLOT(name##EndCapture##ptsz);                                    \
	HP_EXPORT hp_cudaError_t name##EndCapture##ptsz(hp_cudaStream_t s,    \
							void **g)             \
	{                                                                     \
		hp_cudaStreamEndCapture_t fn_ =                               \
		    (hp_cudaStreamEndCapture_t)HP_FWD(                        \
			next_##name##EndCapture##ptsz);                       \
		if (fn_ == NULL)                                              \
			return HP_CUDA_ERROR_NOT_FOUND;                       \
		if (!hp_hook_enter())                                         \
			return fn_(s, g);                                     \
		hp_cudaStream_t cs_ = s == NULL && sizeof(#ptsz) > 1          \
					  ? HP_CU_STREAM_PER_THREAD           \
					  : s;                                \
		hp_cudaError_t e_ = fn_(s, g);                                \
		HP_GUARDED(hp_capture_end(cs_, e_));                          \
		hp_hook_leave();                                              \
		return e_;                                                    \
	}
RT_CAPTURE(cudaStream, )
RT_CAPTURE(cudaStream, _ptsz)

/* ---- driver entry points handed out by the runtime ---- */
static void *entry_wrap(const char *sym, void *fn, unsigned version,
			unsigned long long flags)
{
	if (fn == NULL || sym == NULL || hp_in_child ||
	    atomic_load_explicit(&hp_state, memory_order_acquire) !=
		HP_ST_READY)
		return fn;
	return hp_cudrv_wrap(sym, fn, (int)version, flags);
}

/* The version the runtime asks the driver at: its own. */
#define ENTRY(name, ptsz)                                                     \
	NEXT_SLOT(name);                                                      \
	HP_EXPORT hp_cudaError_t name(const char *sym, void **fp,             \
				      unsigned long long flags,               \
				      hp_cudaDriverEntryPointQueryResult *st) \
	{                                                                     \
		hp_cudaGetDriverEntryPoint_t fn_ =                            \
		    (hp_cudaGetDriverEntryPoint_t)HP_FWD(next_##name);        \
		if (fn_ == NULL)                                              \
			return HP_CUDA_ERROR_NOT_FOUND;                       \
		hp_cudaError_t e_ = fn_(sym, fp, flags, st);                  \
		if (e_ == 0 && fp)                                            \
			*fp = entry_wrap(                                     \
			    sym, *fp,                                         \
			    (unsigned)rt_version(__builtin_return_address(0)), \
			    flags);                                           \
		return e_;                                                    \
	}
ENTRY(cudaGetDriverEntryPoint, 0)
ENTRY(cudaGetDriverEntryPoint_ptsz, 1)
#define ENTRY_V(name)                                                         \
	NEXT_SLOT(name);                                                      \
	HP_EXPORT hp_cudaError_t name(const char *sym, void **fp, unsigned v, \
				      unsigned long long flags,               \
				      hp_cudaDriverEntryPointQueryResult *st) \
	{                                                                     \
		hp_cudaGetDriverEntryPointByVersion_t fn_ =                   \
		    (hp_cudaGetDriverEntryPointByVersion_t)HP_FWD(            \
			next_##name);                                         \
		if (fn_ == NULL)                                              \
			return HP_CUDA_ERROR_NOT_FOUND;                       \
		hp_cudaError_t e_ = fn_(sym, fp, v, flags, st);               \
		if (e_ == 0 && fp)                                            \
			*fp = entry_wrap(sym, *fp, v, flags);                 \
		return e_;                                                    \
	}
ENTRY_V(cudaGetDriverEntryPointByVersion)
typedef hp_cudaGetDriverEntryPointByVersion_t
    hp_cudaGetDriverEntryPointByVersion_ptsz_t;
ENTRY_V(cudaGetDriverEntryPointByVersion_ptsz)

/* Exported runtime names and their wrappers, for lookups on a runtime's
 * handle (hooks_dlsym.c). */
static const struct {
	const char *name;
	hp_fwd_t *next;
	void *wrapper;
} rt_names[] = {
#define N(f) {#f, &next_##f, (void *)f},
	N(cudaMemcpyAsync) N(cudaMemcpyAsync_ptsz) N(cudaMemcpy2DAsync)
	N(cudaMemcpy2DAsync_ptsz) N(cudaMemcpy3DAsync) N(cudaMemcpy3DAsync_ptsz)
	N(cudaMemcpy3DPeerAsync) N(cudaMemcpy3DPeerAsync_ptsz)
	N(cudaDeviceReset) N(cudaThreadExit)
	N(cudaMemcpyToSymbolAsync) N(cudaMemcpyToSymbolAsync_ptsz)
	N(cudaMemcpyFromSymbolAsync) N(cudaMemcpyFromSymbolAsync_ptsz)
	N(cudaMemcpyBatchAsync) N(cudaMemcpyBatchAsync_ptsz)
	N(cudaMemcpy3DBatchAsync) N(cudaMemcpy3DBatchAsync_ptsz)
	N(cudaMemcpy) N(cudaMemcpy_ptds) N(cudaMemcpy2D) N(cudaMemcpy2D_ptds)
	N(cudaMemcpy3D) N(cudaMemcpy3D_ptds) N(cudaMemcpyToSymbol)
	N(cudaMemcpyToSymbol_ptds) N(cudaMemcpyFromSymbol)
	N(cudaMemcpyFromSymbol_ptds)
	N(cudaHostRegister) N(cudaHostUnregister)
	N(cudaStreamBeginCapture) N(cudaStreamBeginCapture_ptsz)
	N(cudaStreamEndCapture) N(cudaStreamEndCapture_ptsz)
	N(cudaGetDriverEntryPoint) N(cudaGetDriverEntryPoint_ptsz)
	N(cudaGetDriverEntryPointByVersion)
	N(cudaGetDriverEntryPointByVersion_ptsz)
#undef N
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
