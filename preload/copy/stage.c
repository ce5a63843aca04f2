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

#include "../backend/backend.h"
#include "../record.h"
#include "stage.h"

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

/* A 1D copy is staged in rounds of ROUND_SLOTS slots and ROUND_MIN bytes
 * or more (H2D; twice as many D2H, whose pipeline drains at each round's
 * end): before each round but the first, the rate of the rounds so far
 * decides (speed.c) whether the rest is staged or goes to the driver's
 * pageable path (a busy CPU: never slower than pageable), as it does when
 * no slot can be taken then (every slot another stream's, the ring grown
 * to its most).  HOSTPIN_STAGE_LINK=0: one round. */
#define ROUND_SLOTS 8
#define ROUND_MIN ((size_t)64 << 20)

/* The rest of a copy, [off, n), to the driver as it is (pageable). */
static int lin_pass(const struct hp_plan *P, uintptr_t d, char *h, size_t n,
		    size_t off)
{
	return P->htod ? hp_cuda_htod_async(d + off, h + off, n - off, P->s)
		       : hp_cuda_dtoh_async(h + off, d + off, n - off, P->s);
}

int hp_stage_lin(const struct hp_plan *P, uintptr_t d, char *h, size_t n,
		 int sync, int *none)
{
	struct hp_ring *R = P->R;
	size_t per = R->slot * ROUND_SLOTS, off = 0;
	if (per < ROUND_MIN)
		per = (ROUND_MIN + R->slot - 1) / R->slot * R->slot;
	per *= P->htod ? 1 : 2;
	if (hp_opt[HP_OPT_STAGE_LINK] == 0)
		per = n;
	int r = 0;
	*none = 0;
	while (off < n && r == 0) {
		size_t len = n - off < per ? n - off : per;
		if (off > 0 && !hp_pool_worth(P->htod)) {
			r = lin_pass(P, d, h, n, off);
			break;
		}
		struct lin j = {.R = R, .h = h + off, .d = d + off, .n = len,
				.s = P->s};
		size_t m = (len + R->slot - 1) / R->slot;
		uint64_t t0 = hp_now_ns();
		int no;
		r = P->htod ? hp_stage_run_htod(R, m, P->s, lin_in, lin_htod,
						&j, &no)
			    : hp_stage_run_dtoh(R, m, P->s, lin_dtoh, lin_out,
						&j, &no);
		if (no && off == 0) {
			*none = 1; /* nothing done: the copy passes */
			return r;
		}
		if (no) { /* no slot now: the rest passes */
			r = lin_pass(P, d, h, n, off);
			break;
		}
		hp_pool_seen(P->htod, len, hp_now_ns() - t0);
		off += len;
	}
	/* the source is staged: an async H2D call returns (the DMA may run);
	 * a synchronous one after the copy, with its error if it failed */
	if (r == 0 && sync && P->htod)
		r = hp_cuda_stream_wait(P->s);
	return r;
}
