/* HOSTPIN_MAX_PINNED holds under 8 threads allocating concurrently: the
 * pinned total never exceeds the cap, whatever the interleaving. */
#include <pthread.h>

#include "tp.h"

#define MB ((size_t)1 << 20)
static uint64_t cap;
static _Atomic int over;

static void *worker(void *arg)
{
	(void)arg;
	for (int i = 0; i < 200; i++) {
		char *p[3];
		for (int k = 0; k < 3; k++) {
			p[k] = malloc((size_t)(k + 1) * 2 * MB);
			memset(p[k], k, (size_t)(k + 1) * 2 * MB);
		}
		struct hostpin_stats s;
		tp_stats(&s);
		if (s.pinned_bytes_now > cap || s.pinned_bytes_peak > cap)
			over = 1;
		for (int k = 0; k < 3; k++)
			free(p[k]);
	}
	return NULL;
}

int main(void)
{
	cap = strtoull(getenv("HP_CAP_MB"), NULL, 10) * MB;
	pthread_t t[8];
	for (int i = 0; i < 8; i++)
		pthread_create(&t[i], NULL, worker, NULL);
	for (int i = 0; i < 8; i++)
		pthread_join(t[i], NULL);
	struct hostpin_stats s;
	tp_stats(&s);
	CHECK(!over && s.pinned_bytes_peak <= cap && s.pinned_bytes_peak > 0);
	CHECK(s.over_cap > 0); /* the cap was actually reached */
	printf("maxpin: ok (peak %llu of %llu)\n",
	       (unsigned long long)s.pinned_bytes_peak, (unsigned long long)cap);
	return 0;
}
