/* CUDA driver hooks: the synchronous copies, NAME, lk_NAME and the
 * per-thread default stream forms NAME_ptds, lk_NAME_ptds.  How the driver
 * hooks are put together: cudrv.h. */
#define HP_CUDRV_copy_sync(base, since, stream, name) HP_CUDRV_EMIT(base, since, stream, name)
#include "cudrv.h"

#define HP_CUDRV_EMIT HP_CUDRV_SLOTS
#include "hooks_cudrv.def"
#undef HP_CUDRV_EMIT

/* Synchronous copies: the per-thread default stream form is _ptds. */
HP_BODY hp_CUresult htod_sync(void *f, int ptsz, hp_CUdeviceptr d,
			     const void *h, size_t n)
{
	HP_COPY_BODY(f, hp_cuMemcpyHtoD_v2_t, hp_CUresult, (d, h, n),
		     hp_copy_host(&c_, h, n);
		     STAGED(hp_stage_htod(&c_, d, h, n, NULL, ptsz, HP_STAGE_SYNC)),
		     SYNC_END)
}
HP_BODY hp_CUresult dtoh_sync(void *f, int ptsz, void *h, hp_CUdeviceptr d,
			     size_t n)
{
	HP_COPY_BODY(f, hp_cuMemcpyDtoH_v2_t, hp_CUresult, (h, d, n),
		     hp_copy_host(&c_, h, n);
		     STAGED(hp_stage_dtoh(&c_, h, d, n, NULL, ptsz, HP_STAGE_SYNC)),
		     SYNC_END)
}
/* Between unified addresses: planned as the H2D or D2H it is (plan.c),
 * so that one crossing registrations of a block of hostpin's is split or
 * staged as cuMemcpyHtoD's would be (issue 39 item 6). */
HP_BODY hp_CUresult copy_sync(void *f, int ptsz, hp_CUdeviceptr d,
			     hp_CUdeviceptr sr, size_t n)
{
	HP_COPY_BODY(f, hp_cuMemcpy_t, hp_CUresult, (d, sr, n),
		     hp_copy_host(&c_, (const void *)(uintptr_t)sr, n);
		     hp_copy_host(&c_, (const void *)(uintptr_t)d, n);
		     STAGED(hp_stage_unified(&c_, d, sr, n, NULL, ptsz,
					     HP_STAGE_SYNC)),
		     SYNC_END)
}
/* A 2D copy between pitched host memory and device memory is staged
 * (stage_rect.c), cuMemcpy2DUnaligned's too: the pitches cuMemcpy2D may
 * refuse and cuMemcpy2DUnaligned takes are those of copies within device
 * memory (cuda.h), which are never staged; a staged DMA is between a slot
 * (pitch: the width) and the device side as it is (issue 39 item 6). */
HP_BODY hp_CUresult copy2d_sync(void *f, int ptsz, const hp_CUDA_MEMCPY2D *p)
{
	HP_COPY_BODY(f, hp_cuMemcpy2D_v2_t, hp_CUresult, (p),
		     host_2d(&c_, p);
		     STAGED(hp_stage_2d(&c_, p, NULL, ptsz, HP_STAGE_SYNC)),
		     SYNC_END)
}
HP_BODY hp_CUresult copy2d_unaligned_sync(void *f, int ptsz,
					  const hp_CUDA_MEMCPY2D *p)
{
	HP_COPY_BODY(f, hp_cuMemcpy2DUnaligned_v2_t, hp_CUresult, (p),
		     host_2d(&c_, p);
		     STAGED(hp_stage_2d(&c_, p, NULL, ptsz, HP_STAGE_SYNC)),
		     SYNC_END)
}
/* A 3D copy between pitched host memory and device memory is staged too,
 * slice by slice (stage_rect.c). */
HP_BODY hp_CUresult copy3d_sync(void *f, int ptsz, const hp_CUDA_MEMCPY3D *p)
{
	HP_COPY_BODY(f, hp_cuMemcpy3D_v2_t, hp_CUresult, (p),
		     host_3d(&c_, p);
		     STAGED(hp_stage_3d(&c_, p, NULL, ptsz, HP_STAGE_SYNC)),
		     SYNC_END)
}
/* A 3D peer copy: planned as cuMemcpy3D's where it is this thread's
 * (hp_stage_3d_peer: the plan decides; issue 39 item 6). */
HP_BODY hp_CUresult copy3dpeer_sync(void *f, int ptsz,
				   const hp_CUDA_MEMCPY3D_PEER *p)
{
	HP_COPY_BODY(f, hp_cuMemcpy3DPeer_t, hp_CUresult, (p),
		     host_3dpeer(&c_, p);
		     STAGED(hp_stage_3d_peer(&c_, p, NULL, ptsz,
					     HP_STAGE_SYNC)),
		     SYNC_END)
}
/* A 1D array copy: cut where it must not go whole (hp_stage_array_1d). */
HP_BODY hp_CUresult htoa_sync(void *f, int ptsz, hp_CUarray a, size_t off,
			     const void *h, size_t n)
{
	HP_COPY_BODY(f, hp_cuMemcpyHtoA_v2_t, hp_CUresult, (a, off, h, n),
		     hp_copy_host(&c_, h, n);
		     STAGED(hp_stage_array_1d(&c_, a, off, (char *)(uintptr_t)h,
					      n, NULL, ptsz, 1, HP_STAGE_SYNC)),
		     SYNC_END)
}
HP_BODY hp_CUresult atoh_sync(void *f, int ptsz, void *h, hp_CUarray a,
			     size_t off, size_t n)
{
	HP_COPY_BODY(f, hp_cuMemcpyAtoH_v2_t, hp_CUresult, (h, a, off, n),
		     hp_copy_host(&c_, h, n);
		     STAGED(hp_stage_array_1d(&c_, a, off, h, n, NULL, ptsz, 0,
					      HP_STAGE_SYNC)),
		     SYNC_END)
}

/* ---- synchronous copies ----
 * NAME, lk_NAME, and the per-thread default stream forms NAME_ptds,
 * lk_NAME_ptds. */
HP_EXPORT hp_CUresult cuMemcpyHtoD_v2(hp_CUdeviceptr d, const void *h, size_t n)
{
	return htod_sync(NEXT(cuMemcpyHtoD_v2), 0, d, h, n);
}

static hp_CUresult lk_cuMemcpyHtoD_v2(hp_CUdeviceptr d, const void *h, size_t n)
{
	return htod_sync(LOOKED_UP(cuMemcpyHtoD_v2), 0, d, h, n);
}

HP_EXPORT hp_CUresult cuMemcpyHtoD_v2_ptds(hp_CUdeviceptr d, const void *h,
					   size_t n)
{
	return htod_sync(NEXT(cuMemcpyHtoD_v2_ptds), 1, d, h, n);
}

static hp_CUresult lk_cuMemcpyHtoD_v2_ptds(hp_CUdeviceptr d, const void *h,
					   size_t n)
{
	return htod_sync(LOOKED_UP(cuMemcpyHtoD_v2_ptds), 1, d, h, n);
}

HP_EXPORT hp_CUresult cuMemcpyDtoH_v2(void *h, hp_CUdeviceptr d, size_t n)
{
	return dtoh_sync(NEXT(cuMemcpyDtoH_v2), 0, h, d, n);
}

static hp_CUresult lk_cuMemcpyDtoH_v2(void *h, hp_CUdeviceptr d, size_t n)
{
	return dtoh_sync(LOOKED_UP(cuMemcpyDtoH_v2), 0, h, d, n);
}

HP_EXPORT hp_CUresult cuMemcpyDtoH_v2_ptds(void *h, hp_CUdeviceptr d, size_t n)
{
	return dtoh_sync(NEXT(cuMemcpyDtoH_v2_ptds), 1, h, d, n);
}

static hp_CUresult lk_cuMemcpyDtoH_v2_ptds(void *h, hp_CUdeviceptr d, size_t n)
{
	return dtoh_sync(LOOKED_UP(cuMemcpyDtoH_v2_ptds), 1, h, d, n);
}

HP_EXPORT hp_CUresult cuMemcpy(hp_CUdeviceptr d, hp_CUdeviceptr sr, size_t n)
{
	return copy_sync(NEXT(cuMemcpy), 0, d, sr, n);
}

static hp_CUresult lk_cuMemcpy(hp_CUdeviceptr d, hp_CUdeviceptr sr, size_t n)
{
	return copy_sync(LOOKED_UP(cuMemcpy), 0, d, sr, n);
}

HP_EXPORT hp_CUresult cuMemcpy_ptds(hp_CUdeviceptr d, hp_CUdeviceptr sr,
				    size_t n)
{
	return copy_sync(NEXT(cuMemcpy_ptds), 1, d, sr, n);
}

static hp_CUresult lk_cuMemcpy_ptds(hp_CUdeviceptr d, hp_CUdeviceptr sr,
				    size_t n)
{
	return copy_sync(LOOKED_UP(cuMemcpy_ptds), 1, d, sr, n);
}

HP_EXPORT hp_CUresult cuMemcpy2D_v2(const hp_CUDA_MEMCPY2D *p)
{
	return copy2d_sync(NEXT(cuMemcpy2D_v2), 0, p);
}

static hp_CUresult lk_cuMemcpy2D_v2(const hp_CUDA_MEMCPY2D *p)
{
	return copy2d_sync(LOOKED_UP(cuMemcpy2D_v2), 0, p);
}

HP_EXPORT hp_CUresult cuMemcpy2D_v2_ptds(const hp_CUDA_MEMCPY2D *p)
{
	return copy2d_sync(NEXT(cuMemcpy2D_v2_ptds), 1, p);
}

static hp_CUresult lk_cuMemcpy2D_v2_ptds(const hp_CUDA_MEMCPY2D *p)
{
	return copy2d_sync(LOOKED_UP(cuMemcpy2D_v2_ptds), 1, p);
}

HP_EXPORT hp_CUresult cuMemcpy2DUnaligned_v2(const hp_CUDA_MEMCPY2D *p)
{
	return copy2d_unaligned_sync(NEXT(cuMemcpy2DUnaligned_v2), 0, p);
}

static hp_CUresult lk_cuMemcpy2DUnaligned_v2(const hp_CUDA_MEMCPY2D *p)
{
	return copy2d_unaligned_sync(LOOKED_UP(cuMemcpy2DUnaligned_v2), 0, p);
}

HP_EXPORT hp_CUresult cuMemcpy2DUnaligned_v2_ptds(const hp_CUDA_MEMCPY2D *p)
{
	return copy2d_unaligned_sync(NEXT(cuMemcpy2DUnaligned_v2_ptds), 1, p);
}

static hp_CUresult lk_cuMemcpy2DUnaligned_v2_ptds(const hp_CUDA_MEMCPY2D *p)
{
	return copy2d_unaligned_sync(LOOKED_UP(cuMemcpy2DUnaligned_v2_ptds), 1, p);
}

HP_EXPORT hp_CUresult cuMemcpy3D_v2(const hp_CUDA_MEMCPY3D *p)
{
	return copy3d_sync(NEXT(cuMemcpy3D_v2), 0, p);
}

static hp_CUresult lk_cuMemcpy3D_v2(const hp_CUDA_MEMCPY3D *p)
{
	return copy3d_sync(LOOKED_UP(cuMemcpy3D_v2), 0, p);
}

HP_EXPORT hp_CUresult cuMemcpy3D_v2_ptds(const hp_CUDA_MEMCPY3D *p)
{
	return copy3d_sync(NEXT(cuMemcpy3D_v2_ptds), 1, p);
}

static hp_CUresult lk_cuMemcpy3D_v2_ptds(const hp_CUDA_MEMCPY3D *p)
{
	return copy3d_sync(LOOKED_UP(cuMemcpy3D_v2_ptds), 1, p);
}

HP_EXPORT hp_CUresult cuMemcpy3DPeer(const hp_CUDA_MEMCPY3D_PEER *p)
{
	return copy3dpeer_sync(NEXT(cuMemcpy3DPeer), 0, p);
}

static hp_CUresult lk_cuMemcpy3DPeer(const hp_CUDA_MEMCPY3D_PEER *p)
{
	return copy3dpeer_sync(LOOKED_UP(cuMemcpy3DPeer), 0, p);
}

HP_EXPORT hp_CUresult cuMemcpy3DPeer_ptds(const hp_CUDA_MEMCPY3D_PEER *p)
{
	return copy3dpeer_sync(NEXT(cuMemcpy3DPeer_ptds), 1, p);
}

static hp_CUresult lk_cuMemcpy3DPeer_ptds(const hp_CUDA_MEMCPY3D_PEER *p)
{
	return copy3dpeer_sync(LOOKED_UP(cuMemcpy3DPeer_ptds), 1, p);
}

HP_EXPORT hp_CUresult cuMemcpyHtoA_v2(hp_CUarray a, size_t off, const void *h,
				      size_t n)
{
	return htoa_sync(NEXT(cuMemcpyHtoA_v2), 0, a, off, h, n);
}

static hp_CUresult lk_cuMemcpyHtoA_v2(hp_CUarray a, size_t off, const void *h,
				      size_t n)
{
	return htoa_sync(LOOKED_UP(cuMemcpyHtoA_v2), 0, a, off, h, n);
}

HP_EXPORT hp_CUresult cuMemcpyHtoA_v2_ptds(hp_CUarray a, size_t off,
					   const void *h, size_t n)
{
	return htoa_sync(NEXT(cuMemcpyHtoA_v2_ptds), 1, a, off, h, n);
}

static hp_CUresult lk_cuMemcpyHtoA_v2_ptds(hp_CUarray a, size_t off,
					   const void *h, size_t n)
{
	return htoa_sync(LOOKED_UP(cuMemcpyHtoA_v2_ptds), 1, a, off, h, n);
}

HP_EXPORT hp_CUresult cuMemcpyAtoH_v2(void *h, hp_CUarray a, size_t off,
				      size_t n)
{
	return atoh_sync(NEXT(cuMemcpyAtoH_v2), 0, h, a, off, n);
}

static hp_CUresult lk_cuMemcpyAtoH_v2(void *h, hp_CUarray a, size_t off,
				      size_t n)
{
	return atoh_sync(LOOKED_UP(cuMemcpyAtoH_v2), 0, h, a, off, n);
}

HP_EXPORT hp_CUresult cuMemcpyAtoH_v2_ptds(void *h, hp_CUarray a, size_t off,
					   size_t n)
{
	return atoh_sync(NEXT(cuMemcpyAtoH_v2_ptds), 1, h, a, off, n);
}

static hp_CUresult lk_cuMemcpyAtoH_v2_ptds(void *h, hp_CUarray a, size_t off,
					   size_t n)
{
	return atoh_sync(LOOKED_UP(cuMemcpyAtoH_v2_ptds), 1, h, a, off, n);
}

/* This family's part of the lookup table (cudrv_lookup.c). */
const struct hp_cudrv_variant hp_cudrv_copy_sync[] = {
#define HP_CUDRV_EMIT HP_CUDRV_ENTRY
#include "hooks_cudrv.def"
#undef HP_CUDRV_EMIT
	{0}};
