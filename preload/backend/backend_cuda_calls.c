/* CUDA backend: the driver calls the policy and the copy engine ask of it
 * (backend.h's hp_cuda_*): the capture gate (invariant 13) and the copy
 * fences (copy.c decides when); the staged copies' DMA, events and
 * contexts: backend_cuda_stage.c.  The driver's own definitions,
 * resolved once per loaded driver; finding the driver, its contexts and
 * registering ranges: backend_cuda.c. */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>

#include "cuda_api.h"
#include "../hostpin.h"
#include "../hp.h"
#include "../record.h"
#include "../base/resolve.h"
#include "../base/symtab.h"
#include "cuda_int.h"

/* ---- the capture gate (invariant 13; capture.c counts the captures) ----
 * While a stream captures a CUDA graph, the driver fails some "unsafe"
 * calls (registering and unregistering host memory, waiting on a stream or
 * an event), and the failure invalidates the capture: in global mode any
 * thread's, in thread-local mode only the capturing thread's, in relaxed
 * mode none (cudaStreamCaptureMode).  Such a call runs between
 * hp_capture_enter and hp_capture_leave.  A global capture's begin counts
 * itself first, then waits for the calls already inside the driver to
 * return (a Dekker pair on two sequentially consistent counters), so that
 * none reaches the driver once the capture began.  A thread-local capture
 * is counted in its own thread only (tl_caps: a thread's own calls are not
 * in flight while it begins one); other threads (the decay thread, other
 * copies) go on.  A thread's own interaction mode
 * (cudaThreadExchangeStreamCaptureMode) can only allow more than global
 * mode does: hostpin assumes the default, the strictest. */
static _Atomic int captures; /* in progress, in global mode */
static _Atomic int in_flight; /* unsafe driver calls in progress */
static HP_TLS int tl_caps; /* this thread's thread-local captures */

int hp_capture_busy(void)
{
	return tl_caps > 0 || atomic_load(&captures) > 0;
}

/* This thread holds the gate across several calls (hp_capture_hold): its
 * calls inside need no new look, a capture's begin waits for the hold. */
static HP_TLS int gate_held;

int hp_capture_enter(void)
{
	if (gate_held) {
		atomic_fetch_add(&in_flight, 1);
		return 1;
	}
	if (tl_caps > 0 || atomic_load(&captures) > 0)
		return 0;
	/* seq_cst both: pairs with hp_cuda_gate_close's count-then-wait */
	atomic_fetch_add(&in_flight, 1);
	if (atomic_load(&captures) > 0) {
		atomic_fetch_sub(&in_flight, 1);
		return 0;
	}
	return 1;
}

/* A global capture's begin sleeps on gate_cv until the calls in flight
 * returned; the last to leave wakes it (gate_mu is taken only while a
 * capture is counted). */
static pthread_mutex_t gate_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cv = PTHREAD_COND_INITIALIZER;

void hp_capture_leave(void)
{
	/* seq_cst both: pairs with hp_cuda_gate_close's count-then-wait */
	if (atomic_fetch_sub(&in_flight, 1) == 1 &&
	    atomic_load(&captures) > 0) {
		pthread_mutex_lock(&gate_mu);
		pthread_cond_broadcast(&gate_cv);
		pthread_mutex_unlock(&gate_mu);
	}
}

int hp_capture_hold(void)
{
	if (gate_held || !hp_capture_enter())
		return 0;
	gate_held = 1;
	return 1;
}

void hp_capture_unhold(void)
{
	gate_held = 0;
	hp_capture_leave();
}

int hp_capture_held(void)
{
	return gate_held;
}

void hp_cuda_gate_local(int d)
{
	tl_caps += d;
}

void hp_cuda_gate_close(void)
{
	atomic_fetch_add(&captures, 1);
}

void hp_cuda_gate_wait(void)
{
	/* A registration that started before the capture ends before it
	 * begins: one call (at most HP_REG_PIECE_MAX), or one piece of a
	 * background registration (hp_cells_pin_each).  Asleep, not
	 * spinning: the last call to leave wakes it. */
	pthread_mutex_lock(&gate_mu);
	while (atomic_load(&in_flight) > 0)
		pthread_cond_wait(&gate_cv, &gate_mu);
	pthread_mutex_unlock(&gate_mu);
}

void hp_cuda_gate_open(void)
{
	atomic_fetch_sub(&captures, 1);
}

/* ---- copy fences (the copy policy, copy.c, decides when) ----
 * After an async copy through a registered block, either the stream is
 * waited for, or an event recorded on it becomes the block's last copy,
 * which any release or reuse of the block waits for (quiesce).  Waits go
 * through the driver, whose streams and events the runtime's are. */

int hp_cuda_copy_fns(void)
{
	int st = atomic_load_explicit(&hp_cu_pf_state, memory_order_acquire);
	if (st)
		return st;
#define HP_FN_SYM(name, R, params) *(void **)&hp_cu_pf.name = hp_cuda_sym(#name);
	HP_CU_POLICY_FNS(HP_FN_SYM, )
	HP_CU_POLICY_OPT_FNS(HP_FN_SYM, , , )
#undef HP_FN_SYM
	if (!hp_cu_pf.cuStreamSynchronize) {
		st = -1;
		hp_log(HP_LOG_WARN, "the CUDA driver lacks cuStreamSynchronize: "
		       "async copies through registered blocks cannot be made "
		       "host-synchronous");
	} else if (!hp_cu_pf.cuEventCreate || !hp_cu_pf.cuEventRecord ||
		   !hp_cu_pf.cuEventSynchronize || !hp_cu_pf.cuEventDestroy_v2) {
		st = 2;
		hp_log(HP_LOG_WARN, "the CUDA driver lacks event entry points: "
		       "HOSTPIN_COPY=async waits on the stream instead");
	} else {
		st = 1;
	}
	/* release: pairs with the acquire above; pf is complete. */
	atomic_store_explicit(&hp_cu_pf_state, st, memory_order_release);
	return st;
}

/* The (stream, event) pair of a block's last async copy changes under one
 * of these, so that a copy and a release racing on a block never see half
 * of a pair.  Held for a few loads and stores, never across a call. */
static atomic_flag pair_lock[64];

static atomic_flag *lock_of(hp_rec_t *r)
{
	atomic_flag *l = &pair_lock[((uintptr_t)r / sizeof(*r)) % 64];
	/* acquire: pairs with the release in unlock; the pair is ours */
	while (atomic_flag_test_and_set_explicit(l, memory_order_acquire))
		;
	return l;
}

static void unlock(atomic_flag *l)
{
	atomic_flag_clear_explicit(l, memory_order_release);
}

int hp_cuda_capturing(hp_cudaStream_t s)
{
	int st = HP_CU_STREAM_CAPTURE_STATUS_NONE;
	return hp_cu_pf.cuStreamIsCapturing && hp_cu_pf.cuStreamIsCapturing(s, &st) == 0 &&
	       st != HP_CU_STREAM_CAPTURE_STATUS_NONE;
}

void hp_cuda_wait_stream(hp_cudaStream_t s)
{
	hp_cu_pf.cuStreamSynchronize(s);
	HP_CTR_ADD(copy_waits, 1);
}

/* A wait for s that a graph capture elsewhere allows (a global one in
 * another thread, or this thread's own): no stream or event is asked;
 * a host function queued on s (itself not capturing: the caller holds
 * its capture entry) says when the work before it ran.  0 once it ran;
 * -1: no way (no cuLaunchHostFunc, or the driver refused it). */
struct host_fn_wait {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int ran;
};

static void host_fn_ran(void *arg)
{
	struct host_fn_wait *w = arg;
	pthread_mutex_lock(&w->mu);
	w->ran = 1;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
}

int hp_cuda_wait_stream_quiet(hp_cudaStream_t s)
{
	struct host_fn_wait w = {PTHREAD_MUTEX_INITIALIZER,
				 PTHREAD_COND_INITIALIZER, 0};
	if (!hp_cu_pf.cuLaunchHostFunc ||
	    hp_cu_pf.cuLaunchHostFunc(s, host_fn_ran, &w) != 0)
		return -1;
	pthread_mutex_lock(&w.mu);
	while (!w.ran)
		pthread_cond_wait(&w.cv, &w.mu);
	pthread_mutex_unlock(&w.mu);
	HP_CTR_ADD(copy_waits, 1);
	return 0;
}

/* Events a wait outside the capture gate (hp_cuda_settle) is using, one
 * slot a wait: an event's destruction (ev_destroy) finds it there, marks
 * it dead and leaves it to the last wait on it (so none is destroyed
 * under another thread's cuEventSynchronize of it, and none leaked: with
 * every slot taken a settle makes no wait, the gate's wait is made).  A
 * context's end (hp_cu_settle_block, from hp_cuda_end_begins) lets no
 * new wait begin and waits for those running: none is made on an event
 * of a context that ended meanwhile (late_fix settle_reset).  settle_used
 * counts the slots in use, changed under settle_mu; ev_destroy reads it
 * without (none in use, as under HOSTPIN_COPY=async with no release or
 * copy waiting before the gate: no lock, no scan). */
#define SETTLE_SLOTS 64
static pthread_mutex_t settle_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t settle_cv = PTHREAD_COND_INITIALIZER;
static int settle_ends;
static _Atomic int settle_used;
static struct {
	hp_cudaEvent_t ev;
	int dead;
} settle_slot[SETTLE_SLOTS];

/* ev taken out of its block's record under the block's pair lock first
 * (track_event, quiesce: every caller).  The fast path: a settle takes a
 * slot for ev only under that same pair lock while the record names ev
 * (hp_cuda_settle).  Either it did so before the caller's swap: its
 * increment (relaxed) then happened before the swap (the pair lock's
 * release and acquire) and so before the load here, which reads 0 only
 * once that slot was released (the count is at least 1 while it is in
 * use) by settle_done's release decrement, after its wait returned (the
 * acquire here: the wait happened before the destroy; the slot not
 * marked dead, settle_done leaves ev alone).  Or after the swap: the
 * record names ev no more, and no slot for ev is ever taken.  So no slot
 * naming ev can appear between the load and the destroy (late_fix
 * settle_destroy: one taken before is found below). */
static void ev_destroy(hp_cudaEvent_t ev)
{
	if (atomic_load_explicit(&settle_used, memory_order_acquire) == 0) {
		hp_cu_pf.cuEventDestroy_v2(ev);
		return;
	}
	int later = 0;
	pthread_mutex_lock(&settle_mu);
	for (int i = 0; i < SETTLE_SLOTS; i++)
		if (settle_slot[i].ev == ev)
			settle_slot[i].dead = later = 1;
	pthread_mutex_unlock(&settle_mu);
	if (!later)
		hp_cu_pf.cuEventDestroy_v2(ev);
}

/* Under settle_mu: a slot for ev (-1: none, or a context's end runs). */
static int settle_take(hp_cudaEvent_t ev)
{
	if (settle_ends > 0)
		return -1;
	for (int i = 0; i < SETTLE_SLOTS; i++)
		if (settle_slot[i].ev == NULL) {
			settle_slot[i].ev = ev, settle_slot[i].dead = 0;
			/* relaxed: the caller's pair lock orders it
			 * before a destroyer's swap (ev_destroy) */
			atomic_fetch_add_explicit(&settle_used, 1,
						  memory_order_relaxed);
			return i;
		}
	return -1;
}

static void settle_done(int i)
{
	pthread_mutex_lock(&settle_mu);
	hp_cudaEvent_t ev = settle_slot[i].ev;
	int last = settle_slot[i].dead;
	settle_slot[i].ev = NULL, settle_slot[i].dead = 0;
	for (int k = 0; last && k < SETTLE_SLOTS; k++)
		if (settle_slot[k].ev == ev)
			last = 0; /* another wait on it: the last one destroys */
	/* release: this slot's wait before a fast ev_destroy that reads 0 */
	if (atomic_fetch_sub_explicit(&settle_used, 1,
				      memory_order_release) == 1)
		pthread_cond_broadcast(&settle_cv);
	pthread_mutex_unlock(&settle_mu);
	if (last)
		hp_cu_pf.cuEventDestroy_v2(ev);
}

void hp_cu_settle_block(void)
{
	pthread_mutex_lock(&settle_mu);
	settle_ends++;
	int wait = atomic_load_explicit(&settle_used, memory_order_relaxed) > 0;
	pthread_mutex_unlock(&settle_mu);
	if (!wait)
		return;
	hp_test_pause("settle_drain"); /* tests: a settle wait runs */
	pthread_mutex_lock(&settle_mu);
	while (atomic_load_explicit(&settle_used, memory_order_relaxed) > 0)
		pthread_cond_wait(&settle_cv, &settle_mu);
	pthread_mutex_unlock(&settle_mu);
}

void hp_cu_settle_unblock(void)
{
	pthread_mutex_lock(&settle_mu);
	settle_ends--;
	pthread_mutex_unlock(&settle_mu);
}

/* Before the capture gate (issue 39): wait for the block's last async
 * copy, unless it is on the stream keyed key (0: whichever stream), with
 * this thread in relaxed capture interaction mode
 * (cuThreadExchangeStreamCaptureMode), so that a global capture elsewhere
 * neither waits for this wait (a held stream only the capturing thread
 * lets run) nor is invalidated by it.  The driver API documentation says
 * a relaxed thread may make such "potentially unsafe" calls, an event
 * synchronize among them, while another thread captures in global mode
 * (hostpin records its events outside any capture): from the
 * documentation, unverified on a GPU here.  The event stays the block's:
 * the wait in the gate after it (track_event, quiesce) finds it done; a
 * copy the block got meanwhile is waited for there.  No such entry point
 * (an older driver), a forked child, or a capture in progress that
 * prohibits this thread's calls (the copy then waits on its stream by a
 * host function, the release is deferred or refused: no event wait in
 * the gate): nothing here.  A capture that begins once the look is made
 * finds this thread relaxed (late_fix capture_relaxed). */
void hp_cuda_settle(hp_rec_t *r, uintptr_t key)
{
	if (hp_in_child || atomic_load_explicit(&r->user[HP_U_EVENT],
						memory_order_relaxed) == 0)
		return;
	if (!hp_cu_load() || hp_cuda_copy_fns() != 1 ||
	    !hp_cu_pf.cuThreadExchangeStreamCaptureMode || hp_capture_busy())
		return;
	/* The slot taken under the pair lock: a destroyer of ev swaps it
	 * out under it, then looks at the slots (no lock taken under
	 * settle_mu: none the other way round). */
	int i = -1;
	atomic_flag *l = lock_of(r);
	hp_cudaEvent_t ev = (hp_cudaEvent_t)atomic_load_explicit(
	    &r->user[HP_U_EVENT], memory_order_relaxed);
	uintptr_t os = atomic_load_explicit(&r->user[HP_U_STREAM],
					    memory_order_relaxed);
	if (ev != NULL && (key == 0 || os != key)) {
		pthread_mutex_lock(&settle_mu);
		i = settle_take(ev);
		pthread_mutex_unlock(&settle_mu);
	}
	unlock(l);
	if (i < 0)
		return;
	int mode = HP_CU_CAPTURE_MODE_RELAXED;
	hp_test_pause("settle_wait"); /* tests: a capture begins */
	if (hp_cu_pf.cuThreadExchangeStreamCaptureMode(&mode) == 0) {
		hp_cu_pf.cuEventSynchronize(ev);
		hp_cu_pf.cuThreadExchangeStreamCaptureMode(&mode);
	}
	settle_done(i);
}

/* HOSTPIN_COPY=async: the block's last copy is now this one.  The one it
 * replaces, on another stream, is waited for before it is forgotten: a
 * later copy of the block on this stream must find it done (fuzz
 * cases/attr3d-after-pieces-96525102).  The caller waited for it before
 * the capture gate (hp_cuda_settle, copy.c): the wait here, inside the
 * gate, finds it done; it waits only where the driver has no relaxed
 * mode, or for a copy of the block another thread made meanwhile. */
_Atomic int hp_cuda_events_tracked;

int hp_cuda_track_event(hp_rec_t *r, hp_cudaStream_t s, uintptr_t id)
{
	hp_cudaEvent_t ev = NULL;
	if (hp_cu_pf.cuEventCreate(&ev, HP_CU_EVENT_DISABLE_TIMING) != 0)
		return -1;
	if (hp_cu_pf.cuEventRecord(ev, s) != 0) {
		hp_cu_pf.cuEventDestroy_v2(ev);
		return -1;
	}
	/* Set before the event is the block's (sequenced before; relaxed is
	 * enough): a release ordered after this copy (this thread's, or
	 * one the program synchronised with it) sees it set and settles;
	 * one racing with it may skip, as if made before it (the wait in
	 * the gate, quiesce, still waits for the event). */
	if (!atomic_load_explicit(&hp_cuda_events_tracked,
				  memory_order_relaxed))
		atomic_store_explicit(&hp_cuda_events_tracked, 1,
				      memory_order_relaxed);
	atomic_flag *l = lock_of(r);
	hp_cudaEvent_t old = (hp_cudaEvent_t)atomic_load_explicit(
	    &r->user[HP_U_EVENT], memory_order_relaxed);
	uintptr_t os = atomic_load_explicit(&r->user[HP_U_STREAM],
					    memory_order_relaxed);
	atomic_store_explicit(&r->user[HP_U_EVENT], (uintptr_t)ev,
			      memory_order_relaxed);
	atomic_store_explicit(&r->user[HP_U_STREAM], id, memory_order_relaxed);
	unlock(l);
	if (old != NULL) {
		/* Same stream: the new event covers the old copy.  Another
		 * stream: wait for it before forgetting it. */
		if (os != id)
			hp_cu_pf.cuEventSynchronize(old);
		ev_destroy(old);
	}
	return 0;
}

void hp_cuda_quiesce(hp_rec_t *r)
{
	if (hp_in_child) {
		/* The parent's events are not the child's: nothing to wait
		 * for, and no pair lock to take (hp_cuda_fence_fork_child). */
		hp_cuda_forget(r);
		return;
	}
	atomic_flag *l = lock_of(r);
	hp_cudaEvent_t ev = (hp_cudaEvent_t)atomic_load_explicit(
	    &r->user[HP_U_EVENT], memory_order_relaxed);
	atomic_store_explicit(&r->user[HP_U_EVENT], 0, memory_order_relaxed);
	atomic_store_explicit(&r->user[HP_U_STREAM], 0, memory_order_relaxed);
	unlock(l);
	/* the driver that made ev unloaded: ev died with it (no call into
	 * an unloaded driver) */
	if (ev == NULL || !hp_cu_load() || hp_cuda_copy_fns() != 1)
		return;
	/* A block is neither unregistered nor released while a copy that
	 * used it may still run. */
	hp_cu_pf.cuEventSynchronize(ev);
	ev_destroy(ev);
	HP_CTR_ADD(copy_waits, 1);
}

void hp_cuda_forget(hp_rec_t *r)
{
	atomic_flag *l = lock_of(r);
	atomic_store_explicit(&r->user[HP_U_EVENT], 0, memory_order_relaxed);
	atomic_store_explicit(&r->user[HP_U_STREAM], 0, memory_order_relaxed);
	unlock(l);
}

void hp_cuda_fence_fork_child(void)
{
	/* Only this thread exists in the child: a lock a parent's thread held
	 * at the fork would never be released. */
	for (int i = 0; i < 64; i++)
		atomic_flag_clear_explicit(&pair_lock[i], memory_order_relaxed);
	pthread_mutex_init(&gate_mu, NULL);
	pthread_cond_init(&gate_cv, NULL);
	pthread_mutex_init(&settle_mu, NULL);
	pthread_cond_init(&settle_cv, NULL);
	/* the parent's waits and events: not the child's */
	memset(settle_slot, 0, sizeof(settle_slot));
	settle_ends = 0;
	atomic_store_explicit(&settle_used, 0, memory_order_relaxed);
}
