/* For programs that are not CUDA programs but should run under a device
 * backend: load the driver named by path (the fake) and make device 0's
 * primary context current, as a runtime's first call would. */
#ifndef CUDA_UP_H
#define CUDA_UP_H
#include "tp.h"

static inline void tp_cuda_up(const char *path)
{
	void *h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
	CHECK(h != NULL);
	int (*init)(unsigned) = (int (*)(unsigned))dlsym(h, "cuInit");
	int (*get)(int *, int) = (int (*)(int *, int))dlsym(h, "cuDeviceGet");
	int (*retain)(void **, int) =
	    (int (*)(void **, int))dlsym(h, "cuDevicePrimaryCtxRetain");
	int (*set)(void *) = (int (*)(void *))dlsym(h, "cuCtxSetCurrent");
	CHECK(init && get && retain && set);
	int dev;
	void *ctx;
	CHECK(init(0) == 0 && get(&dev, 0) == 0 && retain(&ctx, dev) == 0 &&
	      set(ctx) == 0);
}

/* HP_FAKE_CUDA names the fake driver: bring it up. */
static inline void tp_cuda_maybe(void)
{
	const char *fake = getenv("HP_FAKE_CUDA");
	if (fake && *fake)
		tp_cuda_up(fake);
}
#endif
