/* Range shapes on the application's mappings.
 *   ranges reserve   reserve-then-commit: a PROT_NONE reservation, a
 *                    MAP_FIXED commit inside it, munmap of the whole
 *                    reservation; then a new mapping at the same address
 *   ranges purge     small MADV_DONTNEED purges and partial munmaps of a
 *                    large mapping: contents, locks and registrations right
 *   ranges repurge   whole registrations under HOSTPIN_PIN_AFTER=2: a purge
 *                    sends the mapping back to waiting for copies, a second
 *                    one leaves it unregistered
 *   ranges reenter   the driver allocates 4 MiB inside cuMemAlloc_v2
 *                    (FAKE_CUDA_ALLOC_IN_CALL): nothing calls back into it
 *                    from there; the program's own blocks still register
 * HP_EXPECT_CHURN: whole registrations registered at allocation: the first
 * purge registers the mapping again, the later ones leave it unregistered.
 * HP_FAKE_CUDA: run over the fake driver (cuda_up.h).  HP_EXPECT_PINNED:
 * hostpin pins with a backend (checked through the query API and smaps). */
#include <sys/mman.h>

#include "cuda_up.h"

#define MB ((size_t)1 << 20)
static int pinning;

static int pinned(const void *p)
{
	return (tp_flags(p) & (HOSTPIN_LOCKED | HOSTPIN_REGISTERED)) != 0;
}

static void reserve(void)
{
	/* Before any other large range exists: the reservation starts below
	 * the lowest range hostpin tracks. */
	char *r = mmap(NULL, 64 * MB, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	CHECK(r != MAP_FAILED);
	char *c = mmap(r + 16 * MB, 16 * MB, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	CHECK(c == r + 16 * MB);
	memset(c, 5, 16 * MB);
	if (pinning)
		CHECK(pinned(c));
	CHECK(munmap(r, 64 * MB) == 0);
	/* nothing of it is left tracked, counted or locked */
	CHECK(tp_flags(c) == 0);
	struct hostpin_stats s;
	if (tp_stats(&s) == 0)
		CHECK(s.mmap_ranges_now == 0 && s.pinned_bytes_now == 0 &&
		      s.pinned_blocks_now == 0);
	/* a new mapping at the same address is tracked and pinned again */
	char *n = mmap(c, 16 * MB, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	CHECK(n == c);
	memset(n, 6, 16 * MB);
	if (pinning) {
		CHECK(pinned(n));
		if (getenv("HP_EXPECT_LOCKED"))
			CHECK(tp_locked(n, 16 * MB) == 1);
	}
	CHECK(munmap(n, 16 * MB) == 0);
	if (tp_stats(&s) == 0)
		CHECK(s.mmap_ranges_now == 0 && s.pinned_bytes_now == 0);
}

static unsigned char pat(size_t off) { return (unsigned char)(off / 4096 * 7 + 1); }

/* Every page of [p + from, p + to): its pattern, or zero if purged. */
static void check_pages(const unsigned char *p, size_t from, size_t to,
			const unsigned char *purged)
{
	for (size_t off = from; off < to; off += 4096)
		CHECK(p[off] == (purged[off / 4096] ? 0 : pat(off)));
}

static void purge(void)
{
	size_t len = 256 * MB, npg = len / 4096;
	unsigned char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(p != MAP_FAILED);
	unsigned char *purged = calloc(npg, 1);
	CHECK(purged);
	for (size_t off = 0; off < len; off += 4096)
		p[off] = pat(off);
	if (pinning)
		CHECK(pinned(p) && pinned(p + len - 1));
	int churn = getenv("HP_EXPECT_CHURN") != NULL;
	/* 64 KiB purges at scattered places, some across 2 MiB boundaries */
	for (int i = 0; i < 100; i++) {
		size_t off = ((size_t)i * 2654435761u % (npg - 16)) * 4096;
		if (i % 10 == 0)
			off = ((size_t)(i + 1) * 2 * MB) - 32 * 1024;
		CHECK(madvise(p + off, 64 * 1024, MADV_DONTNEED) == 0);
		for (size_t k = 0; k < 16; k++)
			purged[off / 4096 + k] = 1;
		if (pinning && churn)
			CHECK(pinned(p) == (i == 0));
	}
	check_pages(p, 0, len, purged);
	if (churn)
		pinning = 0; /* the rest: unregistered for good */
	if (pinning) {
		CHECK(pinned(p) && pinned(p + len / 2));
		if (getenv("HP_EXPECT_LOCKED"))
			CHECK(tp_locked(p, len) == 1);
	}
	/* partial unmaps: a hole in the middle, the head, the tail */
	size_t hole = 100 * MB + 12 * 4096;
	CHECK(munmap(p + hole, 64 * 1024) == 0);
	CHECK(tp_flags(p + hole) == 0);
	CHECK(munmap(p, 3 * MB + 4096) == 0);
	CHECK(munmap(p + len - 5 * MB, 5 * MB) == 0);
	check_pages(p, 3 * MB + 4096, hole, purged);
	check_pages(p, hole + 64 * 1024, len - 5 * MB, purged);
	if (pinning) {
		CHECK(pinned(p + 3 * MB + 4096) && pinned(p + hole - 1));
		CHECK(pinned(p + hole + 64 * 1024) && pinned(p + len - 5 * MB - 1));
		if (getenv("HP_EXPECT_LOCKED")) {
			CHECK(tp_locked(p + 3 * MB + 4096, hole - 3 * MB - 4096) == 1);
			CHECK(tp_locked(p + hole + 64 * 1024,
					len - 5 * MB - hole - 64 * 1024) == 1);
		}
	}
	if (churn) /* the survivors of the splits too */
		CHECK(!pinned(p + 3 * MB + 4096) && !pinned(p + len - 5 * MB - 1));
	struct hostpin_stats s;
	if (tp_stats(&s) == 0 && pinning)
		CHECK(s.pinned_bytes_now ==
		      len - 3 * MB - 4096 - 64 * 1024 - 5 * MB);
	if (tp_stats(&s) == 0 && churn)
		CHECK(s.pinned_bytes_now == 0 && s.pinned_blocks_now == 0);
	CHECK(munmap(p, len) == 0);
	if (tp_stats(&s) == 0)
		CHECK(s.mmap_ranges_now == 0 && s.pinned_bytes_now == 0);
	free(purged);
}

/* HOSTPIN_PIN_AFTER=2 over the fake driver: copies register a 64 MiB
 * mapping, a purge unregisters it and it waits for two copies again; after
 * a second purge no copy registers it. */
static void repurge(void)
{
	size_t len = 64 * MB;
	int (*alloc)(unsigned long long *, size_t) =
	    (int (*)(unsigned long long *, size_t))dlsym(RTLD_DEFAULT,
							"cuMemAlloc_v2");
	int (*h2d)(unsigned long long, const void *, size_t) =
	    (int (*)(unsigned long long, const void *, size_t))dlsym(
		RTLD_DEFAULT, "cuMemcpyHtoD_v2");
	CHECK(alloc && h2d);
	unsigned long long d;
	CHECK(alloc(&d, MB) == 0);
	unsigned char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(p != MAP_FAILED);
	for (size_t off = 0; off < len; off += 4096)
		p[off] = pat(off);
	CHECK(!pinned(p));
	for (int round = 0; round < 3; round++) {
		for (int c = 0; c < 3; c++) {
			CHECK(h2d(d, p + (size_t)c * MB, MB) == 0);
			/* the second copy registers it, unless purged twice */
			CHECK(pinned(p) == (c >= 1 && round < 2));
		}
		CHECK(madvise(p + 8 * MB, 64 * 1024, MADV_DONTNEED) == 0);
		CHECK(!pinned(p) && !pinned(p + len - 1));
		CHECK(p[8 * MB] == 0 && p[8 * MB + 64 * 1024] == pat(8 * MB + 64 * 1024));
		for (size_t k = 0; k < 16; k++)
			p[8 * MB + k * 4096] = pat(8 * MB + k * 4096);
	}
	struct hostpin_stats s;
	if (tp_stats(&s) == 0)
		CHECK(s.pinned_bytes_now == 0 && s.pinned_blocks_now == 0);
	CHECK(munmap(p, len) == 0);
}

static void reenter(void)
{
	int (*alloc)(unsigned long long *, size_t) =
	    (int (*)(unsigned long long *, size_t))dlsym(RTLD_DEFAULT,
							"cuMemAlloc_v2");
	CHECK(alloc);
	char *b = malloc(4 * MB);
	memset(b, 1, 4 * MB);
	if (pinning)
		CHECK(pinned(b));
	unsigned long long d;
	for (int i = 0; i < 3; i++) /* each allocates and frees 4 MiB inside */
		CHECK(alloc(&d, MB) == 0);
	char *c = malloc(4 * MB);
	memset(c, 2, 4 * MB);
	if (pinning)
		CHECK(pinned(c) && pinned(b));
	free(c);
	free(b);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "reserve";
	tp_cuda_maybe();
	pinning = getenv("HP_EXPECT_PINNED") != NULL;
	if (!strcmp(mode, "reserve"))
		reserve();
	else if (!strcmp(mode, "purge"))
		purge();
	else if (!strcmp(mode, "repurge"))
		repurge();
	else if (!strcmp(mode, "reenter"))
		reenter();
	else
		return 2;
	printf("ranges %s: ok\n", mode);
	return 0;
}
