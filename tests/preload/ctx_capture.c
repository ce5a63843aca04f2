/* A CUDA context that ends while another thread holds a registered block,
 * and a graph capture that begins before that holder meets the end: run
 * under hostpin over the fake driver (late mode).
 *   ctx_capture MODE   (see main)
 * The holder: a madvise(DONTNEED) of one 8 MiB cell of a registered
 * mapping (HOSTPIN_REGISTER_CHUNK=8M), held inside the cell's
 * unregistration (fake_cuda_unreg_hook) until the program lets it go.
 * What the threads do is polled for, never timed. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "late_common.h"

CUresult cuDevicePrimaryCtxReset_v2(int);
CUresult cuStreamBeginCapture_v2(CUstream, int);
CUresult cuStreamEndCapture(CUstream, void **);
size_t fake_cuda_registered_bytes(const void *, size_t);

static char *_Atomic cell; /* the cell whose unregistration is held */
static __thread int is_discarder;
static _Atomic int inside, go, disc_rc = -2;
static _Atomic int cap_tid, cap_begun, cap_end, cap_done;
static char *blk;
static CUstream cs;

void fake_cuda_unreg_hook(void *p);
void fake_cuda_unreg_hook(void *p)
{
	char *want = p;
	if (p == NULL || !is_discarder ||
	    !atomic_compare_exchange_strong(&cell, &want, NULL))
		return;
	inside = 1;
	while (!go) {
		struct timespec ts = {0, 1000000};
		nanosleep(&ts, NULL);
	}
}

static int flag(void *arg)
{
	return *(_Atomic int *)arg;
}

static int split; /* mode split: the holder unmaps the head instead */
static void *discarder(void *arg)
{
	(void)arg;
	is_discarder = 1;
	CHECK(cuCtxSetCurrent(ctx) == 0);
	if (split)
		disc_rc = munmap(blk, 8 * MB) == 0 ? 0 : errno;
	else
		disc_rc = madvise(blk + 8 * MB, 8 * MB, MADV_DONTNEED) == 0
			      ? 0
			      : errno;
	return NULL;
}

/* Begins a global capture (hostpin counts it, then waits for the held
 * unregistration's driver call), ends it when told: the end is where what
 * waited for the capture runs. */
static void *capturer(void *arg)
{
	(void)arg;
	cap_tid = (int)syscall(SYS_gettid); /* no context: none needed */
	CHECK(cuStreamBeginCapture_v2(cs, 0) == 0);
	cap_begun = 1;
	while (!cap_end) {
		struct timespec ts = {0, 1000000};
		nanosleep(&ts, NULL);
	}
	void *g;
	CHECK(cuStreamEndCapture(cs, &g) == 0);
	cap_done = 1;
	return NULL;
}

/* The capture's begin waits for the discard's driver call (asleep on
 * hostpin's gate), or has begun. */
static int cap_waits(void *arg)
{
	(void)arg;
	if (cap_begun)
		return 1;
	long nr = cap_tid ? task_syscall(cap_tid) : -1;
	return nr == SYS_futex;
}

static int kept_whole(void *p)
{
	for (int i = 0; i < 3; i++)
		if (!fake_cuda_is_registered((char *)p + (size_t)i * 8 * MB,
					     8 * MB))
			return 0;
	return is_reg(p);
}

/* A 32 MiB mapping, 8 MiB aligned (its cells are its quarters). */
static char *cells_map(size_t m)
{
	char *q = mmap(NULL, m + 8 * MB, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	CHECK(q != MAP_FAILED);
	char *b = (char *)(((uintptr_t)q + 8 * MB - 1) &
			   ~(uintptr_t)(8 * MB - 1));
	CHECK(mmap(b, m, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == b);
	return b;
}

/* Registered again by the copies after (4 at most): what the program
 * keeps of the mapping, [k, k + km). */
static int again(char *k, size_t km)
{
	CHECK(cuDevicePrimaryCtxRetain(&ctx, 0) == 0);
	CHECK(cuCtxSetCurrent(ctx) == 0);
	CUdeviceptr d = dev(km);
	int (*done)(void *) = km == 32 * MB ? reg_whole : kept_whole;
	for (unsigned i = 0; i < 4 && !done(k); i++) {
		fill(k, km, 8 + i);
		CHECK(cuMemcpyHtoDAsync_v2(d, k, km, NULL) == 0);
		CHECK(cuStreamSynchronize(NULL) == 0);
		CHECK(same(D(d), km, 8 + i));
	}
	if (!done(k)) {
		fprintf(stderr, "not registered again after the reset "
			"(tracked %d, flagged %d)\n", tp_flags(k) != 0,
			is_reg(k));
		return 1;
	}
	CHECK(munmap(k, km) == 0);
	return 0;
}

/* Device 0's primary context is reset while the holder (a discard, or a
 * partial unmap if split) holds the registered mapping, inside a cell's
 * unregistration (the reset's walk skips it); with cap, a global capture
 * begins before that unregistration, which the ended context refuses,
 * returns (the capture's begin waits for the holder's driver calls). */
static int held_reset(int cap)
{
	alarm(180);
	size_t m = 32 * MB;
	blk = cells_map(m);
	fill(blk, m, 7);
	wait_for(reg_whole, blk, "the mapping registered");
	CHECK(cuStreamCreate(&cs, 0) == 0);
	cell = split ? blk : blk + 8 * MB;
	pthread_t t, c;
	CHECK(pthread_create(&t, NULL, discarder, NULL) == 0);
	wait_for(flag, (void *)&inside, "the holder inside its unregistration");
	CHECK(cuDevicePrimaryCtxReset_v2(0) == 0); /* skips the held block */
	if (cap) {
		CHECK(pthread_create(&c, NULL, capturer, NULL) == 0);
		wait_for(cap_waits, NULL, "the capture's begin waits or has begun");
	}
	go = 1;
	CHECK(pthread_join(t, NULL) == 0);
	if (disc_rc != 0) {
		fprintf(stderr, "%s: errno %d\n", split ? "munmap" : "madvise",
			disc_rc);
		return 1;
	}
	if (cap) {
		wait_for(flag, (void *)&cap_begun, "the capture began");
		cap_end = 1;
		CHECK(pthread_join(c, NULL) == 0);
	}
	return split ? again(blk + 8 * MB, m - 8 * MB) : again(blk, m);
}

/* The discard met the end during the capture and said no (its refusal
 * taken for the capture's, though the capture waited for its call): the
 * madvise failed EBUSY, the block stayed flagged registered over dead
 * registrations and nothing looked at it again (copies at pageable speed
 * for good, counted pinned).  The madvise must succeed and the block be
 * registered again. */
static int mode_discard(void)
{
	return held_reset(1);
}

/* No capture: the partial unmap's unregistration of the head refused,
 * the mapping is released whole; what the program keeps must be tracked
 * and registered again by the copies after. */
static int mode_split(void)
{
	split = 1;
	return held_reset(0);
}

/* The same during a capture: the whole release refused too (taken for
 * the capture's), the record leaked whole, what the program keeps was no
 * longer tracked (never registered again).  It must be. */
static int mode_split_capture(void)
{
	split = 1;
	return held_reset(1);
}

/* A holder that holds no capture gate: a copy's thread that has just
 * registered the block it copies from (HOSTPIN_REGISTER_BACKGROUND=0,
 * HOSTPIN_PIN_AFTER=1), held at hostpin's pause point recheck_held.  The
 * reset's walk skips it; a global capture begins; the thread looks again
 * (hp_pin_recheck_ended), cannot unregister during the capture, and
 * says no: the block stayed flagged registered over dead registrations
 * for good.  Once the capture ended it must be registered again. */
static char *rc_p;
static CUdeviceptr rc_d;
/* all of it registered (in pieces: HOSTPIN_REGISTER_CHUNK=8M) */
static int rc_reg(void)
{
	return fake_cuda_registered_bytes(rc_p, 12 * MB) == 12 * MB;
}
static CUstream rc_s;
static void *rc_copier(void *arg)
{
	(void)arg;
	CHECK(cuCtxSetCurrent(ctx) == 0);
	/* its context ends meanwhile: its answer is not asked */
	cuMemcpyHtoDAsync_v2(rc_d, rc_p, 12 * MB, rc_s);
	return NULL;
}
static int mode_recheck(void)
{
	alarm(180);
	CHECK(getenv("HOSTPIN_TEST_PAUSE") != NULL);
	size_t n = 12 * MB;
	rc_d = dev(n);
	CHECK(cuStreamCreate(&cs, 0) == 0);
	CHECK(cuStreamCreate(&rc_s, 0) == 0);
	rc_p = malloc(n);
	CHECK(rc_p != NULL && tp_flags(rc_p) != 0 && !is_reg(rc_p));
	fill(rc_p, n, 4);
	pt_file("recheck_held", "arm");
	pthread_t a;
	CHECK(pthread_create(&a, NULL, rc_copier, NULL) == 0);
	wait_for(pt_paused, "recheck_held", "the registration's window");
	CHECK(is_reg(rc_p) && rc_reg());
	CHECK(cuDevicePrimaryCtxReset_v2(0) == 0); /* skips the held block */
	CHECK(cuStreamBeginCapture_v2(cs, 0) == 0);
	pt_file("recheck_held", "go");
	CHECK(pthread_join(a, NULL) == 0);
	void *g;
	CUresult e = cuStreamEndCapture(cs, &g);
	CHECK(e == 0 || e == 901 /* invalidated */);
	CHECK(cuDevicePrimaryCtxRetain(&ctx, 0) == 0);
	CHECK(cuCtxSetCurrent(ctx) == 0);
	CUdeviceptr d = dev(n);
	for (unsigned i = 0; i < 3 && !rc_reg(); i++) {
		fill(rc_p, n, 5 + i);
		CHECK(cuMemcpyHtoDAsync_v2(d, rc_p, n, NULL) == 0);
		CHECK(cuStreamSynchronize(NULL) == 0);
		CHECK(same(D(d), n, 5 + i));
	}
	if (!rc_reg()) {
		fprintf(stderr, "not registered again after the capture "
			"(flagged %d)\n", is_reg(rc_p));
		return 1;
	}
	free(rc_p);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct staged_mode modes[] = {
	    {"discard", mode_discard},
	    {"split", mode_split},
	    {"split_capture", mode_split_capture},
	    {"recheck", mode_recheck},
	};
	return staged_main("ctx_capture", argc, argv, modes);
}
