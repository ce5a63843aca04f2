/* CUDA driver hooks: the batched copies and CUDA 13.2's copies with
 * attributes, asynchronous, NAME, lk_NAME and the per-thread-stream forms.
 * How the driver hooks are put together: cudrv.h. */
#define HP_CUDRV_copy_batch(base, since, stream, name) HP_CUDRV_EMIT(base, since, stream, name)
#include "cudrv.h"

#define HP_CUDRV_EMIT HP_CUDRV_SLOTS
#include "hooks_cudrv.def"
#undef HP_CUDRV_EMIT

void hp_copy_host_ops(hp_copy_t *c, const hp_CUDA_MEMCPY3D_BATCH_OP *ops,
		      size_t n)
{
	for (size_t i = 0; ops && i < n; i++) {
		size_t b = ops[i].extent.width * ops[i].extent.height *
			   ops[i].extent.depth;
		if (ops[i].src.type == HP_CU_MEMCPY_OPERAND_TYPE_POINTER)
			hp_copy_host(c, (const void *)(uintptr_t)
					    ops[i].src.op.ptr.ptr, b);
		if (ops[i].dst.type == HP_CU_MEMCPY_OPERAND_TYPE_POINTER)
			hp_copy_host(c, (const void *)(uintptr_t)
					    ops[i].dst.op.ptr.ptr, b);
	}
}

HP_BODY hp_CUresult batch_async(void *f, int ptsz, hp_CUdeviceptr *d,
			       hp_CUdeviceptr *sr, size_t *sz, size_t n,
			       hp_CUmemcpyAttributes *at, size_t *ai,
			       size_t na, size_t *fail, hp_cudaStream_t s)
{
	HP_COPY_BODY(f, hp_cuMemcpyBatchAsync_t, hp_CUresult,
		     (d, sr, sz, n, at, ai, na, fail, s),
		     host_batch(&c_, d, sr, sz, n), ASYNC_END)
}
HP_BODY hp_CUresult batch_async_v2(void *f, int ptsz, hp_CUdeviceptr *d,
				  hp_CUdeviceptr *sr, size_t *sz, size_t n,
				  hp_CUmemcpyAttributes *at, size_t *ai,
				  size_t na, hp_cudaStream_t s)
{
	HP_COPY_BODY(f, hp_cuMemcpyBatchAsync_v2_t, hp_CUresult,
		     (d, sr, sz, n, at, ai, na, s),
		     host_batch(&c_, d, sr, sz, n), ASYNC_END)
}
HP_BODY hp_CUresult batch3d_async(void *f, int ptsz, size_t n,
				 hp_CUDA_MEMCPY3D_BATCH_OP *ops, size_t *fail,
				 unsigned long long fl, hp_cudaStream_t s)
{
	HP_COPY_BODY(f, hp_cuMemcpy3DBatchAsync_t, hp_CUresult,
		     (n, ops, fail, fl, s), hp_copy_host_ops(&c_, ops, n),
		     ASYNC_END)
}
HP_BODY hp_CUresult batch3d_async_v2(void *f, int ptsz, size_t n,
				    hp_CUDA_MEMCPY3D_BATCH_OP *ops,
				    unsigned long long fl, hp_cudaStream_t s)
{
	HP_COPY_BODY(f, hp_cuMemcpy3DBatchAsync_v2_t, hp_CUresult,
		     (n, ops, fl, s), hp_copy_host_ops(&c_, ops, n), ASYNC_END)
}

/* CUDA 13.2's single copies with attributes.  Either side of the 1D form
 * may be host memory (unified addressing): a large one from or into host
 * memory hostpin has not registered is staged when the other side is
 * device memory (copy_dir). */
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
	HP_COPY_BODY(f, hp_cuMemcpy3DWithAttributesAsync_t, hp_CUresult,
		     (op, fl, s), hp_copy_host_ops(&c_, op, 1), ASYNC_END)
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
