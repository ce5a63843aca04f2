/* The staging rings' segments (ring.c hands out their slots): a segment of
 * slots mapped, registered through the ring's context and given its
 * events, installed, undone; a ring made again once its context ended;
 * and the growth thread, which makes a ring's first segment and each
 * growth in the background, never on a copy's path nor under a lock
 * copies take (issue 39 item 12). */
#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "../backend/backend.h"
#include "../record.h"
#include "ring.h"

static _Atomic uint64_t st_ring; /* the rings' bytes, for the report */
/* the growth thread (below) */
static struct {
	pthread_mutex_t mu;
	pthread_cond_t cv; /* a growth asked for, or the thread went idle */
	int asked, busy, stop, on;
} gw = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};
static void *grower_main(void *arg);

static const char *dir_name(const struct hp_ring *R)
{
	return R->dir ? "D2H" : "H2D";
}

uint64_t hp_ring_bytes(void)
{
	return atomic_load_explicit(&st_ring, memory_order_relaxed);
}

void hp_ring_grow_stop(void)
{
	/* no growth begun now, the one in flight done (one registration) */
	pthread_mutex_lock(&gw.mu);
	gw.stop = 1;
	while (gw.busy)
		pthread_cond_wait(&gw.cv, &gw.mu);
	pthread_mutex_unlock(&gw.mu);
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
void hp_ring_unmake(struct hp_ring *R)
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
	/* the engine tester counts the events that went with the context
	 * from this line (4 per segment) */
	hp_log(HP_LOG_INFO, "staging ring (%s, device %d): its context ended, "
	       "and its %d segments with it; made again", dir_name(R), R->dev,
	       R->nseg);
	for (int i = 0; i < HP_RING_SEGS * HP_RING_SLOTS; i++)
		R->ev[i] = NULL, R->used[i] = 0, R->owner[i] = NULL;
	R->nseg = 0;
	R->state = 0;
}

/* Make a segment of slots for a ring of direction dir (g: its segments
 * now, for the log) through its context ctx at generation gen, current on
 * this thread, its events first; 0 if done; 1 if not now, for a moment
 * (the pinned-memory caps full, a capture began); 2 if ctx ended before
 * or during its registration (hp_cuda_ring_register: none of it left
 * registered; the ring is asked for again by a copy through the context
 * current then); -1 if the driver or the system refused.
 * What it made is undone when it fails: no event outlives a refusal (a
 * ring refused for a moment and made after its context ended would record
 * events that died with it: issue 39). */
int hp_seg_make(int dir, int g, struct hp_seg *S, uintptr_t ctx,
		uint64_t gen)
{
	/* HOSTPIN_STAGE_BUFFER: both rings together */
	size_t len = (size_t)hp_opt[HP_OPT_STAGE_BUFFER] / 2;
	size_t slot = (len / HP_RING_SLOTS) & ~(size_t)(HP_PAGE_SIZE - 1);
	if (slot < HP_PAGE_SIZE)
		slot = HP_PAGE_SIZE;
	len = slot * HP_RING_SLOTS;
	*S = (struct hp_seg){.base = MAP_FAILED, .slot = slot, .len = len};
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
		if ((r = hp_cuda_ring_register(S->base, len, ctx, gen)) != 0)
			hp_real.munmap(S->base, len);
		moment = r == -1; /* a capture began: not the driver's no */
	}
	int ended = r == HP_RING_CTX_ENDED;
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
	if (ended)
		hp_log(HP_LOG_INFO, "the staging ring (%s, %zu bytes): its "
		       "context ended while it was made: asked for again",
		       dir ? "D2H" : "H2D", len);
	else
		hp_log(g || atomic_exchange(&said, 1) ? HP_LOG_INFO
						      : HP_LOG_WARN,
		       "the staging ring (%s, %zu bytes) could not be %s "
		       "(%d): large copies from unregistered memory go to "
		       "the driver as they are%s", dir ? "D2H" : "H2D", len,
		       what, r, g ? " when no slot is free" : "");
	return ended ? 2 : moment ? 1 : -1;
}

/* Under R->mu: S becomes R's next segment. */
static void seg_install(struct hp_ring *R, const struct hp_seg *S)
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
 * meanwhile): released as hp_ring_unmake releases one. */
void hp_seg_undo(struct hp_seg *S)
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
int hp_ring_grow_ask(struct hp_ring *R)
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
	/* a first segment once the copy threads are picked and started
	 * (speed.c: in the background since the first copy, waited for here,
	 * not on a copy's path), and only for a direction they can stage:
	 * else not made, asked again by a copy the gate lets through */
	if (first && !hp_pool_can(!dir)) {
		pthread_mutex_lock(&R->mu);
		R->grow = 0;
		if (R->state == 2 && R->gen == gen && R->ctx == ctx)
			R->state = 0;
		pthread_cond_broadcast(&R->made);
		pthread_mutex_unlock(&R->mu);
		return;
	}
	if (!first)
		hp_test_pause("ring_grow"); /* tests: every slot held */
	struct hp_seg S;
	int pushed = hp_cuda_ctx_push(ctx, gen);
	int e = pushed < 0 ? -1 : hp_seg_make(dir, g, &S, ctx, gen);
	hp_cuda_ctx_pop(pushed);
	pthread_mutex_lock(&R->mu);
	R->grow = 0;
	int put;
	if (first) {
		put = hp_ring_first_made(R, e, pushed < 0, &S, ctx, gen);
	} else {
		put = e == 0 && R->state == 1 && R->gen == gen &&
		      R->ctx == ctx && R->nseg == g;
		if (put)
			seg_install(R, &S);
	}
	if (R->state == 2)
		hp_ring_grow_ask(R); /* asked again meanwhile (a new context) */
	pthread_mutex_unlock(&R->mu);
	if (e == 0 && !put)
		hp_seg_undo(&S);
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
		for (int i = 0; i < HP_RING_CTXS; i++)
			grow_one(&hp_rings[i][0]), grow_one(&hp_rings[i][1]);
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
static void make_done(struct hp_ring *R, const struct hp_seg *S)
{
	seg_install(R, S);
	R->backoff = 0;
	R->state = 1;
}

/* Under R->mu: the making of R's first segment S for context ctx at
 * generation gen ended (e: hp_seg_make's answer, 2: ctx ended meanwhile;
 * gone: ctx ended first).  1 if S is R's now; else the caller undoes S if
 * it was made. */
int hp_ring_first_made(struct hp_ring *R, int e, int gone,
		      const struct hp_seg *S, uintptr_t ctx, uint64_t gen)
{
	/* the copies waiting for it look again (hp_ring_get) */
	pthread_cond_broadcast(&R->made);
	if (R->state != 2 || R->gen != gen || R->ctx != ctx)
		return 0; /* ended, or given to another context meanwhile */
	if (e == 0) {
		make_done(R, S);
		return 1;
	}
	if (gone || e == 2)
		R->state = 0; /* asked again at the next copy */
	else
		make_refused(R, e);
	return 0;
}

