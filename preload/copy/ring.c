/* The staging rings (the copy engine: stage.c stages through them).  One
 * ring per direction, each half of HOSTPIN_STAGE_BUFFER, mapped and
 * registered through the program's current context at the first copy
 * staged that way (never a context of hostpin's own: invariant 3).
 *
 * A ring's slots are owned per stream (issue 32): a copy takes slots
 * (hp_ring_take) that are free — no DMA pending, or the event recorded
 * after their last DMA completed, which is asked, never waited for — or
 * whose last DMA was on the copy's own stream (waited for: that is the
 * stream's own order).  A slot last used by another stream whose work has
 * not completed is never waited for: when none can be taken, the copy goes
 * the ring grows by a segment (another HOSTPIN_STAGE_BUFFER/2 of slots,
 * within the pinned-memory caps, up to HP_RING_SEGS) or, if it cannot, the
 * copy goes the pageable path.  So a copy never waits for another stream's
 * work, and copies on two streams the same way are staged at once, each
 * through its own slots.  The ring's lock is held only for the
 * bookkeeping and a growth, never across a copy or a wait. */
#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>

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
	for (int i = 0; i < CTXS; i++)
		ring_exit_one(&rings[i][0]), ring_exit_one(&rings[i][1]);
}

/* Once, at the first ring made: the exit hook, the copy threads. */
static void rings_first(void)
{
	if (atexit(ring_exit) != 0)
		hp_log(HP_LOG_WARN, "staging: no exit hook: the rings stay "
		       "registered at exit");
	hp_pool_start();
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

/* Under R->mu: add a segment of slots to R, its events first, through the
 * context current on this thread; 0 if done; 1 if not now, for a moment
 * (the pinned-memory caps full, a capture began); -1 if the driver or the
 * system refused. */
static int seg_add(struct hp_ring *R)
{
	int g = R->nseg;
	if (g == HP_RING_SEGS)
		return -1;
	/* HOSTPIN_STAGE_BUFFER: both rings together */
	size_t len = (size_t)hp_opt[HP_OPT_STAGE_BUFFER] / 2;
	size_t slot = (len / HP_RING_SLOTS) & ~(size_t)(HP_PAGE_SIZE - 1);
	if (slot < HP_PAGE_SIZE)
		slot = HP_PAGE_SIZE;
	len = slot * HP_RING_SLOTS;
	const char *what = "given its events";
	int r = 0;
	char *b = MAP_FAILED;
	for (int i = g * HP_RING_SLOTS; r == 0 && i < (g + 1) * HP_RING_SLOTS;
	     i++)
		if (R->ev[i] == NULL)
			r = hp_cuda_event_new(&R->ev[i]);
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
		b = hp_real.mmap(NULL, len, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (b == MAP_FAILED)
			r = -1;
		/* not inherited by a forked child (which never stages): a
		 * registered page shared copy-on-write could leave the
		 * parent's DMA on the page the child got */
		else
			hp_real.madvise(b, len, MADV_DONTFORK);
	}
	if (r == 0) {
		what = "registered";
		if ((r = hp_cuda_ring_register(b, len)) != 0)
			hp_real.munmap(b, len);
		moment = r == -1; /* a capture began: not the driver's no */
	}
	if (r != 0 && reserved)
		HP_CTR_SUB(ring_bytes, len);
	if (r != 0) {
		/* said once (the other direction's ring, if refused too,
		 * and a growth refused: at info level) */
		static _Atomic int said;
		hp_log(g || atomic_exchange(&said, 1) ? HP_LOG_INFO
						      : HP_LOG_WARN,
		       "the staging ring (%s, %zu bytes) could not be %s (%d): "
		       "large copies from unregistered memory go to the "
		       "driver as they are%s", dir_name(R), len, what, r,
		       g ? " when no slot is free" : "");
		return moment ? 1 : -1;
	}
	R->base[g] = b, R->slot = slot, R->seglen = len;
	R->nseg = g + 1;
	atomic_fetch_add_explicit(&st_ring, len, memory_order_relaxed);
	hp_log(HP_LOG_INFO, "staging ring (%s): %d slots of %zu bytes, "
	       "registered%s", dir_name(R), HP_RING_SLOTS, slot,
	       g ? " (grown: every slot was another stream's)" : "");
	return 0;
}

/* Under R->mu, R given to context ctx: make it once, through ctx current
 * on this thread (make: it is).  1 if ready. */
static int ring_make(struct hp_ring *R, uintptr_t ctx, int make)
{
	if (R->state > 0 && R->gen != hp_cuda_ctx_gen(R->ctx, 0)) {
		if (R->claims > 0)
			return 0; /* in use: made again once let go */
		ring_unmake(R);
	}
	if (R->state > 0)
		return 1;
	if (R->state == -2 || !make)
		return 0; /* at exit; or not its context current here */
	if (R->state < 0 && R->skip > 0) {
		R->skip--;
		return 0;
	}
	uint64_t gen = hp_cuda_ctx_gen(ctx, 1);
	int e = seg_add(R);
	if (e != 0) {
		/* not for good (issue 32): tried again at the next copy after
		 * a moment's refusal, else after 1, 2, 4 ... 1024 copies */
		R->backoff = e > 0 ? 0
			   : R->backoff ? (R->backoff < 1024 ? 2 * R->backoff
							      : 1024)
					: 1;
		R->skip = R->backoff;
		R->state = -1;
		return 0;
	}
	R->backoff = 0;
	R->gen = gen;
	static pthread_once_t first = PTHREAD_ONCE_INIT;
	pthread_once(&first, rings_first);
	R->state = 1;
	return 1;
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

struct hp_ring *hp_ring_get(int htod, uintptr_t ctx, int make)
{
	/* a ring is used through the context it was made in (its events
	 * are that context's): each context its own */
	struct hp_ring *R = entry(htod ? 0 : 1, ctx, make);
	if (R == NULL)
		return NULL;
	pthread_mutex_lock(&R->mu);
	int ok = ring_make(R, ctx, make);
	if (ok)
		R->claims++;
	pthread_mutex_unlock(&R->mu);
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
	int n = R->nseg * HP_RING_SLOTS;
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
	/* else, for a copy that holds none yet: a new segment */
	if (k < 0 && first && seg_add(R) == 0)
		k = n;
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
