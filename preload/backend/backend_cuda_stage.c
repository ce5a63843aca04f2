/* CUDA backend: the staged copies' driver calls (copy/plan.c and ring.c
 * decide; these make the calls): their DMA (1D, 2D, 3D), the arrays'
 * geometry, events, contexts and the staging rings' registration.  The
 * capture gate and the copy fences: backend_cuda_calls.c. */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>

#include "cuda_api.h"
#include "../hostpin.h"
#include "../hp.h"
#include "../record.h"
#include "../base/resolve.h"
#include "../base/symtab.h"
#include "cuda_int.h"

/* ---- staged copies (plan.c decides; these make the driver calls) ----
 * The driver's own definitions (never hostpin's hooks), resolved once per
 * loaded driver; cuPointerGetAttribute is optional (without it, only
 * hostpin's registry says what is registered). */
typedef hp_CUresult (*htod_fn)(hp_CUdeviceptr, const void *, size_t,
			       hp_cudaStream_t);
typedef hp_CUresult (*dtoh_fn)(void *, hp_CUdeviceptr, size_t,
			       hp_cudaStream_t);
typedef hp_CUresult (*ptrattr_fn)(void *, int, hp_CUdeviceptr);
typedef hp_CUresult (*m2d_fn)(const hp_CUDA_MEMCPY2D *, hp_cudaStream_t);
typedef hp_CUresult (*m3d_fn)(const hp_CUDA_MEMCPY3D *, hp_cudaStream_t);
typedef hp_CUresult (*htoa_fn)(hp_CUarray, size_t, const void *, size_t,
			       hp_cudaStream_t);
typedef hp_CUresult (*atoh_fn)(void *, hp_CUarray, size_t, size_t,
			       hp_cudaStream_t);
static struct {
	htod_fn htod;
	dtoh_fn dtoh;
	ptrattr_fn attr;
	m2d_fn m2d; /* optional: without it 2D copies are not staged */
	m3d_fn m3d; /* optional: a 3D array's layers (hp_cuda_3d_async) */
	htoa_fn htoa; /* optional: 1D array copies */
	atoh_fn atoh;
	hp_cuArray3DGetDescriptor_v2_t a3d; /* optional: arrays' geometry */
	hp_cuArrayGetDescriptor_v2_t a2d;
	hp_CUresult (*query)(hp_cudaEvent_t); /* optional: slots reused by
					       * their own stream only */
	hp_CUresult (*sctx)(hp_cudaStream_t, hp_CUcontext *); /* optional */
} sf;

int hp_cuda_stage_fns(void)
{
	if (hp_in_child || !hp_cu_load() || hp_cuda_copy_fns() != 1)
		return 0;
	int st = atomic_load_explicit(&hp_cu_sf_state, memory_order_acquire);
	if (st)
		return st > 0;
	*(void **)&sf.htod = hp_cuda_sym("cuMemcpyHtoDAsync_v2");
	*(void **)&sf.dtoh = hp_cuda_sym("cuMemcpyDtoHAsync_v2");
	*(void **)&sf.attr = hp_cuda_sym("cuPointerGetAttribute");
	*(void **)&sf.m2d = hp_cuda_sym("cuMemcpy2DAsync_v2");
	*(void **)&sf.m3d = hp_cuda_sym("cuMemcpy3DAsync_v2");
	*(void **)&sf.htoa = hp_cuda_sym("cuMemcpyHtoAAsync_v2");
	*(void **)&sf.atoh = hp_cuda_sym("cuMemcpyAtoHAsync_v2");
	*(void **)&sf.a3d = hp_cuda_sym("cuArray3DGetDescriptor_v2");
	*(void **)&sf.a2d = hp_cuda_sym("cuArrayGetDescriptor_v2");
	*(void **)&sf.query = hp_cuda_sym("cuEventQuery");
	*(void **)&sf.sctx = hp_cuda_sym("cuStreamGetCtx");
	/* without cuStreamIsCapturing a capturing stream cannot be told
	 * apart: nothing is staged */
	st = sf.htod && sf.dtoh && hp_cu_pf.cuStreamIsCapturing ? 1 : -1;
	/* release: pairs with the acquire above; sf is complete */
	atomic_store_explicit(&hp_cu_sf_state, st, memory_order_release);
	return st > 0;
}

uintptr_t hp_cuda_ctx_current(void)
{
	hp_CUcontext cur = NULL;
	if (hp_cu.cuCtxGetCurrent(&cur) != HP_CUDA_SUCCESS)
		return 0;
	return (uintptr_t)cur;
}

unsigned hp_cuda_ctx_epoch(void)
{
	return atomic_load_explicit(&hp_cu_ctx_epoch, memory_order_relaxed);
}

uintptr_t hp_cuda_stream_ctx(hp_cudaStream_t s, uintptr_t cur)
{
	hp_CUcontext c = NULL;
	/* the legacy and per-thread default streams: the current context's */
	if (s == NULL || s == (hp_cudaStream_t)(uintptr_t)1 ||
	    s == HP_CU_STREAM_PER_THREAD || !sf.sctx ||
	    sf.sctx(s, &c) != HP_CUDA_SUCCESS || c == NULL)
		return cur;
	return (uintptr_t)c;
}

uint64_t hp_cuda_ctx_gen(uintptr_t ctx, int current)
{
	if (!hp_cu_load())
		return 0; /* no driver: nothing made through any context lives */
	if (current)
		hp_cu_learn_ctx((hp_CUcontext)ctx);
	uint64_t g = 0;
	pthread_mutex_lock(&hp_cu_own_mu);
	for (int i = 0; i < hp_cu_nctxs && !g; i++)
		if (hp_cu_ctxs[i].ctx == (hp_CUcontext)ctx && hp_cu_ctxs[i].alive)
			g = ((uint64_t)hp_cu_ctxs[i].gen << 1 | 1) << 31;
	pthread_mutex_unlock(&hp_cu_own_mu);
	return g ? g | atomic_load_explicit(&hp_cu_drv_gen, memory_order_relaxed)
		 : 0;
}

#define HP_CU_POINTER_ATTRIBUTE_MEMORY_TYPE 2
int hp_cuda_wait_context(void)
{
	/* resolved once per loaded driver with the copy fences */
	if (hp_in_child || !hp_cu_load() || hp_cuda_copy_fns() < 0 ||
	    hp_cu_pf.cuCtxSynchronize == NULL || !hp_capture_enter())
		return -1;
	hp_CUresult r = hp_cu_pf.cuCtxSynchronize();
	hp_capture_leave();
	return r == HP_CUDA_SUCCESS ? 0 : -1;
}

unsigned hp_cuda_mem_type(const void *p)
{
	unsigned type = 0;
	if (!sf.attr || sf.attr(&type, HP_CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
				(hp_CUdeviceptr)(uintptr_t)p) != HP_CUDA_SUCCESS)
		return 0;
	return type;
}

int hp_cuda_host_known(const void *p)
{
	unsigned type = 0;
	return sf.attr && sf.attr(&type, HP_CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
				  (hp_CUdeviceptr)(uintptr_t)p) ==
			      HP_CUDA_SUCCESS;
}

#define HP_CU_POINTER_ATTRIBUTE_RANGE_START_ADDR 11
#define HP_CU_POINTER_ATTRIBUTE_RANGE_SIZE 12
int hp_cuda_dev_fits(uintptr_t d, size_t n)
{
	hp_CUdeviceptr start = 0;
	size_t size = 0;
	if (!sf.attr ||
	    sf.attr(&start, HP_CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, d) !=
		HP_CUDA_SUCCESS ||
	    sf.attr(&size, HP_CU_POINTER_ATTRIBUTE_RANGE_SIZE, d) !=
		HP_CUDA_SUCCESS)
		return 1; /* not known: the driver's to refuse */
	return d >= start && d - start <= size && n <= size - (d - start);
}

int hp_cuda_ring_register(void *p, size_t n, uintptr_t ctx, uint64_t gen)
{
	/* the ring's context current (the growth thread pushed it), not yet
	 * registered through (a test's pause point) */
	hp_test_pause("ring_pushed");
	/* as cuda_pin's pieces: a context that ended since the ring was asked
	 * for (gen), or ends during the call, may be made again under the
	 * same handle and hold the registration as its new self, which the
	 * ring, counted as the ended one's, would never release (the engine
	 * tester's reset-ring-registered-96581863) */
	struct hp_cu_watch w;
	if (hp_cu_watch_begin(&w, (hp_CUcontext)ctx) != gen)
		return HP_RING_CTX_ENDED;
	if (!hp_capture_enter())
		return -1;
	int r = hp_cu.cuMemHostRegister_v2(p, n, HP_CU_MEMHOSTREGISTER_PORTABLE);
	if (r == HP_CUDA_SUCCESS && hp_cu_watch_ended(&w)) {
		/* undone through the context still current here (a dead one
		 * answers that it died with it; an unloaded driver took it
		 * along); one the driver refuses to undo stays: the ring made
		 * of it is released as any whose context ended (ring_grow.c's
		 * hp_ring_unmake) */
		hp_CUresult u = hp_cu_driver_gone()
				    ? HP_CUDA_SUCCESS
				    : hp_cu.cuMemHostUnregister(p);
		if (u == HP_CUDA_SUCCESS ||
		    u == HP_CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED ||
		    u == HP_CUDA_ERROR_CONTEXT_IS_DESTROYED ||
		    u == HP_CUDA_ERROR_INVALID_CONTEXT)
			r = HP_RING_CTX_ENDED;
	} else if (r == HP_CUDA_ERROR_CONTEXT_IS_DESTROYED ||
		   r == HP_CUDA_ERROR_INVALID_CONTEXT) {
		r = HP_RING_CTX_ENDED;
	}
	hp_capture_leave();
	return r;
}

int hp_cuda_ring_unregister(void *p)
{
	if (hp_in_child)
		return -1;
	if (atomic_load_explicit(&hp_cu_loaded, memory_order_acquire) <= 0 ||
	    hp_cu_driver_gone())
		return HP_CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED; /* died with it */
	if (!hp_capture_enter())
		return -1;
	int pushed = hp_cu_enter_ctx(), r = -1;
	if (pushed >= 0) {
		r = hp_cu.cuMemHostUnregister(p);
		hp_cu_leave_ctx(pushed);
	}
	hp_capture_leave();
	return r;
}

int hp_cuda_htod_async(uintptr_t d, const void *h, size_t n,
		       hp_cudaStream_t s)
{
	return sf.htod((hp_CUdeviceptr)d, h, n, s);
}

int hp_cuda_dtoh_async(void *h, uintptr_t d, size_t n, hp_cudaStream_t s)
{
	return sf.dtoh(h, (hp_CUdeviceptr)d, n, s);
}

int hp_cuda_2d_fn(void)
{
	return sf.m2d != NULL;
}

int hp_cuda_2d_async(const hp_CUDA_MEMCPY2D *p, hp_cudaStream_t s)
{
	return sf.m2d(p, s);
}

int hp_cuda_3d_fn(void)
{
	return sf.m3d != NULL;
}

int hp_cuda_3d_async(const hp_CUDA_MEMCPY3D *p, hp_cudaStream_t s)
{
	return sf.m3d(p, s);
}

int hp_cuda_array_1d_fns(void)
{
	return sf.htoa != NULL && sf.atoh != NULL;
}

int hp_cuda_array_1d_async(int htod, void *a, size_t off, void *h, size_t n,
			   hp_cudaStream_t s)
{
	return htod ? sf.htoa((hp_CUarray)a, off, h, n, s)
		    : sf.atoh(h, (hp_CUarray)a, off, n, s);
}

/* Bytes of one channel of format f, 0 for a format hostpin does not
 * know (block-compressed, YUV, packed normalized ones). */
static size_t format_bytes(int f)
{
	switch (f) {
	case HP_CU_AD_FORMAT_UNSIGNED_INT8: case HP_CU_AD_FORMAT_SIGNED_INT8:
		return 1;
	case HP_CU_AD_FORMAT_UNSIGNED_INT16: case HP_CU_AD_FORMAT_SIGNED_INT16:
	case HP_CU_AD_FORMAT_HALF:
		return 2;
	case HP_CU_AD_FORMAT_UNSIGNED_INT32: case HP_CU_AD_FORMAT_SIGNED_INT32:
	case HP_CU_AD_FORMAT_FLOAT:
		return 4;
	}
	return 0;
}

int hp_cuda_array_geom(void *a, struct hp_cuda_array *g)
{
	hp_CUDA_ARRAY3D_DESCRIPTOR d3 = {0};
	hp_CUDA_ARRAY_DESCRIPTOR d2 = {0};
	int r = -1;
	if (a && sf.a3d && sf.a3d(&d3, (hp_CUarray)a) == HP_CUDA_SUCCESS)
		r = 0;
	else if (a && sf.a2d && sf.a2d(&d2, (hp_CUarray)a) == HP_CUDA_SUCCESS) {
		d3.Width = d2.Width, d3.Height = d2.Height, d3.Depth = 0;
		d3.Format = d2.Format, d3.NumChannels = d2.NumChannels;
		r = 0;
	}
	size_t es = r ? 0 : format_bytes(d3.Format) * d3.NumChannels;
	if (r || es == 0 || d3.NumChannels > 4) {
		HP_LOG_ONCE(HP_LOG_INFO, "a copy with a CUDA array whose "
			    "element size hostpin cannot learn (%s, format "
			    "%#x): such copies go to the driver as they are",
			    r ? "no descriptor" : "format", (unsigned)d3.Format);
		return -1;
	}
	*g = (struct hp_cuda_array){.es = es, .w = d3.Width, .h = d3.Height,
				    .d = d3.Depth};
	return 0;
}

int hp_cuda_event_new(void **ev)
{
	return hp_cu_pf.cuEventCreate((hp_cudaEvent_t *)ev,
				HP_CU_EVENT_DISABLE_TIMING);
}

int hp_cuda_event_record(void *ev, hp_cudaStream_t s)
{
	return hp_cu_pf.cuEventRecord((hp_cudaEvent_t)ev, s);
}

int hp_cuda_event_wait(void *ev)
{
	return hp_cu_pf.cuEventSynchronize((hp_cudaEvent_t)ev);
}

int hp_cuda_event_query(void *ev)
{
	return sf.query ? sf.query((hp_cudaEvent_t)ev) : 600 /* NOT_READY */;
}

int hp_cuda_event_free(void *ev)
{
	return hp_cu_pf.cuEventDestroy_v2((hp_cudaEvent_t)ev);
}

int hp_cuda_stream_wait(hp_cudaStream_t s)
{
	return hp_cu_pf.cuStreamSynchronize(s);
}

