/* CUDA driver hooks: registrations the program makes itself, what the
 * driver answers about memory, and the entry points that end a context.
 * How the driver hooks are put together: cudrv.h. */
#define HP_CUDRV_memory(base, since, stream, name) HP_CUDRV_EMIT(base, since, stream, name)
#include "cudrv.h"

#define HP_CUDRV_EMIT HP_CUDRV_SLOTS
#include "hooks_cudrv.def"
#undef HP_CUDRV_EMIT

/* Registrations made by the program itself. */
HP_BODY hp_CUresult host_register(void *f, void *p, size_t n, unsigned flags)
{
	hp_cuMemHostRegister_v2_t fn = (hp_cuMemHostRegister_v2_t)f;
	if (fn == NULL)
		return HP_CUDA_ERROR_NOT_FOUND;
	if (!hp_hook_enter())
		return fn(p, n, flags);
	if (hp_step_aside(p, n) != 0) {
		hp_step_aside_failed(p);
		hp_hook_leave();
		return HP_CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
	}
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
 * with it; the blocks it held go back to pending (backend_cuda_ctx.c), to
 * be registered again once a context is active.  After the call: only a
 * successful one ended anything; a release ends the context only when it
 * dropped the last reference.  A primary context's reset and release:
 * ended(dev) tells the backend which. */
HP_BODY hp_CUresult ctx_primary_end(void *f, hp_CUdevice dev,
				    void (*ended)(hp_CUdevice))
{
	hp_cuDevicePrimaryCtxRelease_t fn = (hp_cuDevicePrimaryCtxRelease_t)f;
	if (fn == NULL)
		return HP_CUDA_ERROR_NOT_FOUND;
	if (!hp_hook_enter())
		return fn(dev);
	int edev;
	HP_GUARDED(edev = hp_cuda_end_begins(dev, NULL));
	HP_GUARDED(hp_cuda_ctx_ending());
	hp_CUresult e = fn(dev);
	/* the driver ended it, hostpin not yet (a test's pause point) */
	hp_test_pause("end_called");
	if (e == HP_CUDA_SUCCESS)
		HP_GUARDED(ended(dev));
	HP_GUARDED(hp_cuda_end_done(edev));
	hp_hook_leave();
	return e;
}
HP_BODY hp_CUresult ctx_reset(void *f, hp_CUdevice dev)
{
	return ctx_primary_end(f, dev, hp_cuda_device_reset);
}
HP_BODY hp_CUresult ctx_release(void *f, hp_CUdevice dev)
{
	return ctx_primary_end(f, dev, hp_cuda_device_released);
}
HP_BODY hp_CUresult ctx_destroy(void *f, hp_CUcontext ctx)
{
	hp_cuCtxDestroy_t fn = (hp_cuCtxDestroy_t)f;
	if (fn == NULL)
		return HP_CUDA_ERROR_NOT_FOUND;
	if (!hp_hook_enter())
		return fn(ctx);
	int edev;
	HP_GUARDED(edev = hp_cuda_end_begins(-1, ctx));
	HP_GUARDED(hp_cuda_ctx_ending());
	hp_CUresult e = fn(ctx);
	if (e == HP_CUDA_SUCCESS)
		HP_GUARDED(hp_cuda_ctx_destroyed(ctx));
	HP_GUARDED(hp_cuda_end_done(edev));
	hp_hook_leave();
	return e;
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

/* This family's part of the lookup table (cudrv_lookup.c). */
const struct hp_cudrv_variant hp_cudrv_memory[] = {
#define HP_CUDRV_EMIT HP_CUDRV_ENTRY
#include "hooks_cudrv.def"
#undef HP_CUDRV_EMIT
	{0}};
