/* Allocate, use and free a number of large blocks; with the mlock backend
 * under a small RLIMIT_MEMLOCK, pinning fails, the data is still right.
 *   pinmany [N [PROG ARGS...]]   then exec PROG (a wrapper that pinned) */
#include "tp.h"

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 16;
	size_t sz = (size_t)4 << 20;
	char **b = malloc(sizeof(char *) * (size_t)n);
	for (int i = 0; i < n; i++) {
		b[i] = malloc(sz);
		CHECK(b[i]);
		tp_fill(b[i], sz, (unsigned)i);
	}
	for (int i = 0; i < n; i++) {
		CHECK(tp_verify(b[i], sz, (unsigned)i));
		free(b[i]);
	}
	free(b);
	puts("pinmany: ok");
	if (argc > 2) {
		fflush(stdout);
		execv(argv[2], argv + 2);
		perror(argv[2]);
		return 127;
	}
	return 0;
}
