/* CUDA driver hooks: the asynchronous copies (1D, 2D, 3D, 3D peer, to and
 * from arrays), NAME, lk_NAME and the per-thread-stream forms NAME_ptsz,
 * lk_NAME_ptsz.  How the driver hooks are put together: cudrv.h. */
#define HP_CUDRV_copy_async(base, since, stream, name) HP_CUDRV_EMIT(base, since, stream, name)
#include "cudrv.h"

#define HP_CUDRV_EMIT HP_CUDRV_SLOTS
#include "hooks_cudrv.def"
#undef HP_CUDRV_EMIT

HP_BODY hp_CUresult htod_async(void *f, int ptsz, hp_CUdeviceptr d,
			      const void *h, size_t n, hp_cudaStream_t s)
{
	HP_COPY_BODY(f, hp_cuMemcpyHtoDAsync_v2_t, hp_CUresult, (d, h, n, s),
		     hp_copy_host(&c_, h, n);
		     STAGED(hp_stage_htod(&c_, d, h, n, s, ptsz, 0)),
		     ASYNC_END)
}
HP_BODY hp_CUresult dtoh_async(void *f, int ptsz, void *h, hp_CUdeviceptr d,
			      size_t n, hp_cudaStream_t s)
{
	HP_COPY_BODY(f, hp_cuMemcpyDtoHAsync_v2_t, hp_CUresult, (h, d, n, s),
		     hp_copy_host(&c_, h, n);
		     STAGED(hp_stage_dtoh(&c_, h, d, n, s, ptsz, 0)),
		     ASYNC_END)
}
/* Between unified addresses: a large one from or into host memory
 * hostpin has not registered is staged by its direction, as the copies
 * with attributes are (plan.c). */
HP_BODY hp_CUresult copy_async(void *f, int ptsz, hp_CUdeviceptr d,
			      hp_CUdeviceptr sr, size_t n, hp_cudaStream_t s)
{
	HP_COPY_BODY(f, hp_cuMemcpyAsync_t, hp_CUresult, (d, sr, n, s),
		     hp_copy_host(&c_, (const void *)(uintptr_t)sr, n);
		     hp_copy_host(&c_, (const void *)(uintptr_t)d, n);
		     STAGED(hp_stage_unified(&c_, d, sr, n, s, ptsz, 0)),
		     ASYNC_END)
}
HP_BODY hp_CUresult copy2d_async(void *f, int ptsz, const hp_CUDA_MEMCPY2D *p,
				hp_cudaStream_t s)
{
	HP_COPY_BODY(f, hp_cuMemcpy2DAsync_v2_t, hp_CUresult, (p, s),
		     host_2d(&c_, p);
		     STAGED(hp_stage_2d(&c_, p, s, ptsz, 0)),
		     ASYNC_END)
}
HP_BODY hp_CUresult copy3d_async(void *f, int ptsz, const hp_CUDA_MEMCPY3D *p,
				hp_cudaStream_t s)
{
	HP_COPY_BODY(f, hp_cuMemcpy3DAsync_v2_t, hp_CUresult, (p, s),
		     host_3d(&c_, p);
		     STAGED(hp_stage_3d(&c_, p, s, ptsz, 0)),
		     ASYNC_END)
}
HP_BODY hp_CUresult copy3dpeer_async(void *f, int ptsz,
				    const hp_CUDA_MEMCPY3D_PEER *p,
				    hp_cudaStream_t s)
{
	HP_COPY_BODY(f, hp_cuMemcpy3DPeerAsync_t, hp_CUresult, (p, s),
		     host_3dpeer(&c_, p);
		     STAGED(hp_stage_3d_peer(&c_, p, s, ptsz, 0)),
		     ASYNC_END)
}
HP_BODY hp_CUresult htoa_async(void *f, int ptsz, hp_CUarray a, size_t off,
			      const void *h, size_t n, hp_cudaStream_t s)
{
	HP_COPY_BODY(f, hp_cuMemcpyHtoAAsync_v2_t, hp_CUresult,
		     (a, off, h, n, s), hp_copy_host(&c_, h, n);
		     STAGED(hp_stage_array_1d(&c_, a, off, (char *)(uintptr_t)h,
					      n, s, ptsz, 1, 0)),
		     ASYNC_END)
}
HP_BODY hp_CUresult atoh_async(void *f, int ptsz, void *h, hp_CUarray a,
			      size_t off, size_t n, hp_cudaStream_t s)
{
	HP_COPY_BODY(f, hp_cuMemcpyAtoHAsync_v2_t, hp_CUresult,
		     (h, a, off, n, s), hp_copy_host(&c_, h, n);
		     STAGED(hp_stage_array_1d(&c_, a, off, h, n, s, ptsz, 0,
					      0)),
		     ASYNC_END)
}

/* ---- asynchronous copies ----
 * NAME, lk_NAME, and the per-thread-stream forms NAME_ptsz, lk_NAME_ptsz. */
HP_EXPORT hp_CUresult cuMemcpyHtoDAsync_v2(hp_CUdeviceptr d, const void *h,
					   size_t n, hp_cudaStream_t s)
{
	return htod_async(NEXT(cuMemcpyHtoDAsync_v2), 0, d, h, n, s);
}

static hp_CUresult lk_cuMemcpyHtoDAsync_v2(hp_CUdeviceptr d, const void *h,
					   size_t n, hp_cudaStream_t s)
{
	return htod_async(LOOKED_UP(cuMemcpyHtoDAsync_v2), 0, d, h, n, s);
}

HP_EXPORT hp_CUresult cuMemcpyHtoDAsync_v2_ptsz(hp_CUdeviceptr d, const void *h,
						size_t n, hp_cudaStream_t s)
{
	return htod_async(NEXT(cuMemcpyHtoDAsync_v2_ptsz), 1, d, h, n, s);
}

static hp_CUresult lk_cuMemcpyHtoDAsync_v2_ptsz(hp_CUdeviceptr d, const void *h,
						size_t n, hp_cudaStream_t s)
{
	return htod_async(LOOKED_UP(cuMemcpyHtoDAsync_v2_ptsz), 1, d, h, n, s);
}

HP_EXPORT hp_CUresult cuMemcpyDtoHAsync_v2(void *h, hp_CUdeviceptr d, size_t n,
					   hp_cudaStream_t s)
{
	return dtoh_async(NEXT(cuMemcpyDtoHAsync_v2), 0, h, d, n, s);
}

static hp_CUresult lk_cuMemcpyDtoHAsync_v2(void *h, hp_CUdeviceptr d, size_t n,
					   hp_cudaStream_t s)
{
	return dtoh_async(LOOKED_UP(cuMemcpyDtoHAsync_v2), 0, h, d, n, s);
}

HP_EXPORT hp_CUresult cuMemcpyDtoHAsync_v2_ptsz(void *h, hp_CUdeviceptr d,
						size_t n, hp_cudaStream_t s)
{
	return dtoh_async(NEXT(cuMemcpyDtoHAsync_v2_ptsz), 1, h, d, n, s);
}

static hp_CUresult lk_cuMemcpyDtoHAsync_v2_ptsz(void *h, hp_CUdeviceptr d,
						size_t n, hp_cudaStream_t s)
{
	return dtoh_async(LOOKED_UP(cuMemcpyDtoHAsync_v2_ptsz), 1, h, d, n, s);
}

HP_EXPORT hp_CUresult cuMemcpyAsync(hp_CUdeviceptr d, hp_CUdeviceptr sr,
				    size_t n, hp_cudaStream_t s)
{
	return copy_async(NEXT(cuMemcpyAsync), 0, d, sr, n, s);
}

static hp_CUresult lk_cuMemcpyAsync(hp_CUdeviceptr d, hp_CUdeviceptr sr,
				    size_t n, hp_cudaStream_t s)
{
	return copy_async(LOOKED_UP(cuMemcpyAsync), 0, d, sr, n, s);
}

HP_EXPORT hp_CUresult cuMemcpyAsync_ptsz(hp_CUdeviceptr d, hp_CUdeviceptr sr,
					 size_t n, hp_cudaStream_t s)
{
	return copy_async(NEXT(cuMemcpyAsync_ptsz), 1, d, sr, n, s);
}

static hp_CUresult lk_cuMemcpyAsync_ptsz(hp_CUdeviceptr d, hp_CUdeviceptr sr,
					 size_t n, hp_cudaStream_t s)
{
	return copy_async(LOOKED_UP(cuMemcpyAsync_ptsz), 1, d, sr, n, s);
}

HP_EXPORT hp_CUresult cuMemcpy2DAsync_v2(const hp_CUDA_MEMCPY2D *p,
					 hp_cudaStream_t s)
{
	return copy2d_async(NEXT(cuMemcpy2DAsync_v2), 0, p, s);
}

static hp_CUresult lk_cuMemcpy2DAsync_v2(const hp_CUDA_MEMCPY2D *p,
					 hp_cudaStream_t s)
{
	return copy2d_async(LOOKED_UP(cuMemcpy2DAsync_v2), 0, p, s);
}

HP_EXPORT hp_CUresult cuMemcpy2DAsync_v2_ptsz(const hp_CUDA_MEMCPY2D *p,
					      hp_cudaStream_t s)
{
	return copy2d_async(NEXT(cuMemcpy2DAsync_v2_ptsz), 1, p, s);
}

static hp_CUresult lk_cuMemcpy2DAsync_v2_ptsz(const hp_CUDA_MEMCPY2D *p,
					      hp_cudaStream_t s)
{
	return copy2d_async(LOOKED_UP(cuMemcpy2DAsync_v2_ptsz), 1, p, s);
}

HP_EXPORT hp_CUresult cuMemcpy3DAsync_v2(const hp_CUDA_MEMCPY3D *p,
					 hp_cudaStream_t s)
{
	return copy3d_async(NEXT(cuMemcpy3DAsync_v2), 0, p, s);
}

static hp_CUresult lk_cuMemcpy3DAsync_v2(const hp_CUDA_MEMCPY3D *p,
					 hp_cudaStream_t s)
{
	return copy3d_async(LOOKED_UP(cuMemcpy3DAsync_v2), 0, p, s);
}

HP_EXPORT hp_CUresult cuMemcpy3DAsync_v2_ptsz(const hp_CUDA_MEMCPY3D *p,
					      hp_cudaStream_t s)
{
	return copy3d_async(NEXT(cuMemcpy3DAsync_v2_ptsz), 1, p, s);
}

static hp_CUresult lk_cuMemcpy3DAsync_v2_ptsz(const hp_CUDA_MEMCPY3D *p,
					      hp_cudaStream_t s)
{
	return copy3d_async(LOOKED_UP(cuMemcpy3DAsync_v2_ptsz), 1, p, s);
}

HP_EXPORT hp_CUresult cuMemcpy3DPeerAsync(const hp_CUDA_MEMCPY3D_PEER *p,
					  hp_cudaStream_t s)
{
	return copy3dpeer_async(NEXT(cuMemcpy3DPeerAsync), 0, p, s);
}

static hp_CUresult lk_cuMemcpy3DPeerAsync(const hp_CUDA_MEMCPY3D_PEER *p,
					  hp_cudaStream_t s)
{
	return copy3dpeer_async(LOOKED_UP(cuMemcpy3DPeerAsync), 0, p, s);
}

HP_EXPORT hp_CUresult cuMemcpy3DPeerAsync_ptsz(const hp_CUDA_MEMCPY3D_PEER *p,
					       hp_cudaStream_t s)
{
	return copy3dpeer_async(NEXT(cuMemcpy3DPeerAsync_ptsz), 1, p, s);
}

static hp_CUresult lk_cuMemcpy3DPeerAsync_ptsz(const hp_CUDA_MEMCPY3D_PEER *p,
					       hp_cudaStream_t s)
{
	return copy3dpeer_async(LOOKED_UP(cuMemcpy3DPeerAsync_ptsz), 1, p, s);
}

HP_EXPORT hp_CUresult cuMemcpyHtoAAsync_v2(hp_CUarray a, size_t off,
					   const void *h, size_t n,
					   hp_cudaStream_t s)
{
	return htoa_async(NEXT(cuMemcpyHtoAAsync_v2), 0, a, off, h, n, s);
}

static hp_CUresult lk_cuMemcpyHtoAAsync_v2(hp_CUarray a, size_t off,
					   const void *h, size_t n,
					   hp_cudaStream_t s)
{
	return htoa_async(LOOKED_UP(cuMemcpyHtoAAsync_v2), 0, a, off, h, n, s);
}

HP_EXPORT hp_CUresult cuMemcpyHtoAAsync_v2_ptsz(hp_CUarray a, size_t off,
						const void *h, size_t n,
						hp_cudaStream_t s)
{
	return htoa_async(NEXT(cuMemcpyHtoAAsync_v2_ptsz), 1, a, off, h, n, s);
}

static hp_CUresult lk_cuMemcpyHtoAAsync_v2_ptsz(hp_CUarray a, size_t off,
						const void *h, size_t n,
						hp_cudaStream_t s)
{
	return htoa_async(LOOKED_UP(cuMemcpyHtoAAsync_v2_ptsz), 1, a, off, h, n,
			  s);
}

HP_EXPORT hp_CUresult cuMemcpyAtoHAsync_v2(void *h, hp_CUarray a, size_t off,
					   size_t n, hp_cudaStream_t s)
{
	return atoh_async(NEXT(cuMemcpyAtoHAsync_v2), 0, h, a, off, n, s);
}

static hp_CUresult lk_cuMemcpyAtoHAsync_v2(void *h, hp_CUarray a, size_t off,
					   size_t n, hp_cudaStream_t s)
{
	return atoh_async(LOOKED_UP(cuMemcpyAtoHAsync_v2), 0, h, a, off, n, s);
}

HP_EXPORT hp_CUresult cuMemcpyAtoHAsync_v2_ptsz(void *h, hp_CUarray a,
						size_t off, size_t n,
						hp_cudaStream_t s)
{
	return atoh_async(NEXT(cuMemcpyAtoHAsync_v2_ptsz), 1, h, a, off, n, s);
}

static hp_CUresult lk_cuMemcpyAtoHAsync_v2_ptsz(void *h, hp_CUarray a,
						size_t off, size_t n,
						hp_cudaStream_t s)
{
	return atoh_async(LOOKED_UP(cuMemcpyAtoHAsync_v2_ptsz), 1, h, a, off, n,
			  s);
}

/* This family's part of the lookup table (cudrv_lookup.c). */
const struct hp_cudrv_variant hp_cudrv_copy_async[] = {
#define HP_CUDRV_EMIT HP_CUDRV_ENTRY
#include "hooks_cudrv.def"
#undef HP_CUDRV_EMIT
	{0}};
