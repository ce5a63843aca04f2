/* A CUDA context's end while the registration thread holds a block it has
 * just registered whole (issue 39 item 5; the engine tester's
 * reset-chunk-96575277), run under hostpin over the fake driver.
 *   reset_bg MODE   (see main)
 * The thread is held at hostpin's pause point bg_settled (HOSTPIN_TEST_PAUSE)
 * after its last piece, the block flagged registered; or its next piece at
 * the fake's gate, the reset's hook at end_called (straddle, refused: the
 * engine tester's reset-refused-piece-stale-89201737); nothing is timed. */
#include <malloc.h>
#include <stdatomic.h>

#include "late_common.h"

CUresult cuDevicePrimaryCtxReset_v2(int);

static _Atomic int rb_done;
static void *rb_reset(void *arg)
{
	(void)arg;
	CHECK(cuDevicePrimaryCtxReset_v2(0) == 0);
	rb_done = 1;
	return NULL;
}
static int rb_returned_or_waits(void *arg)
{
	(void)arg;
	return rb_done || pt_paused("end_met_wait");
}

/* A 32 MiB block earned by two copies, its registration queued for the
 * thread, which is held at pause point POINT (armed first). */
static char *queued(const char *point, int seed, const char *what)
{
	size_t m = 32 * MB;
	alarm(120);
	CHECK(getenv("HOSTPIN_TEST_PAUSE") != NULL);
	void *v = NULL;
	CHECK(posix_memalign(&v, 8 * MB, m) == 0);
	char *blk = v;
	CHECK(tp_flags(blk) != 0 && !is_reg(blk));
	CUdeviceptr d = dev(m);
	CUstream s;
	CHECK(cuStreamCreate(&s, 0) == 0);
	fill(blk, m, seed);
	pt_file(point, "arm");
	CHECK(cuMemcpyHtoDAsync_v2(d, blk, m, s) == 0); /* staged */
	CHECK(cuMemcpyHtoDAsync_v2(d, blk, m, s) == 0); /* earns: queued */
	CHECK(cuStreamSynchronize(s) == 0);
	wait_for(pt_paused, (void *)point, what);
	return blk;
}

/* After the end: through context C (made again), copies register the
 * block again, whole; then it is freed. */
static int again(char *blk, CUcontext c, int seed)
{
	size_t m = 32 * MB;
	ctx = c;
	CHECK(cuCtxSetCurrent(ctx) == 0);
	CUstream s;
	CHECK(cuStreamCreate(&s, 0) == 0);
	CUdeviceptr d = dev(m);
	copy_until_whole(blk, d, m, seed, 4);
	wait_for(reg_whole, blk, "the block registered again, whole");
	free(blk);
	return 0;
}

/* Once the registration ended: the block registered whole or nothing of
 * it (0), else 1, said. */
static int whole_or_none(char *blk)
{
	size_t m = 32 * MB;
	CHECK(malloc_usable_size(blk) >= m); /* the registration ended */
	size_t n = fake_cuda_registered_bytes(blk, m);
	if (is_reg(blk) ? n != m : n != 0) {
		fprintf(stderr, "%s, %zu bytes of it registered in the driver\n",
			is_reg(blk) ? "flagged registered" : "not flagged", n);
		return 1;
	}
	return 0;
}

/* Device 0's primary context reset in that window: the reset's walk skips
 * the held block.  Its call returned while the block stayed flagged
 * registered over its dead pieces (the thread met the end later: copies
 * meanwhile went "direct" through dead registrations, the engine tester's
 * probe saw STALE-REGISTERED).  The end must wait for the thread to meet
 * it (the block pending again), then the block is registered again by the
 * copies after. */
static int mode_settled(void)
{
	char *blk = queued("bg_settled", 30, "the block registered whole, held");
	CHECK(reg_whole(blk));
	pt_file("end_met_wait", "arm");
	pthread_t t;
	CHECK(pthread_create(&t, NULL, rb_reset, NULL) == 0);
	wait_for(rb_returned_or_waits, NULL, "the reset returned, or waits");
	int stale = rb_done && is_reg(blk) && !whole(blk);
	pt_file("bg_settled", "go");
	pt_file("end_met_wait", "go");
	CHECK(pthread_join(t, NULL) == 0);
	if (stale) {
		fprintf(stderr, "the reset returned with the block flagged "
			"registered over its dead pieces\n");
		return 1;
	}
	if (is_reg(blk) && !whole(blk)) {
		fprintf(stderr, "flagged registered over a dead piece\n");
		return 1;
	}
	CUcontext c;
	CHECK(cuDevicePrimaryCtxRetain(&c, 0) == 0);
	return again(blk, c, 40);
}

/* A block half registered (half_registered), its stream synchronised,
 * then device 0's primary context reset on thread *t, held at the pause
 * point end_called (the driver's reset made, hostpin's hook not yet). */
static char *reset_at_end_called(int seed, pthread_t *t)
{
	CUdeviceptr d;
	CUstream s;
	char *blk = half_registered(seed, &d, &s);
	CHECK(cuStreamSynchronize(s) == 0);
	pt_file("end_called", "arm");
	CHECK(pthread_create(t, NULL, rb_reset, NULL) == 0);
	wait_for(pt_paused, "end_called", "the driver reset the context");
	return blk;
}

/* Device 0's primary context reset while the thread's second piece waits
 * at the fake's gate (FAKE_CUDA_REGISTER_GATE=8M), pushed through that
 * context: the piece reaches the driver after its reset (the program made
 * the context again) but before hostpin learnt of the end (its pause point
 * end_called, inside the reset's hook).  The piece lived in the context
 * made again, counted as made through the one that ended: undone by
 * nobody, registered over the block once it was unmapped (the engine
 * tester's VIOLATION registered-range-unmapped).  It must be undone: once
 * the registration ended, the block is registered whole or nothing of it
 * is. */
static int piece_passed(void *blk)
{
	return gate_held(NULL) || (tp_flags(blk) & HOSTPIN_PENDING);
}
static int mode_straddle(void)
{
	alarm(120);
	CHECK(getenv("HOSTPIN_TEST_PAUSE") != NULL);
	pthread_t t;
	char *blk = reset_at_end_called(50, &t);
	CUcontext c;
	CHECK(cuDevicePrimaryCtxRetain(&c, 0) == 0);
	fake_cuda_open_gate_once(); /* the second piece goes on */
	wait_for(piece_passed, blk, "the second piece returned");
	pt_file("end_called", "go");
	CHECK(pthread_join(t, NULL) == 0);
	fake_cuda_open_gate();
	if (whole_or_none(blk))
		return 1;
	return again(blk, c, 60);
}

/* The same reset, whole, while the thread has pushed device 0's primary
 * context for its first piece and not yet registered it (hostpin's pause
 * point pin_pushed); the program makes the context again (the same
 * handle), then the thread goes on: its piece must not be registered
 * through the context that ended (it would live in the one made again,
 * counted as the ended one's, never undone).  Once the registration
 * ended, the block is registered whole or nothing of it is. */
static int mode_pushed(void)
{
	char *blk = queued("pin_pushed", 70,
			   "the first piece's context pushed");
	CHECK(cuDevicePrimaryCtxReset_v2(0) == 0);
	CUcontext c;
	CHECK(cuDevicePrimaryCtxRetain(&c, 0) == 0);
	pt_file("pin_pushed", "go");
	if (whole_or_none(blk))
		return 1;
	return again(blk, c, 80);
}

/* Device 0's primary context reset while the thread's second piece waits
 * at the fake's gate, hostpin held inside the reset's hook before it
 * learnt of the end (end_called); the piece goes on before the program
 * made the context again: the driver refuses it (the context ended), and
 * the thread marks the context ended itself; the undo of its first piece
 * finds no context to go through (kept, flagged registered).  Once the
 * hook goes on, every block of that context must be pending again: the
 * one the thread held and one registered whole before (idle).  The hook
 * found no live context of device 0 (the thread had marked it) and walked
 * none: both stayed flagged registered over registrations that died with
 * the context (the engine tester's reset-refused-piece-stale-89201737). */
static int stale(void *blk, const char *which)
{
	size_t n = fake_cuda_registered_bytes(blk, 32 * MB);
	if (!is_reg(blk) || n == 32 * MB)
		return 0;
	fprintf(stderr, "%s: flagged registered, %zu bytes of it registered "
		"in the driver\n", which, n);
	return 1;
}
static int mode_refused(void)
{
	alarm(120);
	CHECK(getenv("HOSTPIN_TEST_PAUSE") != NULL);
	void *v = NULL;
	CHECK(posix_memalign(&v, 8 * MB, 32 * MB) == 0);
	char *a = v;
	CUdeviceptr da = dev(32 * MB);
	fill(a, 32 * MB, 90);
	for (int i = 0; i < 4; i++) /* its four pieces through the gate */
		fake_cuda_open_gate_once();
	CHECK(cuMemcpyHtoDAsync_v2(da, a, 32 * MB, NULL) == 0);
	CHECK(cuMemcpyHtoDAsync_v2(da, a, 32 * MB, NULL) == 0); /* earns */
	CHECK(cuStreamSynchronize(NULL) == 0);
	wait_for(reg_whole, a, "the first block registered whole");
	pthread_t t;
	char *blk = reset_at_end_called(100, &t);
	pt_file("bg_ended", "arm");
	fake_cuda_open_gate_once(); /* the second piece: refused */
	wait_for(pt_paused, "bg_ended", "the registration ended");
	pt_file("bg_ended", "go");
	pt_file("end_called", "go");
	CHECK(pthread_join(t, NULL) == 0);
	fake_cuda_open_gate();
	if (stale(a, "the block registered before") +
	    stale(blk, "the block the thread held"))
		return 1;
	CUcontext c;
	CHECK(cuDevicePrimaryCtxRetain(&c, 0) == 0);
	free(a);
	return again(blk, c, 110);
}

int main(int argc, char **argv)
{
	static const struct staged_mode modes[] = {
	    {"settled", mode_settled},
	    {"straddle", mode_straddle},
	    {"pushed", mode_pushed},
	    {"refused", mode_refused},
	};
	return staged_main("reset_bg", argc, argv, modes);
}
