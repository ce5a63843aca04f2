/* Staged copies, CPU side: the throughput of H2D and D2H copies of N MiB
 * from memory hostpin does not own, over the fake driver, against one
 * plain memcpy of the same bytes.  Run under hostpin (HOSTPIN_STAGE=1:
 * staged through the ring; 0: the fake's own pageable path).  The fake's
 * "DMA" is a memcpy run on the calling thread when it synchronises, so a
 * staged copy here costs two memcpys: the figure is the engine's CPU-side
 * throughput, not a GPU's.
 *   stage_bench plain|h2d|d2h MIB   prints GB/s */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
CUresult cuInit(unsigned);
CUresult cuDevicePrimaryCtxRetain(CUcontext *, int);
CUresult cuCtxSetCurrent(CUcontext);
CUresult cuMemAlloc_v2(CUdeviceptr *, size_t);
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr, const void *, size_t, void *);
CUresult cuMemcpyDtoHAsync_v2(void *, CUdeviceptr, size_t, void *);
CUresult cuStreamSynchronize(void *);

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	if (argc != 3)
		return 2;
	size_t n = (size_t)atol(argv[2]) << 20;
	char *h = mmap(NULL, n, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *o = mmap(NULL, n, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (h == MAP_FAILED || o == MAP_FAILED)
		return 1;
	memset(h, 1, n), memset(o, 2, n);
	CUcontext c;
	CUdeviceptr d;
	if (cuInit(0) || cuDevicePrimaryCtxRetain(&c, 0) ||
	    cuCtxSetCurrent(c) || cuMemAlloc_v2(&d, n))
		return 1;
	memset((void *)(uintptr_t)d, 3, n);
	/* one warm-up each way (a direction's ring is made at the first
	 * copy staged that way) */
	cuMemcpyHtoDAsync_v2(d, h, n, NULL);
	cuStreamSynchronize(NULL);
	cuMemcpyDtoHAsync_v2(o, d, n, NULL);
	memset((void *)(uintptr_t)d, 3, n);
	double t0 = now();
	if (strcmp(argv[1], "plain") == 0)
		memcpy(o, h, n);
	else if (strcmp(argv[1], "h2d") == 0)
		cuMemcpyHtoDAsync_v2(d, h, n, NULL), cuStreamSynchronize(NULL);
	else
		cuMemcpyDtoHAsync_v2(o, d, n, NULL);
	double t = now() - t0;
	printf("%.2f\n", n / t / 1e9);
	return 0;
}
