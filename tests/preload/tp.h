/* Helpers for the programs run under LD_PRELOAD. */
#ifndef TP_H
#define TP_H
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../preload/hostpin.h"

#define CHECK(c)                                                              \
	do {                                                                  \
		if (!(c)) {                                                   \
			fprintf(stderr, "%s:%d: check failed: %s\n",          \
				__FILE__, __LINE__, #c);                      \
			exit(1);                                              \
		}                                                             \
	} while (0)

/* The query API when hostpin is preloaded, else NULL. */
static inline int (*tp_query(void))(const void *, struct hostpin_range *)
{
	return (int (*)(const void *, struct hostpin_range *))dlsym(
	    RTLD_DEFAULT, "hostpin_query");
}

/* flags of the range holding p, or 0 if hostpin does not track it. */
static inline unsigned tp_flags(const void *p)
{
	int (*q)(const void *, struct hostpin_range *) = tp_query();
	struct hostpin_range r;
	return q && q(p, &r) ? r.flags : 0;
}

static inline int tp_stats(struct hostpin_stats *s)
{
	int (*f)(struct hostpin_stats *, size_t) =
	    (int (*)(struct hostpin_stats *, size_t))dlsym(RTLD_DEFAULT,
							   "hostpin_stats");
	memset(s, 0, sizeof(*s));
	return f ? f(s, sizeof(*s)) : -1;
}

/* From /proc/self/smaps: 1 if every mapping overlapping [p, p+len) is
 * locked (VmFlags "lo": mlock, or mlock2's lock-on-fault, under which only
 * touched pages count as Locked), 0 if none is, -1 if mixed or not found.
 * Whole mappings, since the kernel merges neighbours. */
static inline int tp_locked(const void *p, size_t len)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	char line[512];
	unsigned long a = (unsigned long)p, b = a + len, lo = 0, hi = 0;
	int in = 0, full = 0, none = 0;
	while (f && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 &&
		    strchr(line, '-') < strchr(line, ' '))
			in = lo < b && hi > a;
		else if (in && strncmp(line, "VmFlags:", 8) == 0) {
			int l = strstr(line, " lo") != NULL;
			full += l;
			none += !l;
			in = 0;
		}
	}
	if (f)
		fclose(f);
	if (full && !none)
		return 1;
	if (none && !full)
		return 0;
	return -1;
}

/* For a process that links a device library but never initialises it:
 * large blocks stay pending, and hostpin must make no device call (the
 * runner reads the fake driver's log). */
static inline void tp_pending_only(int hp)
{
	for (int i = 0; i < 4; i++) {
		char *volatile p = malloc((size_t)8 << 20);
		p[0] = 1;
		if (hp && !(tp_flags(p) & HOSTPIN_PENDING)) {
			fprintf(stderr, "block not pending before init\n");
			exit(1);
		}
		free(p);
	}
}

static inline void tp_fill(void *p, size_t n, unsigned seed)
{
	unsigned char *c = p;
	for (size_t i = 0; i < n; i += 61)
		c[i] = (unsigned char)(seed + i / 61);
}

static inline int tp_verify(const void *p, size_t n, unsigned seed)
{
	const unsigned char *c = p;
	for (size_t i = 0; i < n; i += 61)
		if (c[i] != (unsigned char)(seed + i / 61))
			return 0;
	return 1;
}
/* [r, r + 16 MiB), r returned: the top 12 MiB an mmap hostpin tracks and
 * registers (the lowest block: nothing else is large), checked if hostpin
 * is active (hp); the bottom 4 MiB plain memory mapped behind hostpin's
 * back (the raw syscall).  All of it written. */
static inline char *tp_below_and_block(int hp)
{
	const size_t mb = (size_t)1 << 20;
	char *r = (void *)syscall(SYS_mmap, NULL, 16 * mb, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(r != MAP_FAILED);
	char *m = mmap(r + 4 * mb, 12 * mb, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	CHECK(m == r + 4 * mb);
	memset(r, 1, 16 * mb);
	if (hp)
		CHECK(tp_flags(m) & HOSTPIN_REGISTERED);
	return r;
}

/* n bytes mapped anonymous, written with v, registered if hostpin is
 * active (hp). */
static inline char *tp_map_filled(size_t n, int v, int hp)
{
	char *m = mmap(NULL, n, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(m != MAP_FAILED);
	memset(m, v, n);
	if (hp)
		CHECK(tp_flags(m) & HOSTPIN_REGISTERED);
	return m;
}

/* Every page of [p, p+n) is mapped. */
static inline int tp_mapped(const void *p, size_t n)
{
	unsigned char v[1];
	for (size_t off = 0; off < n; off += 4096)
		if (mincore((char *)p + off, 4096, v) != 0)
			return 0;
	return 1;
}

/* The plug-in modes of cuda_prog and ze_prog (-DAS_PLUGIN, run by
 * plughost), once the device is up.  tp_plug_keep: two 4 MiB blocks that
 * outlive the plug-in, block i filled with seed i, registered if hostpin is
 * active (hp).  tp_plug_kept: loaded again, the second is registered again
 * (hp) and intact. */
static inline void tp_plug_keep(void **kept, int hp)
{
	const size_t mb = (size_t)1 << 20;
	for (int i = 0; i < 2; i++) {
		kept[i] = malloc(4 * mb);
		tp_fill(kept[i], 4 * mb, (unsigned)i);
		if (hp)
			CHECK(tp_flags(kept[i]) & HOSTPIN_REGISTERED);
	}
}

static inline void tp_plug_kept(void **kept, int hp)
{
	if (hp)
		CHECK(tp_flags(kept[1]) & HOSTPIN_REGISTERED);
	CHECK(tp_verify(kept[1], (size_t)4 << 20, 1));
}
/* After the device is initialised: a forked child frees, reallocates and
 * allocates inherited blocks and exits (the runner checks the fake driver
 * saw no call from it); the parent's blocks are intact, and still
 * registered if hostpin is active (hp). */
static inline void tp_fork_check(int hp)
{
	const size_t mb = (size_t)1 << 20;
	char *b[4];
	for (int i = 0; i < 4; i++) {
		b[i] = malloc(4 * mb);
		tp_fill(b[i], 4 * mb, (unsigned)i);
	}
	fflush(stdout);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		printf("child %d\n", (int)getpid());
		free(b[0]);
		b[1] = realloc(b[1], 12 * mb);
		char *n = malloc(6 * mb);
		memset(n, 3, 6 * mb);
		free(n);
		free(b[1]);
		exit(tp_verify(b[2], 4 * mb, 2) ? 0 : 5);
	}
	int st;
	CHECK(waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	for (int i = 0; i < 4; i++) {
		CHECK(tp_verify(b[i], 4 * mb, (unsigned)i));
		if (hp)
			CHECK(tp_flags(b[i]) & HOSTPIN_REGISTERED);
		free(b[i]);
	}
}

#endif
