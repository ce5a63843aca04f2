/* Application mappings: partial munmap, mremap grow/shrink/move, madvise
 * DONTNEED and MAP_FIXED over pinned ranges.  After each step, what hostpin
 * tracks and what /proc/self/smaps says is locked must agree. */
#include <sys/mman.h>
#include <unistd.h>

#include "tp.h"

#define MB ((size_t)1 << 20)

static int locked_backend;

/* Pages [p, p+len) are tracked as one range, and locked iff the backend
 * locks; smaps agrees. */
static void expect_tracked(char *p, size_t len)
{
	struct hostpin_range r;
	int (*q)(const void *, struct hostpin_range *) = tp_query();
	CHECK(q && q(p, &r) && r.base == p && r.len == len);
	CHECK(r.flags & HOSTPIN_KIND_MMAP);
	if (locked_backend) {
		CHECK(r.flags & HOSTPIN_LOCKED);
		CHECK(tp_locked(p, len) == 1);
	} else {
		CHECK(!(r.flags & HOSTPIN_LOCKED));
		CHECK(tp_locked(p, len) == 0);
	}
}

static void expect_untracked(char *p)
{
	CHECK(tp_flags(p) == 0);
}

/* A range hostpin dropped is no longer locked either. */
static void expect_unlocked(char *p, size_t len)
{
	CHECK(tp_flags(p) == 0);
	CHECK(tp_locked(p, len) == 0);
}

static char *map(size_t n)
{
	char *p = mmap(NULL, n, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(p != MAP_FAILED);
	return p;
}

int main(void)
{
	locked_backend = getenv("HP_EXPECT_LOCKED") != NULL;
	/* partial munmap: middle, head, tail */
	char *p = map(16 * MB);
	tp_fill(p, 16 * MB, 1);
	expect_tracked(p, 16 * MB);
	CHECK(munmap(p + 4 * MB, 4 * MB) == 0);
	expect_tracked(p, 4 * MB);
	expect_tracked(p + 8 * MB, 8 * MB);
	CHECK(tp_verify(p, 4 * MB, 1));
	CHECK(munmap(p, 1 * MB) == 0);
	expect_tracked(p + 1 * MB, 3 * MB);
	CHECK(munmap(p + 14 * MB, 2 * MB) == 0);
	expect_tracked(p + 8 * MB, 6 * MB);
	/* one munmap over two ranges and the gap between them */
	CHECK(munmap(p, 16 * MB) == 0);
	expect_untracked(p + 2 * MB);
	expect_untracked(p + 9 * MB);

	/* mremap: grow (may move), shrink, move */
	p = map(8 * MB);
	tp_fill(p, 8 * MB, 2);
	char *g = mremap(p, 8 * MB, 24 * MB, MREMAP_MAYMOVE);
	CHECK(g != MAP_FAILED);
	CHECK(tp_verify(g, 8 * MB, 2));
	expect_tracked(g, 24 * MB);
	if (g != p)
		expect_untracked(p);
	char *s = mremap(g, 24 * MB, 6 * MB, 0);
	CHECK(s == g);
	expect_tracked(s, 6 * MB);
	expect_untracked(s + 6 * MB);
	char *dst = map(32 * MB);
	char *mv = mremap(s, 6 * MB, 6 * MB, MREMAP_MAYMOVE | MREMAP_FIXED,
			  dst + 8 * MB);
	CHECK(mv == dst + 8 * MB);
	CHECK(tp_verify(mv, 6 * MB, 2));
	expect_tracked(mv, 6 * MB);
	expect_tracked(dst, 8 * MB);            /* left of the hole */
	expect_tracked(dst + 14 * MB, 18 * MB); /* right of it */
	expect_untracked(s);
	munmap(dst, 32 * MB);

	/* madvise DONTNEED: succeeds as without hostpin, pages read zero,
	 * the range stays tracked and pinned */
	p = map(8 * MB);
	memset(p, 7, 8 * MB);
	CHECK(madvise(p + 2 * MB, 2 * MB, MADV_DONTNEED) == 0);
	CHECK(p[2 * MB] == 0 && p[4 * MB - 1] == 0 && p[4 * MB] == 7 &&
	      p[0] == 7);
	expect_tracked(p, 8 * MB);
	CHECK(madvise(p, 8 * MB, MADV_WILLNEED) == 0);

	/* a mapping below the threshold is neither tracked nor locked */
	char *m2 = map(256 << 10);
	expect_unlocked(m2, 256 << 10);
	munmap(m2, 256 << 10);

	/* MAP_FIXED over the middle: the new mapping is tracked on its own,
	 * the old survivors stay tracked */
	char *f = mmap(p + 2 * MB, 2 * MB, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	CHECK(f == p + 2 * MB);
	expect_tracked(p, 2 * MB);
	expect_tracked(p + 2 * MB, 2 * MB);
	expect_tracked(p + 4 * MB, 4 * MB);
	munmap(p, 8 * MB);

	/* not pinned: small, PROT_NONE reservations, MAP_NORESERVE, shared
	 * (default policy) */
	char *small = map(64 << 10);
	expect_untracked(small);
	char *res = mmap(NULL, 64 * MB, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
			 -1, 0);
	expect_untracked(res);
	char *sh = mmap(NULL, 8 * MB, PROT_READ | PROT_WRITE,
			MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (!getenv("HP_EXPECT_SHARED"))
		expect_untracked(sh);
	else
		expect_tracked(sh, 8 * MB);
	/* a file-backed mapping: pinned only under HOSTPIN_MMAP=all */
	char tmpl[] = "/tmp/hostpin-maps-XXXXXX";
	int fd = mkstemp(tmpl);
	CHECK(fd >= 0 && ftruncate(fd, (off_t)(8 * MB)) == 0);
	unlink(tmpl);
	char *fm = mmap(NULL, 8 * MB, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	CHECK(fm != MAP_FAILED);
	if (getenv("HP_EXPECT_FILE"))
		expect_tracked(fm, 8 * MB);
	else
		expect_untracked(fm);
	CHECK(munmap(fm, 8 * MB) == 0);
	expect_untracked(fm);
	close(fd);
	puts("maps: ok");
	return 0;
}
