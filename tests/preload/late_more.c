/* More of the copy engine over the fake driver's late mode
 * (FAKE_CUDA_LATE_DMA=1; late.c has the first modes), run under hostpin.
 *   late_more MODE   (see main)
 * Each mode checks data and semantics and exits non-zero when they
 * differ; a wait that never ends is a hang that alarm() fails. */
#include <signal.h>
#include <string.h>
#include <sys/wait.h>

#include "late_common.h"

CUresult cuMemcpy2DAsync_v2(const M2D *, CUstream);
CUresult cuMemcpy3DAsync_v2(const M3D *, CUstream);
CUresult cuCtxCreate_v2(CUcontext *, unsigned, int);
CUresult cuCtxDestroy_v2(CUcontext);
CUresult cuMemcpyHtoD_v2(CUdeviceptr, const void *, size_t);
int fake_cuda_registrations_held(void);
void fake_cuda_release_registration(void);
size_t fake_cuda_registered_bytes(const void *, size_t);

/* Item 12, 2D and 3D: a copy whose device side runs past the end of its
 * allocation (the late driver refuses it whole) is refused before any
 * byte moves, staged or not: neither side changes.  48 rows of 1 MiB
 * against a 32 MiB allocation, as one 2D copy and as 3 slices of 16. */
static int mode_past_end_rect(void)
{
	size_t m = 32 * MB, w = 1 * MB, rows = 48;
	alarm(20);
	char *h = plain(rows * w);
	CUdeviceptr d = dev(m);
	CUstream s;
	CHECK(cuStreamCreate(&s, 0) == 0);
	fill(D(d), m, 80);
	fill(h, rows * w, 81);
	M2D p = {.srcMemoryType = HOST, .srcHost = h, .srcPitch = w,
		 .dstMemoryType = DEVICE, .dstDevice = d, .dstPitch = w,
		 .WidthInBytes = w, .Height = rows};
	CHECK(cuMemcpy2DAsync_v2(&p, s) != 0);
	CHECK(cuStreamSynchronize(s) == 0);
	CHECK(same(D(d), m, 80)); /* nothing written */
	M2D q = {.srcMemoryType = DEVICE, .srcDevice = d, .srcPitch = w,
		 .dstMemoryType = HOST, .dstHost = h, .dstPitch = w,
		 .WidthInBytes = w, .Height = rows};
	CHECK(cuMemcpy2DAsync_v2(&q, s) != 0);
	CHECK(cuStreamSynchronize(s) == 0);
	CHECK(same(h, rows * w, 81)); /* nothing written */
	M3D t = {.srcMemoryType = HOST, .srcHost = h, .srcPitch = w,
		 .srcHeight = 16, .dstMemoryType = DEVICE, .dstDevice = d,
		 .dstPitch = w, .dstHeight = 16, .WidthInBytes = w,
		 .Height = 16, .Depth = 3};
	CHECK(cuMemcpy3DAsync_v2(&t, s) != 0);
	CHECK(cuStreamSynchronize(s) == 0);
	CHECK(same(D(d), m, 80));
	M3D u = {.srcMemoryType = DEVICE, .srcDevice = d, .srcPitch = w,
		 .srcHeight = 16, .dstMemoryType = HOST, .dstHost = h,
		 .dstPitch = w, .dstHeight = 16, .WidthInBytes = w,
		 .Height = 16, .Depth = 3};
	CHECK(cuMemcpy3DAsync_v2(&u, s) != 0);
	CHECK(cuStreamSynchronize(s) == 0);
	CHECK(same(h, rows * w, 81));
	/* one that fits is staged and right */
	t.Depth = 2;
	CHECK(cuMemcpy3DAsync_v2(&t, s) == 0);
	CHECK(cuStreamSynchronize(s) == 0);
	CHECK(same(D(d), m, 81));
	return 0;
}

/* Rings exist for 8 contexts at once (ring.c).  The case runs this with
 * FAKE_CUDA_OWN_CTXS=1: 10 contexts of the program's own, each current in
 * turn with a stream of its own.  Context 0's staged H2D is left queued
 * behind a hold of its stream (its slots' events pending): the copies of
 * the 9 others, each on its own stream and context, must all be right and
 * never wait for context 0 (a wait is a hang); the 9th and 10th have no
 * ring of their own: they pass through (the case counts 4 copies reaching
 * the driver pageable), never through another context's ring (the late
 * driver refuses an event recorded on another context's stream).  Once
 * context 0 ended, the 10th context's copies are staged through the entry
 * it left (no more pageable copies). */
static int mode_many_ctxs(void)
{
	enum { N = 10 };
	size_t n = 16 * MB;
	alarm(30);
	CUcontext c[N];
	CUstream s[N];
	CUdeviceptr d[N];
	char *h = plain(n), *h0 = plain(n);
	for (int i = 0; i < N; i++) {
		CHECK(cuCtxCreate_v2(&c[i], 0, 0) == 0);
		CHECK(cuCtxSetCurrent(c[i]) == 0);
		CHECK(cuStreamCreate(&s[i], 0) == 0);
		d[i] = dev(n);
	}
	CHECK(cuCtxSetCurrent(c[0]) == 0);
	round_trip(h, d[0], n, s[0], 89); /* context 0's rings, both ways */
	fill(h0, n, 90);
	CHECK(cuMemcpyHtoDAsync_v2(d[0], h0, n, s[0]) == 0); /* staged */
	memset(h0, 0, n);
	CHECK(fake_cuda_stream_hold(s[0]) == 0);
	for (int i = 1; i < N; i++) {
		CHECK(cuCtxSetCurrent(c[i]) == 0);
		round_trip(h, d[i], n, s[i], 91 + i);
	}
	fake_cuda_stream_release(s[0]);
	CHECK(cuCtxSetCurrent(c[0]) == 0);
	CHECK(cuStreamSynchronize(s[0]) == 0);
	CHECK(same(D(d[0]), n, 90));
	CHECK(cuCtxDestroy_v2(c[0]) == 0);
	CHECK(cuCtxSetCurrent(c[N - 1]) == 0);
	round_trip(h, d[N - 1], n, s[N - 1], 120); /* context 0's entry */
	for (int i = 1; i < N; i++)
		CHECK(cuCtxDestroy_v2(c[i]) == 0);
	CHECK(cuCtxSetCurrent(ctx) == 0);
	return 0;
}

/* The staging rings are not inherited by a forked child (MADV_DONTFORK:
 * registered memory shared copy-on-write with a child could leave the
 * parent's DMA on a page the child got; the child never stages).  The
 * case sets HOSTPIN_STAGE_BUFFER=4M: the rings are the registrations of
 * 2 MiB in the fake's log. */
static int mode_ring_dontfork(void)
{
	size_t n = 16 * MB;
	alarm(20);
	char *h = plain(n);
	CUdeviceptr d = dev(n);
	round_trip(h, d, n, NULL, 130);
	FILE *f = fopen(getenv("FAKE_CUDA_LOG"), "r");
	CHECK(f != NULL);
	char line[256];
	void *ring[8];
	int k = 0;
	while (k < 8 && fgets(line, sizeof(line), f)) {
		char *r = strstr(line, " REG ");
		void *p;
		size_t len;
		if (r && sscanf(r, " REG %p %zu", &p, &len) == 2 &&
		    len == 2 * MB)
			ring[k++] = p;
	}
	fclose(f);
	CHECK(k == 2); /* H2D and D2H */
	unsigned char v;
	for (int i = 0; i < k; i++)
		CHECK(mincore(ring[i], 4096, &v) == 0);
	pid_t c = fork();
	CHECK(c >= 0);
	if (c == 0) {
		int mapped = 0;
		for (int i = 0; i < k; i++)
			mapped += mincore(ring[i], 4096, &v) == 0;
		_exit(mapped);
	}
	int st;
	CHECK(waitpid(c, &st, 0) == c && WIFEXITED(st));
	printf("ring segments mapped in the child: %d\n", WEXITSTATUS(st));
	CHECK(WEXITSTATUS(st) == 0);
	round_trip(h, d, n, NULL, 131); /* the parent's rings still serve */
	return 0;
}

/* A capture that begins on stream s (thread-local or relaxed mode: no
 * other thread's calls are prohibited) while another thread's staged copy
 * on s is mid-way: the driver treats one copy as one call, done before the
 * capture or captured whole, so the copy must end first.  The case runs
 * this with HOSTPIN_STAGE_THREADS=1 and a ring of 2 MiB: thread A's
 * 32 MiB copy on s, held by the program, fills its slots and sleeps on
 * its own first chunk's event; thread B then begins the capture on s;
 * once B returned or sleeps, the hold is let go.  The late driver
 * captures (does not run) what is queued on a capturing stream: the data
 * is right only if the whole copy ran before the capture began. */
#include <pthread.h>
#include <sys/syscall.h>
CUresult cuStreamBeginCapture_v2(CUstream, int);
CUresult cuStreamEndCapture(CUstream, void **);
static CUstream cm_s;
static int cm_mode;
static _Atomic int cm_begun, cm_end;
static _Atomic pid_t cm_tid[2];
static char *cm_h;
static CUdeviceptr cm_d;
static int asleep(pid_t t) /* a futex, or a sleep between polls */
{
	long nr = task_syscall(t);
	return nr == SYS_futex || nr == SYS_nanosleep ||
	       nr == SYS_clock_nanosleep;
}
/* A asleep, having asked for its DMA behind the hold (latched: a polling
 * thread wakes between two looks) */
static int a_asleep(void *arg)
{
	static int seen;
	(void)arg;
	return seen = seen || (cm_tid[0] && asleep(cm_tid[0]) &&
			       fake_cuda_stream_asked_past_hold(cm_s));
}
static int b_waits(void *arg)
{
	(void)arg;
	return cm_begun || (cm_tid[1] && asleep(cm_tid[1]));
}
static int b_begun(void *arg) { (void)arg; return cm_begun != 0; }
static int b_ended(void *arg) { (void)arg; return cm_begun == 2; }
static void *cm_copy(void *arg)
{
	(void)arg;
	CHECK(cuCtxSetCurrent(ctx) == 0);
	cm_tid[0] = (pid_t)syscall(SYS_gettid);
	CHECK(cuMemcpyHtoDAsync_v2(cm_d, cm_h, 32 * MB, cm_s) == 0);
	return NULL;
}
static void *cm_capture(void *arg)
{
	(void)arg;
	CHECK(cuCtxSetCurrent(ctx) == 0);
	cm_tid[1] = (pid_t)syscall(SYS_gettid);
	CHECK(cuStreamBeginCapture_v2(cm_s, cm_mode) == 0);
	cm_begun = 1;
	while (!cm_end)
		usleep(1000);
	void *g;
	CHECK(cuStreamEndCapture(cm_s, &g) == 0);
	cm_begun = 2;
	return NULL;
}
static int capture_mid_copy(int mode)
{
	alarm(30);
	cm_mode = mode;
	cm_h = plain(32 * MB);
	cm_d = dev(32 * MB);
	fill(cm_h, 32 * MB, 140 + mode);
	CHECK(cuStreamCreate(&cm_s, 0) == 0);
	CHECK(fake_cuda_stream_hold(cm_s) == 0);
	pthread_t a, b;
	CHECK(pthread_create(&a, NULL, cm_copy, NULL) == 0);
	wait_for(a_asleep, NULL, "the copy waits on its own stream");
	CHECK(pthread_create(&b, NULL, cm_capture, NULL) == 0);
	wait_for(b_waits, NULL, "the capture's begin returned or sleeps");
	fake_cuda_stream_release(cm_s);
	CHECK(pthread_join(a, NULL) == 0);
	wait_for(b_begun, NULL, "the capture began");
	cm_end = 1;
	wait_for(b_ended, NULL, "the capture ended");
	CHECK(pthread_join(b, NULL) == 0);
	CHECK(cuStreamSynchronize(cm_s) == 0);
	CHECK(same(D(cm_d), 32 * MB, 140 + mode));
	return 0;
}
static int mode_capture_mid_copy_local(void) { return capture_mid_copy(1); }
static int mode_capture_mid_copy_relaxed(void) { return capture_mid_copy(2); }

/* Issue 39 item 6, a block queued for background registration (the
 * engine tester's m2d-partial-96527741): a copy that must not go as it is
 * (it earned the block's registration: the registration thread may
 * register the block's first piece before the copy reaches the driver)
 * and cannot be staged (onto device 1's stream while device 0 is current:
 * no ring) went to the driver whole while the thread, busy with another
 * block, had not begun this one; the thread then registered the block
 * under it.  The case: HOSTPIN_PIN_AFTER=1, HOSTPIN_REGISTER_CHUNK=8M,
 * FAKE_CUDA_REGISTER_HOLD_AFTER=8M (block A's first piece, once made,
 * keeps the thread until the program lets it go), FAKE_CUDA_HTOD_GATE=2M
 * (an async H2D of 2 MiB or more waits at the fake's gate),
 * FAKE_CUDA_REFUSE_PARTIAL=1.  Thread T's 2 MiB H2D from block B across
 * B's 8 MiB cell end, B queued behind A: if it reaches the driver whole
 * it waits at the gate while A and then B are registered, and is refused
 * (a range across two registrations); cut at B's cells (each part under
 * the gate) it succeeds at once, whatever B's registration does. */
static CUdeviceptr qp_d;
static char *qp_at;
static CUstream qp_s;
static volatile int qp_done;
static CUresult qp_r;
static void *qp_copy(void *arg)
{
	(void)arg;
	CHECK(cuCtxSetCurrent(ctx) == 0); /* device 0 current */
	qp_r = cuMemcpyHtoDAsync_v2(qp_d, qp_at, 2 * MB, qp_s);
	if (qp_r == 0)
		qp_r = cuStreamSynchronize(qp_s);
	qp_done = 1;
	return NULL;
}
static int qp_held(void *arg)
{
	(void)arg;
	return fake_cuda_registrations_held() == 1;
}
static int qp_gated_or_done(void *arg)
{
	(void)arg;
	return qp_done || fake_cuda_gate_waiters() == 1;
}
static int mode_queued_partial(void)
{
	size_t m = 32 * MB;
	alarm(30);
	CUcontext c1;
	CHECK(cuDevicePrimaryCtxRetain(&c1, 1) == 0);
	CHECK(cuCtxSetCurrent(c1) == 0);
	CHECK(cuStreamCreate(&qp_s, 0) == 0);
	qp_d = dev(2 * MB);
	CHECK(cuCtxSetCurrent(ctx) == 0);
	void *pa = NULL, *pb = NULL;
	CHECK(posix_memalign(&pa, 8 * MB, m) == 0);
	CHECK(posix_memalign(&pb, 8 * MB, m) == 0);
	char *a = pa, *b = pb;
	CHECK(tp_flags(a) != 0 && tp_flags(b) != 0);
	CUdeviceptr da = dev(64 * 1024);
	fill(a, m, 150), fill(b, m, 151);
	/* A earns registration; its first piece made, the thread held */
	CHECK(cuMemcpyHtoD_v2(da, a, 64 * 1024) == 0);
	wait_for(qp_held, NULL, "block A's first piece registered and held");
	qp_at = b + 8 * MB - MB;
	pthread_t t;
	CHECK(pthread_create(&t, NULL, qp_copy, NULL) == 0);
	wait_for(qp_gated_or_done, NULL, "the copy at the gate, or done");
	/* the thread goes on: A, then B, registered whole */
	fake_cuda_release_registration();
	wait_for(whole32, a, "block A registered");
	wait_for(whole32, b, "block B registered");
	fake_cuda_open_gate();
	CHECK(pthread_join(t, NULL) == 0);
	printf("H2D across a queued block's cell end: %d\n", qp_r);
	CHECK(qp_r == 0);
	CHECK(memcmp(D(qp_d), qp_at, 2 * MB) == 0);
	wait_for(is_reg, a, "block A marked registered");
	wait_for(is_reg, b, "block B marked registered");
	free(a);
	free(b);
	return 0;
}

/* Another device's context ends during a block's background registration
 * (device 1's primary released, its last reference; device 1 never made
 * current, so hostpin registers through device 0's): every piece of the
 * block was made through device 0's context, which lives on, so the
 * block stays registered, whole, once the registration ended
 * (malloc_usable_size waits for it), with no copy needed.  It was
 * released and made pending again at any context's end, its copies
 * meanwhile drained for nothing (issue 39, seed 9100082). */
#include <malloc.h>
CUresult cuDevicePrimaryCtxRelease_v2(int);
static int mode_other_ctx_end(void)
{
	size_t m = 32 * MB;
	alarm(40);
	CUcontext c1;
	CHECK(cuDevicePrimaryCtxRetain(&c1, 1) == 0);
	CUdeviceptr d;
	CUstream s;
	char *blk = half_registered(90, &d, &s);
	CHECK(cuStreamSynchronize(s) == 0);
	CHECK(same(D(d), m, 90));
	CHECK(cuDevicePrimaryCtxRelease_v2(1) == 0); /* device 1's ends */
	fake_cuda_open_gate();
	CHECK(malloc_usable_size(blk) >= m); /* the registration ended */
	printf("after another device's context ended: %s, %s\n",
	       is_reg(blk) ? "registered" : "not registered",
	       whole32(blk) ? "whole" : "not whole");
	CHECK(is_reg(blk) && whole32(blk));
	round_trip(blk, d, m, s, 91);
	CHECK(is_reg(blk) && whole32(blk));
	free(blk);
	return 0;
}

/* The engine tester's cases/staged-src-after-d2h-88101692: under
 * HOSTPIN_COPY=async a D2H into a registered block (by pieces, across its
 * 8 MiB registrations) returns at once, its DMA queued on s; a 2D H2D from
 * the same bytes on s next, across the registrations, must reach the
 * device with the D2H's data, as the driver orders the two on s (pinned
 * memory).  It was staged, its slots filled from the block on the CPU at
 * the call, before the queued D2H wrote it (the late driver runs s's work
 * only when asked): the data from before the D2H.  Now it goes direct,
 * its rows cut at the registrations (the case counts the 2D calls). */
static int mode_staged_after_d2h(void)
{
	size_t m = 32 * MB, n = 16 * MB, w = MB;
	alarm(20);
	void *p = NULL;
	CHECK(posix_memalign(&p, 8 * MB, m) == 0);
	char *blk = p, *at = blk + 4 * MB; /* across the cell end at 8 MiB */
	CHECK(is_reg(blk));
	CUdeviceptr d = dev(n), e = dev(n);
	CUstream s;
	CHECK(cuStreamCreate(&s, 0) == 0);
	fill(blk, m, 160);
	fill(D(d), n, 161);
	fill(D(e), n, 162);
	CHECK(cuMemcpyDtoHAsync_v2(at, d, n, s) == 0);
	M2D q = {.srcMemoryType = HOST, .srcHost = at, .srcPitch = w,
		 .dstMemoryType = DEVICE, .dstDevice = e, .dstPitch = w,
		 .WidthInBytes = w, .Height = n / w};
	CHECK(cuMemcpy2DAsync_v2(&q, s) == 0);
	CHECK(cuStreamSynchronize(s) == 0);
	CHECK(same(at, n, 161));
	int right = same(D(e), n, 161);
	printf("H2D after a D2H into its source, same stream: %s\n",
	       right ? "the D2H's data" : "the data before the D2H");
	CHECK(right);
	free(blk);
	return 0;
}

/* The same class in a block being registered (its first 8 MiB registered,
 * the rest held at the gate): under HOSTPIN_COPY=async a D2H into its
 * registered prefix (by pieces, the prefix's reader) then an H2D from
 * those bytes on the same stream across the prefix's end (staged: its
 * slots filled on the CPU at the call) must get the D2H's data to the
 * device.  It does because the D2H in the prefix waits for its DMAs
 * before it returns (plan.c: plan_wait, HP_PLAN_PREFIX; the block's
 * pageable semantics): without that wait the H2D read the bytes from
 * before the D2H. */
static int mode_staged_after_prefix_d2h(void)
{
	size_t m = 32 * MB, n = 4 * MB;
	alarm(20);
	CUdeviceptr d, e = dev(2 * n), f = dev(n);
	CUstream s;
	char *blk = half_registered(170, &d, &s), *at = blk + 4 * MB;
	CHECK(cuStreamSynchronize(s) == 0);
	fill(D(f), n, 171);
	CHECK(cuMemcpyDtoHAsync_v2(at, f, n, s) == 0); /* in the prefix */
	CHECK(cuMemcpyHtoDAsync_v2(e, at, 2 * n, s) == 0); /* across it */
	CHECK(cuStreamSynchronize(s) == 0);
	CHECK(same(at, n, 171));
	int right = same(D(e), n, 171);
	printf("H2D across the prefix after a D2H into it: %s\n",
	       right ? "the D2H's data" : "the data before the D2H");
	CHECK(right);
	fake_cuda_open_gate();
	CHECK(same(D(d), m, 170));
	free(blk);
	return 0;
}

/* And from a block the program registered itself (HP_F_FOREIGN: hostpin
 * stepped aside), next to a block being registered: X (32 MiB, its first
 * 8 MiB registered, the rest held at the gate), then Y (32 MiB), which the
 * program registers.  Under any HOSTPIN_COPY the program's D2H into Y
 * (pinned memory to the driver) returns at once, queued on s; an H2D from
 * X's last 64 KiB and Y's head on s next (Y's bytes in the first slots,
 * filled before any slot is waited for), a copy of two blocks one of which is
 * being registered, must get the D2H's data to the device.  It was
 * staged, its slots filled from Y on the CPU at the call, before the
 * queued D2H wrote it.  Now it goes by pieces (plan.c), the driver
 * orders it after the D2H. */
#include <sys/mman.h>
CUresult cuMemHostUnregister(void *);
static int gate_one(void *p)
{
	(void)p;
	return fake_cuda_gate_waiters() == 1;
}
static int mode_staged_after_foreign_d2h(void)
{
	size_t m = 32 * MB, n = 4 * MB, k = 64 * 1024;
	alarm(20);
	char *raw = mmap(NULL, 3 * m, PROT_NONE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	CHECK(raw != MAP_FAILED);
	char *x = (char *)(((uintptr_t)raw + 8 * MB - 1) &
			   ~(uintptr_t)(8 * MB - 1)), *y = x + m;
	CHECK(mmap(x, m, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == x);
	CHECK(mmap(y, m, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == y);
	CHECK(tp_flags(x) != 0 && tp_flags(y) != 0 && !is_reg(x));
	CHECK(cuMemHostRegister_v2(y, n, 0) == 0); /* the program's (under the gate) */
	CUdeviceptr d = dev(m), e = dev(2 * n), f = dev(n);
	CUstream s;
	CHECK(cuStreamCreate(&s, 0) == 0);
	fill(x, m, 180);
	fill(y, m, 180);
	CHECK(cuMemcpyHtoDAsync_v2(d, x, m, s) == 0); /* staged */
	CHECK(cuMemcpyHtoDAsync_v2(d, x, m, s) == 0); /* earns; staged */
	wait_for(gate_one, NULL, "the first piece reached the driver");
	fake_cuda_open_gate_once();
	wait_for(first_piece, x, "the first piece registered, the second held");
	CHECK(cuStreamSynchronize(s) == 0);
	fill(y - k, k, 182); /* X's tail */
	fill(D(f), n, 181);
	CHECK(cuMemcpyDtoHAsync_v2(y, f, n, s) == 0); /* into Y, queued */
	CHECK(cuMemcpyHtoDAsync_v2(e, y - k, k + n, s) == 0); /* X, Y */
	CHECK(cuStreamSynchronize(s) == 0);
	CHECK(same(y, n, 181));
	int right = same(D(e), k, 182) && same(D(e) + k, n, 181);
	printf("H2D of X and Y after a D2H into Y: %s\n",
	       right ? "the D2H's data" : "the data before the D2H");
	CHECK(right);
	fake_cuda_open_gate();
	CHECK(cuMemHostUnregister(y) == 0);
	CHECK(munmap(x, 2 * m) == 0);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct staged_mode modes[] = {
	    {"past_end_rect", mode_past_end_rect},
	    {"many_ctxs", mode_many_ctxs},
	    {"ring_dontfork", mode_ring_dontfork},
	    {"capture_mid_copy_local", mode_capture_mid_copy_local},
	    {"capture_mid_copy_relaxed", mode_capture_mid_copy_relaxed},
	    {"queued_partial", mode_queued_partial},
	    {"other_ctx_end", mode_other_ctx_end},
	    {"staged_after_d2h", mode_staged_after_d2h},
	    {"staged_after_prefix_d2h", mode_staged_after_prefix_d2h},
	    {"staged_after_foreign_d2h", mode_staged_after_foreign_d2h},
	};
	return staged_main("late_more", argc, argv, modes);
}
