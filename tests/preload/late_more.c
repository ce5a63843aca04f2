/* More of the copy engine over the fake driver's late mode
 * (FAKE_CUDA_LATE_DMA=1; late.c has the first modes), run under hostpin.
 *   late_more MODE   (see main)
 * Each mode checks data and semantics and exits non-zero when they
 * differ; a wait that never ends is a hang that alarm() fails. */
#include <signal.h>

#include "staged_common.h"

CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr, const void *, size_t, CUstream);
CUresult cuMemcpy2DAsync_v2(const M2D *, CUstream);
CUresult cuMemcpy3DAsync_v2(const M3D *, CUstream);

/* Item 12, 2D and 3D: a copy whose device side runs past the end of its
 * allocation (the late driver refuses it whole) is refused before any
 * byte moves, staged or not: neither side changes.  48 rows of 1 MiB
 * against a 32 MiB allocation, as one 2D copy and as 3 slices of 16. */
static int mode_past_end_rect(void)
{
	size_t m = 32 * MB, w = 1 * MB, rows = 48;
	alarm(20);
	char *h = plain(rows * w);
	CUdeviceptr d = dev(m);
	CUstream s;
	CHECK(cuStreamCreate(&s, 0) == 0);
	fill(D(d), m, 80);
	fill(h, rows * w, 81);
	M2D p = {.srcMemoryType = HOST, .srcHost = h, .srcPitch = w,
		 .dstMemoryType = DEVICE, .dstDevice = d, .dstPitch = w,
		 .WidthInBytes = w, .Height = rows};
	CHECK(cuMemcpy2DAsync_v2(&p, s) != 0);
	CHECK(cuStreamSynchronize(s) == 0);
	CHECK(same(D(d), m, 80)); /* nothing written */
	M2D q = {.srcMemoryType = DEVICE, .srcDevice = d, .srcPitch = w,
		 .dstMemoryType = HOST, .dstHost = h, .dstPitch = w,
		 .WidthInBytes = w, .Height = rows};
	CHECK(cuMemcpy2DAsync_v2(&q, s) != 0);
	CHECK(cuStreamSynchronize(s) == 0);
	CHECK(same(h, rows * w, 81)); /* nothing written */
	M3D t = {.srcMemoryType = HOST, .srcHost = h, .srcPitch = w,
		 .srcHeight = 16, .dstMemoryType = DEVICE, .dstDevice = d,
		 .dstPitch = w, .dstHeight = 16, .WidthInBytes = w,
		 .Height = 16, .Depth = 3};
	CHECK(cuMemcpy3DAsync_v2(&t, s) != 0);
	CHECK(cuStreamSynchronize(s) == 0);
	CHECK(same(D(d), m, 80));
	M3D u = {.srcMemoryType = DEVICE, .srcDevice = d, .srcPitch = w,
		 .srcHeight = 16, .dstMemoryType = HOST, .dstHost = h,
		 .dstPitch = w, .dstHeight = 16, .WidthInBytes = w,
		 .Height = 16, .Depth = 3};
	CHECK(cuMemcpy3DAsync_v2(&u, s) != 0);
	CHECK(cuStreamSynchronize(s) == 0);
	CHECK(same(h, rows * w, 81));
	/* one that fits is staged and right */
	t.Depth = 2;
	CHECK(cuMemcpy3DAsync_v2(&t, s) == 0);
	CHECK(cuStreamSynchronize(s) == 0);
	CHECK(same(D(d), m, 81));
	return 0;
}

int main(int argc, char **argv)
{
	static const struct staged_mode modes[] = {
	    {"past_end_rect", mode_past_end_rect},
	};
	return staged_main("late_more", argc, argv, modes);
}
