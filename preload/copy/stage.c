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

#include "../backend/backend.h"
#include "../record.h"
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

/* A copy of several driver calls on s may run: no capture begins on s
 * until stream_leave (capture.c: one call to the program, captured whole
 * or not at all), none is in progress there, and none that prohibits this
 * thread's calls anywhere (the capture gate entered). */
static int stream_enter(hp_cudaStream_t s)
{
	if (!hp_capture_stream_enter(s))
		return 0;
	if (hp_cuda_capturing(s) || !hp_capture_enter()) {
		hp_capture_stream_leave(s);
		return 0;
	}
	return 1;
}

static void stream_leave(hp_cudaStream_t s)
{
	hp_capture_leave();
	hp_capture_stream_leave(s);
}

/* The stream of this thread's staged copy (hp_stage_begin to
 * hp_stage_done: one at a time per thread). */
static __thread hp_cudaStream_t staged_on;

/* Whether this copy (htod: H2D, else D2H) may be staged: its direction's
 * ring, with the capture gate entered and the ring claimed (stage_done
 * lets go of both); NULL if not. */
struct hp_ring *hp_stage_begin(const hp_copy_t *c, const void *h,
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
	if (!stream_enter(s))
		return NULL;
	/* the ring of the stream's context (a device's stream may be used
	 * with another device current): made only through the current one */
	uintptr_t sc = hp_cuda_stream_ctx(s, ctx);
	struct hp_ring *R = hp_ring_get(htod, sc, sc == ctx);
	if (R == NULL)
		stream_leave(s);
	else
		staged_on = s;
	return R;
}

/* staged: counted (else passed through: no slot could be taken) */
void hp_stage_done(struct hp_ring *R, size_t n, int staged)
{
	hp_ring_put(R);
	stream_leave(staged_on);
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
int hp_stage_run_htod(struct hp_ring *R, size_t m, hp_cudaStream_t s,
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

/* The D2H pipeline of m chunks through the slots this copy takes (all
 * that can be taken now, at least one, else *none: the copy passes):
 * issue(i, slot) enqueues chunk i's DMA on s, drain(i, slot) copies the
 * slot out into the program's memory.  Up to one chunk per slot held in
 * flight, each drained in order once its event completed (s's own work):
 * when it returns 0, all the data is in the program's memory. */
int hp_stage_run_dtoh(struct hp_ring *R, size_t m, hp_cudaStream_t s,
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

hp_cudaStream_t hp_program_stream(hp_cudaStream_t s, int ptsz)
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
	    !stream_enter(s))
		return 0;
	int queued;
	int r = per_piece(b.base, b.len, d, h, n, s, htod, &queued);
	if (r == 0 && sync)
		r = hp_cuda_stream_wait(s);
	stream_leave(s);
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
	    !stream_enter(s)) {
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
	stream_leave(s);
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
	s = hp_program_stream(s, ptsz);
	if (split(c, d, (char *)(uintptr_t)h, n, s, 1, sync, res))
		return 2;
	if (prefix(c, d, (char *)(uintptr_t)h, n, s, 1, res))
		return 1;
	struct hp_ring *R = hp_stage_begin(c, h, n, d, s, 1);
	if (R == NULL)
		return 0;
	struct lin j = {.R = R, .h = (char *)(uintptr_t)h, .d = d, .n = n,
			.s = s};
	int none, r = hp_stage_run_htod(R, (n + R->slot - 1) / R->slot, s, lin_in,
			       lin_htod, &j, &none);
	/* the source is staged: an async call returns (the DMA may run);
	 * a synchronous one after the copy, with its error if it failed */
	if (r == 0 && sync && !none)
		r = hp_cuda_stream_wait(s);
	hp_stage_done(R, n, !none);
	*res = r;
	return !none;
}

int hp_stage_dtoh(const hp_copy_t *c, void *h, uintptr_t d, size_t n,
		  hp_cudaStream_t s, int ptsz, int sync, int *res)
{
	s = hp_program_stream(s, ptsz);
	if (split(c, d, h, n, s, 0, sync, res))
		return 2;
	if (prefix(c, d, h, n, s, 0, res))
		return 1;
	struct hp_ring *R = hp_stage_begin(c, h, n, d, s, 0);
	if (R == NULL)
		return 0;
	struct lin j = {.R = R, .h = h, .d = d, .n = n, .s = s};
	int none, r = hp_stage_run_dtoh(R, (n + R->slot - 1) / R->slot, s, lin_dtoh,
			       lin_out, &j, &none);
	hp_stage_done(R, n, !none);
	*res = r;
	return !none;
}
