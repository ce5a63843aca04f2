/* Included by fake_copy.h: what the driver answers about memory
 * (cuPointerGetAttribute(s), cuMemHostGetFlags, cuMemHostGetDevicePointer),
 * as cuda.h documents it, and CUDA 13.2's single copies with attributes
 * (cuMemcpyWithAttributesAsync, cuMemcpy3DWithAttributesAsync).
 *
 * Registered host memory: type HOST (1), its context and device, device
 * pointer = host pointer (unified addressing), its registration flags.
 * Device memory: type DEVICE (2).  Pageable memory: the singular query,
 * cuMemHostGetFlags and cuMemHostGetDevicePointer fail with
 * CUDA_ERROR_INVALID_VALUE; cuPointerGetAttributes succeeds with every
 * attribute at its default: 0 or NULL, and device ordinal -2. */

enum {
	ATTR_CONTEXT = 1, ATTR_MEMORY_TYPE = 2, ATTR_DEVICE_POINTER = 3,
	ATTR_HOST_POINTER = 4, ATTR_SYNC_MEMOPS = 6, ATTR_BUFFER_ID = 7,
	ATTR_IS_MANAGED = 8, ATTR_DEVICE_ORDINAL = 9, ATTR_RANGE_START = 11,
	ATTR_RANGE_SIZE = 12, ATTR_MAPPED = 13
};

/* The registration holding p, or -1.  Under mu. */
static int held_at(const void *p)
{
	for (int i = 0; i < nheld; i++)
		if ((const char *)p >= held[i].base &&
		    (const char *)p < held[i].base + held[i].len)
			return i;
	return -1;
}

/* One attribute of a pointer the driver knows (0), or INVALID_VALUE for
 * one it does not (or an attribute not modelled). */
static CUresult attr_of(void *data, int attr, const void *p)
{
	int h = held_at(p), dev = h < 0 && is_dev(p);
	if (h < 0 && !dev)
		return INVALID_VALUE;
	CUcontext ctx = h >= 0 ? (CUcontext)held[h].owner : &prim[0];
	switch (attr) {
	case ATTR_CONTEXT: *(CUcontext *)data = ctx; return OK;
	case ATTR_MEMORY_TYPE: *(unsigned *)data = dev ? 2 : 1; return OK;
	case ATTR_DEVICE_POINTER: *(CUdeviceptr *)data = (CUdeviceptr)(uintptr_t)p; return OK;
	case ATTR_HOST_POINTER:
		if (dev)
			return INVALID_VALUE;
		*(void **)data = (void *)p;
		return OK;
	case ATTR_SYNC_MEMOPS: *(int *)data = 0; return OK;
	case ATTR_BUFFER_ID: *(unsigned long long *)data = 1 + (uintptr_t)p / 4096; return OK;
	case ATTR_IS_MANAGED: *(int *)data = 0; return OK;
	case ATTR_DEVICE_ORDINAL: *(int *)data = ctx->dev; return OK;
	case ATTR_RANGE_START:
	case ATTR_RANGE_SIZE: {
		/* the registration, or the device allocation, holding p */
		char *base = h >= 0 ? held[h].base : (char *)p;
		size_t len = h >= 0 ? held[h].len : 1;
		for (int i = 0; dev && i < ndev_mem; i++)
			if ((const char *)p >= devmem[i].base &&
			    (const char *)p < devmem[i].base + devmem[i].len)
				base = devmem[i].base, len = devmem[i].len;
		if (attr == ATTR_RANGE_START)
			*(CUdeviceptr *)data = (CUdeviceptr)(uintptr_t)base;
		else
			*(size_t *)data = len;
		return OK;
	}
	case ATTR_MAPPED: *(int *)data = 1; return OK;
	default: return INVALID_VALUE;
	}
}

/* The default an attribute takes for a pointer the driver does not know. */
static void attr_default(void *data, int attr)
{
	switch (attr) {
	case ATTR_CONTEXT: case ATTR_HOST_POINTER: case ATTR_RANGE_START:
		*(void **)data = NULL; break;
	case ATTR_DEVICE_POINTER: *(CUdeviceptr *)data = 0; break;
	case ATTR_MEMORY_TYPE: *(unsigned *)data = 0; break;
	case ATTR_BUFFER_ID: *(unsigned long long *)data = 0; break;
	case ATTR_RANGE_SIZE: *(size_t *)data = 0; break;
	case ATTR_DEVICE_ORDINAL: *(int *)data = -2; break;
	default: *(int *)data = 0; break;
	}
}

CUresult cuPointerGetAttribute(void *data, int attr, CUdeviceptr p)
{
	ENTRY("cuPointerGetAttribute");
	NEED_INIT;
	RETURN(attr_of(data, attr, (const void *)(uintptr_t)p));
}

CUresult cuPointerGetAttributes(unsigned n, int *attrs, void **data,
				CUdeviceptr p)
{
	ENTRY("cuPointerGetAttributes");
	NEED_INIT;
	if (n && (!attrs || !data))
		RETURN(INVALID_VALUE);
	for (unsigned i = 0; i < n; i++)
		if (attr_of(data[i], attrs[i], (const void *)(uintptr_t)p))
			attr_default(data[i], attrs[i]);
	RETURN(OK);
}

CUresult cuMemHostGetFlags(unsigned *flags, void *p)
{
	ENTRY("cuMemHostGetFlags");
	NEED_INIT;
	int h = held_at(p);
	if (h < 0 || !flags)
		RETURN(INVALID_VALUE);
	*flags = held[h].flags;
	RETURN(OK);
}

CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *d, void *p, unsigned fl)
{
	ENTRY("cuMemHostGetDevicePointer_v2");
	NEED_INIT;
	if (fl != 0 || !d || held_at(p) < 0)
		RETURN(INVALID_VALUE);
	*d = (CUdeviceptr)(uintptr_t)p;
	RETURN(OK);
}

/* CUDA 13.2: one copy with attributes, 1D (either side host or device:
 * unified addressing) or 3D (one batch op). */
COPY_FN2(cuMemcpyWithAttributesAsync,
	 (CUdeviceptr d, CUdeviceptr sr, size_t n, void *attr, stream_t *s),
	 (d, sr, n, attr, s), s,
	 ((void)attr, seg(&x, (void *)(uintptr_t)d, (const void *)(uintptr_t)sr, n)))
COPY_FN2(cuMemcpy3DWithAttributesAsync,
	 (BOP *op, unsigned long long fl, stream_t *s), (op, fl, s), s,
	 ((void)fl, batch3d(&x, op, 1)))

/* A copy entry point of a CUDA newer than hostpin ("13.5"), which hostpin
 * has no hook for: a unified-addressing copy with four more arguments,
 * two of them passed on the stack, each checked (a forwarding stub that
 * lost one is caught). */
CUresult cuMemcpyFutureAsync(CUdeviceptr d, CUdeviceptr sr, size_t n,
			     stream_t *s, int a5, int a6, int a7, long a8);
COPY_FN(cuMemcpyFutureAsync,
	(CUdeviceptr d, CUdeviceptr sr, size_t n, stream_t *s, int a5, int a6,
	 int a7, long a8),
	s,
	if (a5 != 5 || a6 != 6 || a7 != 7 || a8 != 8) {
		logf_("VIOLATION future-arguments %d %d %d %ld", a5, a6, a7,
		      a8);
		return INVALID_VALUE;
	} seg(&x, (void *)(uintptr_t)d, (const void *)(uintptr_t)sr, n))

#define FAKE_QUERY_PROCS                                                      \
	P(cuPointerGetAttribute, 4000, cuPointerGetAttribute)                 \
	P(cuPointerGetAttributes, 7000, cuPointerGetAttributes)               \
	P(cuMemHostGetFlags, 2030, cuMemHostGetFlags)                         \
	P(cuMemHostGetDevicePointer, 3020, cuMemHostGetDevicePointer_v2)      \
	P2(cuMemcpyWithAttributesAsync, 13020, cuMemcpyWithAttributesAsync)   \
	P2(cuMemcpy3DWithAttributesAsync, 13020, cuMemcpy3DWithAttributesAsync) \
	P(cuMemcpyFutureAsync, 13050, cuMemcpyFutureAsync)
