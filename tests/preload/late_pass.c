/* A copy decided as a pageable pass-through while another thread's copy
 * earns its block's registration (issue 39 items 6 and 10, "decided
 * once"), over the fake driver's late mode (FAKE_CUDA_LATE_DMA=1), run
 * under hostpin.
 *   late_pass MODE   MODE: h2d_async, h2d_sync, d2h_async, d2h_sync
 * HOSTPIN_PIN_AFTER=2, HOSTPIN_REGISTER_CHUNK=1M, HOSTPIN_STAGE_MIN above
 * 2 MiB, FAKE_CUDA_REFUSE_PARTIAL=1 (a range only partly registered is
 * refused), FAKE_CUDA_HTOD_GATE / FAKE_CUDA_DTOH_GATE=2M (a copy of 2 MiB
 * or more waits at the driver's door until the program opens it),
 * FAKE_CUDA_REGISTER_HOLD_AFTER=1M (a registration of a piece, once made,
 * keeps its thread until the program lets it go).
 * Thread A's copy of 2 MiB across the block's first 1 MiB cell end, the
 * block's first copy (so a pass-through: under HOSTPIN_STAGE_MIN), waits at
 * the door; thread B's 64 KiB copy, the block's second, earns its
 * registration: made in B's copy (HOSTPIN_STAGE_MIN above the block) or by
 * the registration thread.  Once that registration holds its first piece
 * (or hostpin says it waits for the copy at the door: its log, or B's copy
 * returned without registering), the door opens: A's copy must succeed
 * with pageable semantics (never reach the driver over a range partly
 * registered, nor as registered memory that hostpin does not wait for).
 * Then the block is registered (a later copy, if B's put it off). */
#include <pthread.h>

#include "late_common.h"

CUresult cuMemcpyHtoD_v2(CUdeviceptr, const void *, size_t);
CUresult cuMemcpyDtoH_v2(void *, CUdeviceptr, size_t);
int fake_cuda_registrations_held(void);

#define AT (MB / 2) /* A's copy: [blk + AT, blk + AT + AN) */
#define AN (2 * MB)
#define BN ((size_t)64 << 10)

static char *blk;
static CUdeviceptr dA, dB;
static CUstream sA;
static int htod, async_;
static volatile int b_done;
static CUresult a_r;

static void *copy_a(void *arg)
{
	(void)arg;
	CHECK(cuCtxSetCurrent(ctx) == 0);
	a_r = copy_checked(htod, async_, dA, blk + AT, AN, sA, 31);
	return NULL;
}

static void *copy_b(void *arg)
{
	(void)arg;
	CHECK(cuCtxSetCurrent(ctx) == 0);
	CHECK(cuMemcpyHtoD_v2(dB, blk + 16 * MB, BN) == 0);
	CHECK(cuStreamSynchronize(NULL) == 0);
	CHECK(memcmp(D(dB), blk + 16 * MB, BN) == 0);
	b_done = 1;
	return NULL;
}

/* hostpin's log (HOSTPIN_LOG_FILE, HOSTPIN_LOG=debug) says the
 * registration thread waits for a copy passed through */
static int log_says_waits(void)
{
	return log_says("waits for the copies passed through");
}

static int registering(void *arg)
{
	(void)arg;
	/* LP_BG=1: the registration thread's (B's copy returns at once) */
	int bg = getenv("LP_BG") != NULL;
	return fake_cuda_registrations_held() >= 1 || (!bg && b_done) ||
	       (bg && log_says_waits());
}

static int registered_all(void *arg)
{
	(void)arg;
	return is_reg(blk) && whole32(blk);
}

static int run(int h2d, int async)
{
	htod = h2d, async_ = async;
	alarm(60);
	void *p = NULL;
	CHECK(posix_memalign(&p, MB, 32 * MB) == 0);
	blk = p;
	CHECK(tp_flags(blk) != 0 && !is_reg(blk));
	fill(blk, 32 * MB, 30);
	if (h2d)
		fill(blk + AT, AN, 31);
	dA = dev(AN), dB = dev(BN);
	fill(D(dA), AN, h2d ? 33 : 32);
	CHECK(cuStreamCreate(&sA, 0) == 0);
	door_then(copy_a, copy_b, registering, "B's copy registering the block");
	printf("A's copy across the block's first cell end: %d\n", a_r);
	CHECK(a_r == 0);
	/* registered: by B's copy, the registration thread, or (put off
	 * while A's copy was at the door) the next copy */
	CHECK(cuMemcpyHtoD_v2(dB, blk + 20 * MB, BN) == 0);
	wait_for(registered_all, NULL, "the block registered");
	free(blk);
	return 0;
}

int main(int argc, char **argv)
{
	return late_dir_main("late_pass", argc, argv, run);
}
