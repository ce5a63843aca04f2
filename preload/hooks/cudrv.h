/* How the CUDA driver's hooks are put together (hooks/cudrv_*.c), one file
 * per family of entry points: copies (asynchronous; batched and with
 * attributes; synchronous), memory (registrations the program makes, the
 * driver's answers about memory, the ends of a context), graph capture, and
 * lookups (cuGetProcAddress, and the table every lookup searches).  Every
 * way a program reaches the driver ends in one of them: a call linked to
 * the exported name; a pointer from cuGetProcAddress (how the CUDA
 * runtime, static or dynamic, reaches the driver) or from
 * cudaGetDriverEntryPoint; a pointer from dlsym on the driver's handle
 * (hooks_dlsym.c).
 *
 * Each entry point is written out by its own name: the exported NAME,
 * whose linked calls forward to the next definition, and the looked-up
 * lk_NAME handed out in place of the driver's NAME, which calls exactly
 * the function the driver returned.  Both call one body per kind of entry
 * point.  hooks_cudrv.def lists the names once more, each with its family:
 * a family's file builds from its own lines the slots of its names and its
 * part of the lookup table (HP_CUDRV_FAMILY). */
#ifndef HP_CUDRV_H
#define HP_CUDRV_H
#include <string.h>

#include "../hooks.h"
#include "../base/resolve.h"
#include "../copy/stage.h"

/* One side of a 2D or 3D descriptor, if it is host memory (or unified or
 * device, which may be: under unified addressing the CUDA 13.2 runtime
 * hands cudaMemcpy3DPeer's pointers to the driver as device memory,
 * whatever they are; device memory is never in the registry, so only a
 * hostpin block counts): every byte from its first to its last row. */
static inline void host_side(hp_copy_t *c, hp_CUmemorytype m, const void *host,
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
static inline void host_2d(hp_copy_t *c, const hp_CUDA_MEMCPY2D *p)
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
static inline void host_3d(hp_copy_t *c, const hp_CUDA_MEMCPY3D *p)
{
	if (p != NULL)
		HOST_3D_SIDES(c, p);
}
/* A 3D peer copy takes host memory on either side too. */
static inline void host_3dpeer(hp_copy_t *c, const hp_CUDA_MEMCPY3D_PEER *p)
{
	if (p != NULL)
		HOST_3D_SIDES(c, p);
}
static inline void host_batch(hp_copy_t *c, hp_CUdeviceptr *dsts,
		       hp_CUdeviceptr *srcs, size_t *sizes, size_t count)
{
	/* Any pointer of a batch may be a host one (unified addressing). */
	for (size_t i = 0; dsts && srcs && sizes && i < count; i++) {
		hp_copy_host(c, (const void *)(uintptr_t)srcs[i], sizes[i]);
		hp_copy_host(c, (const void *)(uintptr_t)dsts[i], sizes[i]);
	}
}

/* The function a linked call forwards to: its caller's next definition
 * (resolve.h), or the loaded driver's own (a driver another object loaded
 * RTLD_LOCAL). */
static inline void *sym_next_at(hp_fwd_t *f, const void *ra)
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
static inline void *lk_next(_Atomic(void *) *slot)
{
	/* acquire: pairs with the release in learn() */
	return atomic_load_explicit(slot, memory_order_acquire);
}

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
/* Staged copies (plan.c): a copy the engine made (and ended, as its plan
 * says) returns its result; a passed one (HP_COPY_PASSED) goes to the
 * driver. */
#define STAGED(call)                                                          \
	int st_ = (call);                                                     \
	if (st_ != HP_COPY_PASSED)                                            \
		return (hp_CUresult)st_;

/* ---- the list, by family ----
 * One line of hooks_cudrv.def, HP_CUDRV(family, base, since, stream, name),
 * goes to HP_CUDRV_family: a family's file defines its own as HP_CUDRV_EMIT
 * before it includes this header; every other family's is empty there. */
enum { LEGACY, PER_THREAD, ANY };
#define HP_CUDRV(fam, base, since, stream, name) HP_CUDRV_##fam(base, since, stream, name)
#ifndef HP_CUDRV_copy_async
#define HP_CUDRV_copy_async(base, since, stream, name)
#endif
#ifndef HP_CUDRV_copy_batch
#define HP_CUDRV_copy_batch(base, since, stream, name)
#endif
#ifndef HP_CUDRV_copy_sync
#define HP_CUDRV_copy_sync(base, since, stream, name)
#endif
#ifndef HP_CUDRV_memory
#define HP_CUDRV_memory(base, since, stream, name)
#endif
#ifndef HP_CUDRV_capture
#define HP_CUDRV_capture(base, since, stream, name)
#endif
#ifndef HP_CUDRV_lookup
#define HP_CUDRV_lookup(base, since, stream, name)
#endif

/* One entry of the lookup table: the name cuGetProcAddress takes, the CUDA
 * version from which the driver hands out this form, which stream form it
 * is (an entry point without a stream serves both), its exported name, and
 * the looked-up wrapper with its slot. */
struct hp_cudrv_variant {
	const char *base;
	int since;
	int stream;
	const char *name;
	_Atomic(void *) *slot;
	void *wrapper;
};
/* Each family's part of the table, ended by an entry without a name. */
HP_HIDDEN extern const struct hp_cudrv_variant hp_cudrv_copy_async[];
HP_HIDDEN extern const struct hp_cudrv_variant hp_cudrv_copy_batch[];
HP_HIDDEN extern const struct hp_cudrv_variant hp_cudrv_copy_sync[];
HP_HIDDEN extern const struct hp_cudrv_variant hp_cudrv_memory[];
HP_HIDDEN extern const struct hp_cudrv_variant hp_cudrv_capture[];
HP_HIDDEN extern const struct hp_cudrv_variant hp_cudrv_lookup[];

/* In a family's file: per entry point of the family, sym_NAME, where its
 * linked calls go on (resolve.h), and lkslot_NAME, the function the driver
 * returned for it (learn() in cudrv_lookup.c). */
#define HP_CUDRV_SLOTS(base, since, stream, name)                             \
	static hp_fwd_t sym_##name = HP_FWD_INIT(#name);                      \
	static _Atomic(void *) lkslot_##name;
#define HP_CUDRV_ENTRY(base, since, stream, name)                             \
	{#base, since, stream, #name, &lkslot_##name, (void *)lk_##name},
#endif
