/* A staging ring's registration is never on a copy's path (issue 39 item
 * 12), run under hostpin with FAKE_CUDA_REGISTER_GATE at the ring's size
 * (a registration that large waits until the program opens the gate).
 *   ring_bg background  HOSTPIN_STAGE_RING_BACKGROUND=1: the first copy
 *       each way asks for the ring and passes through; the ring's
 *       registration waits at the gate (the growth thread) while an H2D and
 *       a D2H complete, with their data.
 *   ring_bg inline      HOSTPIN_STAGE_RING_BACKGROUND=0: one thread's
 *       first copy registers the ring (held at the gate); another thread's
 *       copy on another stream completes meanwhile (it does not wait on the
 *       ring's lock), then the first completes once the gate opens.
 *   ring_bg must        HOSTPIN_STAGE_RING_BACKGROUND=1: a copy that must
 *       be staged (a 2D D2H across two registrations of a registered
 *       block), issued while the growth thread's registration of the ring
 *       is held (the program sees it reach the stream's context, the
 *       plan's last driver question before the ring), waits for the ring;
 *       the gate opened, its wait ends with the growth: staged, with its
 *       data (the case reads the staged count).
 *   ring_bg reset       HOSTPIN_STAGE_RING_BACKGROUND=1, HOSTPIN_TEST_PAUSE:
 *       device 0's primary context reset, and made again (the same
 *       handle), while the growth thread has pushed it for the H2D ring
 *       and not yet registered the ring (pause point ring_pushed); then
 *       the program exits (the exit waits for the growth).
 *   ring_bg reset_straddle  the same, the ring's registration held at
 *       the fake's gate: the reset's driver call done and the context made
 *       again (pause point end_called, inside the reset's hook) before the
 *       registration goes on; the reset returns after it.
 *   ring_bg reset_again  mode reset, then copies through the context made
 *       again until the growth thread pushes it for a ring again (the
 *       point armed again, not held): the rings are made again for it.
 * A copy that does not complete while the registration is held is a
 * failure (60 s: a hang), never a timing.  Without hostpin (no ring, no
 * gate) the copies' data alone is checked. */
#include <pthread.h>

#include "late_common.h"

CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr, const void *, size_t, CUstream);
CUresult cuDevicePrimaryCtxReset_v2(int);

struct job {
	CUstream s;
	char *h;
	CUdeviceptr d;
	size_t n;
	_Atomic int done;
};

static void *h2d_main(void *arg)
{
	struct job *j = arg;
	CHECK(cuCtxSetCurrent(ctx) == 0);
	CHECK(cuMemcpyHtoDAsync_v2(j->d, j->h, j->n, j->s) == 0);
	memset(j->h, 0, j->n); /* pageable semantics: consumed at return */
	CHECK(cuStreamSynchronize(j->s) == 0);
	j->done = 1;
	return NULL;
}

/* the same the other way: a D2H (pageable: there at return) */
static void *d2h_main(void *arg)
{
	struct job *j = arg;
	CHECK(cuCtxSetCurrent(ctx) == 0);
	CHECK(cuMemcpyDtoHAsync_v2(j->h, j->d, j->n, j->s) == 0);
	CHECK(same(j->h, j->n, 4));
	j->done = 1;
	return NULL;
}

static int job_done(void *arg)
{
	return ((struct job *)arg)->done;
}

static void job_start(struct job *j, pthread_t *t, unsigned seed)
{
	CHECK(cuStreamCreate(&j->s, 0) == 0);
	j->n = 16 * MB;
	j->h = plain(j->n);
	j->d = dev(j->n);
	fill(j->h, j->n, seed);
	CHECK(pthread_create(t, NULL, h2d_main, j) == 0);
}

/* hostpin is loaded (a ring to wait for) */
static int hosted(void)
{
	return tp_query() != NULL;
}

static int mode_background(void)
{
	struct job a = {0};
	pthread_t t;
	job_start(&a, &t, 1);
	if (!hosted()) {
		CHECK(pthread_join(t, NULL) == 0);
		CHECK(same(D(a.d), a.n, 1));
		return 0;
	}
	/* the copy completes; the ring's registration is held at the gate */
	wait_for(job_done, &a, "an H2D completed while the ring registered");
	wait_for(gate_held, NULL, "the ring's registration reached the gate");
	CHECK(pthread_join(t, NULL) == 0);
	CHECK(same(D(a.d), a.n, 1));
	/* a D2H too (its ring asked for, the growth thread still held) */
	char *back = plain(a.n);
	CHECK(cuMemcpyDtoHAsync_v2(back, a.d, a.n, a.s) == 0);
	CHECK(same(back, a.n, 1));
	CHECK(fake_cuda_gate_waiters() == 1);
	fake_cuda_open_gate();
	return 0;
}

static int mode_inline(void)
{
	struct job a = {0}, b = {0};
	pthread_t ta, tb;
	job_start(&a, &ta, 2); /* registers the H2D ring, held */
	if (!hosted()) {
		CHECK(pthread_join(ta, NULL) == 0);
		CHECK(same(D(a.d), a.n, 2));
		return 0;
	}
	wait_for(gate_held, NULL, "the first copy's ring registration");
	job_start(&b, &tb, 3); /* another stream's copy meanwhile */
	wait_for(job_done, &b, "a copy completed while the ring registered");
	CHECK(!a.done && fake_cuda_gate_waiters() == 1);
	fake_cuda_open_gate();
	CHECK(pthread_join(ta, NULL) == 0 && pthread_join(tb, NULL) == 0);
	CHECK(same(D(a.d), a.n, 2) && same(D(b.d), b.n, 3));
	return 0;
}

CUresult cuMemcpy2DAsync_v2(const M2D *, CUstream);
int fake_cuda_stream_ctx_asks(void);

struct rect_job {
	CUstream s;
	char *blk;
	CUdeviceptr d;
	_Atomic int done;
};

/* A D2H of 20 rows of 1 MiB to 2 MiB into the block: across its 8 MiB
 * registrations (HOSTPIN_REGISTER_CHUNK=8M); a D2H, since an H2D from a
 * registered block is never staged (plan.c: by pieces) */
static void *rect_main(void *arg)
{
	struct rect_job *j = arg;
	CHECK(cuCtxSetCurrent(ctx) == 0);
	M2D q;
	memset(&q, 0, sizeof(q));
	q.srcMemoryType = 2 /* DEVICE */, q.srcDevice = j->d;
	q.srcPitch = MB;
	q.dstMemoryType = 1 /* HOST */, q.dstHost = j->blk + 2 * MB;
	q.dstPitch = MB;
	q.WidthInBytes = MB, q.Height = 20;
	CHECK(cuMemcpy2DAsync_v2(&q, j->s) == 0);
	CHECK(cuStreamSynchronize(j->s) == 0);
	j->done = 1;
	return NULL;
}

static int asks_past(void *arg)
{
	return fake_cuda_stream_ctx_asks() > *(int *)arg;
}

static int mode_must(void)
{
	struct rect_job r = {0};
	r.blk = malloc(24 * MB);
	CHECK(r.blk != NULL);
	r.d = dev(20 * MB);
	CHECK(cuStreamCreate(&r.s, 0) == 0);
	fill(D(r.d), 20 * MB, 5);
	pthread_t t;
	if (!hosted()) {
		CHECK(pthread_create(&t, NULL, rect_main, &r) == 0);
		CHECK(pthread_join(t, NULL) == 0);
		CHECK(same(r.blk + 2 * MB, 20 * MB, 5));
		return 0;
	}
	wait_for(is_reg, r.blk, "the block registered");
	/* a plain D2H asks for the D2H ring and passes through; the ring's
	 * registration is held at the gate */
	struct job a = {0};
	pthread_t ta;
	CHECK(cuStreamCreate(&a.s, 0) == 0);
	a.n = 16 * MB;
	a.h = plain(a.n);
	a.d = dev(a.n);
	fill(D(a.d), a.n, 4);
	CHECK(pthread_create(&ta, NULL, d2h_main, &a) == 0);
	wait_for(job_done, &a, "a D2H completed while the ring registered");
	wait_for(gate_held, NULL, "the ring's registration reached the gate");
	CHECK(pthread_join(ta, NULL) == 0);
	int asks = fake_cuda_stream_ctx_asks();
	CHECK(pthread_create(&t, NULL, rect_main, &r) == 0);
	/* past its plan's last driver question, the ring being made: it
	 * waits for the ring (the gate still held) */
	wait_for(asks_past, &asks, "the 2D copy reached its ring");
	CHECK(!r.done && fake_cuda_gate_waiters() == 1);
	fake_cuda_open_gate();
	CHECK(pthread_join(t, NULL) == 0);
	CHECK(same(r.blk + 2 * MB, 20 * MB, 5));
	free(r.blk);
	return 0;
}

/* Device 0's primary context reset and made again (the same handle)
 * while the growth thread holds it pushed for the H2D ring asked for by
 * a first copy, at pause point ring_pushed, not yet registered through:
 * the ring must not be registered through the context made again as the
 * one that ended (it would stay live at exit: the engine tester's
 * reset-ring-registered-96581863).  The case reads EXIT live=0. */
static void rr_reset(CUcontext *c)
{
	struct job a = {0};
	pthread_t t;
	int hp = hosted();
	if (hp)
		pt_file("ring_pushed", "arm");
	job_start(&a, &t, 6);
	CHECK(pthread_join(t, NULL) == 0);
	CHECK(same(D(a.d), a.n, 6));
	if (hp)
		wait_for(pt_paused, "ring_pushed", "the ring's context pushed");
	CHECK(cuDevicePrimaryCtxReset_v2(0) == 0);
	CHECK(cuDevicePrimaryCtxRetain(c, 0) == 0);
	if (hp)
		pt_file("ring_pushed", "go");
}

static int mode_reset(void)
{
	CUcontext c;
	rr_reset(&c);
	return 0;
}

static _Atomic int rs_done;
static void *rs_reset(void *arg)
{
	(void)arg;
	CHECK(cuDevicePrimaryCtxReset_v2(0) == 0);
	rs_done = 1;
	return NULL;
}

/* The ring's registration held at the fake's gate (33554432) while the
 * driver resets the context and the program makes it again, before
 * hostpin learnt of the end (end_called): the registration, let on then,
 * lives in the context made again; it must be undone (the case reads
 * EXIT live=0). */
static int mode_reset_straddle(void)
{
	struct job a = {0};
	pthread_t t, r;
	job_start(&a, &t, 7);
	CHECK(pthread_join(t, NULL) == 0);
	CHECK(same(D(a.d), a.n, 7));
	if (!hosted())
		return 0;
	wait_for(gate_held, NULL, "the ring's registration reached the gate");
	pt_file("end_called", "arm");
	CHECK(pthread_create(&r, NULL, rs_reset, NULL) == 0);
	wait_for(pt_paused, "end_called", "the driver reset the context");
	CUcontext c;
	CHECK(cuDevicePrimaryCtxRetain(&c, 0) == 0);
	fake_cuda_open_gate(); /* the ring's registration goes on */
	pt_file("end_called", "go");
	CHECK(pthread_join(r, NULL) == 0 && rs_done);
	return 0;
}

/* 16 MiB through the context made again, on stream s; 1 once the growth
 * thread pushed the context for the ring again */
struct again {
	CUstream s;
	char *h;
	CUdeviceptr d;
};
static int copied_until_pushed(void *arg)
{
	struct again *g = arg;
	fill(g->h, 16 * MB, 8);
	CHECK(cuMemcpyHtoDAsync_v2(g->d, g->h, 16 * MB, g->s) == 0);
	memset(g->h, 0, 16 * MB);
	CHECK(cuStreamSynchronize(g->s) == 0);
	CHECK(same(D(g->d), 16 * MB, 8));
	return !hosted() || pt_paused("ring_pushed");
}
/* the point armed again: its .go left in place (the first thread may
 * still be about to see it), so the next thread there only says it came */
static void pt_rearm(const char *name)
{
	char p[512];
	snprintf(p, sizeof(p), "%s/%s.paused", getenv("HOSTPIN_TEST_PAUSE"),
		 name);
	CHECK(unlink(p) == 0);
	pt_file(name, "arm");
}

static int mode_reset_again(void)
{
	CUcontext c;
	rr_reset(&c);
	ctx = c;
	CHECK(cuCtxSetCurrent(ctx) == 0);
	struct again g;
	CHECK(cuStreamCreate(&g.s, 0) == 0);
	g.h = plain(16 * MB);
	g.d = dev(16 * MB);
	if (hosted())
		pt_rearm("ring_pushed");
	wait_for(copied_until_pushed, &g,
		 "the ring asked for again through the context made again");
	return 0;
}

int main(int argc, char **argv)
{
	static const struct staged_mode modes[] = {
	    {"background", mode_background},
	    {"inline", mode_inline},
	    {"must", mode_must},
	    {"reset", mode_reset},
	    {"reset_straddle", mode_reset_straddle},
	    {"reset_again", mode_reset_again},
	};
	return staged_main("ring_bg", argc, argv, modes);
}
