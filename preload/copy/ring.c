/* The staging rings (the copy engine: stage.c stages through them).  One
 * ring per direction, each half of HOSTPIN_STAGE_BUFFER, mapped and
 * registered through the program's context current at the first copy
 * that would be staged that way (never a context of hostpin's own:
 * invariant 3), by the growth thread (ring_grow.c, which makes and
 * grows segments): that copy, and any while the ring is made, pass
 * through.  This file: the table of rings, a ring's making asked for, and
 * the hand-out of its slots.
 *
 * A ring's slots are owned per stream (issue 32): a copy takes slots
 * (hp_ring_take) that are free — no DMA pending, or the event recorded
 * after their last DMA completed, which is asked, never waited for — or
 * whose last DMA was on the copy's own stream (waited for: that is the
 * stream's own order), up to its share of the slots (share()).  A slot
 * last used by another stream whose work has not completed is never waited
 * for: when none can be taken, the copy goes the pageable path, and the
 * ring grows by a segment (another HOSTPIN_STAGE_BUFFER/2 of slots, within
 * the pinned-memory caps, up to HP_RING_SEGS) in the background
 * (ring_grow.c).  So a copy never waits for another stream's work nor for
 * a registration, and copies on two streams the same way are staged at
 * once, each through its own slots.  The ring's lock is held only for the
 * bookkeeping, never across a copy, a wait or a registration (issue 39
 * item 12; a ring whose context ended is released under it, at the next
 * copy, as the driver forgets it). */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "../backend/backend.h"
#include "../record.h"
#include "ring.h"

/* The rings of each context that staged: [i][0] H2D, [i][1] D2H.  An
 * entry is given to a context (its ctx set) under tab_mu, and taken back
 * only once that context ended and no copy uses it. */
#define RING_INIT {.mu = PTHREAD_MUTEX_INITIALIZER, .dir = 0,                \
		   .made = PTHREAD_COND_INITIALIZER},                         \
		  {.mu = PTHREAD_MUTEX_INITIALIZER, .dir = 1,                \
		   .made = PTHREAD_COND_INITIALIZER}
struct hp_ring hp_rings[HP_RING_CTXS][2] = {
    {RING_INIT}, {RING_INIT}, {RING_INIT}, {RING_INIT},
    {RING_INIT}, {RING_INIT}, {RING_INIT}, {RING_INIT}};
static pthread_mutex_t tab_mu = PTHREAD_MUTEX_INITIALIZER;
/* the copies that claimed a ring now, every ring's (pool.c: as many as
 * copy threads or more, each copies its own chunks) */
static _Atomic unsigned copies_on;

/* At exit, before any library's destructor (atexit runs this before the
 * handlers the driver and runtime registered earlier): the ring's last
 * DMAs are waited for and its registration released, so the driver sees
 * every registration of hostpin's released.  Skipped while a copy holds
 * slots of the ring (another thread still copying at exit), and once the
 * driver or the ring's context is gone. */
static void ring_exit_one(struct hp_ring *R)
{
	if (pthread_mutex_trylock(&R->mu) != 0)
		return;
	/* the liveness check every driver call makes: a driver unloaded (a
	 * plug-in closed), or the ring's context ended, took the ring's
	 * registration and events with it: nothing to call (issue 32) */
	if (R->state > 0 && (!hp_cuda_stage_fns() ||
			     R->gen != hp_cuda_ctx_gen(R->ctx, 0)))
		R->state = -2;
	if (R->state > 0 && R->claims == 0 && hp_capture_enter()) {
		for (int i = 0; i < R->nseg * HP_RING_SLOTS; i++)
			if (R->used[i])
				hp_cuda_event_wait(R->ev[i]), R->used[i] = 0;
		hp_capture_leave();
		R->state = -2; /* not used again */
		for (int g = 0; g < R->nseg; g++)
			if (hp_cuda_ring_unregister(R->base[g]) == 0)
				HP_CTR_SUB(ring_bytes, R->seglen);
	}
	pthread_mutex_unlock(&R->mu);
}

static void ring_exit(void)
{
	if (hp_in_child)
		return;
	hp_ring_grow_stop();
	for (int i = 0; i < HP_RING_CTXS; i++)
		ring_exit_one(&hp_rings[i][0]), ring_exit_one(&hp_rings[i][1]);
}

/* Once, at the first ring asked for (before the growth thread makes it:
 * the exit hook waits for it): the exit hook; the copy threads, started
 * in the background (speed.c: the growth thread waits for them before it
 * makes a first segment). */
static void rings_first(void)
{
	if (atexit(ring_exit) != 0)
		hp_log(HP_LOG_WARN, "staging: no exit hook: the rings stay "
		       "registered at exit");
	hp_pool_early();
}

/* Under R->mu, R given to context ctx: made once, through ctx (make: it
 * is current on this thread; its generation and device: the plan's,
 * P, which asked for it).  1 if ready;
 * 2: to be made by this copy (HOSTPIN_STAGE_RING_BACKGROUND=0, or no
 * growth thread), outside R->mu (hp_ring_get); else 0: the copy passes
 * through.  The first segment, like any growth, is made by the growth
 * thread, never on a copy's path nor under R->mu (issue 39 item 12): the
 * copy that asks for it, and every copy while it is made (state 2), pass
 * through; except a copy that must be staged (must: the driver must not
 * get it as it is, e.g. across registration pieces), which makes it
 * itself, outside R->mu (2), or waits while another makes it (3). */
static int ring_make(struct hp_ring *R, const struct hp_plan *P, int must)
{
	int make = P->here;
	if (R->state == 1 && R->gen != P->gen) {
		if (R->claims > 0)
			return 0; /* in use: made again once let go */
		hp_ring_unmake(R);
	}
	if (R->state == 1)
		return 1;
	if (R->state == 2 && must)
		return 3; /* being made: waited for (hp_ring_get) */
	if (R->state == 2 || R->state == -2 || !make)
		return 0; /* being made; at exit; or not its context current */
	if (R->state < 0 && R->skip > 0) {
		R->skip--;
		return 0;
	}
	static pthread_once_t first = PTHREAD_ONCE_INIT;
	pthread_once(&first, rings_first);
	R->gen = P->gen, R->dev = P->dev;
	R->state = 2;
	if (!must && hp_opt[HP_OPT_STAGE_RING_BACKGROUND] && hp_ring_grow_ask(R))
		return 0;
	return 2;
}

/* The entry for ctx in direction dir: its own, else one never given,
 * else one whose context ended and that no copy uses (made again for
 * ctx); NULL if none. */
static struct hp_ring *entry(int dir, uintptr_t ctx, int make)
{
	struct hp_ring *R = NULL;
	pthread_mutex_lock(&tab_mu);
	for (int i = 0; i < HP_RING_CTXS && !R; i++)
		if (hp_rings[i][dir].ctx == ctx)
			R = &hp_rings[i][dir];
	for (int i = 0; i < HP_RING_CTXS && !R && make; i++)
		if (hp_rings[i][dir].ctx == 0)
			R = &hp_rings[i][dir], R->ctx = ctx;
	for (int i = 0; i < HP_RING_CTXS && !R && make; i++) {
		struct hp_ring *E = &hp_rings[i][dir];
		pthread_mutex_lock(&E->mu);
		if (E->claims == 0 && E->state != -2 &&
		    E->gen != hp_cuda_ctx_gen(E->ctx, 0)) {
			if (E->state > 0)
				hp_ring_unmake(E);
			E->state = 0, E->skip = E->backoff = 0;
			E->ctx = ctx;
			R = E;
		}
		pthread_mutex_unlock(&E->mu);
	}
	pthread_mutex_unlock(&tab_mu);
	return R;
}

struct hp_ring *hp_ring_get(const struct hp_plan *P, int must)
{
	/* a ring is used through the context it was made in (its events
	 * are that context's): each context its own */
	uintptr_t ctx = P->ctx;
	struct hp_ring *R = entry(P->htod ? 0 : 1, ctx, P->here);
	if (R == NULL)
		return NULL;
	pthread_mutex_lock(&R->mu);
	int ok = ring_make(R, P, must), undo = 0;
	/* a copy that must be staged waits while another makes the first
	 * segment (a registration's time, at most once per ring): woken when
	 * that making ends, made or refused (hp_ring_first_made), for 5 s at
	 * most; then it passes through */
	if (ok == 3) {
		struct timespec end;
		clock_gettime(CLOCK_REALTIME, &end); /* the condition's clock */
		end.tv_sec += 5;
		int t = 0;
		while (ok == 3 && t != ETIMEDOUT) {
			t = pthread_cond_timedwait(&R->made, &R->mu, &end);
			ok = ring_make(R, P, must);
		}
		if (t == ETIMEDOUT)
			HP_LOG_ONCE(HP_LOG_INFO, "a copy that must be staged "
				    "waited 5 s for its staging ring (%s)",
				    ok == 3 ? "not made yet: passed through"
					    : "made");
		if (ok == 3)
			ok = 0;
	}
	struct hp_seg S;
	if (ok == 2) {
		/* made here, ctx current; other copies pass through meanwhile
		 * (state 2), none waits on R->mu for the registration */
		uint64_t gen = R->gen;
		int dir = R->dir;
		pthread_mutex_unlock(&R->mu);
		/* as the growth thread: only once the copy threads are
		 * picked (waited for here: the knob's choice) and can stage
		 * this way (speed.c); else asked again at a later copy */
		int can = must || hp_pool_can(P->htod);
		int e = can ? hp_seg_make(dir, 0, &S, ctx, gen) : -1;
		pthread_mutex_lock(&R->mu);
		ok = hp_ring_first_made(R, e, !can, &S, ctx, gen);
		undo = e == 0 && !ok;
	}
	if (ok) {
		R->claims++;
		atomic_fetch_add_explicit(&copies_on, 1, memory_order_relaxed);
	}
	pthread_mutex_unlock(&R->mu);
	if (undo)
		hp_seg_undo(&S);
	return ok ? R : NULL;
}

void hp_ring_put(struct hp_ring *R)
{
	pthread_mutex_lock(&R->mu);
	R->claims--;
	pthread_mutex_unlock(&R->mu);
	atomic_fetch_sub_explicit(&copies_on, 1, memory_order_relaxed);
}

unsigned hp_ring_copies(void)
{
	/* relaxed: a count, read on its own */
	return atomic_load_explicit(&copies_on, memory_order_relaxed);
}

/* Under R->mu: the most slots a copy holds.  Alone on the ring, all but
 * one: the last one no copy holds is left to another stream's copy (which
 * then need not wait for a growth).  Copies sharing it: each its share,
 * two at least (one filled while the other's DMA runs): two copies on
 * a ring of four slots take two each, where the first used to keep
 * three and the second, left one, waited for its own DMA at every chunk
 * (issue 43: two threads on two streams). */
static int share(const struct hp_ring *R)
{
	int n = R->nseg * HP_RING_SLOTS;
	if (R->claims < 2)
		return n - 1;
	return n / R->claims > 2 ? n / R->claims : 2;
}

int hp_ring_over(struct hp_ring *R, int held)
{
	pthread_mutex_lock(&R->mu);
	int over = held > share(R);
	pthread_mutex_unlock(&R->mu);
	return over;
}

int hp_ring_take(struct hp_ring *R, hp_cudaStream_t s, int held)
{
	int k = -1, first = held == 0;
	pthread_mutex_lock(&R->mu);
	int n = R->nseg * HP_RING_SLOTS, untaken = 0;
	for (int i = 0; i < n; i++)
		untaken += !R->taken[i];
	/* a copy that holds slots already takes no more than its share */
	if (!first && (untaken == 0 || held >= share(R))) {
		pthread_mutex_unlock(&R->mu);
		return -1;
	}
	/* free: nothing pending, or its last DMA done (asked, not waited;
	 * asked twice: a driver may answer "not ready" to the first query
	 * of work that is done), the oldest fenced asked first: a stream's
	 * DMAs complete in order, so its oldest is the likeliest done, and
	 * a copy that falls back on its own stream's slot waits for its
	 * oldest DMA, not its newest (a staged round's first slot: each
	 * round began with a wait for the DMA the last one just queued) */
	int ord[HP_RING_MAX], m = 0;
	for (int i = 0; i < n && k < 0; i++)
		if (!R->taken[i] && !R->used[i])
			k = i;
	for (int i = 0; i < n && k < 0; i++) {
		if (R->taken[i] || !R->used[i])
			continue;
		int j = m++;
		for (; j > 0 && R->fseq[ord[j - 1]] > R->fseq[i]; j--)
			ord[j] = ord[j - 1];
		ord[j] = i;
	}
	for (int q = 0; q < 2; q++)
		for (int j = 0; j < m && k < 0; j++)
			if (hp_cuda_event_query(R->ev[ord[j]]) == 0)
				R->used[ord[j]] = 0, k = ord[j];
	/* else one whose last DMA was on this stream: its own order */
	for (int j = 0; j < m && k < 0; j++)
		if (R->owner[ord[j]] == s)
			k = ord[j];
	/* a copy that found none (it passes through): the ring grows, in the
	 * background; and ahead, when a copy took the last slot no copy held,
	 * only where a CPU is to spare beside the copy threads: a growth
	 * beside two copies on a machine whose CPUs all copy took their time
	 * (issue 43: 32 MiB populated and registered, a tenth of two threads'
	 * time), and a copy holding more than its share lets one go to the
	 * new one meanwhile (hp_ring_over) */
	if (first && (k < 0 || (untaken == 1 && hp_pool_spare())))
		hp_ring_grow_ask(R);
	if (k >= 0)
		R->taken[k] = 1;
	pthread_mutex_unlock(&R->mu);
	return k;
}

int hp_ring_fence(struct hp_ring *R, int k, hp_cudaStream_t s,
		  hp_cudaStream_t id)
{
	int r = hp_cuda_event_record(R->ev[k], s);
	/* relaxed: an order among slots, read under R->mu once released */
	if (r == 0)
		R->used[k] = 1, R->owner[k] = id,
		R->fseq[k] = atomic_fetch_add_explicit(&R->fnext, 1,
						       memory_order_relaxed);
	else
		hp_cuda_stream_wait(s);
	return r;
}

void hp_ring_release(struct hp_ring *R, int k)
{
	pthread_mutex_lock(&R->mu);
	R->taken[k] = 0;
	pthread_mutex_unlock(&R->mu);
}

char *hp_ring_slot(const struct hp_ring *R, int k)
{
	return R->base[k / HP_RING_SLOTS] + (size_t)(k % HP_RING_SLOTS) * R->slot;
}
