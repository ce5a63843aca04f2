/* Pre-faulting: before a large range is pinned, its pages are populated by
 * a few threads in parallel (MADV_POPULATE_WRITE, which leaves contents as
 * they are), which is several times faster than letting mlock or the driver
 * fault them one by one.  The worker pool is created on first use, so only
 * processes that actually pin get threads (invariant 9). */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/mman.h>

#include "../hp.h"

/* Older glibc headers (Debian 11's 2.31) do not name it; Linux has it since
 * 5.14. */
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

#define MAX_WORKERS 63
#define PREFAULT_MIN ((size_t)8 << 20) /* below this, one thread is enough */
#define PART ((size_t)2 << 20)

static pthread_mutex_t job_mu = PTHREAD_MUTEX_INITIALIZER; /* one job */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv_work = PTHREAD_COND_INITIALIZER;
static pthread_cond_t cv_done = PTHREAD_COND_INITIALIZER;
static int nworkers;
static uint64_t job_gen;
static char *job_base;
static size_t job_len, job_parts;
static int active; /* workers inside a job; under mu */
static _Atomic size_t job_next, job_done;

static int populate(char *p, size_t n)
{
	return hp_real.madvise(p, n, MADV_POPULATE_WRITE);
}

/* Does the kernel know the advice?  An empty range at a page boundary is
 * refused with EINVAL only for advice the kernel lacks (before 5.14), and
 * touches nothing; one system call per block of 8 MiB or more, beside a
 * pin that takes milliseconds.  Without it, nothing is pre-faulted and no
 * worker is started: the backend's pin faults the pages in itself.  Writing
 * to the pages by hand instead could fault on a range that is no longer
 * writable (a tracked mapping made read-only) or race with the program's
 * writes. */
static int populate_known(void *base)
{
	char *page = (char *)((uintptr_t)base & ~(uintptr_t)(HP_PAGE_SIZE - 1));
	if (hp_real.madvise(page, 0, MADV_POPULATE_WRITE) == 0)
		return 1;
	if (errno == EINVAL)
		HP_LOG_ONCE(HP_LOG_INFO, "the kernel lacks MADV_POPULATE_WRITE "
			    "(Linux 5.14): large blocks are pinned without "
			    "pre-faulting");
	return 0;
}

/* A job as one worker saw it: copied under mu, so that the next job's
 * writes never race with a worker still finishing this one. */
struct job {
	char *base;
	size_t len, parts;
};

/* Take parts until none is left. */
static void run_parts(const struct job *j)
{
	size_t i;
	/* relaxed: only hands out part numbers */
	while ((i = atomic_fetch_add_explicit(&job_next, 1,
					       memory_order_relaxed)) < j->parts) {
		size_t off = i * PART;
		size_t n = j->len - off < PART ? j->len - off : PART;
		populate(j->base + off, n);
		/* release: pairs with the caller's acquire of job_done */
		if (atomic_fetch_add_explicit(&job_done, 1, memory_order_release) +
			1 == j->parts) {
			pthread_mutex_lock(&mu);
			pthread_cond_broadcast(&cv_done);
			pthread_mutex_unlock(&mu);
		}
	}
}

static void *worker(void *arg)
{
	(void)arg;
	hp_in_hook = 1; /* nothing this thread does is the program's */
	uint64_t seen = 0;
	pthread_mutex_lock(&mu);
	for (;;) {
		while (job_gen == seen)
			pthread_cond_wait(&cv_work, &mu);
		seen = job_gen;
		struct job j = {job_base, job_len, job_parts};
		active++;
		pthread_mutex_unlock(&mu);
		run_parts(&j);
		pthread_mutex_lock(&mu);
		if (--active == 0)
			pthread_cond_broadcast(&cv_done);
	}
	return NULL;
}

void hp_prefault(void *base, size_t len)
{
	size_t want = (size_t)hp_opt[HP_OPT_PREFAULT_THREADS];
	if (want > hp_cpu_limit()) /* no more threads than CPUs we may use */
		want = hp_cpu_limit();
	if (want <= 1 || len < PREFAULT_MIN || hp_in_child ||
	    !populate_known(base))
		return;
	hp_log(HP_LOG_DEBUG, "pre-faulting %zu bytes at %p", len, base);
	pthread_mutex_lock(&job_mu);
	pthread_mutex_lock(&mu);
	/* every signal blocked (invariant 11) */
	while ((size_t)nworkers + 1 < want && nworkers < MAX_WORKERS &&
	       hp_thread_start(worker, NULL, 64 << 10) == 0)
		nworkers++;
	/* No worker may still be reading the previous job. */
	while (active)
		pthread_cond_wait(&cv_done, &mu);
	job_base = base;
	job_len = len;
	job_parts = (len + PART - 1) / PART;
	/* relaxed: under mu, with no worker inside a job */
	atomic_store_explicit(&job_next, 0, memory_order_relaxed);
	atomic_store_explicit(&job_done, 0, memory_order_relaxed);
	job_gen++;
	pthread_cond_broadcast(&cv_work);
	pthread_mutex_unlock(&mu);
	struct job j = {base, len, (len + PART - 1) / PART};
	run_parts(&j); /* the caller works too */
	pthread_mutex_lock(&mu);
	while (atomic_load_explicit(&job_done, memory_order_acquire) < j.parts)
		pthread_cond_wait(&cv_done, &mu);
	pthread_mutex_unlock(&mu);
	pthread_mutex_unlock(&job_mu);
}

