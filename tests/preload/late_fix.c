/* The copy engine's third pass (issue 39, section 2) over the fake
 * driver's late mode (FAKE_CUDA_LATE_DMA=1: DMA runs on a worker thread per
 * stream, only as far as the program synchronised; fake_late.h), run under
 * hostpin.
 *   late_fix MODE   (see main)
 * Each mode checks data and semantics and exits non-zero when they differ;
 * a wait that can never end (a stream the program holds, released only
 * after what must not wait for it returned) is a hang that alarm() turns
 * into a failure.  What hostpin's threads do is polled for, never timed. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "late_common.h"

CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr, const void *, size_t,
				   CUstream);
CUresult cuMemcpyDtoHAsync_v2_ptsz(void *, CUdeviceptr, size_t, CUstream);
CUresult cuMemcpy2DAsync_v2(const M2D *, CUstream);
CUresult cuStreamBeginCapture_v2(CUstream, int);
CUresult cuStreamEndCapture(CUstream, void **);
int fake_cuda_capture_broken(void);
int fake_cuda_registrations_held(void);
void fake_cuda_release_registration(void);

#define PTDS ((CUstream)0x2)

/* A thread asleep in the kernel (a futex, or a sleep between polls). */
static int asleep(pid_t t)
{
	long nr = task_syscall(t);
	return nr == SYS_futex || nr == SYS_nanosleep ||
	       nr == SYS_clock_nanosleep;
}
static pid_t gettid_(void) { return (pid_t)syscall(SYS_gettid); }

/* Item 9: an H2D of (size_t)-1 bytes to device address 0: the driver
 * refuses it (the late driver: no device allocation holds it); hostpin
 * must return what the driver returns, not success. */
static int mode_huge(void)
{
	alarm(20);
	char *h = plain(16 * MB);
	CUstream s;
	CHECK(cuStreamCreate(&s, 0) == 0);
	CUresult r = cuMemcpyHtoDAsync_v2(0, h, (size_t)-1, s);
	printf("htod of (size_t)-1 bytes: %d\n", r);
	CHECK(r != 0);
	CHECK(cuStreamSynchronize(s) == 0);
	return 0;
}

/* Item 3: a D2H into a registered block split at its registrations'
 * ends (HOSTPIN_REGISTER_CHUNK=8M, HOSTPIN_PIN_AFTER=0) whose second DMA
 * the driver refuses (FAKE_CUDA_FAIL=cuMemcpyDtoHAsync_v2:2): the error
 * returns, and nothing of the copy may land in the program's memory
 * after it (the first piece's DMA fenced before the return). */
static int mode_piece_refused(void)
{
	size_t m = 32 * MB, n = 16 * MB;
	alarm(20);
	void *p = NULL;
	CHECK(posix_memalign(&p, 8 * MB, m) == 0);
	char *blk = p;
	CHECK(is_reg(blk));
	CUdeviceptr d = dev(n);
	CUstream s;
	CHECK(cuStreamCreate(&s, 0) == 0);
	fill(D(d), n, 30);
	char *at = blk + 4 * MB; /* crosses the cell end at 8 MiB */
	CUresult r = cuMemcpyDtoHAsync_v2(at, d, n, s);
	printf("dtoh %d\n", r);
	CHECK(r != 0);
	fill(at, n, 31); /* the program's memory again, after the error */
	CHECK(cuStreamSynchronize(s) == 0);
	CHECK(same(at, n, 31)); /* no DMA landed after the return */
	free(blk);
	return 0;
}

/* Item 1: every thread's per-thread default stream is one handle
 * (CU_STREAM_PER_THREAD), but a stream of its own (the case runs the fake
 * with FAKE_CUDA_PTDS=1).  Thread B holds its per-thread stream and
 * stages a copy behind the hold (the slots it used wait for B's stream);
 * thread A's staged copy on its own per-thread stream must not wait for
 * B's (the program lets B's stream go only after A returned), and a
 * relaxed capture A begins on its per-thread stream must not wait for B's
 * staged copy in progress. */
static CUdeviceptr pt_d;
static char *pt_h;
static _Atomic int pt_stage, pt_go;
static _Atomic pid_t pt_tid;
static void *pt_b(void *arg)
{
	size_t n = (size_t)(uintptr_t)arg;
	CHECK(cuCtxSetCurrent(ctx) == 0);
	pt_tid = gettid_();
	fill(pt_h, n, 40);
	CHECK(fake_cuda_stream_hold(PTDS) == 0);
	pt_stage = 1;
	/* 2 MiB: fits the ring (returns); 8 MiB: waits on its own held
	 * stream (slots reused) until released */
	CHECK(cuMemcpyHtoDAsync_v2_ptsz(pt_d, pt_h, n, NULL) == 0);
	pt_stage = 2;
	while (!pt_go)
		usleep(1000);
	fake_cuda_stream_release(PTDS);
	CHECK(cuStreamSynchronize(PTDS) == 0);
	CHECK(same(D(pt_d), n, 40));
	return NULL;
}
static int b_queued(void *arg) { (void)arg; return pt_stage == 2; }
static int b_waits(void *arg)
{
	static int seen; /* latched, as a_asleep */
	(void)arg;
	return seen = seen || (pt_stage == 1 && pt_tid && asleep(pt_tid));
}
static void *pt_release(void *arg)
{
	/* B blocked inside its copy: its per-thread stream let go from
	 * here through the fake's own handle of it */
	fake_cuda_stream_release(arg);
	return NULL;
}
CUstream fake_cuda_ptds_of_thread(void);
static _Atomic(CUstream) pt_bs;
static void *pt_b2(void *arg)
{
	size_t n = (size_t)(uintptr_t)arg;
	CHECK(cuCtxSetCurrent(ctx) == 0);
	pt_tid = gettid_();
	fill(pt_h, n, 42);
	pt_bs = fake_cuda_ptds_of_thread();
	CHECK(fake_cuda_stream_hold(PTDS) == 0);
	pt_stage = 1;
	CHECK(cuMemcpyHtoDAsync_v2_ptsz(pt_d, pt_h, n, NULL) == 0);
	pt_stage = 2;
	CHECK(cuStreamSynchronize(PTDS) == 0);
	CHECK(same(D(pt_d), n, 42));
	return NULL;
}
static int mode_ptds(void)
{
	size_t na = 8 * MB;
	alarm(20);
	pt_h = plain(8 * MB);
	pt_d = dev(8 * MB);
	char *ha = plain(na);
	CUdeviceptr da = dev(na);
	pthread_t b;
	CHECK(pthread_create(&b, NULL, pt_b, (void *)(uintptr_t)(2 * MB)) == 0);
	wait_for(b_queued, NULL, "B's copy queued behind its hold");
	fill(ha, na, 41);
	CHECK(cuMemcpyHtoDAsync_v2_ptsz(da, ha, na, NULL) == 0);
	memset(ha, 0, na);
	printf("A's copy on its per-thread stream returned while B's was held\n");
	CHECK(cuStreamSynchronize(PTDS) == 0);
	CHECK(same(D(da), na, 41));
	pt_go = 1;
	CHECK(pthread_join(b, NULL) == 0);

	/* a relaxed capture on A's per-thread stream while B's staged copy
	 * (8 MiB: more than its slots) waits on B's held stream */
	pt_stage = 0;
	pt_tid = 0;
	CHECK(pthread_create(&b, NULL, pt_b2, (void *)(uintptr_t)(8 * MB)) == 0);
	wait_for(b_waits, NULL, "B's copy waits on its own held stream");
	CHECK(cuStreamBeginCapture_v2(PTDS, 2) == 0);
	void *g;
	CHECK(cuStreamEndCapture(PTDS, &g) == 0);
	printf("A's relaxed capture began and ended while B's copy was in progress\n");
	pthread_t r;
	CHECK(pthread_create(&r, NULL, pt_release, (void *)pt_bs) == 0);
	CHECK(pthread_join(r, NULL) == 0);
	CHECK(pthread_join(b, NULL) == 0);
	return 0;
}

/* Item 2: a global capture's begin on stream s2 must not wait for
 * another thread's staged D2H on stream s1 for its whole length.  s1 is
 * held by the program twice: thread A's 32 MiB D2H (ring of 2 MiB: 4
 * slots of 512 KiB) queues 4 DMAs behind the first hold and waits; the
 * program queues the second hold, lets the first go and waits until A's
 * first chunk is in its memory and A waits again (behind the second
 * hold); thread B then begins a global capture on s2, and the program
 * lets s1 go only once B's begin returned: A ends its copy, the rest as
 * its own calls to the driver, without any call the capture prohibits
 * (the capture stays valid), the data right.  capture_other_2d: the same
 * as a 2D copy.  capture_other_first: the same as the process's first
 * capture (none begun before it: A's wait was never told of captures; the
 * engine tester's cases/capture-first-held-d2h-96559553). */
static CUstream gc_s1, gc_s2;
static char *gc_h;
static CUdeviceptr gc_d;
static _Atomic int gc_begun, gc_end;
static _Atomic pid_t gc_a;
static int gc_rect; /* the 2D form: rows of 256 KiB, 512 KiB apart */
static int gc_first; /* no capture before this one in the process */
#define GC_W ((size_t)256 * 1024)
static void *gc_copy(void *arg)
{
	(void)arg;
	CHECK(cuCtxSetCurrent(ctx) == 0);
	gc_a = gettid_();
	if (gc_rect) {
		M2D q = {.srcMemoryType = DEVICE, .srcDevice = gc_d,
			 .srcPitch = GC_W, .dstMemoryType = HOST,
			 .dstHost = gc_h, .dstPitch = 2 * GC_W,
			 .WidthInBytes = GC_W, .Height = 32 * MB / GC_W};
		CHECK(cuMemcpy2DAsync_v2(&q, gc_s1) == 0);
		for (size_t i = 0; i < 32 * MB / GC_W; i++) /* there on return */
			CHECK(memcmp(gc_h + i * 2 * GC_W,
				     (char *)D(gc_d) + i * GC_W, GC_W) == 0);
		return NULL;
	}
	CHECK(cuMemcpyDtoHAsync_v2(gc_h, gc_d, 32 * MB, gc_s1) == 0);
	CHECK(same(gc_h, 32 * MB, 50)); /* there on return */
	return NULL;
}
static void *gc_capture(void *arg)
{
	(void)arg;
	CHECK(cuCtxSetCurrent(ctx) == 0);
	CHECK(cuStreamBeginCapture_v2(gc_s2, 0) == 0);
	gc_begun = 1;
	while (!gc_end) /* ended by the thread that began it */
		usleep(1000);
	void *g;
	CHECK(cuStreamEndCapture(gc_s2, &g) == 0);
	return NULL;
}
static int b_began(void *arg) { (void)arg; return gc_begun != 0; }
/* A asleep, having asked s1 for its DMA behind the hold not let go (the
 * fake's worker told to run past it: A waits for that DMA, not for
 * anything before it); latched: a polling thread wakes between two looks
 * (wait_for looks twice) */
static int a_asleep(void *arg)
{
	static int seen;
	(void)arg;
	return seen = seen || (gc_a && asleep(gc_a) &&
			       fake_cuda_stream_asked_past_hold(gc_s1));
}
/* A's first chunk drained into its memory and A waiting again, behind
 * the second hold */
static int a_drained(void *arg)
{
	static int seen;
	(void)arg;
	size_t n = gc_rect ? GC_W : 512 * 1024;
	return seen = seen || (memcmp(gc_h, D(gc_d), n) == 0 && asleep(gc_a) &&
			       fake_cuda_stream_asked_past_hold(gc_s1));
}
static int capture_other(void);
static int mode_capture_other(void) { return capture_other(); }
static int mode_capture_other_2d(void)
{
	gc_rect = 1;
	return capture_other();
}
static int mode_capture_other_first(void)
{
	gc_first = 1;
	return capture_other();
}
static int capture_other(void)
{
	alarm(20);
	gc_h = plain(64 * MB);
	gc_d = dev(32 * MB);
	fill(D(gc_d), 32 * MB, 50);
	CHECK(cuStreamCreate(&gc_s1, 0) == 0 && cuStreamCreate(&gc_s2, 0) == 0);
	void *g;
	/* a capture before: the process captures graphs */
	CHECK(gc_first || cuStreamBeginCapture_v2(gc_s2, 0) == 0);
	CHECK(gc_first || cuStreamEndCapture(gc_s2, &g) == 0);
	CHECK(fake_cuda_stream_hold(gc_s1) == 0);
	pthread_t a, b;
	CHECK(pthread_create(&a, NULL, gc_copy, NULL) == 0);
	wait_for(a_asleep, NULL, "A's copy waits on s1");
	CHECK(fake_cuda_stream_hold(gc_s1) == 0);
	fake_cuda_stream_release(gc_s1);
	wait_for(a_drained, NULL, "A's first chunk drained, A waits again");
	CHECK(pthread_create(&b, NULL, gc_capture, NULL) == 0);
	wait_for(b_began, NULL, "the capture's begin returned");
	printf("the global capture on s2 began while A's copy on s1 waited\n");
	fake_cuda_stream_release(gc_s1);
	CHECK(pthread_join(a, NULL) == 0);
	gc_end = 1;
	CHECK(pthread_join(b, NULL) == 0);
	CHECK(!fake_cuda_capture_broken());
	CHECK(cuStreamSynchronize(gc_s1) == 0);
	return 0;
}

/* Item 6: a block being registered in the background
 * (HOSTPIN_REGISTER_CHUNK=8M, FAKE_CUDA_REGISTER_GATE=8M: its first 8 MiB
 * cell registered, the second held): a copy under HOSTPIN_STAGE_MIN, and
 * a 2D copy, crossing the end of its registered part must not reach the
 * driver half registered (the case's driver refuses such a range:
 * FAKE_CUDA_REFUSE_PARTIAL=1). */
static int mode_partial(void)
{
	size_t m = 32 * MB, n = 1 * MB;
	alarm(20);
	void *p = NULL;
	CHECK(posix_memalign(&p, 8 * MB, m) == 0);
	char *blk = p;
	CUdeviceptr d = dev(m);
	CUstream s;
	CHECK(cuStreamCreate(&s, 0) == 0);
	fill(blk, m, 60);
	CHECK(cuMemcpyHtoDAsync_v2(d, blk, m, s) == 0); /* staged */
	CHECK(cuMemcpyHtoDAsync_v2(d, blk, m, s) == 0); /* earns; staged */
	wait_for(gate_held, NULL, "the first piece reached the driver");
	fake_cuda_open_gate_once();
	wait_for(first_piece, blk, "the first piece registered, the second held");
	char *at = blk + 8 * MB - n / 2; /* across the registered part's end */
	fill(D(d), n, 61);
	CUresult r = cuMemcpyDtoHAsync_v2(at, d, n, s);
	printf("dtoh across the registered part's end: %d\n", r);
	CHECK(r == 0);
	CHECK(same(at, n, 61));
	fill(at, n, 62);
	r = cuMemcpyHtoDAsync_v2(d, at, n, s);
	printf("htod across the registered part's end: %d\n", r);
	CHECK(r == 0);
	memset(at, 0, n);
	CHECK(cuStreamSynchronize(s) == 0);
	CHECK(same(D(d), n, 62));
	/* 2D: 16 rows of 64 KiB, 128 KiB apart, across the end */
	size_t w = 64 * 1024, pitch = 128 * 1024, rows = 16;
	char *r0 = blk + 8 * MB - 8 * pitch;
	fill(D(d), rows * w, 63);
	M2D q = {.srcMemoryType = DEVICE, .srcDevice = d, .srcPitch = w,
		 .dstMemoryType = HOST, .dstHost = r0, .dstPitch = pitch,
		 .WidthInBytes = w, .Height = rows};
	r = cuMemcpy2DAsync_v2(&q, s);
	printf("2D dtoh across the registered part's end: %d\n", r);
	CHECK(r == 0);
	CHECK(cuStreamSynchronize(s) == 0);
	for (size_t i = 0; i < rows; i++)
		CHECK(memcmp(r0 + i * pitch, (char *)D(d) + i * w, w) == 0);
	fake_cuda_open_gate();
	wait_for(is_reg, blk, "the block registered");
	free(blk);
	return 0;
}

/* Item 10: HOSTPIN_STAGE=0, HOSTPIN_PIN_AFTER=2.  Thread A's D2H from a
 * fresh block is decided as a pageable pass-through (its first copy) and
 * held at the driver's door (FAKE_CUDA_DTOH_GATE); thread B's copy earns
 * the block's registration, made in the driver and held there before it
 * returns (FAKE_CUDA_REGISTER_HOLD_AFTER: hostpin has not marked it yet).
 * A's copy then reaches the driver as registered memory, which returns at
 * once: hostpin must wait for it (the data there at return), as for any
 * copy through registered memory.  Now that a pass-through's decision
 * stays true until the driver has it ("decided once", passing.c), B's
 * registration is put off while A's copy is at the door (B returns
 * without it) and made by the next copy: either way A's data is there at
 * return. */
static char *bd_h;
static CUdeviceptr bd_d;
static CUstream bd_s1, bd_s2;
static volatile int bd_b_done;
static void *bd_a(void *arg)
{
	(void)arg;
	CHECK(cuCtxSetCurrent(ctx) == 0);
	CHECK(cuMemcpyDtoHAsync_v2(bd_h, bd_d, 8 * MB, bd_s1) == 0);
	CHECK(same(bd_h, 8 * MB, 70)); /* there on return */
	return NULL;
}
static void *bd_b(void *arg)
{
	(void)arg;
	CHECK(cuCtxSetCurrent(ctx) == 0);
	CHECK(cuMemcpyDtoHAsync_v2(bd_h + 16 * MB, bd_d, 8 * MB, bd_s2) == 0);
	CHECK(same(bd_h + 16 * MB, 8 * MB, 70));
	bd_b_done = 1;
	return NULL;
}
static int reg_held(void *arg)
{
	(void)arg;
	/* or put off: B's copy (8 MiB) at the door too, or done */
	return fake_cuda_registrations_held() == 1 ||
	       fake_cuda_gate_waiters() == 2 || bd_b_done;
}
static int mode_decision(void)
{
	alarm(20);
	bd_h = malloc(32 * MB);
	CHECK(bd_h != NULL && tp_flags(bd_h) != 0 && !is_reg(bd_h));
	memset(bd_h, 0, 32 * MB);
	bd_d = dev(8 * MB);
	fill(D(bd_d), 8 * MB, 70);
	CHECK(cuStreamCreate(&bd_s1, 0) == 0 && cuStreamCreate(&bd_s2, 0) == 0);
	door_then(bd_a, bd_b, reg_held, "B's registration made, held in the driver");
	/* registered by B's copy, or put off to this one */
	CHECK(cuMemcpyDtoHAsync_v2(bd_h + 24 * MB, bd_d, 8 * MB, bd_s2) == 0);
	CHECK(same(bd_h + 24 * MB, 8 * MB, 70));
	CHECK(is_reg(bd_h));
	free(bd_h);
	return 0;
}

/* The limit "cuMemcpyAsync (unified) staged": a large cuMemcpyAsync
 * between pageable memory and device memory is staged by its direction
 * (the case counts pageable copies reaching the driver: none), with
 * pageable semantics: an H2D's source may change after the call, a D2H's
 * data is there at return. */
CUresult cuMemcpyAsync(CUdeviceptr, CUdeviceptr, size_t, CUstream);
static int mode_unified(void)
{
	size_t n = 32 * MB;
	alarm(20);
	char *h = plain(n);
	CUdeviceptr d = dev(n);
	CUstream s;
	CHECK(cuStreamCreate(&s, 0) == 0);
	fill(h, n, 80);
	CHECK(cuMemcpyAsync(d, (CUdeviceptr)(uintptr_t)h, n, s) == 0);
	memset(h, 0, n);
	CHECK(cuStreamSynchronize(s) == 0);
	CHECK(same(D(d), n, 80));
	fill(D(d), n, 81);
	CHECK(cuMemcpyAsync((CUdeviceptr)(uintptr_t)h, d, n, s) == 0);
	CHECK(same(h, n, 81));
	return 0;
}

/* The limit "2D/3D copies inside a registered block that cross
 * registration pieces": a registered block of 8 MiB cells
 * (HOSTPIN_PIN_AFTER=0, HOSTPIN_REGISTER_CHUNK=8M) and a 2D copy whose
 * rows cross a cell's end: the driver never gets a range across two
 * registrations (the case's driver refuses what one registration does
 * not cover: FAKE_CUDA_REFUSE_PARTIAL=1), the data right both ways. */
static int mode_rect_pieces(void)
{
	size_t m = 32 * MB, w = 64 * 1024, pitch = 128 * 1024, rows = 64;
	alarm(20);
	void *p = NULL;
	CHECK(posix_memalign(&p, 8 * MB, m) == 0);
	char *blk = p;
	CHECK(is_reg(blk));
	CUdeviceptr d = dev(rows * w);
	CUstream s;
	CHECK(cuStreamCreate(&s, 0) == 0);
	char *r0 = blk + 8 * MB - 32 * pitch - w / 2; /* rows across 8 MiB */
	fill(D(d), rows * w, 90);
	M2D q = {.srcMemoryType = DEVICE, .srcDevice = d, .srcPitch = w,
		 .dstMemoryType = HOST, .dstHost = r0, .dstPitch = pitch,
		 .WidthInBytes = w, .Height = rows};
	CHECK(cuMemcpy2DAsync_v2(&q, s) == 0);
	CHECK(cuStreamSynchronize(s) == 0);
	for (size_t i = 0; i < rows; i++)
		CHECK(memcmp(r0 + i * pitch, (char *)D(d) + i * w, w) == 0);
	for (size_t i = 0; i < rows; i++)
		fill(r0 + i * pitch, w, 91 + (unsigned)i);
	M2D u = {.srcMemoryType = HOST, .srcHost = r0, .srcPitch = pitch,
		 .dstMemoryType = DEVICE, .dstDevice = d, .dstPitch = w,
		 .WidthInBytes = w, .Height = rows};
	CHECK(cuMemcpy2DAsync_v2(&u, s) == 0);
	CHECK(cuStreamSynchronize(s) == 0);
	for (size_t i = 0; i < rows; i++)
		CHECK(same((char *)D(d) + i * w, w, 91 + (unsigned)i));
	free(blk);
	return 0;
}

/* Item 1, the copy fences: HOSTPIN_COPY=async records one event for a
 * registered block's last copy; a copy on another stream first waits for
 * the event it replaces.  Thread B's H2D from a registered block on its
 * per-thread stream, held; thread A's from the same block on its own
 * per-thread stream (the same handle, another stream: FAKE_CUDA_PTDS=1).
 * Then the block is freed (HOSTPIN_CACHE=0: unregistered and unmapped):
 * B's DMA must not outlive it (the fake flags a copy from unmapped
 * memory). */
static char *tf_blk;
static CUdeviceptr tf_d;
static _Atomic int tf_stage;
static _Atomic pid_t tf_a;
static _Atomic(CUstream) tf_bs;
static void *tf_b(void *arg)
{
	(void)arg;
	CHECK(cuCtxSetCurrent(ctx) == 0);
	tf_bs = fake_cuda_ptds_of_thread();
	CHECK(fake_cuda_stream_hold(PTDS) == 0);
	CHECK(cuMemcpyHtoDAsync_v2_ptsz(tf_d, tf_blk, 8 * MB, NULL) == 0);
	tf_stage = 1;
	while (tf_stage != 2)
		usleep(1000);
	CHECK(cuStreamSynchronize(PTDS) == 0);
	return NULL;
}
static void *tf_acopy(void *arg)
{
	(void)arg;
	CHECK(cuCtxSetCurrent(ctx) == 0);
	tf_a = gettid_();
	CHECK(cuMemcpyHtoDAsync_v2_ptsz(tf_d + 8 * MB, tf_blk + 8 * MB, 8 * MB,
					NULL) == 0);
	tf_a = -1; /* returned */
	return NULL;
}
static int tf_b_queued(void *arg) { (void)arg; return tf_stage == 1; }
static int tf_a_waits_or_returned(void *arg)
{
	static int seen; /* latched */
	(void)arg;
	return seen = seen || tf_a == -1 || (tf_a > 0 && asleep(tf_a));
}
static int mode_fence_ptds(void)
{
	alarm(20);
	void *p = NULL;
	CHECK(posix_memalign(&p, 8 * MB, 32 * MB) == 0);
	tf_blk = p;
	CHECK(is_reg(tf_blk));
	fill(tf_blk, 32 * MB, 100);
	tf_d = dev(16 * MB);
	pthread_t a, b;
	CHECK(pthread_create(&b, NULL, tf_b, NULL) == 0);
	wait_for(tf_b_queued, NULL, "B's copy queued behind its hold");
	CHECK(pthread_create(&a, NULL, tf_acopy, NULL) == 0);
	wait_for(tf_a_waits_or_returned, NULL, "A's copy waits or returned");
	fake_cuda_stream_release(tf_bs);
	CHECK(pthread_join(a, NULL) == 0);
	free(tf_blk); /* unregistered and unmapped: no DMA may be left */
	tf_stage = 2;
	CHECK(pthread_join(b, NULL) == 0);
	CHECK(same(D(tf_d), 16 * MB, 100));
	return 0;
}

/* A D2H into a registered block (HOSTPIN_THRESHOLD=24M,
 * HOSTPIN_PIN_AFTER=0) under HOSTPIN_COPY=async on a stream of device 1's
 * context while device 0's is current: no event of the current context
 * can be recorded there (the late driver refuses it), so hostpin waits
 * for the stream instead.  The stream held by the program until a
 * global capture on another stream began: that begin must not wait for
 * the copy's wait (fuzz cases/capture-untracked-wait-73100612: the wait
 * was a stream synchronise inside the capture gate, the begin waited for
 * DMA only its own thread lets run: HANG). */
int fake_cuda_stream_host_fns_past_hold(CUstream);
static CUstream uw_s1;
static char *uw_h;
static CUdeviceptr uw_d;
static _Atomic pid_t uw_a;
static void *uw_copy(void *arg)
{
	(void)arg;
	CHECK(cuCtxSetCurrent(ctx) == 0);
	uw_a = gettid_();
	CHECK(cuMemcpyDtoHAsync_v2(uw_h, uw_d, 4 * MB, uw_s1) == 0);
	return NULL;
}
/* A asleep, waiting for its copy behind the hold: the worker asked past
 * it (a synchronise), or a host function queued behind it; latched */
static int uw_waits(void *arg)
{
	static int seen;
	(void)arg;
	return seen = seen || (uw_a && asleep(uw_a) &&
			       (fake_cuda_stream_asked_past_hold(uw_s1) ||
				fake_cuda_stream_host_fns_past_hold(uw_s1) > 0));
}
static int mode_capture_untracked(void)
{
	alarm(20);
	CUcontext c1;
	CHECK(cuDevicePrimaryCtxRetain(&c1, 1) == 0);
	CHECK(cuCtxSetCurrent(c1) == 0);
	CHECK(cuStreamCreate(&uw_s1, 0) == 0);
	CHECK(cuCtxSetCurrent(ctx) == 0);
	CUstream s2;
	CHECK(cuStreamCreate(&s2, 0) == 0);
	void *p = NULL;
	CHECK(posix_memalign(&p, 8 * MB, 32 * MB) == 0);
	uw_h = p;
	CHECK(is_reg(uw_h));
	uw_d = dev(4 * MB);
	fill(D(uw_d), 4 * MB, 160);
	CHECK(fake_cuda_stream_hold(uw_s1) == 0);
	pthread_t a;
	CHECK(pthread_create(&a, NULL, uw_copy, NULL) == 0);
	wait_for(uw_waits, NULL, "A's copy waits on device 1's held stream");
	void *g;
	CHECK(cuStreamBeginCapture_v2(s2, 0) == 0);
	CHECK(cuStreamEndCapture(s2, &g) == 0);
	printf("a global capture began and ended while A's copy waited\n");
	CHECK(!fake_cuda_capture_broken());
	fake_cuda_stream_release(uw_s1);
	CHECK(pthread_join(a, NULL) == 0);
	CHECK(same(uw_h, 4 * MB, 160));
	free(uw_h);
	return 0;
}

/* Two more waits inside the capture gate, as capture_untracked's: a copy
 * whose wait the program's hold on its stream keeps waiting, then a
 * global capture's begin on another stream, which must not wait for it.
 * A's copy on gw_s1 (held), its wait latched as capture_untracked's. */
static CUstream gw_s1, gw_s3;
static char *gw_h;
static CUdeviceptr gw_d;
static _Atomic pid_t gw_a;
static int gw_waits(void *arg)
{
	static int seen;
	(void)arg;
	return seen = seen || gw_a == -1 || (gw_a > 0 && asleep(gw_a) &&
			       (fake_cuda_stream_asked_past_hold(gw_s1) ||
				fake_cuda_stream_host_fns_past_hold(gw_s1) > 0));
}
static void gw_capture_then_release(void)
{
	CUstream s2;
	CHECK(cuStreamCreate(&s2, 0) == 0);
	void *g;
	CHECK(cuStreamBeginCapture_v2(s2, 0) == 0);
	CHECK(cuStreamEndCapture(s2, &g) == 0);
	printf("a global capture began and ended while A's copy waited\n");
	CHECK(!fake_cuda_capture_broken());
	fake_cuda_stream_release(gw_s1);
}

/* (a) copy.c's pageable path: thread A's H2D of 1 MiB (under
 * HOSTPIN_STAGE_MIN: passed through) from a block on gw_s1 (held: the
 * driver took the source, its DMA queued behind the hold), held at the
 * driver's door (FAKE_CUDA_HTOD_GATE=1M) while two staged copies earn the
 * block its background registration, whose job claims the block (busy)
 * and pauses there (bg_claimed): A's copy ends with the block busy, not
 * registered, and is waited for as one the driver may have had as
 * registered memory.  Then a global capture begins elsewhere. */
static void *gw_pass_copy(void *arg)
{
	(void)arg;
	CHECK(cuCtxSetCurrent(ctx) == 0);
	gw_a = gettid_();
	CHECK(cuMemcpyHtoDAsync_v2(gw_d, gw_h, 1 * MB, gw_s1) == 0);
	gw_a = -1; /* returned */
	return NULL;
}
static int mode_capture_changing(void)
{
	size_t m = 32 * MB;
	alarm(20);
	void *p = NULL;
	CHECK(posix_memalign(&p, 8 * MB, m) == 0);
	gw_h = p;
	CHECK(tp_flags(gw_h) != 0 && !is_reg(gw_h));
	CUdeviceptr d = dev(m);
	gw_d = dev(1 * MB);
	CUstream s;
	CHECK(cuStreamCreate(&s, 0) == 0 && cuStreamCreate(&gw_s1, 0) == 0);
	fill(gw_h, m, 172);
	CHECK(fake_cuda_stream_hold(gw_s1) == 0);
	pthread_t a;
	CHECK(pthread_create(&a, NULL, gw_pass_copy, NULL) == 0);
	wait_for(gate_held, NULL, "A's copy at the driver's door");
	pt_file("bg_claimed", "arm");
	CHECK(cuMemcpyHtoDAsync_v2(d, gw_h, m, s) == 0); /* staged */
	CHECK(cuMemcpyHtoDAsync_v2(d, gw_h, m, s) == 0); /* earns; staged */
	wait_for(pt_paused, "bg_claimed", "the registration job claimed the block");
	fake_cuda_open_gate();
	wait_for(gw_waits, NULL, "A's copy waits on its held stream, or returned");
	gw_capture_then_release();
	CHECK(pthread_join(a, NULL) == 0);
	CHECK(cuStreamSynchronize(gw_s1) == 0);
	CHECK(same(D(gw_d), 1 * MB, 172));
	pt_file("bg_claimed", "go");
	wait_for(reg_whole, gw_h, "the block registered");
	CHECK(cuStreamSynchronize(s) == 0);
	free(gw_h);
	return 0;
}

/* (b) HOSTPIN_COPY=async's last-copy event: a registered block's D2H on
 * gw_s1 (held: its event not reached), then another thread's copy of the
 * block on gw_s3, whose event replaces it: the one replaced is not done;
 * its wait, outside the capture gate in relaxed capture mode, lets a
 * global capture begin and end meanwhile. */
static void *gw_other_copy(void *arg)
{
	(void)arg;
	CHECK(cuCtxSetCurrent(ctx) == 0);
	gw_a = gettid_();
	CHECK(cuMemcpyDtoHAsync_v2(gw_h + 8 * MB, gw_d, 4 * MB, gw_s3) == 0);
	/* the copy it replaced as the block's last is done on return
	 * (waited for outside the capture gate: issue 39); its own, async
	 * into registered memory, once its stream is synchronised */
	CHECK(same(gw_h, 4 * MB, 180));
	CHECK(cuStreamSynchronize(gw_s3) == 0);
	CHECK(same(gw_h + 8 * MB, 4 * MB, 181));
	gw_a = -1; /* returned */
	return NULL;
}
static int mode_capture_replaced(void)
{
	alarm(20);
	void *p = NULL;
	CHECK(posix_memalign(&p, 8 * MB, 32 * MB) == 0);
	gw_h = p;
	CHECK(is_reg(gw_h));
	CHECK(cuStreamCreate(&gw_s1, 0) == 0 && cuStreamCreate(&gw_s3, 0) == 0);
	CUdeviceptr d1 = dev(4 * MB);
	fill(D(d1), 4 * MB, 180);
	gw_d = dev(4 * MB);
	fill(D(gw_d), 4 * MB, 181);
	CHECK(fake_cuda_stream_hold(gw_s1) == 0);
	CHECK(cuMemcpyDtoHAsync_v2(gw_h, d1, 4 * MB, gw_s1) == 0); /* async */
	pthread_t a;
	CHECK(pthread_create(&a, NULL, gw_other_copy, NULL) == 0);
	wait_for(gw_waits, NULL, "A's copy waits on the held stream, or returned");
	gw_capture_then_release();
	CHECK(pthread_join(a, NULL) == 0);
	CHECK(cuStreamSynchronize(gw_s1) == 0);
	CHECK(same(gw_h, 4 * MB, 180));
	free(gw_h); /* no DMA may outlive it */
	return 0;
}

/* HOSTPIN_COPY=async, a registered mmap'd block's D2H on gw_s1 (held),
 * then another thread's munmap (capture_unmap), mremap (capture_mremap),
 * mmap(MAP_FIXED) over it (capture_fixed) or madvise(MADV_DONTNEED) of
 * part of it (capture_dontneed): the release's wait for the block's last
 * copy, the held DMA, is made before maps.c's release_gated /
 * hp_mremap_do and maps_advise.c's advise_records take the capture gate
 * (hp_settle_range), so a global capture's begin elsewhere does not wait
 * for it (each hung, rc 142, while it was made inside the gate). */
static int gw_op;
static void *gw_unmap(void *arg)
{
	(void)arg;
	gw_a = gettid_();
	if (gw_op == 0) {
		CHECK(munmap(gw_h, 32 * MB) == 0);
	} else if (gw_op == 1) {
		void *n = mremap(gw_h, 32 * MB, 64 * MB, MREMAP_MAYMOVE);
		CHECK(n != MAP_FAILED);
		CHECK(munmap(n, 64 * MB) == 0);
	} else if (gw_op == 2) {
		CHECK(mmap(gw_h, 32 * MB, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1,
			   0) == gw_h);
		CHECK(munmap(gw_h, 32 * MB) == 0);
	} else {
		CHECK(madvise(gw_h, 4 * MB, MADV_DONTNEED) == 0);
		CHECK(gw_h[0] == 0 && gw_h[4 * MB] == 1);
		CHECK(munmap(gw_h, 32 * MB) == 0);
	}
	gw_a = -1; /* returned */
	return NULL;
}
static void gw_release_setup(int op, int hold)
{
	gw_op = op;
	gw_h = mmap(NULL, 32 * MB, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(gw_h != MAP_FAILED);
	memset(gw_h, 1, 32 * MB);
	CHECK(cuStreamCreate(&gw_s1, 0) == 0);
	gw_d = dev(4 * MB);
	fill(D(gw_d), 4 * MB, 190);
	CHECK(cuMemcpyDtoHAsync_v2(gw_h, gw_d, 4 * MB, NULL) == 0);
	CHECK(cuStreamSynchronize(NULL) == 0);
	CHECK(is_reg(gw_h));
	CHECK(!hold || fake_cuda_stream_hold(gw_s1) == 0);
	CHECK(cuMemcpyDtoHAsync_v2(gw_h, gw_d, 4 * MB, gw_s1) == 0);
}
/* The block set up as gw_release_setup's (hold: its copy's stream held),
 * and thread A's munmap of it started and paused at settle_wait (its
 * settle slot taken, its wait not made yet): A's thread. */
static pthread_t gw_at_settle(int hold)
{
	gw_release_setup(0, hold);
	pt_file("settle_wait", "arm");
	pthread_t a;
	CHECK(pthread_create(&a, NULL, gw_unmap, NULL) == 0);
	wait_for(pt_paused, "settle_wait", "A's release at its wait");
	return a;
}
static int capture_release(int op)
{
	alarm(20);
	gw_release_setup(op, 1);
	pthread_t a;
	CHECK(pthread_create(&a, NULL, gw_unmap, NULL) == 0);
	wait_for(gw_waits, NULL, "A's release waits on the held stream, or returned");
	gw_capture_then_release();
	CHECK(pthread_join(a, NULL) == 0);
	return 0;
}
/* capture_unmap's wait made during the capture: A's munmap paused at
 * settle_wait (hp_cuda_settle: its look for a capture made, none then), a
 * global capture begins, A goes on: its cuEventSynchronize of the held
 * DMA is made while the capture runs, its thread in relaxed capture
 * interaction mode, so the capture stays valid (the fake invalidates it
 * on a call the calling thread's mode prohibits). */
static int mode_capture_relaxed(void)
{
	alarm(20);
	pthread_t a = gw_at_settle(1);
	CUstream s2;
	CHECK(cuStreamCreate(&s2, 0) == 0);
	void *g;
	CHECK(cuStreamBeginCapture_v2(s2, 0) == 0);
	pt_file("settle_wait", "go");
	wait_for(gw_waits, NULL, "A's release waits on the held stream");
	CHECK(cuStreamEndCapture(s2, &g) == 0);
	printf("A's wait was made during a global capture\n");
	CHECK(!fake_cuda_capture_broken());
	fake_cuda_stream_release(gw_s1);
	CHECK(pthread_join(a, NULL) == 0);
	return 0;
}
static int mode_capture_unmap(void) { return capture_release(0); }
static int mode_capture_mremap(void) { return capture_release(1); }
static int mode_capture_fixed(void) { return capture_release(2); }
static int mode_capture_dontneed(void) { return capture_release(3); }

/* Review of issue 39 (hp_cuda_settle).  settle_leak: while A's munmap
 * waits outside the gate for a held DMA, 80 copies of another block on
 * one stream each replace its last-copy event: every one is destroyed
 * (the fake counts events live at exit; more than 64 were leaked while
 * any settle wait ran).  settle_reset: A's munmap paused between
 * settle's load of the event and its wait, another thread resets the
 * primary context: the wait is never made on an event of the ended
 * context (VIOLATION event-of-ended-context: the reset no longer waited
 * for it; it waits now, settle_drain). */
static int mode_settle_leak(void)
{
	alarm(20);
	gw_release_setup(0, 1);
	pthread_t a;
	CHECK(pthread_create(&a, NULL, gw_unmap, NULL) == 0);
	wait_for(gw_waits, NULL, "A's release waits on the held stream");
	char *h2 = mmap(NULL, 32 * MB, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(h2 != MAP_FAILED);
	memset(h2, 1, 32 * MB);
	CUstream s3;
	CHECK(cuStreamCreate(&s3, 0) == 0);
	/* on s3: legacy work would wait for the held gw_s1 (fake_order.h) */
	CHECK(cuMemcpyDtoHAsync_v2(h2, gw_d, 4 * MB, s3) == 0);
	CHECK(cuStreamSynchronize(s3) == 0);
	CHECK(is_reg(h2));
	for (int i = 0; i < 80; i++)
		CHECK(cuMemcpyDtoHAsync_v2(h2, gw_d, 4 * MB, s3) == 0);
	CHECK(cuStreamSynchronize(s3) == 0);
	fake_cuda_stream_release(gw_s1);
	CHECK(pthread_join(a, NULL) == 0);
	CHECK(munmap(h2, 32 * MB) == 0);
	return 0;
}
CUresult cuDevicePrimaryCtxReset(int dev);
static _Atomic int sr_done;
static void *sr_reset(void *arg)
{
	(void)arg;
	CHECK(cuDevicePrimaryCtxReset(0) == 0);
	sr_done = 1;
	return NULL;
}
static int sr_drain(void *arg)
{
	(void)arg;
	return sr_done || pt_paused("settle_drain");
}
static int mode_settle_reset(void)
{
	alarm(20);
	pthread_t a = gw_at_settle(0), b; /* its copy on gw_s1 not held */
	pt_file("settle_drain", "arm");
	CHECK(pthread_create(&b, NULL, sr_reset, NULL) == 0);
	wait_for(sr_drain, NULL, "the reset returned or waits for A");
	pt_file("settle_wait", "go");
	if (!sr_done)
		pt_file("settle_drain", "go");
	CHECK(pthread_join(a, NULL) == 0);
	CHECK(pthread_join(b, NULL) == 0);
	return 0;
}

/* A block's last-copy event replaced (and destroyed: ev_destroy) while
 * another thread's settle wait holds a slot naming it: A's munmap paused
 * at settle_wait (its slot taken), a copy of the block on another stream
 * replaces the event; its destruction is left to A's wait, which never
 * waits on a destroyed event (VIOLATION event-destroyed: ev_destroy's
 * fast path taken with a slot in use). */
static int mode_settle_destroy(void)
{
	alarm(20);
	pthread_t a = gw_at_settle(0); /* its copy on gw_s1 not held */
	CUstream s3;
	CHECK(cuStreamCreate(&s3, 0) == 0);
	CHECK(cuMemcpyDtoHAsync_v2(gw_h + 4 * MB, gw_d, 4 * MB, s3) == 0);
	CHECK(cuStreamSynchronize(s3) == 0);
	CHECK(same(gw_h + 4 * MB, 4 * MB, 190));
	pt_file("settle_wait", "go");
	CHECK(pthread_join(a, NULL) == 0);
	return 0;
}

/* hp_settle_range (maps.c) walks the registry only once a last-copy
 * event was ever tracked (HOSTPIN_COPY=async's first async copy through
 * a registered block): its pause point settle_walk, armed with its go
 * file made (never sleeps), is reached by neither a discard nor an unmap
 * of part of a registered block before that (under sync: ever), and by
 * the unmap after it under async (the walk capture_unmap needs). */
static int mode_settle_skip(void)
{
	const char *c = getenv("HOSTPIN_COPY");
	int async = c && strcmp(c, "async") == 0;
	alarm(20);
	char *h = mmap(NULL, 32 * MB, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(h != MAP_FAILED);
	memset(h, 1, 32 * MB);
	CUdeviceptr d = dev(4 * MB);
	fill(D(d), 4 * MB, 200);
	CHECK(cuMemcpyDtoH_v2(h, d, 4 * MB) == 0); /* registers, no event */
	CHECK(cuMemcpyDtoH_v2(h, d, 4 * MB) == 0);
	CHECK(is_reg(h) && same(h, 4 * MB, 200));
	pt_file("settle_walk", "go");
	pt_file("settle_walk", "arm");
	CHECK(madvise(h + 8 * MB, 4 * MB, MADV_DONTNEED) == 0);
	CHECK(munmap(h + 28 * MB, 4 * MB) == 0);
	CHECK(!pt_paused("settle_walk"));
	CUstream s;
	CHECK(cuStreamCreate(&s, 0) == 0);
	CHECK(cuMemcpyDtoHAsync_v2(h, d, 4 * MB, s) == 0);
	CHECK(cuStreamSynchronize(s) == 0);
	CHECK(munmap(h + 24 * MB, 4 * MB) == 0);
	CHECK(pt_paused("settle_walk") == async);
	printf("settle walks: %s\n", async ? "after the async copy" : "none");
	CHECK(munmap(h, 24 * MB) == 0);
	return 0;
}

/* The engine tester's cases/munmap-registering-capture-55000541: the
 * program's munmap of a whole mapping (or mremap: remap) whose background
 * registration job holds it, made during this thread's global capture.
 * The job claimed the block (held at bg_claimed), the capture began, the
 * job went on: no registration during a capture (pending), held again at
 * bg_settled, the block still its own.  The call cancels the job and
 * waits for it (a helper lets it go once this thread sleeps in the call),
 * then is made (unmapped: 0; moved, its data kept), as without hostpin.
 * Refused before (ENOMEM, as for a job parked between two pieces): the
 * program kept a mapping it gave up, registered once the capture ended,
 * live at exit. */
static pid_t ub_tid;
static _Atomic int ub_in, ub_out;
static int ub_asleep(void *arg)
{
	(void)arg;
	return ub_out || (ub_in && asleep(ub_tid));
}
static void *ub_let_go(void *arg)
{
	(void)arg;
	wait_for(ub_asleep, NULL, "the call sleeps (or returned)");
	pt_file("bg_settled", "go");
	return NULL;
}
static int capture_registering(int remap)
{
	size_t m = 32 * MB;
	alarm(20);
	char *blk = mmap(NULL, m, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(blk != MAP_FAILED && tp_flags(blk) != 0 && !is_reg(blk));
	CUdeviceptr d = dev(m);
	CUstream s, o;
	CHECK(cuStreamCreate(&s, 0) == 0 && cuStreamCreate(&o, 0) == 0);
	fill(blk, m, 190);
	pt_file("bg_claimed", "arm");
	CHECK(cuMemcpyHtoDAsync_v2(d, blk, m, s) == 0); /* staged */
	CHECK(cuMemcpyHtoDAsync_v2(d, blk, m, s) == 0); /* earns; staged */
	CHECK(cuStreamSynchronize(s) == 0);
	wait_for(pt_paused, "bg_claimed", "the registration job claimed the block");
	void *g;
	CHECK(cuStreamBeginCapture_v2(o, 0) == 0); /* global */
	pt_file("bg_settled", "arm");
	pt_file("bg_claimed", "go");
	wait_for(pt_paused, "bg_settled", "the job over, the block held, pending");
	CHECK(!is_reg(blk));
	ub_tid = gettid_();
	pthread_t t;
	CHECK(pthread_create(&t, NULL, ub_let_go, NULL) == 0);
	ub_in = 1;
	char *p = remap ? mremap(blk, m, m / 2, MREMAP_MAYMOVE)
			: munmap(blk, m) ? MAP_FAILED : NULL;
	int e = errno;
	ub_out = 1;
	CHECK(cuStreamEndCapture(o, &g) == 0);
	CHECK(pthread_join(t, NULL) == 0);
	printf("%s during the capture: %s (errno %d)\n",
	       remap ? "mremap" : "munmap", p == MAP_FAILED ? "refused" : "made",
	       p == MAP_FAILED ? e : 0);
	CHECK(!fake_cuda_capture_broken());
	CHECK(p != MAP_FAILED);
	if (remap) {
		CHECK(same(p, m / 2, 190));
		CHECK(munmap(p, m / 2) == 0);
	}
	return 0;
}
static int mode_capture_unmap_bg(void) { return capture_registering(0); }
static int mode_capture_mremap_bg(void) { return capture_registering(1); }

int main(int argc, char **argv)
{
	static const struct staged_mode modes[] = {
	    {"huge", mode_huge},
	    {"piece_refused", mode_piece_refused},
	    {"ptds", mode_ptds},
	    {"capture_other", mode_capture_other},
	    {"capture_other_2d", mode_capture_other_2d},
	    {"capture_other_first", mode_capture_other_first},
	    {"partial", mode_partial},
	    {"decision", mode_decision},
	    {"unified", mode_unified},
	    {"rect_pieces", mode_rect_pieces},
	    {"fence_ptds", mode_fence_ptds},
	    {"capture_untracked", mode_capture_untracked},
	    {"capture_changing", mode_capture_changing},
	    {"capture_replaced", mode_capture_replaced},
	    {"capture_unmap", mode_capture_unmap},
	    {"capture_mremap", mode_capture_mremap},
	    {"capture_fixed", mode_capture_fixed},
	    {"capture_dontneed", mode_capture_dontneed},
	    {"capture_relaxed", mode_capture_relaxed},
	    {"settle_leak", mode_settle_leak},
	    {"settle_reset", mode_settle_reset},
	    {"settle_skip", mode_settle_skip},
	    {"settle_destroy", mode_settle_destroy},
	    {"capture_unmap_bg", mode_capture_unmap_bg},
	    {"capture_mremap_bg", mode_capture_mremap_bg},
	};
	return staged_main("late_fix", argc, argv, modes);
}
