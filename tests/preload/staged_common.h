/* Shared by the staged-copy programs (staged.c, staged2d.c): the fake
 * driver's and runtime's entry points they call (the 2D/3D descriptors:
 * cuda_layouts.h; the fake reads them in fake_copy.h), memory
 * helpers and the mode table's main.  Device memory of the fake is host
 * memory: read and written directly once the stream was synchronised. */
#ifndef STAGED_COMMON_H
#define STAGED_COMMON_H

#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cuda_layouts.h"
#include "tp.h"

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
typedef struct CUstream_st *CUstream;
typedef struct CUctx_st *CUcontext;
typedef int cudaError_t;
CUresult cuInit(unsigned);
CUresult cuDevicePrimaryCtxRetain(CUcontext *, int);
CUresult cuCtxSetCurrent(CUcontext);
CUresult cuMemAlloc_v2(CUdeviceptr *, size_t);
CUresult cuMemcpyDtoHAsync_v2(void *, CUdeviceptr, size_t, CUstream);
CUresult cuStreamCreate(CUstream *, unsigned);
CUresult cuStreamSynchronize(CUstream);
CUresult cuCtxSynchronize(void);
enum { H2D = 1, D2H = 2 };
/* CUmemorytype */
enum { HOST = 1, DEVICE = 2, ARRAY = 3, UNIFIED = 4 };


#define MB ((size_t)1 << 20)
#define D(d) ((void *)(uintptr_t)(d))
static CUcontext ctx;

/* n bytes (a multiple of 4) of a pattern of seed; same: they hold it */
static inline void fill(void *p, size_t n, unsigned seed)
{
	uint32_t *w = p;
	for (size_t i = 0; i < n / 4; i++)
		w[i] = seed * 2654435761u + (uint32_t)i;
}
static inline int same(const void *p, size_t n, unsigned seed)
{
	const uint32_t *w = p;
	for (size_t i = 0; i < n / 4; i++)
		if (w[i] != seed * 2654435761u + (uint32_t)i) {
			fprintf(stderr, "word %zu differs (seed %u)\n", i, seed);
			return 0;
		}
	return 1;
}

/* Device memory of the fake. */
static inline CUdeviceptr dev(size_t n)
{
	CUdeviceptr d = 0;
	CHECK(cuMemAlloc_v2(&d, n) == 0);
	return d;
}

/* Memory hostpin does not own: below HOSTPIN_THRESHOLD (the cases set it
 * high), straight from the kernel. */
static inline void *plain(size_t n)
{
	void *p = mmap(NULL, n, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(p != MAP_FAILED);
	return p;
}

/* main: staged_main(PROG, argc, argv, modes): runs the mode argv[1] names
 * in the primary context, then synchronises and prints "PROG MODE: ok". */
struct staged_mode {
	const char *name;
	int (*fn)(void);
};
static inline void wait_for(int (*pred)(void *), void *arg, const char *what);
/* wait_for's own check: true at its first look only (a sampled state, a
 * thread asleep between a loop's looks, may not hold at a second look) */
static inline int true_once(void *arg)
{
	return !(*(int *)arg)++;
}
static inline int staged_run(const char *prog, int argc, char **argv,
			     const struct staged_mode *modes, size_t n)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	CHECK(argc == 2);
	int looks = 0;
	wait_for(true_once, &looks, "wait_for takes a predicate's first true look");
	CHECK(cuInit(0) == 0);
	CHECK(cuDevicePrimaryCtxRetain(&ctx, 0) == 0);
	CHECK(cuCtxSetCurrent(ctx) == 0);
	for (size_t i = 0; i < n; i++)
		if (strcmp(argv[1], modes[i].name) == 0) {
			int r = modes[i].fn();
			CHECK(cuCtxSynchronize() == 0);
			if (r == 0)
				printf("%s %s: ok\n", prog, argv[1]);
			return r;
		}
	fprintf(stderr, "unknown mode %s\n", argv[1]);
	return 2;
}
#define staged_main(prog, argc, argv, modes)                                  \
	staged_run(prog, argc, argv, modes, sizeof(modes) / sizeof(modes[0]))

/* Background registration (register.c): poll for what hostpin's thread
 * does; the outcome never depends on how long it takes (60 s: a hang). */
int fake_cuda_gate_waiters(void);
static inline int gate_held(void *arg)
{
	(void)arg;
	return fake_cuda_gate_waiters() == 1;
}
static inline int is_reg(void *p)
{
	return (tp_flags(p) & HOSTPIN_REGISTERED) != 0;
}
/* pred looked at until its first true look, which is taken (never looked
 * at again: a thread seen asleep may be awake at the next look) */
static inline void wait_for(int (*pred)(void *), void *arg, const char *what)
{
	for (int i = 0; !pred(arg); i++) {
		if (i == 60000) {
			fprintf(stderr, "never: %s\n", what);
			exit(1);
		}
		usleep(1000);
	}
}

/* Pause points inside hostpin (HOSTPIN_TEST_PAUSE=DIR, base/testpause.c):
 * armed (NAME.arm), watched (NAME.paused) and opened (NAME.go) by
 * the test. */
static inline void pt_file(const char *name, const char *ext)
{
	char p[512];
	snprintf(p, sizeof(p), "%s/%s.%s", getenv("HOSTPIN_TEST_PAUSE"), name,
		 ext);
	FILE *f = fopen(p, "w");
	CHECK(f != NULL);
	fclose(f);
}
static inline int pt_paused(void *name)
{
	char p[512];
	snprintf(p, sizeof(p), "%s/%s.paused", getenv("HOSTPIN_TEST_PAUSE"),
		 (const char *)name);
	return access(p, F_OK) == 0;
}

#endif
