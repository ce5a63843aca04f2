/* Staged copies: the copy engine's first part (DESIGN.md, "The way data
 * flows" 6).  A copy of HOSTPIN_STAGE_MIN bytes or more whose host side is
 * not registered (a hostpin block pending or not yet worth registering, or
 * memory hostpin does not own: shared and file mappings, the heap) goes
 * through a ring of staging slots that hostpin mapped and registered once
 * through the program's current context (never a context of its own:
 * invariant 3), each chunk's DMA enqueued on the program's own stream, in
 * order, and an event recorded after it, so that a slot is reused only once
 * its event completed.  Semantics are those of pageable memory (CUDA's
 * "API synchronization behavior"): an H2D call returns once the whole
 * source is staged (the DMA may still run), a D2H call once the data is in
 * the program's memory, a synchronous call once the copy completed.
 *
 * The copy threads (HOSTPIN_STAGE_THREADS, the calling thread counted)
 * copy each chunk into or out of its slot together, pipelined against the
 * DMA of the other slots.  There is one ring per direction, each half of
 * HOSTPIN_STAGE_BUFFER, made at the first copy staged that way (the pinned
 * memory of both is what one ring had; ring.c): an H2D and a D2H copy of
 * two program threads are staged at once (the link carries both directions
 * at full rate), and so are two copies the same way on two streams, each
 * through the slots it took: a copy never waits for another stream's work
 * (ring.c).  Driver calls go through the backend contract
 * (backend_cuda.c). */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "backend.h"
#include "record.h"
#include "stage.h"

/* The statistics of staging (not in the ledger slot: its layout is
 * unchanged). */
static _Atomic uint64_t st_copies, st_bytes;

void hp_stage_counts(uint64_t *copies, uint64_t *bytes, uint64_t *ring_bytes)
{
	/* relaxed: statistics order nothing */
	*copies = atomic_load_explicit(&st_copies, memory_order_relaxed);
	*bytes = atomic_load_explicit(&st_bytes, memory_order_relaxed);
	*ring_bytes = hp_ring_bytes();
}

int hp_stage_on(void)
{
	if (!hp_opt[HP_OPT_STAGE] || !hp_opt[HP_OPT_REGISTER_DEVICE])
		return 0;
	if (hp_backend == &hp_backend_cuda)
		return 1;
	const hp_backend_t *c = hp_backend_auto_chosen();
	return hp_backend == &hp_backend_auto &&
	       (c == NULL || c == &hp_backend_cuda);
}

/* Whether the host side h starts in a hostpin block of c that is not
 * registered as a whole (nor the program's own registration): what the
 * driver knows of it is a part that the registration thread registered
 * (register.c), so the copy is staged all the same. */
static int own_block(const hp_copy_t *c, const void *h)
{
	hp_snap_t b;
	for (int i = 0; i < c->n; i++)
		if (!(hp_rflags(c->r[i]) & (HOSTPIN_REGISTERED | HP_F_FOREIGN)) &&
		    hp_registry_lookup(&hp_reg, (uintptr_t)h, &b) == c->r[i])
			return 1;
	return 0;
}

/* Whether this copy (htod: H2D, else D2H) may be staged: its direction's
 * ring, with the capture gate entered and the ring claimed (stage_done
 * lets go of both); NULL if not. */
static struct hp_ring *stage_begin(const hp_copy_t *c, const void *h,
				   size_t n, uintptr_t d, hp_cudaStream_t s,
				   int htod)
{
	if (n < hp_opt[HP_OPT_STAGE_MIN] || h == NULL || hp_in_child ||
	    c->overflow || !hp_stage_on())
		return NULL;
	/* a hostpin block registered now: the direct path */
	for (int i = 0; i < c->n; i++)
		if (hp_rflags(c->r[i]) & HOSTPIN_REGISTERED)
			return NULL;
	uintptr_t ctx;
	if (!hp_cuda_stage_fns() || !(ctx = hp_cuda_ctx_current()) ||
	    (hp_cuda_host_known(h) && !own_block(c, h)))
		return NULL; /* no context here, or memory the driver knows */
	/* staged in chunks: a copy the driver would refuse whole (past the
	 * end of its device allocation) goes to it as it is, nothing
	 * written (d: 0 for a 2D copy) */
	if (d && !hp_cuda_dev_fits(d, n))
		return NULL;
	/* A stream capturing a graph records the copy instead of running it;
	 * any wait now would invalidate a capture elsewhere (invariant 13). */
	if (hp_cuda_capturing(s) || !hp_capture_enter())
		return NULL;
	/* the ring of the stream's context (a device's stream may be used
	 * with another device current): made only through the current one */
	uintptr_t sc = hp_cuda_stream_ctx(s, ctx);
	struct hp_ring *R = hp_ring_get(htod, sc, sc == ctx);
	if (R == NULL)
		hp_capture_leave();
	return R;
}

/* staged: counted (else passed through: no slot could be taken) */
static void stage_done(struct hp_ring *R, size_t n, int staged)
{
	hp_ring_put(R);
	hp_capture_leave();
	if (!staged)
		return;
	atomic_fetch_add_explicit(&st_copies, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&st_bytes, n, memory_order_relaxed);
}

/* The slots one copy holds: taken as it goes (up to all of them), then
 * used in turn; let go when the copy is done. */
struct held {
	int k[HP_RING_SLOTS];
	int n, next;
};

/* A slot for the next chunk: a new one if one can be taken, else the next
 * of those held (its last DMA was this copy's: waited for by the caller);
 * -1 if none. */
static int hold_slot(struct hp_ring *R, struct held *H, hp_cudaStream_t s)
{
	if (H->n < HP_RING_SLOTS) {
		int k = hp_ring_take(R, s, H->n == 0);
		if (k >= 0)
			return H->k[H->n++] = k;
	}
	return H->n ? H->k[H->next++ % H->n] : -1;
}

static void let_go(struct hp_ring *R, struct held *H)
{
	for (int i = 0; i < H->n; i++)
		hp_ring_release(R, H->k[i]);
}

/* A staged H2D copy of m chunks: fill(i, slot) copies chunk i of the
 * program's memory into the slot, issue(i, slot) enqueues its DMA on s;
 * each slot reused once its event completed.  Returns the first error;
 * *none: no slot could be taken (nothing done: the copy passes). */
static int run_htod(struct hp_ring *R, size_t m, hp_cudaStream_t s,
		    void (*fill)(size_t i, char *sl, void *arg),
		    int (*issue)(size_t i, char *sl, void *arg), void *arg,
		    int *none)
{
	struct held H = {.n = 0};
	int r = 0;
	*none = 0;
	for (size_t i = 0; i < m && r == 0; i++) {
		int k = hold_slot(R, &H, s);
		if (k < 0) {
			*none = 1; /* only at the first chunk */
			break;
		}
		if ((r = hp_ring_wait(R, k)) != 0)
			break;
		fill(i, hp_ring_slot(R, k), arg);
		r = issue(i, hp_ring_slot(R, k), arg);
		if (r == 0)
			r = hp_ring_fence(R, k, s);
	}
	let_go(R, &H);
	return r;
}

static hp_cudaStream_t program_stream(hp_cudaStream_t s, int ptsz)
{
	return s == NULL && ptsz ? HP_CU_STREAM_PER_THREAD : s;
}

/* A copy [h, h+n) inside the block [base, base+len) a device backend
 * registered: one DMA per registration it crosses (hp_cells_piece_end), in
 * order on s, up to the first error (returned); *queued: whether any was
 * enqueued. */
static int per_piece(uintptr_t base, size_t len, uintptr_t d, char *h,
		     size_t n, hp_cudaStream_t s, int htod, int *queued)
{
	uintptr_t a = (uintptr_t)h;
	int r = 0;
	*queued = 0;
	/* several calls: what the driver would refuse whole is refused
	 * before any byte moves (it goes to the driver as it is) */
	if (hp_cells_piece_end(base, len, a) < a + n &&
	    !hp_cuda_dev_fits(d, n)) {
		r = htod ? hp_cuda_htod_async(d, h, n, s)
			 : hp_cuda_dtoh_async(h, d, n, s);
		*queued = r == 0;
		return r;
	}
	for (size_t off = 0; off < n && r == 0;) {
		size_t l = hp_cells_piece_end(base, len, a + off) - (a + off);
		if (l > n - off)
			l = n - off;
		r = htod ? hp_cuda_htod_async(d + off, h + off, l, s)
			 : hp_cuda_dtoh_async(h + off, d + off, l, s);
		*queued |= r == 0;
		off += l;
	}
	return r;
}

/* A copy wholly inside one registered hostpin block that crosses the end
 * of one of the block's registrations (a block over HP_REG_PIECE_MAX, or
 * cells of HOSTPIN_REGISTER_CHUNK): one DMA per registration, in order on
 * the program's stream, so that the driver sees each part inside one
 * registration (a range across two is not one registered range to it).
 * 2 if done so (*res: the first error); 0: not such a copy. */
static int split(const hp_copy_t *c, uintptr_t d, char *h, size_t n,
		 hp_cudaStream_t s, int htod, int sync, int *res)
{
	if (h == NULL || hp_in_child || c->overflow || c->n != 1 ||
	    !(hp_rflags(c->r[0]) & HOSTPIN_REGISTERED) || !hp_stage_on())
		return 0;
	hp_snap_t b;
	uintptr_t a = (uintptr_t)h;
	if (hp_registry_lookup(&hp_reg, a, &b) != c->r[0] ||
	    n > b.base + b.len - a ||
	    hp_cells_piece_end(b.base, b.len, a) >= a + n)
		return 0;
	if (!hp_cuda_stage_fns() || !hp_cuda_ctx_current() ||
	    hp_cuda_capturing(s) || !hp_capture_enter())
		return 0;
	int queued;
	int r = per_piece(b.base, b.len, d, h, n, s, htod, &queued);
	if (r == 0 && sync)
		r = hp_cuda_stream_wait(s);
	hp_capture_leave();
	*res = r;
	return 2;
}

/* A copy through a block being registered in the background
 * (register.c), wholly inside the part of it registered so far, whatever
 * its size ("being registered" is a state of the block every copy
 * honours: a small one, not staged, would reach the driver as registered
 * memory all the same): direct, one DMA per registration on the
 * program's stream, then a wait for the stream whatever the form (the
 * block is not REGISTERED, so no fence follows: this keeps the semantics
 * of the pageable memory it still is, as HOSTPIN_COPY=sync does for a
 * registered block, and the pieces are not unregistered under the DMA).
 * 1 if done so (*res: the first error); 0 if not. */
static int prefix(const hp_copy_t *c, uintptr_t d, char *h, size_t n,
		  hp_cudaStream_t s, int htod, int *res)
{
	if (h == NULL || hp_in_child || c->overflow || c->n != 1 ||
	    (hp_rflags(c->r[0]) & HOSTPIN_REGISTERED) || !hp_stage_on())
		return 0;
	uintptr_t a = (uintptr_t)h, base = 0;
	size_t len = 0;
	if (hp_register_prefix(c->r[0], a, n, &base, &len) != 2)
		return 0;
	if (!hp_cuda_stage_fns() || !hp_cuda_ctx_current() ||
	    hp_cuda_capturing(s) || !hp_capture_enter()) {
		hp_register_prefix_leave();
		return 0;
	}
	int queued;
	int r = per_piece(base, len, d, h, n, s, htod, &queued);
	if (queued) { /* even after an error: what was queued may run */
		int w = hp_cuda_stream_wait(s);
		if (r == 0)
			r = w;
	}
	hp_capture_leave();
	hp_register_prefix_leave();
	*res = r;
	return 1;
}

/* A 1D copy's chunks: slot-sized parts of [h, h+n). */
struct lin {
	struct hp_ring *R;
	char *h;
	uintptr_t d;
	size_t n;
	hp_cudaStream_t s;
};

static size_t lin_len(const struct lin *j, size_t i)
{
	size_t off = i * j->R->slot;
	return j->n - off < j->R->slot ? j->n - off : j->R->slot;
}

static void lin_in(size_t i, char *sl, void *arg)
{
	struct lin *j = arg;
	hp_pcopy(sl, j->h + i * j->R->slot, lin_len(j, i));
}

static int lin_htod(size_t i, char *sl, void *arg)
{
	struct lin *j = arg;
	return hp_cuda_htod_async(j->d + i * j->R->slot, sl, lin_len(j, i),
				  j->s);
}

static int lin_dtoh(size_t i, char *sl, void *arg)
{
	struct lin *j = arg;
	return hp_cuda_dtoh_async(sl, j->d + i * j->R->slot, lin_len(j, i),
				  j->s);
}

static void lin_out(size_t i, char *sl, void *arg)
{
	struct lin *j = arg;
	hp_pcopy(j->h + i * j->R->slot, sl, lin_len(j, i));
}

int hp_stage_htod(const hp_copy_t *c, uintptr_t d, const void *h, size_t n,
		  hp_cudaStream_t s, int ptsz, int sync, int *res)
{
	s = program_stream(s, ptsz);
	if (split(c, d, (char *)(uintptr_t)h, n, s, 1, sync, res))
		return 2;
	if (prefix(c, d, (char *)(uintptr_t)h, n, s, 1, res))
		return 1;
	struct hp_ring *R = stage_begin(c, h, n, d, s, 1);
	if (R == NULL)
		return 0;
	struct lin j = {.R = R, .h = (char *)(uintptr_t)h, .d = d, .n = n,
			.s = s};
	int none, r = run_htod(R, (n + R->slot - 1) / R->slot, s, lin_in,
			       lin_htod, &j, &none);
	/* the source is staged: an async call returns (the DMA may run);
	 * a synchronous one after the copy, with its error if it failed */
	if (r == 0 && sync && !none)
		r = hp_cuda_stream_wait(s);
	stage_done(R, n, !none);
	*res = r;
	return !none;
}

/* The D2H pipeline of m chunks through the slots this copy takes (all
 * that can be taken now, at least one, else *none: the copy passes):
 * issue(i, slot) enqueues chunk i's DMA on s, drain(i, slot) copies the
 * slot out into the program's memory.  Up to one chunk per slot held in
 * flight, each drained in order once its event completed (s's own work):
 * when it returns 0, all the data is in the program's memory. */
static int run_dtoh(struct hp_ring *R, size_t m, hp_cudaStream_t s,
		    int (*issue)(size_t i, char *sl, void *arg),
		    void (*drain)(size_t i, char *sl, void *arg), void *arg,
		    int *none)
{
	struct held H = {.n = 0};
	while ((size_t)H.n < m && H.n < HP_RING_SLOTS) {
		int k = hp_ring_take(R, s, H.n == 0);
		if (k < 0)
			break;
		H.k[H.n++] = k;
	}
	*none = H.n == 0;
	int r = 0;
	size_t issued = 0, drained = 0;
	while (!*none && drained < m && r == 0) {
		while (issued < m && issued - drained < (size_t)H.n && r == 0) {
			int k = H.k[issued % (size_t)H.n];
			if ((r = hp_ring_wait(R, k)) != 0)
				break;
			r = issue(issued, hp_ring_slot(R, k), arg);
			if (r == 0)
				r = hp_ring_fence(R, k, s);
			issued++;
		}
		if (r)
			break;
		int k = H.k[drained % (size_t)H.n];
		if ((r = hp_ring_wait(R, k)) != 0)
			break;
		drain(drained, hp_ring_slot(R, k), arg);
		drained++;
	}
	let_go(R, &H);
	return r;
}

int hp_stage_dtoh(const hp_copy_t *c, void *h, uintptr_t d, size_t n,
		  hp_cudaStream_t s, int ptsz, int sync, int *res)
{
	s = program_stream(s, ptsz);
	if (split(c, d, h, n, s, 0, sync, res))
		return 2;
	if (prefix(c, d, h, n, s, 0, res))
		return 1;
	struct hp_ring *R = stage_begin(c, h, n, d, s, 0);
	if (R == NULL)
		return 0;
	struct lin j = {.R = R, .h = h, .d = d, .n = n, .s = s};
	int none, r = run_dtoh(R, (n + R->slot - 1) / R->slot, s, lin_dtoh,
			       lin_out, &j, &none);
	stage_done(R, n, !none);
	*res = r;
	return !none;
}

/* ---- 2D and 3D copies ----
 * A side of a CUDA_MEMCPY2D (or of a 3D copy's slice): host memory the
 * driver does not know (HOST, or UNIFIED pointing at such memory), or
 * memory a DMA from the ring can reach (DEVICE, or UNIFIED memory the
 * driver knows). */
static char *side_host(hp_CUmemorytype m, const void *host, hp_CUdeviceptr dev)
{
	if (m == HP_CU_MEMORYTYPE_HOST)
		return (char *)(uintptr_t)host;
	if (m == HP_CU_MEMORYTYPE_UNIFIED && dev &&
	    !hp_cuda_host_known((const void *)(uintptr_t)dev))
		return (char *)(uintptr_t)dev;
	return NULL;
}
static int side_device(hp_CUmemorytype m, hp_CUdeviceptr dev)
{
	return m == HP_CU_MEMORYTYPE_DEVICE ||
	       (m == HP_CU_MEMORYTYPE_UNIFIED && dev &&
		hp_cuda_host_known((const void *)(uintptr_t)dev));
}

/* A rectangle to stage: depth slices of H rows of w bytes, its rows
 * numbered slice after slice.  p: a 2D descriptor whose device side is the
 * program's, at slice 0 (its Y counts the rows before the first slice);
 * h, pitch: the first host byte, the host rows' pitch; hs: bytes from one
 * host slice to the next; dh: rows from one device slice to the next.
 * Its chunks: as many rows as fit a slot, one 2D DMA each; across slices
 * when the device side's slices follow each other (dh == H: its rows are
 * then evenly pitched), else per slice (cps chunks a slice). */
struct rect {
	struct hp_ring *R;
	const hp_CUDA_MEMCPY2D *p;
	char *h;
	size_t pitch, hs, dh, w, H, depth, per, cps;
	int across;
	hp_cudaStream_t s;
};

/* Chunk i: its first row *g and its rows. */
static size_t rect_chunk(const struct rect *j, size_t i, size_t *g)
{
	size_t y, left;
	if (j->across) {
		y = *g = i * j->per;
		left = j->H * j->depth - y;
	} else {
		y = (i % j->cps) * j->per;
		*g = i / j->cps * j->H + y;
		left = j->H - y;
	}
	return left < j->per ? left : j->per;
}

/* Row g's row on the device side, counted from p's Y. */
static size_t rect_dev_row(const struct rect *j, size_t g)
{
	return g / j->H * j->dh + g % j->H;
}

/* rows rows from row g of the host side into the slot sl (in), or out of
 * it, slice by slice. */
static void rect_host(const struct rect *j, size_t g, size_t rows, char *sl,
		      int in)
{
	while (rows) {
		size_t y = g % j->H, t = j->H - y < rows ? j->H - y : rows;
		char *h = j->h + g / j->H * j->hs + y * j->pitch;
		if (in)
			hp_pcopy_rows(sl, j->w, h, j->pitch, j->w, t);
		else
			hp_pcopy_rows(h, j->pitch, sl, j->w, j->w, t);
		sl += t * j->w, g += t, rows -= t;
	}
}

static void rect_in(size_t i, char *sl, void *arg)
{
	const struct rect *j = arg;
	size_t g, rows = rect_chunk(j, i, &g);
	rect_host(j, g, rows, sl, 1);
}

static int rect_htod(size_t i, char *sl, void *arg)
{
	const struct rect *j = arg;
	size_t g, rows = rect_chunk(j, i, &g);
	hp_CUDA_MEMCPY2D q = *j->p; /* the device side as the program's */
	q.srcXInBytes = 0, q.srcY = 0;
	q.srcMemoryType = HP_CU_MEMORYTYPE_HOST;
	q.srcHost = sl, q.srcDevice = 0, q.srcArray = NULL;
	q.srcPitch = j->w;
	q.dstY = j->p->dstY + rect_dev_row(j, g), q.Height = rows;
	return hp_cuda_2d_async(&q, j->s);
}

static int rect_dtoh(size_t i, char *sl, void *arg)
{
	const struct rect *j = arg;
	size_t g, rows = rect_chunk(j, i, &g);
	hp_CUDA_MEMCPY2D q = *j->p; /* the device side as the program's */
	q.dstXInBytes = 0, q.dstY = 0;
	q.dstMemoryType = HP_CU_MEMORYTYPE_HOST;
	q.dstHost = sl;
	q.dstDevice = 0, q.dstArray = NULL, q.dstPitch = j->w;
	q.srcY = j->p->srcY + rect_dev_row(j, g);
	q.Height = rows;
	return hp_cuda_2d_async(&q, j->s);
}

static void rect_out(size_t i, char *sl, void *arg)
{
	const struct rect *j = arg;
	size_t g, rows = rect_chunk(j, i, &g);
	rect_host(j, g, rows, sl, 0);
}

/* a*b+c, or SIZE_MAX if that overflows */
static size_t mul_add(size_t a, size_t b, size_t c)
{
	size_t r;
	if (__builtin_mul_overflow(a, b, &r) || __builtin_add_overflow(r, c, &r))
		return SIZE_MAX;
	return r;
}

/* A 2D copy p, or depth slices of it (a 3D copy: sh, dh the source's and
 * the destination's slice heights in rows, p's Y counting the rows before
 * the first slice), between pitched host memory and device memory: as
 * hp_stage_2d. */
static int stage_rect(const hp_copy_t *c, const hp_CUDA_MEMCPY2D *p,
		      size_t depth, size_t sh, size_t dh, hp_cudaStream_t s,
		      int ptsz, int sync, int *res)
{
	size_t w = p->WidthInBytes, H = p->Height, n = mul_add(w, H, 0);
	n = mul_add(n, depth, 0);
	if (w == 0 || H == 0 || depth == 0 || n == SIZE_MAX || hp_in_child ||
	    !hp_stage_on() || !hp_cuda_stage_fns() || !hp_cuda_2d_fn())
		return 0;
	if (n < hp_opt[HP_OPT_STAGE_MIN])
		return 0;
	char *sho = side_host(p->srcMemoryType, p->srcHost, p->srcDevice);
	char *dho = side_host(p->dstMemoryType, p->dstHost, p->dstDevice);
	int htod;
	if (sho && !dho && side_device(p->dstMemoryType, p->dstDevice))
		htod = 1;
	else if (dho && !sho && side_device(p->srcMemoryType, p->srcDevice))
		htod = 0;
	else
		return 0; /* an array, host to host, device to device */
	size_t pitch = htod ? p->srcPitch : p->dstPitch;
	size_t x = htod ? p->srcXInBytes : p->dstXInBytes;
	size_t y = htod ? p->srcY : p->dstY;
	size_t hh = htod ? sh : dh, dvh = htod ? dh : sh;
	size_t dy = htod ? p->dstY : p->srcY;
	if (pitch < w)
		return 0; /* the driver's to refuse */
	if (depth > 1 && (hh < H || dvh < H))
		return 0; /* slices overlap: the driver's to refuse */
	/* the last host byte and the last device row within reach */
	size_t hl = mul_add(depth - 1, hh, y + H - 1);
	if (y > SIZE_MAX - H || hl == SIZE_MAX ||
	    mul_add(hl, pitch, x + w) == SIZE_MAX ||
	    mul_add(depth - 1, dvh, dy + H) == SIZE_MAX)
		return 0;
	char *h = (htod ? sho : dho) + y * pitch + x; /* the first host byte */
	s = program_stream(s, ptsz);
	struct hp_ring *R = stage_begin(c, h, n, 0, s, htod);
	if (R == NULL)
		return 0;
	if (w > R->slot) { /* a row wider than a slot: as it is */
		stage_done(R, n, 0);
		return 0;
	}
	struct rect j = {.R = R, .p = p, .h = h, .pitch = pitch,
			 .hs = hh * pitch, .dh = dvh, .w = w, .H = H,
			 .depth = depth, .per = R->slot / w,
			 .across = depth == 1 || dvh == H, .s = s};
	j.cps = (H + j.per - 1) / j.per;
	size_t m = j.across ? (H * depth + j.per - 1) / j.per : j.cps * depth;
	/* as hp_stage_htod / hp_stage_dtoh, in chunks of rows */
	int none, r = htod ? run_htod(R, m, s, rect_in, rect_htod, &j, &none)
			   : run_dtoh(R, m, s, rect_dtoh, rect_out, &j, &none);
	if (r == 0 && sync && htod && !none)
		r = hp_cuda_stream_wait(s);
	stage_done(R, n, !none);
	*res = r;
	return !none;
}

int hp_stage_2d(const hp_copy_t *c, const hp_CUDA_MEMCPY2D *p,
		hp_cudaStream_t s, int ptsz, int sync, int *res)
{
	return p ? stage_rect(c, p, 1, 0, 0, s, ptsz, sync, res) : 0;
}

int hp_stage_3d(const hp_copy_t *c, const hp_CUDA_MEMCPY3D *p,
		hp_cudaStream_t s, int ptsz, int sync, int *res)
{
	if (p == NULL || p->srcLOD || p->dstLOD || p->reserved0 ||
	    p->reserved1 || p->Depth == 0)
		return 0;
	/* a slice height of 0 (allowed with a depth of 1): no Z with it */
	if ((p->srcZ && p->srcHeight == 0) || (p->dstZ && p->dstHeight == 0))
		return 0;
	size_t sy = mul_add(p->srcZ, p->srcHeight, p->srcY);
	size_t dy = mul_add(p->dstZ, p->dstHeight, p->dstY);
	if (sy == SIZE_MAX || dy == SIZE_MAX)
		return 0;
	/* slice 0 as a 2D copy: Y counts the rows of the slices before it */
	hp_CUDA_MEMCPY2D q = {
	    .srcXInBytes = p->srcXInBytes, .srcY = sy,
	    .srcMemoryType = p->srcMemoryType, .srcHost = p->srcHost,
	    .srcDevice = p->srcDevice, .srcArray = p->srcArray,
	    .srcPitch = p->srcPitch,
	    .dstXInBytes = p->dstXInBytes, .dstY = dy,
	    .dstMemoryType = p->dstMemoryType, .dstHost = p->dstHost,
	    .dstDevice = p->dstDevice, .dstArray = p->dstArray,
	    .dstPitch = p->dstPitch,
	    .WidthInBytes = p->WidthInBytes, .Height = p->Height};
	return stage_rect(c, &q, p->Depth, p->srcHeight, p->dstHeight, s, ptsz,
			  sync, res);
}
