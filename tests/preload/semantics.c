/* glibc/POSIX semantics of the malloc family, with or without hostpin
 * (invariant 6).  HP_EXPECT_ACTIVE=1 also asserts that large blocks are
 * hostpin's and small ones are not. */
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <unistd.h>

#include "tp.h"

static int active;
static size_t thr = 1 << 20;

static void expect_mine(void *p, size_t n)
{
	if (!active)
		return;
	unsigned f = tp_flags(p);
	if (n >= thr)
		CHECK(f & HOSTPIN_KIND_MALLOC);
	else
		CHECK(!(f & HOSTPIN_KIND_MALLOC));
}

static void errnos(void)
{
	errno = 0;
	CHECK(malloc(SIZE_MAX - 4096) == NULL && errno == ENOMEM);
	errno = 0;
	CHECK(malloc((size_t)PTRDIFF_MAX + 1) == NULL && errno == ENOMEM);
	errno = 0;
	CHECK(calloc(SIZE_MAX / 2, 3) == NULL && errno == ENOMEM);
	errno = 0;
	CHECK(calloc((size_t)1 << 33, (size_t)1 << 33) == NULL &&
	      errno == ENOMEM);
	errno = 0;
	CHECK(reallocarray(NULL, SIZE_MAX / 2, 3) == NULL && errno == ENOMEM);
	void *p = (void *)1;
	CHECK(posix_memalign(&p, 3, 16) == EINVAL);
	CHECK(posix_memalign(&p, 3, 8 << 20) == EINVAL);
	CHECK(posix_memalign(&p, 4, 8 << 20) == EINVAL); /* < sizeof(void*) */
	CHECK(posix_memalign(&p, 24, 8 << 20) == EINVAL);
	CHECK(p == (void *)1); /* untouched on failure */
	CHECK(posix_memalign(&p, 64, SIZE_MAX - 8192) == ENOMEM);
	errno = 0;
	CHECK(aligned_alloc((size_t)1 << 63 | 1, 8 << 20) == NULL &&
	      errno == EINVAL);
	errno = 0;
	CHECK(memalign(64, SIZE_MAX - 8192) == NULL && errno == ENOMEM);
	errno = 0;
	CHECK(pvalloc(SIZE_MAX - 10) == NULL && errno == ENOMEM);
}

static void zeroing(void)
{
	size_t sizes[] = {100, 70000, thr, 3 * thr + 5, 64u << 20};
	for (int i = 0; i < 5; i++) {
		size_t n = sizes[i];
		for (int round = 0; round < 3; round++) {
			unsigned char *c = calloc(1, n);
			CHECK(c);
			expect_mine(c, n);
			for (size_t k = 0; k < n; k += 97)
				CHECK(c[k] == 0);
			CHECK(c[n - 1] == 0);
			memset(c, 0xa5, n); /* dirty it for the next round */
			free(c);
			unsigned char *m = malloc(n); /* may reuse */
			memset(m, 0x5a, n);
			free(m);
		}
	}
}

static void reallocs(void)
{
	CHECK(realloc(NULL, 0) != NULL || errno == ENOMEM);
	void *z = realloc(NULL, 5 * thr);
	CHECK(z);
	expect_mine(z, 5 * thr);
	errno = 0;
	CHECK(realloc(z, 0) == NULL); /* glibc: frees, returns NULL */
	void *s = malloc(10);
	CHECK(realloc(s, 0) == NULL);

	/* Grow and shrink across the threshold, contents checked each step. */
	size_t steps[] = {100, thr / 2, thr, thr + 1, 8 * thr, 3 * thr,
			  thr - 1, 64, 20 * thr, 7};
	size_t have = 100;
	unsigned char *p = malloc(have);
	tp_fill(p, have, 7);
	for (int i = 1; i < 10; i++) {
		size_t n = steps[i];
		unsigned char *q = realloc(p, n);
		CHECK(q);
		expect_mine(q, n);
		size_t keep = have < n ? have : n;
		CHECK(tp_verify(q, keep, 7));
		CHECK(malloc_usable_size(q) >= n);
		tp_fill(q, n, 7);
		p = q, have = n;
	}
	free(p);
	/* a failed realloc leaves the block untouched */
	p = malloc(2 * thr);
	tp_fill(p, 2 * thr, 3);
	errno = 0;
	CHECK(realloc(p, SIZE_MAX - 4096) == NULL && errno == ENOMEM);
	CHECK(tp_verify(p, 2 * thr, 3));
	free(p);
}

static void misc(void)
{
	free(NULL);
	CHECK(malloc_usable_size(NULL) == 0);
	size_t sz[] = {1, 4096, thr - 1, thr, thr + 1, 10 * thr + 3};
	for (int i = 0; i < 6; i++) {
		void *p = malloc(sz[i]);
		CHECK(p && malloc_usable_size(p) >= sz[i]);
		CHECK(((uintptr_t)p & 15) == 0);
		expect_mine(p, sz[i]);
		memset(p, 1, sz[i]);
		free(p);
	}
	void *v = valloc(3 * thr);
	CHECK(v && ((uintptr_t)v & 4095) == 0);
	expect_mine(v, 3 * thr);
	free(v);
	v = pvalloc(3 * thr + 1);
	CHECK(v && ((uintptr_t)v & 4095) == 0 &&
	      malloc_usable_size(v) >= 3 * thr + 4096);
	free(v);
	v = pvalloc(0);
	CHECK(v && ((uintptr_t)v & 4095) == 0);
	free(v);
}

static void alignments(void)
{
	for (size_t a = 8; a <= ((size_t)1 << 30); a <<= 1) {
		size_t sizes[] = {24, thr, 2 * thr + 17};
		for (int k = 0; k < 3; k++) {
			size_t n = sizes[k];
			void *p = NULL;
			CHECK(posix_memalign(&p, a, n) == 0);
			CHECK(((uintptr_t)p & (a - 1)) == 0);
			expect_mine(p, n);
			memset(p, 3, n);
			free(p);
			p = aligned_alloc(a, n);
			CHECK(p && ((uintptr_t)p & (a - 1)) == 0);
			free(p);
			p = memalign(a, n);
			CHECK(p && ((uintptr_t)p & (a - 1)) == 0);
			CHECK(malloc_usable_size(p) >= n);
			free(p);
		}
	}
}

int main(void)
{
	active = getenv("HP_EXPECT_ACTIVE") != NULL;
	if (getenv("HOSTPIN_THRESHOLD"))
		thr = strtoul(getenv("HOSTPIN_THRESHOLD"), NULL, 10) << 10;
	errnos();
	zeroing();
	reallocs();
	misc();
	alignments();
	printf("semantics: ok%s\n", active ? " (hostpin active)" : "");
	return 0;
}
