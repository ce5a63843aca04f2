/* fork: the child frees, reallocates and allocates inherited blocks and
 * exits cleanly; the parent's blocks are intact and still pinned. */
#include <sys/wait.h>
#include <unistd.h>

#include "tp.h"

#define N 8
#define SZ ((size_t)4 << 20)

int main(void)
{
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
