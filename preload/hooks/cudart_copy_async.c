/* CUDA runtime hooks: the asynchronous copies (1D, 2D, 3D, 3D peer, to and
 * from symbols, batched, with attributes), NAME and the per-thread-stream
 * form NAME_ptsz.  How the runtime hooks are put together: cudart.h. */
#define HP_CUDART_copy_async(name) HP_CUDART_EMIT(name)
#include "cudart.h"
#include "batch.h"

#define HP_CUDART_EMIT HP_CUDART_SLOTS
#include "hooks_cudart.def"
#undef HP_CUDART_EMIT

HP_BODY hp_cudaError_t copy_async(void *f, int ptsz, void *dst, const void *src,
				 size_t n, hp_cudaMemcpyKind kind,
				 hp_cudaStream_t s)
{
	HP_COPY_BODY(f, hp_cudaMemcpyAsync_t, hp_cudaError_t,
		     (dst, src, n, kind, s), host_kind(&c_, kind, dst, src, n);
		     STAGED_KIND(0), ASYNC_END)
}
/* CUDA 13.2: either side may be host memory (unified addressing). */
HP_BODY hp_cudaError_t copy_attr_async(void *f, int ptsz, void *dst,
				      const void *src, size_t n,
				      hp_cudaMemcpyAttributes *at,
				      hp_cudaStream_t s)
{
	HP_COPY_BODY(f, hp_cudaMemcpyWithAttributesAsync_t, hp_cudaError_t,
		     (dst, src, n, at, s),
		     host_kind(&c_, HP_cudaMemcpyDefault, dst, src, n);
		     STAGED_BY(stage_unified(&c_, dst, src, n, s, ptsz)),
		     ASYNC_END)
}
/* One op: a batch of one (batch.c), as the driver's form is. */
static int rt_batch_call(const struct hp_batch *b, size_t i, size_t n,
			 size_t *fail);
HP_BODY hp_cudaError_t copy3d_attr_async(void *f, int ptsz,
					hp_cudaMemcpy3DBatchOp *op,
					unsigned long long fl,
					hp_cudaStream_t s)
{
	hp_cudaMemcpy3DWithAttributesAsync_t fn =
	    (hp_cudaMemcpy3DWithAttributesAsync_t)f;
	if (fn == NULL)
		return HP_CUDA_ERROR_NOT_FOUND;
	if (op == NULL)
		return fn(op, fl, s);
	struct hp_batch b = {rt_batch_call, f, 2, ptsz, RT_HOW(0), NULL, NULL,
			     NULL, NULL, NULL, 0, op, fl, s};
	return hp_batch_run(&b, 1, NULL);
}
HP_BODY hp_cudaError_t copy2d_async(void *f, int ptsz, void *dst, size_t dp,
				   const void *src, size_t sp, size_t w,
				   size_t h, hp_cudaMemcpyKind kind,
				   hp_cudaStream_t s)
{
	HP_COPY_BODY(f, hp_cudaMemcpy2DAsync_t, hp_cudaError_t,
		     (dst, dp, src, sp, w, h, kind, s),
		     host_kind_2d(&c_, kind, dst, dp, src, sp, w, h);
		     STAGED_KIND_2D(0), ASYNC_END)
}
HP_BODY hp_cudaError_t copy3d_async(void *f, int ptsz,
				   const hp_cudaMemcpy3DParms *p,
				   hp_cudaStream_t s)
{
	HP_COPY_BODY(f, hp_cudaMemcpy3DAsync_t, hp_cudaError_t, (p, s),
		     host_3dparms(&c_, p);
		     STAGED_KIND_3D(0), ASYNC_END)
}
HP_BODY hp_cudaError_t copy3dpeer_async(void *f, int ptsz,
				       const hp_cudaMemcpy3DPeerParms *p,
				       hp_cudaStream_t s)
{
	HP_COPY_BODY(f, hp_cudaMemcpy3DPeerAsync_t, hp_cudaError_t, (p, s),
		     host_3dpeer(&c_, p), ASYNC_END)
}
HP_BODY hp_cudaError_t to_symbol_async(void *f, int ptsz, const void *sym,
				      const void *src, size_t n, size_t off,
				      hp_cudaMemcpyKind kind, hp_cudaStream_t s)
{
	HP_COPY_BODY(f, hp_cudaMemcpyToSymbolAsync_t, hp_cudaError_t,
		     (sym, src, n, off, kind, s),
		     host_kind(&c_, kind, NULL, src, n), ASYNC_END)
}
HP_BODY hp_cudaError_t from_symbol_async(void *f, int ptsz, void *dst,
					const void *sym, size_t n, size_t off,
					hp_cudaMemcpyKind kind,
					hp_cudaStream_t s)
{
	HP_COPY_BODY(f, hp_cudaMemcpyFromSymbolAsync_t, hp_cudaError_t,
		     (dst, sym, n, off, kind, s),
		     host_kind(&c_, kind, dst, NULL, n), ASYNC_END)
}

/* The batch copies: one wrapper takes the longer (12.8) list and forwards
 * all of it (an extra argument is harmless in this ABI); the runtime's
 * version says where the stream is.  A batch touching a block of
 * hostpin's runs entry by entry, each the single copy it is (batch.c, as
 * the driver's batches: the runtime reaches the driver from inside this
 * hook, where the driver's hooks pass straight through), each entry the
 * engine does not make going to the runtime as a batch of one. */
typedef hp_cudaError_t (*batch_t)(void *const *, const void *const *,
				  const size_t *, size_t,
				  hp_cudaMemcpyAttributes *, size_t *, size_t,
				  void *, hp_cudaStream_t);
typedef hp_cudaError_t (*batch3d_t)(size_t, hp_cudaMemcpy3DBatchOp *, void *,
				    unsigned long long, hp_cudaStream_t);
/* Entries [i, i+n) to the runtime as one batch (v2: CUDA 13's forms,
 * without failIdx; 2: cudaMemcpy3DWithAttributesAsync's one op). */
static int rt_batch_call(const struct hp_batch *b, size_t i, size_t n,
			 size_t *fail)
{
	if (b->v2 == 2) /* cudaMemcpy3DWithAttributesAsync: one op */
		return ((hp_cudaMemcpy3DWithAttributesAsync_t)b->f)(
		    b->ops + i, b->fl, b->s);
	if (b->ops) {
		batch3d_t fn = (batch3d_t)b->f;
		return b->v2 ? fn(n, b->ops + i, (void *)(uintptr_t)b->fl,
				  (unsigned long long)(uintptr_t)b->s, NULL)
			     : fn(n, b->ops + i, fail, b->fl, b->s);
	}
	void *at;
	size_t *ai, na, zero;
	hp_batch_attrs(b, i, n, &at, &ai, &na, &zero);
	batch_t fn = (batch_t)b->f;
	void *const *d = (void *const *)b->d + i;
	const void *const *sr = (const void *const *)b->sr + i;
	return b->v2 ? fn(d, sr, b->sz + i, n, at, ai, na, (void *)b->s, NULL)
		     : fn(d, sr, b->sz + i, n, at, ai, na, fail, b->s);
}
HP_BODY hp_cudaError_t batch_async(void *f, const void *ra, int ptsz,
				  void *const *d, const void *const *sr,
				  const size_t *sz, size_t n,
				  hp_cudaMemcpyAttributes *at, size_t *ai,
				  size_t na, void *a8, hp_cudaStream_t a9)
{
	batch_t fn = (batch_t)f;
	if (fn == NULL)
		return HP_CUDA_ERROR_NOT_FOUND;
	if (!hp_hook_enter())
		return fn(d, sr, sz, n, at, ai, na, a8, a9);
	hp_hook_leave();
	int v2 = rt_version(ra) >= 13000;
	struct hp_batch b = {rt_batch_call, f, v2, ptsz, RT_HOW(0),
			     (hp_CUdeviceptr *)d, (hp_CUdeviceptr *)sr,
			     (size_t *)sz, at, ai, na, NULL, 0,
			     v2 ? (hp_cudaStream_t)a8 : a9};
	return hp_batch_run(&b, n, v2 ? NULL : (size_t *)a8);
}
HP_BODY hp_cudaError_t batch3d_async(void *f, const void *ra, int ptsz,
				    size_t n, hp_cudaMemcpy3DBatchOp *ops,
				    void *a3, unsigned long long a4,
				    hp_cudaStream_t a5)
{
	batch3d_t fn = (batch3d_t)f;
	if (fn == NULL)
		return HP_CUDA_ERROR_NOT_FOUND;
	if (ops == NULL || !hp_hook_enter())
		return fn(n, ops, a3, a4, a5);
	hp_hook_leave();
	int v2 = rt_version(ra) >= 13000;
	struct hp_batch b = {rt_batch_call, f, v2, ptsz, RT_HOW(0), NULL,
			     NULL, NULL, NULL, NULL, 0, ops,
			     v2 ? (unsigned long long)(uintptr_t)a3 : a4,
			     v2 ? (hp_cudaStream_t)(uintptr_t)a4 : a5};
	return hp_batch_run(&b, n, v2 ? NULL : (size_t *)a3);
}

/* ---- copies: NAME and the per-thread-stream form NAME_ptsz ---- */
HP_EXPORT hp_cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n,
					 hp_cudaMemcpyKind kind,
					 hp_cudaStream_t s)
{
	return copy_async(NEXT(cudaMemcpyAsync), 0, dst, src, n, kind, s);
}

HP_EXPORT hp_cudaError_t cudaMemcpyAsync_ptsz(void *dst, const void *src,
					      size_t n, hp_cudaMemcpyKind kind,
					      hp_cudaStream_t s)
{
	return copy_async(NEXT(cudaMemcpyAsync_ptsz), 1, dst, src, n, kind, s);
}

HP_EXPORT hp_cudaError_t cudaMemcpy2DAsync(void *dst, size_t dp,
					   const void *src, size_t sp, size_t w,
					   size_t h, hp_cudaMemcpyKind kind,
					   hp_cudaStream_t s)
{
	return copy2d_async(NEXT(cudaMemcpy2DAsync), 0, dst, dp, src, sp, w, h,
			    kind, s);
}

HP_EXPORT hp_cudaError_t cudaMemcpy2DAsync_ptsz(void *dst, size_t dp,
						const void *src, size_t sp,
						size_t w, size_t h,
						hp_cudaMemcpyKind kind,
						hp_cudaStream_t s)
{
	return copy2d_async(NEXT(cudaMemcpy2DAsync_ptsz), 1, dst, dp, src, sp,
			    w, h, kind, s);
}

HP_EXPORT hp_cudaError_t cudaMemcpy3DAsync(const hp_cudaMemcpy3DParms *p,
					   hp_cudaStream_t s)
{
	return copy3d_async(NEXT(cudaMemcpy3DAsync), 0, p, s);
}

HP_EXPORT hp_cudaError_t cudaMemcpy3DAsync_ptsz(const hp_cudaMemcpy3DParms *p,
						hp_cudaStream_t s)
{
	return copy3d_async(NEXT(cudaMemcpy3DAsync_ptsz), 1, p, s);
}

HP_EXPORT hp_cudaError_t cudaMemcpy3DPeerAsync(
    const hp_cudaMemcpy3DPeerParms *p, hp_cudaStream_t s)
{
	return copy3dpeer_async(NEXT(cudaMemcpy3DPeerAsync), 0, p, s);
}

HP_EXPORT hp_cudaError_t cudaMemcpy3DPeerAsync_ptsz(
    const hp_cudaMemcpy3DPeerParms *p, hp_cudaStream_t s)
{
	return copy3dpeer_async(NEXT(cudaMemcpy3DPeerAsync_ptsz), 1, p, s);
}

HP_EXPORT hp_cudaError_t cudaMemcpyToSymbolAsync(const void *sym,
						 const void *src, size_t n,
						 size_t off,
						 hp_cudaMemcpyKind kind,
						 hp_cudaStream_t s)
{
	return to_symbol_async(NEXT(cudaMemcpyToSymbolAsync), 0, sym, src, n,
			       off, kind, s);
}

HP_EXPORT hp_cudaError_t cudaMemcpyToSymbolAsync_ptsz(
    const void *sym, const void *src, size_t n, size_t off,
    hp_cudaMemcpyKind kind, hp_cudaStream_t s)
{
	return to_symbol_async(NEXT(cudaMemcpyToSymbolAsync_ptsz), 1, sym, src,
			       n, off, kind, s);
}

HP_EXPORT hp_cudaError_t cudaMemcpyFromSymbolAsync(void *dst, const void *sym,
						   size_t n, size_t off,
						   hp_cudaMemcpyKind kind,
						   hp_cudaStream_t s)
{
	return from_symbol_async(NEXT(cudaMemcpyFromSymbolAsync), 0, dst, sym,
				 n, off, kind, s);
}

HP_EXPORT hp_cudaError_t cudaMemcpyFromSymbolAsync_ptsz(
    void *dst, const void *sym, size_t n, size_t off, hp_cudaMemcpyKind kind,
    hp_cudaStream_t s)
{
	return from_symbol_async(NEXT(cudaMemcpyFromSymbolAsync_ptsz), 1, dst,
				 sym, n, off, kind, s);
}

HP_EXPORT hp_cudaError_t cudaMemcpyBatchAsync(void *const *d,
					      const void *const *sr,
					      const size_t *sz, size_t n,
					      hp_cudaMemcpyAttributes *at,
					      size_t *ai, size_t na, void *a8,
					      hp_cudaStream_t a9)
{
	return batch_async(NEXT(cudaMemcpyBatchAsync),
			   __builtin_return_address(0), 0, d, sr, sz, n, at, ai,
			   na, a8, a9);
}

HP_EXPORT hp_cudaError_t cudaMemcpyBatchAsync_ptsz(void *const *d,
						   const void *const *sr,
						   const size_t *sz, size_t n,
						   hp_cudaMemcpyAttributes *at,
						   size_t *ai, size_t na,
						   void *a8, hp_cudaStream_t a9)
{
	return batch_async(NEXT(cudaMemcpyBatchAsync_ptsz),
			   __builtin_return_address(0), 1, d, sr, sz, n, at, ai,
			   na, a8, a9);
}

HP_EXPORT hp_cudaError_t cudaMemcpy3DBatchAsync(size_t n,
						hp_cudaMemcpy3DBatchOp *ops,
						void *a3, unsigned long long a4,
						hp_cudaStream_t a5)
{
	return batch3d_async(NEXT(cudaMemcpy3DBatchAsync),
			     __builtin_return_address(0), 0, n, ops, a3, a4,
			     a5);
}

HP_EXPORT hp_cudaError_t cudaMemcpy3DBatchAsync_ptsz(
    size_t n, hp_cudaMemcpy3DBatchOp *ops, void *a3, unsigned long long a4,
    hp_cudaStream_t a5)
{
	return batch3d_async(NEXT(cudaMemcpy3DBatchAsync_ptsz),
			     __builtin_return_address(0), 1, n, ops, a3, a4,
			     a5);
}

HP_EXPORT hp_cudaError_t cudaMemcpyWithAttributesAsync(
    void *dst, const void *src, size_t n, hp_cudaMemcpyAttributes *at,
    hp_cudaStream_t s)
{
	return copy_attr_async(NEXT(cudaMemcpyWithAttributesAsync), 0, dst, src,
			       n, at, s);
}

HP_EXPORT hp_cudaError_t cudaMemcpyWithAttributesAsync_ptsz(
    void *dst, const void *src, size_t n, hp_cudaMemcpyAttributes *at,
    hp_cudaStream_t s)
{
	return copy_attr_async(NEXT(cudaMemcpyWithAttributesAsync_ptsz), 1, dst,
			       src, n, at, s);
}

HP_EXPORT hp_cudaError_t cudaMemcpy3DWithAttributesAsync(
    hp_cudaMemcpy3DBatchOp *op, unsigned long long fl, hp_cudaStream_t s)
{
	return copy3d_attr_async(NEXT(cudaMemcpy3DWithAttributesAsync), 0, op,
				 fl, s);
}

HP_EXPORT hp_cudaError_t cudaMemcpy3DWithAttributesAsync_ptsz(
    hp_cudaMemcpy3DBatchOp *op, unsigned long long fl, hp_cudaStream_t s)
{
	return copy3d_attr_async(NEXT(cudaMemcpy3DWithAttributesAsync_ptsz), 1,
				 op, fl, s);
}

/* This family's part of the table (cudart_lookup.c). */
const struct hp_cudart_name hp_cudart_copy_async[] = {
#define HP_CUDART_EMIT HP_CUDART_ENTRY
#include "hooks_cudart.def"
#undef HP_CUDART_EMIT
	{0}};
