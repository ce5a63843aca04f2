/* CUDA backend, the contexts: every context the program had current,
 * learnt with its device; pushing one that still lives on a thread that has
 * none; the ends of contexts (a primary context reset or released, a
 * context destroyed), which send their blocks back to pending.  Finding the
 * driver and registering: backend_cuda.c. */
#include <pthread.h>

#include "cuda_api.h"
#include "../hp.h"
#include "cuda_int.h"

/* ---- contexts ----
 * A registration belongs to the context current when it was made and dies
 * with it.  Each block remembers that context (backend->owner).  Every
 * context seen current on a program thread is kept here with its device
 * (learnt while it is current), so that a primary context reset or release
 * (which names a device) finds its blocks, and so that a thread with no
 * context (the cache's decay thread, a worker freeing a block) can push one
 * that still lives.  A context that ended is marked so and never pushed
 * again; its slot is reused.  Learnt, never created or retained. */
#define MAX_CTXS HP_CUDA_MAX_CTXS
/* A context some application thread had current: pushed on threads that
 * have none.  Learnt, never created or retained. */
static _Atomic(hp_CUcontext) known_ctx;
HP_TLS hp_CUcontext hp_cu_entered_ctx; /* what hp_cu_enter_ctx made current */
struct hp_cu_ctx hp_cu_ctxs[MAX_CTXS];
int hp_cu_nctxs;
pthread_mutex_t hp_cu_own_mu = PTHREAD_MUTEX_INITIALIZER;
/* The generations the table hands out, under hp_cu_own_mu: each slot taken
 * and each end gets a new one, so that a context learnt again into another
 * slot (its old one reused meanwhile) never comes back with a generation
 * it had before its end (what was made through it then stays dead). */
static unsigned gens;

/* 1 if the table holds ctx alive; -1 if it holds it ended; 0 if not. */
static int ctx_state(hp_CUcontext ctx)
{
	pthread_mutex_lock(&hp_cu_own_mu);
	int st = 0;
	for (int i = 0; i < hp_cu_nctxs && st <= 0; i++)
		if (hp_cu_ctxs[i].ctx == ctx)
			st = hp_cu_ctxs[i].alive ? 1 : -1;
	pthread_mutex_unlock(&hp_cu_own_mu);
	return st;
}

/* Called with ctx current on this thread; no lock across the driver call.
 * 1 if ctx lives (and is in the table, unless it is full). */
int hp_cu_learn_ctx(hp_CUcontext ctx)
{
	if (ctx == NULL)
		return 0;
	if (ctx_state(ctx) > 0)
		return 1;
	hp_CUdevice d = -1;
	hp_CUresult r = hp_cu.cuCtxGetDevice(&d);
	if (r == HP_CUDA_ERROR_CONTEXT_IS_DESTROYED)
		return 0; /* current here, but ended: never pushed */
	if (r != HP_CUDA_SUCCESS)
		d = -1;
	pthread_mutex_lock(&hp_cu_own_mu);
	int i = 0, free_slot = -1;
	for (; i < hp_cu_nctxs && hp_cu_ctxs[i].ctx != ctx; i++)
		if (!hp_cu_ctxs[i].alive && !hp_cu_ctxs[i].unmet &&
		    free_slot < 0)
			free_slot = i;
	if (i == hp_cu_nctxs) {
		if (free_slot >= 0)
			i = free_slot;
		else if (hp_cu_nctxs < MAX_CTXS)
			hp_cu_nctxs++;
	}
	int full = i == MAX_CTXS;
	if (!full && hp_cu_ctxs[i].ctx != ctx)
		hp_cu_ctxs[i].gen = ++gens;
	if (!full)
		hp_cu_ctxs[i].ctx = ctx, hp_cu_ctxs[i].dev = d, hp_cu_ctxs[i].alive = 1;
	pthread_mutex_unlock(&hp_cu_own_mu);
	if (full)
		HP_LOG_ONCE(HP_LOG_WARN, "more than %d live CUDA contexts: "
			    "hostpin does not follow the ones beyond (a "
			    "block registered through one of them is not "
			    "sent back to pending when its device is reset)",
			    MAX_CTXS);
	return 1;
}

int hp_cu_ctx_ended(hp_CUcontext ctx) { return ctx_state(ctx) < 0; }

/* Mark ctx ended; met: by an end's hook, which sends its blocks back to
 * pending (ctx_ended), else by a driver call that found it ended (unmet
 * until a hook's walk). */
static void mark_ended(hp_CUcontext ctx, int met)
{
	pthread_mutex_lock(&hp_cu_own_mu);
	for (int i = 0; i < hp_cu_nctxs; i++) {
		struct hp_cu_ctx *c = &hp_cu_ctxs[i];
		if (c->ctx != ctx)
			continue;
		if (c->alive)
			c->alive = 0, c->gen = ++gens, c->unmet = !met;
		else if (met)
			c->unmet = 0;
	}
	pthread_mutex_unlock(&hp_cu_own_mu);
	/* relaxed: a stale known_ctx is only a context to push, which the
	 * table then refuses */
	hp_CUcontext k = ctx;
	atomic_compare_exchange_strong_explicit(&known_ctx, &k, NULL,
						memory_order_relaxed,
						memory_order_relaxed);
}

void hp_cu_mark_ended(hp_CUcontext ctx) { mark_ended(ctx, 0); }

void hp_cu_forget_known(void)
{
	atomic_store_explicit(&known_ctx, NULL, memory_order_relaxed);
}

/* Push a context that still lives: the one last known, else any other in
 * the table whose device's primary context is active.  1 if pushed. */
static int push_living(void)
{
	hp_CUcontext k = atomic_load_explicit(&known_ctx, memory_order_relaxed);
	if (k != NULL && ctx_state(k) >= 0 &&
	    hp_cu.cuCtxPushCurrent_v2(k) == HP_CUDA_SUCCESS) {
		hp_cu_entered_ctx = k;
		return 1;
	}
	for (int i = 0; i < MAX_CTXS; i++) {
		pthread_mutex_lock(&hp_cu_own_mu);
		hp_CUcontext c = i < hp_cu_nctxs && hp_cu_ctxs[i].alive ? hp_cu_ctxs[i].ctx : NULL;
		int dev = i < hp_cu_nctxs ? hp_cu_ctxs[i].dev : -1;
		pthread_mutex_unlock(&hp_cu_own_mu);
		if (i >= hp_cu_nctxs)
			break;
		unsigned flags = 0;
		int active = 0;
		if (c == NULL || c == k || dev < 0 ||
		    hp_cu.cuDevicePrimaryCtxGetState(dev, &flags, &active) !=
			HP_CUDA_SUCCESS ||
		    !active)
			continue;
		hp_CUresult r = hp_cu.cuCtxPushCurrent_v2(c);
		if (r == HP_CUDA_SUCCESS) {
			atomic_store_explicit(&known_ctx, c,
					      memory_order_relaxed);
			hp_cu_entered_ctx = c;
			return 1;
		}
		if (r == HP_CUDA_ERROR_CONTEXT_IS_DESTROYED ||
		    r == HP_CUDA_ERROR_INVALID_CONTEXT)
			hp_cu_mark_ended(c);
	}
	return 0;
}

/* Make a context current for a driver call; returns 1 if one was pushed
 * (pop it afterwards), 0 if the thread had one, -1 if none lives that
 * hostpin knows. */
int hp_cu_enter_ctx(void)
{
	return hp_cu_enter_ctx_as(NULL);
}

int hp_cu_enter_ctx_as(hp_CUcontext pref)
{
	hp_CUcontext cur = NULL;
	if (hp_cu.cuCtxGetCurrent(&cur) == HP_CUDA_SUCCESS && cur != NULL) {
		if (hp_cu_learn_ctx(cur))
			atomic_store_explicit(&known_ctx, cur,
					      memory_order_relaxed);
		hp_cu_entered_ctx = cur;
		return 0;
	}
	if (pref != NULL && ctx_state(pref) > 0 &&
	    hp_cu.cuCtxPushCurrent_v2(pref) == HP_CUDA_SUCCESS) {
		hp_cu_entered_ctx = pref;
		return 1;
	}
	return push_living() ? 1 : -1;
}

void hp_cu_leave_ctx(int pushed)
{
	hp_CUcontext c;
	if (pushed == 1)
		hp_cu.cuCtxPopCurrent_v2(&c);
}


/* A context ended: never push it again; readiness is asked again (a
 * primary context must be active); its blocks go back to pending (the
 * caller's policy, told through ended[]). */
static int ctx_ended(hp_CUcontext ctx, uintptr_t *ended, int n)
{
	atomic_fetch_add_explicit(&hp_cu_ctx_epoch, 1, memory_order_relaxed);
	mark_ended(ctx, 1);
	hp_cu_unready();
	ended[n] = (uintptr_t)ctx;
	return n + 1;
}

int hp_cuda_ctxs_reset(int dev, uintptr_t *ended)
{
	hp_CUcontext lost[MAX_CTXS];
	int n = 0, k = 0;
	pthread_mutex_lock(&hp_cu_own_mu);
	/* and those a driver call found ended already (unmet): the driver
	 * ended them before this hook learnt of it, their blocks are still
	 * flagged registered (reset-refused-piece-stale-89201737) */
	for (int i = 0; i < hp_cu_nctxs; i++)
		if (hp_cu_ctxs[i].dev == dev &&
		    (hp_cu_ctxs[i].alive || hp_cu_ctxs[i].unmet))
			lost[n++] = hp_cu_ctxs[i].ctx;
	pthread_mutex_unlock(&hp_cu_own_mu);
	/* the staging ring is made again (its context may not be in the
	 * table: learnt only when a block was registered) */
	atomic_fetch_add_explicit(&hp_cu_ctx_epoch, 1, memory_order_relaxed);
	/* readiness is asked again all the same; the contexts of other
	 * devices, and the one last known among them, stay */
	hp_cu_unready();
	for (int i = 0; i < n; i++)
		k = ctx_ended(lost[i], ended, k);
	return k;
}

int hp_cuda_ctxs_released(int dev, uintptr_t *ended)
{
	unsigned flags = 0;
	int active = 1;
	if (atomic_load_explicit(&hp_cu_loaded, memory_order_acquire) > 0 &&
	    hp_cu.cuDevicePrimaryCtxGetState(dev, &flags, &active) ==
		HP_CUDA_SUCCESS &&
	    !active)
		return hp_cuda_ctxs_reset(dev, ended); /* the last reference */
	return 0;
}

int hp_cuda_ctx_end(hp_CUcontext ctx, uintptr_t *ended)
{
	atomic_fetch_add_explicit(&hp_cu_ctx_epoch, 1, memory_order_relaxed);
	return ctx != NULL ? ctx_ended(ctx, ended, 0) : 0;
}

void hp_cuda_learn_ctx(void)
{
	hp_CUcontext cur = NULL;
	if (atomic_load_explicit(&hp_cu_loaded, memory_order_acquire) > 0 &&
	    !hp_cu_driver_gone() &&
	    hp_cu.cuCtxGetCurrent(&cur) == HP_CUDA_SUCCESS && hp_cu_learn_ctx(cur))
		atomic_store_explicit(&known_ctx, cur, memory_order_relaxed);
}

int hp_cuda_ctx_push(uintptr_t ctx, uint64_t gen)
{
	if (ctx == 0 || hp_in_child || !hp_cu_load())
		return -1;
	if (hp_cuda_ctx_current() == ctx)
		return 0;
	/* not one that ended since the caller learnt it (gen): never pushed
	 * again (a destroyed context's handle may be reused) */
	if (hp_cuda_ctx_gen(ctx, 0) != gen ||
	    hp_cu.cuCtxPushCurrent_v2((hp_CUcontext)ctx) != HP_CUDA_SUCCESS)
		return -1;
	return 1;
}

/* The program's calls that may end a context, by device (modulo
 * END_DEVS): how many began (before the driver has them), how many are in
 * progress (until hostpin dealt with the end).  A registration made
 * across one, or while one is in progress, may live in the context made
 * again after the end, though made through (and counted as of) the one
 * that ended, which hostpin marks only once the driver's call returned;
 * cuda_pin and hp_cuda_ring_register undo it (hp_cu_watch_ended; issue 39
 * item 5, reset-chunk-96575277, reset-ring-registered-96581863). */
#define END_DEVS 16
static _Atomic unsigned ends_begun[END_DEVS];
static _Atomic int ends_active[END_DEVS];

int hp_cuda_end_begins(int dev, struct CUctx_st *ctx)
{
	if (ctx != NULL)
		dev = hp_cuda_ctx_dev((uintptr_t)ctx);
	for (int i = 0; i < END_DEVS; i++)
		if (dev < 0 || dev % END_DEVS == i) {
			atomic_fetch_add(&ends_active[i], 1);
			atomic_fetch_add(&ends_begun[i], 1);
		}
	hp_cu_settle_block();
	return dev;
}

void hp_cuda_end_done(int dev)
{
	hp_cu_settle_unblock();
	for (int i = 0; i < END_DEVS; i++)
		if (dev < 0 || dev % END_DEVS == i)
			atomic_fetch_sub(&ends_active[i], 1);
}

unsigned hp_cu_ends_begun(int dev, int *active)
{
	unsigned n = 0;
	*active = 0;
	for (int i = 0; i < END_DEVS; i++)
		if (dev < 0 || dev % END_DEVS == i) {
			*active |= atomic_load(&ends_active[i]) > 0;
			n += atomic_load(&ends_begun[i]);
		}
	return n;
}

uint64_t hp_cu_watch_begin(struct hp_cu_watch *w, hp_CUcontext ctx)
{
	int active;
	w->ctx = ctx;
	w->dev = hp_cuda_ctx_dev((uintptr_t)ctx);
	w->begun = hp_cu_ends_begun(w->dev, &active);
	w->gen = hp_cuda_ctx_gen((uintptr_t)ctx, 0);
	return w->gen;
}

int hp_cu_watch_ended(const struct hp_cu_watch *w)
{
	int active;
	return (w->gen && hp_cuda_ctx_gen((uintptr_t)w->ctx, 0) != w->gen) ||
	       hp_cu_ends_begun(w->dev, &active) != w->begun || active;
}

int hp_cuda_ctx_dev(uintptr_t ctx)
{
	int dev = -1;
	pthread_mutex_lock(&hp_cu_own_mu);
	for (int i = 0; i < hp_cu_nctxs && dev < 0; i++)
		if (hp_cu_ctxs[i].ctx == (hp_CUcontext)ctx && hp_cu_ctxs[i].alive)
			dev = hp_cu_ctxs[i].dev;
	pthread_mutex_unlock(&hp_cu_own_mu);
	return dev;
}

void hp_cuda_ctx_pop(int pushed)
{
	hp_CUcontext c;
	if (pushed == 1)
		hp_cu.cuCtxPopCurrent_v2(&c);
}
