/* The fake driver's second mode, FAKE_CUDA_LATE_DMA=1 (included by
 * fake_copy.h after its streams and events): DMA completes later, on a
 * worker thread of each stream, never on the caller's.  Still
 * deterministic: a worker runs its stream's work only as far as the
 * program asked (a synchronisation waits until it is done; a query asks
 * and answers CUDA_ERROR_NOT_READY), so a copy hostpin forgot to wait for
 * is still queued when the program looks, every time.  A test program may
 * hold a stream (fake_cuda_stream_hold: what a host function or an event
 * wait the program satisfies later does): the worker stops there until
 * fake_cuda_stream_release, and whoever waits for work behind it waits
 * until then (a hang that the program's alarm turns into a failure).
 * Events belong to the context current when they were made: one whose
 * context ended answers CUDA_ERROR_CONTEXT_IS_DESTROYED (709), a destroyed
 * one CUDA_ERROR_INVALID_HANDLE (400), both logged as "VIOLATION
 * event-of-ended-context" / "VIOLATION event-destroyed" (destroying an
 * event whose context ended is quiet: it went with its context).  Events
 * live at exit, neither destroyed nor gone with their context, are
 * counted in the log ("LATE events-live=N"), so leaks show.  A copy whose
 * device side runs past the end of its allocation is refused whole
 * (CUDA_ERROR_INVALID_VALUE), nothing written. */

#include <signal.h>

static int late_on(void)
{
	static int on = -1;
	if (on < 0) {
		const char *e = getenv("FAKE_CUDA_LATE_DMA");
		on = (e && *e == '1') || timed_on(); /* fake_timed.h's too */
	}
	return on;
}

/* A stream's worker; under the stream's lock. */
struct late {
	pthread_t th;
	pthread_cond_t cv; /* asked for more, or progress made */
	unsigned long long want, done; /* ops numbered from 1 (op->qn) */
	unsigned holds, released;      /* hold ops queued, released */
};

static void run_op(stream_t *s, struct op *o);
static void timed_move(struct op *o); /* fake_timed.h */

static void *late_main(void *arg)
{
	stream_t *s = arg;
	struct late *l = s->late;
	pthread_mutex_lock(&s->mu);
	for (;;) {
		while (!s->head || l->done >= l->want)
			pthread_cond_wait(&l->cv, &s->mu);
		struct op *o = s->head;
		if (o->hold) {
			while (l->released < o->hold)
				pthread_cond_wait(&l->cv, &s->mu);
		}
		const struct dep *d = order_pending(o); /* fake_order.h */
		if (d) {
			struct dep w = *d;
			pthread_mutex_unlock(&s->mu);
			late_run(w.s, w.qn, 1);
			pthread_mutex_lock(&s->mu);
			continue;
		}
		s->head = o->next;
		if (!s->head)
			s->tail = NULL;
		if (timed_on() && (o->n || o->dur > 0)) {
			/* the timed mode: bytes moved and the link's time
			 * waited with the stream unlocked, so the program
			 * enqueues meanwhile */
			pthread_mutex_unlock(&s->mu);
			timed_move(o); /* fake_timed.h */
			timed_sleep_until(o->due);
			pthread_mutex_lock(&s->mu);
		}
		unsigned long long qn = o->qn;
		run_op(s, o); /* frees o */
		l->done = qn;
		__atomic_store_n(&s->ran, qn, __ATOMIC_RELEASE);
		pthread_cond_broadcast(&l->cv);
	}
	return NULL;
}

/* Under s->mu: s's worker, started at its first op. */
static struct late *late_of(stream_t *s)
{
	if (!s->late) {
		struct late *l = raw(sizeof(*l));
		memset(l, 0, sizeof(*l));
		l->done = l->want = s->forked;
		pthread_cond_init(&l->cv, NULL);
		s->late = l;
		sigset_t all, old; /* the program's signals are not its */
		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &old);
		pthread_create(&l->th, NULL, late_main, s);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	}
	return s->late;
}

/* Ask s's worker to run up to op number qn (0: all queued now); wait:
 * until it did. */
static void late_run(stream_t *s, unsigned long long qn, int wait)
{
	pthread_mutex_lock(&s->mu);
	struct late *l = late_of(s);
	if (qn == 0)
		qn = s->enq;
	if (l->want < qn) {
		l->want = qn;
		pthread_cond_broadcast(&l->cv);
	}
	while (wait && l->done < qn)
		pthread_cond_wait(&l->cv, &s->mu);
	pthread_mutex_unlock(&s->mu);
}

/* The program's hold on stream s (0: the legacy stream): everything
 * queued on s after it waits until fake_cuda_stream_release(s).  -1
 * outside the late mode. */
int fake_cuda_stream_hold(stream_t *s);
int fake_cuda_stream_hold(stream_t *s)
{
	if (!late_on())
		return -1;
	s = S(s);
	struct op *o = op_new();
	memset(o, 0, sizeof(*o));
	pthread_mutex_lock(&s->mu);
	o->hold = ++late_of(s)->holds;
	pthread_mutex_unlock(&s->mu);
	enqueue(s, o);
	return 0;
}

/* The stream a handle stands for on the calling thread (the legacy one,
 * its per-thread one, or itself): another thread may release it. */
void *fake_cuda_stream_self(stream_t *s);
void *fake_cuda_stream_self(stream_t *s)
{
	return S(s);
}

void fake_cuda_stream_release(stream_t *s);
void fake_cuda_stream_release(stream_t *s)
{
	s = S(s);
	pthread_mutex_lock(&s->mu);
	struct late *l = late_of(s);
	l->released++;
	pthread_cond_broadcast(&l->cv);
	pthread_mutex_unlock(&s->mu);
}

/* Whether a synchronisation or a query asked s's worker for work queued
 * behind a hold not yet released (a thread that waits, or polls, for what
 * only the release lets run): 1 or 0. */
int fake_cuda_stream_asked_past_hold(stream_t *s);
int fake_cuda_stream_asked_past_hold(stream_t *s)
{
	s = S(s);
	pthread_mutex_lock(&s->mu);
	struct late *l = late_of(s);
	int asked = 0;
	for (struct op *o = s->head; o; o = o->next)
		if (o->hold > l->released) { /* the first hold not let go */
			asked = l->want > o->qn;
			break;
		}
	pthread_mutex_unlock(&s->mu);
	return asked;
}

/* Host functions (cuLaunchHostFunc) queued on s behind a hold not yet
 * released: how many (a thread that waits for one waits for the
 * release). */
int fake_cuda_stream_host_fns_past_hold(stream_t *s);
int fake_cuda_stream_host_fns_past_hold(stream_t *s)
{
	s = S(s);
	pthread_mutex_lock(&s->mu);
	struct late *l = late_of(s);
	int n = 0, past = 0;
	for (struct op *o = s->head; o; o = o->next) {
		past = past || o->hold > l->released;
		n += past && o->host_fn != NULL;
	}
	pthread_mutex_unlock(&s->mu);
	return n;
}

/* A device side [p, p+n) past the end of its allocation: the late mode's
 * driver refuses the whole call (CUDA_ERROR_INVALID_VALUE) before any
 * byte moves. */
static int late_dev_bad(const void *p, size_t n)
{
	if (!late_on())
		return 0;
	for (int i = 0; i < ndev_mem; i++)
		if ((const char *)p >= devmem[i].base &&
		    (const char *)p < devmem[i].base + devmem[i].len)
			return n > (size_t)(devmem[i].base + devmem[i].len -
					    (const char *)p);
	/* just past an allocation (a batch entry that starts there): its
	 * guard, no memory of anybody's */
	for (int i = 0; i < ndev_mem; i++)
		if (n && (const char *)p == devmem[i].base + devmem[i].len)
			return 1;
	return 0;
}

/* The device side of an H2D or D2H copy must lie in one allocation (the
 * late mode; else refused whole). */
static void late_need_dev(int *refused, const void *p, size_t n)
{
	if (!late_on() || n == 0)
		return;
	for (int i = 0; i < ndev_mem; i++)
		if ((const char *)p >= devmem[i].base &&
		    (const char *)p < devmem[i].base + devmem[i].len &&
		    n <= (size_t)(devmem[i].base + devmem[i].len -
				  (const char *)p))
			return;
	*refused = 1;
}

/* ---- events per context ---- */
#define LATE_EVS 8192
static struct {
	struct event *e;
	CUcontext ctx;
	unsigned gen; /* ctx_gen then (a primary context ended since: dead) */
	int gone;
} late_ev[LATE_EVS];
static int late_nev;

static void late_ev_new(struct event *e)
{
	pthread_mutex_lock(&mu);
	if (late_nev < LATE_EVS) {
		late_ev[late_nev].e = e;
		CUcontext c = depth ? stack[depth - 1] : NULL;
		late_ev[late_nev].ctx = c;
		late_ev[late_nev].gen = c >= prim && c < prim + MAXDEV
					    ? ctx_gen[c - prim] : 0;
		late_nev++;
	}
	pthread_mutex_unlock(&mu);
}

/* Has entry i's context ended since the event was made? */
static int late_ev_dead(int i)
{
	CUcontext c = late_ev[i].ctx;
	if (c >= prim && c < prim + MAXDEV)
		return ctx_gen[c - prim] != late_ev[i].gen;
	return c && ctx_dead(c);
}

/* 0 if e may be used now; else the driver's answer (logged). */
static CUresult late_ev_check(struct event *e, const char *fn, int destroy)
{
	if (!late_on())
		return OK;
	CUresult r = OK;
	pthread_mutex_lock(&mu);
	for (int i = late_nev - 1; i >= 0; i--) {
		if (late_ev[i].e != e)
			continue;
		if (late_ev[i].gone) {
			logf_("VIOLATION event-destroyed %s", fn);
			r = 400;
		} else if (late_ev_dead(i) && !destroy) {
			logf_("VIOLATION event-of-ended-context %s", fn);
			r = CTX_DESTROYED;
		}
		if (destroy)
			late_ev[i].gone = 1;
		break;
	}
	pthread_mutex_unlock(&mu);
	return r;
}

/* An event recorded on a stream of another context: the driver refuses
 * (CUDA_ERROR_INVALID_HANDLE), logged as "LATE event-on-other-context". */
static CUresult late_ev_stream(struct event *e, stream_t *s)
{
	if (!late_on() || !s->ctx)
		return OK; /* the legacy and per-thread streams: any context */
	CUresult r = OK;
	pthread_mutex_lock(&mu);
	for (int i = late_nev - 1; i >= 0; i--)
		if (late_ev[i].e == e) {
			if (late_ev[i].ctx && late_ev[i].ctx != s->ctx) {
				logf_("LATE event-on-other-context");
				r = 400;
			}
			break;
		}
	pthread_mutex_unlock(&mu);
	return r;
}

/* The context a stream was made in (the legacy and per-thread streams:
 * the current one).  fake_cuda_stream_ctx_asks: how many times it was
 * asked (a program sees that a thread's copy got that far). */
static int stream_ctx_asks;
int fake_cuda_stream_ctx_asks(void);
int fake_cuda_stream_ctx_asks(void)
{
	return __atomic_load_n(&stream_ctx_asks, __ATOMIC_SEQ_CST);
}
CUresult cuStreamGetCtx(stream_t *s, CUcontext *c);
CUresult cuStreamGetCtx(stream_t *s, CUcontext *c)
{
	__atomic_add_fetch(&stream_ctx_asks, 1, __ATOMIC_SEQ_CST);
	stream_t *t = S(s);
	*c = t->ctx ? (CUcontext)t->ctx : depth ? stack[depth - 1] : NULL;
	return *c ? OK : INVALID_CONTEXT;
}

/* A forked child has no workers: its streams start new ones, counting
 * as done what the parent's had run (or was running: its lock may have
 * been held); else a wait in the child for the stream's last op never
 * ends. */
static void late_forked(stream_t *s)
{
	pthread_mutex_init(&s->mu, NULL);
	s->forked = s->head ? s->head->qn - 1 : s->enq;
	s->ran = s->forked, s->at_fork = s->enq;
	s->late = NULL;
}

static void late_child(void)
{
	pthread_mutex_init(&order_mu, NULL); /* fake_order.h's */
	for (int k = 0; k < nstreams; k++)
		late_forked(streams[k]);
	for (int k = 0; k < nptds && k < NPTDS; k++) /* the threads' own */
		if (ptds[k])
			late_forked(ptds[k]);
}

__attribute__((constructor)) static void late_init(void)
{
	pthread_atfork(NULL, NULL, late_child);
}

__attribute__((destructor)) static void late_fini(void)
{
	if (!late_on())
		return;
	/* live: neither destroyed nor gone with its context */
	int live = 0;
	for (int i = 0; i < late_nev; i++)
		live += !late_ev[i].gone && !late_ev_dead(i);
	logf_("LATE events-live=%d", live);
}
