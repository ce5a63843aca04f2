/* The staging rings (the copy engine: stage.c stages through them).  One
 * ring per direction, each half of HOSTPIN_STAGE_BUFFER, mapped and
 * registered through the program's context current at the first copy
 * that would be staged that way (never a context of hostpin's own:
 * invariant 3), by the growth thread (below): that copy, and any while
 * the ring is made, pass through.
 *
 * A ring's slots are owned per stream (issue 32): a copy takes slots
 * (hp_ring_take) that are free — no DMA pending, or the event recorded
 * after their last DMA completed, which is asked, never waited for — or
 * whose last DMA was on the copy's own stream (waited for: that is the
 * stream's own order).  A slot last used by another stream whose work has
 * not completed is never waited for: when none can be taken, the copy goes
 * the pageable path, and the ring grows by a segment (another
 * HOSTPIN_STAGE_BUFFER/2 of slots, within the pinned-memory caps, up to
 * HP_RING_SEGS) in the background (below), as it does ahead when a copy
 * takes the last slot no copy holds (a copy that holds slots leaves that
 * one to another stream's copy).  So a copy never waits for another
 * stream's work nor for a registration, and copies on two streams the same
 * way are staged at once, each through its own slots.  The ring's lock is
 * held only for the bookkeeping, never across a copy, a wait or a
 * registration (issue 39 item 12; a ring whose context ended is released
 * under it, at the next copy, as the driver forgets it). */
#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

#include "../backend/backend.h"
#include "../record.h"
#include "stage.h"

/* The rings of each context that staged: [i][0] H2D, [i][1] D2H.  An
 * entry is given to a context (its ctx set) under tab_mu, and taken back
 * only once that context ended and no copy uses it. */
#define CTXS 8
#define RING_INIT {.mu = PTHREAD_MUTEX_INITIALIZER, .dir = 0}, \
		  {.mu = PTHREAD_MUTEX_INITIALIZER, .dir = 1}
static struct hp_ring rings[CTXS][2] = {
    {RING_INIT}, {RING_INIT}, {RING_INIT}, {RING_INIT},
    {RING_INIT}, {RING_INIT}, {RING_INIT}, {RING_INIT}};
static pthread_mutex_t tab_mu = PTHREAD_MUTEX_INITIALIZER;
static _Atomic uint64_t st_ring; /* the rings' bytes, for the report */
/* the growth thread (below) */
static struct {
	pthread_mutex_t mu;
	pthread_cond_t cv; /* a growth asked for, or the thread went idle */
	int asked, busy, stop, on;
} gw = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};
static void *grower_main(void *arg);

uint64_t hp_ring_bytes(void)
{
	return atomic_load_explicit(&st_ring, memory_order_relaxed);
}

static const char *dir_name(const struct hp_ring *R)
{
	return R->dir ? "D2H" : "H2D";
}

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
	/* no growth begun now, the one in flight done (one registration) */
	pthread_mutex_lock(&gw.mu);
	gw.stop = 1;
	while (gw.busy)
		pthread_cond_wait(&gw.cv, &gw.mu);
	pthread_mutex_unlock(&gw.mu);
	for (int i = 0; i < CTXS; i++)
		ring_exit_one(&rings[i][0]), ring_exit_one(&rings[i][1]);
}

/* Once, at the first ring asked for (before the growth thread makes it:
 * the exit hook waits for it): the exit hook, the copy threads. */
static void rings_first(void)
{
	if (atexit(ring_exit) != 0)
		hp_log(HP_LOG_WARN, "staging: no exit hook: the rings stay "
		       "registered at exit");
	hp_pool_start();
}

/* Once, at the first growth asked for (a process whose copies never
 * compete for slots starts no thread for it: invariant 9). */
static void grower_start(void)
{
	pthread_mutex_lock(&gw.mu);
	gw.on = hp_thread_start(grower_main, NULL, 0) == 0;
	pthread_mutex_unlock(&gw.mu);
	if (!gw.on)
		hp_log(HP_LOG_WARN, "staging: no thread to grow the rings: "
		       "each stays one segment");
}

/* Under R->mu, no slot claimed: R's context ended since R was made (its
 * registration and events died with it, and no DMA of it runs; another
 * context's end changes nothing here) or the driver was unloaded: R is
 * made again, through the context current now.  Its events are not
 * touched (they are gone); its registration is released before any unmap,
 * and a segment whose release is refused (it may still be registered) is
 * never unmapped: left in place, still counted (invariant 1). */
static void ring_unmake(struct hp_ring *R)
{
	for (int g = 0; g < R->nseg; g++) {
		int r = hp_cuda_ring_unregister(R->base[g]);
		if (r != 0 && r != HP_CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED &&
		    r != HP_CUDA_ERROR_CONTEXT_IS_DESTROYED) {
			HP_LOG_ONCE(HP_LOG_WARN, "a staging ring's registration "
				    "could not be released (%d): its memory "
				    "is left mapped", r);
			continue;
		}
		hp_real.munmap(R->base[g], R->seglen);
		HP_CTR_SUB(ring_bytes, R->seglen);
		atomic_fetch_sub_explicit(&st_ring, R->seglen,
					  memory_order_relaxed);
	}
	hp_log(HP_LOG_INFO, "staging ring (%s): its context ended; made again",
	       dir_name(R));
	for (int i = 0; i < HP_RING_SEGS * HP_RING_SLOTS; i++)
		R->ev[i] = NULL, R->used[i] = 0, R->owner[i] = NULL;
	R->nseg = 0;
	R->state = 0;
}

/* A segment of slots being made: its bytes and events. */
struct seg {
	char *base;
	size_t slot, len;
	void *ev[HP_RING_SLOTS];
};

/* Make a segment of slots for a ring of direction dir (g: its segments
 * now, for the log) through the context current on this thread, its
 * events first; 0 if done; 1 if not now, for a moment (the pinned-memory
 * caps full, a capture began); -1 if the driver or the system refused.
 * What it made is undone when it fails: no event outlives a refusal (a
 * ring refused for a moment and made after its context ended would record
 * events that died with it: issue 39). */
static int seg_make(int dir, int g, struct seg *S)
{
	/* HOSTPIN_STAGE_BUFFER: both rings together */
	size_t len = (size_t)hp_opt[HP_OPT_STAGE_BUFFER] / 2;
	size_t slot = (len / HP_RING_SLOTS) & ~(size_t)(HP_PAGE_SIZE - 1);
	if (slot < HP_PAGE_SIZE)
		slot = HP_PAGE_SIZE;
	len = slot * HP_RING_SLOTS;
	*S = (struct seg){.base = MAP_FAILED, .slot = slot, .len = len};
	const char *what = "given its events";
	int r = 0;
	for (int i = 0; r == 0 && i < HP_RING_SLOTS; i++)
		r = hp_cuda_event_new(&S->ev[i]);
	int reserved = 0, moment = 0;
	if (r == 0) {
		/* pinned memory: under the caps with the blocks', in
		 * the ledger (not a block's: the reports' pinned bytes
		 * are blocks) */
		what = "reserved under HOSTPIN_MAX_PINNED and "
		       "HOSTPIN_NODE_MAX_PINNED";
		if (!(reserved = hp_cap_reserve_ring(len)))
			r = -1, moment = 1;
	}
	if (r == 0) {
		what = "mapped";
		S->base = hp_real.mmap(NULL, len, PROT_READ | PROT_WRITE,
				       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (S->base == MAP_FAILED)
			r = -1;
		/* not inherited by a forked child (which never stages): a
		 * registered page shared copy-on-write could leave the
		 * parent's DMA on the page the child got */
		else
			hp_real.madvise(S->base, len, MADV_DONTFORK);
	}
	if (r == 0) {
		what = "registered";
		if ((r = hp_cuda_ring_register(S->base, len)) != 0)
			hp_real.munmap(S->base, len);
		moment = r == -1; /* a capture began: not the driver's no */
	}
	if (r == 0)
		return 0;
	if (reserved)
		HP_CTR_SUB(ring_bytes, len);
	for (int i = 0; i < HP_RING_SLOTS; i++)
		if (S->ev[i])
			hp_cuda_event_free(S->ev[i]), S->ev[i] = NULL;
	/* said once (the other direction's ring, if refused too, and a
	 * growth refused: at info level) */
	static _Atomic int said;
	hp_log(g || atomic_exchange(&said, 1) ? HP_LOG_INFO : HP_LOG_WARN,
	       "the staging ring (%s, %zu bytes) could not be %s (%d): "
	       "large copies from unregistered memory go to the driver as "
	       "they are%s", dir ? "D2H" : "H2D", len, what, r,
	       g ? " when no slot is free" : "");
	return moment ? 1 : -1;
}

/* Under R->mu: S becomes R's next segment. */
static void seg_install(struct hp_ring *R, const struct seg *S)
{
	int g = R->nseg;
	R->base[g] = S->base, R->slot = S->slot, R->seglen = S->len;
	for (int i = 0; i < HP_RING_SLOTS; i++) {
		int k = g * HP_RING_SLOTS + i;
		R->ev[k] = S->ev[i], R->used[k] = 0, R->owner[k] = NULL;
	}
	R->nseg = g + 1;
	atomic_fetch_add_explicit(&st_ring, S->len, memory_order_relaxed);
	hp_log(HP_LOG_INFO, "staging ring (%s, device %d): %d slots of %zu "
	       "bytes, registered%s", dir_name(R), R->dev, HP_RING_SLOTS, S->slot,
	       g ? " (grown: a copy found every slot another stream's)" : "");
}

/* A segment made but not installed (its ring was made again or ended
 * meanwhile): released as ring_unmake releases one. */
static void seg_undo(struct seg *S)
{
	int r = hp_cuda_ring_unregister(S->base);
	if (r == 0 || r == HP_CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED ||
	    r == HP_CUDA_ERROR_CONTEXT_IS_DESTROYED) {
		hp_real.munmap(S->base, S->len);
		HP_CTR_SUB(ring_bytes, S->len);
	}
	for (int i = 0; i < HP_RING_SLOTS; i++)
		hp_cuda_event_free(S->ev[i]);
}

/* ---- growth, in the background (issue 39) ----
 * A ring's first segment is made here, asked for by the first copy that
 * would be staged through it (ring_make).  A ring grows by a segment
 * when a copy found every slot another stream's (it passes through
 * meanwhile), or ahead, when a copy took the
 * last slot no copy held.  One thread of hostpin's (started with the
 * first ring; every signal blocked: invariant 11) makes the segment
 * through the ring's own context (pushed: the current one may be another
 * device's), holding no lock a copy takes; the segment is added under
 * the ring's lock only if the ring is still what it was.  So no copy
 * registers memory, and none waits for a registration. */

/* Under R->mu: ask for R's first segment (state 2) or a segment more; 1
 * if the growth thread will make it. */
static int grow_ask(struct hp_ring *R)
{
	if (R->grow)
		return 1;
	if (R->state == 1 ? R->nseg == HP_RING_SEGS : R->state != 2)
		return 0;
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, grower_start);
	pthread_mutex_lock(&gw.mu); /* order: R->mu, then gw.mu */
	R->grow = gw.on;
	gw.asked = 1;
	pthread_cond_broadcast(&gw.cv);
	pthread_mutex_unlock(&gw.mu);
	return R->grow;
}

static int first_made(struct hp_ring *R, int e, int gone,
		      const struct seg *S, uintptr_t ctx, uint64_t gen);

static void grow_one(struct hp_ring *R)
{
	pthread_mutex_lock(&R->mu);
	int first = R->state == 2;
	if (R->grow != 1 ||
	    (!first && (R->state != 1 || R->nseg == HP_RING_SEGS))) {
		R->grow = 0;
		pthread_mutex_unlock(&R->mu);
		return;
	}
	R->grow = 2;
	uintptr_t ctx = R->ctx;
	uint64_t gen = R->gen;
	int g = R->nseg, dir = R->dir;
	pthread_mutex_unlock(&R->mu);
	struct seg S;
	int pushed = hp_cuda_ctx_push(ctx, gen);
	int e = pushed < 0 ? -1 : seg_make(dir, g, &S);
	hp_cuda_ctx_pop(pushed);
	pthread_mutex_lock(&R->mu);
	R->grow = 0;
	int put;
	if (first) {
		put = first_made(R, e, pushed < 0, &S, ctx, gen);
	} else {
		put = e == 0 && R->state == 1 && R->gen == gen &&
		      R->ctx == ctx && R->nseg == g;
		if (put)
			seg_install(R, &S);
	}
	if (R->state == 2)
		grow_ask(R); /* asked again meanwhile (a new context) */
	pthread_mutex_unlock(&R->mu);
	if (e == 0 && !put)
		seg_undo(&S);
}

static void *grower_main(void *arg)
{
	(void)arg;
	hp_in_hook = 1; /* nothing this thread does is the program's */
	pthread_mutex_lock(&gw.mu);
	for (;;) {
		while (!gw.asked || gw.stop) {
			gw.busy = 0;
			pthread_cond_broadcast(&gw.cv);
			pthread_cond_wait(&gw.cv, &gw.mu);
		}
		gw.asked = 0, gw.busy = 1;
		pthread_mutex_unlock(&gw.mu);
		for (int i = 0; i < CTXS; i++)
			grow_one(&rings[i][0]), grow_one(&rings[i][1]);
		pthread_mutex_lock(&gw.mu);
	}
	return NULL;
}

/* Under R->mu, no segment made: what a refused making leaves (not for
 * good, issue 32): tried again at the next copy after a moment's refusal
 * (e > 0), else after 1, 2, 4 ... 1024 copies. */
static void make_refused(struct hp_ring *R, int e)
{
	R->backoff = e > 0 ? 0
		   : R->backoff ? (R->backoff < 1024 ? 2 * R->backoff : 1024)
				: 1;
	R->skip = R->backoff;
	R->state = -1;
}

/* Under R->mu, S made for R: R is ready. */
static void make_done(struct hp_ring *R, const struct seg *S)
{
	seg_install(R, S);
	R->backoff = 0;
	R->state = 1;
}

/* Under R->mu: the making of R's first segment S for context ctx at
 * generation gen ended (e: seg_make's answer; gone: ctx ended first).  1
 * if S is R's now; else the caller undoes S if it was made. */
static int first_made(struct hp_ring *R, int e, int gone,
		      const struct seg *S, uintptr_t ctx, uint64_t gen)
{
	if (R->state != 2 || R->gen != gen || R->ctx != ctx)
		return 0; /* ended, or given to another context meanwhile */
	if (e == 0) {
		make_done(R, S);
		return 1;
	}
	if (gone)
		R->state = 0; /* asked again at the next copy */
	else
		make_refused(R, e);
	return 0;
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
		ring_unmake(R);
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
	if (!must && hp_opt[HP_OPT_STAGE_RING_BACKGROUND] && grow_ask(R))
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
	for (int i = 0; i < CTXS && !R; i++)
		if (rings[i][dir].ctx == ctx)
			R = &rings[i][dir];
	for (int i = 0; i < CTXS && !R && make; i++)
		if (rings[i][dir].ctx == 0)
			R = &rings[i][dir], R->ctx = ctx;
	for (int i = 0; i < CTXS && !R && make; i++) {
		struct hp_ring *E = &rings[i][dir];
		pthread_mutex_lock(&E->mu);
		if (E->claims == 0 && E->state != -2 &&
		    E->gen != hp_cuda_ctx_gen(E->ctx, 0)) {
			if (E->state > 0)
				ring_unmake(E);
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
	 * segment (a registration's time, at most once per ring) */
	for (int i = 0; ok == 3 && i < 20000; i++) {
		pthread_mutex_unlock(&R->mu);
		struct timespec ts = {0, 250000};
		nanosleep(&ts, NULL);
		pthread_mutex_lock(&R->mu);
		ok = ring_make(R, P, must);
	}
	if (ok == 3)
		ok = 0;
	struct seg S;
	if (ok == 2) {
		/* made here, ctx current; other copies pass through meanwhile
		 * (state 2), none waits on R->mu for the registration */
		uint64_t gen = R->gen;
		int dir = R->dir;
		pthread_mutex_unlock(&R->mu);
		int e = seg_make(dir, 0, &S);
		pthread_mutex_lock(&R->mu);
		ok = first_made(R, e, 0, &S, ctx, gen);
		undo = e == 0 && !ok;
	}
	if (ok)
		R->claims++;
	pthread_mutex_unlock(&R->mu);
	if (undo)
		seg_undo(&S);
	return ok ? R : NULL;
}

void hp_ring_put(struct hp_ring *R)
{
	pthread_mutex_lock(&R->mu);
	R->claims--;
	pthread_mutex_unlock(&R->mu);
}

int hp_ring_take(struct hp_ring *R, hp_cudaStream_t s, int first)
{
	int k = -1;
	pthread_mutex_lock(&R->mu);
	int n = R->nseg * HP_RING_SLOTS, untaken = 0;
	for (int i = 0; i < n; i++)
		untaken += !R->taken[i];
	/* a copy that holds slots already leaves the last one no copy holds
	 * to another stream's copy (which then need not wait for a growth) */
	if (!first && untaken <= 1) {
		pthread_mutex_unlock(&R->mu);
		return -1;
	}
	/* free: nothing pending, or its last DMA done (asked, not waited;
	 * asked twice: a driver may answer "not ready" to the first query
	 * of work that is done) */
	for (int i = 0; i < n && k < 0; i++)
		if (!R->taken[i] && !R->used[i])
			k = i;
	for (int q = 0; q < 2; q++)
		for (int i = 0; i < n && k < 0; i++)
			if (!R->taken[i] && R->used[i] &&
			    hp_cuda_event_query(R->ev[i]) == 0)
				R->used[i] = 0, k = i;
	/* else one whose last DMA was on this stream: its own order */
	for (int i = 0; i < n && k < 0; i++)
		if (!R->taken[i] && R->owner[i] == s)
			k = i;
	/* a copy that found none (it passes through), or took the last one
	 * no copy held: the ring grows, in the background */
	if (first && (k < 0 || untaken == 1))
		grow_ask(R);
	if (k >= 0)
		R->taken[k] = 1;
	pthread_mutex_unlock(&R->mu);
	return k;
}

/* Slot k is taken by the caller: no other thread touches its fields. */
int hp_ring_wait(struct hp_ring *R, int k)
{
	if (!R->used[k])
		return 0;
	int r = hp_cuda_event_wait(R->ev[k]);
	R->used[k] = 0;
	return r;
}

int hp_ring_fence(struct hp_ring *R, int k, hp_cudaStream_t s,
		  hp_cudaStream_t id)
{
	int r = hp_cuda_event_record(R->ev[k], s);
	if (r == 0)
		R->used[k] = 1, R->owner[k] = id;
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
