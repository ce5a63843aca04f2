/* Staged copies: the ring pipelines (the copy plan's HP_PLAN_STAGED,
 * plan.c).  A copy the plan stages goes through a ring of staging slots
 * that hostpin mapped and registered once through the program's current
 * context (never a context of its own: invariant 3; ring.c), each chunk's
 * DMA enqueued on the program's own stream, in order, and an event
 * recorded after it, so that a slot is reused only once its event
 * completed.  Semantics are those of pageable memory (CUDA's "API
 * synchronization behavior"): an H2D call returns once the whole source
 * is staged (the DMA may still run), a D2H call once the data is in the
 * program's memory, a synchronous call once the copy completed.
 *
 * The copy threads (HOSTPIN_STAGE_THREADS, the calling thread counted;
 * pool.c) copy each chunk into or out of its slot together, pipelined
 * against the DMA of the other slots.  There is one ring per direction
 * and context, each half of HOSTPIN_STAGE_BUFFER (ring.c): an H2D and a
 * D2H copy of two program threads are staged at once (the link carries
 * both directions at full rate), and so are two copies the same way on
 * two streams, each through the slots it took: a copy never waits for
 * another stream's work (ring.c).  This file: the two chunk loops and the
 * 1D copy's chunks; stage_rect.c: the 2D and 3D copies' chunks. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../backend/backend.h"
#include "../record.h"
#include "prof.h"
#include "stage.h"

/* The slots one copy holds: taken as it goes (up to all of them), then
 * used in turn; let go when the copy is done. */
struct held {
	int k[HP_RING_SLOTS];
	int n, next;
};

/* ---- the capture gate, one driver call at a time (issue 39 item 2) ----
 * A staged copy holds no gate for its length: each call a capture may
 * prohibit (a slot's event asked for, a ring grown) enters the
 * gate alone, so a capture's begin elsewhere waits for one call at most.
 * A slot's wait polls its event inside the gate and sleeps outside it,
 * whether or not the process captured before: a begin cannot cut short a
 * wait blocked in the driver, and the DMA waited for may be one that only
 * the capturing thread lets run, after its capture (the engine tester's
 * cases/capture-first-held-d2h-96559553).  So a begin never waits for a
 * DMA. */
static int take(struct hp_ring *R, hp_cudaStream_t id, int held)
{
	if (!hp_capture_enter())
		return -1;
	int k = hp_ring_take(R, id, held);
	hp_capture_leave();
	return k;
}

/* Slot k's last DMA done: 0, the driver's error, or HP_STAGE_REST (a
 * capture prohibits the wait now). */
static int slot_wait(struct hp_ring *R, int k)
{
	if (!R->used[k])
		return 0;
	for (long ns = 1000;;) {
		if (!hp_capture_enter())
			return HP_STAGE_REST;
		int r = hp_cuda_event_query(R->ev[k]);
		hp_capture_leave();
		if (r == 0) {
			R->used[k] = 0;
			return 0;
		}
		if (r != 600 /* CUDA_ERROR_NOT_READY */)
			return r;
		if (hp_pool_help())
			continue; /* a queued copy's part done meanwhile */
		struct timespec t = {0, ns};
		nanosleep(&t, NULL);
		if (ns < 64000)
			ns *= 2;
	}
}

int hp_stage_wait_stream(hp_cudaStream_t s)
{
	/* The wait outside the gate (a host function on s), so that a
	 * capture's begin elsewhere, the process's first too, never waits
	 * for this stream's work; then the stream's error, asked where a
	 * capture allows it (issue 39 item 2) */
	if (hp_cuda_wait_stream_quiet(s) == 0) {
		if (!hp_capture_enter())
			return 0;
		int r = hp_cuda_stream_wait(s);
		hp_capture_leave();
		return r;
	}
	if (!hp_capture_enter()) {
		HP_LOG_ONCE(HP_LOG_INFO, "a copy waited for its stream during "
			    "a CUDA graph capture elsewhere (its synchronous "
			    "form, or DMA that must not outlive the call)");
		return hp_cuda_stream_wait(s);
	}
	int r = hp_cuda_stream_wait(s);
	hp_capture_leave();
	return r;
}

/* A slot for the next chunk: a new one if one can be taken, else the next
 * of those held (its last DMA was this copy's: waited for by the caller);
 * -1 if none. */
static int hold_slot(struct hp_ring *R, struct held *H, hp_cudaStream_t id)
{
	if (H->n < HP_RING_SLOTS) {
		int k = take(R, id, H->n);
		if (k >= 0)
			return H->k[H->n++] = k;
	}
	if (H->n == 0)
		return -1;
	int j = H->next % H->n;
	/* more than its share since another copy claimed the ring: the slot
	 * due next (its DMA the oldest) let go to it, the next one used */
	if (H->n > 2 && hp_ring_over(R, H->n)) {
		hp_ring_release(R, H->k[j]);
		for (int q = j; q + 1 < H->n; q++)
			H->k[q] = H->k[q + 1];
		j %= --H->n;
	}
	H->next = j + 1;
	return H->k[j];
}

static void let_go(struct hp_ring *R, struct held *H)
{
	hp_spread_leave();
	for (int i = 0; i < H->n; i++)
		hp_ring_release(R, H->k[i]);
}

/* Chunk i's copy into or out of slot k (fill, drain), once the slot's
 * last DMA is done: posted to the copy threads (defer: how, pool.c), the
 * mark they reach when done in *mk.  0, or slot_wait's error or
 * HP_STAGE_REST (nothing posted). */
static int step(struct hp_ring *R, int k, size_t i, int defer,
		void (*copy)(size_t i, char *sl, void *arg), void *arg,
		unsigned *mk)
{
	uint64_t t0 = HP_PROF_NOW();
	int r = slot_wait(R, k);
	if (r != 0)
		return r;
	hp_prof_add(HP_PF_WAIT, t0);
	t0 = HP_PROF_NOW();
	hp_spread();
	hp_pool_defer(defer);
	copy(i, hp_ring_slot(R, k), arg);
	hp_pool_defer(0);
	*mk = hp_pool_mark();
	hp_prof_add(HP_PF_FILL, t0);
	return 0;
}

/* Chunk i of a staged H2D, filled into slot k (its copies posted up to
 * mark): wait for them, enqueue its DMA, record the slot's event. */
static int enq(const struct hp_plan *P, int k, unsigned mark, size_t i,
	       int (*issue)(size_t i, char *sl, void *arg), void *arg)
{
	hp_pool_wait(mark);
	uint64_t t0 = HP_PROF_NOW();
	int r = issue(i, hp_ring_slot(P->R, k), arg);
	hp_prof_add(HP_PF_ISSUE, t0);
	t0 = HP_PROF_NOW();
	if (r == 0)
		r = hp_ring_fence(P->R, k, P->s, (hp_cudaStream_t)P->sid);
	hp_prof_add(HP_PF_FENCE, t0);
	return r;
}

/* A staged H2D copy of m chunks: fill(i, slot) copies chunk i of the
 * program's memory into the slot, issue(i, slot) enqueues its DMA on the
 * plan's stream; each slot reused once its event completed.  Chunk i's
 * fill is posted to the copy threads (pool.c) before chunk i-1's DMA is
 * enqueued, so they go on from one chunk to the next without waiting for
 * this thread (it takes their parts too while it waits, for them or for
 * a slot's DMA).  A fill done by the time it was posted (copied inline:
 * small, or a copy thread per copy staging) has its DMA enqueued at once,
 * so that the slot it takes next was enqueued a whole chunk before.
 * Returns the first error, or HP_STAGE_REST with *done the chunks
 * enqueued. */
int hp_stage_run_htod(const struct hp_plan *P, size_t m,
		    void (*fill)(size_t i, char *sl, void *arg),
		    int (*issue)(size_t i, char *sl, void *arg), void *arg,
		    size_t *done)
{
	struct hp_ring *R = P->R;
	hp_cudaStream_t id = (hp_cudaStream_t)P->sid;
	struct held H = {.n = 0};
	int r = 0, pk = -1; /* pk: chunk i-1's slot, filled, not enqueued */
	unsigned pm = 0;
	size_t i = 0;
	for (; i < m; i++) {
		uint64_t t0 = HP_PROF_NOW();
		int k = hold_slot(R, &H, id);
		if (k < 0) {
			r = HP_STAGE_REST;
			break;
		}
		hp_prof_add(HP_PF_TAKE, t0);
		if (k == pk) { /* one slot held: chunk i-1's DMA first */
			pk = -1;
			if ((r = enq(P, k, pm, i - 1, issue, arg)) != 0) {
				i--;
				break;
			}
		}
		unsigned mk;
		if ((r = step(R, k, i, 1, fill, arg, &mk)) != 0)
			break;
		if (pk >= 0 && (r = enq(P, pk, pm, i - 1, issue, arg)) != 0) {
			hp_pool_wait(mk); /* chunk i's copies out of its slot */
			pk = -1;
			i--;
			break;
		}
		pk = k, pm = mk;
		if (hp_pool_done(mk)) { /* copied already (inline): its DMA now */
			pk = -1;
			if ((r = enq(P, k, mk, i, issue, arg)) != 0)
				break;
		}
	}
	if (pk >= 0) { /* chunk i-1, the last filled */
		int e = enq(P, pk, pm, i - 1, issue, arg);
		if (e != 0) {
			r = r == 0 || r == HP_STAGE_REST ? e : r;
			i--;
		}
	}
	*done = i;
	let_go(R, &H);
	return r;
}

/* The D2H pipeline of m chunks through the slots this copy takes (all
 * that can be taken now, at least one, else HP_STAGE_REST with nothing
 * done): issue(i, slot) enqueues chunk i's DMA on the plan's stream,
 * drain(i, slot) copies the slot out into the program's memory.  Up to one
 * chunk per slot held in flight, each drained in order once its event
 * completed (the stream's own work).  As an H2D's fill, chunk i's drain is
 * posted to the copy threads (pool.c, plain stores: the program reads its
 * memory next) before chunk i-1's is waited for, so they go on from one
 * chunk to the next without waiting for this thread; a slot gets its next
 * DMA only once its drain is done.  When it returns 0, all the data is in
 * the program's memory; HP_STAGE_REST or an error: *done chunks are (every
 * drain posted is waited for first: none outlives the call). */
int hp_stage_run_dtoh(const struct hp_plan *P, size_t m,
		    int (*issue)(size_t i, char *sl, void *arg),
		    void (*drain)(size_t i, char *sl, void *arg), void *arg,
		    size_t *done)
{
	struct hp_ring *R = P->R;
	hp_cudaStream_t id = (hp_cudaStream_t)P->sid;
	struct held H = {.n = 0};
	uint64_t t0 = HP_PROF_NOW();
	while ((size_t)H.n < m && H.n < HP_RING_SLOTS) {
		int k = take(R, id, H.n);
		if (k < 0)
			break;
		H.k[H.n++] = k;
	}
	hp_prof_add(HP_PF_TAKE, t0);
	int r = H.n == 0 ? HP_STAGE_REST : 0, pend = 0;
	size_t n = (size_t)H.n, issued = 0, drained = 0, i = 0;
	unsigned pm = 0; /* pend: chunk i-1's drain posted up to mark pm */
	for (; r == 0 && i < m; i++) {
		if (pend && issued <= i && issued - drained >= n) {
			/* one slot held: chunk i-1's drain first */
			hp_pool_wait(pm);
			pend = 0, drained = i;
		}
		/* DMAs into the slots drained */
		while (issued < m && issued - drained < n) {
			int k = H.k[issued % n];
			if ((r = slot_wait(R, k)) != 0)
				break;
			t0 = HP_PROF_NOW();
			r = issue(issued, hp_ring_slot(R, k), arg);
			hp_prof_add(HP_PF_ISSUE, t0);
			if (r == 0)
				r = hp_ring_fence(R, k, P->s, id);
			if (r != 0)
				break;
			issued++;
		}
		if (r != 0)
			break;
		unsigned mk;
		if ((r = step(R, H.k[i % n], i, 2, drain, arg, &mk)) != 0)
			break;
		if (pend) { /* chunk i-1's drain: its slot free again */
			hp_pool_wait(pm);
			drained = i;
		}
		pend = 1, pm = mk;
	}
	if (pend) { /* chunk i-1, the last posted */
		hp_pool_wait(pm);
		drained = i;
	}
	*done = drained;
	let_go(R, &H);
	return r;
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
	hp_pcopy_in(sl, j->h + i * j->R->slot, lin_len(j, i));
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

/* A 1D copy is staged in rounds of ROUND_SLOTS slots and ROUND_MIN bytes
 * or more (H2D; twice as many D2H, whose pipeline drains at each round's
 * end): before each round but the first, the rate of the rounds so far
 * decides (speed.c) whether the rest is staged or goes to the driver's
 * pageable path (a busy CPU: never slower than pageable), as it does when
 * no slot can be taken then (every slot another stream's, the ring grown
 * to its most).  HOSTPIN_STAGE_LINK=0: one round. */
#define ROUND_SLOTS 8
#define ROUND_MIN ((size_t)64 << 20)

/* The rest of a copy, [off, n), to the driver as it is (pageable), cut
 * at the registrations of a block the plan names (pieces.c). */
static int lin_pass(const struct hp_plan *P, uintptr_t d, char *h, size_t n,
		    size_t off)
{
	return hp_pieces_cut(P, d + off, h + off, n - off);
}

int hp_stage_lin(struct hp_plan *P, uintptr_t d, char *h, size_t n)
{
	struct hp_ring *R = P->R;
	size_t per = R->slot * ROUND_SLOTS, off = 0;
	if (per < ROUND_MIN)
		per = (ROUND_MIN + R->slot - 1) / R->slot * R->slot;
	per *= P->htod ? 1 : 2;
	if (hp_opt[HP_OPT_STAGE_LINK] == 0)
		per = n;
	int r = 0, passed = 0;
	while (off < n) {
		size_t len = n - off < per ? n - off : per;
		/* a D2H into a destination not resident (fresh): its pages
		 * are faulted in as the drains write them, which the
		 * driver's pageable path does far slower (issue 43's H100
		 * run: 1.2 GB/s fresh against 13 warm, staged 3.2 with one
		 * copy thread): staged whatever the gate says (speed.c),
		 * and its rate not weighed against pageable's into a warm
		 * one (that closed the gate for a second after each fresh
		 * D2H) */
		int warm = P->htod || hp_speed_resident(h + off, len);
		if (off > 0 && !hp_pool_worth_at(P->htod, warm ? NULL : h + off,
						  len)) {
			hp_plan_rest(P);
			r = lin_pass(P, d, h, n, off);
			passed = 1;
			break;
		}
		struct lin j = {.R = R, .h = h + off, .d = d + off, .n = len,
				.s = P->s};
		size_t m = len / R->slot + (len % R->slot != 0), done = 0;
		uint64_t t0 = hp_now_ns();
		hp_pool_round(P->htod, 1);
		r = P->htod ? hp_stage_run_htod(P, m, lin_in, lin_htod, &j, &done)
			    : hp_stage_run_dtoh(P, m, lin_dtoh, lin_out, &j, &done);
		hp_pool_round(P->htod, -1);
		if (r == HP_STAGE_REST) {
			/* the rest as the program's own call, in order on its
			 * stream after what was staged; nothing done: passed
			 * through, unless the driver must not get it as it is:
			 * then cut at the registrations (plan.c: whole_no;
			 * must: hp_plan_rest, the registering block's reader;
			 * chunk_dma's chunks_rest) */
			size_t o = off + done * R->slot;
			if (!hp_plan_rest(P) && !P->whole_no && o == 0)
				return HP_COPY_PASSED;
			P->cut = o == 0;
			r = lin_pass(P, d, h, n, o);
			passed = 1;
			break;
		}
		if (r != 0)
			break;
		if (warm)
			hp_pool_seen(P->htod, len, hp_now_ns() - t0);
		off += len;
	}
	/* the source is staged: an async call returns (the DMA may run); a
	 * synchronous one after the copy, and a chunk or rest refused after
	 * the DMAs already queued: the plan's end waits (plan.c); a rest
	 * passed to the driver as it is: P->passed, which the plan's end
	 * waits for too once the block's registration ended or is under way */
	P->passed = passed;
	return r;
}
