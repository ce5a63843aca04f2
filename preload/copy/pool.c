/* The copy threads of staged copies (HOSTPIN_STAGE_THREADS): the memcpy
 * of stage.c and stage_rect.c into and out of the staging slots, split
 * among them. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>

#include "../record.h"
#include "ntcopy.h"
#include "prof.h"
#include "stage.h"

/* ---- copy threads (HOSTPIN_STAGE_THREADS) ----
 * The threads that copy into and out of the ring, the calling threads
 * counted.  A copy is a job in a queue of JOBS, every program thread's
 * alike, split in parts of about a quarter of a thread's share (at least
 * PART_MIN; a 2D copy's rows: parts of whole rows) that the helpers and
 * any calling thread waiting for a job take in order as they come, so a
 * thread that starts late takes fewer.  A job is done when every part
 * is; a calling thread waits for its own (hp_pool_wait: every job posted
 * before its mark done) by taking parts, the next job's too (a staged
 * H2D posts the next chunk's fill, a D2H the next chunk's drain, before
 * it waits for the last one: stage.c), so nobody idles while one thread finishes a part, and a
 * helper finds the next chunk's parts queued instead of waiting to be
 * woken.  Where the queue runs dry a helper watches for the next job
 * (SPIN_NS, yielding the CPU between looks, then sleeps on its condition
 * variable), and a waiting caller watches its job the same way.  Nobody
 * watches where there are more copy threads than CPUs the process may
 * use, or the node's runnable threads left them no room when they started
 * (speed.c: watching only takes turns then).  Where as many copies stage
 * at once as there are copy threads, or more, each calling thread copies
 * its own chunks (issue 43: two program threads and a helper on two
 * cores took turns at every chunk).  Helpers are started the
 * first time staging is used, block every signal (invariant 11), and live
 * as long as the process; a forked child stages nothing and so never needs
 * them. */
#define MAX_HELPERS 63
#define PART_MIN ((size_t)1 << 20) /* below: the calling thread alone */
#define SPIN_NS 200000ull
#define JOBS 8
struct job {
	char *dst;
	const char *src;
	size_t len, part;
	size_t w, dp, sp; /* w != 0: len rows of w bytes, parts of part rows */
	int nt; /* into a slot the CPU does not read again (hp_nt_copy) */
	int parts, next, left;
	uint64_t posted; /* HP_STAGE_PROF: when the job was posted */
};
static struct {
	pthread_mutex_t mu;
	pthread_cond_t go, done;
	int helpers, spin, idle, waiting; /* idle, waiting: asleep on go, done */
	struct job q[JOBS]; /* job n is q[n % JOBS] */
	_Atomic unsigned head; /* jobs posted */
	unsigned take; /* the first job with a part not taken */
	_Atomic unsigned tail; /* the first job not done (those below are) */
} pool = {.mu = PTHREAD_MUTEX_INITIALIZER,
	  .go = PTHREAD_COND_INITIALIZER,
	  .done = PTHREAD_COND_INITIALIZER};
/* a staged copy's chunk (stage.c): its copies posted, not waited for; 1:
 * an H2D's fill, into a slot (non-temporal stores), 2: a D2H's drain, out
 * of one (plain stores: the program reads its memory next) */
static HP_TLS int deferred;

#ifdef HP_STAGE_PROF
static _Atomic uint64_t pf_ns[HP_PF_N], pf_n[HP_PF_N];
void hp_prof_add(enum hp_prof k, uint64_t t0)
{
	uint64_t t = k == HP_PF_COPY_CPU ? hp_prof_cpu() : hp_now_ns();
	atomic_fetch_add(&pf_ns[k], t - t0);
	atomic_fetch_add(&pf_n[k], 1);
}
uint64_t hp_prof_cpu(void)
{
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}
__attribute__((destructor)) static void prof_print(void)
{
	static const char *nm[HP_PF_N] = {
		"take", "wait", "fill", "issue", "fence", "caller-copy",
		"caller-idle", "helper-copy", "handoff", "copy-cpu"};
	for (int k = 0; k < HP_PF_N; k++)
		if (pf_n[k])
			hp_log(HP_LOG_ERROR, "prof %s %lu us, %lu times, %lu "
			       "ns each", nm[k], (unsigned long)(pf_ns[k] / 1000),
			       (unsigned long)pf_n[k],
			       (unsigned long)(pf_ns[k] / pf_n[k]));
}
#endif

/* Parts the helpers took (a caller's check below). */
static _Atomic unsigned long helper_parts;
/* A calling thread's: the helpers' parts when it last looked, its parts
 * since with none of theirs, and when it last gave way. */
static HP_TLS struct hp_give_way give_way;
#define ALONE_PARTS 2
#define GIVE_WAY_NS 2000000ull

/* A calling thread that took ALONE_PARTS parts in a row while no helper
 * took one gives its CPU way once (at most every GIVE_WAY_NS): a helper
 * woken onto the caller's CPU waits there until the scheduler's tick while
 * the other CPUs idle (a 64 MiB first copy: the caller alone for 4.4 of its
 * 5.5 ms on this 2-vCPU machine, its copy thread queued behind it); given
 * the CPU, the helper moves off it (spread.c).  A helper on another CPU
 * costs the caller one system call. */
int hp_pool_give_way(struct hp_give_way *g, int helpers, unsigned long parts,
		     uint64_t now)
{
	if (helpers == 0 || parts != g->seen) {
		g->seen = parts, g->alone = 0;
		return 0;
	}
	if (++g->alone < ALONE_PARTS)
		return 0;
	g->alone = 0;
	if (g->last && now - g->last < GIVE_WAY_NS)
		return 0;
	g->last = now;
	return 1;
}

static void caller_alone(int helpers)
{
	unsigned long h = atomic_load_explicit(&helper_parts,
					       memory_order_relaxed);
	if (hp_pool_give_way(&give_way, helpers, h, hp_now_ns()))
		sched_yield();
}

/* Under pool.mu, a part queued (pool.take < pool.head): take it and copy
 * it (caller: a calling thread), pool.mu held again after. */
static void pool_part(int caller)
{
	int helpers = pool.helpers;
	unsigned n = pool.take;
	struct job *J = &pool.q[n % JOBS];
	int i = J->next++;
	if (J->next == J->parts)
		pool.take++;
	size_t off = (size_t)i * J->part;
	size_t len = J->len - off < J->part ? J->len - off : J->part;
	size_t w = J->w, dp = J->dp, sp = J->sp;
	char *d = J->dst + (w ? off * dp : off);
	const char *sr = J->src + (w ? off * sp : off);
	int nt = J->nt;
	pthread_mutex_unlock(&pool.mu);
	if (caller)
		hp_spread_more(); /* in a staged copy (stage.c noted it) */
	else
		hp_spread();
	uint64_t t0 = HP_PROF_NOW(), c0 = HP_PROF_CPU();
	if (w == 0 && nt)
		hp_nt_copy(d, sr, len);
	else if (w == 0)
		memcpy(d, sr, len);
	for (size_t k = 0; w && nt && k < len; k++)
		hp_nt_stream(d + k * dp, sr + k * sp, w);
	if (w && nt)
		hp_nt_fence();
	for (size_t k = 0; w && !nt && k < len; k++)
		memcpy(d + k * dp, sr + k * sp, w);
	hp_prof_add(caller ? HP_PF_CALLER_COPY : HP_PF_HELPER_COPY, t0);
	hp_prof_add(HP_PF_COPY_CPU, c0);
	if (!caller)
		atomic_fetch_add_explicit(&helper_parts, 1,
					  memory_order_relaxed);
	else
		caller_alone(helpers);
	pthread_mutex_lock(&pool.mu);
	/* the job q[n] stays until the tail passes it: J is still n's */
	if (--J->left > 0)
		return;
	unsigned t = atomic_load_explicit(&pool.tail, memory_order_relaxed);
	if (t != n)
		return; /* an earlier job not done yet: it moves the tail */
	while (t != pool.take && pool.q[t % JOBS].left == 0)
		t++;
	/* release: the parts' bytes before a watcher sees the tail */
	atomic_store_explicit(&pool.tail, t, memory_order_release);
	if (pool.waiting)
		pthread_cond_broadcast(&pool.done);
}

/* Not under pool.mu: watch *v until it differs from seen (a helper: the
 * next job posted), or until it reaches seen (mark != 0: a caller, the
 * tail), for SPIN_NS at most (pool.spin: never where threads outnumber
 * CPUs).  The caller then takes pool.mu and sleeps if it must. */
static void pool_watch(const _Atomic unsigned *v, unsigned seen, int mark)
{
	if (!pool.spin)
		return;
	uint64_t t0 = hp_now_ns();
	for (unsigned k = 1;; k++) {
		/* acquire: pairs with the release of the job or the tail */
		unsigned x = atomic_load_explicit(v, memory_order_acquire);
		if (mark ? (int)(x - seen) >= 0 : x != seen)
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
	for (;;) {
		if (pool.take != atomic_load_explicit(&pool.head,
						      memory_order_relaxed)) {
			pool_part(0);
			continue;
		}
		unsigned seen = pool.take;
		pthread_mutex_unlock(&pool.mu);
		hp_spread_leave(); /* idle: a copying thread no longer */
		pool_watch(&pool.head, seen, 0);
		pthread_mutex_lock(&pool.mu);
		while (pool.take == atomic_load_explicit(&pool.head,
							 memory_order_relaxed)) {
			pool.idle++;
			pthread_cond_wait(&pool.go, &pool.mu);
			pool.idle--;
		}
		hp_prof_add(HP_PF_HANDOFF, pool.q[pool.take % JOBS].posted);
	}
	return NULL;
}

/* Once: start the helpers (hp_pool_threads() - 1; speed.c sizes them). */
static void pool_start(void)
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

void hp_pool_start(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, pool_start);
}

/* Under pool.mu: wait until every job below mark is done, taking queued
 * parts meanwhile (any job's, in order); pool.mu held after. */
static void pool_wait_locked(unsigned mark)
{
	uint64_t t0 = 0;
	while ((int)(atomic_load_explicit(&pool.tail, memory_order_acquire) -
		     mark) < 0) {
		if (pool.take != atomic_load_explicit(&pool.head,
						      memory_order_relaxed)) {
			pool_part(1);
			continue;
		}
		if (!t0)
			t0 = HP_PROF_NOW() | 1;
		pthread_mutex_unlock(&pool.mu);
		pool_watch(&pool.tail, mark, 1);
		pthread_mutex_lock(&pool.mu);
		if ((int)(atomic_load_explicit(&pool.tail,
					       memory_order_acquire) -
			  mark) < 0 &&
		    pool.take == atomic_load_explicit(&pool.head,
						      memory_order_relaxed)) {
			pool.waiting++;
			pthread_cond_wait(&pool.done, &pool.mu);
			pool.waiting--;
		}
	}
	if (t0)
		hp_prof_add(HP_PF_CALLER_IDLE, t0);
}

/* Every copy this thread posted (and those posted before) done. */
void hp_pool_wait(unsigned mark)
{
	if ((int)(atomic_load_explicit(&pool.tail, memory_order_acquire) -
		  mark) >= 0)
		return;
	pthread_mutex_lock(&pool.mu);
	pool_wait_locked(mark);
	pthread_mutex_unlock(&pool.mu);
}

int hp_pool_help(void)
{
	if (atomic_load_explicit(&pool.tail, memory_order_relaxed) ==
	    atomic_load_explicit(&pool.head, memory_order_relaxed))
		return 0;
	pthread_mutex_lock(&pool.mu);
	int did = pool.take != atomic_load_explicit(&pool.head,
						   memory_order_relaxed);
	if (did)
		pool_part(1);
	pthread_mutex_unlock(&pool.mu);
	return did;
}

int hp_pool_done(unsigned mark)
{
	return (int)(atomic_load_explicit(&pool.tail, memory_order_acquire) -
		     mark) >= 0;
}

unsigned hp_pool_mark(void)
{
	return atomic_load_explicit(&pool.head, memory_order_relaxed);
}

void hp_pool_defer(int on)
{
	deferred = on;
}

/* Under pool.mu, the job J's fields set but parts and counts: queue it
 * (a full queue: its oldest job's parts taken first), then unlock; wait
 * for it unless this thread defers its copies. */
static void pool_post(const struct job *J)
{
	unsigned h = atomic_load_explicit(&pool.head, memory_order_relaxed);
	while (h - atomic_load_explicit(&pool.tail, memory_order_relaxed) >=
	       JOBS) {
		pool_wait_locked(h - JOBS + 1);
		h = atomic_load_explicit(&pool.head, memory_order_relaxed);
	}
	struct job *q = &pool.q[h % JOBS];
	*q = *J;
	q->nt |= deferred == 1; /* into a slot (stage.c's fill) */
	q->parts = (int)((q->len + q->part - 1) / q->part);
	q->next = 0, q->left = q->parts;
	q->posted = HP_PROF_NOW();
	/* release: the job's fields before a watching helper sees it */
	atomic_store_explicit(&pool.head, h + 1, memory_order_release);
	if (pool.idle)
		pthread_cond_broadcast(&pool.go);
	if (!deferred)
		pool_wait_locked(h + 1);
	pthread_mutex_unlock(&pool.mu);
}

/* memcpy, by the copy threads together (nt: into a slot, hp_nt_copy). */
static void pcopy(void *dst, const void *src, size_t len, int nt)
{
	pthread_mutex_lock(&pool.mu);
	int parts = pool.helpers + 1;
	/* as many copies staging as copy threads, or more: each copies its
	 * own chunks (the helpers would only take turns with them) */
	if (parts == 1 || len < 2 * PART_MIN ||
	    hp_ring_copies() >= (unsigned)parts) {
		pthread_mutex_unlock(&pool.mu);
		/* in parts too, each looked at (spread.c): the kernel may put
		 * another copying thread on this CPU mid-chunk */
		for (size_t off = 0, k; off < len; off += k) {
			k = len - off < PART_MIN ? len - off : PART_MIN;
			hp_spread_more();
			if (nt || deferred == 1)
				hp_nt_stream((char *)dst + off,
					     (const char *)src + off, k);
			else
				memcpy((char *)dst + off,
				       (const char *)src + off, k);
		}
		if (nt || deferred == 1)
			hp_nt_fence();
		return;
	}
	/* parts of a quarter of a thread's share: a late thread takes fewer */
	size_t part = len / (4 * (size_t)parts);
	part = part < PART_MIN ? PART_MIN : (part + 4095) & ~(size_t)4095;
	pool_post(&(struct job){.dst = dst, .src = src, .len = len,
				.part = part, .nt = nt});
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
	if (parts == 1 || rows < 2 || rows * w < 2 * PART_MIN) {
		pthread_mutex_unlock(&pool.mu);
		for (size_t i = 0; i < rows; i++)
			if (deferred == 1)
				hp_nt_stream(dst + i * dp, src + i * sp, w);
			else
				memcpy(dst + i * dp, src + i * sp, w);
		if (deferred == 1)
			hp_nt_fence();
		return;
	}
	size_t part = (rows + 4 * (size_t)parts - 1) / (4 * (size_t)parts);
	if (part * w < PART_MIN)
		part = (PART_MIN + w - 1) / w;
	pool_post(&(struct job){.dst = dst, .src = src, .len = rows,
				.part = part, .w = w, .dp = dp, .sp = sp});
}
