/* A process at RLIMIT_NOFILE: every descriptor it may have is open (on
 * /dev/null) before its large allocations and mappings.
 *   nofile         fill the table, then allocate
 * Exit 0: each malloc/calloc/mmap of 2..64 MiB succeeded, held what was
 * written, and was given back; "open at EMFILE after N" on stdout. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int main(void)
{
	int n = 0;
	while (open("/dev/null", O_RDONLY) >= 0)
		n++;
	if (errno != EMFILE)
		return perror("nofile: open"), 2;
	for (int i = 0; i < 24; i++) {
		size_t len = ((size_t)2 << 20) << (i % 6);
		char *p = i % 3 == 2 ? mmap(NULL, len, PROT_READ | PROT_WRITE,
					    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
			: i % 3 ? calloc(1, len) : malloc(len);
		if (!p || p == MAP_FAILED)
			return fprintf(stderr, "nofile: allocation %d failed\n", i), 1;
		memset(p, i, len);
		for (size_t o = 0; o < len; o += 4096)
			if (p[o] != (char)i)
				return fprintf(stderr, "nofile: data lost\n"), 1;
		if (i % 3 == 2)
			munmap(p, len);
		else
			free(p);
	}
	printf("open at EMFILE after %d\n", n);
	return 0;
}
