/* The copy engine over the fake driver's late mode (FAKE_CUDA_LATE_DMA=1:
 * DMA runs on a worker thread per stream, only as far as the program
 * synchronised; fake_late.h), run under hostpin.
 *   late MODE   (see main)
 * Each mode checks data and semantics and exits non-zero when they differ;
 * a host wait that can never end (a stream the program holds) is a hang
 * that alarm() turns into a failure.  Outcomes never depend on timing:
 * what hostpin's threads do is polled for, 60 s meaning a hang. */
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "late_common.h"

CUresult cuMemcpyDtoHAsync_v2(void *, CUdeviceptr, size_t, CUstream);
CUresult cuDevicePrimaryCtxRelease_v2(int);

/* Item 1: a block registered in the background (HOSTPIN_REGISTER_CHUNK=8M,
 * FAKE_CUDA_REGISTER_GATE=8M: its first 8 MiB cell registered, the second
 * held).  A copy under HOSTPIN_STAGE_MIN wholly inside the registered
 * cell reaches the driver as registered memory: it must keep the
 * semantics hostpin promises for registered memory under
 * HOSTPIN_COPY=sync (it waits): D2H data there on return, an H2D source
 * overwritten after the call changes nothing. */
static int mode_prefix_small(void)
{
	size_t n = 1 * MB;
	alarm(20);
	CUdeviceptr d;
	CUstream s;
	char *blk = half_registered(10, &d, &s);
	CHECK(!is_reg(blk));
	char *in = blk + 2 * MB;
	fill(D(d), n, 11);
	CHECK(cuMemcpyDtoHAsync_v2(in, d, n, s) == 0);
	CHECK(same(in, n, 11)); /* there on return */
	fill(in, n, 12);
	CHECK(cuMemcpyHtoDAsync_v2(d, in, n, s) == 0);
	memset(in, 0, n); /* after the call: changes nothing */
	CHECK(cuStreamSynchronize(s) == 0);
	CHECK(same(D(d), n, 12));
	fake_cuda_open_gate();
	wait_for(is_reg, blk, "the block registered");
	free(blk);
	return 0;
}

/* Item 6: a staged copy never waits for another stream's work.  Stream s1
 * is held by the program (fake_cuda_stream_hold: a host function or an
 * event wait it satisfies later), a staged H2D queued behind the hold
 * (its source staged: the call returns).  A staged H2D of 32 MiB on s2
 * must return without waiting for s1: the program releases s1 only after
 * it returned. */
static int mode_streams(void)
{
	size_t n1 = 24 * MB, n2 = 32 * MB;
	alarm(20);
	char *h1 = plain(n1), *h2 = plain(n2);
	CUdeviceptr d1 = dev(n1), d2 = dev(n2);
	CUstream s1, s2;
	CHECK(cuStreamCreate(&s1, 0) == 0 && cuStreamCreate(&s2, 0) == 0);
	fill(h1, n1, 20), fill(h2, n2, 21);
	CHECK(fake_cuda_stream_hold(s1) == 0);
	CHECK(cuMemcpyHtoDAsync_v2(d1, h1, n1, s1) == 0);
	memset(h1, 0, n1);
	CHECK(cuMemcpyHtoDAsync_v2(d2, h2, n2, s2) == 0); /* no wait on s1 */
	memset(h2, 0, n2);
	printf("the copy on s2 returned while s1 was held\n");
	CHECK(cuStreamSynchronize(s2) == 0);
	CHECK(same(D(d2), n2, 21));
	fake_cuda_stream_release(s1);
	CHECK(cuStreamSynchronize(s1) == 0);
	CHECK(same(D(d1), n1, 20));
	/* and the other way: D2H on s2 while s1 is held again */
	CHECK(fake_cuda_stream_hold(s1) == 0);
	fill(h1, n1, 22);
	CHECK(cuMemcpyHtoDAsync_v2(d1, h1, n1, s1) == 0);
	char *back = plain(n2);
	CHECK(cuMemcpyDtoHAsync_v2(back, d2, n2, s2) == 0);
	CHECK(same(back, n2, 21));
	fake_cuda_stream_release(s1);
	CHECK(cuStreamSynchronize(s1) == 0);
	CHECK(same(D(d1), n1, 22));
	return 0;
}

/* Item 7: a forked child's ledger slot starts with no ring bytes.  Both
 * rings made (64 MiB), a child forked and kept alive; the case sets
 * HOSTPIN_NODE_MAX_PINNED=100M: the parent's 32 MiB block that earns
 * registration at its first copy fits (64 + 32) only if the child's slot
 * does not count the parent's rings again. */
static int mode_fork_ring(void)
{
	size_t n = 16 * MB, m = 32 * MB;
	alarm(20);
	char *h = plain(n);
	CUdeviceptr d = dev(m);
	fill(h, n, 30);
	CHECK(cuMemcpyHtoDAsync_v2(d, h, n, NULL) == 0); /* staged: H2D ring */
	CHECK(cuMemcpyDtoHAsync_v2(h, d, n, NULL) == 0); /* staged: D2H ring */
	CHECK(same(h, n, 30));
	int fd[2];
	CHECK(pipe(fd) == 0);
	pid_t c = fork();
	CHECK(c >= 0);
	if (c == 0) {
		char b;
		close(fd[1]);
		_exit(read(fd[0], &b, 1) == 0 ? 0 : 1);
	}
	close(fd[0]);
	char *blk = malloc(m);
	CHECK(blk != NULL && tp_flags(blk) != 0);
	fill(blk, m, 31);
	CHECK(cuMemcpyHtoDAsync_v2(d, blk, m, NULL) == 0); /* earns */
	CHECK(cuStreamSynchronize(NULL) == 0);
	int reg = is_reg(blk);
	close(fd[1]);
	int st;
	CHECK(waitpid(c, &st, 0) == c && WIFEXITED(st) &&
	      WEXITSTATUS(st) == 0);
	printf("block registered while the child lived: %d\n", reg);
	CHECK(reg);
	CHECK(same(D(d), m, 31));
	free(blk);
	return 0;
}

/* Items 8 and 3: the rings belong to their context.  Staged copies on
 * device 0; meanwhile another context (device 1's primary) is made and
 * ended 50 times.  The rings are made once (the case counts their
 * registrations and the events live at exit: no leak), and a ring is never
 * unmapped while registered (the fake flags that). */
static int mode_other_ctx(void)
{
	size_t n = 16 * MB;
	alarm(20);
	char *h = plain(n);
	CUdeviceptr d = dev(n);
	CUstream s;
	CHECK(cuStreamCreate(&s, 0) == 0);
	for (unsigned i = 0; i < 51; i++) {
		fill(h, n, 40 + i);
		CHECK(cuMemcpyHtoDAsync_v2(d, h, n, s) == 0); /* staged */
		memset(h, 0, n);
		CHECK(cuMemcpyDtoHAsync_v2(h, d, n, s) == 0); /* staged */
		CHECK(same(h, n, 40 + i));
		if (i == 50)
			break;
		CUcontext c1;
		CHECK(cuDevicePrimaryCtxRetain(&c1, 1) == 0);
		CHECK(cuDevicePrimaryCtxRelease_v2(1) == 0); /* it ends */
	}
	return 0;
}

/* Item 12: a copy the driver refuses outright (its device side past the
 * end of the allocation: the late mode refuses it whole) is refused before
 * any byte moves, staged or not: the destination is unchanged. */
static int mode_past_end(void)
{
	size_t m = 32 * MB, n = 48 * MB;
	alarm(20);
	char *h = plain(n);
	CUdeviceptr d = dev(m);
	fill(D(d), m, 50);
	fill(h, n, 51);
	CUstream s;
	CHECK(cuStreamCreate(&s, 0) == 0);
	CHECK(cuMemcpyHtoDAsync_v2(d, h, n, s) != 0);
	CHECK(cuStreamSynchronize(s) == 0);
	CHECK(same(D(d), m, 50)); /* nothing written */
	CHECK(cuMemcpyDtoHAsync_v2(h, d, n, s) != 0);
	CHECK(same(h, n, 51)); /* nothing written */
	return 0;
}

/* Item 9: a pinned-memory cap full for a moment does not turn staging off
 * for good.  The case sets HOSTPIN_MAX_PINNED=64M: a 48 MiB block
 * registered at its first copy leaves no room for the H2D ring (32 MiB):
 * the next copy from plain memory passes through; once the block is
 * freed, the ring is made and the copy after is staged (the case counts
 * the copies that reached the driver pageable: one). */
static int mode_cap_transient(void)
{
	size_t n = 16 * MB;
	alarm(20);
	CUdeviceptr d;
	char *h = cap_full_once(n, 60, &d);
	fill(h, n, 62);
	CHECK(cuMemcpyHtoDAsync_v2(d, h, n, NULL) == 0); /* staged */
	memset(h, 0, n);
	CHECK(cuStreamSynchronize(NULL) == 0);
	CHECK(same(D(d), n, 62));
	return 0;
}

/* Items 11 and 5: the rings belong to a context.  Copies on device 1's
 * context (current) are staged through its own rings (the case: none
 * reaches the driver pageable); with device 0 current, a copy onto device
 * 1's stream (the driver allows it) succeeds whole, with its data: the
 * fake refuses an event of one context recorded on another's stream. */
static int mode_two_devices(void)
{
	size_t n = 16 * MB;
	alarm(20);
	char *h = plain(n);
	CUdeviceptr d = dev(n);
	CUstream s0, s1;
	CHECK(cuStreamCreate(&s0, 0) == 0);
	fill(h, n, 70);
	CHECK(cuMemcpyHtoDAsync_v2(d, h, n, s0) == 0); /* device 0's rings */
	CHECK(cuMemcpyDtoHAsync_v2(h, d, n, s0) == 0);
	CHECK(same(h, n, 70));
	CUcontext c1;
	CHECK(cuDevicePrimaryCtxRetain(&c1, 1) == 0);
	CHECK(cuCtxSetCurrent(c1) == 0);
	CHECK(cuStreamCreate(&s1, 0) == 0);
	for (unsigned i = 0; i < 10; i++) {
		fill(h, n, 71 + i);
		CHECK(cuMemcpyHtoDAsync_v2(d, h, n, s1) == 0);
		memset(h, 0, n);
		CHECK(cuMemcpyDtoHAsync_v2(h, d, n, s1) == 0);
		CHECK(same(h, n, 71 + i));
	}
	CHECK(cuCtxSetCurrent(ctx) == 0); /* device 0 current */
	fill(h, n, 90);
	CHECK(cuMemcpyHtoDAsync_v2(d, h, n, s1) == 0); /* device 1's stream */
	memset(h, 0, n);
	CHECK(cuStreamSynchronize(s1) == 0);
	CHECK(same(D(d), n, 90));
	CHECK(cuMemcpyDtoHAsync_v2(h, d, n, s1) == 0);
	CHECK(same(h, n, 90));
	return 0;
}

/* Item 4: the program's own registration of a block hostpin is registering
 * in the background succeeds (invariant 8: hostpin steps aside).  The
 * block's first 8 MiB piece is registered, the second held in the fake's
 * gate (as prefix_small); a helper thread lets every held registration
 * through one at a time (its outcome does not depend on when).  The
 * program then registers the whole block itself: it must succeed. */
CUresult cuMemHostRegister_v2(void *, size_t, unsigned);
CUresult cuMemHostUnregister(void *);
static _Atomic int own_done;
static void *gatekeeper(void *arg)
{
	(void)arg;
	while (!own_done) {
		if (fake_cuda_gate_waiters() > 0)
			fake_cuda_open_gate_once();
		usleep(1000);
	}
	fake_cuda_open_gate();
	return NULL;
}

static int mode_own_register(void)
{
	size_t m = 32 * MB;
	alarm(20);
	CUdeviceptr d;
	CUstream s;
	char *blk = half_registered(100, &d, &s);
	(void)d, (void)s;
	pthread_t t;
	CHECK(pthread_create(&t, NULL, gatekeeper, NULL) == 0);
	int r = cuMemHostRegister_v2(blk, m, 0);
	printf("the program's own registration: %d\n", r);
	CHECK(r == 0);
	CHECK(fake_cuda_is_registered(blk, m));
	CHECK(cuMemHostUnregister(blk) == 0);
	own_done = 1;
	CHECK(pthread_join(t, NULL) == 0);
	free(blk);
	return 0;
}

/* Item 10: no wait longer than one piece.  The block of half_registered
 * (four 8 MiB pieces; the first registered, the second held at the fake's
 * gate).  The program's thread W then makes one call (a global capture's
 * begin, a free of the block, the exit); a helper lets the held piece
 * through only once W sleeps in the kernel (a futex: a thread that spins
 * never does, and W then waits for ever: the alarm fails the mode), and
 * lets no other piece through.  So W returns only if it waited for the
 * piece in flight, not the block, and slept meanwhile. */
#include <sys/syscall.h>
static pid_t waiter; /* W's thread id */
static int asleep_in_futex(void *arg)
{
	(void)arg;
	return task_syscall(waiter) == SYS_futex;
}
static void *one_piece(void *arg)
{
	(void)arg;
	wait_for(asleep_in_futex, NULL, "the waiting thread sleeps");
	fake_cuda_open_gate_once(); /* the piece in flight, no other */
	return NULL;
}
static pthread_t start_one_piece(void)
{
	waiter = (pid_t)syscall(SYS_gettid);
	pthread_t t;
	CHECK(pthread_create(&t, NULL, one_piece, NULL) == 0);
	return t;
}
static int piece_reg(char *blk, int i)
{
	return fake_cuda_is_registered(blk + (size_t)i * 8 * MB, 8 * MB);
}

CUresult cuStreamBeginCapture_v2(CUstream, int);
CUresult cuStreamEndCapture(CUstream, void **);

/* A global capture's begin waits for the piece in flight only; the
 * registration goes on after the capture's end. */
static int mode_capture_piece(void)
{
	alarm(20);
	CUdeviceptr d;
	CUstream s, o;
	char *blk = half_registered(110, &d, &s);
	CHECK(cuStreamCreate(&o, 0) == 0);
	pthread_t t = start_one_piece();
	CHECK(cuStreamBeginCapture_v2(o, 0) == 0);
	CHECK(pthread_join(t, NULL) == 0);
	/* the second piece made, the third never begun during the capture */
	CHECK(piece_reg(blk, 0) && piece_reg(blk, 1) && !piece_reg(blk, 2));
	CHECK(fake_cuda_gate_waiters() == 0 && !is_reg(blk));
	void *g;
	CHECK(cuStreamEndCapture(o, &g) == 0);
	fake_cuda_open_gate();
	wait_for(is_reg, blk, "the block registered after the capture");
	printf("capture began after one piece\n");
	free(blk);
	return 0;
}

/* free() of the block cancels what is left after the piece in flight:
 * the pieces made unregistered, the third never begun. */
static int mode_free_piece(void)
{
	alarm(20);
	CUdeviceptr d;
	CUstream s;
	char *blk = half_registered(120, &d, &s);
	CHECK(cuStreamSynchronize(s) == 0);
	pthread_t t = start_one_piece();
	free(blk);
	CHECK(pthread_join(t, NULL) == 0);
	CHECK(!piece_reg(blk, 0) && !piece_reg(blk, 1) && !piece_reg(blk, 2));
	CHECK(fake_cuda_gate_waiters() == 0);
	printf("free cancelled after one piece\n");
	return 0;
}

/* The exit cancels what is left after the piece in flight (the fake's log:
 * two pieces registered and unregistered, none live at exit). */
static int mode_exit_piece(void)
{
	alarm(20);
	CUdeviceptr d;
	CUstream s;
	char *blk = half_registered(130, &d, &s);
	(void)blk;
	CHECK(cuStreamSynchronize(s) == 0);
	(void)start_one_piece();
	printf("exiting with a registration held\n");
	fflush(stdout);
	return 0;
}

/* realloc of the block (growing it) cancels what is left after the piece
 * in flight, asleep (it waited for the whole registration before): the
 * data moves with it, the third piece never begun. */
static int mode_realloc_piece(void)
{
	alarm(20);
	CUdeviceptr d;
	CUstream s;
	char *blk = half_registered(140, &d, &s);
	CHECK(cuStreamSynchronize(s) == 0);
	pthread_t t = start_one_piece();
	char *q = realloc(blk, 64 * MB);
	CHECK(q != NULL);
	CHECK(pthread_join(t, NULL) == 0);
	CHECK(same(q, 32 * MB, 140));
	CHECK(fake_cuda_gate_waiters() == 0);
	printf("realloc cancelled after one piece\n");
	free(q);
	return 0;
}

/* A partial munmap (the block's second half) and a discard
 * (MADV_DONTNEED of its third piece) of the block being registered wait
 * for the piece in flight only, asleep (each spun until the whole block
 * was registered before): what is left of the registration is cancelled,
 * the third piece never begun. */
static int cut_piece(int discard)
{
	alarm(20);
	CUdeviceptr d;
	CUstream s;
	char *blk = half_registered(150 + discard, &d, &s);
	CHECK(cuStreamSynchronize(s) == 0);
	pthread_t t = start_one_piece();
	if (discard)
		CHECK(madvise(blk + 16 * MB, 8 * MB, MADV_DONTNEED) == 0);
	else
		CHECK(munmap(blk + 16 * MB, 16 * MB) == 0);
	CHECK(pthread_join(t, NULL) == 0);
	CHECK(fake_cuda_gate_waiters() == 0);
	CHECK(same(blk, 16 * MB, 150 + discard)); /* the rest kept */
	printf("%s after one piece\n", discard ? "discard" : "munmap");
	fake_cuda_open_gate(); /* what registers the rest again, if any */
	if (discard)
		free(blk);
	else
		CHECK(munmap(blk, 16 * MB) == 0);
	return 0;
}
static int mode_munmap_piece(void) { return cut_piece(0); }
static int mode_purge_piece(void) { return cut_piece(1); }

static int two_pieces_unreg(void *blk)
{
	return !piece_reg(blk, 0) && !piece_reg(blk, 1);
}

/* The block of half_registered(seed), its registration parked by a global
 * capture begun on *o after the second piece: two pieces registered. */
static char *parked_block(int seed, CUstream *o)
{
	CUdeviceptr d;
	CUstream s;
	char *blk = half_registered(seed, &d, &s);
	CHECK(cuStreamSynchronize(s) == 0);
	CHECK(cuStreamCreate(o, 0) == 0);
	pthread_t t = start_one_piece();
	CHECK(cuStreamBeginCapture_v2(*o, 0) == 0);
	CHECK(pthread_join(t, NULL) == 0);
	CHECK(piece_reg(blk, 0) && piece_reg(blk, 1) && !piece_reg(blk, 2));
	return blk;
}

/* The capture on o ends: the pieces of blk made are unregistered then. */
static void capture_ends(CUstream o, char *blk)
{
	CHECK(piece_reg(blk, 0) && piece_reg(blk, 1)); /* not during it */
	void *g;
	CHECK(cuStreamEndCapture(o, &g) == 0);
	wait_for(two_pieces_unreg, blk, "the pieces unregistered after the "
		 "capture");
	CHECK(fake_cuda_gate_waiters() == 0);
}

/* free() of the block while a global capture parked its registration
 * (two pieces made, the next waiting for the capture's end) returns at
 * once: nobody ends the capture before it returns (a wait for it is a
 * hang).  The pieces made cannot be unregistered during the capture; once
 * it ended, they are, and the block is released (the case: two pieces
 * registered, both unregistered, none live at exit). */
static int mode_free_capture(void)
{
	alarm(20);
	CUstream o;
	char *blk = parked_block(160, &o);
	free(blk); /* must not wait for the capture's end */
	printf("free returned during the capture\n");
	capture_ends(o, blk);
	return 0;
}

/* realloc of the block by the thread whose global capture parked its
 * registration (waiting for the capture's end would never return: it is
 * this thread's to make): the block moves during the capture, its data
 * kept; the pieces made are unregistered once the capture ended. */
static int mode_realloc_capture(void)
{
	alarm(20);
	CUstream o;
	char *blk = parked_block(170, &o);
	char *q = realloc(blk, 64 * MB); /* must not wait for the capture */
	CHECK(q != NULL && q != blk);
	CHECK(same(q, 32 * MB, 170));
	printf("realloc returned during the capture\n");
	capture_ends(o, blk);
	free(q);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct staged_mode modes[] = {
	    {"prefix_small", mode_prefix_small},
	    {"streams", mode_streams},
	    {"fork_ring", mode_fork_ring},
	    {"other_ctx", mode_other_ctx},
	    {"past_end", mode_past_end},
	    {"cap_transient", mode_cap_transient},
	    {"two_devices", mode_two_devices},
	    {"own_register", mode_own_register},
	    {"capture_piece", mode_capture_piece},
	    {"free_piece", mode_free_piece},
	    {"exit_piece", mode_exit_piece},
	    {"realloc_piece", mode_realloc_piece},
	    {"munmap_piece", mode_munmap_piece},
	    {"purge_piece", mode_purge_piece},
	    {"free_capture", mode_free_capture},
	    {"realloc_capture", mode_realloc_capture},
	};
	return staged_main("late", argc, argv, modes);
}
