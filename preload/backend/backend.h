/* The backend contract: what "pinning" a range means.  One file per backend;
 * the pin policy (pin.c) and the cache are the only callers.  One return
 * convention: a predicate (probe, ready) returns 1 for yes; an operation
 * (pin, unpin) returns 0 for success, else an errno.
 *
 * A backend calls nothing above it (tests/preload/cases/006-house_layers.sh
 * checks): what it finds out that the policy must act on (its driver was
 * unloaded) it reports in hp_backend_events, which the policy reads and
 * clears right after each backend call it makes (hp_backend_events_act). */
#ifndef HP_BACKEND_H
#define HP_BACKEND_H

#include <stddef.h>
#include <stdint.h>

struct hp_rec;
struct CUctx_st;
struct CUstream_st;

typedef struct hp_backend {
	const char *name;
	/* 1 if this backend can work in this process (driver present...). */
	int (*probe)(void);
	/* 1 if a range can be pinned now; 0 means "mark it pending". */
	int (*ready)(void);
	/* Pin / unpin exactly [base, base+len).  0, or an errno with *why set
	 * to a short static reason ("RLIMIT_MEMLOCK", a driver error name).
	 * EAGAIN from pin means "not now": the range is marked pending. */
	int (*pin)(void *base, size_t len, const char **why);
	int (*unpin)(void *base, size_t len, const char **why);
	/* In a forked child: forget device state, make no device call. */
	void (*fork_child)(void);
	/* Before a block is unpinned or reused: wait for the device copies
	 * that may still use it (HOSTPIN_COPY=async).  NULL: nothing to do. */
	void (*quiesce)(struct hp_rec *r);
	/* 1 if device work queued may still use [base, base+len) and the
	 * backend cannot wait for it (Level Zero copies appended, not yet
	 * run): the block is not cached for reuse; its release waits
	 * (unpin answers EAGAIN).  NULL: never. */
	int (*busy)(const void *base, size_t len);
	/* Who owns the registration this thread's last successful pin made
	 * (the CUDA context), stored with the block so that the end of that
	 * owner sends it back to pending.  NULL: nothing outlives its owner. */
	uintptr_t (*owner)(void);
	/* The host NUMA node nearest the device (-1 if unknown, not ready, or
	 * in a forked child).  NULL: no device. */
	int (*device_node)(void);
	/* HOSTPIN_* flags a pinned range gets (HOSTPIN_LOCKED...). */
	unsigned pin_flags;
} hp_backend_t;

extern const hp_backend_t hp_backend_none, hp_backend_mlock, hp_backend_cuda,
    hp_backend_level_zero, hp_backend_auto;
/* The backend HOSTPIN_BACKEND and HOSTPIN_REGISTER_DEVICE ask for. */
const hp_backend_t *hp_backend_select(void);
/* The device backend auto chose, or NULL while none is ready. */
const hp_backend_t *hp_backend_auto_chosen(void);
/* What a backend found out that the policy must act on: bits set by
 * hp_backend_report, taken by the policy (pin.c, hp_backend_events_act). */
#define HP_EV_DEVICE_LOST 1u /* the driver or loader was unloaded: every
			      * registration made through it died */
extern _Atomic unsigned hp_backend_events __attribute__((visibility("hidden")));
void hp_backend_report(unsigned ev);
/* Note in the counters (hp_counters.backend, for the reports and `hostpin
 * status`) how far the backend got: HP_BK_* flags, or b's id as auto's
 * choice; hp_backend_note_exit: whether a driver was loaded by now. */
void hp_backend_note(const hp_backend_t *b, unsigned flags);
/* At initialisation: the backend in use and the settings that decide what
 * is pinned (mlock and none are ready at once). */
void hp_backend_note_set(void);
void hp_backend_note_exit(void);
/* A CUDA driver / the Level Zero loader is loaded in the process. */
int hp_cuda_loaded(void);
int hp_ze_loaded(void);
/* backend_cuda_ctx.c and backend_cuda.c, for the CUDA hooks: note the
 * context current on this thread; the loaded driver's own definition of name (NULL if none); whether
 * fn lies in the driver's object (libcuda.so*, or HOSTPIN_CUDA_LIB's). */
void hp_cuda_learn_ctx(void);
void *hp_cuda_sym(const char *name);
int hp_cuda_in_driver(const void *fn);
/* backend_cuda_ctx.c, for the hooks on entry points that end a context (through
 * their policy, pin.c): the primary context of dev was reset; the program
 * released it (ended if it is no longer active); ctx was destroyed.  Each
 * marks the contexts that ended, stores them (backend->owner values) in
 * ended[] (HP_CUDA_MAX_CTXS) and returns how many; the policy sends the
 * blocks registered through them back to pending. */
#define HP_CUDA_MAX_CTXS 64
int hp_cuda_ctxs_reset(int dev, uintptr_t *ended);
int hp_cuda_ctxs_released(int dev, uintptr_t *ended);
int hp_cuda_ctx_end(struct CUctx_st *ctx, uintptr_t *ended);
/* pin.c: the same, for the hooks: the policy's side of the three above. */
void hp_cuda_device_reset(int dev);
void hp_cuda_device_released(int dev);
void hp_cuda_ctx_destroyed(struct CUctx_st *ctx);
/* adopt.c, for the hooks, before a call that may end a context: every
 * block's last-copy event is waited for and dropped (it may belong to the
 * context that ends, whoever registered the block). */
void hp_cuda_ctx_ending(void);
/* backend_cuda_calls.c, the copy fences the copy policy (copy.c) uses: resolve
 * the driver's stream and event entry points (1 waits and events, 2 waits
 * only, -1 none); whether s captures a graph; wait for s; make the event of
 * r's last copy one recorded on s now (0, or -1: wait on s instead).  The
 * CUDA backend's quiesce waits for that event; hp_cuda_forget drops it
 * without waiting (the context or driver that made it ended). */
int hp_cuda_copy_fns(void);
int hp_cuda_capturing(struct CUstream_st *s);
void hp_cuda_wait_stream(struct CUstream_st *s);
int hp_cuda_wait_stream_quiet(struct CUstream_st *s);
/* id: s's identity (the copy engine's hp_stream_key: a per-thread default
 * stream is its thread's), what tells the last copy's stream apart. */
int hp_cuda_track_event(struct hp_rec *r, struct CUstream_st *s, uintptr_t id);
/* Set (never cleared) by hp_cuda_track_event before the first event it
 * makes a block's: until then no block has a last-copy event (under
 * HOSTPIN_COPY=sync, the default, never), and hp_settle_range (maps.c)
 * skips its walk. */
extern _Atomic int hp_cuda_events_tracked __attribute__((visibility("hidden")));
void hp_cuda_quiesce(struct hp_rec *r);
/* Outside the capture gate, before a wait in it (track_event, quiesce):
 * wait for r's last copy unless on the stream keyed key (0: any), this
 * thread in relaxed capture mode; nothing where the driver has no such
 * mode (issue 39). */
void hp_cuda_settle(struct hp_rec *r, uintptr_t key);
void hp_cuda_forget(struct hp_rec *r);
/* backend_cuda_calls.c, for each copy's plan (plan.c): the driver calls of the
 * copy engine.  hp_cuda_stage_fns: 1 if the driver has what staging needs
 * (resolved once per loaded driver), else 0.  hp_cuda_ctx_current: the
 * context current on this thread, 0 if none (staging never makes one).
 * hp_cuda_ctx_epoch: changes whenever a context ends or the driver is
 * forgotten (what was registered and created through it died).
 * hp_cuda_host_known: 1 if the driver knows the host address p (registered
 * or allocated through it by anyone, managed): such memory is not staged.
 * hp_cuda_ring_register: register [p, p+n) through ctx, current on this
 * thread, while it is what it was at generation gen (hp_cuda_ctx_gen):
 * HP_RING_CTX_ENDED if it ended before or during the registration (then
 * nothing of it is left registered: one the driver may hold in the context
 * made again under the same handle is undone, as cuda_pin's pieces are).
 * The rest: the driver's own entry points, returning its CUresult. */
int hp_cuda_stage_fns(void);
uintptr_t hp_cuda_ctx_current(void);
unsigned hp_cuda_ctx_epoch(void);
/* What the context ctx (current on this thread: current, learnt then; or
 * learnt before) is now:
 * a value that changes when it ends (a primary context reset or released
 * comes back as the same handle) or the driver is unloaded; 0 if it is
 * not known alive.  What was made through it lives while this stays. */
uint64_t hp_cuda_ctx_gen(uintptr_t ctx, int current);
/* backend_cuda_ctx.c: the device of ctx as learnt (hp_cuda_ctx_gen with
 * current), -1 if not known; no driver call. */
int hp_cuda_ctx_dev(uintptr_t ctx);
/* For the hooks, before a call that may end device dev's contexts (-1:
 * any device's) or ctx (not NULL), returning the device to pass to
 * hp_cuda_end_done after the call and the policy's side of its end
 * (whatever it returned): a registration the driver has across it, or
 * while it is in progress, is undone (backend_cuda.c's cuda_pin, a
 * staging ring's: hp_cuda_ring_register). */
int hp_cuda_end_begins(int dev, struct CUctx_st *ctx);
void hp_cuda_end_done(int dev);
/* backend_cuda_ctx.c: make ctx current on this thread for hostpin's own
 * calls (a thread of hostpin's: the ring's growth), if it is still what
 * it was at generation gen (hp_cuda_ctx_gen): 1 if pushed (undo with
 * hp_cuda_ctx_pop), 0 if it was current here, -1 if it ended or the
 * driver refused.  Never a context the program did not have. */
int hp_cuda_ctx_push(uintptr_t ctx, uint64_t gen);
void hp_cuda_ctx_pop(int pushed);
/* backend_cuda.c: this thread's next pins go through ctx (a block's owner,
 * backend->owner) while it lives, whatever context is current: a part of
 * a registered block pinned again (a purge, a partial unmap) belongs to
 * the context of the rest.  0: as usual. */
void hp_cuda_pin_as(uintptr_t ctx);
/* backend_cuda.c: 1 if this thread's last pins, back to back, made
 * [base, base+len) through one context that lives now at the generation
 * it had then (hp_cuda_ctx_gen): no context end since killed a piece of
 * it; else 0 (not known). */
int hp_cuda_pin_intact(uintptr_t base, size_t len);
/* The context stream s belongs to (cuStreamGetCtx); cur, the current
 * one, for the default streams or when the driver cannot say. */
uintptr_t hp_cuda_stream_ctx(struct CUstream_st *s, uintptr_t cur);
int hp_cuda_host_known(const void *p);
/* The driver's memory type of p (CU_MEMORYTYPE_HOST 1, DEVICE 2, ...), 0
 * where it does not know p (pageable memory) or cannot say; after
 * hp_cuda_stage_fns. */
unsigned hp_cuda_mem_type(const void *p);
/* Wait for every stream of this thread's current context
 * (cuCtxSynchronize), not while a capture forbids it: 0 if waited, -1 if
 * not (no driver, no context, a capture). */
int hp_cuda_wait_context(void);
/* 0 if the driver says [d, d+n) runs past the end of the device
 * allocation holding d (it would refuse such a copy whole); else 1. */
int hp_cuda_dev_fits(uintptr_t d, size_t n);
#define HP_RING_CTX_ENDED (-2)
int hp_cuda_ring_register(void *p, size_t n, uintptr_t ctx, uint64_t gen);
/* Unregister the ring at p (through a context hostpin knows): 0, or the
 * driver's error (CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED also when the
 * driver that registered it is gone), -1 if refused without a call (a
 * capture in progress, a forked child): then it may still be
 * registered. */
int hp_cuda_ring_unregister(void *p);
int hp_cuda_htod_async(uintptr_t d, const void *h, size_t n,
		       struct CUstream_st *s);
int hp_cuda_dtoh_async(void *h, uintptr_t d, size_t n, struct CUstream_st *s);
struct hp_CUDA_MEMCPY2D;
/* 2D copies (cuMemcpy2DAsync_v2): hp_cuda_2d_fn: 1 if the driver has it. */
int hp_cuda_2d_fn(void);
int hp_cuda_2d_async(const struct hp_CUDA_MEMCPY2D *p, struct CUstream_st *s);
/* 3D copies (cuMemcpy3DAsync_v2): a layer of a 3D CUDA array at a time. */
struct hp_CUDA_MEMCPY3D;
int hp_cuda_3d_fn(void);
int hp_cuda_3d_async(const struct hp_CUDA_MEMCPY3D *p, struct CUstream_st *s);
/* 1D array copies (cuMemcpyHtoAAsync_v2, cuMemcpyAtoHAsync_v2): 1 if the
 * driver has both; n bytes between host memory h and the array a from
 * byte off, H2D (htod) or D2H, on s. */
int hp_cuda_array_1d_fns(void);
int hp_cuda_array_1d_async(int htod, void *a, size_t off, void *h, size_t n,
			   struct CUstream_st *s);
/* A CUDA array's geometry as the driver describes it
 * (cuArray3DGetDescriptor_v2, else cuArrayGetDescriptor_v2): es, bytes
 * per element (a channel's bytes times the channels); w, h, d: its extent
 * in elements (h 0: 1D, d 0: 2D).  0, or -1 if the driver cannot say or
 * its format is not one hostpin knows (logged once): copies with it go to
 * the driver as they are.  After hp_cuda_stage_fns. */
struct hp_cuda_array {
	size_t es, w, h, d;
};
int hp_cuda_array_geom(void *a, struct hp_cuda_array *g);
int hp_cuda_event_new(void **ev);
int hp_cuda_event_record(void *ev, struct CUstream_st *s);
int hp_cuda_event_wait(void *ev);
/* 0 if ev completed, else not (the driver's answer; no wait). */
int hp_cuda_event_query(void *ev);
int hp_cuda_event_free(void *ev);
int hp_cuda_stream_wait(struct CUstream_st *s);
/* backend_cuda_calls.c, the fork child handler: the fence locks are free again
 * (a thread of the parent may have held one at the fork; it does not
 * exist here). */
void hp_cuda_fence_fork_child(void);
/* coverage.c: non-zero, with *why set, when registering must be refused: a
 * loaded object calls a driver copy entry point hostpin does not guard by a
 * linked reference (unknown.c follows looked-up ones); 0 when
 * every one is guarded, the backend registers nothing with a device, or
 * HOSTPIN_COVERAGE=ignore. */
int hp_coverage_refuses(const hp_backend_t *b, const char **why);
/* Look at the loaded objects again if blocks are registered (the check
 * unregisters them if it newly fails); and whether the last look failed. */
void hp_coverage_poll(void);
int hp_coverage_bad(void);
/* backend_cuda_calls.c: the gate of the driver calls a CUDA graph capture
 * prohibits (capture.c counts the captures).  hp_capture_busy: one is in
 * progress that prohibits this thread's calls.  hp_capture_enter: 1 if such
 * a call may be made now (then hp_capture_leave after it), 0 if not.
 * hp_cuda_gate_close counts a global capture, hp_cuda_gate_wait waits for
 * the calls already inside the driver; hp_cuda_gate_open uncounts one;
 * hp_cuda_gate_local(+1/-1) counts a thread-local capture of this thread. */
int hp_capture_busy(void);
int hp_capture_enter(void);
void hp_capture_leave(void);
/* hp_capture_enter for a sequence of calls that must not be cut by a
 * capture (the pieces of a background registration, and their undo): 1 if
 * held (then hp_capture_unhold), 0 if not now; calls between enter
 * without a new look. */
int hp_capture_hold(void);
void hp_capture_unhold(void);
/* This thread holds the gate: its calls may be made though a global
 * capture is counted (hp_capture_busy), whose begin waits for the hold. */
int hp_capture_held(void);
void hp_cuda_gate_close(void);
void hp_cuda_gate_wait(void);
void hp_cuda_gate_open(void);
void hp_cuda_gate_local(int d);
/* capture.c, for the hooks on the begin and end entry points:
 * hp_capture_begin before the driver's begin (returns what
 * hp_capture_begin_failed takes if that failed), hp_capture_end after the
 * driver's end, with its result (outermost hook, guarded: adopts pending
 * blocks and retries deferred releases once no capture is left). */
int hp_capture_begin(struct CUstream_st *s, int mode);
void hp_capture_begin_failed(struct CUstream_st *s, int counted);
void hp_capture_end(struct CUstream_st *s, int result);
/* pin.c: act on the events the backends reported (hp_backend_events):
 * after each backend call the policy makes, and in the hooks after theirs. */
void hp_backend_events_act(void);
/* pin.c: release the blocks whose unregistration was deferred (a capture
 * was in progress, or no context could be made current), if it can be
 * done now. */
void hp_retry_deferred(void);
/* The same, only if some block waits because a driver freed it inside one
 * of its own calls, and not from inside one now (wrap_malloc.c). */
void hp_retry_deferred_driver(void);

#endif
