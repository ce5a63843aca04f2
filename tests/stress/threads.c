/* 8 threads, mixed small and large sizes, realloc chains, content checked
 * on every block; meanwhile one more thread maps, partly unmaps, remaps and
 * discards application mappings (content checked) and forks children that
 * exec /bin/true or allocate and exit.  Runs plain and under LD_PRELOAD. */
#include <pthread.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

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

static _Atomic int stop;

static void *mapper(void *arg)
{
	(void)arg;
	uint64_t s = 4242;
	const size_t mb = (size_t)1 << 20;
	for (int r = 0; !stop; r++) {
		size_t n = (2 + rng(&s) % 14) * mb;
		char *p = mmap(NULL, n, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		CHECK(p != MAP_FAILED);
		tp_fill(p, n, (unsigned)r);
		switch (r % 4) {
		case 0: /* drop the middle, keep the ends, unmap each end */
			CHECK(munmap(p + mb, mb) == 0);
			CHECK(tp_verify(p, mb, (unsigned)r));
			for (size_t i = (2 * mb + 60) / 61 * 61; i < n; i += 61)
				CHECK(p[i] == (char)((unsigned)r + i / 61));
			/* Not munmap(p, n): by now another thread's mapping
			 * may live in the hole, and that call would unmap it
			 * too (with or without hostpin). */
			munmap(p, mb);
			munmap(p + 2 * mb, n - 2 * mb);
			break;
		case 1: { /* grow, maybe moving */
			char *q = mremap(p, n, 2 * n, MREMAP_MAYMOVE);
			CHECK(q != MAP_FAILED && tp_verify(q, n, (unsigned)r));
			munmap(q, 2 * n);
			break;
		}
		case 2: /* discard, read zeros, unmap */
			CHECK(madvise(p, n, MADV_DONTNEED) == 0);
			CHECK(p[0] == 0 && p[n - 1] == 0);
			munmap(p, n);
			break;
		default: { /* fork: exec, or allocate and exit */
			pid_t pid = fork();
			CHECK(pid >= 0);
			if (pid == 0) {
				if (r & 4)
					execl("/bin/true", "true", (char *)NULL);
				char *x = malloc(6 * mb);
				memset(x, 1, 6 * mb);
				free(x);
				_exit(tp_verify(p, n, (unsigned)r) ? 0 : 3);
			}
			int st;
			CHECK(waitpid(pid, &st, 0) == pid);
			CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
			CHECK(tp_verify(p, n, (unsigned)r));
			munmap(p, n);
		}
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc > 1)
		rounds = atol(argv[1]);
	pthread_t t[THREADS], m;
	CHECK(pthread_create(&m, NULL, mapper, NULL) == 0);
	for (intptr_t i = 0; i < THREADS; i++)
		CHECK(pthread_create(&t[i], NULL, worker, (void *)i) == 0);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	stop = 1;
	pthread_join(m, NULL);
	puts("threads: ok");
	return 0;
}
