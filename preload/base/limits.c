/* Limits from where the process runs: the memory it may use (the smallest of
 * RAM and its memory cgroup's limit, v1 or v2) as the base of every percent
 * knob, and the CPUs it may use (affinity, cgroup CPU quota) as the cap on
 * pre-fault threads.  Runs inside the allocator's initialisation: raw
 * open/read into static buffers, no stdio, no allocation. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../hp.h"

#define PATH_CAP 512
/* Initialisation runs on one thread (hp_state BUSY), and the CPU limit is
 * computed under cpu_mu (hp_cpu_limit): rbuf needs no lock of its own. */
static char rbuf[64 << 10];

/* Open path read-only, under HOSTPIN_SYSFS_ROOT (test only: tests inject a
 * cgroup hierarchy, a v2 one on a v1 host) when it is set.  The options
 * are parsed by then: percent knobs, which need the memory base, are
 * parsed after the rest (hp_options_load). */
static int open_inj(const char *path)
{
	char full[PATH_CAP + 320];
	if (hp_sys_path(full, sizeof(full), path) != 0) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return open(full, O_RDONLY | O_CLOEXEC);
}

/* Read a whole small file (a cgroup file, /proc/self/cgroup), under
 * HOSTPIN_SYSFS_ROOT, into rbuf, NUL-terminated; length or -1. */
static ssize_t read_rbuf(const char *path)
{
	char full[PATH_CAP + 320];
	if (hp_sys_path(full, sizeof(full), path) != 0)
		return -1;
	return hp_read_small(full, rbuf, sizeof(rbuf));
}

/* Call fn on each line of path (NUL-terminated, its newline removed) until
 * fn returns nonzero, reading the file in pieces through rbuf: a file of
 * any length (mountinfo on a Kubernetes node holds thousands of mounts,
 * hundreds of KiB), lines split across two reads put back together.  A
 * line longer than rbuf is skipped whole.  0, or -1 if it cannot be
 * opened. */
static int each_line(const char *path, int (*fn)(char *line, void *arg),
		     void *arg)
{
	int fd = open_inj(path);
	if (fd < 0)
		return -1;
	size_t have = 0; /* bytes of a partial line at the front of rbuf */
	int skip = 0;	 /* inside an overlong line: drop up to its end */
	for (;;) {
		ssize_t r = read(fd, rbuf + have, sizeof(rbuf) - 1 - have);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			break; /* what was read counts; the rest is unknown */
		char *l = rbuf, *end = rbuf + have + (size_t)r;
		char *nl;
		while ((nl = memchr(l, '\n', (size_t)(end - l)))) {
			*nl = '\0';
			if (!skip && fn(l, arg)) {
				close(fd);
				return 0;
			}
			skip = 0;
			l = nl + 1;
		}
		if (r == 0) { /* end of file: a last line without newline */
			*end = '\0';
			if (l < end && !skip)
				fn(l, arg);
			break;
		}
		have = (size_t)(end - l);
		if (have == sizeof(rbuf) - 1)
			skip = 1, have = 0; /* no newline in a full buffer */
		else
			memmove(rbuf, l, have);
	}
	close(fd);
	return 0;
}

/* Parse an unsigned decimal at s; UINT64_MAX for "max" or garbage. */
static uint64_t num(const char *s)
{
	uint64_t v = 0;
	if (*s < '0' || *s > '9')
		return UINT64_MAX;
	for (; *s >= '0' && *s <= '9'; s++) {
		if (v > (UINT64_MAX - 9) / 10)
			return UINT64_MAX;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	return v;
}

static void copy(char *out, size_t cap, const char *s, size_t n)
{
	if (n >= cap)
		n = cap - 1;
	memcpy(out, s, n);
	out[n] = '\0';
}

/* The mount of a cgroup hierarchy in /proc/self/mountinfo: v1 with the
 * controller ctl among its super options, or v2 (ctl NULL). */
struct mnt_find {
	const char *ctl;
	char *root, *mnt; /* PATH_CAP each: the mount's root and mount point */
	int found;
};

/* One mountinfo line: id parent maj:min root mountpoint opts... - fstype
 * src super.  Nonzero (stop) once the mount is found. */
static int mnt_line(char *l, void *arg)
{
	struct mnt_find *m = arg;
	const char *ctl = m->ctl;
	char *f[5];
	char *s = l;
	int k = 0;
	for (; k < 5 && s; k++) {
		f[k] = s;
		s = strchr(s, ' ');
		if (s)
			*s++ = '\0';
	}
	char *dash = s ? strstr(s, " - ") : NULL;
	if (k < 5 || !dash)
		return 0;
	char *fs = dash + 3, *src = strchr(fs, ' ');
	char *sup = src ? strchr(src + 1, ' ') : NULL;
	if (src)
		*src = '\0';
	if (!ctl && strcmp(fs, "cgroup2") == 0) {
		m->found = 1;
	} else if (ctl && strcmp(fs, "cgroup") == 0 && sup) {
		size_t cl = strlen(ctl);
		for (char *o = sup + 1; *o;) {
			char *e = strchr(o, ',');
			size_t ol = e ? (size_t)(e - o) : strlen(o);
			if (ol == cl && memcmp(o, ctl, cl) == 0)
				m->found = 1;
			if (!e)
				break;
			o = e + 1;
		}
	}
	if (m->found) {
		copy(m->root, PATH_CAP, f[3], strlen(f[3]));
		copy(m->mnt, PATH_CAP, f[4], strlen(f[4]));
	}
	return m->found;
}

/* The directory of this process's cgroup for a v1 controller (ctl set), or
 * the v2 one (ctl NULL): the mount point from /proc/self/mountinfo joined
 * with the path from /proc/self/cgroup, made relative to the mount's root
 * (inside a container the mount's root is the cgroup itself).  0 or ENOENT. */
static int cg_dir(const char *ctl, char *out, size_t cap, size_t *mntlen)
{
	char rel[PATH_CAP], mnt[PATH_CAP], root[PATH_CAP];
	if (read_rbuf("/proc/self/cgroup") <= 0)
		return ENOENT;
	int found = 0;
	for (char *l = rbuf; *l && !found;) {
		char *nl = strchr(l, '\n');
		size_t len = nl ? (size_t)(nl - l) : strlen(l);
		/* ID:controllers:path */
		char *c1 = memchr(l, ':', len);
		char *c2 = c1 ? memchr(c1 + 1, ':', len - (size_t)(c1 + 1 - l)) : NULL;
		if (c2) {
			const char *p = c2 + 1;
			size_t plen = len - (size_t)(p - l);
			if (!ctl) {
				if (c2 == c1 + 1 && l[0] == '0' && c1 == l + 1)
					found = 1;
			} else {
				/* the controllers field is a comma list */
				size_t cl = strlen(ctl);
				for (char *f = c1 + 1; f < c2;) {
					char *e = memchr(f, ',', (size_t)(c2 - f));
					if (!e)
						e = c2;
					if ((size_t)(e - f) == cl &&
					    memcmp(f, ctl, cl) == 0)
						found = 1;
					f = e + 1;
				}
			}
			if (found)
				copy(rel, sizeof(rel), p, plen);
		}
		l = nl ? nl + 1 : l + len;
	}
	struct mnt_find m = {ctl, root, mnt, 0};
	if (!found || each_line("/proc/self/mountinfo", mnt_line, &m) ||
	    !m.found)
		return ENOENT;
	const char *r = rel;
	size_t rl = strlen(root);
	if (strcmp(root, "/") != 0 && strncmp(rel, root, rl) == 0 &&
	    (rel[rl] == '/' || rel[rl] == '\0'))
		r = rel + rl;
	if (strcmp(r, "/") == 0)
		r = "";
	if (hp_snprintf(out, cap, "%s%s", mnt, r) >= (int)cap)
		return ENOENT;
	if (mntlen)
		*mntlen = strlen(mnt);
	return 0;
}

/* The value of the first line of path, or UINT64_MAX. */
static uint64_t read_num(const char *path)
{
	if (read_rbuf(path) <= 0)
		return UINT64_MAX;
	return num(rbuf);
}

/* ---- memory ---- */
static uint64_t mem_base, mem_ram;
static char mem_why[PATH_CAP + 64];

static void consider(uint64_t v, const char *what, const char *path)
{
	if (v == UINT64_MAX || v == 0 || v >= mem_base)
		return;
	mem_base = v;
	hp_snprintf(mem_why, sizeof(mem_why), "%s %s", what, path);
}

static void compute_mem(void)
{
	long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
	mem_ram = pages > 0 && psz > 0 ? (uint64_t)pages * (uint64_t)psz : 0;
	mem_base = mem_ram ? mem_ram : UINT64_MAX;
	hp_snprintf(mem_why, sizeof(mem_why), "RAM, no lower cgroup limit");
	char dir[PATH_CAP], path[PATH_CAP + 32];
	size_t mlen;
	if (cg_dir(NULL, dir, sizeof(dir), &mlen) == 0) {
		/* v2: every level's memory.max, up to the mount point (the
		 * root cgroup has none), bounds the process */
		for (;;) {
			hp_snprintf(path, sizeof(path), "%s/memory.max", dir);
			consider(read_num(path), "cgroup v2", path);
			char *end = strrchr(dir, '/');
			if (!end || (size_t)(end - dir) < mlen)
				break;
			*end = '\0';
		}
	}
	if (cg_dir("memory", dir, sizeof(dir), NULL) == 0) {
		hp_snprintf(path, sizeof(path), "%s/memory.limit_in_bytes", dir);
		consider(read_num(path), "cgroup v1", path);
		hp_snprintf(path, sizeof(path), "%s/memory.stat", dir);
		if (read_rbuf(path) > 0) {
			const char *k = strstr(rbuf, "hierarchical_memory_limit ");
			if (k)
				consider(num(k + 26), "cgroup v1 (hierarchical_memory_limit)",
					 path);
		}
	}
	if (mem_base == UINT64_MAX)
		mem_base = 0;
}

uint64_t hp_mem_base(void)
{
	/* Computed once: the first call is during initialisation, on one
	 * thread. */
	if (!mem_why[0])
		compute_mem();
	return mem_base;
}

const char *hp_mem_base_why(void)
{
	hp_mem_base();
	return mem_why;
}

/* ---- CPUs ---- */
static _Atomic unsigned cpu_cached;
static pthread_mutex_t cpu_mu = PTHREAD_MUTEX_INITIALIZER;
static unsigned cpu_compute(void);

unsigned hp_cpu_limit(void)
{
	/* acquire: pairs with the release below, after the count was made */
	unsigned n = atomic_load_explicit(&cpu_cached, memory_order_acquire);
	if (n)
		return n;
	/* Threads pinning at once (the first large blocks) would share the
	 * static read buffer: one computes, the others wait for it. */
	pthread_mutex_lock(&cpu_mu);
	n = atomic_load_explicit(&cpu_cached, memory_order_relaxed);
	if (!n) {
		n = cpu_compute();
		atomic_store_explicit(&cpu_cached, n, memory_order_release);
	}
	pthread_mutex_unlock(&cpu_mu);
	return n;
}

static unsigned cpu_compute(void)
{
	cpu_set_t set;
	unsigned n = 0;
	if (sched_getaffinity(0, sizeof(set), &set) == 0)
		n = (unsigned)CPU_COUNT(&set);
	if (!n) {
		long c = sysconf(_SC_NPROCESSORS_ONLN);
		n = c > 0 ? (unsigned)c : 1;
	}
	char dir[PATH_CAP], path[PATH_CAP + 32];
	uint64_t quota = UINT64_MAX, period = 0;
	if (cg_dir(NULL, dir, sizeof(dir), NULL) == 0) {
		hp_snprintf(path, sizeof(path), "%s/cpu.max", dir);
		if (read_rbuf(path) > 0) { /* "quota period" or "max period" */
			quota = num(rbuf);
			const char *sp = strchr(rbuf, ' ');
			period = sp ? num(sp + 1) : 0;
		}
	}
	if (quota == UINT64_MAX && cg_dir("cpu", dir, sizeof(dir), NULL) == 0) {
		hp_snprintf(path, sizeof(path), "%s/cpu.cfs_quota_us", dir);
		quota = read_num(path); /* -1: no quota, parsed as max */
		hp_snprintf(path, sizeof(path), "%s/cpu.cfs_period_us", dir);
		period = read_num(path);
	}
	if (quota != UINT64_MAX && period && period != UINT64_MAX) {
		uint64_t q = (quota + period - 1) / period;
		if (q && q < n)
			n = (unsigned)q;
	}
	return n;
}

void hp_limits_log(void)
{
	if (hp_log_level < HP_LOG_INFO)
		return; /* the CPU limit is read when pre-faulting needs it */
	uint64_t b = hp_mem_base();
	hp_log(HP_LOG_INFO,
	       "memory base %llu.%llu GiB: %s (RAM %llu.%llu GiB); CPUs %u",
	       (unsigned long long)(b >> 30),
	       (unsigned long long)((b & ((1ull << 30) - 1)) * 10 >> 30),
	       mem_why, (unsigned long long)(mem_ram >> 30),
	       (unsigned long long)((mem_ram & ((1ull << 30) - 1)) * 10 >> 30),
	       hp_cpu_limit());
}

/* The kernel's transparent huge page mode, read once (a fact of where the
 * process runs, like the limits above; not cached when reading failed for
 * want of a descriptor or memory). */
int hp_thp_ok(void)
{
	static _Atomic int mode; /* 0 unread, 1 usable, -1 never; relaxed */
	int m = atomic_load_explicit(&mode, memory_order_relaxed);
	if (m == 0) {
		char path[300], buf[128];
		m = -1;
		int got = -1;
		if (hp_sys_path(path, sizeof(path),
				"/sys/kernel/mm/transparent_hugepage/enabled") ==
			0) {
			got = hp_read_small(path, buf, sizeof(buf));
			if (got < 0 && (errno == EMFILE || errno == ENFILE ||
					 errno == ENOMEM))
				return 0; /* not cached: ask again */
		}
		if (got > 0 &&
		    (strstr(buf, "[always]") || strstr(buf, "[madvise]")))
			m = 1;
		atomic_store_explicit(&mode, m, memory_order_relaxed);
	}
	return m > 0 && hp_opt[HP_OPT_HUGEPAGES];
}
