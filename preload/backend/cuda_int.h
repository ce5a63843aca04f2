/* What the CUDA backend's three files share (backend_cuda.c: the driver,
 * its readiness, registration; backend_cuda_ctx.c: the contexts learnt,
 * pushed and ended; backend_cuda_calls.c: the capture gate, copy fences,
 * staged copies).  Not for anyone else: the rest of hostpin goes
 * through backend.h. */
#ifndef HP_CUDA_INT_H
#define HP_CUDA_INT_H
#include <pthread.h>

#include "cuda_api.h"
#include "../hp.h"

/* The driver's entry points registration needs, resolved from the loaded
 * driver (hp_cu_load). */
struct hp_cu_fns {
#define HP_FN_FIELD(name, R, params) hp_##name##_t name;
	HP_CU_DRIVER_FNS(HP_FN_FIELD, hp_CUresult)
#undef HP_FN_FIELD
};
/* The copy fences' entry points (hp_cuda_copy_fns). */
struct hp_cu_pfns {
#define HP_FN_FIELD(name, R, params) hp_##name##_t name;
	HP_CU_POLICY_FNS(HP_FN_FIELD, hp_CUresult)
	HP_CU_POLICY_OPT_FNS(HP_FN_FIELD, hp_CUresult, int, int)
#undef HP_FN_FIELD
};
HP_HIDDEN extern struct hp_cu_fns hp_cu;
HP_HIDDEN extern struct hp_cu_pfns hp_cu_pf;
/* 0: driver not seen loaded yet; 1: entry points resolved; -1: unusable */
HP_HIDDEN extern _Atomic int hp_cu_loaded;
/* hp_cu_pf resolved from the driver loaded now (0: not yet); the staged
 * copies' entry points: 0 not resolved, 1 usable, -1 not. */
HP_HIDDEN extern _Atomic int hp_cu_pf_state;
HP_HIDDEN extern _Atomic int hp_cu_sf_state;
/* Contexts that ended, drivers forgotten (unloaded): the staging ring is
 * made again after either. */
HP_HIDDEN extern _Atomic unsigned hp_cu_ctx_epoch;
/* backend_cuda_ctx.c: how many calls that may end a context of device dev
 * (-1: any) began (hp_cuda_end_begins); *active: one is in progress */
HP_HIDDEN unsigned hp_cu_ends_begun(int dev, int *active);
/* backend_cuda_calls.c: a context's end lets no settle wait begin and
 * waits for those running (block), until it is done (unblock). */
HP_HIDDEN void hp_cu_settle_block(void);
HP_HIDDEN void hp_cu_settle_unblock(void);
/* backend_cuda_ctx.c: a registration's watch on the end of the context
 * it goes through (ctx, current on this thread): begun before it, asked
 * after it (cuda_pin's pieces, hp_cuda_ring_register's rings).  Begun: the
 * calls that may end its device's contexts begun, read first (one the
 * driver had before the registration is learnt by hostpin only once it
 * returned: the generation unchanged until then), then ctx's generation,
 * returned (hp_cuda_ctx_gen; 0: not in the table alive).  Ended: 1 if ctx
 * may have ended since, the registration perhaps held by the context made
 * again under the same handle (its generation changed, a call that may
 * end it began, or one is in progress). */
struct hp_cu_watch {
	hp_CUcontext ctx;
	int dev;
	unsigned begun;
	uint64_t gen;
};
HP_HIDDEN uint64_t hp_cu_watch_begin(struct hp_cu_watch *w, hp_CUcontext ctx);
HP_HIDDEN int hp_cu_watch_ended(const struct hp_cu_watch *w);
/* backend_cuda_ctx.c: the table holds ctx ended (not alive again) */
HP_HIDDEN int hp_cu_ctx_ended(hp_CUcontext ctx);
HP_HIDDEN extern _Atomic unsigned hp_cu_drv_gen;
/* The table of contexts learnt, and its length, under hp_cu_own_mu.  A
 * context that ended is marked so and never pushed again. */
struct hp_cu_ctx {
	hp_CUcontext ctx;
	int dev;
	int alive;
	unsigned gen; /* its ends (a primary context comes back the same) */
	/* marked ended by a driver call it failed (hp_cu_mark_ended), its
	 * blocks not yet sent back to pending by an end's hook: the reset
	 * or release of its device still walks it (fuzz cases/reset-
	 * refused-piece-stale-89201737); its slot is not reused meanwhile */
	int unmet;
};
HP_HIDDEN extern struct hp_cu_ctx hp_cu_ctxs[HP_CUDA_MAX_CTXS];
HP_HIDDEN extern int hp_cu_nctxs;
HP_HIDDEN extern pthread_mutex_t hp_cu_own_mu;

/* 1 if the driver is loaded and its entry points resolved (loads them the
 * first time); 1 if the driver was unloaded since (forgotten then). */
HP_HIDDEN int hp_cu_load(void);
HP_HIDDEN int hp_cu_driver_gone(void);
/* Learn ctx as a context the program had current (1: known alive); make
 * a living context current on this thread if it has none (1: pushed, for
 * hp_cu_leave_ctx; -1: none to push); undo that. */
HP_HIDDEN int hp_cu_learn_ctx(hp_CUcontext ctx);
HP_HIDDEN int hp_cu_enter_ctx(void);
/* The same, but a thread with no context pushes pref first while it
 * lives (the pieces of one block, registered one call each by a thread
 * with none, all go through the context of the first: its owner). */
HP_HIDDEN int hp_cu_enter_ctx_as(hp_CUcontext pref);
HP_HIDDEN void hp_cu_leave_ctx(int pushed);
/* What hp_cu_enter_ctx made current on this thread (the context a pin
 * went through). */
HP_HIDDEN extern HP_TLS hp_CUcontext hp_cu_entered_ctx;
/* ctx ended (seen in a driver error): never pushed again; its blocks
 * wait for its device's end hook (unmet).  Forget the context last known
 * (the driver was forgotten). */
HP_HIDDEN void hp_cu_mark_ended(hp_CUcontext ctx);
HP_HIDDEN void hp_cu_forget_known(void);
/* backend_cuda.c: readiness is asked again (a context ended). */
HP_HIDDEN void hp_cu_unready(void);
#endif
