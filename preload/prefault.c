/* Pre-faulting: before a large range is pinned, its pages are populated by
 * a few threads in parallel (MADV_POPULATE_WRITE, which leaves contents as
 * they are), which is several times faster than letting mlock or the driver
 * fault them one by one.  The worker pool is created on first use, so only
 * processes that actually pin get threads (invariant 9). */
#include <pthread.h>
#include <stdatomic.h>
#include <sys/mman.h>

#include "hp.h"

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
	if (want <= 1 || len < PREFAULT_MIN || hp_in_child)
		return;
	pthread_mutex_lock(&job_mu);
	pthread_mutex_lock(&mu);
	while ((size_t)nworkers + 1 < want && nworkers < MAX_WORKERS) {
		pthread_t t;
		pthread_attr_t a;
		pthread_attr_init(&a);
		pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
		pthread_attr_setstacksize(&a, 64 << 10);
		int e = pthread_create(&t, &a, worker, NULL);
		pthread_attr_destroy(&a);
		if (e)
			break;
		nworkers++;
	}
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

