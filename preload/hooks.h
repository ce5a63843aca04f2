/* What every hook on a device runtime, driver or loader calls: the one
 * guard that lets the outermost hook act and the ones it reaches inside
 * (the runtime calling the driver) pass straight through; the one step-aside
 * sequence for the program's own registrations and imports; and the one
 * copy policy (copy.c). */
#ifndef HP_HOOKS_H
#define HP_HOOKS_H

#include <dlfcn.h>

#include "backend/cuda_api.h"
#include "hp.h"

/* The guard every hook enters, hp_hook_enter and hp_hook_leave: hp.h. */

/* The program registers or imports [p, p+n) itself: step aside first (a
 * registration overlapping ours would fail), take the range back if its
 * call failed, and after it released one: was it ours, and is its own
 * registration over our blocks over?  Each runs guarded.  hp_step_aside:
 * nonzero when hostpin could not step aside (a copy in flight through its
 * registration there for too long, foreign.c): the hook then refuses the
 * program's call as memory already registered (712), after
 * hp_step_aside_failed. */
HP_HIDDEN int hp_step_aside(void *p, size_t n);
HP_HIDDEN void hp_step_aside_failed(void *p);
HP_HIDDEN void hp_step_aside_released(void *p);
/* foreign.c: 1 if p lies in a block of hostpin's that the program has not
 * registered itself (what hostpin registered there is hidden from it:
 * invariant 14).  Lock-free. */
HP_HIDDEN int hp_foreign_hides(const void *p);
/* What to ask the driver or runtime about p: p itself, or, where hostpin's
 * registration is hidden there, a page of hostpin's that nothing
 * registers, whose answer is the one for pageable memory. */
HP_HIDDEN void *hp_foreign_asked(void *p);

/* ---- copy.c: the copy policy, for every copy hook ----
 * Between hp_hook_enter and the real call, each host-side pointer goes to
 * hp_copy_host (which registers pending blocks before the copy runs); after
 * it, hp_copy_end keeps pageable-memory semantics (HOSTPIN_COPY=sync: wait
 * on the stream, not while it captures a graph) or tracks the copy with an
 * event per block (async), and calls hp_hook_leave. */
#define HP_COPY_RECS 8
typedef struct hp_copy {
	hp_rec_t *r[HP_COPY_RECS];
	int n, overflow; /* overflow: more blocks than r holds */
	int held; /* r[0..held) counted in flight (hp_hold_add) */
	unsigned pass[HP_COPY_RECS]; /* r[i]'s hp_hold_add token */
	unsigned all; /* overflow: hp_hold_add_all's token (0: none) */
	size_t bytes;
	/* nowait: hp_copy_host never waits for a block being stepped aside
	 * from or registered (the caller holds counts elsewhere: a batch's
	 * entries passed through); it lets go and sets blocked instead, and
	 * the caller waits with hp_copy_hold once it let its counts go */
	int nowait, blocked;
} hp_copy_t;
HP_HIDDEN void hp_copy_init(hp_copy_t *c);
HP_HIDDEN void hp_copy_host(hp_copy_t *c, const void *p, size_t n);
HP_HIDDEN void hp_copy_hold(hp_copy_t *c);
/* ptsz: stream 0 means the per-thread default stream.  ok: the call
 * succeeded. */
HP_HIDDEN void hp_copy_end(hp_copy_t *c, hp_cudaStream_t stream, int ptsz,
			   int ok);
/* A copy that is one of several of one program call (a batch's entries,
 * one stream): c's blocks (ok: it succeeded), held, move to into, which
 * ends them all later by one hp_copy_end; not ok, or into NULL: let go.
 * Leaves the hook to the caller. */
HP_HIDDEN void hp_copy_join(hp_copy_t *into, hp_copy_t *c, int ok);
/* The same for a synchronous copy entry point: no wait (it returns after
 * the copy), statistics only; calls hp_hook_leave. */
HP_HIDDEN void hp_copy_sync_end(hp_copy_t *c, int ok);
/* c's counts as a copy that may reach the driver with its blocks' memory
 * as it is (passing.c) let go: its plan never hands them over so. */
HP_HIDDEN void hp_copy_passing_end(hp_copy_t *c);
/* Whether a block of c is registered now, or being registered (busy): the
 * driver may have had a call made since with its memory as registered
 * memory (its DMA late: the call owes the program a wait). */
HP_HIDDEN int hp_copy_maybe_registered(const hp_copy_t *c);

/* The body of every copy hook, runtime and driver, sync and async: the
 * function to call (fnexpr, of type `type`, returning `rtype`), its
 * arguments, the statements that hand each host pointer to hp_copy_host
 * (HOSTS, using c_), and the statement that ends the copy (END, using c_
 * and the call's result e_).  0 is success for both APIs. */
/* A copy hook's body: inlined into each entry point that calls it, so that
 * a call hostpin does not follow (hp_hook_enter says no) forwards without
 * the body's frame (its registers saved and restored around nothing). */
#define HP_BODY static inline __attribute__((always_inline))

#define HP_COPY_BODY(fnexpr, type, rtype, args, HOSTS, END)                   \
	type fn_ = (type)(fnexpr);                                            \
	if (fn_ == NULL)                                                      \
		return HP_CUDA_ERROR_NOT_FOUND;                               \
	if (!hp_hook_enter())                                                 \
		return fn_ args;                                              \
	hp_copy_t c_;                                                         \
	hp_copy_init(&c_);                                                    \
	HOSTS;                                                                \
	rtype e_ = fn_ args;                                                  \
	END;                                                                  \
	return e_;

/* hooks/cudrv_lookup.c: for a driver entry point the driver returned (lookup by
 * cuGetProcAddress, cudaGetDriverEntryPoint or dlsym on its handle), the
 * wrapper to hand out instead, or fn itself if hostpin wraps none for it.
 * version/flags as cuGetProcAddress takes them; version 0 for a lookup of
 * the exact exported name. */
HP_HIDDEN void *hp_cudrv_wrap(const char *symbol, void *fn, int version,
			      unsigned long long flags);
/* hooks/cudart_lookup.c: the same for a runtime entry point found on a handle by
 * the caller at ra. */
HP_HIDDEN void *hp_cudart_wrap(const char *symbol, void *fn, const void *ra);
/* hooks_ze.c: the same for a Level Zero loader entry point found on a
 * handle (zeInit, zeInitDrivers, zeDriverGetExtensionFunctionAddress). */
HP_HIDDEN void *hp_ze_wrap(const char *symbol, void *fn);
HP_HIDDEN int hp_ze_wrapped_name(const char *name);
/* ze_copy.c: a driver's table getters (zeGetCommandListProcAddrTable,
 * zeGetCommandQueueProcAddrTable) found on its handle, and its
 * zeCommandListHostSynchronize: the wrapper, or fn. */
HP_HIDDEN int hp_ze_copy_wrapped_name(const char *name);
HP_HIDDEN void *hp_ze_copy_wrap(const char *name, void *fn);
HP_HIDDEN void *hp_ze_host_sync_wrap(void *fn);
/* 1 if hostpin wraps a driver / runtime entry point of this exported name. */
HP_HIDDEN int hp_cudrv_wrapped_name(const char *name);
HP_HIDDEN int hp_cudart_wrapped_name(const char *name);
/* unknown.c: for a driver copy entry point hostpin has no hook for, a
 * stub to hand out instead of fn: it calls fn, then waits for the
 * context while blocks are registered (pageable semantics).  fn itself
 * if no slot is left (hp_unknown_overflow set: registration is refused
 * from then on). */
HP_HIDDEN void *hp_unknown_wrap(const char *name, void *fn);
HP_HIDDEN int hp_unknown_is_stub(const void *p);
HP_HIDDEN extern _Atomic int hp_unknown_overflow;
/* coverage.c: 1 if name is a driver copy entry point that may touch host
 * memory and that hostpin has no hook for (a newer or older form). */
HP_HIDDEN int hp_coverage_unguarded(const char *name);
/* The host sides of a 3D batch (the driver's and the runtime's layout). */
HP_HIDDEN void hp_copy_host_ops(hp_copy_t *c,
				const hp_CUDA_MEMCPY3D_BATCH_OP *ops, size_t n);

/* policy/capture.c: a copy in several driver calls on stream s (staged, or direct
 * by pieces) is one call to the program, done before a capture on s begins
 * or captured whole (the driver's own copies are).  hp_capture_stream_enter:
 * 1 if no capture is beginning or in progress on s (hostpin saw), and none
 * will begin on s until hp_capture_stream_leave; 0 if one is (pass the
 * copy through whole).  A capture's begin on s, in any mode, sleeps until
 * the copies entered on s left. */
HP_HIDDEN int hp_capture_stream_enter(hp_cudaStream_t s);
HP_HIDDEN void hp_capture_stream_leave(hp_cudaStream_t s);
/* The same for a stream capturing now (any mode; a begin hostpin saw):
 * 1 and s's copy entered if it is, 0 if not.  Such a copy's calls are
 * copies on s alone, captured one node each; a capture's end on s waits
 * first for the copies entered there (hp_capture_end_wait, before the
 * driver's end), so the copy is captured whole. */
HP_HIDDEN int hp_capture_stream_enter_captured(hp_cudaStream_t s);
HP_HIDDEN void hp_capture_end_wait(hp_cudaStream_t s);
HP_HIDDEN void hp_capture_stream_fork_child(void);
/* A stream's identity, as the engine and the capture tables tell streams
 * apart (issue 39): the per-thread default stream (one handle for every
 * thread, CU_STREAM_PER_THREAD) is the calling thread's own; the legacy
 * stream's two handles (0, CU_STREAM_LEGACY) are one; any other stream is
 * its handle. */
HP_HIDDEN uintptr_t hp_stream_key(hp_cudaStream_t s);

#endif
