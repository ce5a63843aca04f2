/* hostpin-status: the reading side of the node-wide ledger (ledger.h).
 *   hostpin-status [--all] [--watch [SECONDS] [--count N]]
 *                                               one line per hostpin process
 *   hostpin-status --total COUNTER               a counter summed over the
 *                                                live processes (for tests)
 *   hostpin-status --report JOB                  the merged report of the
 *                                                processes of launcher JOB;
 *                                                their slots are freed
 *   hostpin-status --run PRELOAD -- CMD...       the launcher's --stats: run
 *                                                CMD (run.c), then report
 * HOSTPIN_LEDGER names the ledger file, as for the library. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../preload/ledger.h"
#include "run.h"

/* ledger.h's helper formats with the library's hp_snprintf. */
int hp_snprintf(char *buf, size_t cap, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, cap, fmt, ap);
	va_end(ap);
	return n;
}

static uint64_t myns; /* our PID namespace; 0: unknown */
static int proc_ok;   /* /proc is our namespace's */

/* The ledger, checked as the library checks it (ledger.h): the default
 * one in a directory of ours, or HOSTPIN_LEDGER; a file of ours, mode
 * 0600, whole, with hostpin's header.  Nothing is ever created. */
static struct hp_ledger *open_ledger(int rw)
{
	char path[340], dir[300];
	const char *p = getenv("HOSTPIN_LEDGER");
	if (p && strcmp(p, "off") == 0)
		return NULL;
	myns = hp_pidns(&proc_ok);
	int dirfd = AT_FDCWD;
	const char *name = p;
	if (!p || !*p) {
		long taken;
		dirfd = hp_ledger_dir(dir, sizeof(dir), 0, &taken);
		if (dirfd < 0)
			return NULL; /* no hostpin process ever ran */
		snprintf(path, sizeof(path), "%s/" HP_LEDGER_NAME_FMT, dir,
			 HP_LEDGER_VERSION, sizeof(struct hp_lslot));
		name = path + strlen(dir) + 1;
	} else
		snprintf(path, sizeof(path), "%s", p);
	int fd = hp_ledger_open_checked(dirfd, name, rw);
	if (fd < 0 && rw && errno == EACCES)
		fd = hp_ledger_open_checked(dirfd, name, 0), rw = 0;
	int err = errno;
	if (dirfd != AT_FDCWD)
		close(dirfd);
	if (fd < 0) {
		if (err == EEXIST)
			fprintf(stderr, "hostpin status: %s is not a ledger of "
				"this user's made by hostpin (owner, mode 0600, "
				"size); not read\n", path);
		return NULL; /* no hostpin process ever ran: nothing to show */
	}
	void *m = mmap(NULL, sizeof(struct hp_ledger),
		       PROT_READ | (rw ? PROT_WRITE : 0), MAP_SHARED, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return NULL;
	struct hp_ledger *l = m;
	if (atomic_load(&l->layout) != HP_LEDGER_LAYOUT ||
	    l->version != HP_LEDGER_VERSION ||
	    l->size != sizeof(struct hp_ledger)) {
		fprintf(stderr, "hostpin status: %s has another layout (another "
			"hostpin version)\n", path);
		exit(1);
	}
	return l;
}

/* The command line of a slot, printable: every byte outside printable
 * ASCII (escape sequences, control characters, the rest) as \xHH, and a
 * backslash as \\, so nothing in the file reaches a terminal raw. */
static const char *printable(const struct hp_lslot *s, char *out, size_t cap)
{
	size_t o = 0;
	for (size_t i = 0; i < HP_LEDGER_CMD && s->cmd[i] && o + 5 < cap; i++) {
		unsigned char c = (unsigned char)s->cmd[i];
		if (c == '\\')
			out[o++] = '\\', out[o++] = '\\';
		else if (c >= 0x20 && c < 0x7f)
			out[o++] = (char)c;
		else
			o += (size_t)snprintf(out + o, cap - o, "\\x%02x", c);
	}
	out[o] = '\0';
	return out;
}

#define C(s, f) atomic_load_explicit(&(s)->ctr.f, memory_order_relaxed)

static int did_something(struct hp_lslot *s)
{
	return C(s, pin_calls) || C(s, copies_seen) || C(s, bytes_peak) ||
	       C(s, fail_count) || C(s, over_cap) || C(s, mmap_ranges_now);
}

/* LIVE slots whose process is surely gone become DEAD (when we may
 * write); a slot of another PID namespace, or whose process cannot be
 * looked at, stays LIVE (ledger.h).  The state, and the state word in
 * *wp for a later change (its generation: a slot reclaimed since is left
 * be). */
static uint32_t state_word(struct hp_lslot *s, int rw, uint32_t *wp)
{
	uint32_t w = atomic_load_explicit(&s->state, memory_order_acquire);
	if (HP_LS_ST(w) == HP_LS_LIVE &&
	    hp_slot_gone(s->pid, s->start, s->pidns, myns, !proc_ok)) {
		uint32_t d = HP_LS_TO(w, HP_LS_DEAD);
		if (rw && !atomic_compare_exchange_strong(&s->state, &w, d))
			return *wp = w, HP_LS_ST(w);
		w = d;
	}
	*wp = w;
	return HP_LS_ST(w);
}
static uint32_t state_of(struct hp_lslot *s, int rw)
{
	uint32_t w;
	return state_word(s, rw, &w);
}

static const char *human(uint64_t b, char *buf)
{
	const char *u = "KMGTP";
	if (b < 1024) {
		sprintf(buf, "%lluB", (unsigned long long)b);
		return buf;
	}
	double v = (double)b / 1024;
	int i = 0;
	while (v >= 1024 && i < 4)
		v /= 1024, i++;
	sprintf(buf, "%.1f%c", v, u[i]);
	return buf;
}

static void table(struct hp_ledger *l, int rw, int all)
{
	char a[16], b[16], c[16];
	printf("%7s %5s %8s %8s %8s %6s %5s %8s  %s\n", "PID", "RANK", "LIVE",
	       "PINNED", "CACHED", "REGS", "FAILS", "COPIES", "COMMAND");
	uint32_t hw = atomic_load(&l->hiwater);
	int n = 0;
	uint64_t tl = 0, tp = 0, tc = 0;
	for (uint32_t i = 0; i < hw && i < HP_LEDGER_SLOTS; i++) {
		struct hp_lslot *s = &l->slot[i];
		if (state_of(s, rw) != HP_LS_LIVE || (!all && !did_something(s)))
			continue;
		char rank[16] = "-";
		if (s->rank >= 0)
			snprintf(rank, sizeof(rank), "%d", s->rank);
		else if (s->local_rank >= 0)
			snprintf(rank, sizeof(rank), "L%d", s->local_rank);
		char cmd[4 * HP_LEDGER_CMD + 8];
		printable(s, cmd, sizeof(cmd));
		printf("%7d %5s %8s %8s %8s %6llu %5llu %8llu  %.60s\n", s->pid,
		       rank, human(C(s, bytes_now), a),
		       human(C(s, pinned_bytes_now), b),
		       human(C(s, cached_bytes), c),
		       (unsigned long long)C(s, pin_calls),
		       (unsigned long long)C(s, fail_count),
		       (unsigned long long)C(s, copies_registered), cmd);
		tl += C(s, bytes_now), tp += C(s, pinned_bytes_now),
		    tc += C(s, cached_bytes);
		n++;
	}
	printf("%d process%s; live %s, pinned %s, cached %s\n", n,
	       n == 1 ? "" : "es", human(tl, a), human(tp, b), human(tc, c));
}

static uint64_t total(struct hp_ledger *l, const char *name)
{
	static const struct { const char *n; size_t off; } f[] = {
#define F(x) {#x, offsetof(struct hp_counters, x)},
		F(bytes_now) F(pinned_bytes_now) F(cached_bytes)
		F(cached_blocks) F(pin_calls) F(copies_registered)
#undef F
	};
	for (size_t k = 0; k < sizeof(f) / sizeof(f[0]); k++) {
		if (strcmp(f[k].n, name))
			continue;
		uint64_t t = 0;
		uint32_t hw = atomic_load(&l->hiwater);
		for (uint32_t i = 0; i < hw && i < HP_LEDGER_SLOTS; i++)
			if (state_of(&l->slot[i], 1) == HP_LS_LIVE)
				t += atomic_load((_Atomic uint64_t *)((char *)&l->slot[i].ctr + f[k].off));
		return t;
	}
	fprintf(stderr, "hostpin status: unknown counter '%s'\n", name);
	exit(2);
}

/* The merged report of launcher job's processes: one report, every
 * process that did something (whatever way it ended) counted once. */
static int report(struct hp_ledger *l, int job)
{
	uint64_t js = hp_proc_start(job);
	if (js == HP_START_UNKNOWN) {
		fprintf(stderr, "hostpin: job report: cannot read /proc/%d/stat\n",
			job);
		return 0;
	}
	struct hp_counters t;
	memset(&t, 0, sizeof(t));
	int n = 0, idle = 0, running = 0;
	uint64_t peak_sum = 0;
	uint32_t hw = atomic_load(&l->hiwater);
	char a[16], b[16], c[16];
	FILE *o = stderr;
	for (int pass = 0; pass < 2; pass++)
	for (uint32_t i = 0; i < hw && i < HP_LEDGER_SLOTS; i++) {
		struct hp_lslot *s = &l->slot[i];
		uint32_t w, st = state_word(s, 1, &w);
		if ((st != HP_LS_LIVE && st != HP_LS_DEAD) || s->job_pid != job ||
		    s->job_start != js)
			continue;
		if (!did_something(s)) {
			if (pass == 1 && st == HP_LS_DEAD) {
				atomic_compare_exchange_strong(
				    &s->state, &w, HP_LS_TO(w, HP_LS_FREE));
				idle++;
			}
			continue;
		}
		if (pass == 0) {
#define ADD(f) t.f += C(s, f);
			ADD(pin_calls) ADD(unpin_calls) ADD(pin_ns) ADD(fail_count)
			ADD(over_cap) ADD(adopted_blocks) ADD(leaked_blocks)
			ADD(copies_seen) ADD(copies_registered)
			ADD(copy_bytes_registered) ADD(copy_waits) ADD(cache_hits)
			ADD(cache_evictions) ADD(foreign_ranges) ADD(blocks_peak)
#undef ADD
			peak_sum += C(s, pinned_bytes_peak);
			n++;
			running += st == HP_LS_LIVE;
			continue;
		}
		char rank[24] = "";
		if (s->rank >= 0)
			snprintf(rank, sizeof(rank), " rank %d", s->rank);
		char cmd[4 * HP_LEDGER_CMD + 8];
		printable(s, cmd, sizeof(cmd));
		fprintf(o, "hostpin:   pid %d%s%s: peak pinned %s, %llu "
			"registrations, %llu failures, %llu copies through "
			"registered memory (%s): %.50s\n", s->pid, rank,
			st == HP_LS_LIVE ? " (still running)" : "",
			human(C(s, pinned_bytes_peak), a),
			(unsigned long long)C(s, pin_calls),
			(unsigned long long)C(s, fail_count),
			(unsigned long long)C(s, copies_registered),
			human(C(s, copy_bytes_registered), b), cmd);
		if (st == HP_LS_DEAD) /* reported: the slot is free again */
			atomic_compare_exchange_strong(&s->state, &w,
						       HP_LS_TO(w, HP_LS_FREE));
	}
	if (n == 0) {
		fprintf(o, "hostpin: job report: no process of the job used hostpin "
			"(%d did nothing)\n", idle);
		return 0;
	}
	(void)c;
	fprintf(o, "hostpin: job report: %d process%s (%d still running; %d "
		"that did nothing left out)\n", n, n == 1 ? "" : "es", running,
		idle);
	fprintf(o, "hostpin:   pinned: sum of per-process peaks %s; %llu "
		"registrations, %llu unregistrations, %.3f s registering\n",
		human(peak_sum, a), (unsigned long long)t.pin_calls,
		(unsigned long long)t.unpin_calls, (double)t.pin_ns / 1e9);
	fprintf(o, "hostpin:   failures %llu; served unpinned over a cap %llu; "
		"adopted %llu; leaked %llu; foreign %llu\n",
		(unsigned long long)t.fail_count, (unsigned long long)t.over_cap,
		(unsigned long long)t.adopted_blocks,
		(unsigned long long)t.leaked_blocks,
		(unsigned long long)t.foreign_ranges);
	fprintf(o, "hostpin:   copies seen %llu, through registered memory %llu "
		"(%s), waits %llu; cache hits %llu, given back %llu\n",
		(unsigned long long)t.copies_seen,
		(unsigned long long)t.copies_registered,
		human(t.copy_bytes_registered, b),
		(unsigned long long)t.copy_waits,
		(unsigned long long)t.cache_hits,
		(unsigned long long)t.cache_evictions);
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: hostpin status [--all] [--watch [SECONDS] [--count N]]\n"
		   "       hostpin status --total COUNTER\n"
		   "       hostpin status --report JOB_PID\n");
}

int main(int argc, char **argv)
{
	int all = 0, watch = 0, job = 0, count = 0;
	const char *tot = NULL;
	if (argc >= 5 && !strcmp(argv[1], "--run") && !strcmp(argv[3], "--")) {
		int rc = hp_run_job(argv[2], argv + 4);
		struct hp_ledger *l = open_ledger(1);
		if (l)
			report(l, (int)getpid());
		return rc;
	}
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--all"))
			all = 1;
		else if (!strcmp(argv[i], "--watch") || !strcmp(argv[i], "-w")) {
			watch = 2;
			if (i + 1 < argc && atoi(argv[i + 1]) > 0)
				watch = atoi(argv[++i]);
		} else if (!strcmp(argv[i], "--count") && i + 1 < argc &&
			   atoi(argv[i + 1]) > 0) {
			count = atoi(argv[++i]); /* refreshes, then exit */
			if (!watch)
				watch = 2;
		} else if (!strcmp(argv[i], "--total") && i + 1 < argc)
			tot = argv[++i];
		else if (!strcmp(argv[i], "--report") && i + 1 < argc)
			job = atoi(argv[++i]);
		else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			return 0;
		} else {
			fprintf(stderr, "hostpin status: unknown argument '%s'\n",
				argv[i]);
			usage(stderr);
			return 2;
		}
	}
	struct hp_ledger *l = open_ledger(1);
	if (tot) {
		printf("%llu\n", l ? (unsigned long long)total(l, tot) : 0ull);
		return 0;
	}
	if (job)
		return l ? report(l, job) : 0;
	for (;;) {
		if (watch)
			printf("\033[H\033[J");
		if (l)
			table(l, 1, all);
		else
			printf("no hostpin process has run on this node (no "
			       "ledger)\n");
		if (!watch || (count && --count == 0))
			return 0;
		fflush(stdout);
		sleep((unsigned)watch);
		if (!l)
			l = open_ledger(1);
	}
}
