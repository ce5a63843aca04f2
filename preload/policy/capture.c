/* CUDA graph capture in the process (invariant 13).  While a stream
 * captures, the driver fails the "unsafe" calls the capture's mode
 * prohibits — registering and unregistering host memory, waiting on a
 * stream or an event — and the failure invalidates the capture: in global
 * mode (PyTorch's torch.cuda.graph and torch.compile's reduce-overhead
 * mode capture so) any thread's, in thread-local mode the capturing
 * thread's only, in relaxed mode none.  So hostpin counts the captures in
 * progress (the begin and end entry points, cuStreamBeginCaptureToGraph
 * among them, are hooked at the driver and the runtime: hooks/cudrv_capture.c,
 * hooks/cudart_capture.c) and makes none of the prohibited calls meanwhile:
 * registration leaves blocks pending, unregistration of a released block
 * is deferred (the block stays mapped and registered: pin.c's retry),
 * waits are skipped.  When the last capture that held a thread back ends,
 * pending blocks are adopted and deferred releases retried.
 *
 * A driver call of that kind runs between hp_capture_enter and
 * hp_capture_leave, the CUDA backend's gate (backend_cuda_calls.c); a global
 * capture's begin closes it for every thread (counts itself first, then
 * waits for the calls already inside the driver to return), so that none
 * reaches the driver once the capture began; a thread-local one closes it
 * for its own thread only.  Relaxed mode prohibits nothing and is not
 * counted. */
#include <pthread.h>
#include <string.h>

#include "../hooks.h"
#include "../record.h"

#define HP_CAPTURE_GLOBAL 0
#define HP_CAPTURE_THREAD_LOCAL 1
#define HP_CAPTURE_RELAXED 2
#define MAX_CAPTURES 64

/* Streams capturing now (one entry per begin, with its mode; overflow
 * counted without a stream, as global), under cap_mu; how many: the
 * gate's counts (hp_capture_busy). */
static struct {
	uintptr_t s; /* hp_stream_key */
	int used, mode;
} caps[MAX_CAPTURES];
static int cap_overflow;
static pthread_mutex_t cap_mu = PTHREAD_MUTEX_INITIALIZER;

/* This thread's per-thread default stream: told apart from every other
 * thread's by an address of this thread's own. */
static HP_TLS char my_stream;

uintptr_t hp_stream_key(hp_cudaStream_t s)
{
	if (s == HP_CU_STREAM_PER_THREAD)
		return (uintptr_t)&my_stream;
	if (s == (hp_cudaStream_t)0x1) /* CU_STREAM_LEGACY: stream 0 */
		return 0;
	return (uintptr_t)s;
}

/* Streams with copies of several driver calls in progress (stage.h), or a
 * capture beginning or in progress (any mode), under str_mu.  A stream
 * not listed (the table full) has none; a copy then passes through. */
#define MAX_STREAMS 64
static struct {
	uintptr_t s; /* hp_stream_key */
	int copies, captures;
} strs[MAX_STREAMS];
static pthread_mutex_t str_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t str_cv = PTHREAD_COND_INITIALIZER;

/* Under str_mu: s's entry (made if add), or -1. */
static int str_of(hp_cudaStream_t st, int add)
{
	uintptr_t s = hp_stream_key(st);
	int f = -1;
	for (int i = 0; i < MAX_STREAMS; i++) {
		if ((strs[i].copies || strs[i].captures) && strs[i].s == s)
			return i;
		if (f < 0 && !strs[i].copies && !strs[i].captures)
			f = i;
	}
	if (add && f >= 0)
		strs[f].s = s;
	return add ? f : -1;
}

int hp_capture_stream_enter(hp_cudaStream_t s)
{
	pthread_mutex_lock(&str_mu);
	int i = str_of(s, 1);
	int ok = i >= 0 && strs[i].captures == 0;
	if (ok)
		strs[i].copies++;
	pthread_mutex_unlock(&str_mu);
	return ok;
}

int hp_capture_stream_enter_captured(hp_cudaStream_t s)
{
	pthread_mutex_lock(&str_mu);
	int i = str_of(s, 0);
	int ok = i >= 0 && strs[i].captures > 0;
	if (ok)
		strs[i].copies++;
	pthread_mutex_unlock(&str_mu);
	return ok;
}

void hp_capture_end_wait(hp_cudaStream_t s)
{
	pthread_mutex_lock(&str_mu);
	int i = str_of(s, 0);
	while (i >= 0 && strs[i].captures > 0 && strs[i].copies > 0) {
		pthread_cond_wait(&str_cv, &str_mu);
		i = str_of(s, 0);
	}
	pthread_mutex_unlock(&str_mu);
}

void hp_capture_stream_leave(hp_cudaStream_t s)
{
	pthread_mutex_lock(&str_mu);
	int i = str_of(s, 0);
	if (i >= 0 && strs[i].copies > 0 && --strs[i].copies == 0)
		pthread_cond_broadcast(&str_cv);
	pthread_mutex_unlock(&str_mu);
}

void hp_capture_stream_fork_child(void)
{
	/* the child's only thread copies nothing now; its lock may have
	 * been held */
	pthread_mutex_init(&str_mu, NULL);
	pthread_cond_init(&str_cv, NULL);
	memset(strs, 0, sizeof(strs));
}

/* A capture's begin on s: from now on no copy of several calls enters s;
 * those in progress are waited for (each waits only for s's own work,
 * queued before the capture) */
static void str_begin(hp_cudaStream_t s)
{
	pthread_mutex_lock(&str_mu);
	int i = str_of(s, 1);
	if (i >= 0) {
		strs[i].captures++;
		while (strs[i].copies > 0)
			pthread_cond_wait(&str_cv, &str_mu);
	}
	pthread_mutex_unlock(&str_mu);
}

/* The capture on s ended, or its begin failed. */
static void str_end(hp_cudaStream_t s)
{
	pthread_mutex_lock(&str_mu);
	int i = str_of(s, 0);
	if (i >= 0 && strs[i].captures > 0)
		strs[i].captures--;
	pthread_mutex_unlock(&str_mu);
}

int hp_capture_begin(hp_cudaStream_t s, int mode)
{
	str_begin(s);
	if (mode == HP_CAPTURE_RELAXED)
		return 0;
	pthread_mutex_lock(&cap_mu);
	int i = 0;
	while (i < MAX_CAPTURES && caps[i].used)
		i++;
	int local = mode == HP_CAPTURE_THREAD_LOCAL && i < MAX_CAPTURES;
	if (i < MAX_CAPTURES)
		caps[i].s = hp_stream_key(s), caps[i].used = 1,
		caps[i].mode = local;
	else
		cap_overflow++;
	if (local) {
		/* only this thread's calls are prohibited, and none of them
		 * is in flight */
		hp_cuda_gate_local(1);
		pthread_mutex_unlock(&cap_mu);
		return 1;
	}
	hp_cuda_gate_close();
	pthread_mutex_unlock(&cap_mu);
	hp_cuda_gate_wait();
	return 1;
}

/* Forget one capture of s (any, if s has none listed).  A thread-local
 * capture ends on the thread that began it (the driver refuses another:
 * CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD, not an end). */
static void forget(hp_cudaStream_t s)
{
	pthread_mutex_lock(&cap_mu);
	int done = 0;
	for (int i = 0; i < MAX_CAPTURES && !done; i++)
		if (caps[i].used && caps[i].s == hp_stream_key(s)) {
			caps[i].used = 0, done = 1;
			if (caps[i].mode)
				hp_cuda_gate_local(-1);
			else
				hp_cuda_gate_open();
		}
	if (!done && cap_overflow)
		cap_overflow--, hp_cuda_gate_open();
	pthread_mutex_unlock(&cap_mu);
	hp_register_wake(); /* a registration parked for the capture */
}

void hp_capture_begin_failed(hp_cudaStream_t s, int counted)
{
	str_end(s);
	if (counted)
		forget(s);
}

/* 900: CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED... : the codes after which
 * the stream no longer captures (ended, invalidated and ended, unjoined). */
static int capture_over(hp_CUresult e)
{
	return e == 0 || e == 901 /* INVALIDATED */ ||
	       e == 904 /* UNJOINED */ || e == 401 /* ILLEGAL_STATE: none */;
}

void hp_capture_end(hp_cudaStream_t s, hp_CUresult e)
{
	if (!capture_over(e))
		return;
	str_end(s);
	pthread_mutex_lock(&cap_mu);
	int listed = 0;
	for (int i = 0; i < MAX_CAPTURES; i++)
		listed |= caps[i].used && caps[i].s == hp_stream_key(s);
	pthread_mutex_unlock(&cap_mu);
	if (!listed && !cap_overflow)
		return; /* a relaxed capture, or one hostpin did not see */
	forget(s);
	if (!hp_capture_busy()) {
		/* The program's thread, outermost hook, guarded: what waited
		 * for the capture to end happens now. */
		hp_cuda_learn_ctx();
		hp_backend_events_act();
		hp_adopt_pending();
		hp_retry_deferred();
	}
}
