/* A copy from or into a registered block that runs past the block's end
 * (the engine tester's diff-c-batch-past-block-96571474 and
 * diff-c-96568487), over the fake driver's late mode (FAKE_CUDA_LATE_DMA=1),
 * run under hostpin.
 *   late_past MODE
 *   MODE: past_{h2d,d2h}_{sync,async}, past_batch, past_2d_{h2d,d2h},
 *         two_{h2d,d2h}_{sync,async}, two_batch
 * HOSTPIN_THRESHOLD=4M, HOSTPIN_PIN_AFTER=1, HOSTPIN_REGISTER_CHUNK=8M,
 * FAKE_CUDA_REFUSE_PARTIAL=1 (a range only partly registered is refused).
 * Two adjacent mappings: X (9 MiB, registered by a copy, in two pieces)
 * and Y, right after it: past_*: 1 MiB, under HOSTPIN_THRESHOLD (memory
 * hostpin does not track: as a MAP_FIXED mapping over a block's middle
 * leaves the survivor before it); two_*: 8 MiB, registered too.  A copy
 * of 2 MiB from X's last MiB on into Y (a 1D copy, sync or async; a
 * batch whose second entry does; a 2D copy whose last row does) must
 * succeed with pageable semantics, never reaching the driver over a range
 * partly registered (before: passed as it is, refused). */
#include "late_common.h"

CUresult cuMemcpy2D_v2(const M2D *);
CUresult cuMemcpyBatchAsync_v2(CUdeviceptr *, CUdeviceptr *, size_t *,
			       size_t, void *, size_t *, size_t, CUstream);
size_t fake_cuda_registered_bytes(const void *, size_t);

#define XN (9 * MB)
#define AT (XN - MB) /* the copy: [x + AT, x + AT + AN) */
#define AN (2 * MB)

static char *x;
static size_t yn;

static int registered(void *p)
{
	size_t n = (size_t)(uintptr_t)p;
	return is_reg(x) && fake_cuda_registered_bytes(x, XN) == XN &&
	       (n == 0 || (is_reg(x + XN) &&
			   fake_cuda_registered_bytes(x + XN, n) == n));
}

/* X and Y (two: registered too), X 8 MiB aligned, registered by a copy
 * each (HOSTPIN_PIN_AFTER=1), in the background */
static void blocks(int two)
{
	yn = two ? 8 * MB : MB;
	char *raw = mmap(NULL, XN + yn + 8 * MB, PROT_NONE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	CHECK(raw != MAP_FAILED);
	x = (char *)(((uintptr_t)raw + 8 * MB - 1) & ~(uintptr_t)(8 * MB - 1));
	CHECK(mmap(x, XN, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == x);
	CHECK(mmap(x + XN, yn, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == x + XN);
	CHECK(tp_flags(x) != 0 && (tp_flags(x + XN) != 0) == two);
	CUdeviceptr d = dev(XN);
	CHECK(cuMemcpyHtoDAsync_v2(d, x, XN, NULL) == 0);
	if (two)
		CHECK(cuMemcpyHtoDAsync_v2(d, x + XN, yn, NULL) == 0);
	CHECK(cuStreamSynchronize(NULL) == 0);
	wait_for(registered, (void *)(uintptr_t)(two ? yn : 0),
		 "X (and Y) registered");
}

static void done(void)
{
	CHECK(munmap(x, XN + yn) == 0);
	CHECK(fake_cuda_registered_bytes(x, XN + yn) == 0);
}

static int run(int two, int h2d, int async)
{
	alarm(60);
	blocks(two);
	CUdeviceptr d = dev(AN);
	CUstream s;
	CHECK(cuStreamCreate(&s, 0) == 0);
	fill(x + AT, AN, 41);
	fill(D(d), AN, 42);
	CUresult r = copy_checked(h2d, async, d, x + AT, AN, s, 41);
	printf("a copy of X's end and Y: %d\n", r);
	CHECK(r == 0);
	done();
	return 0;
}

/* a batch of two entries, the second from X's last MiB on into Y */
static int batch(int two)
{
	alarm(60);
	blocks(two);
	CUdeviceptr d = dev(AN + MB);
	CUstream s;
	CHECK(cuStreamCreate(&s, 0) == 0);
	fill(x + AT - MB, AN + MB, 43);
	CUdeviceptr dst[2] = {d, d + MB},
		    src[2] = {(CUdeviceptr)(uintptr_t)(x + AT - MB),
			      (CUdeviceptr)(uintptr_t)(x + AT)};
	size_t sz[2] = {MB, AN};
	CUresult r = cuMemcpyBatchAsync_v2(dst, src, sz, 2, NULL, NULL, 0, s);
	printf("a batch, its second entry across X's end: %d\n", r);
	CHECK(r == 0 && cuStreamSynchronize(s) == 0);
	CHECK(same(D(d), AN + MB, 43));
	done();
	return 0;
}

/* a 2D copy of 4 rows of 256 KiB, 512 KiB apart, its last row across
 * X's end */
static int rect(int h2d)
{
	alarm(60);
	blocks(0);
	size_t w = MB / 4, p = MB / 2, rows = 4;
	char *h = x + XN - w / 2 - (rows - 1) * p;
	CUdeviceptr d = dev(w * rows);
	M2D m = {0};
	m.WidthInBytes = w, m.Height = rows;
	if (h2d) {
		fill(h, (rows - 1) * p + w, 44);
		m.srcMemoryType = HOST, m.srcHost = h, m.srcPitch = p;
		m.dstMemoryType = DEVICE, m.dstDevice = d, m.dstPitch = w;
	} else {
		fill(D(d), w * rows, 45);
		m.srcMemoryType = DEVICE, m.srcDevice = d, m.srcPitch = w;
		m.dstMemoryType = HOST, m.dstHost = h, m.dstPitch = p;
	}
	CUresult r = cuMemcpy2D_v2(&m);
	printf("a 2D copy, its last row across X's end: %d\n", r);
	CHECK(r == 0);
	for (size_t i = 0; i < rows; i++)
		CHECK(!memcmp(h + i * p, (char *)D(d) + i * w, w));
	done();
	return 0;
}

static int past_h2d_sync(void) { return run(0, 1, 0); }
static int past_h2d_async(void) { return run(0, 1, 1); }
static int past_d2h_sync(void) { return run(0, 0, 0); }
static int past_d2h_async(void) { return run(0, 0, 1); }
static int past_batch(void) { return batch(0); }
static int past_2d_h2d(void) { return rect(1); }
static int past_2d_d2h(void) { return rect(0); }
static int two_h2d_sync(void) { return run(1, 1, 0); }
static int two_h2d_async(void) { return run(1, 1, 1); }
static int two_d2h_sync(void) { return run(1, 0, 0); }
static int two_d2h_async(void) { return run(1, 0, 1); }
static int two_batch(void) { return batch(1); }

int main(int argc, char **argv)
{
	static const struct staged_mode modes[] = {
	    {"past_h2d_sync", past_h2d_sync},
	    {"past_h2d_async", past_h2d_async},
	    {"past_d2h_sync", past_d2h_sync},
	    {"past_d2h_async", past_d2h_async},
	    {"past_batch", past_batch},
	    {"past_2d_h2d", past_2d_h2d},
	    {"past_2d_d2h", past_2d_d2h},
	    {"two_h2d_sync", two_h2d_sync},
	    {"two_h2d_async", two_h2d_async},
	    {"two_d2h_sync", two_d2h_sync},
	    {"two_d2h_async", two_d2h_async},
	    {"two_batch", two_batch},
	};
	return staged_main("late_past", argc, argv, modes);
}
