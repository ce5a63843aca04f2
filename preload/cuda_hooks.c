/* Hooks on the CUDA runtime's copy and registration entry points, where the
 * runtime is dynamically linked.  Copies: adopt pending blocks before the
 * copy, count it, and keep program semantics (invariant 7).  Registrations
 * by the program: step aside for the range (invariant 8). */
#include <dlfcn.h>
#include <stdatomic.h>

#include "cuda_api.h"
#include "hostpin.h"
#include "hp.h"

HP_HIDDEN void hp_cuda_learn_ctx(void);

#define ENTER (hp_in_hook++)
#define LEAVE (hp_in_hook--)

#define NEXT(name) ((hp_##name##_t)hp_next_sym(&next_##name, #name))
static _Atomic(void *) next_cudaMemcpyAsync, next_cudaMemcpy2DAsync,
    next_cudaMemcpyAsync_ptsz, next_cudaMemcpy2DAsync_ptsz,
    next_cudaStreamSynchronize, next_cudaEventCreateWithFlags,
    next_cudaEventRecord, next_cudaEventSynchronize, next_cudaEventDestroy,
    next_cudaHostRegister, next_cudaHostUnregister,
    next_cuMemHostRegister, next_cuMemHostRegister_v2,
    next_cuMemHostUnregister;
typedef hp_cudaMemcpyAsync_t hp_cudaMemcpyAsync_ptsz_t;
typedef hp_cudaMemcpy2DAsync_t hp_cudaMemcpy2DAsync_ptsz_t;
typedef hp_cuMemHostRegister_v2_t hp_cuMemHostRegister_t;

#define active hp_hooks_active

/* Before a copy: the host side's record, adopted if it was pending. */
static hp_rec_t *host_side(const void *p)
{
	if (p == NULL || !hp_registry_maybe(&hp_reg, (uintptr_t)p))
		return NULL;
	ENTER;
	hp_rec_t *r;
	unsigned f = hp_block_flags(p, &r);
	if (f & HOSTPIN_PENDING) {
		/* The program is copying: it has a device context now, so
		 * pending blocks are registered before this copy runs. */
		hp_cuda_learn_ctx();
		hp_adopt_pending();
	}
	LEAVE;
	return r;
}

/* Is stream capturing into a graph?  cudaStreamIsCapturing is looked up
 * without insisting: a runtime without it has no graphs. */
static int capturing(hp_cudaStream_t stream)
{
	static _Atomic(void *) fn;
	static _Atomic int tried;
	if (!atomic_load_explicit(&tried, memory_order_acquire)) {
		void *f = dlsym(RTLD_NEXT, "cudaStreamIsCapturing");
		atomic_store_explicit(&fn, f, memory_order_relaxed);
		/* release: pairs with the acquire above; fn is set */
		atomic_store_explicit(&tried, 1, memory_order_release);
	}
	hp_cudaStreamIsCapturing_t is =
	    (hp_cudaStreamIsCapturing_t)atomic_load_explicit(
		&fn, memory_order_relaxed);
	int st = HP_cudaStreamCaptureStatusNone;
	return is && is(stream, &st) == 0 &&
	       st != HP_cudaStreamCaptureStatusNone;
}

static void after_copy(hp_rec_t *r, size_t n, hp_cudaStream_t stream,
		       hp_cudaError_t err)
{
	if (r == NULL || err != 0)
		return;
	atomic_fetch_add_explicit(&hp_ctr.copies_seen, 1, memory_order_relaxed);
	unsigned f = (unsigned)atomic_load_explicit(&r->user[HP_U_FLAGS],
						    memory_order_relaxed);
	if (!(f & HOSTPIN_REGISTERED))
		return; /* pageable: the driver already kept the semantics */
	atomic_fetch_add_explicit(&hp_ctr.copies_registered, 1,
				  memory_order_relaxed);
	atomic_fetch_add_explicit(&hp_ctr.copy_bytes_registered, n,
				  memory_order_relaxed);
	ENTER;
	if (capturing(stream)) {
		/* A stream being captured into a CUDA graph records the copy
		 * instead of running it; waiting on it would invalidate the
		 * capture. */
	} else if (hp_opt[HP_OPT_COPY] == HP_COPY_SYNC) {
		/* On pageable memory the program's async copy was host-
		 * synchronous; keep it so (the copy still ran at DMA speed). */
		NEXT(cudaStreamSynchronize)(stream);
		atomic_fetch_add_explicit(&hp_ctr.copy_waits, 1,
					  memory_order_relaxed);
	} else {
		hp_cudaEvent_t ev = NULL;
		if (NEXT(cudaEventCreateWithFlags)(
			&ev, HP_cudaEventDisableTiming) == 0 &&
		    NEXT(cudaEventRecord)(ev, stream) == 0) {
			hp_cudaEvent_t old = (hp_cudaEvent_t)atomic_exchange(
			    &r->user[HP_U_EVENT], (uintptr_t)ev);
			uintptr_t os = atomic_exchange(&r->user[HP_U_STREAM],
						       (uintptr_t)stream);
			if (old != NULL) {
				/* Same stream: the new event covers the old
				 * copy.  Another stream: wait for it. */
				if (os != (uintptr_t)stream)
					NEXT(cudaEventSynchronize)(old);
				NEXT(cudaEventDestroy)(old);
			}
		} else {
			/* No event: fall back to the safe wait. */
			NEXT(cudaStreamSynchronize)(stream);
		}
	}
	LEAVE;
}

void hp_copy_quiesce(hp_rec_t *r)
{
	hp_cudaEvent_t ev = (hp_cudaEvent_t)atomic_exchange_explicit(
	    &r->user[HP_U_EVENT], 0, memory_order_relaxed);
	if (ev == NULL || hp_in_child)
		return;
	/* A block is neither unregistered nor released while a copy that
	 * used it may still run. */
	NEXT(cudaEventSynchronize)(ev);
	NEXT(cudaEventDestroy)(ev);
	atomic_fetch_add_explicit(&hp_ctr.copy_waits, 1, memory_order_relaxed);
}

static void host_ptrs(int kind, const void *dst, const void *src,
		      const void **h1, const void **h2)
{
	*h1 = *h2 = NULL;
	switch (kind) {
	case HP_cudaMemcpyHostToDevice: *h1 = src; break;
	case HP_cudaMemcpyDeviceToHost: *h1 = dst; break;
	case HP_cudaMemcpyDefault:
	case HP_cudaMemcpyHostToHost: *h1 = src, *h2 = dst; break;
	default: break;
	}
}

#define COPY_HOOK(name, params, args, dst, src, bytes)                        \
	HP_EXPORT hp_cudaError_t name params                                  \
	{                                                                     \
		if (!active())                                                \
			return NEXT(name) args;                               \
		const void *h1, *h2;                                          \
		host_ptrs(kind, dst, src, &h1, &h2);                          \
		hp_rec_t *r1 = host_side(h1), *r2 = host_side(h2);            \
		hp_cudaError_t e = NEXT(name) args;                           \
		after_copy(r1, bytes, stream, e);                             \
		if (r2 != r1)                                                 \
			after_copy(r2, bytes, stream, e);                     \
		return e;                                                     \
	}

COPY_HOOK(cudaMemcpyAsync,
	  (void *dst, const void *src, size_t count, hp_cudaMemcpyKind kind,
	   hp_cudaStream_t stream),
	  (dst, src, count, kind, stream), dst, src, count)
COPY_HOOK(cudaMemcpyAsync_ptsz,
	  (void *dst, const void *src, size_t count, hp_cudaMemcpyKind kind,
	   hp_cudaStream_t stream),
	  (dst, src, count, kind, stream), dst, src, count)
COPY_HOOK(cudaMemcpy2DAsync,
	  (void *dst, size_t dpitch, const void *src, size_t spitch,
	   size_t width, size_t height, hp_cudaMemcpyKind kind,
	   hp_cudaStream_t stream),
	  (dst, dpitch, src, spitch, width, height, kind, stream), dst, src,
	  width * height)
COPY_HOOK(cudaMemcpy2DAsync_ptsz,
	  (void *dst, size_t dpitch, const void *src, size_t spitch,
	   size_t width, size_t height, hp_cudaMemcpyKind kind,
	   hp_cudaStream_t stream),
	  (dst, dpitch, src, spitch, width, height, kind, stream), dst, src,
	  width * height)

/* ---- registrations made by the program itself ---- */

static void step_aside(void *p, size_t n)
{
	if (!active())
		return;
	ENTER;
	hp_foreign_begin(p, n);
	LEAVE;
}

static void take_back(void *p)
{
	if (!active())
		return;
	ENTER;
	/* First: did the program unregister hostpin's own registration?
	 * Then: the end of its own registration over our blocks. */
	hp_import_dropped(p);
	hp_foreign_end(p);
	LEAVE;
}

/* The program's registration failed: take our range back. */
static void give_back(void *p)
{
	if (!active())
		return;
	ENTER;
	hp_foreign_end(p);
	LEAVE;
}

HP_EXPORT hp_cudaError_t cudaHostRegister(void *p, size_t n, unsigned flags)
{
	step_aside(p, n);
	hp_cudaError_t e = NEXT(cudaHostRegister)(p, n, flags);
	if (e != 0)
		give_back(p);
	return e;
}

HP_EXPORT hp_cudaError_t cudaHostUnregister(void *p)
{
	hp_cudaError_t e = NEXT(cudaHostUnregister)(p);
	if (e == 0)
		take_back(p);
	return e;
}

#define DRV_REGISTER(name)                                                    \
	HP_EXPORT hp_CUresult name(void *p, size_t n, unsigned flags)         \
	{                                                                     \
		step_aside(p, n);                                             \
		hp_CUresult e = NEXT(name)(p, n, flags);                      \
		if (e != 0)                                                   \
			give_back(p);                                         \
		return e;                                                     \
	}
DRV_REGISTER(cuMemHostRegister)
DRV_REGISTER(cuMemHostRegister_v2)

HP_EXPORT hp_CUresult cuMemHostUnregister(void *p)
{
	hp_CUresult e = NEXT(cuMemHostUnregister)(p);
	if (e == 0)
		take_back(p);
	return e;
}
