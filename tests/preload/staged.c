/* Staged copies over the fake driver and runtime, run under hostpin.
 *   staged MODE   (see main)
 * Each mode checks the data and the semantics of pageable memory (H2D
 * returns once the source is staged; D2H once the data is in host memory;
 * stream order kept) and exits non-zero when they differ.  Whether hostpin
 * staged (the fake saw no pageable pointer of FAKE_CUDA_NO_PAGEABLE bytes
 * or more) or passed the copy through is the case file's check, on the
 * fake's log.  Device memory of the fake is host memory: read directly
 * once the stream was synchronised. */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

#include "staged_common.h"

CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr, const void *, size_t, CUstream);
CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr, const void *, size_t,
				   CUstream);
CUresult cuMemcpyDtoHAsync_v2_ptsz(void *, CUdeviceptr, size_t, CUstream);
CUresult cuMemcpyHtoD_v2(CUdeviceptr, const void *, size_t);
CUresult cuMemcpyDtoH_v2(void *, CUdeviceptr, size_t);
CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr, const void *, size_t);
CUresult cuMemcpyDtoH_v2_ptds(void *, CUdeviceptr, size_t);
CUresult cuStreamBeginCapture_v2(CUstream, int);
CUresult cuStreamEndCapture(CUstream, void **);
CUresult cuDevicePrimaryCtxReset_v2(int);
int fake_cuda_capture_broken(void);
int fake_cuda_is_registered(const void *, size_t);
void fake_cuda_open_gate(void);
void fake_cuda_open_gate_once(void);
cudaError_t cudaSetDevice(int);
cudaError_t cudaMemcpy(void *, const void *, size_t, int);
cudaError_t cudaMemcpyAsync(void *, const void *, size_t, int, CUstream);

/* H2D async, source overwritten at once; then D2H async into fresh memory,
 * checked before any synchronisation. */
static int warm_back; /* mode basic_warm: the D2H's destination touched */

static void roundtrip(CUstream s, size_t n, unsigned seed, int ptsz)
{
	char *h = plain(n), *back = plain(n);
	if (warm_back)
		memset(back, 0, n);
	CUdeviceptr d = dev(n);
	fill(h, n, seed);
	CHECK((ptsz ? cuMemcpyHtoDAsync_v2_ptsz : cuMemcpyHtoDAsync_v2)(
		  d, h, n, s) == 0);
	memset(h, 0xee, n); /* the source was staged: this changes nothing */
	CHECK((ptsz ? cuMemcpyDtoHAsync_v2_ptsz : cuMemcpyDtoHAsync_v2)(
		  back, d, n, s) == 0);
	CHECK(same(back, n, seed)); /* there on return */
	CHECK(cuStreamSynchronize(ptsz && !s ? (CUstream)0x2 : s) == 0);
	CHECK(same(D(d), n, seed));
	munmap(h, n), munmap(back, n);
}

static int mode_basic(void)
{
	CUstream s;
	CHECK(cuStreamCreate(&s, 0) == 0);
	roundtrip(s, 16 * MB, 1, 0);
	roundtrip(NULL, 16 * MB, 2, 0); /* legacy default stream */
	roundtrip(NULL, 16 * MB, 3, 1); /* per-thread default stream */
	roundtrip(s, 16 * MB + 12345 * 4, 4, 1);
	return 0;
}

/* The same, each D2H into a destination touched first (warm: no D2H of
 * it asks for a ring past a shut gate, hp_pool_worth_at). */
static int mode_basic_warm(void)
{
	warm_back = 1;
	return mode_basic();
}

/* Bigger than the ring many times over: slots reused, guarded by events
 * (the fake runs a DMA only when the program synchronises, so a slot
 * refilled before its DMA ran would carry the wrong chunk). */
static int mode_bigger(void)
{
	size_t n = 200 * MB;
	roundtrip(NULL, n, 5, 0);
	CUstream s;
	CHECK(cuStreamCreate(&s, 0) == 0);
	roundtrip(s, n, 6, 0);
	return 0;
}

/* Order on one stream: a small direct copy before, the staged one, a small
 * one after; and a second staged copy over the first. */
static int mode_order(void)
{
	CUstream s;
	CHECK(cuStreamCreate(&s, 0) == 0);
	size_t n = 16 * MB, k = 4096;
	char *a = plain(n), *b = plain(n), *before = plain(k), *after = plain(k);
	CUdeviceptr d = dev(n);
	memset(before, 1, k), memset(a, 2, n), memset(after, 3, k);
	CHECK(cuMemcpyHtoDAsync_v2(d, before, k, s) == 0);
	CHECK(cuMemcpyHtoDAsync_v2(d, a, n, s) == 0);
	CHECK(cuMemcpyHtoDAsync_v2(d, after, k, s) == 0);
	CHECK(cuStreamSynchronize(s) == 0);
	const char *dv = D(d);
	for (size_t i = 0; i < n; i++)
		CHECK(dv[i] == (i < k ? 3 : 2));
	/* two staged copies to one place: the later one wins */
	fill(a, n, 7), fill(b, n, 8);
	CHECK(cuMemcpyHtoDAsync_v2(d, a, n, s) == 0);
	CHECK(cuMemcpyHtoDAsync_v2(d, b, n, s) == 0);
	CHECK(cuStreamSynchronize(s) == 0);
	CHECK(same(D(d), n, 8));
	/* a D2H after queued H2D work sees that work */
	fill(a, n, 9);
	CHECK(cuMemcpyHtoDAsync_v2(d, a, n, s) == 0);
	CHECK(cuMemcpyDtoHAsync_v2(b, d, n, s) == 0);
	CHECK(same(b, n, 9));
	return 0;
}

static int mode_two_streams(void)
{
	CUstream s1, s2;
	CHECK(cuStreamCreate(&s1, 0) == 0 && cuStreamCreate(&s2, 0) == 0);
	size_t n = 40 * MB;
	char *a = plain(n), *b = plain(n), *ra = plain(n), *rb = plain(n);
	CUdeviceptr da = dev(n), db = dev(n);
	fill(a, n, 10), fill(b, n, 11);
	CHECK(cuMemcpyHtoDAsync_v2(da, a, n, s1) == 0);
	CHECK(cuMemcpyHtoDAsync_v2(db, b, n, s2) == 0);
	memset(a, 0, n), memset(b, 0, n);
	CHECK(cuMemcpyDtoHAsync_v2(rb, db, n, s2) == 0);
	CHECK(cuMemcpyDtoHAsync_v2(ra, da, n, s1) == 0);
	CHECK(same(ra, n, 10) && same(rb, n, 11));
	return 0;
}

static void *thread_main(void *arg)
{
	unsigned i = (unsigned)(uintptr_t)arg;
	CHECK(cuCtxSetCurrent(ctx) == 0);
	CUstream s;
	CHECK(cuStreamCreate(&s, 0) == 0);
	for (unsigned r = 0; r < 3; r++)
		roundtrip(i & 1 ? s : NULL, 12 * MB + i * 4096, 100 + i * 8 + r,
			  i & 2);
	return NULL;
}

static int mode_threads(void)
{
	pthread_t t[8];
	for (unsigned i = 0; i < 8; i++)
		CHECK(pthread_create(&t[i], NULL, thread_main,
				     (void *)(uintptr_t)i) == 0);
	for (int i = 0; i < 8; i++)
		pthread_join(t[i], NULL);
	return 0;
}

/* Synchronous copies, driver and runtime: they return after the copy. */
static int mode_sync(void)
{
	size_t n = 24 * MB;
	char *h = plain(n), *back = plain(n);
	CUdeviceptr d = dev(n);
	fill(h, n, 20);
	CHECK(cuMemcpyHtoD_v2(d, h, n) == 0);
	CHECK(same(D(d), n, 20)); /* complete on return */
	CHECK(cuMemcpyDtoH_v2(back, d, n) == 0);
	CHECK(same(back, n, 20));
	fill(h, n, 21);
	CHECK(cuMemcpyHtoD_v2_ptds(d, h, n) == 0);
	CHECK(same(D(d), n, 21));
	CHECK(cuMemcpyDtoH_v2_ptds(back, d, n) == 0);
	CHECK(same(back, n, 21));
	CHECK(cudaSetDevice(0) == 0);
	fill(h, n, 22);
	CHECK(cudaMemcpy(D(d), h, n, H2D) == 0);
	CHECK(same(D(d), n, 22));
	memset(back, 0, n);
	CHECK(cudaMemcpy(back, D(d), n, D2H) == 0);
	CHECK(same(back, n, 22));
	fill(h, n, 23);
	CHECK(cudaMemcpyAsync(D(d), h, n, H2D, NULL) == 0);
	memset(h, 0, n);
	CHECK(cudaMemcpyAsync(back, D(d), n, D2H, NULL) == 0);
	CHECK(same(back, n, 23));
	return 0;
}

/* Sources hostpin does not own: a MAP_SHARED /dev/shm mapping, the heap
 * below HOSTPIN_THRESHOLD; and a hostpin block before it is registered. */
static int mode_sources(void)
{
	size_t n = 16 * MB;
	char name[64];
	snprintf(name, sizeof(name), "/hp-staged-%d", (int)getpid());
	int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
	CHECK(fd >= 0);
	shm_unlink(name);
	CHECK(ftruncate(fd, (off_t)n) == 0);
	char *sh = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	CHECK(sh != MAP_FAILED);
	char *heap = malloc(n), *back = plain(n);
	CHECK(heap != NULL);
	CHECK(tp_flags(heap) == 0); /* not hostpin's */
	CUdeviceptr d = dev(n);
	fill(sh, n, 30);
	CHECK(cuMemcpyHtoDAsync_v2(d, sh, n, NULL) == 0);
	memset(sh, 0, n);
	CHECK(cuMemcpyDtoHAsync_v2(heap, d, n, NULL) == 0);
	CHECK(same(heap, n, 30));
	fill(heap, n, 31);
	CHECK(cuMemcpyHtoDAsync_v2(d, heap, n, NULL) == 0);
	memset(heap, 0, n);
	CHECK(cuMemcpyDtoHAsync_v2(sh, d, n, NULL) == 0);
	CHECK(same(sh, n, 31));
	free(heap);
	/* a hostpin block (the case sets the threshold between n and 2n) */
	size_t m = 2 * n;
	char *blk = getenv("HP_BLOCK") ? malloc(m) : NULL, *back2 = plain(m);
	if (blk) {
		CUdeviceptr d2 = dev(m);
		CHECK(tp_flags(blk) != 0);
		CHECK(!(tp_flags(blk) & HOSTPIN_REGISTERED));
		fill(blk, m, 32);
		CHECK(cuMemcpyHtoDAsync_v2(d2, blk, m, NULL) == 0); /* staged */
		memset(blk, 0, m);
		CHECK(cuMemcpyDtoHAsync_v2(back2, d2, m, NULL) == 0);
		CHECK(same(back2, m, 32));
		free(blk);
	}
	(void)back;
	return 0;
}

/* An enqueue fails mid-pipeline (the case injects it): the call returns the
 * driver's error; nothing is left half-done for the next call. */
static int mode_error(void)
{
	size_t n = 4 * 16 * MB;
	char *h = plain(n), *back = plain(n);
	CUdeviceptr d = dev(n);
	fill(h, n, 40);
	CUresult r = cuMemcpyHtoDAsync_v2(d, h, n, NULL);
	printf("htod %d\n", r);
	r = cuMemcpyDtoHAsync_v2(back, d, n, NULL);
	printf("dtoh %d\n", r);
	/* the next calls work and carry the data */
	CHECK(cuMemcpyHtoDAsync_v2(d, h, n, NULL) == 0);
	CHECK(cuMemcpyDtoHAsync_v2(back, d, n, NULL) == 0);
	CHECK(same(back, n, 40));
	return 0;
}

/* A stream capturing a graph (global mode): its copy passes through, and a
 * copy on another stream meanwhile too (a wait would break the capture). */
static int mode_capture(void)
{
	CUstream s, o;
	CHECK(cuStreamCreate(&s, 0) == 0 && cuStreamCreate(&o, 0) == 0);
	size_t n = 16 * MB;
	char *h = plain(n), *back = plain(n);
	CUdeviceptr d = dev(n), d2 = dev(n);
	fill(h, n, 50);
	CHECK(cuStreamBeginCapture_v2(s, 0) == 0);
	CHECK(cuMemcpyHtoDAsync_v2(d, h, n, s) == 0);
	CHECK(cuMemcpyHtoDAsync_v2(d2, h, n, o) == 0);
	void *g = NULL;
	CHECK(cuStreamEndCapture(s, &g) == 0);
	CHECK(!fake_cuda_capture_broken());
	CHECK(cuMemcpyDtoHAsync_v2(back, d2, n, o) == 0);
	CHECK(same(back, n, 50));
	return 0;
}

/* The per-thread default stream captures in relaxed mode (no other
 * thread's call is prohibited): a _ptsz copy on stream 0 is a copy on that
 * capturing stream, and passes through. */
static int mode_capture_ptsz(void)
{
	size_t n = 16 * MB;
	char *h = plain(n);
	CUdeviceptr d = dev(n);
	fill(h, n, 55);
	CHECK(cuStreamBeginCapture_v2((CUstream)0x2, 2) == 0);
	CHECK(cuMemcpyHtoDAsync_v2_ptsz(d, h, n, NULL) == 0);
	void *g = NULL;
	CHECK(cuStreamEndCapture((CUstream)0x2, &g) == 0);
	CHECK(!fake_cuda_capture_broken());
	return 0;
}

/* A forked child's copies go to the driver as they are. */
static int mode_fork(void)
{
	size_t n = 16 * MB;
	char *h = plain(n);
	CUdeviceptr d = dev(n);
	fill(h, n, 60);
	CHECK(cuMemcpyHtoD_v2(d, h, n) == 0); /* parent: staged */
	pid_t p = fork();
	CHECK(p >= 0);
	if (p == 0) {
		printf("child %d\n", (int)getpid());
		fflush(stdout);
		_exit(cuMemcpyHtoD_v2(d, h, n) == 0 ? 0 : 1);
	}
	int st;
	CHECK(waitpid(p, &st, 0) == p && WIFEXITED(st) &&
	      WEXITSTATUS(st) == 0);
	return 0;
}

/* The primary context is reset (the ring's registration and events die
 * with it) and made again: staging goes on through a ring made again. */
static int mode_reset(void)
{
	roundtrip(NULL, 16 * MB, 70, 0);
	CHECK(cuDevicePrimaryCtxReset_v2(0) == 0);
	CHECK(cuDevicePrimaryCtxRetain(&ctx, 0) == 0);
	CHECK(cuCtxSetCurrent(ctx) == 0);
	roundtrip(NULL, 16 * MB, 71, 0);
	return 0;
}

/* The copy threads hostpin starts (HOSTPIN_STAGE_THREADS=3: two helpers)
 * block every signal the program could send: the program's handlers run
 * on its own threads only. */
static int mode_signals(void)
{
	roundtrip(NULL, 16 * MB, 80, 0);
	DIR *dir = opendir("/proc/self/task");
	CHECK(dir != NULL);
	struct dirent *e;
	int others = 0;
	while ((e = readdir(dir)) != NULL) {
		if (e->d_name[0] == '.' || atoi(e->d_name) == (int)getpid())
			continue;
		char path[96], line[256];
		snprintf(path, sizeof(path), "/proc/self/task/%s/status",
			 e->d_name);
		FILE *f = fopen(path, "r");
		CHECK(f != NULL);
		unsigned long long blk = 0;
		while (fgets(line, sizeof(line), f))
			if (sscanf(line, "SigBlk: %llx", &blk) == 1)
				break;
		fclose(f);
		int sigs[] = {SIGINT, SIGTERM, SIGUSR1, SIGUSR2, SIGCHLD,
			      SIGALRM, SIGHUP, SIGPIPE, SIGRTMIN + 1};
		for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
			CHECK(blk & (1ull << (sigs[i] - 1)));
		others++;
	}
	closedir(dir);
	printf("copy threads besides main: %d\n", others);
	CHECK(others == 2);
	return 0;
}

/* Background registration (register.c): staged_common.h's wait_for. */
static int not_registered(void *p) { return !fake_cuda_is_registered(p, 1); }

/* An H2D and a D2H copy of two threads are staged at once (one ring per
 * direction).  The fake holds every async H2D of FAKE_CUDA_HTOD_GATE bytes
 * or more until the program opens the gate: while the other thread's
 * staged H2D is held there, its ring taken, a D2H staged on this thread
 * completes with its data.  With one ring for both it would wait for the
 * H2D, which only this thread's gate opening lets through (a hang: the
 * program's alarm fails the case). */
struct duplex { CUdeviceptr d; char *h; size_t n; };
static void *duplex_htod(void *arg)
{
	struct duplex *x = arg;
	CHECK(cuCtxSetCurrent(ctx) == 0);
	CUstream s;
	CHECK(cuStreamCreate(&s, 0) == 0);
	CHECK(cuMemcpyHtoDAsync_v2(x->d, x->h, x->n, s) == 0);
	CHECK(cuStreamSynchronize(s) == 0);
	return NULL;
}

static int mode_duplex(void)
{
	size_t n = 24 * MB;
	struct duplex x = {.d = dev(n), .h = plain(n), .n = n};
	fill(x.h, n, 120);
	char *back = plain(n);
	CUdeviceptr d2 = dev(n);
	fill(D(d2), n, 121);
	pthread_t t;
	CHECK(pthread_create(&t, NULL, duplex_htod, &x) == 0);
	wait_for(gate_held, NULL, "the staged H2D held in the driver");
	CUstream s;
	CHECK(cuStreamCreate(&s, 0) == 0);
	CHECK(cuMemcpyDtoHAsync_v2(back, d2, n, s) == 0); /* not waiting */
	CHECK(same(back, n, 121));
	fake_cuda_open_gate();
	CHECK(pthread_join(t, NULL) == 0);
	CHECK(same(D(x.d), n, 120));
	return 0;
}

/* A block (HOSTPIN_THRESHOLD below its size) earns registration at its
 * second copy (HOSTPIN_PIN_AFTER=2).  The fake holds every registration of
 * 96 MiB or more (FAKE_CUDA_REGISTER_GATE) until the program opens the
 * gate: a copy that registered inside its own call would never return.
 * Meanwhile copies are staged (the fake sees no pageable pointer) with the
 * data and semantics of pageable memory; once registered, copies go
 * direct. */
static int mode_earn(void)
{
	size_t m = 96 * MB;
	alarm(60); /* a copy stuck behind the gate: fail, not hang */
	char *blk = malloc(m), *back = plain(m);
	CHECK(blk != NULL && tp_flags(blk) != 0);
	CHECK(!(tp_flags(blk) & HOSTPIN_REGISTERED));
	CUdeviceptr d = dev(m);
	CUstream s;
	CHECK(cuStreamCreate(&s, 0) == 0);
	fill(blk, m, 60);
	CHECK(cuMemcpyHtoDAsync_v2(d, blk, m, s) == 0); /* copy 1 */
	memset(blk, 0, m); /* staged: changes nothing */
	CHECK(cuMemcpyDtoHAsync_v2(blk, d, m, s) == 0); /* copy 2: earns */
	CHECK(same(blk, m, 60));
	wait_for(gate_held, NULL, "the registration reached the driver");
	CHECK(!is_reg(blk)); /* held in the driver, on another thread */
	printf("copy 2 returned while its block's registration was held\n");
	fill(blk, m, 61);
	CHECK(cuMemcpyHtoD_v2(d, blk, m) == 0); /* staged, synchronous */
	CHECK(cuMemcpyDtoHAsync_v2(back, d, m, s) == 0);
	CHECK(same(back, m, 61));
	fake_cuda_open_gate();
	wait_for(is_reg, blk, "the block registered");
	CHECK(fake_cuda_is_registered(blk, m));
	fill(blk, m, 62);
	CHECK(cuMemcpyHtoDAsync_v2(d, blk, m, s) == 0); /* direct */
	CHECK(cuStreamSynchronize(s) == 0);
	CHECK(same(D(d), m, 62));
	free(blk);
	CHECK(!fake_cuda_is_registered(blk, 1));
	return 0;
}

static void *free_main(void *p)
{
	free(p);
	return NULL;
}

/* The block is freed by another thread while its registration is held in
 * the driver: the free waits for it, then unregisters before unmapping
 * (the fake flags an unmapped registration; EXIT live=0). */
static int mode_earn_free(void)
{
	size_t m = 96 * MB;
	alarm(60);
	char *blk = malloc(m);
	CUdeviceptr d = dev(m);
	fill(blk, m, 63);
	CHECK(cuMemcpyHtoDAsync_v2(d, blk, m, NULL) == 0);
	CHECK(cuMemcpyHtoDAsync_v2(d, blk, m, NULL) == 0); /* earns */
	wait_for(gate_held, NULL, "the registration reached the driver");
	pthread_t t;
	CHECK(pthread_create(&t, NULL, free_main, blk) == 0);
	fake_cuda_open_gate();
	CHECK(pthread_join(t, NULL) == 0);
	CHECK(!fake_cuda_is_registered(blk, 1));
	return 0;
}

/* A global-mode capture on another stream is in progress when the block
 * earns registration: nothing is registered until it ends (the fake fails
 * a registration during it and breaks the capture); then the block is. */
static int mode_earn_capture(void)
{
	size_t m = 96 * MB;
	alarm(60);
	CUstream s, o;
	CHECK(cuStreamCreate(&s, 0) == 0 && cuStreamCreate(&o, 0) == 0);
	char *blk = malloc(m);
	CUdeviceptr d = dev(m);
	fill(blk, m, 64);
	CHECK(cuMemcpyHtoDAsync_v2(d, blk, m, s) == 0);
	CHECK(cuStreamBeginCapture_v2(o, 0) == 0);
	CHECK(cuMemcpyHtoDAsync_v2(d, blk, m, s) == 0); /* earns */
	CHECK(!is_reg(blk));
	void *g = NULL;
	CHECK(cuStreamEndCapture(o, &g) == 0);
	CHECK(!fake_cuda_capture_broken());
	wait_for(is_reg, blk, "the block registered after the capture");
	CHECK(cuStreamSynchronize(s) == 0);
	free(blk);
	return 0;
}

/* HOSTPIN_REGISTER_BACKGROUND=0: the copy that earns registration
 * registers the block before it runs, as before. */
static int mode_earn_inline(void)
{
	size_t m = 96 * MB;
	char *blk = malloc(m);
	CUdeviceptr d = dev(m);
	fill(blk, m, 65);
	CHECK(cuMemcpyHtoDAsync_v2(d, blk, m, NULL) == 0);
	CHECK(!is_reg(blk));
	CHECK(cuMemcpyHtoDAsync_v2(d, blk, m, NULL) == 0); /* earns */
	CHECK(is_reg(blk));
	CHECK(cuStreamSynchronize(NULL) == 0);
	free(blk);
	return 0;
}

/* A block of 1.5 GiB is registered as two registrations: 1 GiB from its
 * base, then the rest (the case reads them in the fake's log). */
static int mode_pieces(void)
{
	size_t m = 1536 * MB;
	char *blk = malloc(m);
	CHECK(blk != NULL && is_reg(blk));
	printf("block %p\n", (void *)blk);
	/* a copy of all of it: one DMA per registration (the fake flags a
	 * range across two as pageable) */
	CUdeviceptr d = dev(m);
	memset(blk + m - MB, 0x5a, MB);
	CHECK(cuMemcpyHtoD_v2(d, blk, m) == 0);
	CHECK(((unsigned char *)D(d))[m - 1] == 0x5a);
	free(blk);
	return 0;
}

/* A registered block in cells of HOSTPIN_REGISTER_CHUNK (the case sets
 * 8 MiB): copies across cells, every form, go direct in parts (the fake
 * sees no pageable copy) with the data and semantics of the call. */
static int mode_split(void)
{
	size_t m = 40 * MB;
	char *blk = malloc(m), *back = plain(m);
	CHECK(blk != NULL && is_reg(blk));
	CUdeviceptr d = dev(m);
	CUstream s;
	CHECK(cuStreamCreate(&s, 0) == 0);
	fill(blk, m, 70);
	CHECK(cuMemcpyHtoDAsync_v2(d, blk, m, s) == 0);
	CHECK(cuStreamSynchronize(s) == 0);
	CHECK(same(D(d), m, 70));
	memset(blk, 0, m);
	CHECK(cuMemcpyDtoHAsync_v2(blk, d, m, s) == 0);
	CHECK(cuStreamSynchronize(s) == 0);
	CHECK(same(blk, m, 70));
	fill(blk, m, 71);
	CHECK(cuMemcpyHtoD_v2(d + MB, blk + 3 * MB, 20 * MB) == 0);
	CHECK(memcmp(D(d + MB), blk + 3 * MB, 20 * MB) == 0);
	memset(blk, 0, m);
	CHECK(cuMemcpyDtoH_v2(blk + 5 * MB, d + MB, 20 * MB) == 0);
	CHECK(memcmp(blk + 5 * MB, D(d + MB), 20 * MB) == 0);
	fill(blk, m, 72);
	CHECK(cudaMemcpy(D(d), blk, m, H2D) == 0);
	CHECK(same(D(d), m, 72));
	memset(blk, 0, m);
	CHECK(cudaMemcpy(blk, D(d), m, D2H) == 0);
	CHECK(same(blk, m, 72));
	free(blk);
	munmap(back, m);
	return 0;
}

/* A piece registered in the background carries direct DMA at once
 * (register.c, plan.c, pieces.c).  The case sets HOSTPIN_REGISTER_CHUNK=8M, a
 * staging ring of 4 MiB and FAKE_CUDA_REGISTER_GATE=8M: the block's 8 MiB
 * cells (the block aligned to 8 MiB) are held in the driver, the ring is
 * not.  The gate lets the first cell through and holds the second: the
 * block is registered in [blk, blk+8M) only. */
static size_t piece = 8 * MB; /* HOSTPIN_REGISTER_CHUNK, the gate's */
static int first_piece(void *p)
{
	return fake_cuda_is_registered(p, piece) &&
	       fake_cuda_gate_waiters() == 1;
}
static char *chunks_begin_m(CUdeviceptr *d, CUstream *s, size_t m)
{
	alarm(60);
	void *p = NULL;
	CHECK(posix_memalign(&p, piece, m) == 0);
	char *blk = p;
	CHECK(tp_flags(blk) != 0 && !is_reg(blk));
	*d = dev(m);
	CHECK(cuStreamCreate(s, 0) == 0);
	fill(blk, m, 79);
	CHECK(cuMemcpyHtoDAsync_v2(*d, blk, m, *s) == 0); /* staged */
	CHECK(cuMemcpyHtoDAsync_v2(*d, blk, m, *s) == 0); /* earns; staged */
	wait_for(gate_held, NULL, "the first piece reached the driver");
	CHECK(!fake_cuda_is_registered(blk, 1));
	fake_cuda_open_gate_once();
	wait_for(first_piece, blk, "the first piece registered, the second held");
	CHECK(!is_reg(blk) && !fake_cuda_is_registered(blk + piece, 1));
	printf("first piece registered, the second held\n");
	return blk;
}
static char *chunks_begin(CUdeviceptr *d, CUstream *s)
{
	return chunks_begin_m(d, s, 32 * MB);
}

/* Copies wholly inside the first piece go direct (the fake sees the
 * program's registered pointer: no pageable copy; the case checks that
 * they were not staged), with pageable semantics: an H2D source
 * overwritten after the call returns changes nothing, D2H data is there
 * on return; every form.  Copies across the first and second pieces are
 * staged (the fake flags a copy that reaches it across them as
 * pageable). */
static int mode_chunks(void)
{
	CUdeviceptr d;
	CUstream s;
	char *blk = chunks_begin(&d, &s), *in = blk + 2 * MB;
	size_t n = 4 * MB;
	fill(in, n, 80);
	CHECK(cuMemcpyHtoDAsync_v2(d, in, n, s) == 0); /* direct */
	memset(in, 0, n);
	CHECK(cuStreamSynchronize(s) == 0);
	CHECK(same(D(d), n, 80));
	CHECK(cuMemcpyDtoHAsync_v2(in, d, n, s) == 0); /* direct */
	CHECK(same(in, n, 80)); /* there on return */
	fill(in, n, 81);
	CHECK(cudaMemcpyAsync(D(d), in, n, H2D, s) == 0); /* runtime, direct */
	memset(in, 0, n);
	CHECK(cuStreamSynchronize(s) == 0);
	CHECK(same(D(d), n, 81));
	CHECK(cuMemcpyDtoH_v2(in, d, n) == 0); /* synchronous, direct */
	CHECK(same(in, n, 81));
	char *across = blk + 6 * MB; /* 6 MiB over the first piece's end */
	fill(across, 6 * MB, 82);
	CHECK(cuMemcpyHtoDAsync_v2(d, across, 6 * MB, s) == 0); /* staged */
	memset(across, 0, 6 * MB);
	CHECK(cuStreamSynchronize(s) == 0);
	CHECK(same(D(d), 6 * MB, 82));
	CHECK(cuMemcpyDtoHAsync_v2(across, d, 6 * MB, s) == 0); /* staged */
	CHECK(same(across, 6 * MB, 82));
	CHECK(!is_reg(blk));
	fake_cuda_open_gate();
	wait_for(is_reg, blk, "the block registered");
	free(blk);
	CHECK(!fake_cuda_is_registered(blk, 1));
	return 0;
}

/* A D2H of 160 MiB (two of a D2H's rounds, stage.c) into a destination
 * that is fresh (d2h_fresh: never touched) or warm (d2h_warm: touched
 * first), its data there on return; the case decides which the gate
 * stages (issue 43). */
static int d2h_into(int warm)
{
	size_t n = 160 * MB;
	CUdeviceptr d = dev(n);
	CUstream s;
	CHECK(cuStreamCreate(&s, 0) == 0);
	fill(D(d), n, 90);
	char *h = plain(n);
	if (warm)
		memset(h, 1, n);
	CHECK(cuMemcpyDtoHAsync_v2(h, d, n, s) == 0);
	CHECK(same(h, n, 90)); /* there on return */
	CHECK(cuStreamSynchronize(s) == 0);
	munmap(h, n);
	return 0;
}

static int mode_d2h_fresh(void)
{
	return d2h_into(0);
}

static int mode_d2h_warm(void)
{
	return d2h_into(1);
}

/* The third piece's registration fails (the case injects it): the pieces
 * made are undone, and an async copy inside the first piece, left
 * unsynchronised by the program, is not in flight when its piece is
 * unregistered (the fake flags that); its data arrives. */
static int mode_chunks_fail(void)
{
	CUdeviceptr d;
	CUstream s;
	char *blk = chunks_begin(&d, &s), *in = blk + 2 * MB;
	size_t n = 4 * MB;
	fill(in, n, 90);
	CHECK(cuMemcpyHtoDAsync_v2(d, in, n, s) == 0); /* direct */
	memset(in, 0, n);
	fake_cuda_open_gate();
	wait_for(not_registered, blk, "the pieces undone");
	CHECK(cuStreamSynchronize(s) == 0);
	CHECK(same(D(d), n, 90));
	CHECK(!is_reg(blk));
	fill(in, n, 91);
	CHECK(cuMemcpyHtoDAsync_v2(d, in, n, s) == 0); /* staged again */
	memset(in, 0, n);
	CHECK(cuStreamSynchronize(s) == 0);
	CHECK(same(D(d), n, 91));
	free(blk);
	return 0;
}

/* The runtime's copy made again after an engine error (HP_STAGE_RETRY)
 * must not reach the driver whole where the plan said it must not go as
 * it is: staged across the first registered piece's end while the second
 * is held (the block being registered), then by pieces across a
 * registered block's cells.  The staged DMA or the first piece fails
 * (armed: 700 H2D, 701 D2H); the call returns that error, and nothing of
 * the copy reaches the driver across a registration's end (the case: no
 * pageable copy, no PARTIAL refused).  Prints "htod CODE", "dtoh CODE"
 * and "sync CODE" (cudaMemcpy, 702) for each, and "batch CODE FAILIDX"
 * (the runtime's cudaMemcpyBatchAsync of one H2D entry, 703: the entry is
 * not made again whole through the runtime either). */
void fake_cuda_fail_arm(const char *fn, int n, int code);
CUresult cuMemcpyDtoHAsync_v2(void *, CUdeviceptr, size_t, CUstream);
cudaError_t cudaMemcpyBatchAsync(void **, void **, size_t *, size_t, void *,
				 size_t *, size_t, size_t *, CUstream);
static void redo_pair(CUdeviceptr d, CUstream s, char *across, size_t n)
{
	fill(across, n, 83);
	fake_cuda_fail_arm("cuMemcpyHtoDAsync_v2", 1, 700);
	int e = cudaMemcpyAsync(D(d), across, n, H2D, s);
	fake_cuda_fail_arm(NULL, 0, 0);
	printf("htod %d\n", e);
	CHECK(cuStreamSynchronize(s) == 0);
	fake_cuda_fail_arm("cuMemcpyDtoHAsync_v2", 1, 701);
	e = cudaMemcpyAsync(across, D(d), n, D2H, s);
	fake_cuda_fail_arm(NULL, 0, 0);
	printf("dtoh %d\n", e);
	CHECK(cuStreamSynchronize(s) == 0);
	fake_cuda_fail_arm("cuMemcpyHtoDAsync_v2", 1, 702);
	e = cudaMemcpy(D(d), across, n, H2D); /* the synchronous form */
	fake_cuda_fail_arm(NULL, 0, 0);
	printf("sync %d\n", e);
	void *bd[1] = {D(d)}, *bs[1] = {across};
	size_t bn[1] = {n}, fail = 9;
	fake_cuda_fail_arm("cuMemcpyHtoDAsync_v2", 1, 703);
	e = cudaMemcpyBatchAsync(bd, bs, bn, 1, NULL, NULL, 0, &fail, s);
	fake_cuda_fail_arm(NULL, 0, 0);
	printf("batch %d %zu\n", e, fail);
	CHECK(cuStreamSynchronize(s) == 0);
}
static int mode_chunks_redo(void)
{
	CUdeviceptr d;
	CUstream s;
	char *blk = chunks_begin(&d, &s);
	redo_pair(d, s, blk + 6 * MB, 6 * MB); /* staged (registering) */
	CHECK(!is_reg(blk));
	fake_cuda_open_gate();
	wait_for(is_reg, blk, "the block registered");
	redo_pair(d, s, blk + 6 * MB, 6 * MB); /* by pieces (registered) */
	free(blk);
	return 0;
}

/* chunks_rest: a copy that must be staged (across the first registered
 * piece's end, the second held) finds no slot it may take: every slot of
 * the ring (one segment, 4 slots of 512 KiB: HOSTPIN_STAGE_BUFFER=4M)
 * holds a DMA of another stream queued behind the fake's hold of it (the
 * late driver: FAKE_CUDA_LATE_DMA=1), and the ring's growth is held at
 * hostpin's pause point ring_grow (HOSTPIN_TEST_PAUSE).  Nothing staged:
 * the copy must still never reach the driver whole across the piece's end
 * (the case: no PARTIAL refused, FAKE_CUDA_REFUSE_PARTIAL=1); it
 * succeeds, its data right. */
void fake_cuda_stream_release(CUstream);
int fake_cuda_stream_hold(CUstream);
static int mode_chunks_rest(void)
{
	CHECK(getenv("HOSTPIN_TEST_PAUSE") != NULL);
	CUdeviceptr d;
	CUstream s, a;
	char *blk = chunks_begin(&d, &s);
	CHECK(cuStreamCreate(&a, 0) == 0);
	CHECK(cuStreamSynchronize(s) == 0); /* every slot's last DMA done */
	pt_file("ring_grow", "arm");
	CHECK(fake_cuda_stream_hold(a) == 0);
	/* on a, behind the hold: 3 slots (a copy leaves the last one), then
	 * the last (its growth asked, held at the pause point) */
	CHECK(cuMemcpyHtoDAsync_v2(d, blk + 7 * MB, 3 * MB / 2, a) == 0);
	CHECK(cuMemcpyHtoDAsync_v2(d + 2 * MB, blk + 8 * MB - MB / 4, MB / 2,
				   a) == 0);
	int e = cuMemcpyHtoDAsync_v2(d + 4 * MB, blk + 6 * MB, 6 * MB, s);
	printf("rest htod %d\n", e);
	CHECK(e == 0);
	CHECK(cuStreamSynchronize(s) == 0);
	CHECK(memcmp(D(d + 4 * MB), blk + 6 * MB, 6 * MB) == 0);
	pt_file("ring_grow", "go");
	fake_cuda_stream_release(a);
	CHECK(cuStreamSynchronize(a) == 0);
	CHECK(memcmp(D(d), blk + 7 * MB, 3 * MB / 2) == 0);
	CHECK(!is_reg(blk));
	fake_cuda_open_gate();
	wait_for(is_reg, blk, "the block registered");
	free(blk);
	return 0;
}

/* chunks_part (HOSTPIN_REGISTER_CHUNK=128M and the gate's the same, a
 * block of 256 MiB: its first 128 MiB piece registered, the second held;
 * HOSTPIN_STAGE_LINK=100000 and one copy thread: after a copy's first
 * round, 64 MiB, staging is not worth it, its rest goes to the driver
 * (stage.c)): an H2D of 104 MiB from 32 MiB in, across the first piece's
 * end, must be staged: its first round is, its rest, [96, 136) MiB, is
 * refused staging and must still never reach the driver whole across the
 * piece's end (the case: no PARTIAL refused, FAKE_CUDA_REFUSE_PARTIAL=1):
 * cut there, 32 MiB registered then 8 MiB pageable; its data right. */
static int mode_chunks_part(void)
{
	CUdeviceptr d;
	CUstream s;
	piece = 128 * MB;
	char *blk = chunks_begin_m(&d, &s, 256 * MB), *h = blk + 32 * MB;
	size_t n = 104 * MB;
	CHECK(cuStreamSynchronize(s) == 0);
	fill(h, n, 84);
	int e = cuMemcpyHtoDAsync_v2(d, h, n, s);
	printf("part htod %d\n", e);
	CHECK(e == 0);
	memset(h, 0, n); /* after the call: changes nothing */
	CHECK(cuStreamSynchronize(s) == 0);
	CHECK(same(D(d), n, 84));
	CHECK(!is_reg(blk));
	fake_cuda_open_gate();
	wait_for(is_reg, blk, "the block registered");
	free(blk);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct staged_mode modes[] = {
	    {"basic", mode_basic},     {"basic_warm", mode_basic_warm},     {"bigger", mode_bigger},
	    {"order", mode_order},     {"two_streams", mode_two_streams},
	    {"threads", mode_threads}, {"sync", mode_sync},
	    {"sources", mode_sources}, {"error", mode_error},
	    {"capture", mode_capture}, {"fork", mode_fork},
	    {"reset", mode_reset},     {"signals", mode_signals},     {"capture_ptsz", mode_capture_ptsz},
	    {"earn", mode_earn}, {"earn_free", mode_earn_free},
	    {"earn_capture", mode_earn_capture}, {"pieces", mode_pieces},
	    {"earn_inline", mode_earn_inline}, {"split", mode_split},
	    {"chunks", mode_chunks}, {"chunks_fail", mode_chunks_fail},
	    {"chunks_redo", mode_chunks_redo}, {"chunks_rest", mode_chunks_rest},
	    {"chunks_part", mode_chunks_part},
	    {"duplex", mode_duplex},   {"d2h_fresh", mode_d2h_fresh},
	    {"d2h_warm", mode_d2h_warm},
	};
	return staged_main("staged", argc, argv, modes);
}
