/* When blocks are registered, and what hostpin commits, under the fake CUDA
 * driver and runtime (linked).
 *   footprint nth N       every copy entry point, sync and async, counts:
 *                         a block is registered at its Nth copy, not before
 *   footprint rss MAPGB CALLOCGB [cuda]
 *                         a sparse MAPGB GiB mapping and a CALLOCGB GiB calloc,
 *                         touched at 1% (and copied once with cuda), stay
 *                         near 1% resident
 *   footprint carry       a buffer keeps its copy count when realloc or
 *                         mremap moves it and when part of it is unmapped:
 *                         copied once before, once after, it is registered
 *                         at the second copy (HOSTPIN_PIN_AFTER=2)
 *   footprint numa        prints the blocks a node-placement run made
 *   footprint work once|fresh|reused   the RESULTS.md workloads: one line
 *                         of figures */
#include <stdint.h>
#include <sys/mman.h>

#include "cuda_layouts.h"
#include "tp.h"

typedef int cuerr;
enum { H2D = 1, D2H = 2 };
cuerr cudaSetDevice(int);
cuerr cudaMalloc(void **, size_t);
cuerr cudaStreamSynchronize(void *);
cuerr cudaDeviceSynchronize(void);
cuerr cudaMemcpy(void *, const void *, size_t, int);
cuerr cudaMemcpyAsync(void *, const void *, size_t, int, void *);
cuerr cudaMemcpy2D(void *, size_t, const void *, size_t, size_t, size_t, int);
cuerr cudaMemcpy3D(const void *);
cuerr cudaMemcpyToSymbol(const void *, const void *, size_t, size_t, int);
cuerr cudaMemcpyFromSymbol(void *, const void *, size_t, size_t, int);
cuerr cudaGetDriverEntryPoint(const char *, void **, unsigned long long,
			      int *);
cuerr cuMemcpyHtoD_v2(dptr, const void *, size_t);
cuerr cuMemcpyDtoH_v2(void *, dptr, size_t);
cuerr cuMemcpy(dptr, dptr, size_t);
cuerr cuMemcpy2D_v2(const void *);
cuerr cuMemcpy3D_v2(const void *);
cuerr cuMemcpyHtoA_v2(void *, size_t, const void *, size_t);
cuerr cuMemcpyAtoH_v2(void *, void *, size_t, size_t);
cuerr cuArrayCreate_v2(void **, const void *);
cuerr cuGetProcAddress_v2(const char *, void **, int, unsigned long long,
			  int *);

#define MB ((size_t)1 << 20)
static size_t n = 2 * MB;
static void *dv;   /* device memory */
static void *arr;  /* a device array */

static int registered(const void *p)
{
	return (tp_flags(p) & HOSTPIN_REGISTERED) != 0;
}

/* One copy of [b, b+n) through entry point e; 0 on success. */
static int copy(int e, char *b)
{
	dptr d = (dptr)(uintptr_t)dv;
	void *fn = NULL;
	int st;
	switch (e) {
	case 0: return cudaMemcpy(dv, b, n, H2D);
	case 1: return cudaMemcpy(b, dv, n, D2H);
	case 2: {
		int r = cudaMemcpyAsync(dv, b, n, H2D, NULL);
		return r ? r : cudaStreamSynchronize(NULL);
	}
	case 3: return cudaMemcpy2D(dv, n / 2, b, n / 2, n / 2, 2, H2D);
	case 4: {
		struct parms3d p = {0};
		p.src = (struct pitched){b, n / 2, n / 2, 2};
		p.dst = (struct pitched){dv, n / 2, n / 2, 2};
		p.ext[0] = n / 2, p.ext[1] = 2, p.ext[2] = 1, p.kind = H2D;
		return cudaMemcpy3D(&p);
	}
	case 5: return cudaMemcpyToSymbol(dv, b, n, 0, H2D);
	case 6: return cudaMemcpyFromSymbol(b, dv, n, 0, D2H);
	case 7: return cuMemcpyHtoD_v2(d, b, n);
	case 8: return cuMemcpyDtoH_v2(b, d, n);
	case 9: return cuMemcpy(d, (dptr)(uintptr_t)b, n);
	case 10: {
		M2D m = {0};
		m.srcMemoryType = 1, m.srcHost = b, m.srcPitch = n / 2;
		m.dstMemoryType = 2, m.dstDevice = d, m.dstPitch = n / 2, m.WidthInBytes = n / 2, m.Height = 2;
		return cuMemcpy2D_v2(&m);
	}
	case 11: {
		M3D m = {0};
		m.srcMemoryType = 1, m.srcHost = b, m.srcPitch = n / 2, m.srcHeight = 2;
		m.dstMemoryType = 2, m.dstDevice = d, m.dstPitch = n / 2, m.dstHeight = 2;
		m.WidthInBytes = n / 2, m.Height = 2, m.Depth = 1;
		return cuMemcpy3D_v2(&m);
	}
	case 12: return cuMemcpyHtoA_v2(arr, 0, b, n);
	case 13: return cuMemcpyAtoH_v2(b, arr, 0, n);
	case 14: /* looked up with cuGetProcAddress, per-thread form */
		if (cuGetProcAddress_v2("cuMemcpyHtoD", &fn, 12000, 2, &st) ||
		    !fn)
			return -1;
		return ((cuerr(*)(dptr, const void *, size_t))fn)(d, b, n);
	case 15: /* looked up with cudaGetDriverEntryPoint */
		if (cudaGetDriverEntryPoint("cuMemcpyDtoH", &fn, 1, &st) || !fn)
			return -1;
		return ((cuerr(*)(void *, dptr, size_t))fn)(b, d, n);
	case 16: { /* dlsym on the runtime's handle, the _ptds form */
		void *h = dlopen("libcudart.so.12", RTLD_NOW | RTLD_NOLOAD);
		fn = h ? dlsym(h, "cudaMemcpy_ptds") : NULL;
		if (!fn)
			return -1;
		return ((cuerr(*)(void *, const void *, size_t, int))fn)(
		    dv, b, n, H2D);
	}
	}
	return -1;
}
#define NPATHS 17

static void setup(void)
{
	CHECK(cudaSetDevice(0) == 0);
	CHECK(cudaMalloc(&dv, n) == 0);
	struct { size_t w, h; int f; unsigned c; } desc = {n, 1, 1, 1};
	CHECK(cuArrayCreate_v2(&arr, &desc) == 0);
}

/* Each entry point alone, then sync and async alternating: the block is
 * registered by its Nth copy and not before. */
static void nth(int want)
{
	setup();
	for (int e = 0; e <= NPATHS; e++) {
		char *b = malloc(n);
		memset(b, 0x3c, n);
		for (int i = 1; i <= want + 1; i++) {
			/* e == NPATHS: sync (even) and async (odd) in turn */
			int path = e < NPATHS ? e : (i % 2 ? 2 : 7);
			if (copy(path, b) != 0) {
				fprintf(stderr, "path %d: copy %d failed\n",
					path, i);
				exit(1);
			}
			if (registered(b) != (i >= want)) {
				fprintf(stderr, "path %d: after copy %d of %d: "
					"%s\n", path, i, want,
					registered(b) ? "registered too soon"
						      : "not registered");
				exit(1);
			}
		}
		free(b);
	}
	printf("nth %d: every path registers at copy %d\n", want, want);
}

/* Copy once, move or split the buffer, copy again: registered at that
 * second copy, as it would be had it stayed where it was. */
static void carry(void)
{
	setup();
	char *b = malloc(n); /* realloc growth: mremap of hostpin's block */
	memset(b, 1, n);
	CHECK(copy(2, b) == 0 && !registered(b));
	b = realloc(b, 8 * n);
	CHECK(b != NULL && b[n - 1] == 1 && !registered(b));
	CHECK(copy(2, b) == 0 && registered(b));
	free(b);
	size_t len = 8 * n; /* an application mapping moved by mremap */
	char *m = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(m != MAP_FAILED);
	memset(m, 2, len);
	CHECK(copy(2, m) == 0 && !registered(m));
	char *m2 = mremap(m, len, 2 * len, MREMAP_MAYMOVE);
	CHECK(m2 != MAP_FAILED && m2[len - 1] == 2 && !registered(m2));
	CHECK(copy(2, m2) == 0 && registered(m2));
	munmap(m2, 2 * len);
	m = mmap(NULL, len, PROT_READ | PROT_WRITE, /* part of it unmapped */
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(m != MAP_FAILED);
	memset(m, 3, len);
	CHECK(copy(2, m) == 0 && !registered(m));
	CHECK(munmap(m + len / 2, len / 2) == 0 && !registered(m));
	CHECK(copy(2, m) == 0 && registered(m));
	munmap(m, len / 2);
	puts("carry: realloc, mremap and a partial unmap keep the copy count");
}

static long rss_anon_kb(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long v = -1;
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "RssAnon: %ld", &v) == 1)
			break;
	if (f)
		fclose(f);
	return v;
}

static int thp_always(void)
{
	FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
	char buf[128] = "";
	if (f) {
		if (!fgets(buf, sizeof(buf), f))
			buf[0] = '\0';
		fclose(f);
	}
	return strstr(buf, "[always]") != NULL;
}

/* Touch 1% of [p, p+len): one page in 100, or (THP always, where one touch
 * faults 2 MiB with or without hostpin) the first 1%. */
static void touch(char *p, size_t len)
{
	if (thp_always()) {
		memset(p, 1, len / 100);
		return;
	}
	for (size_t off = 0; off < len; off += 100 * 4096)
		p[off] = 1;
}

static void check_rss(const char *what, long before, size_t len)
{
	long grown = rss_anon_kb() - before;
	long pct10 = (long)((grown * 1024.0 * 1000) / (double)len); /* 0.1% */
	printf("%s: %zu MiB touched at 1%%: RssAnon grew %ld KiB (%ld.%ld%%)\n",
	       what, len >> 20, grown, pct10 / 10, pct10 % 10);
	CHECK(pct10 < 30); /* near 1%: under 3% */
}

static void rss(size_t mapgb, size_t callocgb, int cuda)
{
	if (cuda)
		setup();
	size_t len = mapgb << 30;
	long before = rss_anon_kb();
	char *m = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(m != MAP_FAILED);
	touch(m, len);
	if (cuda)
		CHECK(copy(0, m) == 0); /* copied once: not worth pinning */
	check_rss("mmap", before, len);
	munmap(m, len);
	len = callocgb << 30;
	before = rss_anon_kb();
	char *c = calloc(1, len);
	CHECK(c != NULL);
	touch(c, len);
	if (cuda)
		CHECK(copy(0, c) == 0);
	check_rss("calloc", before, len);
	free(c);
	struct hostpin_stats st;
	tp_stats(&st);
	printf("pinned peak %llu MiB\n",
	       (unsigned long long)(st.pinned_bytes_peak >> 20));
}

/* Node placement: A before the device is known (the thread's node), B and C
 * after (the device's); C reuses B from the cache, never A. */
static void numa(void)
{
	n = 4 * MB;
	char *a = malloc(n);
	memset(a, 1, n);
	free(a);
	setup();
	char *b = malloc(n);
	memset(b, 2, n);
	CHECK(copy(7, b) == 0 && copy(7, b) == 0);
	free(b);
	char *c = malloc(n);
	printf("A=%p B=%p C=%p\n", (void *)a, (void *)b, (void *)c);
	free(c);
}

/* The RESULTS.md workloads, 16 buffers of 64 MiB each: once: 16 buffers
 * (weights) each copied once and kept; fresh: a new buffer every step,
 * copied once and freed (a batch); reused: one buffer copied every step. */
static void work(const char *kind)
{
	n = 64 * MB;
	setup();
	int once = strcmp(kind, "once") == 0;
	char *keep = strcmp(kind, "reused") == 0 ? malloc(n) : NULL;
	char *live[16];
	for (int step = 0; step < 16; step++) {
		char *b = keep ? keep : malloc(n);
		memset(b, step, n);
		CHECK(copy(2, b) == 0);
		live[step] = b;
		if (!keep && !once)
			free(b);
	}
	for (int i = 0; once && i < 16; i++)
		free(live[i]);
	free(keep);
	struct hostpin_stats s = {0};
	long hwm = -1;
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "VmHWM: %ld", &hwm) == 1)
			break;
	if (f)
		fclose(f);
	tp_stats(&s);
	printf("%s: registrations %llu, pinned peak %llu MiB, copies %llu "
	       "(through registered memory %llu), VmHWM %ld MiB\n",
	       kind, (unsigned long long)s.pin_calls,
	       (unsigned long long)(s.pinned_bytes_peak >> 20),
	       (unsigned long long)s.copies_seen,
	       (unsigned long long)s.copies_registered, hwm >> 10);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	if (strcmp(mode, "nth") == 0 && argc > 2)
		nth(atoi(argv[2]));
	else if (strcmp(mode, "rss") == 0 && argc > 3)
		rss((size_t)atol(argv[2]), (size_t)atol(argv[3]),
		    argc > 4 && strcmp(argv[4], "cuda") == 0);
	else if (strcmp(mode, "numa") == 0)
		numa();
	else if (strcmp(mode, "carry") == 0)
		carry();
	else if (strcmp(mode, "work") == 0 && argc > 2)
		work(argv[2]);
	else {
		fprintf(stderr, "usage: footprint nth N | rss MAPGB CALLOCGB "
				"[cuda] | numa | carry | work once|fresh|reused\n");
		return 2;
	}
	return 0;
}
