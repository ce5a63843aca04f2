/* CUDA runtime hooks: the synchronous copies, NAME and the per-thread
 * default stream form NAME_ptds.  How the runtime hooks are put together:
 * cudart.h. */
#define HP_CUDART_copy_sync(name) HP_CUDART_EMIT(name)
#include "cudart.h"

#define HP_CUDART_EMIT HP_CUDART_SLOTS
#include "hooks_cudart.def"
#undef HP_CUDART_EMIT

/* Synchronous copies: the per-thread default stream form is _ptds. */
HP_BODY hp_cudaError_t copy_sync(void *f, int ptsz, void *dst, const void *src,
				size_t n, hp_cudaMemcpyKind kind)
{
	hp_cudaStream_t s = NULL; /* the legacy or per-thread default stream */
	HP_COPY_BODY(f, hp_cudaMemcpy_t, hp_cudaError_t, (dst, src, n, kind),
		     host_kind(&c_, kind, dst, src, n);
		     STAGED_KIND(1), SYNC_END)
}
HP_BODY hp_cudaError_t copy2d_sync(void *f, int ptsz, void *dst, size_t dp,
				  const void *src, size_t sp, size_t w,
				  size_t h, hp_cudaMemcpyKind kind)
{
	hp_cudaStream_t s = NULL; /* the legacy or per-thread default stream */
	HP_COPY_BODY(f, hp_cudaMemcpy2D_t, hp_cudaError_t,
		     (dst, dp, src, sp, w, h, kind),
		     host_kind_2d(&c_, kind, dst, dp, src, sp, w, h);
		     STAGED_KIND_2D(1), SYNC_END)
}
HP_BODY hp_cudaError_t copy3d_sync(void *f, int ptsz,
				  const hp_cudaMemcpy3DParms *p)
{
	hp_cudaStream_t s = NULL; /* the legacy or per-thread default stream */
	HP_COPY_BODY(f, hp_cudaMemcpy3D_t, hp_cudaError_t, (p),
		     host_3dparms(&c_, p);
		     STAGED_KIND_3D(1), SYNC_END)
}
HP_BODY hp_cudaError_t to_symbol_sync(void *f, const void *sym,
				     const void *src, size_t n, size_t off,
				     hp_cudaMemcpyKind kind)
{
	HP_COPY_BODY(f, hp_cudaMemcpyToSymbol_t, hp_cudaError_t,
		     (sym, src, n, off, kind),
		     host_kind(&c_, kind, NULL, src, n), SYNC_END)
}
HP_BODY hp_cudaError_t from_symbol_sync(void *f, void *dst, const void *sym,
				       size_t n, size_t off,
				       hp_cudaMemcpyKind kind)
{
	HP_COPY_BODY(f, hp_cudaMemcpyFromSymbol_t, hp_cudaError_t,
		     (dst, sym, n, off, kind),
		     host_kind(&c_, kind, dst, NULL, n), SYNC_END)
}

/* ---- synchronous copies: NAME and the per-thread default stream form
 * NAME_ptds ---- */
HP_EXPORT hp_cudaError_t cudaMemcpy(void *dst, const void *src, size_t n,
				    hp_cudaMemcpyKind kind)
{
	return copy_sync(NEXT(cudaMemcpy), 0, dst, src, n, kind);
}

HP_EXPORT hp_cudaError_t cudaMemcpy_ptds(void *dst, const void *src, size_t n,
					 hp_cudaMemcpyKind kind)
{
	return copy_sync(NEXT(cudaMemcpy_ptds), 1, dst, src, n, kind);
}

HP_EXPORT hp_cudaError_t cudaMemcpy2D(void *dst, size_t dp, const void *src,
				      size_t sp, size_t w, size_t h,
				      hp_cudaMemcpyKind kind)
{
	return copy2d_sync(NEXT(cudaMemcpy2D), 0, dst, dp, src, sp, w, h, kind);
}

HP_EXPORT hp_cudaError_t cudaMemcpy2D_ptds(void *dst, size_t dp,
					   const void *src, size_t sp, size_t w,
					   size_t h, hp_cudaMemcpyKind kind)
{
	return copy2d_sync(NEXT(cudaMemcpy2D_ptds), 1, dst, dp, src, sp, w, h,
			   kind);
}

HP_EXPORT hp_cudaError_t cudaMemcpy3D(const hp_cudaMemcpy3DParms *p)
{
	return copy3d_sync(NEXT(cudaMemcpy3D), 0, p);
}

HP_EXPORT hp_cudaError_t cudaMemcpy3D_ptds(const hp_cudaMemcpy3DParms *p)
{
	return copy3d_sync(NEXT(cudaMemcpy3D_ptds), 1, p);
}

HP_EXPORT hp_cudaError_t cudaMemcpyToSymbol(const void *sym, const void *src,
					    size_t n, size_t off,
					    hp_cudaMemcpyKind kind)
{
	return to_symbol_sync(NEXT(cudaMemcpyToSymbol), sym, src, n, off, kind);
}

HP_EXPORT hp_cudaError_t cudaMemcpyToSymbol_ptds(const void *sym,
						 const void *src, size_t n,
						 size_t off,
						 hp_cudaMemcpyKind kind)
{
	return to_symbol_sync(NEXT(cudaMemcpyToSymbol_ptds), sym, src, n, off,
			      kind);
}

HP_EXPORT hp_cudaError_t cudaMemcpyFromSymbol(void *dst, const void *sym,
					      size_t n, size_t off,
					      hp_cudaMemcpyKind kind)
{
	return from_symbol_sync(NEXT(cudaMemcpyFromSymbol), dst, sym, n, off,
				kind);
}

HP_EXPORT hp_cudaError_t cudaMemcpyFromSymbol_ptds(void *dst, const void *sym,
						   size_t n, size_t off,
						   hp_cudaMemcpyKind kind)
{
	return from_symbol_sync(NEXT(cudaMemcpyFromSymbol_ptds), dst, sym, n,
				off, kind);
}

/* This family's part of the table (cudart_lookup.c). */
const struct hp_cudart_name hp_cudart_copy_sync[] = {
#define HP_CUDART_EMIT HP_CUDART_ENTRY
#include "hooks_cudart.def"
#undef HP_CUDART_EMIT
	{0}};
