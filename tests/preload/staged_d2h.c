/* A staged D2H's pipeline (stage.c, hp_stage_run_dtoh), run under hostpin
 * over the fake driver: each chunk's drain (slot to the program's memory)
 * is posted to the copy threads before the last one's is waited for, and a
 * slot gets its next DMA only once its drain is done.  Checks bytes and
 * order, never time:
 *   staged_d2h sizes   D2Hs of 1, 2, 4 and 5 slots, 27 slots and a tail,
 *                      each into fresh memory, every byte checked on
 *                      return (before any synchronisation): every drain
 *                      done before the call returns, each chunk in its
 *                      place, none overwritten by a later chunk's DMA
 *   staged_d2h order   stream order around pipelined D2Hs: a D2H, an H2D
 *                      over the same device bytes, a D2H again (each sees
 *                      what was queued before it, not after); two D2Hs
 *                      into one place (the later wins); a D2H between
 *                      two H2Ds of a second stream's device bytes
 *   staged_d2h sync    the synchronous form (cuMemcpyDtoH_v2), 27 slots
 * Slots are 8 MiB (the default ring); the case runs it with several copy
 * threads and in the fake's modes where a DMA runs late (only as far as
 * the program asked: a drain before its DMA reads the wrong bytes) and at
 * once (FAKE_CUDA_TIMED=1: a DMA into a slot still being drained
 * overwrites it). */
#include "staged_common.h"

CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr, const void *, size_t, CUstream);
CUresult cuMemcpyDtoH_v2(void *, CUdeviceptr, size_t);

/* device memory of n bytes holding seed's pattern (the fake's device
 * memory is host memory), s idle */
static CUdeviceptr dev_of(size_t n, unsigned seed, CUstream s)
{
	CUdeviceptr d = dev(n);
	CHECK(cuStreamSynchronize(s) == 0);
	fill(D(d), n, seed);
	return d;
}

static int mode_sizes(void)
{
	static const size_t sz[] = {8 * MB, 16 * MB, 32 * MB, 40 * MB,
				    27 * 8 * MB + 4 * 12345};
	CUstream s;
	CHECK(cuStreamCreate(&s, 0) == 0);
	for (unsigned i = 0; i < sizeof(sz) / sizeof(sz[0]); i++) {
		size_t n = sz[i];
		CUdeviceptr d = dev_of(n, 20 + i, s);
		char *back = plain(n);
		CHECK(cuMemcpyDtoHAsync_v2(back, d, n, i & 1 ? s : NULL) == 0);
		CHECK(same(back, n, 20 + i)); /* there on return */
		munmap(back, n);
	}
	return 0;
}

static int mode_order(void)
{
	CUstream s, s2;
	CHECK(cuStreamCreate(&s, 0) == 0 && cuStreamCreate(&s2, 0) == 0);
	size_t n = 9 * 8 * MB + 4 * 77;
	char *a = plain(n), *b = plain(n), *c = plain(n);
	CUdeviceptr d = dev_of(n, 30, s);
	/* D2H, H2D over its bytes, D2H: queued in that order on s */
	fill(c, n, 31);
	CHECK(cuMemcpyDtoHAsync_v2(a, d, n, s) == 0);
	CHECK(cuMemcpyHtoDAsync_v2(d, c, n, s) == 0);
	memset(c, 0, n); /* staged: changes nothing */
	CHECK(cuMemcpyDtoHAsync_v2(b, d, n, s) == 0);
	CHECK(same(a, n, 30) && same(b, n, 31));
	/* two D2Hs into one place: the later wins */
	CUdeviceptr d2 = dev_of(n, 32, s2);
	CHECK(cuMemcpyDtoHAsync_v2(a, d, n, s) == 0);
	CHECK(cuMemcpyDtoHAsync_v2(a, d2, n, s) == 0);
	CHECK(same(a, n, 32));
	/* a second stream's device bytes: an H2D, a D2H, an H2D */
	fill(c, n, 33);
	CHECK(cuMemcpyHtoDAsync_v2(d2, c, n, s2) == 0);
	CHECK(cuMemcpyDtoHAsync_v2(b, d2, n, s2) == 0);
	fill(c, n, 34);
	CHECK(cuMemcpyHtoDAsync_v2(d2, c, n, s2) == 0);
	CHECK(same(b, n, 33));
	CHECK(cuStreamSynchronize(s2) == 0);
	CHECK(same(D(d2), n, 34));
	return 0;
}

static int mode_sync(void)
{
	size_t n = 27 * 8 * MB + 4 * 999;
	CUdeviceptr d = dev_of(n, 40, NULL);
	char *back = plain(n);
	CHECK(cuMemcpyDtoH_v2(back, d, n) == 0);
	CHECK(same(back, n, 40));
	return 0;
}

int main(int argc, char **argv)
{
	static const struct staged_mode modes[] = {
	    {"sizes", mode_sizes}, {"order", mode_order}, {"sync", mode_sync},
	};
	return staged_main("staged_d2h", argc, argv, modes);
}
