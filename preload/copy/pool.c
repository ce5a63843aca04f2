/* The copy threads of staged copies (HOSTPIN_STAGE_THREADS): the memcpy
 * of stage.c and stage_rect.c into and out of the staging slots, split
 * among them. */
#include <pthread.h>
#include <string.h>

#include "../record.h"
#include "stage.h"

/* ---- copy threads (HOSTPIN_STAGE_THREADS) ----
 * The threads that copy into and out of the ring, the calling thread
 * counted: each chunk's memcpy is split in parts that the calling thread
 * and the helpers take (a 2D copy's rows: parts of whole rows), and the
 * chunk is done when every part is.  One job at a time (busy): a copy
 * staged the other way meanwhile copies its chunks alone.  Helpers are started the first time
 * staging is used, block every signal (invariant 11), and live as long as
 * the process; a forked child stages nothing and so never needs them. */
#define MAX_HELPERS 63
#define PART_MIN ((size_t)1 << 20) /* below: the calling thread alone */
static struct {
	pthread_mutex_t mu;
	pthread_cond_t go, done;
	int helpers, busy;
	unsigned gen; /* the job's number */
	char *dst;
	const char *src;
	size_t len, part;
	size_t w, dp, sp; /* w != 0: len rows of w bytes, parts of part rows */
	int parts, next, left;
} pool = {.mu = PTHREAD_MUTEX_INITIALIZER,
	  .go = PTHREAD_COND_INITIALIZER,
	  .done = PTHREAD_COND_INITIALIZER};

/* Under pool.mu: take and copy parts of the job until none is left. */
static void pool_take(void)
{
	while (pool.next < pool.parts) {
		int i = pool.next++;
		size_t off = (size_t)i * pool.part;
		size_t len = pool.len - off < pool.part ? pool.len - off
							: pool.part;
		size_t w = pool.w, dp = pool.dp, sp = pool.sp;
		char *d = pool.dst + (w ? off * dp : off);
		const char *sr = pool.src + (w ? off * sp : off);
		pthread_mutex_unlock(&pool.mu);
		if (w == 0)
			memcpy(d, sr, len);
		for (size_t k = 0; w && k < len; k++)
			memcpy(d + k * dp, sr + k * sp, w);
		pthread_mutex_lock(&pool.mu);
		if (--pool.left == 0)
			pthread_cond_broadcast(&pool.done);
	}
}

static void *helper_main(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&pool.mu);
	unsigned seen = pool.gen;
	for (;;) {
		while (pool.gen == seen)
			pthread_cond_wait(&pool.go, &pool.mu);
		seen = pool.gen;
		pool_take();
	}
	return NULL;
}

/* Once: start the helpers (HOSTPIN_STAGE_THREADS - 1; by
 * default min(2, CPUs the process may use) - 1). */
void hp_pool_start(void)
{
	unsigned n = (unsigned)hp_opt[HP_OPT_STAGE_THREADS];
	if (n == 0) {
		unsigned c = hp_cpu_limit();
		n = c < 2 ? 1 : 2;
	}
	if (n > MAX_HELPERS + 1)
		n = MAX_HELPERS + 1;
	int k = 0; /* every signal blocked (invariant 11) */
	while (k + 1 < (int)n && hp_thread_start(helper_main, NULL, 0) == 0)
		k++;
	if (k + 1 < (int)n)
		hp_log(HP_LOG_WARN, "staging: started %d of %u copy threads",
		       k + 1, n);
	pthread_mutex_lock(&pool.mu);
	pool.helpers = k;
	pthread_mutex_unlock(&pool.mu);
}

/* Under pool.mu, the job set: run it with the helpers, then unlock. */
static void pool_run(void)
{
	pool.parts = (int)((pool.len + pool.part - 1) / pool.part);
	pool.next = 0, pool.left = pool.parts;
	pool.busy = 1;
	pool.gen++;
	pthread_cond_broadcast(&pool.go);
	pool_take();
	while (pool.left > 0)
		pthread_cond_wait(&pool.done, &pool.mu);
	pool.busy = 0;
	pthread_mutex_unlock(&pool.mu);
}

/* memcpy, by the copy threads together. */
void hp_pcopy(void *dst, const void *src, size_t len)
{
	pthread_mutex_lock(&pool.mu);
	int parts = pool.helpers + 1;
	if (parts == 1 || pool.busy || len < 2 * PART_MIN) {
		pthread_mutex_unlock(&pool.mu);
		memcpy(dst, src, len);
		return;
	}
	size_t part = (len + (size_t)parts - 1) / (size_t)parts;
	part = (part + 4095) & ~(size_t)4095;
	pool.dst = dst, pool.src = src, pool.len = len, pool.part = part;
	pool.w = 0;
	pool_run();
}

/* rows rows of w bytes, dp and sp bytes apart, by the copy threads
 * together (a 2D copy's host side, to or from a slot). */
void hp_pcopy_rows(char *dst, size_t dp, const char *src, size_t sp, size_t w,
		   size_t rows)
{
	if (dp == w && sp == w) {
		hp_pcopy(dst, src, rows * w);
		return;
	}
	pthread_mutex_lock(&pool.mu);
	int parts = pool.helpers + 1;
	if (parts == 1 || pool.busy || rows < 2 || rows * w < 2 * PART_MIN) {
		pthread_mutex_unlock(&pool.mu);
		for (size_t i = 0; i < rows; i++)
			memcpy(dst + i * dp, src + i * sp, w);
		return;
	}
	pool.dst = dst, pool.src = src, pool.len = rows;
	pool.part = (rows + (size_t)parts - 1) / (size_t)parts;
	pool.w = w, pool.dp = dp, pool.sp = sp;
	pool_run();
}
