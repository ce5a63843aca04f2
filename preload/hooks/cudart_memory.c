/* CUDA runtime hooks: registrations the program makes itself, and the end
 * of a context (cudaDeviceReset, cudaThreadExit).  How the runtime hooks
 * are put together: cudart.h. */
#define HP_CUDART_memory(name) HP_CUDART_EMIT(name)
#include "cudart.h"

#define HP_CUDART_EMIT HP_CUDART_SLOTS
#include "hooks_cudart.def"
#undef HP_CUDART_EMIT
static hp_fwd_t next_cudaGetDevice = HP_FWD_INIT("cudaGetDevice");

/* Registrations made by the program itself. */
HP_BODY hp_cudaError_t host_register(void *f, void *p, size_t n,
				    unsigned flags)
{
	hp_cudaHostRegister_t fn = (hp_cudaHostRegister_t)f;
	if (fn == NULL)
		return HP_CUDA_ERROR_NOT_FOUND;
	if (!hp_hook_enter())
		return fn(p, n, flags);
	if (hp_step_aside(p, n) != 0) {
		/* cudaErrorHostMemoryAlreadyRegistered: the driver's number */
		hp_step_aside_failed(p);
		hp_hook_leave();
		return HP_CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
	}
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
	int edev;
	HP_GUARDED(edev = hp_cuda_end_begins(dev, NULL));
	HP_GUARDED(hp_cuda_ctx_ending());
	hp_cudaError_t e = fn();
	if (e == 0 && dev >= 0)
		HP_GUARDED(hp_cuda_device_reset(dev));
	HP_GUARDED(hp_cuda_end_done(edev));
	hp_hook_leave();
	return e;
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

/* This family's part of the table (cudart_lookup.c). */
const struct hp_cudart_name hp_cudart_memory[] = {
#define HP_CUDART_EMIT HP_CUDART_ENTRY
#include "hooks_cudart.def"
#undef HP_CUDART_EMIT
	{0}};
