/* CUDA driver hooks: the batched copies and CUDA 13.2's copies with
 * attributes, asynchronous, NAME, lk_NAME and the per-thread-stream forms.
 * How the driver hooks are put together: cudrv.h. */
#define HP_CUDRV_copy_batch(base, since, stream, name) HP_CUDRV_EMIT(base, since, stream, name)
#include "cudrv.h"
#include "batch.h"

#define HP_CUDRV_EMIT HP_CUDRV_SLOTS
#include "hooks_cudrv.def"
#undef HP_CUDRV_EMIT

/* Entries [i, i+n) of b to the driver as one batch (hp_batch_attrs: n ==
 * 1, the entry's own attributes). */
static int batch_call(const struct hp_batch *b, size_t i, size_t n,
		      size_t *fail)
{
	if (b->v2 == 2) /* cuMemcpy3DWithAttributesAsync: one op */
		return ((hp_cuMemcpy3DWithAttributesAsync_t)b->f)(
		    b->ops + i, b->fl, b->s);
	if (b->ops)
		return b->v2 ? ((hp_cuMemcpy3DBatchAsync_v2_t)b->f)(
				   n, b->ops + i, b->fl, b->s)
			     : ((hp_cuMemcpy3DBatchAsync_t)b->f)(
				   n, b->ops + i, fail, b->fl, b->s);
	void *at;
	size_t *ai, na, zero;
	hp_batch_attrs(b, i, n, &at, &ai, &na, &zero);
	return b->v2 ? ((hp_cuMemcpyBatchAsync_v2_t)b->f)(
			   b->d + i, b->sr + i, b->sz + i, n, at, ai, na, b->s)
		     : ((hp_cuMemcpyBatchAsync_t)b->f)(b->d + i, b->sr + i,
						       b->sz + i, n, at, ai,
						       na, fail, b->s);
}

/* A driver batch (batch.c: entry by entry when it touches a block of
 * hostpin's, each the single copy it is). */
#define DRV_BATCH(f, v2, ptsz, d, sr, sz, at, ai, na, ops, fl, s)            \
	((struct hp_batch){batch_call, f, v2, ptsz, 0, d, sr, sz, at, ai, na, \
			   ops, fl, s})

HP_BODY hp_CUresult batch_async(void *f, int ptsz, hp_CUdeviceptr *d,
			       hp_CUdeviceptr *sr, size_t *sz, size_t n,
			       hp_CUmemcpyAttributes *at, size_t *ai,
			       size_t na, size_t *fail, hp_cudaStream_t s)
{
	if (f == NULL)
		return HP_CUDA_ERROR_NOT_FOUND;
	struct hp_batch b =
	    DRV_BATCH(f, 0, ptsz, d, sr, sz, at, ai, na, NULL, 0, s);
	return hp_batch_run(&b, n, fail);
}
HP_BODY hp_CUresult batch_async_v2(void *f, int ptsz, hp_CUdeviceptr *d,
				  hp_CUdeviceptr *sr, size_t *sz, size_t n,
				  hp_CUmemcpyAttributes *at, size_t *ai,
				  size_t na, hp_cudaStream_t s)
{
	if (f == NULL)
		return HP_CUDA_ERROR_NOT_FOUND;
	struct hp_batch b =
	    DRV_BATCH(f, 1, ptsz, d, sr, sz, at, ai, na, NULL, 0, s);
	return hp_batch_run(&b, n, NULL);
}
HP_BODY hp_CUresult batch3d_async(void *f, int ptsz, size_t n,
				 hp_CUDA_MEMCPY3D_BATCH_OP *ops, size_t *fail,
				 unsigned long long fl, hp_cudaStream_t s)
{
	if (f == NULL)
		return HP_CUDA_ERROR_NOT_FOUND;
	struct hp_batch b =
	    DRV_BATCH(f, 0, ptsz, NULL, NULL, NULL, NULL, NULL, 0, ops, fl, s);
	return ops ? hp_batch_run(&b, n, fail) : batch_call(&b, 0, n, fail);
}
HP_BODY hp_CUresult batch3d_async_v2(void *f, int ptsz, size_t n,
				    hp_CUDA_MEMCPY3D_BATCH_OP *ops,
				    unsigned long long fl, hp_cudaStream_t s)
{
	if (f == NULL)
		return HP_CUDA_ERROR_NOT_FOUND;
	struct hp_batch b =
	    DRV_BATCH(f, 1, ptsz, NULL, NULL, NULL, NULL, NULL, 0, ops, fl, s);
	return ops ? hp_batch_run(&b, n, NULL) : batch_call(&b, 0, n, NULL);
}

/* CUDA 13.2's single copies with attributes.  Either side of the 1D form
 * may be host memory (unified addressing): a large one from or into host
 * memory hostpin has not registered is staged when the other side is
 * device memory (plan.c). */
HP_BODY hp_CUresult copy_attr_async(void *f, int ptsz, hp_CUdeviceptr d,
				   hp_CUdeviceptr sr, size_t n,
				   hp_CUmemcpyAttributes *at,
				   hp_cudaStream_t s)
{
	HP_COPY_BODY(f, hp_cuMemcpyWithAttributesAsync_t, hp_CUresult,
		     (d, sr, n, at, s),
		     hp_copy_host(&c_, (const void *)(uintptr_t)sr, n);
		     hp_copy_host(&c_, (const void *)(uintptr_t)d, n);
		     STAGED(hp_stage_unified(&c_, d, sr, n, s, ptsz, 0)),
		     ASYNC_END)
}
HP_BODY hp_CUresult copy3d_attr_async(void *f, int ptsz,
				     hp_CUDA_MEMCPY3D_BATCH_OP *op,
				     unsigned long long fl, hp_cudaStream_t s)
{
	if (f == NULL)
		return HP_CUDA_ERROR_NOT_FOUND;
	/* a 3D batch of one op, without its failIdx */
	struct hp_batch b =
	    DRV_BATCH(f, 2, ptsz, NULL, NULL, NULL, NULL, NULL, 0, op, fl, s);
	return op ? hp_batch_run(&b, 1, NULL) : batch_call(&b, 0, 1, NULL);
}

HP_EXPORT hp_CUresult cuMemcpyBatchAsync(hp_CUdeviceptr *d, hp_CUdeviceptr *sr,
					 size_t *sz, size_t n,
					 hp_CUmemcpyAttributes *at, size_t *ai,
					 size_t na, size_t *fail,
					 hp_cudaStream_t s)
{
	return batch_async(NEXT(cuMemcpyBatchAsync), 0, d, sr, sz, n, at, ai,
			   na, fail, s);
}

static hp_CUresult lk_cuMemcpyBatchAsync(hp_CUdeviceptr *d, hp_CUdeviceptr *sr,
					 size_t *sz, size_t n,
					 hp_CUmemcpyAttributes *at, size_t *ai,
					 size_t na, size_t *fail,
					 hp_cudaStream_t s)
{
	return batch_async(LOOKED_UP(cuMemcpyBatchAsync), 0, d, sr, sz, n, at,
			   ai, na, fail, s);
}

HP_EXPORT hp_CUresult cuMemcpyBatchAsync_ptsz(hp_CUdeviceptr *d,
					      hp_CUdeviceptr *sr, size_t *sz,
					      size_t n,
					      hp_CUmemcpyAttributes *at,
					      size_t *ai, size_t na,
					      size_t *fail, hp_cudaStream_t s)
{
	return batch_async(NEXT(cuMemcpyBatchAsync_ptsz), 1, d, sr, sz, n, at,
			   ai, na, fail, s);
}

static hp_CUresult lk_cuMemcpyBatchAsync_ptsz(hp_CUdeviceptr *d,
					      hp_CUdeviceptr *sr, size_t *sz,
					      size_t n,
					      hp_CUmemcpyAttributes *at,
					      size_t *ai, size_t na,
					      size_t *fail, hp_cudaStream_t s)
{
	return batch_async(LOOKED_UP(cuMemcpyBatchAsync_ptsz), 1, d, sr, sz, n,
			   at, ai, na, fail, s);
}

HP_EXPORT hp_CUresult cuMemcpyBatchAsync_v2(hp_CUdeviceptr *d,
					    hp_CUdeviceptr *sr, size_t *sz,
					    size_t n, hp_CUmemcpyAttributes *at,
					    size_t *ai, size_t na,
					    hp_cudaStream_t s)
{
	return batch_async_v2(NEXT(cuMemcpyBatchAsync_v2), 0, d, sr, sz, n, at,
			      ai, na, s);
}

static hp_CUresult lk_cuMemcpyBatchAsync_v2(hp_CUdeviceptr *d,
					    hp_CUdeviceptr *sr, size_t *sz,
					    size_t n, hp_CUmemcpyAttributes *at,
					    size_t *ai, size_t na,
					    hp_cudaStream_t s)
{
	return batch_async_v2(LOOKED_UP(cuMemcpyBatchAsync_v2), 0, d, sr, sz, n,
			      at, ai, na, s);
}

HP_EXPORT hp_CUresult cuMemcpyBatchAsync_v2_ptsz(hp_CUdeviceptr *d,
						 hp_CUdeviceptr *sr, size_t *sz,
						 size_t n,
						 hp_CUmemcpyAttributes *at,
						 size_t *ai, size_t na,
						 hp_cudaStream_t s)
{
	return batch_async_v2(NEXT(cuMemcpyBatchAsync_v2_ptsz), 1, d, sr, sz, n,
			      at, ai, na, s);
}

static hp_CUresult lk_cuMemcpyBatchAsync_v2_ptsz(hp_CUdeviceptr *d,
						 hp_CUdeviceptr *sr, size_t *sz,
						 size_t n,
						 hp_CUmemcpyAttributes *at,
						 size_t *ai, size_t na,
						 hp_cudaStream_t s)
{
	return batch_async_v2(LOOKED_UP(cuMemcpyBatchAsync_v2_ptsz), 1, d, sr,
			      sz, n, at, ai, na, s);
}

HP_EXPORT hp_CUresult cuMemcpy3DBatchAsync(size_t n,
					   hp_CUDA_MEMCPY3D_BATCH_OP *ops,
					   size_t *fail, unsigned long long fl,
					   hp_cudaStream_t s)
{
	return batch3d_async(NEXT(cuMemcpy3DBatchAsync), 0, n, ops, fail, fl,
			     s);
}

static hp_CUresult lk_cuMemcpy3DBatchAsync(size_t n,
					   hp_CUDA_MEMCPY3D_BATCH_OP *ops,
					   size_t *fail, unsigned long long fl,
					   hp_cudaStream_t s)
{
	return batch3d_async(LOOKED_UP(cuMemcpy3DBatchAsync), 0, n, ops, fail,
			     fl, s);
}

HP_EXPORT hp_CUresult cuMemcpy3DBatchAsync_ptsz(size_t n,
						hp_CUDA_MEMCPY3D_BATCH_OP *ops,
						size_t *fail,
						unsigned long long fl,
						hp_cudaStream_t s)
{
	return batch3d_async(NEXT(cuMemcpy3DBatchAsync_ptsz), 1, n, ops, fail,
			     fl, s);
}

static hp_CUresult lk_cuMemcpy3DBatchAsync_ptsz(size_t n,
						hp_CUDA_MEMCPY3D_BATCH_OP *ops,
						size_t *fail,
						unsigned long long fl,
						hp_cudaStream_t s)
{
	return batch3d_async(LOOKED_UP(cuMemcpy3DBatchAsync_ptsz), 1, n, ops,
			     fail, fl, s);
}

HP_EXPORT hp_CUresult cuMemcpy3DBatchAsync_v2(size_t n,
					      hp_CUDA_MEMCPY3D_BATCH_OP *ops,
					      unsigned long long fl,
					      hp_cudaStream_t s)
{
	return batch3d_async_v2(NEXT(cuMemcpy3DBatchAsync_v2), 0, n, ops, fl,
				s);
}

static hp_CUresult lk_cuMemcpy3DBatchAsync_v2(size_t n,
					      hp_CUDA_MEMCPY3D_BATCH_OP *ops,
					      unsigned long long fl,
					      hp_cudaStream_t s)
{
	return batch3d_async_v2(LOOKED_UP(cuMemcpy3DBatchAsync_v2), 0, n, ops,
				fl, s);
}

HP_EXPORT hp_CUresult cuMemcpy3DBatchAsync_v2_ptsz(
    size_t n, hp_CUDA_MEMCPY3D_BATCH_OP *ops, unsigned long long fl,
    hp_cudaStream_t s)
{
	return batch3d_async_v2(NEXT(cuMemcpy3DBatchAsync_v2_ptsz), 1, n, ops,
				fl, s);
}

static hp_CUresult lk_cuMemcpy3DBatchAsync_v2_ptsz(
    size_t n, hp_CUDA_MEMCPY3D_BATCH_OP *ops, unsigned long long fl,
    hp_cudaStream_t s)
{
	return batch3d_async_v2(LOOKED_UP(cuMemcpy3DBatchAsync_v2_ptsz), 1, n,
				ops, fl, s);
}

HP_EXPORT hp_CUresult cuMemcpyWithAttributesAsync(hp_CUdeviceptr d, hp_CUdeviceptr sr,
		size_t n, hp_CUmemcpyAttributes *at, hp_cudaStream_t s)
{
	return copy_attr_async(NEXT(cuMemcpyWithAttributesAsync), 0, d, sr, n, at, s);
}

static hp_CUresult lk_cuMemcpyWithAttributesAsync(hp_CUdeviceptr d, hp_CUdeviceptr sr,
		size_t n, hp_CUmemcpyAttributes *at, hp_cudaStream_t s)
{
	return copy_attr_async(LOOKED_UP(cuMemcpyWithAttributesAsync), 0, d, sr, n, at, s);
}

HP_EXPORT hp_CUresult cuMemcpyWithAttributesAsync_ptsz(hp_CUdeviceptr d, hp_CUdeviceptr sr,
		size_t n, hp_CUmemcpyAttributes *at, hp_cudaStream_t s)
{
	return copy_attr_async(NEXT(cuMemcpyWithAttributesAsync_ptsz), 1, d, sr, n, at, s);
}

static hp_CUresult lk_cuMemcpyWithAttributesAsync_ptsz(hp_CUdeviceptr d, hp_CUdeviceptr sr,
		size_t n, hp_CUmemcpyAttributes *at, hp_cudaStream_t s)
{
	return copy_attr_async(LOOKED_UP(cuMemcpyWithAttributesAsync_ptsz), 1, d, sr, n, at, s);
}

HP_EXPORT hp_CUresult cuMemcpy3DWithAttributesAsync(hp_CUDA_MEMCPY3D_BATCH_OP *op,
		unsigned long long fl, hp_cudaStream_t s)
{
	return copy3d_attr_async(NEXT(cuMemcpy3DWithAttributesAsync), 0, op, fl, s);
}

static hp_CUresult lk_cuMemcpy3DWithAttributesAsync(hp_CUDA_MEMCPY3D_BATCH_OP *op,
		unsigned long long fl, hp_cudaStream_t s)
{
	return copy3d_attr_async(LOOKED_UP(cuMemcpy3DWithAttributesAsync), 0, op, fl, s);
}

HP_EXPORT hp_CUresult cuMemcpy3DWithAttributesAsync_ptsz(hp_CUDA_MEMCPY3D_BATCH_OP *op,
		unsigned long long fl, hp_cudaStream_t s)
{
	return copy3d_attr_async(NEXT(cuMemcpy3DWithAttributesAsync_ptsz), 1, op, fl, s);
}

static hp_CUresult lk_cuMemcpy3DWithAttributesAsync_ptsz(hp_CUDA_MEMCPY3D_BATCH_OP *op,
		unsigned long long fl, hp_cudaStream_t s)
{
	return copy3d_attr_async(LOOKED_UP(cuMemcpy3DWithAttributesAsync_ptsz), 1, op, fl, s);
}

/* This family's part of the lookup table (cudrv_lookup.c). */
const struct hp_cudrv_variant hp_cudrv_copy_batch[] = {
#define HP_CUDRV_EMIT HP_CUDRV_ENTRY
#include "hooks_cudrv.def"
#undef HP_CUDRV_EMIT
	{0}};
