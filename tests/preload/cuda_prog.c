/* A CUDA program over the fake driver and runtime, run under hostpin.
 *   cuda_prog adopt|thread|sync|inflight|foreign|work|fork
 * Exits non-zero when what it sees differs from what the program would
 * see without hostpin; the runner checks the fake driver's log. */
#include <pthread.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "tp.h"

typedef int cudaError_t;
typedef struct CUstream_st *cudaStream_t;
cudaError_t cudaSetDevice(int);
cudaError_t cudaMalloc(void **, size_t);
cudaError_t cudaMemcpy(void *, const void *, size_t, int);
cudaError_t cudaMemcpyAsync(void *, const void *, size_t, int, cudaStream_t);
cudaError_t cudaDeviceSynchronize(void);
cudaError_t cudaHostRegister(void *, size_t, unsigned);
cudaError_t cudaHostUnregister(void *);
cudaError_t cudaHostAlloc(void **, size_t, unsigned);
int cuMemHostRegister_v2(void *, size_t, unsigned);
int cuMemHostUnregister(void *);
int fake_cuda_is_registered(const void *, size_t);
cudaError_t cudaStreamCreate(cudaStream_t *);
cudaError_t cudaStreamBeginCapture(cudaStream_t, int);
cudaError_t cudaStreamEndCapture(cudaStream_t, void **);
int fake_cudart_capture_broken(void);
enum { H2D = 1, D2H = 2 };

#define MB ((size_t)1 << 20)
static int hp; /* hostpin loaded */

static int registered(const void *p) { return (tp_flags(p) & HOSTPIN_REGISTERED) != 0; }

static void *dev(size_t n, int pattern)
{
	void *d;
	CHECK(cudaMalloc(&d, n) == 0);
	char *h = (void *)syscall(SYS_mmap, NULL, n, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	memset(h, pattern, n);
	CHECK(cudaMemcpy(d, h, n, H2D) == 0);
	syscall(SYS_munmap, h, n);
	return d;
}

static int all(const char *p, size_t n, int v)
{
	for (size_t i = 0; i < n; i += 509)
		if (p[i] != (char)v)
			return 0;
	return p[n - 1] == (char)v;
}

static void adopt(void)
{
	char *b[4];
	for (int i = 0; i < 4; i++) {
		b[i] = malloc(4 * MB);
		tp_fill(b[i], 4 * MB, (unsigned)i);
		if (hp)
			CHECK(tp_flags(b[i]) & HOSTPIN_PENDING);
	}
	CHECK(cudaSetDevice(1) == 0); /* the job uses device 1, not 0 */
	char *late = malloc(4 * MB);
	if (hp)
		CHECK(registered(late)); /* ready: registered at once */
	void *d = dev(4 * MB, 0);
	/* The first copy from a block allocated before CUDA existed: it is
	 * registered before the copy runs. */
	CHECK(cudaMemcpyAsync(d, b[2], 4 * MB, H2D, NULL) == 0);
	if (hp) {
		CHECK(fake_cuda_is_registered(b[2], 4 * MB));
		for (int i = 0; i < 4; i++)
			CHECK(registered(b[i]));
	}
	cudaDeviceSynchronize();
	for (int i = 0; i < 4; i++) {
		CHECK(tp_verify(b[i], 4 * MB, (unsigned)i));
		free(b[i]);
	}
	free(late);
}

static void *thread_alloc(void *arg)
{
	(void)arg;
	char *p = malloc(8 * MB); /* this thread has no current context */
	memset(p, 1, 8 * MB);
	if (hp)
		CHECK(registered(p));
	free(p);
	return NULL;
}

static void thread(void)
{
	CHECK(cudaSetDevice(1) == 0);
	char *volatile m = malloc(2 * MB); /* a block on the main thread */
	m[0] = 1;
	free(m);
	pthread_t t;
	pthread_create(&t, NULL, thread_alloc, NULL);
	pthread_join(t, NULL);
}

/* Program semantics of async copies, as on pageable memory. */
static int sync_semantics(void)
{
	CHECK(cudaSetDevice(0) == 0);
	size_t n = 8 * MB;
	char *b = malloc(n);
	memset(b, 0, n);
	if (hp)
		CHECK(registered(b));
	void *d = dev(n, 0x5a);
	int ok = 1;
	/* D2H: the buffer holds the data when the call returns */
	CHECK(cudaMemcpyAsync(b, d, n, D2H, NULL) == 0);
	ok &= all(b, n, 0x5a);
	/* H2D: overwriting the source after the call changes nothing */
	memset(b, 0x11, n);
	CHECK(cudaMemcpyAsync(d, b, n, H2D, NULL) == 0);
	memset(b, 0x22, n);
	cudaDeviceSynchronize();
	CHECK(cudaMemcpy(b, d, n, D2H) == 0);
	ok &= all(b, n, 0x11);
	free(b);
	return ok;
}

static void inflight(void)
{
	CHECK(cudaSetDevice(0) == 0);
	size_t n = 8 * MB;
	void *d = dev(n, 0x33);
	char *a = malloc(n);
	if (hp)
		CHECK(registered(a));
	CHECK(cudaMemcpyAsync(a, d, n, D2H, NULL) == 0);
	free(a); /* the copy may still be running */
	char *b = malloc(n);
	memset(b, 0x77, n);
	usleep(100000); /* a late copy into a reused block would show here */
	CHECK(all(b, n, 0x77));
	free(b);
}

static void foreign(void)
{
	CHECK(cudaSetDevice(0) == 0);
	char *p = malloc(16 * MB);
	tp_fill(p, 16 * MB, 9);
	if (hp)
		CHECK(registered(p));
	/* The program registers part of a hostpin block itself. */
	CHECK(cudaHostRegister(p + 4 * MB, 4 * MB, 0) == 0);
	if (hp)
		CHECK(!registered(p));
	CHECK(cudaHostUnregister(p + 4 * MB) == 0);
	if (hp)
		CHECK(registered(p));
	/* and the whole of it, through the driver API */
	CHECK(cuMemHostRegister_v2(p, 16 * MB, 0) == 0);
	CHECK(cuMemHostUnregister(p) == 0);
	if (hp)
		CHECK(registered(p));
	CHECK(tp_verify(p, 16 * MB, 9));
	free(p);
	/* cudaHostAlloc memory is the runtime's: hostpin leaves it alone */
	void *h;
	CHECK(cudaHostAlloc(&h, 8 * MB, 0) == 0);
	CHECK(tp_flags(h) == 0);
	memset(h, 1, 8 * MB);
}

static void work(void)
{
	CHECK(cudaSetDevice(0) == 0);
	size_t n = 4 * MB;
	void *d = dev(n, 0);
	char *b[8];
	for (int i = 0; i < 8; i++) {
		b[i] = malloc(n);
		tp_fill(b[i], n, (unsigned)i);
	}
	for (int i = 0; i < 8; i++) {
		CHECK(cudaMemcpyAsync(d, b[i], n, H2D, NULL) == 0);
		memset(b[i], 0, n);
		CHECK(cudaMemcpyAsync(b[i], d, n, D2H, NULL) == 0);
		cudaDeviceSynchronize();
		CHECK(tp_verify(b[i], n, (unsigned)i));
		if (i & 1) {
			b[i] = realloc(b[i], 3 * n);
			CHECK(b[i] && tp_verify(b[i], n, (unsigned)i));
		}
	}
	for (int i = 0; i < 8; i++)
		free(b[i]);
}

/* A training-loop pattern: fresh large buffers every step, copied to the
 * device, freed. */
static void churn(void)
{
	CHECK(cudaSetDevice(0) == 0);
	size_t sz[3] = {8 * MB, 16 * MB, 32 * MB};
	void *d = dev(32 * MB, 0);
	for (int step = 0; step < 20; step++)
		for (int k = 0; k < 3; k++) {
			char *b = malloc(sz[k]);
			memset(b, step, sz[k]);
			if (hp)
				CHECK(registered(b));
			CHECK(cudaMemcpyAsync(d, b, sz[k], H2D, NULL) == 0);
			free(b);
		}
}

/* HOSTPIN_MLOCK=1 and a registration the driver refuses: the block is
 * locked instead, and unlocked when freed. */
static void mlock_fallback(void)
{
	CHECK(cudaSetDevice(0) == 0);
	char *p = malloc(8 * MB);
	memset(p, 1, 8 * MB);
	CHECK(!registered(p));
	CHECK(tp_flags(p) & HOSTPIN_LOCKED);
	CHECK(tp_locked(p, 8 * MB) == 1);
	free(p);
}

/* The program unregisters hostpin's own registration: hostpin notices,
 * registers the block again, and does not fail at free. */
static void drop(void)
{
	CHECK(cudaSetDevice(0) == 0);
	char *p = malloc(8 * MB);
	memset(p, 1, 8 * MB);
	CHECK(cudaHostUnregister(p) == 0);
	if (hp)
		CHECK(registered(p) && fake_cuda_is_registered(p, 8 * MB));
	free(p);
}

/* An async copy from a registered block inside CUDA graph capture: the
 * HOSTPIN_COPY=sync wait must not happen there (it would invalidate the
 * capture). */
static void capture(void)
{
	CHECK(cudaSetDevice(0) == 0);
	cudaStream_t s;
	CHECK(cudaStreamCreate(&s) == 0);
	void *d = dev(8 * MB, 0);
	char *p = malloc(8 * MB);
	memset(p, 3, 8 * MB);
	if (hp)
		CHECK(registered(p));
	CHECK(cudaStreamBeginCapture(s, 0) == 0);
	CHECK(cudaMemcpyAsync(d, p, 8 * MB, H2D, s) == 0);
	void *g;
	CHECK(cudaStreamEndCapture(s, &g) == 0);
	CHECK(!fake_cudart_capture_broken());
	cudaDeviceSynchronize();
	free(p);
}

static void forked(void)
{
	CHECK(cudaSetDevice(0) == 0);
	tp_fork_check(hp);
}

int main(int argc, char **argv)
{
	CHECK(argc == 2);
	hp = tp_query() != NULL && getenv("HP_EXPECT_ACTIVE") != NULL;
	const char *m = argv[1];
	if (!strcmp(m, "adopt")) adopt();
	else if (!strcmp(m, "thread")) thread();
	else if (!strcmp(m, "sync")) { if (!sync_semantics()) { puts("cuda_prog: async semantics seen"); return 1; } }
	else if (!strcmp(m, "inflight")) inflight();
	else if (!strcmp(m, "foreign")) foreign();
	else if (!strcmp(m, "work")) work();
	else if (!strcmp(m, "fork")) forked();
	else if (!strcmp(m, "churn")) churn();
	else if (!strcmp(m, "drop")) drop();
	else if (!strcmp(m, "capture")) capture();
	else if (!strcmp(m, "noinit")) tp_pending_only(hp);
	else if (!strcmp(m, "mlock_fallback")) mlock_fallback();
	else return 2;
	printf("cuda_prog %s: ok\n", m);
	return 0;
}
