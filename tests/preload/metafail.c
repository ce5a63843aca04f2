/* Large allocations and mappings while the address space is nearly
 * exhausted: RLIMIT_AS (what `prlimit --as` and VM limits set) a little
 * above what the process maps now, so that a block's own mapping may fit
 * but hostpin's metadata for it (a 2 MiB registry node chunk, the 64 KiB
 * record pool, the pieces a partial munmap leaves) may not.
 *   metafail SLACK_KIB   the limit set here, SLACK_KIB above VmSize
 *   metafail -           no limit set here (prlimit set one)
 * Every malloc, calloc, posix_memalign and mmap either succeeds (the
 * memory holds what is written, calloc's is zero, free and munmap work,
 * the pieces of a partly unmapped mapping keep their data) or fails with
 * ENOMEM.  Exit 0 and a line "got N of M"; 1 on a wrong result. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>

static unsigned long vm_kib(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	unsigned long v = 0;
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "VmSize: %lu", &v) == 1)
			break;
	if (f)
		fclose(f);
	return v;
}

#define MIB ((size_t)1 << 20)
#define N 96
static char *p[N];
static size_t plen[N];
static int pmap[N]; /* 1: an mmap, 2: an mmap with a hole unmapped */

static int fail(const char *what, int i)
{
	fprintf(stderr, "metafail: %s (op %d, errno %d)\n", what, i, errno);
	return 1;
}

static int check(int i)
{
	size_t pg = 4096;
	for (size_t o = 0; o < plen[i]; o += pg) {
		if (pmap[i] == 2 && o >= pg && o < 3 * pg)
			continue; /* the hole */
		if (p[i][o] != (char)(i + 1))
			return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	int limit = strcmp(argv[1], "-") != 0;
	unsigned long slack = strtoul(argv[1], NULL, 10);
	char *warm = malloc(100); /* stdio and the small arenas exist first */
	printf("start\n");
	fflush(stdout);
	struct rlimit rl;
	getrlimit(RLIMIT_AS, &rl);
	rl.rlim_cur = (vm_kib() + slack) << 10;
	if (limit && setrlimit(RLIMIT_AS, &rl))
		return perror("setrlimit"), 2;
	int got = 0;
	for (int i = 0; i < N; i++) {
		size_t len = MIB + (size_t)(i % 3) * MIB;
		errno = 0;
		switch (i % 4) {
		case 0:
			p[i] = malloc(len);
			break;
		case 1:
			p[i] = calloc(1, len);
			if (p[i])
				for (size_t o = 0; o < len; o += 512)
					if (p[i][o])
						return fail("calloc memory not zero", i);
			break;
		case 2:
			if ((errno = posix_memalign((void **)&p[i], 2 * MIB, len)))
				p[i] = NULL;
			else if ((uintptr_t)p[i] % (2 * MIB))
				return fail("posix_memalign misaligned", i);
			break;
		case 3:
			len += 2 * MIB; /* at HOSTPIN_MMAP_MIN or above */
			p[i] = mmap(NULL, len, PROT_READ | PROT_WRITE,
				    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			if (p[i] == MAP_FAILED)
				p[i] = NULL;
			else
				pmap[i] = 1;
			break;
		}
		if (!p[i]) {
			if (errno != ENOMEM)
				return fail("failed, not with ENOMEM", i);
			continue;
		}
		plen[i] = len;
		memset(p[i], i + 1, len);
		got++;
		if (pmap[i] && munmap(p[i] + 4096, 8192) == 0)
			pmap[i] = 2; /* two pieces now, both to keep */
		if (i % 5 == 4) { /* some go back, their space reused */
			if (check(i - 1))
				return fail("data lost", i - 1);
			if (pmap[i - 1] && munmap(p[i - 1], plen[i - 1]))
				return fail("munmap", i - 1);
			if (p[i - 1] && !pmap[i - 1])
				free(p[i - 1]);
			p[i - 1] = NULL;
		}
	}
	for (int i = 0; i < N; i++) {
		if (!p[i])
			continue;
		if (check(i))
			return fail("data lost", i);
		if (pmap[i] ? munmap(p[i], plen[i]) : (free(p[i]), 0))
			return fail("munmap", i);
	}
	free(warm);
	printf("got %d of %d\n", got, N);
	return 0;
}
