/* Batched copies entry by entry (batch.c), for the driver's batch hooks
 * (cudrv_copy_batch.c) and the runtime's (cudart_copy_async.c): a batch
 * touching a block of hostpin's runs each entry as the single copy it is
 * (planned by copy/plan.c: split at registration pieces, staged), and the
 * batch ends once (issue 39). */
#ifndef HP_HOOKS_BATCH_H
#define HP_HOOKS_BATCH_H

#include "../hooks.h"

/* A batch: its entries (a 1D batch: d, sr, sz, its attributes at, ai, na;
 * a 3D one: ops, fl), the function f of its API (the driver's or the
 * runtime's), v2 (1: the form without failIdx; 2, the driver's
 * cuMemcpy3DWithAttributesAsync: one op), the stream s (ptsz: stream 0 is
 * the per-thread one), how (HP_STAGE_RETRY for the runtime: an entry the
 * engine could not make goes to the runtime in its own terms), and call:
 * entries [i, i+n) to f as one batch (n == 1: with entry i's attributes
 * alone, hp_batch_attrs), the 12.8 forms' failIdx fail. */
struct hp_batch {
	int (*call)(const struct hp_batch *b, size_t i, size_t n, size_t *fail);
	void *f;
	int v2, ptsz, how;
	hp_CUdeviceptr *d, *sr;
	size_t *sz;
	void *at;
	size_t *ai, na;
	hp_CUDA_MEMCPY3D_BATCH_OP *ops;
	unsigned long long fl;
	hp_cudaStream_t s;
};

/* A batch of n entries: whole to the API when it touches no block of
 * hostpin's (or the driver would refuse it), else entry by entry up to the
 * first error (*fail, when not NULL: its index); the batch's result. */
HP_HIDDEN int hp_batch_run(const struct hp_batch *b, size_t n, size_t *fail);
/* The attributes of a call of entries [i, i+n): the batch's own, or, for
 * entry i alone, the one that applies to it (*zero: its index array). */
HP_HIDDEN void hp_batch_attrs(const struct hp_batch *b, size_t i, size_t n,
			      void **at, size_t **ai, size_t *na,
			      size_t *zero);

#endif
