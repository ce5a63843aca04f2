/* Copies that must not reach the driver whole, made while a capture
 * elsewhere prohibits the staging ring's calls (issue 39 item 6 and its
 * 2D/3D limit), over the fake driver's late mode (FAKE_CUDA_LATE_DMA=1),
 * which refuses a range that one registration does not cover
 * (FAKE_CUDA_REFUSE_PARTIAL=1), run under hostpin.
 *   late_cap STATE-CAPTURE-FORM-DIR
 * STATE: registering (a 32 MiB block being registered in the background
 * in 8 MiB pieces, HOSTPIN_REGISTER_CHUNK=8M, its first pieces registered
 * and the next held at the fake's gate, FAKE_CUDA_REGISTER_GATE=8M, or
 * parked by the capture: nothing depends on timing) or registered (the
 * block registered whole in 8 MiB pieces, HOSTPIN_PIN_AFTER=0).
 * CAPTURE: local (this thread captures another stream in thread-local
 * mode) or global (another thread captures another stream in global
 * mode); or ownlocal, ownrelaxed (this thread captures the copies' stream
 * itself, in thread-local or relaxed mode: the copies are captured, the
 * fake drops them; their data not checked, a copy's range still the
 * driver's to refuse).  FORM: 1d (1 MiB), 2d (16 rows of 64 KiB, 128 KiB apart, one
 * row across) or 3d (the same rows as 2 slices of 8); DIR: htod or dtoh.
 * In one capture, two such copies on a stream not capturing (own: on the
 * stream capturing): across the
 * end of the block's first 8 MiB piece (inside the registered part while
 * registering) and across the end of the registered part (16 MiB, or
 * 24 MiB under a global capture, whose begin waits for the piece in
 * flight).  Each says "at OFF MiB: RC"; the data checked after the
 * capture's end; a copy the driver refused (rc 1: it got a range only
 * partly registered) fails the run.  Cases: 196-late_capture.sh. */
#include <pthread.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "late_common.h"

CUresult cuMemcpy2DAsync_v2(const M2D *, CUstream);
CUresult cuMemcpy3DAsync_v2(const M3D *, CUstream);
CUresult cuStreamBeginCapture_v2(CUstream, int);
CUresult cuStreamEndCapture(CUstream, void **);
int fake_cuda_capture_broken(void);

#define W ((size_t)64 * 1024)
#define PITCH ((size_t)128 * 1024)
#define ROWS ((size_t)16)

static CUstream cs; /* the stream captured */
static int global_mode, own_mode; /* own: 1 local, 2 relaxed */
static _Atomic int cap_begun, cap_end;
static _Atomic pid_t cap_tid;
static pthread_t cap_thread;

static void *capture_thread(void *arg)
{
	(void)arg;
	CHECK(cuCtxSetCurrent(ctx) == 0);
	cap_tid = (pid_t)syscall(SYS_gettid);
	CHECK(cuStreamBeginCapture_v2(cs, 0) == 0);
	cap_begun = 1;
	while (!cap_end) /* ended by the thread that began it */
		usleep(1000);
	void *g;
	CHECK(cuStreamEndCapture(cs, &g) == 0);
	return NULL;
}
static int began(void *arg) { (void)arg; return cap_begun != 0; }
/* latched: the begin returned, or waits (for a registration in the
 * driver, held at the fake's gate) */
static int began_or_waits(void *arg)
{
	static int seen;
	(void)arg;
	return seen = seen || cap_begun ||
		      (cap_tid && task_syscall(cap_tid) == SYS_futex);
}

/* registering: a global capture's begin waits for the registration in
 * the driver (the piece held at the gate): let that piece through; the
 * next waits for the capture's end (parked). */
static void capture_begin(int registering)
{
	if (!global_mode) {
		CHECK(cuStreamBeginCapture_v2(cs, own_mode ? own_mode : 1) == 0);
		return;
	}
	CHECK(pthread_create(&cap_thread, NULL, capture_thread, NULL) == 0);
	wait_for(began_or_waits, NULL, "the global capture's begin returned or waits");
	if (registering && !cap_begun)
		fake_cuda_open_gate_once();
	wait_for(began, NULL, "the other thread's global capture began");
}

static void capture_end(void)
{
	if (!global_mode) {
		void *g;
		CHECK(cuStreamEndCapture(cs, &g) == 0);
	} else {
		cap_end = 1;
		CHECK(pthread_join(cap_thread, NULL) == 0);
	}
	CHECK(!fake_cuda_capture_broken());
}

/* A copy of FORM (0: 1D, 1: 2D, 2: 3D) between the host rows at at and
 * d, on s: its result.  1D: 1 MiB from at; 2D: ROWS rows of W bytes PITCH
 * apart from at; 3D: the same rows as 2 slices of ROWS / 2. */
static CUresult copy(int form, int htod, char *at, CUdeviceptr d, CUstream s)
{
	if (form == 0)
		return htod ? cuMemcpyHtoDAsync_v2(d, at, 1 * MB, s)
			    : cuMemcpyDtoHAsync_v2(at, d, 1 * MB, s);
	if (form == 1) {
		M2D q = {.WidthInBytes = W, .Height = ROWS};
		if (htod)
			q.srcMemoryType = HOST, q.srcHost = at, q.srcPitch = PITCH,
			q.dstMemoryType = DEVICE, q.dstDevice = d, q.dstPitch = W;
		else
			q.srcMemoryType = DEVICE, q.srcDevice = d, q.srcPitch = W,
			q.dstMemoryType = HOST, q.dstHost = at, q.dstPitch = PITCH;
		return cuMemcpy2DAsync_v2(&q, s);
	}
	M3D q = {.WidthInBytes = W, .Height = ROWS / 2, .Depth = 2};
	if (htod)
		q.srcMemoryType = HOST, q.srcHost = at, q.srcPitch = PITCH,
		q.srcHeight = ROWS / 2, q.dstMemoryType = DEVICE,
		q.dstDevice = d, q.dstPitch = W, q.dstHeight = ROWS / 2;
	else
		q.srcMemoryType = DEVICE, q.srcDevice = d, q.srcPitch = W,
		q.srcHeight = ROWS / 2, q.dstMemoryType = HOST,
		q.dstHost = at, q.dstPitch = PITCH, q.dstHeight = ROWS / 2;
	return cuMemcpy3DAsync_v2(&q, s);
}

/* The host side of a copy of FORM across host byte b: its first byte
 * (1D: half each side; 2D, 3D: row ROWS / 2 across b). */
static char *host_at(int form, char *b)
{
	return form == 0 ? b - MB / 2 : b - ROWS / 2 * PITCH - W / 2;
}

/* The data of a copy of FORM (seed) before it (before: 1) or after it. */
static void data(int form, int htod, char *at, CUdeviceptr d, unsigned seed,
		 int before)
{
	if (form == 0) {
		if (before)
			fill(htod ? at : D(d), MB, seed);
		else
			CHECK(same(htod ? D(d) : at, MB, seed));
		return;
	}
	for (size_t i = 0; i < ROWS; i++) {
		char *h = at + i * PITCH, *v = (char *)D(d) + i * W;
		if (before)
			fill(htod ? h : v, W, seed + (unsigned)i);
		else
			CHECK(same(htod ? v : h, W, seed + (unsigned)i));
	}
}

/* the first two pieces registered, the third held at the gate */
static int two_pieces(void *p)
{
	return fake_cuda_is_registered(p, 8 * MB) &&
	       fake_cuda_is_registered((char *)p + 8 * MB, 8 * MB) &&
	       fake_cuda_gate_waiters() == 1;
}

static int run(int registering, int form, int htod)
{
	alarm(30);
	CUdeviceptr d;
	CUstream s;
	char *blk;
	if (registering) {
		blk = half_registered(1, &d, &s);
		fake_cuda_open_gate_once(); /* the second piece */
		wait_for(two_pieces, blk, "two pieces registered, the third held");
	} else {
		void *p = NULL;
		CHECK(posix_memalign(&p, 8 * MB, 32 * MB) == 0);
		blk = p;
		CHECK(is_reg(blk));
		d = dev(4 * MB);
		CHECK(cuStreamCreate(&s, 0) == 0);
	}
	if (own_mode)
		cs = s;
	else
		CHECK(cuStreamCreate(&cs, 0) == 0);
	/* the registered part's end: 24 MiB when the capture's begin let
	 * the third piece through (capture_begin) */
	size_t off[2] = {8 * MB, registering && global_mode ? 24 * MB : 16 * MB};
	CUdeviceptr dv[2] = {d, d + 2 * MB};
	for (int k = 0; k < 2; k++)
		data(form, htod, host_at(form, blk + off[k]), dv[k], 20 + 20 * k, 1);
	capture_begin(registering);
	int bad = 0;
	for (int k = 0; k < 2; k++) {
		CUresult r = copy(form, htod, host_at(form, blk + off[k]), dv[k], s);
		printf("at %zu MiB: %d\n", off[k] / MB, r);
		bad += r != 0;
	}
	capture_end();
	CHECK(cuStreamSynchronize(s) == 0);
	for (int k = 0; k < 2 && !own_mode; k++) /* (own: captured) */
		data(form, htod, host_at(form, blk + off[k]), dv[k], 20 + 20 * k, 0);
	if (registering) {
		CHECK(!is_reg(blk)); /* still being registered throughout */
		fake_cuda_open_gate();
		wait_for(is_reg, blk, "the block registered");
	}
	free(blk);
	return bad != 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	char st[16], cap[16], form[4], dir[8];
	CHECK(argc == 2 && sscanf(argv[1], "%15[a-z]-%15[a-z]-%3[a-z0-9]-%7[a-z]",
				  st, cap, form, dir) == 4);
	int registering = strcmp(st, "registering") == 0;
	CHECK(registering || strcmp(st, "registered") == 0);
	global_mode = strcmp(cap, "global") == 0;
	own_mode = strcmp(cap, "ownlocal") == 0	  ? 1
		   : strcmp(cap, "ownrelaxed") == 0 ? 2
						    : 0;
	CHECK(global_mode || own_mode || strcmp(cap, "local") == 0);
	int f = form[0] - '1', htod = strcmp(dir, "htod") == 0;
	CHECK(f >= 0 && f < 3 && strcmp(form + 1, "d") == 0);
	CHECK(htod || strcmp(dir, "dtoh") == 0);
	CHECK(cuInit(0) == 0);
	CHECK(cuDevicePrimaryCtxRetain(&ctx, 0) == 0);
	CHECK(cuCtxSetCurrent(ctx) == 0);
	int r = run(registering, f, htod);
	CHECK(cuCtxSynchronize() == 0);
	if (r == 0)
		printf("late_cap %s: ok\n", argv[1]);
	return r;
}
