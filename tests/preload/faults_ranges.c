/* Faults on ranges and threads (tests/preload/cases/171-faults_ranges.sh).
 * Modes:
 *   race       two threads purge their own 2 MiB parts of one tracked
 *              64 MiB mapping, 1000 times each: every call returns 0 and
 *              purged pages read zero, the rest keeps its data.
 *   race_held  (fake CUDA driver) thread A's purge of one part is held
 *              inside cuMemHostUnregister while thread B purges another
 *              part of the same mapping; B must not purge over A's
 *              registered parts (the fake flags registered pages that
 *              are discarded) and both calls return 0.
 *   locked     MADV_DONTNEED_LOCKED on part of a tracked registered
 *              mapping is a discard: the fake sees no registered page
 *              discarded; the part reads zero.
 *   fork       (fake CUDA driver) every copy-path pair lock is held when
 *              the process forks (HP_PAIR_LOCK_OFF: the offset of
 *              hostpin's pair_lock array); the child frees a registered
 *              block and exits 0 without spinning.
 * (realloc growth under faults: faults_growth.c) */
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>

#define FAULTS_NAME "faults_ranges"
#include "faults_common.h"

#ifndef MADV_DONTNEED_LOCKED
#define MADV_DONTNEED_LOCKED 24
#endif

void fake_cuda_audit(void); /* the fake driver's sync point (FAKE_CUDA_RESIDENT) */
static int on_fake; /* race under HP_CUDA: the fake driver is up */

/* The mapping: 64 MiB, or HP_MAP_MIB (a smaller one that a small
 * RLIMIT_MEMLOCK can lock whole). */
static size_t map_len = 64 * MIB;
static char *map64(void)
{
	if (getenv("HP_MAP_MIB"))
		map_len = strtoul(getenv("HP_MAP_MIB"), NULL, 10) * MIB;
	char *m = mmap(NULL, map_len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(m != MAP_FAILED);
	memset(m, 0xab, map_len);
	return m;
}

/* ---- race: two threads, their own parts, 1000 purges each ---- */
static char *M;
struct worker {
	int first; /* parts first, first+2, ... */
	int fails, errno_seen, bad_data;
};

static void *worker(void *arg)
{
	struct worker *w = arg;
	for (int it = 0; it < 1000; it++) {
		int nparts = (int)(map_len / (2 * MIB));
		int mine = (nparts - w->first + 1) / 2; /* parts of this thread */
		int part = w->first + 2 * (it % mine);
		char *p = M + (size_t)part * 2 * MIB;
		memset(p, 0x5a, 2 * MIB);
		if (madvise(p, 2 * MIB, MADV_DONTNEED) != 0) {
			w->fails++, w->errno_seen = errno;
			continue;
		}
		if (on_fake)
			fake_cuda_audit(); /* before reading faults pages in */
		if (!part_is(p, 2 * MIB, 0))
			w->bad_data++;
	}
	return NULL;
}

static void race(void)
{
	if (getenv("HP_CUDA")) {
		cuda_up();
		on_fake = 1;
	}
	M = map64();
	const char *want = getenv("HP_WANT_FLAGS");
	CHECK(tracked(M, HOSTPIN_KIND_MMAP |
			     (want ? (unsigned)strtoul(want, NULL, 0) : 0)));
	struct worker w[2] = {{0, 0, 0, 0}, {1, 0, 0, 0}};
	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		CHECK(pthread_create(&t[i], NULL, worker, &w[i]) == 0);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	for (int i = 0; i < 2; i++)
		if (w[i].fails || w[i].bad_data) {
			fprintf(stderr, "faults_ranges: thread %d: %d of 1000 "
				"madvise calls failed (errno %d), %d purged "
				"parts not zero\n", i, w[i].fails,
				w[i].errno_seen, w[i].bad_data);
			exit(1);
		}
	CHECK(munmap(M, map_len) == 0);
}

/* ---- race_held: B purges while A is held inside the unregistration ---- */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int a_inside, b_done;
static char *held_cell;
static pthread_t a_thread;

void fake_cuda_unreg_hook(void *p);
void fake_cuda_unreg_hook(void *p)
{
	if (p != held_cell || !pthread_equal(pthread_self(), a_thread))
		return;
	pthread_mutex_lock(&mu);
	held_cell = NULL; /* once */
	a_inside = 1;
	pthread_cond_broadcast(&cv);
	/* Wait for B to finish its purge.  A correct hostpin makes B wait
	 * for A instead: then this wait ends at the deadline and A goes on.
	 * The outcome never depends on the deadline: it only bounds how long
	 * a correct hostpin is given to show the race cannot happen. */
	struct timespec dl;
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += 2;
	while (!b_done &&
	       pthread_cond_timedwait(&cv, &mu, &dl) != ETIMEDOUT)
		;
	pthread_mutex_unlock(&mu);
}

static int a_rc, b_rc;
static void *thread_a(void *arg)
{
	(void)arg;
	a_rc = madvise(M + 10 * 2 * MIB, 2 * MIB, MADV_DONTNEED);
	return NULL;
}

static void *thread_b(void *arg)
{
	(void)arg;
	b_rc = madvise(M + 20 * 2 * MIB, 2 * MIB, MADV_DONTNEED);
	pthread_mutex_lock(&mu);
	b_done = 1;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	return NULL;
}

static void race_held(void)
{
	cuda_up();
	M = map64();
	CHECK(tracked(M, HOSTPIN_REGISTERED));
	/* A's cell (HOSTPIN_REGISTER_CHUNK=2M), or the whole mapping */
	held_cell = getenv("HP_WHOLE") ? M : M + 10 * 2 * MIB;
	pthread_mutex_lock(&mu);
	CHECK(pthread_create(&a_thread, NULL, thread_a, NULL) == 0);
	while (!a_inside)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
	pthread_t b;
	CHECK(pthread_create(&b, NULL, thread_b, NULL) == 0);
	pthread_join(a_thread, NULL);
	pthread_join(b, NULL);
	CHECK(a_rc == 0 && b_rc == 0);
	fake_cuda_audit();
	for (int part = 0; part < 32; part++)
		CHECK(part_is(M + (size_t)part * 2 * MIB, 2 * MIB,
			      part == 10 || part == 20 ? 0 : 0xab));
	CHECK(munmap(M, 64 * MIB) == 0);
}

/* ---- locked: MADV_DONTNEED_LOCKED is a discard ---- */
static void locked(void)
{
	/* the kernel must know it (Linux 5.18): probe an untracked page */
	char *t = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(t != MAP_FAILED);
	if (madvise(t, 4096, MADV_DONTNEED_LOCKED) != 0) {
		puts("SKIP: the kernel lacks MADV_DONTNEED_LOCKED");
		exit(77);
	}
	munmap(t, 4096);
	cuda_up();
	M = map64();
	CHECK(tracked(M, HOSTPIN_REGISTERED));
	CHECK(madvise(M + 4 * MIB, 4 * MIB, MADV_DONTNEED_LOCKED) == 0);
	fake_cuda_audit();
	CHECK(part_is(M + 4 * MIB, 4 * MIB, 0));
	CHECK(part_is(M, 4 * MIB, 0xab) && part_is(M + 8 * MIB, 56 * MIB, 0xab));
	CHECK(munmap(M, 64 * MIB) == 0);
}

/* ---- fork with the copy path's pair locks held ---- */
static int find_hostpin(struct dl_phdr_info *i, size_t sz, void *arg)
{
	(void)sz;
	if (strstr(i->dlpi_name, "libhostpin.so")) {
		*(uintptr_t *)arg = i->dlpi_addr;
		return 1;
	}
	return 0;
}

static void forked(void)
{
	const char *off = getenv("HP_PAIR_LOCK_OFF");
	CHECK(off);
	uintptr_t base = 0;
	dl_iterate_phdr(find_hostpin, &base);
	CHECK(base);
	cuda_up();
	char *blk = malloc(8 * MIB);
	CHECK(blk && tracked(blk, HOSTPIN_REGISTERED));
	memset(blk, 1, 8 * MIB);
	/* What a thread inside a copy hook holds for a few instructions:
	 * all 64 locks, so the block's is among them. */
	unsigned char *locks = (unsigned char *)(base + strtoull(off, NULL, 16));
	for (int i = 0; i < 64; i++)
		CHECK(!__atomic_test_and_set(&locks[i], __ATOMIC_ACQUIRE));
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		alarm(20); /* a child that spins dies of SIGALRM */
		free(blk);
		_exit(0);
	}
	for (int i = 0; i < 64; i++)
		__atomic_clear(&locks[i], __ATOMIC_RELEASE);
	int st;
	CHECK(waitpid(pid, &st, 0) == pid);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "faults_ranges: child %s %d\n",
			WIFSIGNALED(st) ? "killed by signal" : "exited",
			WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
		exit(1);
	}
	free(blk);
}

int main(int argc, char **argv)
{
	CHECK(argc == 2);
	const char *m = argv[1];
	if (!strcmp(m, "race"))
		race();
	else if (!strcmp(m, "race_held"))
		race_held();
	else if (!strcmp(m, "locked"))
		locked();
	else if (!strcmp(m, "fork"))
		forked();
	else
		return 2;
	printf("faults_ranges %s: ok\n", m);
	return 0;
}
