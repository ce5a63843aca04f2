/* The fake driver's timed mode, FAKE_CUDA_TIMED=1 (included by
 * fake_copy.h after its streams and ops; the late mode's worker per stream,
 * fake_late.h, runs the work): for benchmarks only, no test depends on its
 * clock.  One DMA engine per direction (H2D, D2H) shared by every stream,
 * modelled as a link clock: an async copy reserves its link at enqueue,
 * start = max(now, its stream's last work, the link free), finish = start +
 * bytes / rate, and completes (its events, a sync on its stream) at finish;
 * the memcpy still happens, on the stream's worker, so data arrives as in
 * the other modes.  A copy with a registered (or driver-allocated) host
 * side moves at the pinned rate; one with a pageable host side at the
 * slower pageable rate of its direction, and the call returns only after
 * it (the driver stages pageable memory through buffers of its own).
 * cuMemHostRegister populates its pages and sleeps for its bytes
 * (outside the fake's lock).  Rates
 * (env, GB/s and s/GiB as on the device) default to an H200's, all scaled
 * by FAKE_CUDA_TIMED_SCALE (default 0.05: a 2.7 GB/s link, about a quarter
 * of one core's memcpy on the machine this was written on, so the worker's
 * memcpy hides under the link time):
 *   FAKE_CUDA_PINNED_GBS 54, FAKE_CUDA_PAGEABLE_H2D_GBS 7.2,
 *   FAKE_CUDA_PAGEABLE_D2H_GBS 12.5, FAKE_CUDA_REGISTER_S_PER_GIB 0.35;
 * a pageable D2H into a fresh destination: FAKE_CUDA_FRESH_X (timed_move).
 * FAKE_CUDA_TIMED=2: the same clock, but the DMA moves no bytes (a copy
 * engine costs the host no CPU; the worker's memcpy would compete with the
 * program's own on a small machine): for the memcpy-bound regime, where
 * the link outruns one core's memcpy (scripts/bench-link's rows); the
 * device never receives the data, so a program checks none (a pageable
 * D2H's destination is written with zeros: the driver's CPU copy and
 * its page faults).  Nor does the fake's own bookkeeping cost the host
 * more than a driver's would: no audit of the held ranges on each call
 * (fake_common.h), ops from a free list (fake_copy.h), and an event whose
 * copies are due by the clock is complete at the query that asks
 * (timed_ev_due), not when the stream's worker is next scheduled; and the
 * worker is not woken at each enqueue (fake_copy.h's enqueue: only for a
 * host function or a hold, and by whoever waits or asks about work not
 * due), so it takes no turn on the program's cores per copy (issue 43: two
 * streams on two cores that both copy, two wake-ups per op each).
 * A program may make a stream busy without the link (a kernel):
 * fake_cuda_timed_kernel(stream, seconds).  Known simplification: a copy
 * reserves its link in enqueue order, so one queued behind a long kernel
 * holds the link from the kernel's end for copies enqueued after it. */
#include <time.h>

static int timed_on(void)
{
	static int on = -1;
	if (on < 0) {
		const char *e = getenv("FAKE_CUDA_TIMED");
		on = e && (*e == '1' || *e == '2') ? *e - '0' : 0;
	}
	return on;
}

/* FAKE_CUDA_TIMED=2: op o's bytes are not moved (its staging freed); a
 * pageable D2H's destination is still written (zeros, on this worker,
 * within the link's time), as the driver copies out of its own buffers
 * with the CPU, on one thread: into a fresh destination its page faults
 * are the pageable path's cost (an H100 host: 1.2 GB/s, 13 into a warm
 * one). */
static int timed_drop(struct op *o)
{
	if (timed_on() != 2)
		return 0;
	if (o->touch && o->n)
		memset(o->dst, 0, o->n);
	if (o->staging)
		unraw(o->staging, o->n);
	o->staging = NULL;
	o->n = 0;
	return 1;
}

static double timed_env(const char *name, double dflt)
{
	const char *e = getenv(name);
	return e && atof(e) > 0 ? atof(e) : dflt;
}

static double timed_scale(void)
{
	return timed_env("FAKE_CUDA_TIMED_SCALE", 0.05);
}

/* bytes per second of a copy: link 1 H2D, 2 D2H; pinned or pageable */
static double timed_rate(int link, int pinned)
{
	double gbs = pinned ? timed_env("FAKE_CUDA_PINNED_GBS", 54)
		     : link == 1 ? timed_env("FAKE_CUDA_PAGEABLE_H2D_GBS", 7.2)
				 : timed_env("FAKE_CUDA_PAGEABLE_D2H_GBS", 12.5);
	return gbs * 1e9 * timed_scale();
}

static double timed_now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void timed_sleep_until(double t)
{
	double d = t - timed_now();
	if (d <= 0)
		return;
	struct timespec ts = {(time_t)d, (long)((d - (double)(time_t)d) * 1e9)};
	while (nanosleep(&ts, &ts) != 0)
		;
}

/* Are [p, p+n)'s first, middle and last pages all resident? */
static int timed_resident(const void *p, size_t n)
{
	uintptr_t a = (uintptr_t)p, at[3] = {a, a + n / 2, a + n - 1};
	for (int i = 0; i < 3; i++) {
		unsigned char v = 0;
		if (mincore((void *)(at[i] & ~(uintptr_t)4095), 4096, &v) != 0 ||
		    !(v & 1))
			return 0;
	}
	return 1;
}

/* The worker's part of op o in the timed mode: its bytes (or, mode 2,
 * none: timed_drop), and a pageable D2H into a destination not resident
 * (fresh) no sooner than FAKE_CUDA_FRESH_X (2.7) times the worker's own
 * fault-in of it.  The driver's pageable path faults a fresh destination
 * in far slower than one core's copy into it: on issue 43's H100 host,
 * 1.2 GB/s against 3.2 for one staging thread's copy into the same kind
 * of destination (bench/gpu-check-h100-default.txt: "d2h pageable" first
 * copies, and the staged first copy with HOSTPIN_STAGE_THREADS=1), while
 * here a worker's memset into it ran as fast as a staging thread's copy
 * (bench-link's D2H rows at 0.95 of pageable with one copy thread, where
 * that host measured 2.8).  The link's clock is not held meanwhile (the
 * driver's CPU copy, not its DMA). */
static void timed_move(struct op *o)
{
	int fresh = o->touch && o->n && !timed_resident(o->dst, o->n);
	double t0 = timed_now();
	if (!timed_drop(o)) /* FAKE_CUDA_TIMED=2: no bytes */
		run_data(o);
	if (fresh)
		timed_sleep_until(t0 + (timed_now() - t0) *
					       timed_env("FAKE_CUDA_FRESH_X", 2.7));
}

/* The links' clocks: when each is next free. */
static pthread_mutex_t timed_mu = PTHREAD_MUTEX_INITIALIZER;
static double link_free[3];

/* Under s->mu, at enqueue: when op o completes. */
static double timed_due(stream_t *s, struct op *o)
{
	double start = timed_now();
	if (o->due > start) /* the legacy ordering's (fake_order.h) */
		start = o->due;
	if (s->until > start)
		start = s->until;
	double end = start + o->dur;
	if (o->link && o->n) {
		pthread_mutex_lock(&timed_mu);
		if (link_free[o->link] > start)
			start = link_free[o->link];
		end = start + (double)o->n / o->rate;
		link_free[o->link] = end;
		pthread_mutex_unlock(&timed_mu);
	}
	s->until = end;
	return end;
}

/* seg(): which link a copy uses and at what rate; a pageable host side
 * makes the call wait for the copy. */
static void timed_seg(struct xfer *x, struct op *o, int hs, int hd, int ps,
		      int pd)
{
	if (!timed_on())
		return;
	if ((hs && !ps) || (hd && !pd))
		x->wait = 1; /* not staged by the fake: the call waits */
	o->link = hs && !hd ? 1 : hd && !hs ? 2 : 0;
	if (!o->link)
		return; /* device to device, or host to host: not on a link */
	int pinned = o->link == 1 ? ps : pd;
	o->touch = o->link == 2 && !pd;
	o->rate = timed_rate(o->link, pinned);
}

/* cuMemHostRegister's cost, before it takes the fake's lock: its pages
 * populated, as pinning does (a registered buffer is never first touched
 * by a copy: hostpin's staging ring included), within the modelled time. */
static void timed_register(void *p, size_t n)
{
	if (!timed_on())
		return;
	double t0 = timed_now();
	double s = timed_env("FAKE_CUDA_REGISTER_S_PER_GIB", 0.35) /
		   timed_scale();
#ifdef MADV_POPULATE_WRITE
	uintptr_t a = (uintptr_t)p & ~(uintptr_t)4095;
	(void)madvise((void *)a, (uintptr_t)p + n - a, MADV_POPULATE_WRITE);
#else
	(void)p;
#endif
	timed_sleep_until(t0 + s * (double)n / (1 << 30));
}

/* cuEventQuery in the timed mode, e not marked done yet: 1 if its latest
 * record is due by the link's clock (every copy before it on its stream
 * ended then) with no hold before it, and the query should wait for the
 * worker to mark it; 2 (FAKE_CUDA_TIMED=2, nothing before it but copies
 * and records, whose bytes are not moved) if it is complete now, marked
 * here.  0: not due.  A GPU's event is complete when its work is, whether
 * or not a host thread got round to it: on a machine whose cores all
 * copy, the worker woke up to a millisecond after its copy's end (a DMA
 * that cost the host its scheduling, which issue 43's model must not). */
static int timed_ev_due(struct event *e)
{
	stream_t *s = __atomic_load_n(&e->s, __ATOMIC_RELAXED);
	if (!timed_on() || !s)
		return 0;
	int due = 0, plain = timed_on() == 2, behind = 0;
	pthread_mutex_lock(&s->mu);
	struct late *l = s->late;
	for (struct op *o = s->head; o; o = o->next) {
		plain &= !o->host_fn && !o->hold && !o->touch;
		behind |= order_pending(o) != NULL; /* fake_order.h */
		if (o->ev == e &&
		    o->seq == __atomic_load_n(&e->seq, __ATOMIC_RELAXED)) {
			due = o->due <= timed_now() && !behind &&
			      (!l || l->released >= l->holds);
			if (due && plain) {
				/* release: as run_op's */
				__atomic_store_n(&e->done, 1, __ATOMIC_RELEASE);
				due = 2;
			}
			break;
		}
	}
	pthread_mutex_unlock(&s->mu);
	return due;
}

static unsigned long long enqueue(stream_t *s, struct op *o);
static void late_run(stream_t *s, unsigned long long qn, int wait);

/* A kernel: the stream is busy for `seconds`, no link used.  -1 outside
 * the timed mode. */
int fake_cuda_timed_kernel(stream_t *s, double seconds);
int fake_cuda_timed_kernel(stream_t *s, double seconds)
{
	if (!timed_on())
		return -1;
	struct op *o = op_new();
	memset(o, 0, sizeof(*o));
	o->dur = seconds;
	enqueue(s, o);
	return 0;
}

/* The driver's page-locked allocation (cuMemAllocHost_v2, fake_rt.h's),
 * exported by name too: a benchmark's pinned baseline. */
static CUresult rt_host_alloc0(void **pp, size_t n);
CUresult cuMemAllocHost_v2(void **pp, size_t n);
CUresult cuMemAllocHost_v2(void **pp, size_t n)
{
	return rt_host_alloc0(pp, n);
}
