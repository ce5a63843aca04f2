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

static void *discarder(void *arg)
{
	(void)arg;
	is_discarder = 1;
	CHECK(cuCtxSetCurrent(ctx) == 0);
	disc_rc = madvise(blk + 8 * MB, 8 * MB, MADV_DONTNEED) == 0 ? 0 : errno;
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

static int whole(void *p)
{
	for (int i = 0; i < 4; i++)
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

/* Device 0's primary context is reset while the discard holds the block
 * (the reset's walk skips it); a global capture begins before the
 * discard's unregistration, which the ended context refuses, returns.
 * The discard meets the end during the capture and puts it off (no
 * unregistration while a capture runs: invariant 13): the block stayed
 * flagged registered over dead registrations and nothing looked at it
 * again once the capture ended (copies at pageable speed for good,
 * counted pinned).  It must be registered again after the capture: by
 * the capture's end or the copies after. */
static int mode_discard(void)
{
	alarm(180);
	size_t m = 32 * MB;
	blk = cells_map(m);
	fill(blk, m, 7);
	wait_for(whole, blk, "the mapping registered");
	CHECK(cuStreamCreate(&cs, 0) == 0);
	cell = blk + 8 * MB;
	pthread_t t, c;
	CHECK(pthread_create(&t, NULL, discarder, NULL) == 0);
	wait_for(flag, (void *)&inside, "the discard inside its unregistration");
	CHECK(cuDevicePrimaryCtxReset_v2(0) == 0); /* skips the held block */
	CHECK(pthread_create(&c, NULL, capturer, NULL) == 0);
	wait_for(cap_waits, NULL, "the capture's begin waits or has begun");
	go = 1;
	CHECK(pthread_join(t, NULL) == 0);
	wait_for(flag, (void *)&cap_begun, "the capture began");
	/* refused (EBUSY: no unregistration during the capture) or done */
	CHECK(disc_rc == 0 || disc_rc == EBUSY);
	cap_end = 1;
	CHECK(pthread_join(c, NULL) == 0);
	CHECK(cuDevicePrimaryCtxRetain(&ctx, 0) == 0);
	CHECK(cuCtxSetCurrent(ctx) == 0);
	CUdeviceptr d = dev(m);
	for (unsigned i = 0; i < 4 && !whole(blk); i++) {
		fill(blk, m, 8 + i);
		CHECK(cuMemcpyHtoDAsync_v2(d, blk, m, NULL) == 0);
		CHECK(cuStreamSynchronize(NULL) == 0);
		CHECK(same(D(d), m, 8 + i));
	}
	if (!whole(blk)) {
		fprintf(stderr, "not registered again after the capture "
			"(flagged %d)\n", is_reg(blk));
		return 1;
	}
	CHECK(munmap(blk, m) == 0);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct staged_mode modes[] = {
	    {"discard", mode_discard},
	};
	return staged_main("ctx_capture", argc, argv, modes);
}
