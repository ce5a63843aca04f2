/* A block that another thread holds (its busy claim) while the program
 * acts on it: what the program's call lost when it skipped the block from
 * a snapshot taken before the hold (the pattern of dfb79df's foreign.c
 * claim), run under hostpin over the fake driver.
 *   claim_race MODE   (see main)
 * A block held: one the registration thread registers after the program
 * freed it into the cache (queued before the free), held at the fake's
 * gate (FAKE_CUDA_REGISTER_GATE=16M) until the program opens it.  What
 * hostpin's thread does is polled for, never timed. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "late_common.h"

#define BLK (16 * MB)

/* q is registered in the background, held at the gate; p, queued behind
 * it, is freed into the cache; the gate lets q through: the thread then
 * registers p, cached, and holds it at the gate.  Returns p. */
static char *cached_and_held(CUdeviceptr d, CUstream s)
{
	char *q = malloc(BLK);
	CHECK(q != NULL && tp_flags(q) != 0 && !is_reg(q));
	fill(q, BLK, 1);
	CHECK(cuMemcpyHtoDAsync_v2(d, q, BLK, s) == 0); /* earns: queued */
	CHECK(cuStreamSynchronize(s) == 0);
	wait_for(gate_held, NULL, "q's registration at the gate");
	char *p = malloc(BLK);
	CHECK(p != NULL && tp_flags(p) != 0 && !is_reg(p));
	fill(p, BLK, 2);
	CHECK(cuMemcpyHtoDAsync_v2(d, p, BLK, s) == 0); /* queued behind q */
	CHECK(cuStreamSynchronize(s) == 0);
	free(p); /* into the cache, still queued */
	fake_cuda_open_gate_once();
	wait_for((int (*)(void *))is_reg, q, "q registered");
	wait_for(gate_held, NULL, "p's registration (cached) at the gate");
	return p;
}

/* A malloc that fits p: p (the oldest cached block that fits) once its
 * holder let go, a block of its own until then (freed again, so the
 * cache's order keeps p first).  60 s: a hang. */
static char *want_p;
static int got_p(void *arg)
{
	(void)arg;
	static int got; /* wait_for asks once more after the last poll */
	if (got)
		return 1;
	char *x = malloc(BLK - MB);
	CHECK(x != NULL);
	if (x == want_p)
		return got = 1;
	free(x);
	return 0;
}

/* Item 1: an allocation that finds the cached block p held by the
 * registration thread must leave p in the cache (taken later), not drop
 * it: a dropped entry was never reused nor given back, its mapping and
 * registration kept for good (cache.c's hp_cache_take, a busy snapshot
 * taken for "released by an munmap"). */
static int mode_take_held(void)
{
	alarm(180);
	CUdeviceptr d = dev(BLK);
	CUstream s;
	CHECK(cuStreamCreate(&s, 0) == 0);
	want_p = cached_and_held(d, s);
	char *m = malloc(BLK - MB); /* fits p, held: another block */
	CHECK(m != NULL && m != want_p);
	fake_cuda_open_gate();
	wait_for(got_p, NULL, "the cached block handed out again");
	free(want_p);
	free(m);
	return 0;
}

/* Item 2: a free that pushes the cached block p out of the cache (the
 * case's HOSTPIN_CACHE=40M) while the registration thread holds it must
 * wait for the thread (what is left cancelled) and give p back: skipped,
 * p stayed mapped and registered for good, out of the cache (cache.c's
 * evict).  The free runs on a thread of its own; the gate opens once it
 * waits (asleep) or returned. */
static char *big;
static _Atomic int freer_tid, freed;
static void *freer(void *arg)
{
	(void)arg;
	freer_tid = (int)syscall(SYS_gettid);
	free(big); /* cached: p is its victim */
	freed = 1;
	return NULL;
}
static int freer_waits(void *arg)
{
	(void)arg;
	if (freed)
		return 1;
	long nr = freer_tid ? task_syscall(freer_tid) : -1;
	return nr == SYS_futex || nr == SYS_nanosleep ||
	       nr == SYS_clock_nanosleep;
}
static int mode_evict_held(void)
{
	alarm(180);
	CUdeviceptr d = dev(BLK);
	CUstream s;
	CHECK(cuStreamCreate(&s, 0) == 0);
	big = malloc(32 * MB);
	CHECK(big != NULL && tp_flags(big) != 0);
	char *z = malloc(BLK); /* queued after p below; never at p's place */
	CHECK(z != NULL && tp_flags(z) != 0);
	char *p = cached_and_held(d, s);
	pthread_t t;
	CHECK(pthread_create(&t, NULL, freer, NULL) == 0);
	wait_for(freer_waits, NULL, "the free waits for the thread, or returned");
	fake_cuda_open_gate();
	CHECK(pthread_join(t, NULL) == 0);
	/* the thread is done with p once a block queued after it is
	 * registered */
	fill(z, BLK, 3);
	CHECK(cuMemcpyHtoDAsync_v2(d, z, BLK, s) == 0);
	CHECK(cuStreamSynchronize(s) == 0);
	wait_for((int (*)(void *))is_reg, z, "z registered");
	CHECK(!fake_cuda_is_registered(p, BLK));
	free(z);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct staged_mode modes[] = {
	    {"take_held", mode_take_held},
	    {"evict_held", mode_evict_held},
	};
	return staged_main("claim_race", argc, argv, modes);
}
