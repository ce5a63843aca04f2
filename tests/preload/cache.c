/* The cache of freed blocks, under HOSTPIN_BACKEND=mlock HOSTPIN_CACHE=12M:
 * reuse oldest first within 1/8 waste, never a block still in use, never
 * over the cap, evictions oldest first, calloc zeroes reused memory. */
#include <pthread.h>

#include "tp.h"

#define MB ((size_t)1 << 20)

static uint64_t cached_bytes(void)
{
	struct hostpin_stats s;
	CHECK(tp_stats(&s) == 0);
	return s.cached_bytes;
}

#define THREADS 8
static void *hammer(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg;
	for (int i = 0; i < 300; i++) {
		size_t n = (1 + (seed + (unsigned)i) % 5) * MB;
		char *p = malloc(n);
		CHECK(p);
		/* a block in use is never handed to anyone else: our pattern
		 * survives other threads' allocations */
		tp_fill(p, n, seed * 1000u + (unsigned)i);
		sched_yield();
		CHECK(tp_verify(p, n, seed * 1000u + (unsigned)i));
		free(p);
		CHECK(cached_bytes() <= 12 * MB);
	}
	return NULL;
}

int main(void)
{
	char *a = malloc(4 * MB), *b = malloc(4 * MB), *c = malloc(4 * MB);
	memset(a, 1, 4 * MB), memset(b, 2, 4 * MB), memset(c, 3, 4 * MB);
	free(a), free(b), free(c); /* cache: a b c (12 MiB, at the cap) */
	CHECK(cached_bytes() == 12 * MB);
	char *d = malloc(4 * MB);
	CHECK(d == a); /* oldest first, not the block just freed */
	char *e = malloc(4 * MB - 4096); /* within 1/8: reuses b */
	CHECK(e == b);
	char *f = malloc(3 * MB); /* 4 MiB would waste 1/3: a new block */
	CHECK(f != c);
	unsigned char *z = calloc(1, 4 * MB); /* reuses c: must read zero */
	CHECK((char *)z == c);
	for (size_t i = 0; i < 4 * MB; i += 4093)
		CHECK(z[i] == 0);
	free(d), free(e), free(f), free(z); /* cache: d(a) e(b) f z(c) */
	CHECK(cached_bytes() <= 12 * MB);
	/* f (3 MiB) made the cache exceed 12 MiB: the oldest, d, went */
	char *g = malloc(4 * MB);
	CHECK(g == b); /* e was b: the oldest left */
	free(g);
	char *big = malloc(10 * MB);
	free(big); /* evicts older blocks until 10 MiB fits */
	CHECK(cached_bytes() <= 12 * MB);
	char *h = malloc(10 * MB);
	CHECK(h == big);
	free(h);

	pthread_t t[THREADS];
	for (uintptr_t i = 0; i < THREADS; i++)
		pthread_create(&t[i], NULL, hammer, (void *)(i + 1));
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	CHECK(cached_bytes() <= 12 * MB);
	/* a double free of a cached block is still caught (see run.sh) */
	puts("cache: ok");
	return 0;
}
