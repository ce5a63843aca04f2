/* The fake driver's legacy default stream ordering (tests/fakes/
 * fake_order.h), without hostpin: work on the legacy stream waits for the
 * work queued before it on the blocking streams (a per-thread default
 * stream, a stream made with flags 0), work on those waits for the legacy
 * work queued before it, and a CU_STREAM_NON_BLOCKING stream is not
 * ordered with it.  Run in the fake's default mode and its late mode
 * (FAKE_CUDA_LATE_DMA=1), where work runs only as far as the program
 * asked, so each check is deterministic.  Device memory of the fake is
 * the process's own, read here directly.  Prints "ok". */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
CUresult cuInit(unsigned);
CUresult cuDevicePrimaryCtxRetain(CUcontext *, int);
CUresult cuCtxSetCurrent(CUcontext);
CUresult cuCtxSynchronize(void);
CUresult cuMemAlloc_v2(CUdeviceptr *, size_t);
CUresult cuStreamCreate(CUstream *, unsigned);
CUresult cuStreamSynchronize(CUstream);
CUresult cuStreamQuery(CUstream);
CUresult cuEventCreate(CUevent *, unsigned);
CUresult cuEventRecord(CUevent, CUstream);
CUresult cuEventQuery(CUevent);
CUresult cuEventSynchronize(CUevent);
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr, const void *, size_t, CUstream);
CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr, const void *, size_t,
				   CUstream);
int fake_cuda_stream_hold(CUstream);
void fake_cuda_stream_release(CUstream);

#define PTDS ((CUstream)0x2) /* CU_STREAM_PER_THREAD */
#define N 65536
#define PART 4096 /* the region the other copy writes: [PART, 2*PART) */

static int fails;
#define CHECK(c)                                                             \
	do {                                                                 \
		if (!(c)) {                                                  \
			fprintf(stderr, "%s: line %d: %s\n", what, __LINE__, \
				#c);                                         \
			fails++;                                             \
		}                                                            \
	} while (0)

static char a[N], b[N];
static const char *what;

/* d's bytes [lo, hi) all equal c? */
static int all(CUdeviceptr d, size_t lo, size_t hi, char c)
{
	const char *p = (const char *)(uintptr_t)d;
	for (size_t i = lo; i < hi; i++)
		if (p[i] != c)
			return 0;
	return 1;
}

static CUdeviceptr fresh(void)
{
	CUdeviceptr d;
	if (cuMemAlloc_v2(&d, N) != 0)
		abort();
	memset((void *)(uintptr_t)d, 0, N);
	return d;
}

/* a's part on stream s, then b whole on the legacy stream; a wait for the
 * legacy stream alone has both run, in that order. */
static void legacy_after(CUstream s, int ptsz)
{
	CUdeviceptr d = fresh();
	CHECK((ptsz ? cuMemcpyHtoDAsync_v2_ptsz(d + PART, a, PART, NULL)
		    : cuMemcpyHtoDAsync_v2(d + PART, a, PART, s)) == 0);
	CHECK(cuMemcpyHtoDAsync_v2(d, b, N, NULL) == 0);
	CHECK(cuStreamSynchronize(NULL) == 0);
	CHECK(all(d, 0, N, 'b'));
	CHECK(cuCtxSynchronize() == 0);
	CHECK(all(d, 0, N, 'b'));
}

/* b whole on the legacy stream, then a's part on stream s; a wait for s
 * alone has both run, in that order. */
static void blocking_after(CUstream s)
{
	CUdeviceptr d = fresh();
	CHECK(cuMemcpyHtoDAsync_v2(d, b, N, NULL) == 0);
	CHECK(cuMemcpyHtoDAsync_v2(d + PART, a, PART, s) == 0);
	CHECK(cuStreamSynchronize(s) == 0);
	CHECK(all(d, 0, PART, 'b') && all(d, PART, 2 * PART, 'a') &&
	      all(d, 2 * PART, N, 'b'));
	CHECK(cuCtxSynchronize() == 0);
	CHECK(all(d, PART, 2 * PART, 'a'));
}

/* a non-blocking stream's copy is not run by a wait for the legacy
 * stream queued after it (nothing asked for it yet), and lands when its
 * own stream is waited for. */
static void nonblocking(CUstream nb)
{
	CUdeviceptr d = fresh();
	CHECK(cuMemcpyHtoDAsync_v2(d + PART, a, PART, nb) == 0);
	CHECK(cuMemcpyHtoDAsync_v2(d, b, N, NULL) == 0);
	CHECK(cuStreamSynchronize(NULL) == 0);
	CHECK(all(d, 0, N, 'b'));
	CHECK(cuStreamSynchronize(nb) == 0);
	CHECK(all(d, PART, 2 * PART, 'a') && all(d, 0, PART, 'b'));
}

/* The late mode: a legacy copy behind a held blocking stream's work is
 * not done until the hold is released (queries answer not ready), then
 * lands after it. */
static void held(CUstream s)
{
	CUdeviceptr d = fresh();
	CUevent e;
	CHECK(cuEventCreate(&e, 0) == 0);
	if (fake_cuda_stream_hold(s) != 0)
		return; /* not the late mode */
	CHECK(cuMemcpyHtoDAsync_v2(d + PART, a, PART, s) == 0);
	CHECK(cuMemcpyHtoDAsync_v2(d, b, N, NULL) == 0);
	CHECK(cuEventRecord(e, NULL) == 0);
	CHECK(cuEventQuery(e) == 600);
	CHECK(cuEventQuery(e) == 600);
	CHECK(all(d, 0, N, 0));
	fake_cuda_stream_release(s);
	CHECK(cuEventSynchronize(e) == 0);
	CHECK(all(d, 0, N, 'b'));
}

int main(void)
{
	CUcontext ctx;
	if (cuInit(0) || cuDevicePrimaryCtxRetain(&ctx, 0) ||
	    cuCtxSetCurrent(ctx))
		return 2;
	memset(a, 'a', N), memset(b, 'b', N);
	CUstream s, nb;
	if (cuStreamCreate(&s, 0) || cuStreamCreate(&nb, 1))
		return 2;
	what = "legacy after the per-thread stream", legacy_after(PTDS, 0);
	what = "legacy after a _ptsz call's stream 0", legacy_after(NULL, 1);
	what = "legacy after a blocking stream", legacy_after(s, 0);
	what = "the per-thread stream after legacy", blocking_after(PTDS);
	what = "a blocking stream after legacy", blocking_after(s);
	what = "a non-blocking stream not ordered", nonblocking(nb);
	what = "legacy behind a held blocking stream", held(s);
	if (fails)
		return 1;
	printf("ok\n");
	return 0;
}
