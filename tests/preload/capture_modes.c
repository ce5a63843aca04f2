/* CUDA graph capture: the begin entry points, the capture modes, and the
 * program's own unmaps during a capture, against the fake CUDA driver and
 * runtime (tests/preload/cases/182-faults_capture.sh).
 *   capture_modes togr_drv|togr_gpa|togr_rt|local|unmaps|discard_race|
 *                 split_munmap|split_fixed|split_mremap|fresh_race
 * Linked to the fake libcuda.so.1 and libcudart.so.12.  One thread begins a
 * capture and waits; the main thread (and in "local" the capturing thread
 * itself) works meanwhile; then the capture ends.  Exits non-zero when
 * something it checks does not hold; the runner checks the fake driver's
 * log (no registration call between begin and end, no violation). */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/mman.h>

#include "tp.h"

#define MB ((size_t)1 << 20)
typedef int CUresult;
typedef struct CUctx_st *CUcontext;
typedef struct CUstream_st *CUstream;
typedef unsigned long long CUdeviceptr;

CUresult cuInit(unsigned);
CUresult cuDevicePrimaryCtxRetain(CUcontext *, int);
CUresult cuCtxSetCurrent(CUcontext);
CUresult cuStreamCreate(CUstream *, unsigned);
CUresult cuStreamBeginCapture_v2(CUstream, int);
CUresult cuStreamBeginCaptureToGraph(CUstream, void *, const void *,
				     const void *, size_t, int);
CUresult cuStreamEndCapture(CUstream, void **);
CUresult cuMemAlloc_v2(CUdeviceptr *, size_t);
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr, const void *, size_t, CUstream);
CUresult cuStreamSynchronize(CUstream);
CUresult cuGetProcAddress_v2(const char *, void **, int, unsigned long long,
			     int *);
int cudaStreamBeginCaptureToGraph(CUstream, void *, const void *,
				  const void *, size_t, int);
int fake_cuda_is_registered(const void *, size_t);
int fake_cuda_capture_broken(void);
int fake_cuda_gate_waiters(void);
void fake_cuda_open_gate(void);
size_t fake_cuda_registered_bytes(const void *, size_t);

static CUcontext ctx0;
static CUstream cap_s, s2, s3;
static CUdeviceptr dmem;
static int began[2], go[2], cap_rc = -1;
static _Atomic pid_t cap_tid; /* the capturing thread */
static const char *mode;
static int graph_obj; /* the program's graph (the fake keeps no nodes) */

static struct hostpin_stats st(void)
{
	struct hostpin_stats s;
	CHECK(tp_stats(&s) == 0);
	return s;
}

/* A block of n bytes copied `times` times (HOSTPIN_PIN_AFTER=2: registered
 * at its second copy, if it may be then). */
static char *copied(size_t n, int v, CUstream s, int times)
{
	char *p = malloc(n);
	memset(p, v, n);
	for (int i = 0; i < times; i++)
		CHECK(cuMemcpyHtoDAsync_v2(dmem, p, n, s) == 0);
	return p;
}

static int regd(const void *p, size_t n)
{
	return (tp_flags(p) & HOSTPIN_REGISTERED) &&
	       fake_cuda_is_registered(p, n);
}

/* "local": what the capturing thread does during its own thread-local
 * capture: its registration waits (pending), its release is deferred. */
static char *c_blk, *a2_blk;
static void on_capturing_thread(void)
{
	c_blk = copied(8 * MB, 5, s3, 2);
	CHECK(!(tp_flags(c_blk) & HOSTPIN_REGISTERED));
	CHECK(!fake_cuda_is_registered(c_blk, 8 * MB));
	free(a2_blk); /* HOSTPIN_CACHE=0: released; its unregistration waits */
	CHECK(fake_cuda_is_registered(a2_blk, 8 * MB));
}

static void *capturer(void *arg)
{
	(void)arg;
	char c = 0;
	CHECK(cuCtxSetCurrent(ctx0) == 0);
	cap_tid = (pid_t)syscall(SYS_gettid);
	if (!strcmp(mode, "togr_drv"))
		CHECK(cuStreamBeginCaptureToGraph(cap_s, &graph_obj, NULL, NULL,
						  0, 0) == 0); /* global */
	else if (!strcmp(mode, "togr_gpa")) {
		/* found as plug-ins and the runtime find it */
		CUresult (*fn)(CUstream, void *, const void *, const void *,
			       size_t, int) = NULL;
		int qs = -1;
		CHECK(cuGetProcAddress_v2("cuStreamBeginCaptureToGraph",
					  (void **)&fn, 12030, 0, &qs) == 0 &&
		      fn != NULL);
		CHECK(fn(cap_s, &graph_obj, NULL, NULL, 0, 0) == 0);
	} else if (!strcmp(mode, "togr_rt"))
		CHECK(cudaStreamBeginCaptureToGraph(cap_s, &graph_obj, NULL,
						    NULL, 0, 0) == 0);
	else if (!strcmp(mode, "local"))
		CHECK(cuStreamBeginCapture_v2(cap_s, 1) == 0); /* thread-local */
	else
		CHECK(cuStreamBeginCapture_v2(cap_s, 0) == 0); /* global */
	if (!strcmp(mode, "local"))
		on_capturing_thread();
	CHECK(write(began[1], &c, 1) == 1);
	CHECK(read(go[0], &c, 1) == 1);
	void *g;
	cap_rc = cuStreamEndCapture(cap_s, &g);
	return NULL;
}

static pthread_t t;
static void begin(void)
{
	char c;
	CHECK(pipe(began) == 0 && pipe(go) == 0);
	CHECK(pthread_create(&t, NULL, capturer, NULL) == 0);
	CHECK(read(began[0], &c, 1) == 1);
}

static void end(void)
{
	char c = 0;
	CHECK(write(go[1], &c, 1) == 1);
	CHECK(pthread_join(t, NULL) == 0);
	CHECK(cap_rc == 0);
	CHECK(!fake_cuda_capture_broken());
}

/* togr_*: a global capture begun into the program's graph: a block's
 * registration and a released block's unregistration wait for its end. */
static void togr(void)
{
	char *a = copied(8 * MB, 1, s2, 2);
	CHECK(cuStreamSynchronize(s2) == 0);
	CHECK(regd(a, 8 * MB));
	begin();
	char *b = copied(8 * MB, 2, s2, 2);
	CHECK(!(tp_flags(b) & HOSTPIN_REGISTERED));
	free(a); /* released: its unregistration waits, a stays registered */
	CHECK(fake_cuda_is_registered(a, 8 * MB));
	end();
	CHECK(regd(b, 8 * MB));
	CHECK(!fake_cuda_is_registered(a, 8 * MB));
	CHECK(cuStreamSynchronize(s2) == 0);
	free(b);
}

/* local: a thread-local capture holds back the capturing thread only: the
 * main thread registers and unregisters during it. */
static void local(void)
{
	char *a = copied(8 * MB, 1, s2, 2);
	a2_blk = copied(8 * MB, 4, s2, 2);
	CHECK(cuStreamSynchronize(s2) == 0);
	CHECK(regd(a, 8 * MB) && regd(a2_blk, 8 * MB));
	begin(); /* the capturing thread has done its part */
	char *b = copied(8 * MB, 2, s2, 2);
	CHECK(regd(b, 8 * MB)); /* registered now, not at the end */
	CHECK(cuStreamSynchronize(s2) == 0);
	free(a); /* unregistered now */
	CHECK(!fake_cuda_is_registered(a, 8 * MB));
	end();
	/* what the capturing thread could not do, done at its end */
	CHECK(regd(c_blk, 8 * MB));
	CHECK(!fake_cuda_is_registered(a2_blk, 8 * MB));
	CHECK(cuStreamSynchronize(s2) == 0 && cuStreamSynchronize(s3) == 0);
	free(b);
	free(c_blk);
}

static char *map8(int v)
{
	char *p = mmap(NULL, 8 * MB, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(p != MAP_FAILED);
	memset(p, v, 8 * MB);
	CHECK(regd(p, 8 * MB)); /* HOSTPIN_PIN_AFTER=0 */
	return p;
}

static int all(const char *p, size_t n, int v)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != (char)v)
			return 0;
	return 1;
}

/* unmaps: the program's own munmap, madvise, mremap and MAP_FIXED over
 * registered mappings during a global capture. */
static void unmaps(void)
{
	char *m1 = map8(1), *m2 = map8(2), *m3 = map8(3), *m4 = map8(4),
	     *m5 = map8(5), *m6 = map8(6);
	char *h = malloc(8 * MB); /* a heap block, registered at once */
	memset(h, 7, 8 * MB);
	CHECK(regd(h, 8 * MB));
	begin();
	/* realloc growth: copied, the old block's release deferred */
	char *h2 = realloc(h, 16 * MB);
	CHECK(h2 != NULL && all(h2, 8 * MB, 7));
	CHECK(fake_cuda_is_registered(h, 8 * MB));
	/* munmap whole: returns 0; kept mapped and registered meanwhile */
	CHECK(munmap(m1, 8 * MB) == 0);
	CHECK(fake_cuda_is_registered(m1, 8 * MB));
	/* MADV_DONTNEED of private anonymous memory: reads zero there */
	CHECK(madvise(m2 + 2 * MB, 2 * MB, MADV_DONTNEED) == 0);
	CHECK(all(m2, 2 * MB, 2) && all(m2 + 2 * MB, 2 * MB, 0) &&
	      all(m2 + 4 * MB, 4 * MB, 2));
	/* MADV_FREE: may keep the contents; succeeds */
	CHECK(madvise(m6, 8 * MB, MADV_FREE) == 0);
	/* mremap: refused, nothing changed */
	errno = 0;
	CHECK(mremap(m3, 8 * MB, 16 * MB, MREMAP_MAYMOVE) == MAP_FAILED &&
	      errno == ENOMEM);
	CHECK(all(m3, 8 * MB, 3) && regd(m3, 8 * MB));
	/* MAP_FIXED over one: refused, nothing changed */
	errno = 0;
	CHECK(mmap(m4, 8 * MB, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1,
		   0) == MAP_FAILED && errno == ENOMEM);
	CHECK(all(m4, 8 * MB, 4) && regd(m4, 8 * MB));
	/* part of one: refused, nothing changed */
	errno = 0;
	CHECK(munmap(m5 + 2 * MB, 2 * MB) == -1 && errno == ENOMEM);
	CHECK(all(m5, 8 * MB, 5) && regd(m5, 8 * MB));
	end();
	/* h and m1 unregistered, m1 unmapped at the capture's end */
	CHECK(!fake_cuda_is_registered(h, 8 * MB));
	free(h2);
	CHECK(!fake_cuda_is_registered(m1, 8 * MB));
	CHECK(msync(m1, 4096, MS_ASYNC) == -1 && errno == ENOMEM);
	CHECK(regd(m2, 8 * MB) && all(m2 + 2 * MB, 2 * MB, 0));
	/* after the capture each works as usual */
	char *m3b = mremap(m3, 8 * MB, 16 * MB, MREMAP_MAYMOVE);
	CHECK(m3b != MAP_FAILED && all(m3b, 8 * MB, 3));
	CHECK(munmap(m5 + 2 * MB, 2 * MB) == 0);
	CHECK(munmap(m2, 8 * MB) == 0 && munmap(m3b, 16 * MB) == 0 &&
	      munmap(m4, 8 * MB) == 0 && munmap(m5, 2 * MB) == 0 &&
	      munmap(m5 + 4 * MB, 4 * MB) == 0 && munmap(m6, 8 * MB) == 0);
	CHECK(st().pinned_blocks_now == 0 && st().leaked_blocks == 0);
}

/* discard_race (the engine tester's discard-unmapped-552341): a global
 * capture begun while another thread's MADV_DONTNEED of part of a
 * registered mapping is under way, between its unregistration of the
 * cells it touches and their registration again
 * (HOSTPIN_REGISTER_CHUNK=1M: 3 cells; the first held at the fake's
 * gate, FAKE_CUDA_REGISTER_GATE set once the mapping is registered).  The
 * discard began before the capture: it ends whole before the capture
 * begins, as one driver call would, and returns 0; the cells are
 * registered again, the mapping stays registered whole and is
 * unregistered at its munmap.  Before: the second cell's registration
 * was refused for the capture, the first could not be undone, and the
 * mapping was counted unregistered with its cells still registered
 * (unmapped while registered at its munmap). */
static char *dr_at;
static int dr_rc = -2;
static void *discarder(void *arg)
{
	(void)arg;
	dr_rc = madvise(dr_at, 3 * MB, MADV_DONTNEED);
	return NULL;
}
static int one_held(void) { return fake_cuda_gate_waiters() == 1; }
static int cap_asleep(void) /* in a futex: waiting at hostpin's gate */
{
	char path[64], buf[32] = "";
	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall",
		 (int)cap_tid);
	FILE *f = cap_tid ? fopen(path, "r") : NULL;
	if (!f)
		return 0;
	int ok = fgets(buf, sizeof(buf), f) != NULL;
	fclose(f);
	return ok && atoi(buf) == SYS_futex;
}
/* pred's first true look taken (as wait_for's, staged_common.h) */
static void poll_until(int (*pred)(void), const char *what)
{
	for (int i = 0; !pred(); i++) {
		if (i == 60000) {
			fprintf(stderr, "never: %s\n", what);
			exit(1);
		}
		usleep(1000);
	}
}
static int regd_cells(const char *p, size_t n) /* registered in cells */
{
	return (tp_flags(p) & HOSTPIN_REGISTERED) &&
	       fake_cuda_registered_bytes(p, n) == n;
}
/* discard_race's and split_race's race: the fake's gate set to gate
 * bytes (FAKE_CUDA_REGISTER_GATE), the call (call's thread) run until its
 * first registration again waits there (what), a global capture begun on
 * another thread until it waits at hostpin's gate, then the fake's gate
 * opened: the call ends, then the capture begins. */
static void race_capture(void *(*call)(void *), const char *gate,
			 const char *what)
{
	CHECK(setenv("FAKE_CUDA_REGISTER_GATE", gate, 1) == 0);
	pthread_t x;
	CHECK(pthread_create(&x, NULL, call, NULL) == 0);
	poll_until(one_held, what);
	CHECK(pipe(began) == 0 && pipe(go) == 0);
	CHECK(pthread_create(&t, NULL, capturer, NULL) == 0);
	poll_until(cap_asleep, "the capture's begin waits");
	fake_cuda_open_gate();
	CHECK(pthread_join(x, NULL) == 0);
	char c;
	CHECK(read(began[0], &c, 1) == 1); /* the capture began */
}
static void discard_race(void)
{
	char *m = mmap(NULL, 8 * MB, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(m != MAP_FAILED);
	memset(m, 9, 8 * MB);
	CHECK(regd_cells(m, 8 * MB)); /* HOSTPIN_PIN_AFTER=0 */
	/* 3 whole cells of the 1 MiB grid inside the mapping */
	dr_at = (char *)(((uintptr_t)m + 2 * MB - 1) & ~(uintptr_t)(MB - 1));
	race_capture(discarder, "1048576",
		     "the discard's first cell at the gate");
	CHECK(dr_rc == 0);
	CHECK(all(m, (size_t)(dr_at - m), 9) && all(dr_at, 3 * MB, 0) &&
	      all(dr_at + 3 * MB, (size_t)(m + 8 * MB - dr_at - 3 * MB), 9));
	end();
	CHECK(regd_cells(m, 8 * MB));
	CHECK(munmap(m, 8 * MB) == 0);
	CHECK(fake_cuda_registered_bytes(m, 8 * MB) == 0);
	CHECK(st().pinned_blocks_now == 0);
}

/* split_* (the release part of the gap discard_race closed): a global
 * capture begun while another thread's munmap of part of a registered
 * mapping (split_munmap), mmap(MAP_FIXED) over part of it (split_fixed)
 * or mremap moving part of it away, grown (split_mremap), is under way: the cells
 * it touches unregistered (HOSTPIN_REGISTER_CHUNK=1M), the half cell left
 * on its lower side registered again and held at the fake's gate
 * (FAKE_CUDA_REGISTER_GATE set once the mapping is registered), the half
 * cell on its upper side not yet.  The call began before the capture: it
 * ends whole before the capture begins, as one driver call would, and
 * succeeds; what survives is registered whole and unregistered at its
 * munmap.  Before: the upper half cell's registration was refused for the
 * capture and the cells above it could not be unregistered either: left
 * registered under a range counted unregistered (unmapped registered at
 * its munmap). */
static char *sp_m, *sp_r;
static int sp_rc = -2;
static void *splitter(void *arg)
{
	(void)arg;
	char *at = sp_m + 2 * MB + MB / 2; /* [2.5M, 3.5M): cells 2 and 3 */
	if (!strcmp(mode, "split_munmap"))
		sp_rc = munmap(at, MB);
	else if (!strcmp(mode, "split_fixed"))
		sp_rc = mmap(at, MB, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1,
			     0) == at ? 0 : -1;
	else {
		sp_r = mremap(at, MB, 2 * MB, MREMAP_MAYMOVE);
		sp_rc = sp_r == MAP_FAILED ? -1 : 0;
	}
	return NULL;
}
static void split_race(void)
{
	/* 2 MiB aligned, so that the cells are the mapping's own */
	char *raw = mmap(NULL, 10 * MB, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	CHECK(raw != MAP_FAILED);
	char *m = (char *)(((uintptr_t)raw + 2 * MB - 1) & ~(uintptr_t)(2 * MB - 1));
	CHECK(mmap(m, 8 * MB, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == m);
	if (m > raw)
		CHECK(munmap(raw, (size_t)(m - raw)) == 0);
	if (raw + 10 * MB > m + 8 * MB)
		CHECK(munmap(m + 8 * MB, (size_t)(raw + 10 * MB - m - 8 * MB)) == 0);
	sp_m = m;
	memset(m, 9, 8 * MB);
	CHECK(regd_cells(m, 8 * MB)); /* HOSTPIN_PIN_AFTER=0 */
	race_capture(splitter, "524288",
		     "the release's first registration at the gate");
	CHECK(sp_rc == 0);
	char *lo = m, *hi = m + 3 * MB + MB / 2;
	size_t lon = 2 * MB + MB / 2, hin = 4 * MB + MB / 2;
	CHECK(all(lo, lon, 9) && all(hi, hin, 9));
	end();
	CHECK(regd_cells(lo, lon) && regd_cells(hi, hin));
	CHECK(munmap(lo, lon) == 0 && munmap(hi, hin) == 0);
	CHECK(fake_cuda_registered_bytes(m, 8 * MB) == 0);
	if (!strcmp(mode, "split_fixed"))
		CHECK(munmap(m + lon, MB) == 0);
	if (sp_r != NULL && sp_r != MAP_FAILED) {
		CHECK(all(sp_r, MB, 9));
		CHECK(munmap(sp_r, 2 * MB) == 0);
	}
	CHECK(st().pinned_blocks_now == 0);
}

/* fresh_race (the engine tester's violation-capture-cell-73101353): a
 * global capture begun while another thread's registration of a mapping
 * at its mmap (HOSTPIN_PIN_AFTER=0, HOSTPIN_REGISTER_CHUNK=1M: 4 cells or
 * more, made inside the call, as a copy's registration of a block too
 * small to register in the background) is under way, its first whole
 * cell held at the fake's gate.  The call began before the capture: its
 * cells are made before the capture begins, as one driver call's would;
 * the mapping is registered whole, and unregistered at its munmap.
 * Before: the next cell's registration was refused for the capture, the
 * cells made could not be undone either, and the mapping was left pending
 * over cells still registered (registered again at the capture's end:
 * 712; or unmapped registered). */
static char *fr_m;
static void *mapper(void *arg)
{
	(void)arg;
	CHECK(cuCtxSetCurrent(ctx0) == 0); /* registered through it */
	fr_m = mmap(NULL, 4 * MB, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return NULL;
}
static void fresh_race(void)
{
	race_capture(mapper, "1048576",
		     "the mapping's first whole cell at the gate");
	CHECK(fr_m != MAP_FAILED && fr_m != NULL);
	memset(fr_m, 3, 4 * MB);
	end();
	CHECK(regd_cells(fr_m, 4 * MB));
	CHECK(munmap(fr_m, 4 * MB) == 0);
	CHECK(fake_cuda_registered_bytes(fr_m, 4 * MB) == 0);
	CHECK(st().pinned_blocks_now == 0);
}

int main(int argc, char **argv)
{
	CHECK(argc == 2);
	CHECK(tp_query() != NULL);
	mode = argv[1];
	CHECK(cuInit(0) == 0);
	CHECK(cuDevicePrimaryCtxRetain(&ctx0, 0) == 0);
	CHECK(cuCtxSetCurrent(ctx0) == 0);
	CHECK(cuMemAlloc_v2(&dmem, 8 * MB) == 0);
	CHECK(cuStreamCreate(&cap_s, 0) == 0 && cuStreamCreate(&s2, 0) == 0 &&
	      cuStreamCreate(&s3, 0) == 0);
	if (!strncmp(mode, "togr", 4))
		togr();
	else if (!strcmp(mode, "local"))
		local();
	else if (!strcmp(mode, "unmaps"))
		unmaps();
	else if (!strcmp(mode, "discard_race"))
		discard_race();
	else if (!strncmp(mode, "split_", 6))
		split_race();
	else if (!strcmp(mode, "fresh_race"))
		fresh_race();
	else
		return 2;
	CHECK(st().leaked_blocks == 0);
	printf("capture_modes %s: ok\n", mode);
	return 0;
}
