/* 8 threads, mixed small and large sizes, realloc chains, content checked
 * on every block.  Runs plain and under LD_PRELOAD. */
#include <pthread.h>
#include <stdint.h>

#include "../preload/tp.h"

#define THREADS 8
#define SLOTS 32
static long rounds = 3000;

static uint64_t rng(uint64_t *s)
{
	*s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
	return *s;
}

static size_t pick(uint64_t *s)
{
	switch (rng(s) % 4) {
	case 0: return 1 + rng(s) % 256;
	case 1: return 1 + rng(s) % 200000;
	case 2: return (1 << 20) + rng(s) % (3 << 20);
	default: return (64 << 10) + rng(s) % (12 << 20);
	}
}

static void *worker(void *arg)
{
	uint64_t s = (uintptr_t)arg * 7919 + 17;
	char *b[SLOTS] = {0};
	size_t n[SLOTS] = {0};
	unsigned seed[SLOTS] = {0};
	for (long r = 0; r < rounds; r++) {
		int i = (int)(rng(&s) % SLOTS);
		if (b[i]) {
			CHECK(tp_verify(b[i], n[i], seed[i]));
		}
		switch (rng(&s) % 3) {
		case 0:
			free(b[i]);
			b[i] = NULL;
			n[i] = 0;
			break;
		case 1: {
			size_t m = pick(&s);
			char *q = realloc(b[i], m);
			CHECK(q);
			size_t keep = n[i] < m ? n[i] : m;
			CHECK(tp_verify(q, keep, seed[i]));
			b[i] = q, n[i] = m;
			tp_fill(q, m, seed[i]);
			break;
		}
		default:
			free(b[i]);
			n[i] = pick(&s);
			b[i] = rng(&s) & 1 ? malloc(n[i]) : calloc(1, n[i]);
			CHECK(b[i]);
			seed[i] = (unsigned)rng(&s);
			tp_fill(b[i], n[i], seed[i]);
		}
	}
	for (int i = 0; i < SLOTS; i++) {
		if (b[i])
			CHECK(tp_verify(b[i], n[i], seed[i]));
		free(b[i]);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc > 1)
		rounds = atol(argv[1]);
	pthread_t t[THREADS];
	for (intptr_t i = 0; i < THREADS; i++)
		CHECK(pthread_create(&t[i], NULL, worker, (void *)i) == 0);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	puts("threads: ok");
	return 0;
}
