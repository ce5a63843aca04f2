/* A copy of several blocks begun while the registration thread registers
 * one of them (issue 39, "decided once"; the registration-first form of
 * late_pass.c's), over the fake driver's late mode (FAKE_CUDA_LATE_DMA=1),
 * run under hostpin.
 *   late_multi MODE   MODE: h2d_async, h2d_sync, d2h_async, d2h_sync
 * HOSTPIN_PIN_AFTER=2, HOSTPIN_REGISTER_CHUNK=8M, HOSTPIN_STAGE_MIN=4M,
 * FAKE_CUDA_REFUSE_PARTIAL=1 (a range only partly registered is refused),
 * FAKE_CUDA_REGISTER_HOLD_AFTER=8M (a registration of a piece of 8 MiB,
 * once made, keeps its thread until the program lets it go).
 * Two adjacent mappings: X (9 MiB, registered by the registration thread
 * in two pieces, 8 and 1 MiB, after two staged copies) and Y (8 MiB, never
 * copied).  While X's first piece is made and the thread is held in it,
 * thread A copies 2 MiB across X's first piece's end, its second piece and
 * into Y: one copy of two blocks, under HOSTPIN_STAGE_MIN.  It must succeed
 * with pageable semantics: never reach the driver over a range partly
 * registered (before: passed as it is, refused).  Then X is registered
 * whole.
 * LM_DEV1=1 (async modes): A's copy on a stream of device 1 (and into
 * device 1's memory) while device 0 is current: no ring for device 1, so
 * the copy cannot be staged; it must still never reach the driver whole
 * across X's first piece's end (before: passed as it is, refused).
 * LM_2D=1 (async modes): A's copy a 2D one (cuMemcpy2DAsync_v2) of 5 rows
 * of 384 KiB, pitch 384 KiB on both sides, from x + AT: its third row
 * across X's first piece's end, its fifth in Y; LM_2D=3: the same as a
 * 3D copy (cuMemcpy3DAsync_v2) of 5 slices of one row.
 * LM_HOLD=1 (h2d_async; HOSTPIN_STAGE_BUFFER=14M: 4 slots of 1.75 MiB a
 * direction, a ring under FAKE_CUDA_REGISTER_HOLD_AFTER; HOSTPIN_TEST_PAUSE=
 * DIR): before A's copy, every slot of the
 * H2D ring held by four other streams' staged copies of 6 MiB, one slot
 * each (a chunk under 2 MiB is copied inline and its DMA enqueued at once),
 * each at the fake's gate (FAKE_CUDA_HTOD_GATE, set then), and the ring's
 * growth that A's copy asks for held at its pause point (ring_pushed): A's
 * copy, which must be staged, can take no slot; it must still never reach
 * the driver whole (before: passed as it is, refused).  A 1D copy there is of 1 MiB
 * (under the gate), [x + 7.5 MiB, x + 8.5 MiB): wholly in X across its
 * first piece's end; a 2D or 3D one (LM_2D) as above, of X and Y.
 * LM_END=1 (with LM_DEV1=1; HOSTPIN_TEST_PAUSE=DIR): A's copy held at
 * the plan's pause point several_look (after the plan saw X being
 * registered, before it counts itself a reader of X's prefix) while X's
 * registration ends, X registered whole: the copy, X's both pieces and
 * Y, must still never reach the driver whole (before: passed as it is,
 * refused).
 * LM_LATE=1 (with LM_DEV1=1; HOSTPIN_TEST_PAUSE=DIR): A's copy, planned
 * while X is the thread's (so it must not go as it is), held at the
 * pause point before it becomes a reader of X's prefix (several_look)
 * while the thread ends X's job (X registered whole, the thread held at
 * its pause point after the job: bg_ended); it must still never reach
 * the driver whole across X's registrations and into Y (before: passed
 * as it is, refused; the engine tester's mapfix-uni-96575268).  LM_UNI=1
 * (with LM_LATE): A's copy a unified one (cuMemcpyAsync), as there. */
#include <pthread.h>

#include "late_common.h"

CUresult cuMemcpyHtoD_v2(CUdeviceptr, const void *, size_t);
CUresult cuMemcpyDtoH_v2(void *, CUdeviceptr, size_t);
CUresult cuMemcpy2DAsync_v2(const M2D *, CUstream);
CUresult cuMemcpy3DAsync_v2(const M3D *, CUstream);
CUresult cuMemcpyAsync(CUdeviceptr, CUdeviceptr, size_t, CUstream);
int fake_cuda_registrations_held(void);
void fake_cuda_release_registration(void);
size_t fake_cuda_registered_bytes(const void *, size_t);

#define XN (9 * MB)
#define YN (8 * MB)
#define AT (7 * MB + MB / 2) /* A's copy: [x + AT, x + AT + AN): */
#define AN (2 * MB)          /* X's both pieces and Y */

static char *x;
static CUdeviceptr dA;
static size_t at = AT, an = AN; /* LM_HOLD (1D): 1 MiB */
static CUstream sA;
static int htod, async_, rect, uni;
#define RW (384 * 1024) /* LM_2D: a row; 5 of them */

/* A's copy as a 2D one of 5 rows (LM_2D), checked as copy_checked */
static CUresult copy_2d(int h2d, CUdeviceptr d, char *h, CUstream s,
			unsigned seed)
{
	M2D q;
	memset(&q, 0, sizeof(q));
	if (h2d) {
		q.srcMemoryType = HOST, q.srcHost = h, q.srcPitch = RW;
		q.dstMemoryType = DEVICE, q.dstDevice = d, q.dstPitch = RW;
	} else {
		q.srcMemoryType = DEVICE, q.srcDevice = d, q.srcPitch = RW;
		q.dstMemoryType = HOST, q.dstHost = h, q.dstPitch = RW;
	}
	q.WidthInBytes = RW, q.Height = 5;
	CUresult r;
	if (rect == 3) { /* 5 slices of one row */
		M3D t;
		memset(&t, 0, sizeof(t));
		t.srcMemoryType = q.srcMemoryType, t.srcHost = q.srcHost;
		t.srcDevice = q.srcDevice, t.srcPitch = RW, t.srcHeight = 1;
		t.dstMemoryType = q.dstMemoryType, t.dstHost = q.dstHost;
		t.dstDevice = q.dstDevice, t.dstPitch = RW, t.dstHeight = 1;
		t.WidthInBytes = RW, t.Height = 1, t.Depth = 5;
		r = cuMemcpy3DAsync_v2(&t, s);
	} else {
		r = cuMemcpy2DAsync_v2(&q, s);
	}
	if (h2d)
		memset(h, 0, 5 * RW);
	if (r == 0)
		r = cuStreamSynchronize(s);
	if (r == 0 && !same(h2d ? D(d) : h, 5 * RW, h2d ? seed : seed + 1))
		r = (CUresult)-1;
	return r;
}
/* LM_HOLD: the copies that hold the ring's slots, each on its stream */
#define HN (6 * MB)
struct holder {
	pthread_t t;
	char *h;
	CUdeviceptr d;
	CUstream s;
	CUresult r;
};
#define HOLDERS 4 /* the ring's slots */
static struct holder hold[HOLDERS];

static void *copy_hold(void *arg)
{
	struct holder *w = arg;
	CHECK(cuCtxSetCurrent(ctx) == 0);
	w->r = copy_checked(1, 1, w->d, w->h, HN, w->s, 43);
	return NULL;
}

static int gated(void *arg)
{
	return fake_cuda_gate_waiters() == *(int *)arg;
}

static void holders_start(void)
{
	pt_file("ring_pushed", "arm");
	setenv("FAKE_CUDA_HTOD_GATE", "1835008", 1); /* a slot */
	for (int i = 0; i < HOLDERS; i++) {
		struct holder *w = &hold[i];
		w->h = mmap(NULL, HN, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		CHECK(w->h != MAP_FAILED);
		fill(w->h, HN, 43);
		w->d = dev(HN);
		CHECK(cuStreamCreate(&w->s, 0) == 0);
		CHECK(pthread_create(&w->t, NULL, copy_hold, w) == 0);
		int n = i + 1;
		wait_for(gated, &n, "a holder's copy at the fake's gate");
	}
}

static void holders_end(void)
{
	/* A's copy found no slot and asked for a growth, held here */
	wait_for(pt_paused, "ring_pushed", "the ring's growth held");
	fake_cuda_open_gate();
	pt_file("ring_pushed", "go");
	for (int i = 0; i < HOLDERS; i++) {
		CHECK(pthread_join(hold[i].t, NULL) == 0);
		printf("holder %d: %d\n", i, hold[i].r);
		CHECK(hold[i].r == 0);
	}
}

static volatile int a_done;
static CUresult a_r = -2;

static void *copy_a(void *arg)
{
	(void)arg;
	CHECK(cuCtxSetCurrent(ctx) == 0);
	if (uni) { /* LM_UNI: unified, checked as copy_checked */
		CUdeviceptr h = (CUdeviceptr)(uintptr_t)(x + at);
		a_r = htod ? cuMemcpyAsync(dA, h, an, sA)
			   : cuMemcpyAsync(h, dA, an, sA);
		if (htod)
			memset(x + at, 0, an);
		if (a_r == 0)
			a_r = cuStreamSynchronize(sA);
		if (a_r == 0 && !same(htod ? D(dA) : x + at, an,
				      htod ? 41 : 42))
			a_r = (CUresult)-1;
	} else {
		a_r = rect ? copy_2d(htod, dA, x + at, sA, 41)
			   : copy_checked(htod, async_, dA, x + at, an, sA, 41);
	}
	a_done = 1;
	return NULL;
}

/* hostpin's log (HOSTPIN_LOG_FILE, HOSTPIN_LOG=debug) says a copy waits
 * for the registration thread */
static int log_says_waits(void)
{
	return log_says("waits for the registration");
}

static int held_one(void *arg)
{
	(void)arg;
	return fake_cuda_registrations_held() == 1;
}

static int a_there(void *arg)
{
	(void)arg;
	return a_done || log_says_waits();
}

static int registered_all(void *arg)
{
	(void)arg;
	return is_reg(x) && fake_cuda_registered_bytes(x, XN) == XN;
}

static int run(int h2d, int async)
{
	htod = h2d, async_ = async;
	const char *r2 = getenv("LM_2D");
	rect = r2 ? atoi(r2) : 0;
	CHECK(!rect || async);
	const char *lh = getenv("LM_HOLD");
	int holding = lh ? atoi(lh) : 0;
	CHECK(!holding || (h2d && async));
	if (holding && !rect) /* under a slot: passed whole, never gated */
		an = MB;
	const char *ll = getenv("LM_LATE"), *lu = getenv("LM_UNI");
	int late = ll && *ll == '1';
	uni = lu && *lu == '1';
	CHECK(!uni || late);
	alarm(60);
	/* X then Y, adjacent, X 8 MiB aligned (its pieces: the cells) */
	char *raw = mmap(NULL, XN + YN + 8 * MB, PROT_NONE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	CHECK(raw != MAP_FAILED);
	x = (char *)(((uintptr_t)raw + 8 * MB - 1) & ~(uintptr_t)(8 * MB - 1));
	CHECK(mmap(x, XN, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == x);
	CHECK(mmap(x + XN, YN, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == x + XN);
	CHECK(tp_flags(x) != 0 && tp_flags(x + XN) != 0 && !is_reg(x));
	fill(x, XN, 40);
	fill(x + XN, YN, 40);
	if (h2d)
		fill(x + at, an, 41);
	CUdeviceptr dx = dev(XN);
	CUstream sx;
	CHECK(cuStreamCreate(&sx, 0) == 0);
	const char *d1 = getenv("LM_DEV1");
	if (d1 && *d1 == '1') {
		/* A's stream and memory device 1's; device 0 current */
		CUcontext c1;
		CHECK(async);
		CHECK(cuDevicePrimaryCtxRetain(&c1, 1) == 0);
		CHECK(cuCtxSetCurrent(c1) == 0);
		dA = dev(AN);
		CHECK(cuStreamCreate(&sA, 0) == 0);
		CHECK(cuCtxSetCurrent(ctx) == 0);
	} else {
		dA = dev(AN);
		CHECK(cuStreamCreate(&sA, 0) == 0);
	}
	fill(D(dA), AN, 42);
	/* two staged copies: X earns registration, in the background */
	CHECK(cuMemcpyHtoDAsync_v2(dx, x, XN, sx) == 0);
	CHECK(cuMemcpyHtoDAsync_v2(dx, x, XN, sx) == 0);
	wait_for(held_one, NULL, "X's first piece made, its thread held");
	if (holding) {
		CHECK(cuStreamSynchronize(sx) == 0);
		holders_start();
	}
	const char *le = getenv("LM_END");
	int ending = le && *le == '1';
	CHECK(!ending || (d1 && *d1 == '1'));
	CHECK(!(ending && late));
	if (ending || late)
		pt_file("several_look", "arm");
	pthread_t a;
	CHECK(pthread_create(&a, NULL, copy_a, NULL) == 0);
	if (ending) {
		/* X's registration ends between the plan's looks */
		wait_for(pt_paused, "several_look", "A's copy at the plan");
		fake_cuda_release_registration();
		wait_for(registered_all, NULL, "X registered");
		pt_file("several_look", "go");
	} else if (late) {
		/* A planned while X is the thread's; X's job ends before A
		 * reads X's prefix */
		wait_for(pt_paused, "several_look", "A's copy at several_look");
		pt_file("bg_ended", "arm");
		fake_cuda_release_registration();
		wait_for(pt_paused, "bg_ended", "X's job ended");
		CHECK(is_reg(x) && fake_cuda_registered_bytes(x, XN) == XN);
		pt_file("several_look", "go");
		CHECK(pthread_join(a, NULL) == 0);
		pt_file("bg_ended", "go");
	} else {
		wait_for(a_there, NULL, "A's copy returned or waiting");
		fake_cuda_release_registration();
	}
	if (!late)
		CHECK(pthread_join(a, NULL) == 0);
	printf("A's copy of X and Y during X's registration: %d\n", a_r);
	if (holding)
		holders_end();
	CHECK(a_r == 0);
	CHECK(cuStreamSynchronize(sx) == 0);
	wait_for(registered_all, NULL, "X registered");
	CHECK(munmap(x, XN + YN) == 0);
	CHECK(fake_cuda_registered_bytes(x, XN) == 0);
	return 0;
}

int main(int argc, char **argv)
{
	return late_dir_main("late_multi", argc, argv, run);
}
