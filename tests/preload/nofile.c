/* A process at RLIMIT_NOFILE: every descriptor it may have is open (on
 * /dev/null) before its large allocations and mappings.
 *   nofile         fill the table, then allocate
 *   nofile again   fill the table, malloc 4 MiB (A), close the filling
 *                  descriptors, malloc 4 MiB (B): prints "B huge" if B's
 *                  VmFlags in /proc/self/smaps have hg (MADV_HUGEPAGE)
 * Exit 0: each malloc/calloc/mmap of 2..64 MiB succeeded, held what was
 * written, and was given back; "open at EMFILE after N" on stdout. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* B's VmFlags have hg */
static int huge(char *b)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	char line[512];
	int in = 0, hg = 0;
	while (f && fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' '))
			in = lo <= (unsigned long)b && (unsigned long)b < hi;
		else if (in && !strncmp(line, "VmFlags:", 8))
			hg = strstr(line, " hg") != NULL;
	}
	if (f)
		fclose(f);
	return hg;
}

int main(int argc, char **argv)
{
	int n = 0, first = -1, fd;
	while ((fd = open("/dev/null", O_RDONLY)) >= 0)
		if (n++ == 0)
			first = fd;
	if (errno != EMFILE)
		return perror("nofile: open"), 2;
	if (argc > 1 && !strcmp(argv[1], "again")) {
		size_t len = (size_t)4 << 20;
		char *a = malloc(len);
		if (!a)
			return 1;
		memset(a, 1, len);
		for (int i = 0; i < n; i++)
			close(first + i);
		char *b = malloc(len);
		if (!b)
			return 1;
		memset(b, 2, len);
		printf("B %s\n", huge(b) ? "huge" : "not huge");
		free(a);
		free(b);
		return 0;
	}
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
