/* fork: the child frees, reallocates and allocates inherited blocks and
 * exits cleanly; the parent's blocks are intact and still pinned.
 * "forked loader": the fork made while another thread is inside
 * dl_iterate_phdr (the loader's list lock held, as a thread of the parent
 * may hold it at any fork: tests/stress/threads hung so under TSAN); the
 * child's large malloc and mmap must not wait for that lock (hostpin asked
 * the loader whether the caller was the driver's: the child waited for
 * ever; its alarm turns that into a failure). */
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tp.h"

static atomic_int inside, leave;
static int hold_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)info, (void)size, (void)arg;
	atomic_store(&inside, 1);
	while (!atomic_load(&leave)) /* ordered by the parent, not a clock */
		sched_yield();
	return 1;
}
static void *holder(void *arg)
{
	(void)arg;
	dl_iterate_phdr(hold_cb, NULL);
	return NULL;
}
static int loader(void)
{
	pthread_t t;
	CHECK(pthread_create(&t, NULL, holder, NULL) == 0);
	while (!atomic_load(&inside))
		sched_yield();
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		alarm(5); /* a hang: killed by SIGALRM, the parent fails */
		char *x = malloc(16u << 20);
		if (!x)
			_exit(3);
		memset(x, 1, 16u << 20);
		free(x);
		char *m = mmap(NULL, 16u << 20, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m == MAP_FAILED)
			_exit(4);
		memset(m, 1, 16u << 20);
		munmap(m, 16u << 20);
		exit(0); /* the child's at-exit path too (its report) */
	}
	int st;
	CHECK(waitpid(pid, &st, 0) == pid);
	atomic_store(&leave, 1);
	CHECK(pthread_join(t, NULL) == 0);
	if (WIFSIGNALED(st))
		fprintf(stderr, "forked loader: the child died of signal %d "
			"(%s: it waited for the loader's lock)\n",
			WTERMSIG(st), WTERMSIG(st) == SIGALRM ? "hung" : "?");
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	puts("forked loader: ok");
	return 0;
}

#define N 8
#define SZ ((size_t)4 << 20)

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "loader") == 0)
		return loader();
	char *b[N];
	for (int i = 0; i < N; i++) {
		b[i] = malloc(SZ);
		tp_fill(b[i], SZ, (unsigned)i);
	}
	unsigned f0 = tp_flags(b[0]);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		for (int i = 0; i < N; i += 2)
			free(b[i]);
		for (int i = 1; i < N; i += 2) {
			if (!tp_verify(b[i], SZ, (unsigned)i))
				_exit(3);
			b[i] = realloc(b[i], 3 * SZ);
			if (!b[i] || !tp_verify(b[i], SZ, (unsigned)i))
				_exit(4);
			memset(b[i], 0, 3 * SZ);
			free(b[i]);
		}
		char *n = malloc(5 * SZ);
		memset(n, 9, 5 * SZ);
		free(n);
		exit(0); /* runs the child's at-exit path too */
	}
	int st;
	CHECK(waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	for (int i = 0; i < N; i++) {
		CHECK(tp_verify(b[i], SZ, (unsigned)i));
		CHECK(tp_flags(b[i]) == f0);
		free(b[i]);
	}
	puts("forked: ok");
	return 0;
}
