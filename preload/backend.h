/* The backend contract: what "pinning" a range means.  One file per backend;
 * the pin policy (pin.c) and the cache are the only callers.  Every
 * function returns 0 for success. */
#ifndef HP_BACKEND_H
#define HP_BACKEND_H

#include <stddef.h>
#include <stdint.h>

struct hp_rec;
struct CUctx_st;
struct CUstream_st;

typedef struct hp_backend {
	const char *name;
	/* 0 if this backend can work in this process (driver present...). */
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
	/* Who owns the registration this thread's last successful pin made
	 * (the CUDA context), stored with the block so that the end of that
	 * owner sends it back to pending.  NULL: nothing outlives its owner. */
	uintptr_t (*owner)(void);
	/* HOSTPIN_* flags a pinned range gets (HOSTPIN_LOCKED...). */
	unsigned pin_flags;
} hp_backend_t;

extern const hp_backend_t hp_backend_none, hp_backend_mlock, hp_backend_cuda,
    hp_backend_level_zero, hp_backend_auto;
/* The backend HOSTPIN_BACKEND and HOSTPIN_REGISTER_DEVICE ask for. */
const hp_backend_t *hp_backend_select(void);
/* The device backend auto chose, or NULL while none is ready. */
const hp_backend_t *hp_backend_auto_chosen(void);
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
/* backend_cuda.c, for the CUDA hooks: note the context current on this
 * thread; the loaded driver's own definition of name (NULL if none); whether
 * fn lies in the driver's object (libcuda.so*, or HOSTPIN_CUDA_LIB's). */
void hp_cuda_learn_ctx(void);
void *hp_cuda_sym(const char *name);
int hp_cuda_in_driver(const void *fn);
/* backend_cuda.c: the host NUMA node nearest the process's CUDA device,
 * -1 if unknown or the driver is not ready. */
int hp_cuda_device_node(void);
/* copy.c: the CUDA copy policy's quiesce; forget the driver's entry points
 * (it was unloaded). */
void hp_cuda_quiesce(struct hp_rec *r);
void hp_copy_forget_driver(void);
/* pin.c: the device behind the backend was unloaded: every block registered
 * with it goes back to pending, without a call into it. */
void hp_device_lost(void);
/* backend_cuda.c, for the hooks on entry points that end a context: the
 * primary context of dev was reset; the program released it (ended if it
 * is no longer active); ctx was destroyed.  Each sends the blocks
 * registered through the context that ended back to pending. */
void hp_cuda_device_reset(int dev);
void hp_cuda_device_released(int dev);
void hp_cuda_ctx_destroyed(struct CUctx_st *ctx);
/* copy.c: the CUDA copy policy's quiesce; and its forgetting of the copies
 * of a context that ended (their events died with it: nothing to wait). */
void hp_cuda_forget(struct hp_rec *r);
/* copy.c, the fork child handler: the pair locks are free again (a thread
 * of the parent may have held one at the fork; it does not exist here). */
void hp_copy_fork_child(void);
/* coverage.c: 0 if every copy entry point the loaded objects carry is one
 * hostpin guards (or the backend registers nothing with a device, or
 * HOSTPIN_COVERAGE=ignore); else non-zero with *why set. */
int hp_coverage_ok(const hp_backend_t *b, const char **why);
/* Look at the loaded objects again if blocks are registered (the check
 * unregisters them if it newly fails); and whether the last look failed. */
void hp_coverage_poll(void);
int hp_coverage_bad(void);
/* capture.c: CUDA graph captures in progress in the process (global or
 * thread-local mode).  hp_capture_busy: one is.  hp_capture_enter: 1 if a
 * driver call that a capture prohibits may be made now (then
 * hp_capture_leave after it), 0 if not.  For the hooks on the begin and end
 * entry points: hp_capture_begin before the driver's begin (returns what
 * hp_capture_begin_failed takes if that failed), hp_capture_end after the
 * driver's end, with its result (outermost hook, guarded: adopts pending
 * blocks and retries deferred releases once no capture is left). */
int hp_capture_busy(void);
int hp_capture_enter(void);
void hp_capture_leave(void);
int hp_capture_begin(struct CUstream_st *s, int mode);
void hp_capture_begin_failed(struct CUstream_st *s, int counted);
void hp_capture_end(struct CUstream_st *s, int result);
/* pin.c: release the blocks whose unregistration was deferred (a capture
 * was in progress, or no context could be made current), if it can be
 * done now. */
void hp_retry_deferred(void);

#endif
