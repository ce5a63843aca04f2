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

/* A batch: its entries (a 1D batch: d, sr, sz, its attributes at, ai, na;
 * a 3D one: ops, fl), the driver's entry point f (v2: 1, the form without
 * failIdx; 2, cuMemcpy3DWithAttributesAsync's single op), the stream. */
struct batch {
	void *f;
	int v2, ptsz;
	hp_CUdeviceptr *d, *sr;
	size_t *sz;
	hp_CUmemcpyAttributes *at;
	size_t *ai, na;
	hp_CUDA_MEMCPY3D_BATCH_OP *ops;
	unsigned long long fl;
	hp_cudaStream_t s;
};

/* CUmemcpyAttributes as cuda.h lays it out (cuda_api.h keeps the type
 * opaque): srcAccessOrder, srcLocHint, dstLocHint (CUmemLocation: type,
 * id), flags; only its size is used, to find attrs[k]. */
struct attrs_layout {
	int srcAccessOrder;
	struct { int type, id; } srcLocHint, dstLocHint;
	unsigned flags;
};

/* Entries [i, i+n) of b to the driver as one batch (n == 1: the entry's
 * own attributes, attrs[j] applying from entry attrsIdxs[j] on). */
static hp_CUresult batch_call(const struct batch *b, size_t i, size_t n,
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
	size_t k = 0, zero = 0;
	hp_CUmemcpyAttributes *at = b->at;
	size_t *ai = b->ai, na = b->na;
	if (n == 1 && at && ai && na) {
		for (size_t j = 1; i && j < b->na; j++)
			if (b->ai[j] <= i)
				k = j;
		at = (hp_CUmemcpyAttributes *)((char *)b->at +
					       k * sizeof(struct attrs_layout));
		ai = &zero, na = 1;
	}
	return b->v2 ? ((hp_cuMemcpyBatchAsync_v2_t)b->f)(
			   b->d + i, b->sr + i, b->sz + i, n, at, ai, na, b->s)
		     : ((hp_cuMemcpyBatchAsync_t)b->f)(b->d + i, b->sr + i,
						       b->sz + i, n, at, ai,
						       na, fail, b->s);
}

/* Entry i as a 1D copy between unified addresses (*d, *sr, *n): a 1D
 * batch's, or a 3D op's between two packed pointers. */
static int entry_1d(const struct batch *b, size_t i, uintptr_t *d,
		    uintptr_t *sr, size_t *n)
{
	if (!b->ops) {
		*d = b->d[i], *sr = b->sr[i], *n = b->sz[i];
		return 1;
	}
	const hp_CUDA_MEMCPY3D_BATCH_OP *o = &b->ops[i];
	if (o->src.type != HP_CU_MEMCPY_OPERAND_TYPE_POINTER ||
	    o->dst.type != HP_CU_MEMCPY_OPERAND_TYPE_POINTER ||
	    o->src.op.ptr.rowLength || o->src.op.ptr.layerHeight ||
	    o->dst.op.ptr.rowLength || o->dst.op.ptr.layerHeight)
		return 0;
	*d = o->dst.op.ptr.ptr, *sr = o->src.op.ptr.ptr;
	*n = o->extent.width * o->extent.height * o->extent.depth;
	return 1;
}

/* One entry as the single copy it is (cuMemcpyAsync's path: planned by
 * copy/plan.c, split at registration pieces, staged, held and ended like
 * any copy; issue 39 item 6). */
static hp_CUresult batch_entry(const struct batch *b, size_t i)
{
	hp_cudaStream_t s = b->s;
	int ptsz = b->ptsz;
	size_t fail = 0; /* the 12.8 forms' failIdx: never NULL to the driver */
	if (!hp_hook_enter())
		return batch_call(b, i, 1, &fail);
	hp_copy_t c_;
	hp_copy_init(&c_);
	uintptr_t d, sr;
	size_t n;
	if (entry_1d(b, i, &d, &sr, &n)) {
		hp_copy_host(&c_, (const void *)sr, n);
		hp_copy_host(&c_, (const void *)d, n);
		STAGED(hp_stage_unified(&c_, d, sr, n, s, ptsz, 0))
	} else {
		hp_copy_host_ops(&c_, b->ops + i, 1);
	}
	hp_CUresult e_ = batch_call(b, i, 1, &fail);
	ASYNC_END;
	return e_;
}

static int any_rec(hp_rec_t *r, const hp_snap_t *sn, void *arg)
{
	(void)r, (void)sn, (void)arg;
	return 1;
}

/* Whether [p, p+n) overlaps a block of hostpin's (nothing counted). */
static int hostpin_side(uintptr_t p, size_t n)
{
	return p && hp_registry_each_overlap(&hp_reg, p, n ? n : 1, any_rec,
					     NULL);
}

/* Whether entry i has a side in a block of hostpin's (as
 * hp_copy_host_ops and host_batch see its sides). */
static int entry_mine(const struct batch *b, size_t i)
{
	if (!b->ops)
		return hostpin_side(b->d[i], b->sz[i]) ||
		       hostpin_side(b->sr[i], b->sz[i]);
	const hp_CUDA_MEMCPY3D_BATCH_OP *o = &b->ops[i];
	size_t m = o->extent.width * o->extent.height * o->extent.depth;
	return (o->src.type == HP_CU_MEMCPY_OPERAND_TYPE_POINTER &&
		hostpin_side(o->src.op.ptr.ptr, m)) ||
	       (o->dst.type == HP_CU_MEMCPY_OPERAND_TYPE_POINTER &&
		hostpin_side(o->dst.op.ptr.ptr, m));
}

/* Whether [p, p+n) is device memory past the end of its allocation (or
 * starts just past one's end: the driver refuses it too).  Only
 * p itself is asked about hostpin's blocks: the part past the allocation's
 * end may be any memory, a block of hostpin's mapped just after it too
 * (cases/batch-refused-into-block-5018). */
static int past_end(uintptr_t p, size_t n)
{
	if (hostpin_side(p, 1))
		return 0;
	if (hp_cuda_mem_type((const void *)p) == HP_CU_MEMORYTYPE_DEVICE)
		return !hp_cuda_dev_fits(p, n);
	/* p itself the byte just past an allocation's last: past it too
	 * (cases/batch-entry-at-end-h2d-7025) */
	return p > 0 &&
	       hp_cuda_mem_type((const void *)(p - 1)) ==
		   HP_CU_MEMORYTYPE_DEVICE &&
	       !hp_cuda_dev_fits(p - 1, 2);
}

/* Whether the driver would refuse entry i: its device side runs past the
 * end of its allocation. */
static int entry_refused(const struct batch *b, size_t i)
{
	uintptr_t d, sr;
	size_t n;
	if (!entry_1d(b, i, &d, &sr, &n) || n == 0 || !hp_cuda_stage_fns())
		return 0;
	return past_end(d, n) || past_end(sr, n);
}

/* A batch (count n) touching no block of hostpin's goes to the driver as
 * it is; one that does, entry by entry, each the single copy it is, up
 * to the first error (failIdx: its index).  Each entry ends as its own
 * copy (a wait or an event through registered memory): no entry queued
 * before a refused one is left reading or writing the program's memory
 * after the error returns (cases/batch-past-end-37103). */
static hp_CUresult batch_run(const struct batch *b, size_t n, size_t *fail)
{
	if (!hp_hook_enter())
		return batch_call(b, 0, n, fail);
	/* no entry arrays: the driver's to refuse, whole */
	int mine = 0, valid = b->ops || (b->d && b->sr && b->sz);
	for (size_t i = 0; i < n && valid && !mine; i++)
		mine = entry_mine(b, i);
	/* one the driver would refuse (an entry past the end of its device
	 * allocation): to it as it is, refused before any entry moves, as
	 * a copy is (plan.c); run entry by entry, the entries before the
	 * bad one would be done (cases/batch-refused-entry-37103).  Nor
	 * does one of no side of hostpin's change. */
	int refused = 0;
	for (size_t i = 0; i < n && mine && !refused; i++)
		refused = entry_refused(b, i);
	if (!mine || refused) {
		/* as a whole, as before (the batch's sides counted) */
		hp_cudaStream_t s = b->s;
		int ptsz = b->ptsz;
		hp_copy_t c_;
		hp_copy_init(&c_);
		if (b->ops)
			hp_copy_host_ops(&c_, b->ops, n);
		else
			host_batch(&c_, b->d, b->sr, b->sz, n);
		hp_CUresult e_ = batch_call(b, 0, n, fail);
		ASYNC_END;
		return e_;
	}
	hp_hook_leave();
	for (size_t i = 0; i < n; i++) {
		hp_CUresult e = batch_entry(b, i);
		if (e != HP_CUDA_SUCCESS) {
			if (fail)
				*fail = i;
			return e;
		}
	}
	return HP_CUDA_SUCCESS;
}

HP_BODY hp_CUresult batch_async(void *f, int ptsz, hp_CUdeviceptr *d,
			       hp_CUdeviceptr *sr, size_t *sz, size_t n,
			       hp_CUmemcpyAttributes *at, size_t *ai,
			       size_t na, size_t *fail, hp_cudaStream_t s)
{
	if (f == NULL)
		return HP_CUDA_ERROR_NOT_FOUND;
	struct batch b = {f, 0, ptsz, d, sr, sz, at, ai, na, NULL, 0, s};
	return batch_run(&b, n, fail);
}
HP_BODY hp_CUresult batch_async_v2(void *f, int ptsz, hp_CUdeviceptr *d,
				  hp_CUdeviceptr *sr, size_t *sz, size_t n,
				  hp_CUmemcpyAttributes *at, size_t *ai,
				  size_t na, hp_cudaStream_t s)
{
	if (f == NULL)
		return HP_CUDA_ERROR_NOT_FOUND;
	struct batch b = {f, 1, ptsz, d, sr, sz, at, ai, na, NULL, 0, s};
	return batch_run(&b, n, NULL);
}
HP_BODY hp_CUresult batch3d_async(void *f, int ptsz, size_t n,
				 hp_CUDA_MEMCPY3D_BATCH_OP *ops, size_t *fail,
				 unsigned long long fl, hp_cudaStream_t s)
{
	if (f == NULL)
		return HP_CUDA_ERROR_NOT_FOUND;
	struct batch b = {f, 0, ptsz, NULL, NULL, NULL, NULL, NULL, 0, ops,
			  fl, s};
	return ops ? batch_run(&b, n, fail) : batch_call(&b, 0, n, fail);
}
HP_BODY hp_CUresult batch3d_async_v2(void *f, int ptsz, size_t n,
				    hp_CUDA_MEMCPY3D_BATCH_OP *ops,
				    unsigned long long fl, hp_cudaStream_t s)
{
	if (f == NULL)
		return HP_CUDA_ERROR_NOT_FOUND;
	struct batch b = {f, 1, ptsz, NULL, NULL, NULL, NULL, NULL, 0, ops,
			  fl, s};
	return ops ? batch_run(&b, n, NULL) : batch_call(&b, 0, n, NULL);
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
	if (f == NULL)
		return HP_CUDA_ERROR_NOT_FOUND;
	/* a 3D batch of one op, without its failIdx */
	struct batch b = {f, 2, ptsz, NULL, NULL, NULL, NULL, NULL, 0, op,
			  fl, s};
	return op ? batch_run(&b, 1, NULL) : batch_call(&b, 0, 1, NULL);
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
