/* Copies through a registered block of hostpin's that fail, then the
 * program's own registration of part of that block (issue 39, seed
 * 96554247: a step aside refused with 712).  A copy is counted in flight
 * on its blocks from its host side to its end (copy.c: hold, let_go), and
 * hostpin's step aside for the program's registration (foreign.c) waits
 * for that count to fall to zero; a failing copy that did not give its
 * count back would make every later step aside on the block wait 10 s and
 * refuse the program's call with 712.  Run over the fake driver's late
 * mode with HOSTPIN_PIN_AFTER=0 (the block registered at its allocation)
 * and HOSTPIN_REGISTER_CHUNK=8M (a copy across 8 MiB goes by pieces).
 *   hold_leak all    every failing copy kind; then each registration
 *                    must return 0 (a leaked count: 712 after 10 s)
 * The failures are armed in the fake (fake_cuda_fail_arm: the nth call of
 * a function from now); whether each copy fails is not asked (a kind
 * whose armed function it never reaches just succeeds). */
#include <signal.h>

#include "late_common.h"

CUresult cuMemcpyDtoH_v2(void *, CUdeviceptr, size_t);
CUresult cuMemcpyHtoD_v2(CUdeviceptr, const void *, size_t);
CUresult cuMemcpy2DAsync_v2(const M2D *, CUstream);
CUresult cuMemcpyBatchAsync(CUdeviceptr *, CUdeviceptr *, size_t *, size_t,
			    void *, size_t *, size_t, size_t *, CUstream);
CUresult cuMemHostRegister_v2(void *, size_t, unsigned);
CUresult cuMemHostUnregister(void *);
cudaError_t cudaMemcpyAsync(void *, const void *, size_t, int, CUstream);
cudaError_t cudaMemcpy(void *, const void *, size_t, int);
void fake_cuda_fail_arm(const char *fn, int n, int code);

#define BLK (32 * MB)

struct kind {
	const char *name, *fail; /* the copy; the function that fails */
	int nth, code;
	size_t off, n; /* the host side in the block */
	int how; /* see copy() */
};

static CUdeviceptr dd;
static CUstream st;

/* One copy of kind k between blk and dd on st; its result. */
static int copy(const struct kind *k, char *blk)
{
	char *h = blk + k->off;
	size_t n = k->n;
	switch (k->how) {
	case 0: return cuMemcpyDtoHAsync_v2(h, dd, n, st);
	case 1: return cuMemcpyHtoDAsync_v2(dd, h, n, st);
	case 2: return cuMemcpyDtoH_v2(h, dd, n);
	case 3: return cuMemcpyHtoD_v2(dd, h, n);
	case 4: return cudaMemcpyAsync(h, D(dd), n, D2H, st);
	case 5: return cudaMemcpyAsync(D(dd), h, n, H2D, st);
	case 6: return cudaMemcpy(h, D(dd), n, D2H);
	case 7: { /* 2D D2H: rows of 1 MiB at a 2 MiB pitch */
		M2D q;
		memset(&q, 0, sizeof(q));
		q.srcMemoryType = DEVICE, q.srcDevice = dd, q.srcPitch = 2 * MB;
		q.dstMemoryType = HOST, q.dstHost = h, q.dstPitch = 2 * MB;
		q.WidthInBytes = MB, q.Height = n / (2 * MB);
		return cuMemcpy2DAsync_v2(&q, st);
	}
	case 8: { /* a batch of two D2H entries (pieces of the block) */
		CUdeviceptr d[2] = {(CUdeviceptr)(uintptr_t)h,
				    (CUdeviceptr)(uintptr_t)(h + n / 2)};
		CUdeviceptr s[2] = {dd, dd + n / 2};
		size_t sz[2] = {n / 2, n / 2}, ai = 0, fail = 0;
		char attr[64];
		memset(attr, 0, sizeof(attr));
		return cuMemcpyBatchAsync(d, s, sz, 2, attr, &ai, 1, &fail, st);
	}
	}
	return -1;
}

static const struct kind kinds[] = {
	/* inside one registration: the driver's call, refused */
	{"d2h async, one piece", "cuMemcpyDtoHAsync_v2", 1, 999, 0, 4 * MB, 0},
	{"h2d async, one piece", "cuMemcpyHtoDAsync_v2", 1, 700, 0, 4 * MB, 1},
	{"d2h sync, one piece", "cuMemcpyDtoH_v2", 1, 999, 0, 4 * MB, 2},
	{"h2d sync, one piece", "cuMemcpyHtoD_v2", 1, 700, 0, 4 * MB, 3},
	/* across registrations: by pieces, the first or second DMA refused */
	{"d2h async by pieces, 1st", "cuMemcpyDtoHAsync_v2", 1, 999, 4 * MB, 16 * MB, 0},
	{"d2h async by pieces, 2nd", "cuMemcpyDtoHAsync_v2", 2, 999, 4 * MB, 16 * MB, 0},
	{"h2d async by pieces, 2nd", "cuMemcpyHtoDAsync_v2", 2, 700, 4 * MB, 16 * MB, 1},
	{"d2h sync by pieces, 2nd", "cuMemcpyDtoHAsync_v2", 2, 700, 4 * MB, 16 * MB, 2},
	{"h2d sync by pieces, 2nd", "cuMemcpyHtoDAsync_v2", 2, 999, 4 * MB, 16 * MB, 3},
	/* the runtime's (an engine error passed to the runtime's own call) */
	{"runtime d2h async by pieces, 2nd", "cuMemcpyDtoHAsync_v2", 2, 999, 4 * MB, 16 * MB, 4},
	{"runtime h2d async by pieces, 2nd", "cuMemcpyHtoDAsync_v2", 2, 700, 4 * MB, 16 * MB, 5},
	{"runtime d2h async, one piece", "cuMemcpyDtoHAsync_v2", 1, 999, 0, 4 * MB, 4},
	{"runtime d2h sync by pieces, 2nd", "cuMemcpyDtoHAsync_v2", 2, 700, 4 * MB, 16 * MB, 6},
	/* 2D across registrations: staged; a staging DMA or the 2D call */
	{"2d d2h async staged, 2nd dma", "cuMemcpyDtoHAsync_v2", 2, 999, 4 * MB, 16 * MB, 7},
	{"2d d2h async staged, 2d call", "cuMemcpy2DAsync_v2", 1, 700, 4 * MB, 16 * MB, 7},
	/* a batch: its second entry refused, or a piece of one */
	{"batch d2h, 2nd entry", "cuMemcpyBatchAsync", 2, 700, 0, 8 * MB, 8},
	{"batch d2h by pieces, 2nd dma", "cuMemcpyDtoHAsync_v2", 2, 999, 4 * MB, 16 * MB, 8},
	/* the copy fence of HOSTPIN_COPY=async refused */
	{"d2h async, event refused", "cuEventRecord", 1, 999, 0, 4 * MB, 0},
};

static int mode_all(void)
{
	int bad = 0;
	dd = dev(BLK);
	CHECK(cuStreamCreate(&st, 0) == 0);
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		const struct kind *k = &kinds[i];
		void *p = NULL;
		CHECK(posix_memalign(&p, 8 * MB, BLK) == 0);
		char *blk = p;
		memset(blk, 1, BLK);
		CHECK(is_reg(blk));
		fake_cuda_fail_arm(k->fail, k->nth, k->code);
		int r = copy(k, blk);
		fake_cuda_fail_arm(NULL, 0, 0);
		cuStreamSynchronize(st); /* its error too, maybe: not asked */
		/* the program's registration of part of the block, as the
		 * fuzz program's thread 3 made it: hostpin steps aside */
		int g = cuMemHostRegister_v2(blk + 12 * MB, 4 * MB, 0);
		printf("%-34s copy %3d, then register %d\n", k->name, r, g);
		if (g != 0)
			bad = 1;
		else
			CHECK(cuMemHostUnregister(blk + 12 * MB) == 0);
		free(blk);
	}
	return bad;
}

int main(int argc, char **argv)
{
	static const struct staged_mode modes[] = {
	    {"all", mode_all},
	};
	return staged_main("hold_leak", argc, argv, modes);
}
