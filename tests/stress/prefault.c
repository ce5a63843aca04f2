/* Two threads allocating, touching and freeing 16 MiB blocks: each block is
 * pre-faulted by hostpin's worker pool before it is pinned, so consecutive
 * jobs follow each other closely (run under ThreadSanitizer, this caught a
 * worker of one job reading the next job's description). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "../preload/tp.h"

static void *loop(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg;
	for (int i = 0; i < 60; i++) {
		size_t n = ((size_t)16 << 20) + (size_t)(i % 7) * 4096;
		char *p = malloc(n);
		CHECK(p != NULL);
		tp_fill(p, n, seed + (unsigned)i);
		CHECK(tp_verify(p, n, seed + (unsigned)i));
		free(p);
	}
	return NULL;
}

int main(void)
{
	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, loop, (void *)(uintptr_t)(i * 97));
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	puts("prefault: ok");
	return 0;
}
