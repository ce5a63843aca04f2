/* The copy threads of staged copies (HOSTPIN_STAGE_THREADS): the memcpy
 * of stage.c and stage_rect.c into and out of the staging slots, split
 * among them. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#if defined(__x86_64__) && !defined(HP_NO_NT)
#include <emmintrin.h>
#endif

#include "../record.h"
#include "prof.h"
#include "stage.h"

/* ---- copy threads (HOSTPIN_STAGE_THREADS) ----
 * The threads that copy into and out of the ring, the calling thread
 * counted: each chunk's memcpy is split in parts of about a quarter of a
 * thread's share (at least PART_MIN; a 2D copy's rows: parts of whole
 * rows) that the calling thread and the helpers take as they come, so a
 * thread that starts late takes fewer, and the chunk is done when every
 * part is.  The hand-off costs no sleep while the copy goes on: a helper
 * that ran out of parts watches for the next chunk (SPIN_NS, yielding the
 * CPU between looks, then sleeps on its condition variable), and the
 * calling thread watches for the last part the same way; a chunk is a few
 * hundred microseconds of memcpy, a wake-up through the kernel tens of
 * them, twice a chunk.  Nobody watches where there are more copy threads
 * than CPUs the process may use, or the node's runnable threads left them
 * no room when they started (speed.c: watching only takes turns then).
 * One job at a time (busy): a copy staged the other way meanwhile copies
 * its chunks alone.  Helpers are started the first time staging is
 * used, block every signal (invariant 11), and live as long as the
 * process; a forked child stages nothing and so never needs them. */
#define MAX_HELPERS 63
#define PART_MIN ((size_t)1 << 20) /* below: the calling thread alone */
#define SPIN_NS 200000ull
static struct {
	pthread_mutex_t mu;
	pthread_cond_t go, done;
	int helpers, busy, spin;
	_Atomic unsigned gen; /* the job's number */
	char *dst;
	const char *src;
	size_t len, part;
	size_t w, dp, sp; /* w != 0: len rows of w bytes, parts of part rows */
	int nt; /* into a slot the CPU does not read again (hp_pcopy_in) */
	int parts, next;
	_Atomic int left;
	uint64_t posted; /* HP_STAGE_PROF: when the job was posted */
} pool = {.mu = PTHREAD_MUTEX_INITIALIZER,
	  .go = PTHREAD_COND_INITIALIZER,
	  .done = PTHREAD_COND_INITIALIZER};

/* A copy into a staging slot, which the CPU never reads again (the DMA
 * does): non-temporal stores on x86-64, no read of the destination's lines
 * before they are written (issue 43: 1.2 to 1.4 times memcpy's rate into
 * the ring, tests/bench/copy_bench.c), then a store fence (the bytes are
 * visible before the part is counted done).  Elsewhere, memcpy. */
static void copy_in(char *d, const char *s, size_t len)
{
#if defined(__x86_64__) && !defined(HP_NO_NT)
	size_t head = (16 - ((uintptr_t)d & 15)) & 15;
	if (head > len)
		head = len;
	memcpy(d, s, head);
	d += head, s += head, len -= head;
	size_t tail = len & 63;
	memcpy(d + len - tail, s + len - tail, tail);
	__m128i *o = (__m128i *)(void *)d;
	const __m128i *i = (const __m128i *)(const void *)s;
	for (size_t k = 0; k < len / 16; k += 4) {
		__m128i a = _mm_loadu_si128(i + k),
			b = _mm_loadu_si128(i + k + 1),
			c = _mm_loadu_si128(i + k + 2),
			e = _mm_loadu_si128(i + k + 3);
		_mm_stream_si128(o + k, a);
		_mm_stream_si128(o + k + 1, b);
		_mm_stream_si128(o + k + 2, c);
		_mm_stream_si128(o + k + 3, e);
	}
	_mm_sfence();
#else
	memcpy(d, s, len);
#endif
}

#ifdef HP_STAGE_PROF
static _Atomic uint64_t pf_ns[HP_PF_N], pf_n[HP_PF_N];
void hp_prof_add(enum hp_prof k, uint64_t t0)
{
	atomic_fetch_add(&pf_ns[k], hp_now_ns() - t0);
	atomic_fetch_add(&pf_n[k], 1);
}
__attribute__((destructor)) static void prof_print(void)
{
	static const char *nm[HP_PF_N] = {
		"take", "wait", "fill", "issue", "fence", "caller-copy",
		"caller-idle", "helper-copy", "handoff"};
	for (int k = 0; k < HP_PF_N; k++)
		if (pf_n[k])
			hp_log(HP_LOG_ERROR, "prof %s %lu us, %lu times, %lu "
			       "ns each", nm[k], (unsigned long)(pf_ns[k] / 1000),
			       (unsigned long)pf_n[k],
			       (unsigned long)(pf_ns[k] / pf_n[k]));
}
#endif

/* Under pool.mu: take and copy parts of the job until none is left
 * (caller: the calling thread). */
static void pool_take(int caller)
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
		uint64_t t0 = HP_PROF_NOW();
		if (w == 0 && pool.nt)
			copy_in(d, sr, len);
		else if (w == 0)
			memcpy(d, sr, len);
		for (size_t k = 0; w && k < len; k++)
			memcpy(d + k * dp, sr + k * sp, w);
		hp_prof_add(caller ? HP_PF_CALLER_COPY : HP_PF_HELPER_COPY, t0);
		pthread_mutex_lock(&pool.mu);
		/* release: the part's bytes before a watcher sees 0 */
		if (atomic_fetch_sub_explicit(&pool.left, 1,
					      memory_order_release) == 1)
			pthread_cond_broadcast(&pool.done);
	}
}

/* Not under pool.mu: watch *gen until it differs from seen (a helper: the
 * next job), or *left until 0 (gen NULL: the calling thread, the last
 * part), for SPIN_NS at most (pool.spin: never where threads outnumber
 * CPUs).  The caller then takes pool.mu and sleeps if it must. */
static void pool_watch(const _Atomic unsigned *gen, unsigned seen)
{
	if (!pool.spin)
		return;
	uint64_t t0 = hp_now_ns();
	for (unsigned k = 1;; k++) {
		/* acquire: pairs with the release of the job or the part */
		if (gen ? atomic_load_explicit(gen, memory_order_acquire) !=
			      seen
			: atomic_load_explicit(&pool.left,
					       memory_order_acquire) == 0)
			return;
		if ((k & 15) == 0 && hp_now_ns() - t0 > SPIN_NS)
			return;
		sched_yield(); /* a busy CPU: to whoever waits for it */
	}
}

static void *helper_main(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&pool.mu);
	unsigned seen = atomic_load_explicit(&pool.gen, memory_order_relaxed);
	for (;;) {
		if (atomic_load_explicit(&pool.gen, memory_order_relaxed) ==
		    seen) {
			pthread_mutex_unlock(&pool.mu);
			pool_watch(&pool.gen, seen);
			pthread_mutex_lock(&pool.mu);
		}
		while (atomic_load_explicit(&pool.gen, memory_order_relaxed) ==
		       seen)
			pthread_cond_wait(&pool.go, &pool.mu);
		seen = atomic_load_explicit(&pool.gen, memory_order_relaxed);
		hp_prof_add(HP_PF_HANDOFF, pool.posted);
		pool_take(0);
	}
	return NULL;
}

/* Once: start the helpers (hp_pool_threads() - 1; speed.c sizes them). */
void hp_pool_start(void)
{
	unsigned n = hp_pool_threads();
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
	pool.spin = k > 0 && hp_pool_quiet();
	pthread_mutex_unlock(&pool.mu);
}

/* Under pool.mu, the job set: run it with the helpers, then unlock. */
static void pool_run(void)
{
	pool.parts = (int)((pool.len + pool.part - 1) / pool.part);
	pool.next = 0;
	atomic_store_explicit(&pool.left, pool.parts, memory_order_relaxed);
	pool.busy = 1;
	pool.posted = HP_PROF_NOW();
	/* release: the job's fields before a watching helper sees it */
	atomic_fetch_add_explicit(&pool.gen, 1, memory_order_release);
	pthread_cond_broadcast(&pool.go);
	pool_take(1);
	uint64_t t0 = HP_PROF_NOW();
	if (atomic_load_explicit(&pool.left, memory_order_relaxed) > 0) {
		pthread_mutex_unlock(&pool.mu);
		pool_watch(NULL, 0);
		pthread_mutex_lock(&pool.mu);
	}
	while (atomic_load_explicit(&pool.left, memory_order_acquire) > 0)
		pthread_cond_wait(&pool.done, &pool.mu);
	hp_prof_add(HP_PF_CALLER_IDLE, t0);
	pool.busy = 0;
	pthread_mutex_unlock(&pool.mu);
}

/* memcpy, by the copy threads together (nt: into a slot, copy_in). */
static void pcopy(void *dst, const void *src, size_t len, int nt)
{
	pthread_mutex_lock(&pool.mu);
	int parts = pool.helpers + 1;
	if (parts == 1 || pool.busy || len < 2 * PART_MIN) {
		pthread_mutex_unlock(&pool.mu);
		if (nt)
			copy_in(dst, src, len);
		else
			memcpy(dst, src, len);
		return;
	}
	/* parts of a quarter of a thread's share: a late thread takes fewer */
	size_t part = len / (4 * (size_t)parts);
	part = part < PART_MIN ? PART_MIN : (part + 4095) & ~(size_t)4095;
	pool.dst = dst, pool.src = src, pool.len = len, pool.part = part;
	pool.w = 0, pool.nt = nt;
	pool_run();
}

void hp_pcopy(void *dst, const void *src, size_t len)
{
	pcopy(dst, src, len, 0);
}

void hp_pcopy_in(void *slot, const void *src, size_t len)
{
	pcopy(slot, src, len, 1);
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
	pool.part = (rows + 4 * (size_t)parts - 1) / (4 * (size_t)parts);
	if (pool.part * w < PART_MIN)
		pool.part = (PART_MIN + w - 1) / w;
	pool.w = w, pool.dp = dp, pool.sp = sp, pool.nt = 0;
	pool_run();
}
