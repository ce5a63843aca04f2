/* Batched copies entry by entry (batch.h), the driver's and the runtime's
 * alike: a batch touching a block of hostpin's runs each entry as the
 * single copy it is (cuMemcpyAsync's path: planned by copy/plan.c, split
 * at registration pieces, staged), and the entries the driver gets as they
 * are end together, once for the batch (one wait under HOSTPIN_COPY=sync:
 * the program's call returns after its last entry, the entries run in no
 * order among themselves). */
#include "../backend/backend.h"
#include "../copy/stage.h"
#include "batch.h"

/* a*b, or SIZE_MAX if that overflows */
static size_t mul_sat(size_t a, size_t b)
{
	size_t r;
	return __builtin_mul_overflow(a, b, &r) ? SIZE_MAX : r;
}

/* The host extent of a pointer side of a 3D op from its first byte, es
 * bytes an element: rows of w elements rl apart, layers lh rows apart (0:
 * packed); 0 for a side that is not a pointer. */
static size_t op_extent(const hp_CUmemcpy3DOperand *o, size_t es, size_t w,
			size_t h, size_t d)
{
	if (o->type != HP_CU_MEMCPY_OPERAND_TYPE_POINTER || !w || !h || !d)
		return 0;
	size_t rl = mul_sat(o->op.ptr.rowLength ? o->op.ptr.rowLength : w, es);
	size_t lh = o->op.ptr.layerHeight ? o->op.ptr.layerHeight : h;
	size_t rows = mul_sat(d - 1, lh), n = mul_sat(w, es);
	if (rows > SIZE_MAX - (h - 1))
		return SIZE_MAX;
	rows = mul_sat(rows + (h - 1), rl);
	return rows > SIZE_MAX - n ? SIZE_MAX : rows + n;
}

/* Bytes an element of op o: 1 between two pointers; the CUDA array's
 * when a side is one (its format's size times its channels, asked of
 * the driver: cuda.h's rule for 3D batch ops); 0 if the driver cannot
 * say (hp_cuda_array_geom logs it once). */
static size_t op_elem(const hp_CUDA_MEMCPY3D_BATCH_OP *o)
{
	int sa = o->src.type == HP_CU_MEMCPY_OPERAND_TYPE_ARRAY;
	if (!sa && o->dst.type != HP_CU_MEMCPY_OPERAND_TYPE_ARRAY)
		return 1;
	struct hp_cuda_array g;
	if (!hp_cuda_stage_fns() ||
	    hp_cuda_array_geom(sa ? o->src.op.array.array
				  : o->dst.op.array.array, &g) != 0)
		return 0;
	return g.es;
}

/* The host bytes of op o's side x from its first: every byte from its
 * first row to its last (its rows, as its element size makes them);
 * where the element size is not known (an array the driver does not
 * describe), w * h * d, as before. */
static size_t side_bytes(const hp_CUDA_MEMCPY3D_BATCH_OP *o,
			 const hp_CUmemcpy3DOperand *x, size_t es)
{
	size_t w = o->extent.width, h = o->extent.height, d = o->extent.depth;
	return es ? op_extent(x, es, w, h, d) : mul_sat(mul_sat(w, h), d);
}

void hp_copy_host_ops(hp_copy_t *c, const hp_CUDA_MEMCPY3D_BATCH_OP *ops,
		      size_t n)
{
	for (size_t i = 0; ops && i < n; i++) {
		size_t es = op_elem(&ops[i]);
		if (ops[i].src.type == HP_CU_MEMCPY_OPERAND_TYPE_POINTER)
			hp_copy_host(c, (const void *)(uintptr_t)
					    ops[i].src.op.ptr.ptr,
				     side_bytes(&ops[i], &ops[i].src, es));
		if (ops[i].dst.type == HP_CU_MEMCPY_OPERAND_TYPE_POINTER)
			hp_copy_host(c, (const void *)(uintptr_t)
					    ops[i].dst.op.ptr.ptr,
				     side_bytes(&ops[i], &ops[i].dst, es));
	}
}

/* CUmemcpyAttributes / cudaMemcpyAttributes as cuda.h and driver_types.h
 * lay them out (cuda_api.h keeps the type opaque): srcAccessOrder,
 * srcLocHint, dstLocHint (type, id), flags; only its size is used, to find
 * attrs[k]. */
struct attrs_layout {
	int srcAccessOrder;
	struct { int type, id; } srcLocHint, dstLocHint;
	unsigned flags;
};

void hp_batch_attrs(const struct hp_batch *b, size_t i, size_t n, void **at,
		    size_t **ai, size_t *na, size_t *zero)
{
	*at = b->at, *ai = b->ai, *na = b->na;
	if (n != 1 || !b->at || !b->ai || !b->na)
		return;
	/* attrs[k] applies from entry attrsIdxs[k] on */
	size_t k = 0;
	for (size_t j = 1; i && j < b->na; j++)
		if (b->ai[j] <= i)
			k = j;
	*at = (char *)b->at + k * sizeof(struct attrs_layout);
	*zero = 0;
	*ai = zero, *na = 1;
}

/* Entry i as a 1D copy between unified addresses (*d, *sr, *n): a 1D
 * batch's, or a 3D op's between two packed pointers. */
static int entry_1d(const struct hp_batch *b, size_t i, uintptr_t *d,
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

/* Host memory the driver does not know, or a block of hostpin's (as
 * plan.c sees a unified address). */
static int host_mem(uintptr_t p, unsigned type)
{
	return type == 0 || hp_foreign_hides((const void *)p);
}

/* A 3D op between two pointers, one of them pitched (rowLength or
 * layerHeight), one side host memory and the other device memory: the 3D
 * copy it is, planned as cuMemcpy3DAsync's (staged when it crosses the end
 * of a registration of a block of hostpin's: never a range half
 * registered to the driver); HP_COPY_PASSED when it is not such a copy. */
static int stage_op(hp_copy_t *c, const hp_CUDA_MEMCPY3D_BATCH_OP *o,
		    const struct hp_batch *b)
{
	if (o->src.type != HP_CU_MEMCPY_OPERAND_TYPE_POINTER ||
	    o->dst.type != HP_CU_MEMCPY_OPERAND_TYPE_POINTER ||
	    (c->n == 0 && !c->overflow) || !hp_stage_on() ||
	    !hp_cuda_stage_fns())
		return HP_COPY_PASSED;
	uintptr_t sp = o->src.op.ptr.ptr, dp = o->dst.op.ptr.ptr;
	unsigned st = hp_cuda_mem_type((const void *)sp),
		 dt = hp_cuda_mem_type((const void *)dp);
	int htod = dt == HP_CU_MEMORYTYPE_DEVICE && host_mem(sp, st);
	if (!htod && !(st == HP_CU_MEMORYTYPE_DEVICE && host_mem(dp, dt)))
		return HP_COPY_PASSED;
	size_t w = o->extent.width, h = o->extent.height;
	hp_CUDA_MEMCPY3D q = {0};
	q.WidthInBytes = w, q.Height = h, q.Depth = o->extent.depth;
	q.srcPitch = o->src.op.ptr.rowLength ? o->src.op.ptr.rowLength : w;
	q.srcHeight = o->src.op.ptr.layerHeight ? o->src.op.ptr.layerHeight : h;
	q.dstPitch = o->dst.op.ptr.rowLength ? o->dst.op.ptr.rowLength : w;
	q.dstHeight = o->dst.op.ptr.layerHeight ? o->dst.op.ptr.layerHeight : h;
	q.srcMemoryType = htod ? HP_CU_MEMORYTYPE_HOST : HP_CU_MEMORYTYPE_DEVICE;
	q.dstMemoryType = htod ? HP_CU_MEMORYTYPE_DEVICE : HP_CU_MEMORYTYPE_HOST;
	if (htod)
		q.srcHost = (const void *)sp, q.dstDevice = dp;
	else
		q.srcDevice = sp, q.dstHost = (void *)dp;
	return hp_stage_3d(c, &q, b->s, b->ptsz, b->how);
}

/* A 3D op between a CUDA array and host memory (or a block of
 * hostpin's): the 3D copy it is, its host side's rows (width, pitch in
 * bytes, layer height) made from the array's element size, planned as
 * cuMemcpy3DAsync's (plan_rect.c: staged, or its rows cut at the
 * registrations: never a range half registered to the driver);
 * HP_COPY_PASSED when it is not such a copy, or its element size is not
 * known (the op then goes to the driver as it is). */
static int stage_array_op(hp_copy_t *c, const hp_CUDA_MEMCPY3D_BATCH_OP *o,
			  const struct hp_batch *b)
{
	int sa = o->src.type == HP_CU_MEMCPY_OPERAND_TYPE_ARRAY;
	const hp_CUmemcpy3DOperand *a = sa ? &o->src : &o->dst,
				   *x = sa ? &o->dst : &o->src;
	if (a->type != HP_CU_MEMCPY_OPERAND_TYPE_ARRAY ||
	    x->type != HP_CU_MEMCPY_OPERAND_TYPE_POINTER ||
	    (c->n == 0 && !c->overflow) || !hp_stage_on() ||
	    !hp_cuda_stage_fns())
		return HP_COPY_PASSED;
	uintptr_t hp = x->op.ptr.ptr;
	size_t es = op_elem(o), w = o->extent.width, h = o->extent.height;
	if (es == 0 || !host_mem(hp, hp_cuda_mem_type((const void *)hp)))
		return HP_COPY_PASSED;
	size_t wb = mul_sat(w, es),
	       pitch = mul_sat(x->op.ptr.rowLength ? x->op.ptr.rowLength : w, es),
	       ax = mul_sat(a->op.array.offset.x, es);
	if (wb == SIZE_MAX || pitch == SIZE_MAX || ax == SIZE_MAX)
		return HP_COPY_PASSED;
	size_t lh = x->op.ptr.layerHeight ? x->op.ptr.layerHeight : h;
	hp_CUDA_MEMCPY3D q = {0};
	q.WidthInBytes = wb, q.Height = h, q.Depth = o->extent.depth;
	if (sa) {
		q.srcMemoryType = HP_CU_MEMORYTYPE_ARRAY;
		q.srcArray = a->op.array.array, q.srcXInBytes = ax;
		q.srcY = a->op.array.offset.y, q.srcZ = a->op.array.offset.z;
		q.dstMemoryType = HP_CU_MEMORYTYPE_HOST;
		q.dstHost = (void *)hp, q.dstPitch = pitch, q.dstHeight = lh;
	} else {
		q.dstMemoryType = HP_CU_MEMORYTYPE_ARRAY;
		q.dstArray = a->op.array.array, q.dstXInBytes = ax;
		q.dstY = a->op.array.offset.y, q.dstZ = a->op.array.offset.z;
		q.srcMemoryType = HP_CU_MEMORYTYPE_HOST;
		q.srcHost = (const void *)hp, q.srcPitch = pitch;
		q.srcHeight = lh;
	}
	return hp_stage_3d(c, &q, b->s, b->ptsz, b->how);
}

/* One entry as the single copy it is (issue 39 item 6): the engine's
 * result when it made it (ended by its plan); else the API's own call of
 * the entry alone, its blocks joined to the batch's copy all, which ends
 * once for the batch (*joined: one joined after a success). */
static int batch_entry(const struct hp_batch *b, size_t i, hp_copy_t *all,
		       int *joined)
{
	size_t fail = 0; /* the 12.8 forms' failIdx: never NULL to the API */
	if (!hp_hook_enter())
		return b->call(b, i, 1, &fail);
	hp_copy_t c_;
	hp_copy_init(&c_);
	/* the entries passed before are counted in flight (all): this one
	 * waits for no step aside or registration while they are (which
	 * would wait for them: 10 s, then 712 to the program; issue 39,
	 * cases/aside-batch-562614) */
	c_.nowait = all->held > 0;
	uintptr_t d, sr;
	size_t n;
	int r, one = entry_1d(b, i, &d, &sr, &n);
	if (one) {
		hp_copy_host(&c_, (const void *)sr, n);
		hp_copy_host(&c_, (const void *)d, n);
	} else {
		hp_copy_host_ops(&c_, b->ops + i, 1);
	}
	if (c_.blocked) {
		/* so they end here, as the batch's end would end them */
		hp_copy_end(all, b->s, b->ptsz, 1);
		hp_copy_init(all);
		if (!hp_hook_enter()) {
			hp_copy_join(NULL, &c_, 0);
			return b->call(b, i, 1, &fail);
		}
		hp_copy_hold(&c_);
	}
	if (one) {
		r = hp_stage_unified(&c_, d, sr, n, b->s, b->ptsz, b->how);
	} else {
		r = stage_op(&c_, b->ops + i, b);
		if (r == HP_COPY_PASSED)
			r = stage_array_op(&c_, b->ops + i, b);
	}
	if (r != HP_COPY_PASSED)
		return r;
	int e = b->call(b, i, 1, &fail);
	hp_copy_join(all, &c_, e == 0);
	hp_hook_leave();
	*joined |= e == 0;
	return e;
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
 * hp_copy_host_ops and the whole batch's sides see them). */
static int entry_mine(const struct hp_batch *b, size_t i)
{
	if (!b->ops)
		return hostpin_side(b->d[i], b->sz[i]) ||
		       hostpin_side(b->sr[i], b->sz[i]);
	const hp_CUDA_MEMCPY3D_BATCH_OP *o = &b->ops[i];
	size_t es = op_elem(o);
	return (o->src.type == HP_CU_MEMCPY_OPERAND_TYPE_POINTER &&
		hostpin_side(o->src.op.ptr.ptr, side_bytes(o, &o->src, es))) ||
	       (o->dst.type == HP_CU_MEMCPY_OPERAND_TYPE_POINTER &&
		hostpin_side(o->dst.op.ptr.ptr, side_bytes(o, &o->dst, es)));
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

/* Whether op o's array side (one, the other a pointer) leaves its array:
 * offset plus extent past its width, height or depth in elements (the
 * driver refuses it). */
static int array_past_end(const hp_CUDA_MEMCPY3D_BATCH_OP *o)
{
	int sa = o->src.type == HP_CU_MEMCPY_OPERAND_TYPE_ARRAY;
	const hp_CUmemcpy3DOperand *a = sa ? &o->src : &o->dst,
				   *x = sa ? &o->dst : &o->src;
	struct hp_cuda_array g;
	if (a->type != HP_CU_MEMCPY_OPERAND_TYPE_ARRAY ||
	    x->type != HP_CU_MEMCPY_OPERAND_TYPE_POINTER ||
	    hp_cuda_array_geom(a->op.array.array, &g) != 0)
		return 0;
	size_t gh = g.h ? g.h : 1, gd = g.d ? g.d : 1;
	return a->op.array.offset.x > g.w ||
	       o->extent.width > g.w - a->op.array.offset.x ||
	       a->op.array.offset.y > gh ||
	       o->extent.height > gh - a->op.array.offset.y ||
	       a->op.array.offset.z > gd ||
	       o->extent.depth > gd - a->op.array.offset.z;
}

/* Whether the driver would refuse entry i: its device side runs past the
 * end of its allocation, or its array side past its array's. */
static int entry_refused(const struct hp_batch *b, size_t i)
{
	uintptr_t d, sr;
	size_t n;
	if (!hp_cuda_stage_fns())
		return 0;
	if (b->ops && array_past_end(&b->ops[i]))
		return 1;
	if (!entry_1d(b, i, &d, &sr, &n) || n == 0)
		return 0;
	return past_end(d, n) || past_end(sr, n);
}

/* A batch touching no block of hostpin's goes to the API as it is; one
 * that does, entry by entry, each the single copy it is, up to the first
 * error (failIdx: its index).  The entries passed to the API end together
 * (hp_copy_join, then one hp_copy_end: a wait or events through
 * registered memory), after the last one or the refused one: no entry
 * queued before a refused one is left reading or writing the program's
 * memory after the error returns (cases/batch-past-end-37103). */
int hp_batch_run(const struct hp_batch *b, size_t n, size_t *fail)
{
	if (!hp_hook_enter())
		return b->call(b, 0, n, fail);
	hp_cudaStream_t s = b->s;
	int ptsz = b->ptsz;
	/* no entry arrays: the API's to refuse, whole */
	int mine = 0, valid = b->ops || (b->d && b->sr && b->sz);
	for (size_t i = 0; i < n && valid && !mine; i++)
		mine = entry_mine(b, i);
	/* one the driver would refuse (an entry past the end of its device
	 * allocation): to it as it is, refused before any entry moves, as
	 * a copy is (plan.c); run entry by entry, the entries before the
	 * bad one would be done (cases/batch-refused-entry-37103; an op
	 * whose array side leaves its array too).  Nor
	 * does one of no side of hostpin's change. */
	int refused = 0;
	for (size_t i = 0; i < n && mine && !refused; i++)
		refused = entry_refused(b, i);
	hp_copy_t all;
	hp_copy_init(&all);
	if (!mine || refused) {
		/* as a whole, as before (the batch's sides counted) */
		if (b->ops)
			hp_copy_host_ops(&all, b->ops, n);
		else
			for (size_t i = 0; valid && i < n; i++) {
				hp_copy_host(&all, (const void *)b->sr[i],
					     b->sz[i]);
				hp_copy_host(&all, (const void *)b->d[i],
					     b->sz[i]);
			}
		int e = b->call(b, 0, n, fail);
		hp_copy_end(&all, s, ptsz, e == 0);
		return e;
	}
	hp_hook_leave();
	int e = 0, joined = 0;
	for (size_t i = 0; i < n && e == 0; i++) {
		if (joined)
			hp_test_pause("batch_next"); /* tests: all counted */
		e = batch_entry(b, i, &all, &joined);
		if (e != 0 && fail)
			*fail = i;
	}
	/* the batch's end: once for every entry passed to the API; after a
	 * refused entry, the entries queued before it are waited for first,
	 * so that none writes the program's memory after the error returns
	 * (issue 39 item 3's fence: tests/fuzz/cases/latewrite-batch-96571528:
	 * an entry passed through, the next one staged and refused) */
	if (hp_hook_enter()) {
		hp_cudaStream_t w = s == NULL && ptsz ? HP_CU_STREAM_PER_THREAD
						      : s;
		if (e != 0 && joined && !hp_cuda_capturing(w))
			hp_stage_wait_stream(w);
		hp_copy_end(&all, s, ptsz, joined);
	}
	else
		hp_copy_join(NULL, &all, 0);
	return e;
}
