/* The staging rings and background registration over the fake driver's
 * late mode (FAKE_CUDA_LATE_DMA=1, fake_late.h), run under hostpin (issue
 * 39, items 4, 5, 7, 8, 12).
 *   late_reg MODE   (see main)
 * Each mode checks return codes and data and exits non-zero when they
 * differ; a wait that can never end is a hang that alarm() fails.
 * Outcomes never depend on timing: what hostpin's threads do is polled
 * for (60 s meaning a hang), and a copy may be staged or passed through,
 * the program sees the same either way. */
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "late_common.h"

CUresult cuDevicePrimaryCtxReset_v2(int);

/* Item 4: device 1's rings made while it is current (a copy on its stream
 * a).  HOSTPIN_STAGE_BUFFER=16M, HOSTPIN_STAGE_MIN=2M: 4 slots of 2 MiB
 * per direction.  a held, then a 6 MiB H2D queued on it behind the hold
 * (3 slots' events pending); with device 0 current, b held and a 2 MiB
 * H2D on it (the last slot, pending too).  Then an H2D onto device 1's
 * stream c finds no slot: device 1's ring must grow (now or in the
 * background) through device 1's context, never the current one (the
 * late driver refuses an event of one context recorded on another's
 * stream: 400).  The copy succeeds with its data, and device 1's later
 * copies on every stream too. */
static int mode_dev1_grow(void)
{
	size_t n = 16 * MB, na = 6 * MB, nb = 2 * MB;
	alarm(30);
	char *h = plain(n), *ha = plain(na), *hb = plain(nb);
	CUdeviceptr d = dev(n), da = dev(na), db = dev(nb);
	CUcontext c1;
	CUstream a, b, c;
	CHECK(cuDevicePrimaryCtxRetain(&c1, 1) == 0);
	CHECK(cuCtxSetCurrent(c1) == 0);
	CHECK(cuStreamCreate(&a, 0) == 0 && cuStreamCreate(&b, 0) == 0 &&
	      cuStreamCreate(&c, 0) == 0);
	round_trip(h, d, n, a, 10); /* device 1's rings */
	CHECK(cuCtxSetCurrent(ctx) == 0); /* device 0 current */
	CHECK(fake_cuda_stream_hold(a) == 0 && fake_cuda_stream_hold(b) == 0);
	fill(ha, na, 11), fill(hb, nb, 12);
	CHECK(cuMemcpyHtoDAsync_v2(da, ha, na, a) == 0);
	CHECK(cuMemcpyHtoDAsync_v2(db, hb, nb, b) == 0);
	memset(ha, 0, na), memset(hb, 0, nb);
	for (unsigned i = 0; i < 3; i++) {
		fill(h, n, 13 + i);
		CHECK(cuMemcpyHtoDAsync_v2(d, h, n, c) == 0);
		memset(h, 0, n);
		CHECK(cuStreamSynchronize(c) == 0);
		CHECK(same(D(d), n, 13 + i));
	}
	fake_cuda_stream_release(a);
	fake_cuda_stream_release(b);
	CHECK(cuStreamSynchronize(a) == 0 && cuStreamSynchronize(b) == 0);
	CHECK(same(D(da), na, 11) && same(D(db), nb, 12));
	CHECK(cuCtxSetCurrent(c1) == 0);
	for (unsigned i = 0; i < 3; i++) {
		round_trip(h, d, n, a, 20 + i);
		round_trip(h, d, n, b, 30 + i);
		round_trip(h, d, n, c, 40 + i);
	}
	CHECK(cuCtxSetCurrent(ctx) == 0);
	return 0;
}

/* Item 7: a ring refused for a moment (HOSTPIN_MAX_PINNED=64M: a 48 MiB
 * block registered at its first copy leaves no room for the H2D ring),
 * then device 0's primary context reset and made again by the program:
 * once the block is freed, staged copies succeed (no event of the ended
 * context is reused: the late driver refuses those). */
static int mode_reset_ring(void)
{
	size_t n = 16 * MB;
	alarm(30);
	CUdeviceptr d;
	char *h = cap_full_once(n, 40, &d);
	CHECK(cuDevicePrimaryCtxReset_v2(0) == 0);
	CHECK(cuDevicePrimaryCtxRetain(&ctx, 0) == 0);
	CHECK(cuCtxSetCurrent(ctx) == 0);
	CUdeviceptr d2 = dev(n);
	for (unsigned i = 0; i < 4; i++)
		round_trip(h, d2, n, NULL, 42 + i);
	return 0;
}

/* Item 12: a ring's growth never runs on a copy's path nor under the
 * ring's lock.  HOSTPIN_STAGE_BUFFER=16M, HOSTPIN_STAGE_MIN=2M (H2D ring:
 * one 8 MiB segment of four 2 MiB slots), FAKE_CUDA_REGISTER_GATE=8M:
 * every ring registration waits at the fake's gate, which lets the first
 * one (the ring's making) through and no other until the end.  s1 and s2
 * held, a 6 MiB H2D queued on s1 and a 2 MiB one on s2 (every slot's
 * event pending).  2 MiB H2Ds on s3 then find no slot they may wait for:
 * a growth registered on their path waits at the gate for ever (the alarm
 * fails the mode); they must return, with their data. */
static int mode_grow_bg(void)
{
	size_t n1 = 6 * MB, n = 2 * MB;
	alarm(30);
	char *h1 = plain(n1), *h = plain(n);
	CUdeviceptr d1 = dev(n1), d2 = dev(n), d3 = dev(n);
	CUstream s1, s2, s3;
	CHECK(cuStreamCreate(&s1, 0) == 0 && cuStreamCreate(&s2, 0) == 0 &&
	      cuStreamCreate(&s3, 0) == 0);
	fake_cuda_open_gate_once(); /* the H2D ring's making */
	fill(h1, n1, 50);
	CHECK(cuMemcpyHtoDAsync_v2(d1, h1, n1, s1) == 0);
	CHECK(cuStreamSynchronize(s1) == 0);
	CHECK(same(D(d1), n1, 50));
	CHECK(fake_cuda_stream_hold(s1) == 0 && fake_cuda_stream_hold(s2) == 0);
	fill(h1, n1, 51);
	CHECK(cuMemcpyHtoDAsync_v2(d1, h1, n1, s1) == 0);
	fill(h, n, 52);
	CHECK(cuMemcpyHtoDAsync_v2(d2, h, n, s2) == 0);
	memset(h1, 0, n1);
	for (unsigned i = 0; i < 3; i++) {
		fill(h, n, 53 + i);
		CHECK(cuMemcpyHtoDAsync_v2(d3, h, n, s3) == 0);
		memset(h, 0, n);
		CHECK(cuStreamSynchronize(s3) == 0);
		CHECK(same(D(d3), n, 53 + i));
	}
	printf("copies on s3 returned while the growth waited\n");
	fake_cuda_stream_release(s1);
	fake_cuda_stream_release(s2);
	fake_cuda_open_gate();
	CHECK(cuStreamSynchronize(s1) == 0 && cuStreamSynchronize(s2) == 0);
	CHECK(same(D(d1), n1, 51) && same(D(d2), n, 52));
	for (unsigned i = 0; i < 3; i++) {
		fill(h, n, 60 + i);
		CHECK(cuMemcpyHtoDAsync_v2(d3, h, n, s3) == 0);
		memset(h, 0, n);
		CHECK(cuStreamSynchronize(s3) == 0);
		CHECK(same(D(d3), n, 60 + i));
	}
	return 0;
}

/* Item 8: fork while the block is being registered in the background: the
 * child owns no half-finished registration of its parent (the block is
 * plain memory there, invariant 4): its madvise(DONTNEED) of part of it,
 * realloc and free return (alarm: a spin for ever fails the child), with
 * no driver call.  The parent's registration then ends as before. */
static int mode_fork_reg(void)
{
	alarm(30);
	CUdeviceptr d;
	CUstream s;
	char *blk = half_registered(60, &d, &s);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		alarm(10);
		if (madvise(blk + 16 * MB, 4 * MB, MADV_DONTNEED) != 0)
			_exit(3);
		if (blk[16 * MB] != 0 || blk[0] == 0)
			_exit(4);
		char *q = realloc(blk, 40 * MB);
		if (q == NULL || !same(q, 8 * MB, 60))
			_exit(5);
		free(q);
		_exit(0);
	}
	int st = 0;
	CHECK(waitpid(pid, &st, 0) == pid);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "child: status %#x\n", st);
		return 1;
	}
	fake_cuda_open_gate();
	wait_for(is_reg, blk, "the parent's block registered");
	free(blk);
	return 0;
}

/* Item 5: device 0's primary context reset while a block is registered
 * in the background (its first piece registered, the second held): the
 * block must not stay flagged registered with a dead piece.  Once the
 * registration ended (malloc_usable_size waits for it), the block is
 * registered only if every piece is (in the fake's table); the program
 * makes its context again and copies on: the block is registered again
 * (whole), its data right. */
#include <malloc.h>
static int mode_reset_reg(void)
{
	size_t m = 32 * MB;
	alarm(40);
	CUdeviceptr d;
	CUstream s;
	char *blk = half_registered(70, &d, &s);
	CHECK(cuStreamSynchronize(s) == 0);
	CHECK(cuDevicePrimaryCtxReset_v2(0) == 0);
	/* the program makes its context again and copies (hostpin learns
	 * it) before the held piece goes on */
	CHECK(cuDevicePrimaryCtxRetain(&ctx, 0) == 0);
	CHECK(cuCtxSetCurrent(ctx) == 0);
	CUstream s2;
	CHECK(cuStreamCreate(&s2, 0) == 0);
	CUdeviceptr d2 = dev(m);
	char *h = plain(4 * MB);
	fill(h, 4 * MB, 69);
	CHECK(cuMemcpyHtoDAsync_v2(d2, h, 4 * MB, s2) == 0);
	CHECK(cuStreamSynchronize(s2) == 0);
	CHECK(same(D(d2), 4 * MB, 69));
	fake_cuda_open_gate();
	CHECK(malloc_usable_size(blk) >= m); /* the registration ended */
	if (is_reg(blk) && !whole(blk)) {
		fprintf(stderr, "flagged registered with a dead piece\n");
		return 1;
	}
	for (unsigned i = 0; i < 4 && !reg_whole(blk); i++) {
		fill(blk, m, 71 + i);
		CHECK(cuMemcpyHtoDAsync_v2(d2, blk, m, s2) == 0);
		CHECK(cuStreamSynchronize(s2) == 0);
		CHECK(same(D(d2), m, 71 + i));
		CHECK(malloc_usable_size(blk) >= m);
	}
	wait_for(reg_whole, blk, "the block registered again, whole");
	fill(D(d2), m, 99);
	CHECK(cuMemcpyDtoHAsync_v2(blk, d2, m, s2) == 0);
	CHECK(cuStreamSynchronize(s2) == 0);
	CHECK(same(blk, m, 99));
	free(blk);
	return 0;
}

/* Item 5, inside a copy (HOSTPIN_REGISTER_BACKGROUND=0,
 * HOSTPIN_PIN_AFTER=1): thread T's copy registers the block in four
 * pieces, the second held at the fake's gate; device 0's primary context
 * is reset and made again meanwhile; then the gate opens.  The block must
 * not be left flagged registered with a dead piece: registered again
 * (whole) by the copies after. */
static CUdeviceptr rs_d;
static char *rs_blk;
static void *reset_copier(void *arg)
{
	(void)arg;
	CHECK(cuCtxSetCurrent(ctx) == 0);
	/* its result is the driver's (the context it ran in was reset) */
	(void)cuMemcpyHtoDAsync_v2(rs_d, rs_blk, 32 * MB, NULL);
	return NULL;
}
static int mode_reset_sync(void)
{
	size_t m = 32 * MB;
	alarm(40);
	void *p = NULL;
	CHECK(posix_memalign(&p, 8 * MB, m) == 0);
	rs_blk = p;
	rs_d = dev(m);
	fill(rs_blk, m, 75);
	pthread_t t;
	CHECK(pthread_create(&t, NULL, reset_copier, NULL) == 0);
	wait_for(gate_held, NULL, "the first piece reached the driver");
	fake_cuda_open_gate_once();
	wait_for(first_piece, rs_blk, "the first piece registered, the second held");
	CHECK(cuDevicePrimaryCtxReset_v2(0) == 0);
	CHECK(cuDevicePrimaryCtxRetain(&ctx, 0) == 0);
	CHECK(cuCtxSetCurrent(ctx) == 0);
	fake_cuda_open_gate();
	CHECK(pthread_join(t, NULL) == 0);
	if (is_reg(rs_blk) && !whole(rs_blk)) {
		fprintf(stderr, "flagged registered with a dead piece\n");
		return 1;
	}
	copy_until_whole(rs_blk, dev(m), m, 76, 3);
	CHECK(reg_whole(rs_blk));
	free(rs_blk);
	return 0;
}

/* Item 11: the program registers a hostpin block itself in 8 pieces from
 * 8 threads at once, and unregisters them (torch's
 * pinned_num_register_threads), many rounds: every call succeeds (no 713
 * from an unregistration sent elsewhere, no 712 from hostpin registering
 * the block again while a piece is still the program's), and nothing is
 * left registered at exit (the case: EXIT live=0).  Rounds alternate the
 * order of the unregistrations. */
CUresult cuMemHostRegister_v2(void *, size_t, unsigned);
CUresult cuMemHostUnregister(void *);
enum { PIECES = 8, ROUNDS = 40 };
static pthread_barrier_t pb;
static char *pblk;
static _Atomic int perr;
static void *piece_main(void *arg)
{
	int i = (int)(intptr_t)arg;
	CHECK(cuCtxSetCurrent(ctx) == 0);
	for (int k = 0; k < ROUNDS; k++) {
		char *p = pblk + (size_t)i * 4 * MB;
		pthread_barrier_wait(&pb);
		CUresult r = cuMemHostRegister_v2(p, 4 * MB, 0);
		if (r != 0)
			fprintf(stderr, "register piece %d: %d\n", i, r), perr = 1;
		pthread_barrier_wait(&pb);
		if (k & 1)
			usleep((unsigned)(PIECES - i) * 50);
		r = cuMemHostUnregister(p);
		if (r != 0)
			fprintf(stderr, "unregister piece %d: %d\n", i, r),
			    perr = 1;
	}
	return NULL;
}
static int mode_own_pieces(void)
{
	size_t m = PIECES * 4 * MB;
	alarm(60);
	pblk = malloc(m);
	CHECK(pblk != NULL && tp_flags(pblk) != 0);
	fill(pblk, m, 80);
	CUdeviceptr d = dev(m);
	CHECK(cuMemcpyHtoDAsync_v2(d, pblk, m, NULL) == 0);
	CHECK(cuStreamSynchronize(NULL) == 0);
	pthread_barrier_init(&pb, NULL, PIECES);
	pthread_t t[PIECES];
	for (int i = 0; i < PIECES; i++)
		CHECK(pthread_create(&t[i], NULL, piece_main,
				     (void *)(intptr_t)i) == 0);
	for (int i = 0; i < PIECES; i++)
		CHECK(pthread_join(t[i], NULL) == 0);
	CHECK(!perr);
	CHECK(cuMemcpyHtoDAsync_v2(d, pblk, m, NULL) == 0);
	CHECK(cuStreamSynchronize(NULL) == 0);
	CHECK(same(D(d), m, 80));
	free(pblk);
	return 0;
}

/* The limits (issue 39): a capturing thread's own partial discard and
 * munmap of a block whose background registration its capture parked
 * return (they must not wait for the capture's end: it is this thread's
 * to make).  The block (mapped by the program, tracked, two pieces of four
 * registered: the second let through once this thread sleeps in the
 * capture's begin, as late.c's capture_piece); then, capturing, this
 * thread discards part of the block (it reads zero after) and unmaps part
 * of it (refused or done: it returns).  After the capture, the rest of
 * the block is unmapped. */
CUresult cuStreamBeginCapture_v2(CUstream, int);
CUresult cuStreamEndCapture(CUstream, void **);
#include <sys/syscall.h>
static pid_t waiter;
static int asleep_in_futex(void *arg)
{
	(void)arg;
	return task_syscall(waiter) == SYS_futex;
}
static void *one_piece(void *arg)
{
	(void)arg;
	wait_for(asleep_in_futex, NULL, "the capturing thread sleeps");
	fake_cuda_open_gate_once(); /* the piece in flight, no other */
	return NULL;
}
static int mode_capture_own_purge(void)
{
	size_t m = 32 * MB;
	alarm(30);
	char *blk = mmap(NULL, m + 8 * MB, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(blk != MAP_FAILED);
	/* 8 MiB aligned (the pieces), the rest given back */
	char *al = (char *)(((uintptr_t)blk + 8 * MB - 1) & ~(8 * MB - 1));
	if (al > blk)
		munmap(blk, (size_t)(al - blk));
	if (al + m < blk + m + 8 * MB)
		munmap(al + m, (size_t)(blk + m + 8 * MB - (al + m)));
	blk = al;
	CHECK(tp_flags(blk) != 0 && !is_reg(blk));
	CUdeviceptr d = dev(m);
	CUstream s, o;
	CHECK(cuStreamCreate(&s, 0) == 0 && cuStreamCreate(&o, 0) == 0);
	fill(blk, m, 90);
	CHECK(cuMemcpyHtoDAsync_v2(d, blk, m, s) == 0);
	CHECK(cuMemcpyHtoDAsync_v2(d, blk, m, s) == 0); /* earns */
	CHECK(cuStreamSynchronize(s) == 0);
	wait_for(gate_held, NULL, "the first piece reached the driver");
	fake_cuda_open_gate_once();
	wait_for(first_piece, blk, "the first piece registered, the second held");
	waiter = (pid_t)syscall(SYS_gettid);
	pthread_t t;
	CHECK(pthread_create(&t, NULL, one_piece, NULL) == 0);
	CHECK(cuStreamBeginCapture_v2(o, 0) == 0); /* global */
	CHECK(pthread_join(t, NULL) == 0);
	/* capturing: this thread's own purge and partial munmap return */
	CHECK(madvise(blk + 20 * MB, 4 * MB, MADV_DONTNEED) == 0);
	CHECK(blk[20 * MB] == 0 && blk[24 * MB - 1] == 0);
	int r = munmap(blk + 28 * MB, 4 * MB);
	printf("munmap of part during the capture: %d\n", r);
	void *g;
	CHECK(cuStreamEndCapture(o, &g) == 0);
	fake_cuda_open_gate();
	CHECK(munmap(blk, r == 0 ? 28 * MB : m) == 0);
	return 0;
}

/* The program's own registration of a piece of a block while a copy
 * through the block waits (issue 39, the batch pass, item 4): thread A's
 * H2D from the block, registered by hostpin, waits under HOSTPIN_COPY=sync
 * for its stream, which waits in turn for this thread (held: as a stream
 * gated by a host function or a stream memory wait on a flag this thread
 * sets after its registration).  Without hostpin A's copy returns once
 * its source is staged and nothing waits for anything; under hostpin this
 * thread's cuMemHostRegister, stepping aside from hostpin's registration,
 * waited for A's copy in flight, for ever.  It must return (registered,
 * or refused as the driver refuses memory already registered: 712), then
 * the stream runs and A's copy lands whole. */
CUresult cuMemHostRegister_v2(void *, size_t, unsigned);
CUresult cuMemHostUnregister(void *);
static CUstream aw_s;
static char *aw_blk;
static CUdeviceptr aw_d;
static int aw_logged(void *arg)
{
	(void)arg;
	const char *path = getenv("FAKE_CUDA_LOG");
	char line[256];
	int hit = 0;
	FILE *f = path ? fopen(path, "r") : NULL;
	while (f && !hit && fgets(line, sizeof(line), f))
		hit = strstr(line, "CALL cuMemcpyHtoDAsync_v2") != NULL;
	if (f)
		fclose(f);
	return hit;
}
static void *aw_copier(void *arg)
{
	(void)arg;
	CHECK(cuCtxSetCurrent(ctx) == 0);
	CHECK(cuMemcpyHtoDAsync_v2(aw_d, aw_blk, 4 * MB, aw_s) == 0);
	return NULL;
}
static int mode_register_while_waited(void)
{
	size_t m = 32 * MB;
	alarm(60);
	CHECK(getenv("FAKE_CUDA_LOG") != NULL);
	aw_blk = malloc(m);
	CHECK(aw_blk != NULL && tp_flags(aw_blk) != 0);
	fill(aw_blk, m, 90);
	aw_d = dev(m);
	CHECK(cuStreamCreate(&aw_s, 0) == 0);
	wait_for(is_reg, aw_blk, "the block registered");
	CHECK(fake_cuda_stream_hold(aw_s) == 0);
	pthread_t a;
	CHECK(pthread_create(&a, NULL, aw_copier, NULL) == 0);
	/* A's copy reached the driver: hostpin counts it in flight until
	 * its wait for the held stream returns */
	wait_for(aw_logged, NULL, "the copy reached the driver");
	CUresult r = cuMemHostRegister_v2(aw_blk + 16 * MB, 4 * MB, 0);
	printf("register while a copy waits: %d\n", r);
	CHECK(r == 0 || r == 712);
	fake_cuda_stream_release(aw_s);
	CHECK(pthread_join(a, NULL) == 0);
	CHECK(cuStreamSynchronize(aw_s) == 0);
	CHECK(same(D(aw_d), 4 * MB, 90));
	if (r == 0)
		CHECK(cuMemHostUnregister(aw_blk + 16 * MB) == 0);
	free(aw_blk);
	return 0;
}

/* Item 5, a context destroyed (fuzz finding reset-cancelled-undo-710023):
 * the registration thread has pushed device 0's primary context and its
 * second piece waits at the fake's gate; the program destroys that
 * context and retains it again (the same handle lives again); a free()
 * of the block then cancels what is left (asleep until the thread lets
 * go) and the gate opens: the piece reaches the driver in the context
 * made again.  It must be undone before the block is unmapped
 * (HOSTPIN_CACHE=0): no registration over unmapped memory, none left at
 * the exit (staged_case). */
CUresult cuCtxDestroy_v2(CUcontext);
static char *dr_blk;
static void *dr_free(void *arg)
{
	(void)arg;
	waiter = (pid_t)syscall(SYS_gettid);
	free(dr_blk);
	return NULL;
}
/* dr_blk freed by another thread while its registration waits at the
 * fake's gate: the free waits for it (asleep), then the gate opens */
static int free_while_registering(void)
{
	pthread_t t;
	CHECK(pthread_create(&t, NULL, dr_free, NULL) == 0);
	while (__atomic_load_n(&waiter, __ATOMIC_SEQ_CST) == 0)
		usleep(1000);
	wait_for(asleep_in_futex, NULL, "the free waits for the registration");
	fake_cuda_open_gate();
	CHECK(pthread_join(t, NULL) == 0);
	return 0;
}

static int mode_destroy_reg(void)
{
	alarm(40);
	CUdeviceptr d;
	CUstream s;
	dr_blk = half_registered(74, &d, &s);
	CHECK(cuStreamSynchronize(s) == 0);
	CHECK(cuCtxDestroy_v2(ctx) == 0);
	CHECK(cuDevicePrimaryCtxRetain(&ctx, 0) == 0);
	return free_while_registering();
}

/* The same, no context ended: the undo of the pieces made is refused once
 * by the driver (an injected failure): the block stays registered, and its
 * release unregisters it before the unmap. */
void fake_cuda_fail_arm(const char *, int, int);
static int mode_undo_refused(void)
{
	alarm(40);
	CUdeviceptr d;
	CUstream s;
	dr_blk = half_registered(76, &d, &s);
	CHECK(cuStreamSynchronize(s) == 0);
	fake_cuda_fail_arm("cuMemHostUnregister", 1, 999);
	return free_while_registering();
}

int main(int argc, char **argv)
{
	static const struct staged_mode modes[] = {
	    {"dev1_grow", mode_dev1_grow},
	    {"reset_ring", mode_reset_ring},
	    {"grow_bg", mode_grow_bg},
	    {"fork_reg", mode_fork_reg},
	    {"reset_reg", mode_reset_reg},
	    {"reset_sync", mode_reset_sync},
	    {"own_pieces", mode_own_pieces},
	    {"capture_own_purge", mode_capture_own_purge},
	    {"register_while_waited", mode_register_while_waited},
	    {"destroy_reg", mode_destroy_reg},
	    {"undo_refused", mode_undo_refused},
	};
	return staged_main("late_reg", argc, argv, modes);
}
