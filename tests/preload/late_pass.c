/* A copy decided as a pageable pass-through while another thread's copy
 * earns its block's registration (issue 39 items 6 and 10, "decided
 * once"), over the fake driver's late mode (FAKE_CUDA_LATE_DMA=1), run
 * under hostpin.
 *   late_pass MODE   MODE: h2d_async, h2d_sync, d2h_async, d2h_sync;
 *                    htoa, atoh, tosym, fromsym (A's copy made by a copy
 *                    the engine does not plan: to or from a CUDA array,
 *                    cudaMemcpyToSymbol/FromSymbol); many (A's copy runs
 *                    through 8 blocks before it reaches the block: more
 *                    than a copy records, HP_COPY_RECS; the case's
 *                    HOSTPIN_THRESHOLD=4M)
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
size_t fake_cuda_registered_bytes(const void *, size_t);
struct desc3 {
	size_t w, h, d;
	int fmt;
	unsigned ch, fl;
};
typedef void *CUarray;
CUresult cuArray3DCreate_v2(CUarray *, const struct desc3 *);
CUresult cuMemcpyHtoA_v2(CUarray, size_t, const void *, size_t);
CUresult cuMemcpyAtoH_v2(void *, CUarray, size_t, size_t);
cudaError_t cudaMemcpyToSymbol(const void *, const void *, size_t, size_t,
			       int);
cudaError_t cudaMemcpyFromSymbol(void *, const void *, size_t, size_t, int);

#define AT (MB / 2) /* A's copy: [blk + AT, blk + AT + AN) */
#define AN (2 * MB)
#define BN ((size_t)64 << 10)

static char *blk;
static CUdeviceptr dA, dB;
static CUstream sA;
static int htod, async_;
static volatile int b_done;
static CUresult a_r;
/* A's copy when not copy_checked's: the engine plans none of these */
static CUresult (*a_fn)(void);
static CUarray arr; /* htoa, atoh: 2 MiB (2048 x 128 FLOAT2) */
static char *a_at; /* A's host side: blk + AT, or (many) further */
static size_t a_n = AN;

static void *copy_a(void *arg)
{
	(void)arg;
	CHECK(cuCtxSetCurrent(ctx) == 0);
	a_r = a_fn ? a_fn()
		   : copy_checked(htod, async_, dA, a_at, a_n, sA, 31);
	return NULL;
}

/* H2D (source zeroed at return, seed 31 at the destination) or D2H
 * (seed 32 at the destination at return) through an array or a symbol
 * (the fake's symbols are device pointers) */
static CUresult a_htoa(void)
{
	CUresult r = cuMemcpyHtoA_v2(arr, 0, a_at, AN);
	memset(a_at, 0, AN);
	return r == 0 && !same(*(char **)arr, AN, 31) ? (CUresult)-1 : r;
}
static CUresult a_atoh(void)
{
	CUresult r = cuMemcpyAtoH_v2(a_at, arr, 0, AN);
	return r == 0 && !same(a_at, AN, 32) ? (CUresult)-1 : r;
}
static CUresult a_tosym(void)
{
	CUresult r = (CUresult)cudaMemcpyToSymbol(D(dA), a_at, AN, 0, 1);
	memset(a_at, 0, AN);
	return r == 0 && !same(D(dA), AN, 31) ? (CUresult)-1 : r;
}
static CUresult a_fromsym(void)
{
	CUresult r = (CUresult)cudaMemcpyFromSymbol(a_at, D(dA), AN, 0, 2);
	return r == 0 && !same(a_at, AN, 32) ? (CUresult)-1 : r;
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

/* many's B: the block's 6 MiB onward (blk + 16 MiB is not the block's) */
static void *copy_b_many(void *arg)
{
	(void)arg;
	CHECK(cuCtxSetCurrent(ctx) == 0);
	CHECK(cuMemcpyHtoD_v2(dB, blk + 6 * MB, BN) == 0);
	CHECK(cuStreamSynchronize(NULL) == 0);
	CHECK(memcmp(D(dB), blk + 6 * MB, BN) == 0);
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

/* many: 8 blocks of 4 MiB (Y), then the block (8 MiB), adjacent */
#define YS 8
#define YN (4 * MB)
static int registered_many(void *arg)
{
	(void)arg;
	return is_reg(blk) && fake_cuda_registered_bytes(blk, 8 * MB) == 8 * MB;
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
	a_at = blk + AT;
	if (h2d)
		fill(blk + AT, AN, 31);
	dA = dev(AN), dB = dev(BN);
	fill(D(dA), AN, h2d ? 33 : 32);
	if (a_fn == a_htoa || a_fn == a_atoh) {
		struct desc3 ad = {2048, 128, 0, 0x20 /* FLOAT */, 2, 0};
		CHECK(cuArray3DCreate_v2(&arr, &ad) == 0);
		fill(*(char **)arr, AN, 32);
	}
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

static int mode_h2d_async(void) { return run(1, 1); }
static int mode_h2d_sync(void) { return run(1, 0); }
static int mode_d2h_async(void) { return run(0, 1); }
static int mode_d2h_sync(void) { return run(0, 0); }
static int mode_htoa(void) { a_fn = a_htoa; return run(1, 0); }
static int mode_atoh(void) { a_fn = a_atoh; return run(0, 0); }
static int mode_tosym(void) { a_fn = a_tosym; return run(1, 0); }
static int mode_fromsym(void) { a_fn = a_fromsym; return run(0, 0); }

/* A's H2D from the middle of the first Y block to 1 MiB into the block:
 * the block is the copy's ninth, not recorded; B's copies of the block
 * earn its registration while A waits at the door. */
static int mode_many(void)
{
	htod = 1;
	alarm(60);
	size_t m = YS * YN + 8 * MB;
	char *raw = mmap(NULL, m + 8 * MB, PROT_NONE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	CHECK(raw != MAP_FAILED);
	/* the block 1 MiB aligned (its cells), the Ys before it */
	blk = (char *)(((uintptr_t)raw + YS * YN + MB - 1) &
		       ~(uintptr_t)(MB - 1));
	char *y = blk - YS * YN;
	for (int i = 0; i < YS; i++)
		CHECK(mmap(y + (size_t)i * YN, YN, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1,
			   0) == y + (size_t)i * YN);
	CHECK(mmap(blk, 8 * MB, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == blk);
	for (int i = 0; i < YS; i++)
		CHECK(tp_flags(y + (size_t)i * YN) != 0);
	CHECK(tp_flags(blk) != 0 && !is_reg(blk));
	a_at = y + YN / 2, a_n = (size_t)(blk + MB - a_at);
	fill(a_at, a_n, 31);
	fill(blk + 4 * MB, 4 * MB, 30);
	dA = dev(a_n), dB = dev(BN);
	CHECK(cuStreamCreate(&sA, 0) == 0);
	/* B's first copy of the block counts towards its registration; the
	 * second (door_then's) earns it */
	CHECK(cuMemcpyHtoD_v2(dB, blk + 6 * MB, BN) == 0);
	door_then(copy_a, copy_b_many, registering, "B's copy registering the block");
	printf("A's copy across 8 blocks into the block: %d\n", a_r);
	CHECK(a_r == 0);
	CHECK(cuMemcpyHtoD_v2(dB, blk + 6 * MB, BN) == 0);
	wait_for(registered_many, NULL, "the block registered");
	CHECK(munmap(y, m) == 0);
	CHECK(fake_cuda_registered_bytes(blk, 8 * MB) == 0);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct staged_mode modes[] = {
	    {"h2d_async", mode_h2d_async},
	    {"h2d_sync", mode_h2d_sync},
	    {"d2h_async", mode_d2h_async},
	    {"d2h_sync", mode_d2h_sync},
	    {"htoa", mode_htoa},
	    {"atoh", mode_atoh},
	    {"tosym", mode_tosym},
	    {"fromsym", mode_fromsym},
	    {"many", mode_many},
	};
	return staged_main("late_pass", argc, argv, modes);
}
