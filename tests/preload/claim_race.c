/* A block that another thread holds (its busy claim) while the program
 * acts on it: what the program's call lost when it skipped the block from
 * a snapshot taken before the hold (the pattern of dfb79df's foreign.c
 * claim), run under hostpin over the fake driver.
 *   claim_race MODE   (see main)
 * A block held: one the registration thread registers after the program
 * freed it into the cache (queued before the free), held at the fake's
 * gate (FAKE_CUDA_REGISTER_GATE=16M) until the program opens it.  What
 * hostpin's thread does is polled for, never timed. */
#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <time.h>

#include "late_common.h"

#define BLK (16 * MB)
#define RC_BLK (12 * MB) /* under the case's 16 MiB registration gate */

CUresult cuMemHostUnregister(void *);
CUresult cuDevicePrimaryCtxReset_v2(int);
CUresult cuMemcpyHtoD_v2(CUdeviceptr, const void *, size_t);
size_t fake_cuda_registered_bytes(const void *, size_t);

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
static void free_big(struct watched *w)
{
	(void)w;
	free(big); /* cached: p is its victim */
}
static struct watched freer = {.fn = free_big};
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
	CHECK(pthread_create(&t, NULL, watched_thread, &freer) == 0);
	wait_for(watch_locked, &freer, "the free waits for the thread, or returned");
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

/* A 32 MiB mapping of the program's, 8 MiB aligned (under the cases'
 * HOSTPIN_REGISTER_CHUNK=8M its cells are its quarters): a reservation
 * (never tracked), its aligned part mapped over it. */
static char *cells_map(size_t m)
{
	char *q = mmap(NULL, m + 8 * MB, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	CHECK(q != MAP_FAILED);
	char *blk = (char *)(((uintptr_t)q + 8 * MB - 1) &
			     ~(uintptr_t)(8 * MB - 1));
	CHECK(mmap(blk, m, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == blk);
	return blk;
}
/* cells_map's mapping filled with seed, once registered(it) */
static char *cells_registered(size_t m, unsigned seed, int (*registered)(void *))
{
	char *blk = cells_map(m);
	fill(blk, m, seed);
	wait_for(registered, blk, "the mapping registered");
	return blk;
}

/* Item 3: the program registers part of a mapped block of hostpin's
 * (HOSTPIN_REGISTER_CHUNK=8M: registered in 8 MiB cells) while another
 * thread unmaps the block's head: the unmap holds the block (being
 * released) and splits it, the survivor keeping its cells registered.
 * The program's step aside found the block being released and took it
 * for gone (foreign.c's claim: "nothing of ours stays"), the survivor
 * kept its cells under the program's range: the program's registration
 * refused 712 (overlap).  The unmapping thread is held inside its first
 * unregistration (fake_cuda_unreg_hook) until the registering thread
 * returned or waits (asleep). */
/* An unregistration held (fake_cuda_unreg_hook): the first of cell made
 * by the thread marked (mine), inside (set) until go. */
struct unreg_hold {
	char *_Atomic cell;
	_Atomic int inside, go;
};
static void unreg_hold(struct unreg_hold *h, void *p, int mine)
{
	char *want = p;
	if (p == NULL || !mine ||
	    !atomic_compare_exchange_strong(&h->cell, &want, NULL))
		return;
	h->inside = 1;
	while (!h->go) {
		struct timespec ts = {0, 1000000};
		nanosleep(&ts, NULL);
	}
}
static struct unreg_hold sp_hold, rd_hold;
static pthread_t sp_m;
static __thread int sp_is_m, rd_is_m;
static char *sp_blk;
static struct reg_call sp_reg = REG_CALL;

static int rd_repin; /* reset_repin: held in the registration again */
void fake_cuda_reg_hook(void *p, size_t n);
void fake_cuda_reg_hook(void *p, size_t n)
{
	(void)n;
	if (rd_repin)
		unreg_hold(&rd_hold, p, rd_is_m);
}
void fake_cuda_unreg_hook(void *p);
void fake_cuda_unreg_hook(void *p)
{
	if (!rd_repin)
		unreg_hold(&rd_hold, p, rd_is_m);
	unreg_hold(&sp_hold, p, sp_is_m);
}
static void *sp_unmapper(void *arg)
{
	(void)arg;
	sp_is_m = 1;
	CHECK(munmap(sp_blk, 8 * MB) == 0);
	return NULL;
}
static int sp_flag(void *arg)
{
	return *(_Atomic int *)arg;
}

static int mode_split_aside(void)
{
	alarm(180);
	size_t m = 32 * MB;
	char *blk = cells_registered(m, 5, is_reg);
	sp_blk = blk;
	CHECK(fake_cuda_is_registered(blk + 16 * MB, 8 * MB));
	sp_hold.cell = blk;
	pthread_t p;
	CHECK(pthread_create(&sp_m, NULL, sp_unmapper, NULL) == 0);
	wait_for(sp_flag, (void *)&sp_hold.inside, "the unmap inside its unregistration");
	sp_reg.at = blk + 16 * MB, sp_reg.n = 8 * MB;
	CHECK(pthread_create(&p, NULL, watched_thread, &sp_reg.w) == 0);
	wait_for(watch_slept, &sp_reg.w, "the registration returned or waits");
	sp_hold.go = 1;
	CHECK(pthread_join(sp_m, NULL) == 0);
	CHECK(pthread_join(p, NULL) == 0);
	if (sp_reg.rc != 0) {
		fprintf(stderr, "the program's registration inside the "
			"survivor: %d\n", (int)sp_reg.rc);
		return 1;
	}
	CHECK(cuMemHostUnregister(blk + 16 * MB) == 0);
	CHECK(munmap(blk + 8 * MB, m - 8 * MB) == 0);
	return 0;
}

/* Item 4: device 0's primary context is reset while another thread holds
 * a registered mapping (HOSTPIN_REGISTER_CHUNK=8M): its madvise(DONTNEED)
 * of one cell, held inside the cell's unregistration
 * (fake_cuda_unreg_hook).  The reset's walk skipped the held block, whose
 * registrations died with the context: the discard must still succeed
 * and the block must be registered again by the copies after (not left
 * flagged registered with dead registrations, nor given up). */
static _Atomic int rd_rc = -2;
static char *rd_blk;
static int rd_aside; /* reset_aside: the program registers instead */
static int rd_cov; /* cov_discard: an unguarded object loaded instead */
static void *rd_discarder(void *arg)
{
	(void)arg;
	rd_is_m = 1;
	CHECK(cuCtxSetCurrent(ctx) == 0);
	if (rd_aside)
		/* its context ends meanwhile: the driver's answer */
		rd_rc = cuMemHostRegister_v2(rd_blk + 8 * MB, 8 * MB, 0) ==
				709 /* CUDA_ERROR_CONTEXT_IS_DESTROYED */
			    ? 0
			    : -1;
	else
		rd_rc = madvise(rd_blk + 8 * MB, 8 * MB, MADV_DONTNEED) == 0
			    ? 0
			    : errno;
	return NULL;
}
static void reset0(struct watched *w)
{
	(void)w;
	CHECK(cuDevicePrimaryCtxReset_v2(0) == 0);
}
static struct watched rd_resetter = {.fn = reset0};
static int mode_reset_discard(void)
{
	alarm(180);
	size_t m = 32 * MB;
	char *blk = cells_registered(m, 7, reg_whole);
	rd_blk = blk;
	/* the step aside unregisters the block whole (its first cell
	 * first), the discard its second cell */
	rd_hold.cell = rd_aside ? blk : blk + 8 * MB;
	pthread_t t, r;
	CHECK(pthread_create(&t, NULL, rd_discarder, NULL) == 0);
	wait_for(sp_flag, (void *)&rd_hold.inside, "the discard inside its unregistration");
	if (rd_cov) {
		/* an object that calls an unguarded driver copy entry point
		 * by a linked reference, then a large allocation: hostpin's
		 * coverage check unregisters every registered block */
		CHECK(dlopen(getenv("HP_EXTRA_USE"), RTLD_NOW | RTLD_LOCAL));
		char *x = malloc(RC_BLK);
		CHECK(x != NULL && !is_reg(x));
		rd_hold.go = 1;
		CHECK(pthread_join(t, NULL) == 0);
		free(x);
		if (is_reg(blk) || fake_cuda_registered_bytes(blk, m)) {
			fprintf(stderr, "registered after the coverage check "
				"(flagged %d, %zu bytes)\n", is_reg(blk),
				fake_cuda_registered_bytes(blk, m));
			return 1;
		}
		CHECK(rd_rc == 0);
		CHECK(munmap(blk, m) == 0);
		return 0;
	}
	CHECK(pthread_create(&r, NULL, watched_thread, &rd_resetter) == 0);
	wait_for(watch_locked, &rd_resetter, "the reset returned or waits");
	rd_hold.go = 1;
	CHECK(pthread_join(t, NULL) == 0);
	CHECK(pthread_join(r, NULL) == 0);
	if (rd_rc != 0) {
		fprintf(stderr, "%s during the reset: %d\n",
			rd_aside ? "cuMemHostRegister" : "madvise (errno)",
			rd_rc);
		return 1;
	}
	CHECK(cuDevicePrimaryCtxRetain(&ctx, 0) == 0);
	CHECK(cuCtxSetCurrent(ctx) == 0);
	CUdeviceptr d = dev(m);
	copy_until_whole(blk, d, m, 8, 4);
	if (!reg_whole(blk)) {
		fprintf(stderr, "not registered again after the reset "
			"(flagged %d)\n", is_reg(blk));
		return 1;
	}
	CHECK(munmap(blk, m) == 0);
	return 0;
}

/* Item 5: the same reset while the program's registration of part of the
 * block holds it, stepping aside (inside hostpin's unregistration, which
 * the ended context then refuses): the block must not stay flagged
 * registered with dead registrations, never registered again. */
static int mode_reset_aside(void)
{
	rd_aside = 1;
	return mode_reset_discard();
}

/* After the reset: the context again, the block p freed into the cache
 * taken back, copied twice: registered again (0), or 1 said. */
static int cached_registered_again(char *p)
{
	CHECK(cuDevicePrimaryCtxRetain(&ctx, 0) == 0);
	CHECK(cuCtxSetCurrent(ctx) == 0);
	char *q = malloc(RC_BLK); /* the cached block */
	CHECK(q == p);
	CUdeviceptr d = dev(RC_BLK);
	for (unsigned i = 0; i < 2; i++) {
		fill(q, RC_BLK, 5 + i);
		CHECK(cuMemcpyHtoD_v2(d, q, RC_BLK) == 0);
		CHECK(same(D(d), RC_BLK, 5 + i));
	}
	if (!fake_cuda_is_registered(q, RC_BLK)) {
		fprintf(stderr, "not registered again after the reset "
			"(flagged %d)\n", is_reg(q));
		return 1;
	}
	free(q);
	return 0;
}

/* Item 6 (audit b): device 0's primary context is reset while a copy's
 * thread holds the block it has just registered, after it looked at the
 * contexts' epoch (hostpin's pause point recheck_held): the reset's walk
 * skips the held block, and the thread looks again once its claim ended
 * (hp_pin_recheck_ended).  That look finds the block being freed by
 * another thread (into the cache, which keeps a registration: held at
 * release_claimed): it returned then, and the block stayed flagged
 * registered over dead registrations, never registered again (a copy
 * through it: pageable speed for good).  It must wait for the free and
 * look again: the block, taken from the cache, is registered again by
 * its next copy. */
static char *rc_p;
static CUdeviceptr rc_d;
static _Atomic int rc_copied;
static void *rc_copier(void *arg)
{
	(void)arg;
	CHECK(cuCtxSetCurrent(ctx) == 0);
	/* earns registration (HOSTPIN_PIN_AFTER=1), made in this call
	 * (HOSTPIN_REGISTER_BACKGROUND=0); its context ends meanwhile: its
	 * answer is not asked */
	cuMemcpyHtoD_v2(rc_d, rc_p, RC_BLK);
	rc_copied = 1;
	return NULL;
}
static void *rc_freer(void *arg)
{
	(void)arg;
	free(rc_p);
	return NULL;
}
static int rc_looked(void *arg)
{
	(void)arg;
	return rc_copied || pt_paused("recheck_wait");
}
static int mode_recheck(void)
{
	alarm(180);
	CHECK(getenv("HOSTPIN_TEST_PAUSE") != NULL);
	rc_d = dev(RC_BLK);
	rc_p = malloc(RC_BLK);
	CHECK(rc_p != NULL && tp_flags(rc_p) != 0 && !is_reg(rc_p));
	fill(rc_p, RC_BLK, 4);
	pt_file("recheck_held", "arm");
	pt_file("recheck_look", "arm");
	pt_file("recheck_wait", "arm");
	pthread_t a, b;
	CHECK(pthread_create(&a, NULL, rc_copier, NULL) == 0);
	wait_for(pt_paused, "recheck_held", "the registration's window");
	CHECK(is_reg(rc_p) && fake_cuda_is_registered(rc_p, RC_BLK));
	CHECK(cuDevicePrimaryCtxReset_v2(0) == 0); /* skips the held block */
	pt_file("recheck_held", "go");
	wait_for(pt_paused, "recheck_look", "the claim ended");
	pt_file("release_claimed", "arm");
	CHECK(pthread_create(&b, NULL, rc_freer, NULL) == 0);
	wait_for(pt_paused, "release_claimed", "the free claimed the block");
	pt_file("recheck_look", "go");
	wait_for(rc_looked, NULL, "the look again returned or waits");
	pt_file("recheck_wait", "go");
	pt_file("release_claimed", "go");
	CHECK(pthread_join(b, NULL) == 0);
	CHECK(pthread_join(a, NULL) == 0);
	return cached_registered_again(rc_p);
}

/* Item 7 (audit d): the same reset while the discard holds the block
 * after its unregistration of the cell, inside the cell's registration
 * again (fake_cuda_reg_hook): the block's other cells died with the
 * context; the cell registered again through another context (or
 * refused, the block left unregistered for good), the block stayed
 * flagged registered over dead registrations.  It must be pending again,
 * registered again by the copies after. */
static int mode_reset_repin(void)
{
	rd_repin = 1;
	return mode_reset_discard();
}

/* Item 8 (audit d): the reset while a free of a registered block holds
 * it, being released into the cache (hostpin's pause point
 * release_claimed): the reset's walk skipped it, and the cache kept it
 * flagged registered over its dead registration, handed out so again
 * (pageable speed for good).  It must be pending again, registered by the
 * copies after it is taken from the cache. */
static void *rk_freer(void *arg)
{
	free(arg);
	return NULL;
}
static int mode_reset_cache(void)
{
	alarm(180);
	CHECK(getenv("HOSTPIN_TEST_PAUSE") != NULL);
	CUdeviceptr d = dev(RC_BLK);
	char *p = malloc(RC_BLK);
	CHECK(p != NULL && tp_flags(p) != 0);
	fill(p, RC_BLK, 3);
	CHECK(cuMemcpyHtoD_v2(d, p, RC_BLK) == 0); /* registered here */
	CHECK(is_reg(p) && fake_cuda_is_registered(p, RC_BLK));
	pt_file("release_claimed", "arm");
	pthread_t b;
	CHECK(pthread_create(&b, NULL, rk_freer, p) == 0);
	wait_for(pt_paused, "release_claimed", "the free claimed the block");
	CHECK(cuDevicePrimaryCtxReset_v2(0) == 0); /* skips it */
	pt_file("release_claimed", "go");
	CHECK(pthread_join(b, NULL) == 0);
	return cached_registered_again(p);
}

/* Item 9 (audit e): an object that calls a driver copy entry point
 * hostpin does not guard is loaded while a discard holds a registered
 * mapping (inside its cell's unregistration): the coverage check's walk,
 * which unregisters every registered block, skipped the held block, and
 * the discard registered its cell again: the mapping stayed registered
 * while copies could bypass hostpin's hooks.  It must end unregistered. */
static int mode_cov_discard(void)
{
	rd_cov = 1;
	return mode_reset_discard();
}

int main(int argc, char **argv)
{
	static const struct staged_mode modes[] = {
	    {"take_held", mode_take_held},
	    {"evict_held", mode_evict_held},
	    {"split_aside", mode_split_aside},
	    {"reset_discard", mode_reset_discard},
	    {"reset_aside", mode_reset_aside},
	    {"recheck", mode_recheck},
	    {"reset_repin", mode_reset_repin},
	    {"reset_cache", mode_reset_cache},
	    {"cov_discard", mode_cov_discard},
	};
	return staged_main("claim_race", argc, argv, modes);
}
