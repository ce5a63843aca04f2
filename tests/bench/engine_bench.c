/* The copy engine in the fake driver's timed model (FAKE_CUDA_TIMED=1,
 * tests/fakes/fake_timed.h): one workload, timed from its first copy call
 * to the end of its last synchronisation, in seconds.  Run under hostpin,
 * without it (the driver's pageable path), or with KIND pinned (buffers of
 * cuMemAllocHost: the link's own rate, the baseline scripts/bench-engine
 * divides by).
 *   engine_bench SCENARIO host|pinned MIB [N]
 * SCENARIO: first (a fresh buffer's H2D), shm (H2D from a /dev/shm file
 * mapped shared), loop (the same buffer's H2D N times: prints the whole
 * loop and the median of its last 3 copies), d2h (D2H into a fresh calloc
 * destination; d2hwarm: into a malloc'd one, its pages touched first), two (two threads, each its own buffer and stream, at once),
 * busy (an H2D on one stream while another runs a 1 s kernel); cold (the
 * process's first copy, no warm-up: a fresh buffer's H2D, then another's,
 * both times printed: hostpin's set-up on the first's path or not);
 * memcpy
 * (no driver: one memcpy of MIB, GB/s; KIND fresh: into a fresh calloc
 * destination, else a warm one).  Before the clock starts (but cold), one
 * 16 MiB copy each way (hostpin makes its rings then).
 * Exits 1 if the data did not arrive. */
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
CUresult cuInit(unsigned);
CUresult cuDevicePrimaryCtxRetain(CUcontext *, int);
CUresult cuCtxSetCurrent(CUcontext);
CUresult cuMemAlloc_v2(CUdeviceptr *, size_t);
CUresult cuMemAllocHost_v2(void **, size_t);
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr, const void *, size_t, void *);
CUresult cuMemcpyDtoHAsync_v2(void *, CUdeviceptr, size_t, void *);
CUresult cuStreamCreate(void **, unsigned);
CUresult cuStreamSynchronize(void *);
int fake_cuda_timed_kernel(void *, double);

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int pinned;
static size_t n;
static CUcontext ctx;

static char *host_buf(int fill)
{
	void *p;
	if (pinned) {
		if (cuMemAllocHost_v2(&p, n))
			exit(1);
	} else {
		p = fill ? malloc(n) : calloc(1, n);
		if (!p)
			exit(1);
	}
	if (fill || pinned) /* page-locked memory is resident */
		memset(p, fill, n);
	return p;
}

static CUdeviceptr dev_buf(void)
{
	CUdeviceptr d;
	if (cuMemAlloc_v2(&d, n))
		exit(1);
	/* the fake's device memory is the process's: faulted in now, as a
	 * device's memory costs no page faults */
	memset((void *)(uintptr_t)d, 0, n);
	return d;
}

/* FAKE_CUDA_TIMED=2: the fake's DMA moves no bytes, nothing to check */
static int nodata(void)
{
	const char *e = getenv("FAKE_CUDA_TIMED");
	return e && *e == '2';
}

/* the device received byte v (its ends and middle) */
static int arrived(CUdeviceptr d, char v)
{
	const char *p = (const char *)(uintptr_t)d;
	if (nodata())
		return 1;
	return p[0] == v && p[n / 2] == v && p[n - 1] == v;
}

static double h2d(CUdeviceptr d, const void *h, void *s)
{
	double t0 = now();
	if (cuMemcpyHtoDAsync_v2(d, h, n, s) || cuStreamSynchronize(s))
		exit(1);
	return now() - t0;
}

static pthread_barrier_t bar;
struct two {
	char *h;
	CUdeviceptr d;
	void *s;
};
static void *two_main(void *arg)
{
	struct two *w = arg;
	cuCtxSetCurrent(ctx);
	pthread_barrier_wait(&bar);
	if (cuMemcpyHtoDAsync_v2(w->d, w->h, n, w->s) ||
	    cuStreamSynchronize(w->s))
		exit(1);
	return NULL;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	if (argc < 4)
		return 2;
	const char *sc = argv[1];
	pinned = strcmp(argv[2], "pinned") == 0;
	n = (size_t)atol(argv[3]) << 20;
	if (strcmp(sc, "memcpy") == 0) { /* one core's memcpy, GB/s */
		/* KIND fresh: into a calloc destination, its pages faulted
		 * in and zeroed as the copy goes */
		int fresh = strcmp(argv[2], "fresh") == 0;
		char *a = malloc(n), *b = fresh ? calloc(1, n) : malloc(n);
		memset(a, 1, n);
		if (!fresh)
			memset(b, 2, n);
		double t0 = now();
		memcpy(b, a, n);
		printf("%.2f\n", (double)n / (now() - t0) / 1e9);
		return b[n - 1] != 1;
	}
	int loops = argc > 4 && atoi(argv[4]) >= 3 ? atoi(argv[4]) : 30;
	void *s, *s2;
	if (cuInit(0) || cuDevicePrimaryCtxRetain(&ctx, 0) ||
	    cuCtxSetCurrent(ctx) || cuStreamCreate(&s, 0) ||
	    cuStreamCreate(&s2, 0))
		return 1;
	if (strcmp(sc, "cold") == 0) { /* no warm-up: the first copies */
		CUdeviceptr d = dev_buf();
		char *h = host_buf(1), *h2 = host_buf(1);
		double t1 = h2d(d, h, s), t2 = h2d(d, h2, s);
		printf("%.4f %.4f\n", t1, t2);
		return arrived(d, 1) ? 0 : 1;
	}
	{ /* warm-up: 16 MiB each way, a buffer of its own */
		size_t keep = n;
		n = 16 << 20;
		char *w = malloc(n);
		memset(w, 9, n);
		CUdeviceptr wd = dev_buf();
		h2d(wd, w, s);
		if (cuMemcpyDtoHAsync_v2(w, wd, n, s) || cuStreamSynchronize(s))
			return 1;
		free(w);
		n = keep;
	}
	CUdeviceptr d = dev_buf();
	double t;
	if (strcmp(sc, "first") == 0 || strcmp(sc, "busy") == 0) {
		char *h = host_buf(1);
		if (sc[0] == 'b' && fake_cuda_timed_kernel(s2, 1.0))
			return 1; /* not the timed mode */
		t = h2d(d, h, s);
		printf("%.4f\n", t);
	} else if (strcmp(sc, "shm") == 0) {
		char *h;
		if (pinned) {
			h = host_buf(1);
		} else {
			/* a name no other user can take first (mkstemp:
			 * O_EXCL, mode 0600) */
			char path[] = "/dev/shm/engine_bench.XXXXXX";
			int fd = mkstemp(path);
			if (fd < 0 || ftruncate(fd, (off_t)n))
				return 1;
			h = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_SHARED,
				 fd, 0);
			unlink(path);
			close(fd);
			if (h == MAP_FAILED)
				return 1;
			memset(h, 1, n);
		}
		printf("%.4f\n", h2d(d, h, s));
	} else if (strcmp(sc, "loop") == 0) {
		char *h = host_buf(1);
		double *ts = calloc((size_t)loops, sizeof(double)), all = 0;
		for (int i = 0; i < loops; i++)
			all += ts[i] = h2d(d, h, s);
		qsort(ts + loops - 3, 3, sizeof(double), cmp);
		printf("%.4f %.4f\n", all, ts[loops - 2]);
	} else if (strcmp(sc, "d2h") == 0 || strcmp(sc, "d2hwarm") == 0) {
		char *src = host_buf(3);
		h2d(d, src, s);
		char *h = host_buf(sc[3] ? 2 : 0);
		double t0 = now();
		if (cuMemcpyDtoHAsync_v2(h, d, n, s) || cuStreamSynchronize(s))
			return 1;
		t = now() - t0;
		if (!nodata() && (h[0] != 3 || h[n / 2] != 3 || h[n - 1] != 3))
			return 1;
		printf("%.4f\n", t);
		return 0;
	} else if (strcmp(sc, "two") == 0) {
		struct two w[2] = {{host_buf(1), d, s}, {host_buf(1), dev_buf(), s2}};
		pthread_t th[2];
		pthread_barrier_init(&bar, NULL, 3);
		for (int i = 0; i < 2; i++)
			pthread_create(&th[i], NULL, two_main, &w[i]);
		pthread_barrier_wait(&bar);
		double t0 = now();
		for (int i = 0; i < 2; i++)
			pthread_join(th[i], NULL);
		printf("%.4f\n", now() - t0);
		if (!arrived(w[1].d, 1))
			return 1;
	} else {
		return 2;
	}
	return arrived(d, 1) ? 0 : 1;
}
