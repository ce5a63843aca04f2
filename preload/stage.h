/* Staged copies (stage.c): a large copy whose host side is not registered
 * goes through a ring of staging slots hostpin registered once, with the
 * semantics of pageable memory (CUDA's "API synchronization behavior"). */
#ifndef HP_STAGE_H
#define HP_STAGE_H

#include "hooks.h"

/* For a copy hook that entered (hp_hook_enter) and handed its host side to
 * hp_copy_host: 1 if the copy was staged, or went direct through the
 * registered part of a block being registered in the background and waited
 * for its stream (register.c), its driver result in *res; 2 if
 * it went direct through a registered block in several DMAs, one per
 * registration it crosses (HP_REG_PIECE_MAX, HOSTPIN_REGISTER_CHUNK), its
 * result in *res: the hook then ends it as a copy through registered
 * memory (hp_copy_end); 0 if it must go to the driver as it is
 * (HOSTPIN_STAGE=0, small, registered memory, another backend, a capture,
 * a forked child, no context on this thread, no ring).  s: the program's
 * stream; ptsz: stream 0 means the per-thread default stream; sync: the
 * synchronous form (it returns after the copy completed). */
HP_HIDDEN int hp_stage_htod(const hp_copy_t *c, uintptr_t d, const void *h,
			    size_t n, hp_cudaStream_t s, int ptsz, int sync,
			    int *res);
HP_HIDDEN int hp_stage_dtoh(const hp_copy_t *c, void *h, uintptr_t d,
			    size_t n, hp_cudaStream_t s, int ptsz, int sync,
			    int *res);

/* A 1D copy between unified addresses (cuMemcpyWithAttributesAsync and
 * the runtime's): staged as hp_stage_htod or hp_stage_dtoh when one side
 * is host memory the driver does not know (or a block of hostpin's) and
 * the other device memory; 0 otherwise (both host, both device, managed
 * or the program's pinned memory on either side).  copy_dir.c. */
HP_HIDDEN int hp_stage_unified(const hp_copy_t *c, uintptr_t d, uintptr_t s,
			       size_t n, hp_cudaStream_t st, int ptsz,
			       int sync, int *res);

/* A 2D copy (CUDA_MEMCPY2D) between pitched host memory and device memory,
 * staged whole rows at a time: as many rows as fit in a slot, packed
 * there, then one 2D DMA per slot.  1 if staged (*res: the driver's
 * result), 0 if it must go to the driver as it is (as above, and: an array
 * on either side, both sides host or both device, rows wider than a slot,
 * no cuMemcpy2DAsync_v2).  Arguments as above. */
HP_HIDDEN int hp_stage_2d(const hp_copy_t *c, const hp_CUDA_MEMCPY2D *p,
			  hp_cudaStream_t s, int ptsz, int sync, int *res);
/* A 3D copy (CUDA_MEMCPY3D) between pitched host memory and device memory:
 * its Depth slices staged as 2D copies in one hold of the ring, their
 * chunks pipelined across slices (a chunk spans slices when the device
 * side's follow each other: dstHeight or srcHeight == Height).  Passed through
 * (0) as a 2D copy is, and: a LOD or reserved field not 0, a depth of 0,
 * a slice height below Height with a depth over 1, or a Z with a slice
 * height of 0.  Arguments as above. */
HP_HIDDEN int hp_stage_3d(const hp_copy_t *c, const hp_CUDA_MEMCPY3D *p,
			  hp_cudaStream_t s, int ptsz, int sync, int *res);

/* register.c: the block the registration thread is registering, piece by
 * piece.  For a copy through record r of [a, a+n): 0 if r is not that
 * block; 1 if it is, the copy not wholly inside its registered prefix
 * (staged: the driver knows part of it); 2 if wholly inside: the copy may
 * go direct (*base, *len: the block), and is counted as a reader of the
 * prefix until hp_register_prefix_leave, which it calls once the DMAs
 * completed (no piece is unregistered before). */
HP_HIDDEN int hp_register_prefix(const struct hp_rec *r, uintptr_t a,
				 size_t n, uintptr_t *base, size_t *len);
HP_HIDDEN void hp_register_prefix_leave(void);

/* Is staging on for this process's backend (HOSTPIN_STAGE, CUDA)? */
HP_HIDDEN int hp_stage_on(void);

#endif
