/* The fake driver's copy engine, included at the end of fake_cuda.c.
 * Deterministic: no thread and no clock.  An async copy is queued on its
 * stream and runs only when the program synchronises or asks: on
 * cuStreamSynchronize (that stream), cuCtxSynchronize (every stream),
 * cuEventSynchronize (the event's stream up to the event), and on a query
 * (cuStreamQuery, cuEventQuery) with work pending, which answers
 * CUDA_ERROR_NOT_READY and then runs that work, so the next query answers
 * ready and a polling loop ends.  hostpin's async mode waits with
 * cuEventSynchronize, so a copy it forgot to wait for is still queued when
 * the program looks, every time.  The real driver's host-side semantics
 * hold: from pageable memory an async H2D returns after staging the source,
 * and into pageable memory an async D2H returns after the copy (its stream
 * runs then); on registered memory both return at once.  cuGetProcAddress
 * answers from this file's own table, never by a symbol lookup, as the
 * real driver does. */
#include <sys/syscall.h>

typedef unsigned long long CUdeviceptr;

#define NOT_READY 600

struct event {
	int done;
	unsigned seq;		/* of the latest record: only it completes */
	struct CUstream_st *s;	/* where it was last recorded */
};
struct dep {			/* run after s's ops up to number qn */
	struct CUstream_st *s;
	unsigned long long qn;
};
struct op {
	struct op *next;
	void *dst;
	const void *src;
	size_t n;
	void *staging;
	struct event *ev;
	unsigned seq;
	void (*host_fn)(void *); /* cuLaunchHostFunc: run in order */
	void *host_arg;
	unsigned long long qn;	/* its number on the stream (from 1) */
	unsigned hold;		/* FAKE_CUDA_LATE_DMA: a hold (fake_late.h) */
	int link;		/* FAKE_CUDA_TIMED (fake_timed.h): 1 H2D, 2 D2H */
	int touch;		/* FAKE_CUDA_TIMED=2: a pageable D2H's
				 * destination, written (fake_timed.h) */
	double rate, dur, due;	/* its bytes/s, a kernel's seconds, its end */
	struct dep *deps;	/* the legacy stream's ordering (fake_order.h) */
	int ndeps;
	struct dep dep1;	/* deps when it is one */
};
typedef struct CUstream_st {
	pthread_mutex_t mu;
	struct op *head, *tail;
	int capturing;
	int mode;		/* of the capture: 0 global, 1 thread-local, 2 relaxed */
	int invalid;		/* a prohibited call invalidated it */
	pthread_t owner;	/* the thread that began it */
	unsigned long long enq;	/* ops queued so far */
	struct late *late;	/* FAKE_CUDA_LATE_DMA: its worker */
	unsigned long long forked; /* a forked child's: ops done before it */
	void *ctx;		/* the context current when it was made */
	double until;		/* FAKE_CUDA_TIMED: when its last work ends */
	int nonblock;		/* made with CU_STREAM_NON_BLOCKING */
	unsigned long long ran;	/* its ops run so far (fake_order.h) */
	unsigned long long at_fork; /* a forked child's: ops queued before */
} stream_t;
typedef struct CUarray_st {
	char *mem;
	size_t size;
	/* fake_array.h: its geometry (es bytes an element, pitch bytes a
	 * row) and what it was made with */
	size_t es, pitch, w, h, d;
	int fmt;
	unsigned ch, flags;
} *CUarray;

#define NSTREAMS 256
static stream_t legacy = {.mu = PTHREAD_MUTEX_INITIALIZER};
static stream_t perthread = {.mu = PTHREAD_MUTEX_INITIALIZER};
static stream_t *streams[NSTREAMS] = {&legacy, &perthread};
static int nstreams = 2;
static int capture_broken;
int fake_cuda_capture_broken(void) { return capture_broken; }
/* Captures in progress: global mode ones (any thread's unsafe call
 * invalidates them), and this thread's thread-local ones (its own unsafe
 * calls do). */
static int global_caps;
static __thread int my_tl_caps;
int fake_cuda_captures(void) { return __atomic_load_n(&global_caps, __ATOMIC_SEQ_CST); }

/* Memory the fake uses for itself: straight from the kernel, so hostpin
 * never sees it. */
static void *raw(size_t n)
{
	return (void *)syscall(SYS_mmap, NULL, n, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
}
static void unraw(void *p, size_t n) { syscall(SYS_munmap, p, n); }

/* The timed mode's ops (fake_timed.h: benchmarks) come from a free list,
 * not a mapping each: a worker's munmap of every op it ran cost the other
 * CPUs a TLB shootdown, each copy thread's too (the model's CPU, which a
 * driver does not spend).  A forked child starts a list of its own (the
 * parent's may be mid-change). */
static pthread_mutex_t op_mu = PTHREAD_MUTEX_INITIALIZER;
static struct op *op_free_list;
static void op_child(void)
{
	pthread_mutex_init(&op_mu, NULL);
	op_free_list = NULL;
}
__attribute__((constructor)) static void op_init(void)
{
	pthread_atfork(NULL, NULL, op_child);
}
static void *op_new(void)
{
	pthread_mutex_lock(&op_mu);
	struct op *o = op_free_list;
	if (o)
		op_free_list = o->next;
	pthread_mutex_unlock(&op_mu);
	return o ? (void *)o : raw(sizeof(*o));
}
static int timed_on(void);
static void op_free(struct op *o)
{
	if (o->ndeps > 1)
		unraw(o->deps, (size_t)o->ndeps * sizeof(struct dep));
	o->deps = NULL, o->ndeps = 0;
	if (!timed_on()) { /* the tests' modes: a use after free faults */
		unraw(o, sizeof(*o));
		return;
	}
	pthread_mutex_lock(&op_mu);
	o->next = op_free_list;
	op_free_list = o;
	pthread_mutex_unlock(&op_mu);
}

#define MAXDEVMEM 4096
static struct {
	char *base;
	size_t len;
} devmem[MAXDEVMEM];
static int ndev_mem;
static int is_dev(const void *p)
{
	for (int i = 0; i < ndev_mem; i++)
		if ((const char *)p >= devmem[i].base &&
		    (const char *)p < devmem[i].base + devmem[i].len)
			return 1;
	return 0;
}

/* FAKE_CUDA_PTDS=1 (or FAKE_CUDA_PTDS_PER_THREAD=1, tests/fuzz): the
 * per-thread default stream (CU_STREAM_PER_THREAD, or stream 0 in a
 * _ptsz/_ptds form) is each thread's own, as the real
 * driver's is (one handle, a stream per thread); else one shared stream.
 * The threads' streams, listed apart from streams[] (made without the
 * fake's lock, which a caller may hold), are synchronised by
 * cuCtxSynchronize and searched by inflight() too. */
#define NPTDS 64
static stream_t *ptds[NPTDS];
static int nptds;
static stream_t *my_ptds(void)
{
	static int on = -1;
	if (on < 0) {
		const char *e = getenv("FAKE_CUDA_PTDS");
		if (!e || *e != '1')
			e = getenv("FAKE_CUDA_PTDS_PER_THREAD");
		on = e && *e == '1';
	}
	if (!on)
		return &perthread;
	static __thread stream_t *mine;
	if (mine == NULL) {
		int k = __atomic_fetch_add(&nptds, 1, __ATOMIC_SEQ_CST);
		if (k >= NPTDS)
			return &perthread;
		stream_t *t = raw(sizeof(stream_t));
		memset(t, 0, sizeof(*t));
		pthread_mutex_init(&t->mu, NULL);
		__atomic_store_n(&ptds[k], t, __ATOMIC_RELEASE);
		mine = t;
	}
	return mine;
}

static stream_t *S(stream_t *s)
{
	if (s == NULL || s == (stream_t *)0x1)
		return &legacy;
	if (s == (stream_t *)0x2)
		return my_ptds();
	return s;
}

/* This thread's per-thread stream, as a handle another thread may use
 * (fake_cuda_stream_release of a thread blocked in a copy). */
stream_t *fake_cuda_ptds_of_thread(void);
stream_t *fake_cuda_ptds_of_thread(void)
{
	return my_ptds();
}

/* The threads' own per-thread streams made so far (FAKE_CUDA_PTDS). */
static int nptds_made(void)
{
	int n = __atomic_load_n(&nptds, __ATOMIC_SEQ_CST);
	return n > NPTDS ? NPTDS : n;
}
static stream_t *ptds_at(int k)
{
	return __atomic_load_n(&ptds[k], __ATOMIC_ACQUIRE);
}

/* Op o's bytes, moved (then o moves none).  A host side unmapped before
 * its copy ran is what a missed wait does on a real device (DMA into freed
 * memory): flagged, not performed. */
static void run_data(struct op *o)
{
	if (o->n && (!mapped(o->dst, o->n) ||
			     (!o->staging && !mapped(o->src, o->n))))
		logf_("VIOLATION copy-on-unmapped-memory %p %p %zu",
		      o->dst, o->src, o->n);
	else if (o->n)
		memcpy(o->dst, o->staging ? o->staging : o->src, o->n);
	if (o->staging)
		unraw(o->staging, o->n);
	o->staging = NULL;
	o->n = 0;
}

/* Under s->mu: perform op o, taken off s's queue, and free it. */
static void run_op(stream_t *s, struct op *o)
{
	(void)s;
	run_data(o);
	if (o->host_fn)
		o->host_fn(o->host_arg);
	/* release: pairs with the acquire loads of done */
	if (o->ev && o->seq == __atomic_load_n(&o->ev->seq, __ATOMIC_RELAXED))
		__atomic_store_n(&o->ev->done, 1, __ATOMIC_RELEASE);
	op_free(o);
}

static int late_on(void);
static int timed_on(void);
static double timed_due(stream_t *s, struct op *o);
static void timed_sleep_until(double t);
static void late_run(stream_t *s, unsigned long long qn, int wait);
static int timed_ev_due(struct event *e);
#include "fake_order.h"
/* o's number on its stream (0: captured, not queued) */
static unsigned long long enqueue(stream_t *s, struct op *o)
{
	s = S(s);
	if (late_on() && s->capturing && !o->hold) {
		/* the late mode: work queued on a capturing stream is
		 * captured into its graph, not run (the graph is not
		 * modelled: dropped, logged) */
		logf_("LATE captured %zu", o->n);
		if (o->staging)
			unraw(o->staging, o->n);
		return 0;
	}
	int ordered = order_deps(s, o); /* holds order_mu if so */
	pthread_mutex_lock(&s->mu);
	o->next = NULL;
	o->qn = ++s->enq;
	if (timed_on())
		o->due = timed_due(s, o);
	if (s->tail)
		s->tail->next = o;
	else
		s->head = o;
	s->tail = o;
	unsigned long long qn = o->qn; /* o may be run and freed once unlocked */
	pthread_mutex_unlock(&s->mu);
	if (ordered)
		pthread_mutex_unlock(&order_mu);
	/* the timed mode: DMA starts now (=2: the worker is asked only by a
	 * wait or a query of work not due, fake_timed.h) */
	if (timed_on() && (timed_on() == 1 || o->host_fn || o->hold))
		late_run(s, qn, 0);
	return qn;
}

#include "fake_late.h"

/* The default mode: run s's queue here up to and including `last` (all
 * of it when NULL; nothing if another thread ran it) or op number upto
 * (0: no limit).  An op the legacy ordering puts after another stream's
 * work has that stream run first, with s unlocked (fake_order.h). */
static void run_upto(stream_t *s, const struct op *last,
		     unsigned long long upto)
{
	pthread_mutex_lock(&s->mu);
	if (last) { /* compared, not read: it may be run and freed */
		upto = 0;
		for (struct op *o = s->head; o; o = o->next)
			if (o == last)
				upto = o->qn;
		if (!upto) {
			pthread_mutex_unlock(&s->mu);
			return;
		}
	}
	while (s->head && (!upto || s->head->qn <= upto)) {
		struct op *o = s->head;
		const struct dep *d = order_pending(o);
		if (d) {
			struct dep w = *d; /* o may go while s is unlocked */
			pthread_mutex_unlock(&s->mu);
			order_wait(w.s, w.qn);
			pthread_mutex_lock(&s->mu);
			continue;
		}
		s->head = o->next;
		if (!s->head)
			s->tail = NULL;
		unsigned long long qn = o->qn;
		run_op(s, o);
		__atomic_store_n(&s->ran, qn, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&s->mu);
}

/* Run s's queue up to and including `last` (all of it when NULL): here,
 * or by s's worker in the late mode (fake_late.h). */
static void run_queue(stream_t *s, const struct op *last)
{
	s = S(s);
	if (late_on()) {
		late_run(s, last ? last->qn : 0, 1);
		return;
	}
	run_upto(s, last, 0);
}

static int pending(stream_t *s)
{
	s = S(s);
	pthread_mutex_lock(&s->mu);
	/* the timed mode's worker moves an op's bytes off the queue */
	int p = s->head != NULL || (s->late && s->late->done < s->enq);
	pthread_mutex_unlock(&s->mu);
	return p;
}

/* Does a copy queued on s touch [p, p+n)? */
static int stream_touches(stream_t *s, const void *p, size_t n)
{
	int hit = 0;
	pthread_mutex_lock(&s->mu);
	for (struct op *o = s->head; o; o = o->next) {
		/* a source staged at the call (pageable memory) is read no
		 * more: the copy reads the driver's staging, as the real
		 * driver's pageable H2D does after it returns */
		const char *a = o->dst, *b = o->staging ? NULL : o->src;
		if ((a < (const char *)p + n &&
		     a + o->n > (const char *)p) ||
		    (b && b < (const char *)p + n &&
		     b + o->n > (const char *)p))
			hit = 1;
	}
	pthread_mutex_unlock(&s->mu);
	return hit;
}

/* Does any queued copy touch [p, p+n) (a staged source no more)?
 * (unregister checks it) */
static int inflight(const void *p, size_t n)
{
	int hit = 0;
	for (int k = 0; k < nstreams; k++)
		hit |= stream_touches(streams[k], p, n);
	for (int k = 0; k < nptds_made(); k++) {
		stream_t *s = ptds_at(k);
		if (s != NULL)
			hit |= stream_touches(s, p, n);
	}
	return hit;
}

/* A copy call: log it, apply injected failures; then its segments. */
struct xfer {
	stream_t *s;
	int wait; /* a pageable destination: return after the copy */
	int rect; /* a 2D/3D copy: its rows' pageable bytes summed */
	int flagged; /* a pageable-copy VIOLATION logged for it */
	size_t paged; /* bytes of its segments on a pageable host side */
	int refused; /* the late mode: a device side past its allocation */
};

#include "fake_timed.h"

static CUresult begin(const char *fn, struct xfer *x, stream_t *s)
{
	pthread_mutex_lock(&mu);
	logf_("CALL %s", fn);
	CUresult r = inject(fn);
	if (r == OK && !initialized)
		r = NOT_INITIALIZED;
	pthread_mutex_unlock(&mu);
	x->s = s;
	x->wait = 0;
	x->rect = x->flagged = 0;
	x->paged = 0;
	x->refused = 0;
	return r;
}

static long long no_pageable(void)
{
	static long long nopage = -2;
	if (nopage == -2) {
		const char *e = getenv("FAKE_CUDA_NO_PAGEABLE");
		nopage = e && *e ? atoll(e) : -1;
	}
	return nopage;
}

static int refuse_partial(void)
{
	static int on = -1;
	if (on < 0) {
		const char *e = getenv("FAKE_CUDA_REFUSE_PARTIAL");
		on = e && *e == '1';
	}
	return on;
}

/* Does [p, p+n) overlap a registration (held range) without one covering
 * it?  One look under the lock: a registration made between two looks
 * (a covering one beside the copy's row) must not read as partial
 * (the engine tester's diff-c-partial-rect-race-61731471). */
static int held_partly(const void *p, size_t n)
{
	pthread_mutex_lock(&mu);
	int over = 0, cover = 0;
	for (int i = 0; i < nheld; i++) {
		const char *b = held[i].base, *e = b + held[i].len;
		if ((const char *)p < e && b < (const char *)p + n)
			over = 1;
		if ((const char *)p >= b && (const char *)p + n <= e)
			cover = 1;
	}
	pthread_mutex_unlock(&mu);
	return over && !cover;
}

static void seg(struct xfer *x, void *dst, const void *src, size_t n)
{
	if (n == 0 || x->refused)
		return;
	if (late_dev_bad(src, n) || late_dev_bad(dst, n)) {
		x->refused = 1;
		return;
	}
	int hs = !is_dev(src), hd = !is_dev(dst);
	int ps = hs && held_covers(src, n), pd = hd && held_covers(dst, n);
	/* FAKE_CUDA_REFUSE_PARTIAL=1: a host side only partly registered
	 * (overlapping a registration without one covering it) is refused
	 * whole (CUDA_ERROR_INVALID_VALUE), as a driver may. */
	int qs = hs && refuse_partial() && held_partly(src, n);
	if (qs || (hd && refuse_partial() && held_partly(dst, n))) {
		logf_("PARTIAL refused %p %zu", qs ? src : dst, n);
		x->refused = 1;
	}
	if (x->refused)
		return;
	struct op *o = op_new();
	memset(o, 0, sizeof(*o));
	o->dst = dst, o->src = src, o->n = n;
	/* FAKE_CUDA_NO_PAGEABLE=BYTES: hostpin's staging is on, so no copy
	 * of BYTES or more may reach the driver from pageable memory. */
	long long nopage = no_pageable();
	if ((hs && !ps) || (hd && !pd))
		x->paged += n;
	if (nopage >= 0 && (long long)n >= nopage &&
	    ((hs && !ps) || (hd && !pd))) {
		logf_("VIOLATION pageable-copy %p %zu", hs && !ps ? src : dst,
		      n);
		x->flagged = 1;
	}
	if (hs && !ps && !timed_on()) { /* timed: the call waits for it */
		o->staging = raw(n); /* staged now: the source may change */
		memcpy(o->staging, src, n);
	}
	if (hd && !pd)
		x->wait = 1;
	timed_seg(x, o, hs, hd, ps, pd);
	enqueue(x->s, o);
}

static CUresult end(struct xfer *x)
{
	/* a 2D/3D copy: FAKE_CUDA_NO_PAGEABLE counts all its rows together */
	long long nopage = no_pageable();
	if (x->rect && !x->flagged && nopage >= 0 &&
	    (long long)x->paged >= nopage)
		logf_("VIOLATION pageable-copy 2D/3D %zu", x->paged);
	if (x->refused)
		return INVALID_VALUE;
	if (x->wait)
		run_queue(x->s, NULL); /* pageable D2H returns after the copy */
	return OK;
}

/* A device allocation's mapping: its pages and a guard page. */
static size_t dev_span(size_t n)
{
	return ((n + 4095) & ~(size_t)4095) + 4096;
}

/* FAKE_CUDA_ALLOC_IN_CALL=malloc|new: cuMemAlloc_v2 allocates 4 MiB for
 * itself first, as a driver does inside its entry points. */
CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n)
{
	fake_alloc_in_call(getenv("FAKE_CUDA_ALLOC_IN_CALL"));
	ENTRY("cuMemAlloc_v2");
	NEED_INIT;
	/* a guard page after it: the address just past an allocation is
	 * never the program's host memory (late_dev_bad refuses it) */
	char *m = raw(dev_span(n));
	if (m == MAP_FAILED || ndev_mem == MAXDEVMEM)
		RETURN(OUT_OF_MEMORY);
	syscall(SYS_mprotect, m + dev_span(n) - 4096, 4096, PROT_NONE);
	devmem[ndev_mem].base = m, devmem[ndev_mem++].len = n;
	*p = (CUdeviceptr)(uintptr_t)m;
	RETURN(OK);
}

static int rt_mode(void);
CUresult cuMemFree_v2(CUdeviceptr p)
{
	/* device memory of the fake: kept, tests are short; under a real
	 * runtime (fake_rt.h) given back, as frameworks move gigabytes */
	if (!rt_mode())
		return OK;
	pthread_mutex_lock(&mu);
	for (int i = 0; i < ndev_mem; i++)
		if (devmem[i].base == (char *)(uintptr_t)p) {
			unraw(devmem[i].base, dev_span(devmem[i].len));
			devmem[i] = devmem[--ndev_mem];
			break;
		}
	pthread_mutex_unlock(&mu);
	return OK;
}

#include "fake_array.h"

CUresult cuStreamCreate(stream_t **ps, unsigned flags)
{
	stream_t *s = raw(sizeof(stream_t));
	memset(s, 0, sizeof(*s));
	pthread_mutex_init(&s->mu, NULL);
	s->nonblock = (flags & 1) != 0; /* CU_STREAM_NON_BLOCKING */
	s->ctx = depth ? stack[depth - 1] : NULL;
	pthread_mutex_lock(&mu);
	if (nstreams < NSTREAMS)
		streams[nstreams++] = s;
	pthread_mutex_unlock(&mu);
	*ps = s;
	return OK;
}

CUresult cuStreamSynchronize(stream_t *s)
{
	ENTRY("cuStreamSynchronize");
	pthread_mutex_unlock(&mu);
	if (capture_prohibits("cuStreamSynchronize"))
		return 900;
	if (S(s)->capturing) {
		capture_broken = 1;
		return 900; /* CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED */
	}
	run_queue(s, NULL);
	return OK;
}

/* Work pending: not ready, and the work runs now (see the top). */
CUresult cuStreamQuery(stream_t *s)
{
	ENTRY("cuStreamQuery");
	pthread_mutex_unlock(&mu);
	if (!pending(s))
		return OK;
	if (late_on())
		late_run(S(s), 0, 0); /* asked: done later, on the worker */
	else
		run_queue(s, NULL);
	return NOT_READY;
}

CUresult cuCtxSynchronize(void)
{
	if (capture_prohibits("cuCtxSynchronize"))
		return 900;
	for (int k = 0; k < nstreams; k++)
		run_queue(streams[k], NULL);
	for (int k = 0; k < nptds_made(); k++)
		if (ptds_at(k))
			run_queue(ptds_at(k), NULL);
	return OK;
}

/* The calling thread's capture interaction mode
 * (cuThreadExchangeStreamCaptureMode): 0 global (the default), 1
 * thread-local, 2 relaxed.  As the driver API documentation describes
 * it: global: prohibited during any thread's global capture or this
 * thread's own; thread-local: this thread's own captures only; relaxed:
 * never (the calls that necessarily conflict with a capture, on what it
 * captures, are not modelled). */
static __thread int my_mode;
CUresult cuThreadExchangeStreamCaptureMode(int *mode)
{
	if (mode == NULL || *mode < 0 || *mode > 2)
		return INVALID_VALUE;
	int old = my_mode;
	my_mode = *mode, *mode = old;
	return OK;
}

static int my_global_capture(void)
{
	for (int k = 0; k < nstreams; k++)
		if (streams[k]->capturing && streams[k]->mode == 0 &&
		    pthread_equal(streams[k]->owner, pthread_self()))
			return 1;
	return 0;
}

/* An unsafe call (registration, a wait) while a capture forbids it: the
 * driver fails it (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED) and invalidates
 * every capture it concerns; logged as a VIOLATION: hostpin must make
 * none. */
static int capture_prohibits(const char *fn)
{
	if (my_mode == 2)
		return 0;
	if (my_mode == 1 && my_tl_caps == 0 && !my_global_capture())
		return 0;
	if (__atomic_load_n(&global_caps, __ATOMIC_SEQ_CST) == 0 &&
	    my_tl_caps == 0)
		return 0;
	logf_("VIOLATION capture-invalidated-by %s", fn);
	capture_broken = 1;
	for (int k = 0; k < nstreams; k++)
		if (streams[k]->capturing && streams[k]->mode != 2)
			streams[k]->invalid = 1;
	return 1;
}

CUresult cuStreamBeginCapture_v2(stream_t *s, int mode)
{
	s = S(s);
	if (s == &legacy || s->capturing || mode < 0 || mode > 2)
		return INVALID_VALUE;
	s->capturing = 1, s->mode = mode, s->invalid = 0;
	s->owner = pthread_self();
	if (mode == 0)
		__atomic_add_fetch(&global_caps, 1, __ATOMIC_SEQ_CST);
	if (mode == 1)
		my_tl_caps++;
	logf_("CAPTURE BEGIN mode=%d", mode);
	return OK;
}

/* CUDA 12.3: a capture into a graph the program made (its nodes are not
 * modelled), in the mode it names: as any other capture. */
CUresult cuStreamBeginCaptureToGraph(stream_t *s, void *graph,
				     const void *deps, const void *data,
				     size_t n, int mode)
{
	if (graph == NULL || (n && deps == NULL))
		return INVALID_VALUE;
	(void)data;
	logf_("CAPTURE TO GRAPH");
	return cuStreamBeginCapture_v2(s, mode);
}

/* The form without a mode: global mode. */
CUresult cuStreamBeginCapture(stream_t *s)
{
	return cuStreamBeginCapture_v2(s, 0);
}

CUresult cuStreamEndCapture(stream_t *s, void **graph)
{
	s = S(s);
	if (!s->capturing)
		return 401; /* CUDA_ERROR_ILLEGAL_STATE */
	if (s->mode != 2 && !pthread_equal(s->owner, pthread_self()))
		return 908; /* CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD */
	s->capturing = 0;
	if (s->mode == 0)
		__atomic_sub_fetch(&global_caps, 1, __ATOMIC_SEQ_CST);
	if (s->mode == 1)
		my_tl_caps--;
	*graph = NULL;
	logf_("CAPTURE END%s", s->invalid || capture_broken ? " invalidated" : "");
	return s->invalid || capture_broken ? 901 /* ..._CAPTURE_INVALIDATED */
					    : OK;
}

/* 0 none, 1 active, 2 invalidated (CUstreamCaptureStatus) */
CUresult cuStreamIsCapturing(stream_t *s, int *status)
{
	s = S(s);
	*status = s->capturing ? (s->invalid ? 2 : 1) : 0;
	return OK;
}

CUresult cuStreamGetCaptureInfo_v2(stream_t *s, int *status,
				   unsigned long long *id, void **graph,
				   const void **deps, size_t *ndeps)
{
	cuStreamIsCapturing(s, status);
	if (id)
		*id = (unsigned long long)(uintptr_t)S(s);
	if (graph)
		*graph = NULL;
	if (deps)
		*deps = NULL;
	if (ndeps)
		*ndeps = 0;
	return OK;
}

CUresult cuEventCreate(struct event **e, unsigned flags)
{
	ENTRY("cuEventCreate");
	(void)flags;
	*e = raw(sizeof(**e));
	(*e)->done = 1;
	pthread_mutex_unlock(&mu);
	if (late_on())
		late_ev_new(*e);
	return OK;
}

CUresult cuEventRecord(struct event *e, stream_t *s)
{
	ENTRY("cuEventRecord");
	pthread_mutex_unlock(&mu);
	CUresult lr = late_ev_check(e, "cuEventRecord", 0);
	if (lr == OK)
		lr = late_ev_stream(e, S(s));
	if (lr)
		return lr;
	struct op *o = op_new();
	memset(o, 0, sizeof(*o));
	o->ev = e;
	s = S(s);
	/* under the stream's lock: run_queue compares seq under it */
	pthread_mutex_lock(&s->mu);
	o->seq = __atomic_add_fetch(&e->seq, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&e->s, s, __ATOMIC_RELAXED);
	__atomic_store_n(&e->done, 0, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&s->mu);
	enqueue(s, o);
	return OK;
}

/* Run e's stream until e completes (its latest record); the late mode:
 * ask the worker, and wait only if told. */
static void run_to(struct event *e, int wait)
{
	stream_t *s = __atomic_load_n(&e->s, __ATOMIC_RELAXED);
	/* acquire: pairs with run_queue's release store of done */
	while (s && !__atomic_load_n(&e->done, __ATOMIC_ACQUIRE)) {
		pthread_mutex_lock(&s->mu);
		struct op *last = NULL;
		for (struct op *o = s->head; o; o = o->next)
			if (o->ev == e &&
			    o->seq == __atomic_load_n(&e->seq, __ATOMIC_RELAXED))
				last = o;
		pthread_mutex_unlock(&s->mu);
		if (!last)
			break; /* another thread ran it meanwhile */
		if (late_on()) {
			/* last may be run and freed once s->mu is let go */
			pthread_mutex_lock(&s->mu);
			unsigned long long qn = 0;
			for (struct op *o = s->head; o; o = o->next)
				if (o == last)
					qn = o->qn;
			pthread_mutex_unlock(&s->mu);
			if (qn)
				late_run(s, qn, wait);
			if (!wait || qn == 0)
				break;
			continue;
		}
		run_queue(s, last);
	}
}

CUresult cuEventQuery(struct event *e)
{
	ENTRY("cuEventQuery");
	pthread_mutex_unlock(&mu);
	if (capture_prohibits("cuEventQuery"))
		return 900;
	CUresult lr = late_ev_check(e, "cuEventQuery", 0);
	if (lr)
		return lr;
	/* acquire: pairs with run_queue's release store of done */
	if (__atomic_load_n(&e->done, __ATOMIC_ACQUIRE))
		return OK;
	int due = timed_ev_due(e); /* the timed mode's clock (fake_timed.h) */
	if (due == 1)
		run_to(e, 1);
	if (due)
		return OK;
	run_to(e, 0); /* not ready now; ready at the next query */
	return NOT_READY;
}

CUresult cuEventSynchronize(struct event *e)
{
	if (capture_prohibits("cuEventSynchronize"))
		return 900;
	CUresult lr = late_ev_check(e, "cuEventSynchronize", 0);
	if (lr)
		return lr;
	run_to(e, 1);
	return OK;
}

CUresult cuEventDestroy_v2(struct event *e)
{
	/* may still be queued: leaked, tests are short */
	return late_ev_check(e, "cuEventDestroy_v2", 1);
}

/* ---- copies ---- */
#define COPY_FN(name, params, stream, BODY)                                   \
	CUresult name params                                                  \
	{                                                                     \
		struct xfer x;                                                \
		CUresult r = begin(#name, &x, stream);                        \
		if (r)                                                        \
			return r;                                             \
		BODY;                                                         \
		return end(&x);                                               \
	}
#define COPY_FN2(name, params, args, stream, BODY)                            \
	COPY_FN(name, params, stream, BODY)                                   \
	COPY_FN(name##_ptsz, params,                                          \
		(stream) ? (stream) : (stream_t *)0x2, BODY)

COPY_FN2(cuMemcpyHtoDAsync_v2,
	 (CUdeviceptr d, const void *h, size_t n, stream_t *s), (d, h, n, s), s,
	 (gate_wait("FAKE_CUDA_HTOD_GATE", n),
	  late_need_dev(&x.refused, (void *)(uintptr_t)d, n),
	  seg(&x, (void *)(uintptr_t)d, h, n)))
COPY_FN2(cuMemcpyDtoHAsync_v2,
	 (void *h, CUdeviceptr d, size_t n, stream_t *s), (h, d, n, s), s,
	 (gate_wait("FAKE_CUDA_DTOH_GATE", n),
	  late_need_dev(&x.refused, (const void *)(uintptr_t)d, n),
	  seg(&x, h, (const void *)(uintptr_t)d, n)))
COPY_FN2(cuMemcpyAsync, (CUdeviceptr d, CUdeviceptr sr, size_t n, stream_t *s),
	 (d, sr, n, s), s,
	 seg(&x, (void *)(uintptr_t)d, (const void *)(uintptr_t)sr, n))
COPY_FN2(cuMemcpyHtoAAsync_v2,
	 (CUarray a, size_t off, const void *h, size_t n, stream_t *s),
	 (a, off, h, n, s), s,
	 (gate_wait("FAKE_CUDA_HTOD_GATE", n), seg(&x, a->mem + off, h, n)))
COPY_FN2(cuMemcpyAtoHAsync_v2,
	 (void *h, CUarray a, size_t off, size_t n, stream_t *s),
	 (h, a, off, n, s), s,
	 (gate_wait("FAKE_CUDA_DTOH_GATE", n), seg(&x, h, a->mem + off, n)))

typedef struct {
	size_t srcXInBytes, srcY;
	int srcMemoryType;
	const void *srcHost;
	CUdeviceptr srcDevice;
	CUarray srcArray;
	size_t srcPitch;
	size_t dstXInBytes, dstY;
	int dstMemoryType;
	void *dstHost;
	CUdeviceptr dstDevice;
	CUarray dstArray;
	size_t dstPitch;
	size_t WidthInBytes, Height;
} M2D;
typedef struct {
	size_t srcXInBytes, srcY, srcZ, srcLOD;
	int srcMemoryType;
	const void *srcHost;
	CUdeviceptr srcDevice;
	CUarray srcArray;
	void *reserved0;
	size_t srcPitch, srcHeight;
	size_t dstXInBytes, dstY, dstZ, dstLOD;
	int dstMemoryType;
	void *dstHost;
	CUdeviceptr dstDevice;
	CUarray dstArray;
	void *reserved1;
	size_t dstPitch, dstHeight;
	size_t WidthInBytes, Height, Depth;
} M3D;
static char *base_of(int type, const void *host, CUdeviceptr dev, CUarray a)
{
	return type == 1 ? (char *)host
	       : type == 3 ? a->mem
			   : (char *)(uintptr_t)dev; /* device, unified */
}
static void rows(struct xfer *x, const M3D *p)
{
	x->rect = 1;
	char *s = base_of(p->srcMemoryType, p->srcHost, p->srcDevice,
			  p->srcArray);
	char *d = base_of(p->dstMemoryType, p->dstHost, p->dstDevice,
			  p->dstArray);
	/* an array side: its own pitch and rows per layer (fake_array.h),
	 * the copy inside it or refused */
	size_t sp = p->srcPitch, sh = p->srcHeight, dp = p->dstPitch,
	       dh = p->dstHeight, depth = p->Depth ? p->Depth : 1;
	if (p->srcMemoryType == 3) {
		sp = p->srcArray->pitch, sh = arr_h(p->srcArray);
		x->refused |= !arr_holds(p->srcArray, p->srcXInBytes,
					 p->WidthInBytes, p->srcY, p->Height,
					 p->srcZ, depth);
	}
	if (p->dstMemoryType == 3) {
		dp = p->dstArray->pitch, dh = arr_h(p->dstArray);
		x->refused |= !arr_holds(p->dstArray, p->dstXInBytes,
					 p->WidthInBytes, p->dstY, p->Height,
					 p->dstZ, depth);
	}
	/* the late mode refuses the whole call when any row's device side
	 * (CU_MEMORYTYPE_DEVICE) is not inside one allocation: checked
	 * before any row is queued */
	for (int pass = late_on() ? 0 : 1; pass < 2 && !x->refused; pass++)
		for (size_t z = 0; z < (p->Depth ? p->Depth : 1); z++)
			for (size_t y = 0; y < p->Height; y++) {
				char *dr = d + ((p->dstZ + z) * dh +
						p->dstY + y) * dp +
					   p->dstXInBytes;
				char *sr = s + ((p->srcZ + z) * sh +
						p->srcY + y) * sp +
					   p->srcXInBytes;
				if (pass == 1)
					seg(x, dr, sr, p->WidthInBytes);
				else {
					if (p->dstMemoryType == 2)
						late_need_dev(&x->refused, dr,
							      p->WidthInBytes);
					if (p->srcMemoryType == 2)
						late_need_dev(&x->refused, sr,
							      p->WidthInBytes);
				}
			}
}
static void rows2d(struct xfer *x, const M2D *p)
{
	M3D q = {p->srcXInBytes, p->srcY, 0, 0, p->srcMemoryType, p->srcHost,
		 p->srcDevice, p->srcArray, NULL, p->srcPitch, 0,
		 p->dstXInBytes, p->dstY, 0, 0, p->dstMemoryType, p->dstHost,
		 p->dstDevice, p->dstArray, NULL, p->dstPitch, 0,
		 p->WidthInBytes, p->Height, 1};
	rows(x, &q);
}
COPY_FN2(cuMemcpy2DAsync_v2, (const M2D *p, stream_t *s), (p, s), s,
	 rows2d(&x, p))
COPY_FN2(cuMemcpy3DAsync_v2, (const M3D *p, stream_t *s), (p, s), s,
	 rows(&x, p))
/* CUDA_MEMCPY3D_PEER: the 3D layout, a context where M3D has reserved
 * pointers; either side may be host memory. */
COPY_FN2(cuMemcpy3DPeerAsync, (const M3D *p, stream_t *s), (p, s), s,
	 rows(&x, p))
/* A batch whose entry runs past its device allocation: the late mode's
 * driver refuses the whole call before any entry is queued, as it does a
 * 2D or 3D copy's rows (found/batch-past-end-37103: it queued the entries
 * before the bad one, which then landed at no defined time). */
static void batch(struct xfer *x, CUdeviceptr *d, CUdeviceptr *s, size_t *n,
		  size_t count)
{
	for (size_t i = 0; i < count && !x->refused; i++)
		x->refused = n[i] && (late_dev_bad((void *)(uintptr_t)d[i], n[i]) ||
				      late_dev_bad((void *)(uintptr_t)s[i], n[i]));
	for (size_t i = 0; i < count; i++)
		seg(x, (void *)(uintptr_t)d[i], (const void *)(uintptr_t)s[i],
		    n[i]);
}
COPY_FN2(cuMemcpyBatchAsync,
	 (CUdeviceptr *d, CUdeviceptr *sr, size_t *n, size_t c, void *at,
	  size_t *ai, size_t na, size_t *fail, stream_t *s),
	 (d, sr, n, c, at, ai, na, fail, s), s, batch(&x, d, sr, n, c))
COPY_FN2(cuMemcpyBatchAsync_v2,
	 (CUdeviceptr *d, CUdeviceptr *sr, size_t *n, size_t c, void *at,
	  size_t *ai, size_t na, stream_t *s),
	 (d, sr, n, c, at, ai, na, s), s, batch(&x, d, sr, n, c))
typedef struct {
	int type;
	union {
		struct {
			CUdeviceptr ptr;
			size_t rowLength, layerHeight;
			int loc[2];
		} ptr;
		struct {
			CUarray array;
			size_t x, y, z;
		} array;
	} op;
} OPND;
typedef struct {
	OPND src, dst;
	size_t w, h, d;
	int order;
	unsigned flags;
} BOP;
static char *opnd(const OPND *o)
{
	return o->type == 1 ? (char *)(uintptr_t)o->op.ptr.ptr
			    : o->op.array.array->mem;
}
/* Bytes an element of op o: 1 between two pointers, else its array's
 * (cuda.h: "the element size is determined by the CUDA array"). */
static size_t op_es(const BOP *o)
{
	return o->src.type == 2 ? o->src.op.array.array->es
	       : o->dst.type == 2 ? o->dst.op.array.array->es
				  : 1;
}
/* An op moved row by row: one with an array side, or between two
 * pointers with a pitch (rowLength, layerHeight: 0 is packed).  Its rows
 * are w elements each; a pointer's row y of layer z at
 * (z * layerHeight + y) * rowLength elements, an array's at its own
 * pitch and height (fake_array.h).  Other ops: one run of w * h * d
 * bytes. */
static int pitched(const BOP *o)
{
	return o->src.type == 2 || o->dst.type == 2 ||
	       (o->src.type == 1 && o->dst.type == 1 &&
		(o->src.op.ptr.rowLength || o->src.op.ptr.layerHeight ||
		 o->dst.op.ptr.rowLength || o->dst.op.ptr.layerHeight));
}
static char *op_row(const OPND *o, const BOP *b, size_t y, size_t z)
{
	size_t es = op_es(b);
	if (o->type == 2) {
		const struct CUarray_st *a = o->op.array.array;
		return a->mem + ((o->op.array.z + z) * arr_h(a) +
				 o->op.array.y + y) * a->pitch +
		       o->op.array.x * es;
	}
	size_t rl = o->op.ptr.rowLength ? o->op.ptr.rowLength : b->w;
	size_t lh = o->op.ptr.layerHeight ? o->op.ptr.layerHeight : b->h;
	return opnd(o) + (z * lh + y) * rl * es;
}
/* An array side of op o inside its array (else the driver refuses). */
static int op_in_array(const OPND *o, const BOP *b)
{
	return o->type != 2 ||
	       arr_holds(o->op.array.array, o->op.array.x * op_es(b),
			 b->w * op_es(b), o->op.array.y, b->h, o->op.array.z,
			 b->d);
}
static void batch3d(struct xfer *x, BOP *ops, size_t n)
{
	for (size_t i = 0; i < n && !x->refused; i++) {
		size_t m = ops[i].w * ops[i].h * ops[i].d, wb = ops[i].w * op_es(&ops[i]);
		if (!pitched(&ops[i]))
			x->refused = m && (late_dev_bad(opnd(&ops[i].dst), m) ||
					   late_dev_bad(opnd(&ops[i].src), m));
		else
			x->refused = !op_in_array(&ops[i].src, &ops[i]) ||
				     !op_in_array(&ops[i].dst, &ops[i]);
		for (size_t z = 0; pitched(&ops[i]) && z < ops[i].d; z++)
			for (size_t y = 0; y < ops[i].h && !x->refused; y++)
				x->refused = late_dev_bad(op_row(&ops[i].dst, &ops[i], y, z), wb) ||
					     late_dev_bad(op_row(&ops[i].src, &ops[i], y, z), wb);
	}
	for (size_t i = 0; i < n; i++) {
		if (!pitched(&ops[i])) {
			seg(x, opnd(&ops[i].dst), opnd(&ops[i].src),
			    ops[i].w * ops[i].h * ops[i].d);
			continue;
		}
		for (size_t z = 0; z < ops[i].d; z++)
			for (size_t y = 0; y < ops[i].h; y++)
				seg(x, op_row(&ops[i].dst, &ops[i], y, z),
				    op_row(&ops[i].src, &ops[i], y, z),
				    ops[i].w * op_es(&ops[i]));
	}
}
COPY_FN2(cuMemcpy3DBatchAsync,
	 (size_t n, BOP *ops, size_t *fail, unsigned long long fl, stream_t *s),
	 (n, ops, fail, fl, s), s, batch3d(&x, ops, n))
COPY_FN2(cuMemcpy3DBatchAsync_v2,
	 (size_t n, BOP *ops, unsigned long long fl, stream_t *s),
	 (n, ops, fl, s), s, batch3d(&x, ops, n))

#include "fake_query.h"

/* ---- cuGetProcAddress: the driver's own table ---- */
/* fake_cuda.c's synchronous copies and device attributes, after this file */
#define SYNC_DECL(n, params) CUresult n params; CUresult n##_ptds params;
SYNC_DECL(cuMemcpyHtoD_v2, (CUdeviceptr, const void *, size_t))
SYNC_DECL(cuMemcpyDtoH_v2, (void *, CUdeviceptr, size_t))
SYNC_DECL(cuMemcpy, (CUdeviceptr, CUdeviceptr, size_t))
SYNC_DECL(cuMemcpy2D_v2, (const M2D *))
SYNC_DECL(cuMemcpy2DUnaligned_v2, (const M2D *))
SYNC_DECL(cuMemcpy3D_v2, (const M3D *))
SYNC_DECL(cuMemcpy3DPeer, (const M3D *))
SYNC_DECL(cuMemcpyHtoA_v2, (CUarray, size_t, const void *, size_t))
SYNC_DECL(cuMemcpyAtoH_v2, (void *, CUarray, size_t, size_t))
#undef SYNC_DECL
CUresult cuDeviceGetAttribute(int *v, int attr, CUdevice d);
CUresult cuDeviceGetPCIBusId(char *buf, int len, CUdevice d);
CUresult cuGetProcAddress_v2(const char *sym, void **pfn, int ver,
			     unsigned long long flags, int *status);
CUresult cuGetProcAddress(const char *sym, void **pfn, int ver,
			  unsigned long long flags);
struct proc {
	const char *name;
	int since, ptsz;
	void *fn;
};
static const struct proc *rt_proc(const char *sym);
static void *rt_stub(const char *sym);
static const struct proc procs[] = {
#define P(n, v, f) {#n, v, 0, (void *)f},
#define P2(n, v, f) {#n, v, 0, (void *)f}, {#n, v, 1, (void *)f##_ptsz},
#define P2S(n, v, f) {#n, v, 0, (void *)f}, {#n, v, 1, (void *)f##_ptds},
	P(cuInit, 2000, cuInit) P(cuDeviceGet, 2000, cuDeviceGet)
	P(cuDeviceGetCount, 2000, cuDeviceGetCount)
	P(cuDevicePrimaryCtxRetain, 7000, cuDevicePrimaryCtxRetain)
	P(cuCtxSetCurrent, 4000, cuCtxSetCurrent)
	P(cuCtxGetCurrent, 4000, cuCtxGetCurrent)
	P(cuCtxSynchronize, 2000, cuCtxSynchronize)
	P(cuMemAlloc, 3020, cuMemAlloc_v2) P(cuMemFree, 3020, cuMemFree_v2)
	P(cuArrayCreate, 3020, cuArrayCreate_v2)
	P(cuArray3DCreate, 3020, cuArray3DCreate_v2)
	P(cuArrayGetDescriptor, 3020, cuArrayGetDescriptor_v2)
	P(cuArray3DGetDescriptor, 3020, cuArray3DGetDescriptor_v2)
	P(cuMemHostRegister, 4000, cuMemHostRegister)
	P(cuMemHostRegister, 6050, cuMemHostRegister_v2)
	P(cuMemHostUnregister, 4000, cuMemHostUnregister)
	P(cuStreamCreate, 2000, cuStreamCreate)
	P(cuStreamSynchronize, 2000, cuStreamSynchronize)
	P(cuStreamQuery, 2000, cuStreamQuery)
	P(cuStreamBeginCapture, 10000, cuStreamBeginCapture)
	P(cuStreamBeginCapture, 10010, cuStreamBeginCapture_v2)
	P(cuStreamBeginCaptureToGraph, 12030, cuStreamBeginCaptureToGraph)
	P(cuStreamGetCaptureInfo, 11030, cuStreamGetCaptureInfo_v2)
	P(cuStreamEndCapture, 10000, cuStreamEndCapture)
	P(cuStreamIsCapturing, 10000, cuStreamIsCapturing)
	P(cuThreadExchangeStreamCaptureMode, 10010,
	  cuThreadExchangeStreamCaptureMode)
	P(cuEventCreate, 2000, cuEventCreate)
	P(cuEventRecord, 2000, cuEventRecord)
	P(cuEventSynchronize, 2000, cuEventSynchronize)
	P(cuEventQuery, 2000, cuEventQuery)
	P(cuEventDestroy, 4000, cuEventDestroy_v2)
	P2(cuMemcpyHtoDAsync, 3020, cuMemcpyHtoDAsync_v2)
	P2(cuMemcpyDtoHAsync, 3020, cuMemcpyDtoHAsync_v2)
	P2(cuMemcpyAsync, 4000, cuMemcpyAsync)
	P2(cuMemcpy2DAsync, 3020, cuMemcpy2DAsync_v2)
	P2(cuMemcpy3DAsync, 3020, cuMemcpy3DAsync_v2)
	P2(cuMemcpy3DPeerAsync, 4000, cuMemcpy3DPeerAsync)
	P(cuDevicePrimaryCtxReset, 11000, cuDevicePrimaryCtxReset_v2)
	P(cuDevicePrimaryCtxRelease, 11000, cuDevicePrimaryCtxRelease_v2)
	P(cuDevicePrimaryCtxGetState, 7000, cuDevicePrimaryCtxGetState)
	P(cuCtxDestroy, 4000, cuCtxDestroy_v2)
	P(cuCtxGetDevice, 2000, cuCtxGetDevice)
	P2(cuMemcpyHtoAAsync, 3020, cuMemcpyHtoAAsync_v2)
	P2(cuMemcpyAtoHAsync, 3020, cuMemcpyAtoHAsync_v2)
	P2(cuMemcpyBatchAsync, 12080, cuMemcpyBatchAsync)
	P2(cuMemcpyBatchAsync, 13000, cuMemcpyBatchAsync_v2)
	P2(cuMemcpy3DBatchAsync, 12080, cuMemcpy3DBatchAsync)
	P2(cuMemcpy3DBatchAsync, 13000, cuMemcpy3DBatchAsync_v2)
	P2S(cuMemcpyHtoD, 3020, cuMemcpyHtoD_v2)
	P2S(cuMemcpyDtoH, 3020, cuMemcpyDtoH_v2)
	P2S(cuMemcpy, 4000, cuMemcpy)
	P2S(cuMemcpy2D, 3020, cuMemcpy2D_v2)
	P2S(cuMemcpy2DUnaligned, 3020, cuMemcpy2DUnaligned_v2)
	P2S(cuMemcpy3D, 3020, cuMemcpy3D_v2)
	P2S(cuMemcpy3DPeer, 4000, cuMemcpy3DPeer)
	P2S(cuMemcpyHtoA, 3020, cuMemcpyHtoA_v2)
	P2S(cuMemcpyAtoH, 3020, cuMemcpyAtoH_v2)
	P(cuDeviceGetAttribute, 2000, cuDeviceGetAttribute)
	P(cuDeviceGetPCIBusId, 4000, cuDeviceGetPCIBusId)
	FAKE_QUERY_PROCS
	P(cuGetProcAddress, 11030, cuGetProcAddress)
	P(cuGetProcAddress, 12000, cuGetProcAddress_v2)
#undef P
#undef P2
#undef P2S
};

CUresult cuGetProcAddress_v2(const char *sym, void **pfn, int ver,
			     unsigned long long flags, int *status)
{
	ENTRY("cuGetProcAddress_v2");
	int ptsz = (flags & 2) != 0;
	const struct proc *best = NULL;
	for (size_t i = 0; i < sizeof(procs) / sizeof(procs[0]); i++) {
		const struct proc *p = &procs[i];
		if (strcmp(p->name, sym) || p->since > ver)
			continue;
		/* the per-thread form where asked and there is one */
		if (best == NULL || p->since > best->since ||
		    (p->since == best->since && p->ptsz == ptsz))
			best = p;
	}
	/* a driver new enough for a real 13.x runtime (FAKE_CUDA_VERSION):
	 * fake_rt.h's entry points, and a logged stub for what the fake does
	 * not model, so the runtime finds every entry point it expects.
	 * FAKE_CUDA_TRACE=1: every lookup on stderr. */
	int stubbed = 0;
	if (!best && rt_mode()) {
		const struct proc *r = rt_proc(sym);
		if (r)
			best = r;
		else
			stubbed = 1;
	}
	if (getenv("FAKE_CUDA_TRACE"))
		fprintf(stderr, "fake: cuGetProcAddress %s %d %llx%s\n", sym, ver,
			flags, best ? "" : stubbed ? " STUB" : " MISSING");
	if (stubbed) {
		if (status)
			*status = 0;
		*pfn = rt_stub(sym);
		RETURN(OK);
	}
	if (status)
		*status = best ? 0 : 1;
	*pfn = best ? best->fn : NULL;
	RETURN(best ? OK : 500);
}

CUresult cuGetProcAddress(const char *sym, void **pfn, int ver,
			  unsigned long long flags)
{
	return cuGetProcAddress_v2(sym, pfn, ver, flags, NULL);
}
