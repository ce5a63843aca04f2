/* hostpin-status: the reading side of the node-wide ledger (ledger.h).
 *   hostpin-status [--all] [--watch [SECONDS] [--count N]]
 *                                               one line per hostpin process
 *   hostpin-status --total COUNTER               a counter summed over the
 *                                                live processes (for tests)
 *   hostpin-status [--all] --prometheus | --prometheus-file PATH
 *                                                the figures in Prometheus'
 *                                                text format, per process
 *                                                and for the node
 *   hostpin-status --report JOB                  the merged report of the
 *                                                processes of launcher JOB;
 *                                                their slots are freed
 *   hostpin-status --run PRELOAD -- CMD...       the launcher's --stats: run
 *                                                CMD (run.c), then report
 * HOSTPIN_LEDGER names the ledger file, as for the library. */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../preload/node/ledger.h"
#include "../preload/base/outfile.h"
#include "run.h"
#include "status.h"

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
/* our description of the ledger, kept to test the slots' locks (ours
 * holds none, so every process's lock shows); -1: none */
static int ledfd = -1;
static struct hp_ledger *ledmap;

/* s with control characters escaped (\n, \xHH), into a static buffer of
 * two (for a message's user-given names and paths). */
const char *status_esc(const char *s)
{
	static char buf[2][1024];
	static int k;
	char *o = buf[k ^= 1];
	size_t at = 0;
	for (; *s && at + 5 < sizeof(buf[0]); s++) {
		unsigned char c = (unsigned char)*s;
		if (c < 0x20 || c == 0x7f)
			at += (size_t)snprintf(o + at, 5, c == '\n' ? "\\n"
						: c == '\t' ? "\\t" : "\\x%02x", c);
		else
			o[at++] = (char)c;
	}
	o[at] = '\0';
	return o;
}

/* The ledger's file truncated by another process while we read it: a
 * SIGBUS in the mapping jumps back to the loop (bus_jb, armed), which
 * drops the ledger and opens it again next time.  Any other SIGBUS gets
 * the default action. */
static sigjmp_buf bus_jb;
static volatile sig_atomic_t bus_armed;
static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	char *a = si->si_addr, *m = (char *)ledmap;
	if (bus_armed && si->si_code > 0 && m && a >= m &&
	    a < m + sizeof(struct hp_ledger))
		siglongjmp(bus_jb, 1);
	signal(sig, SIG_DFL);
	if (si->si_code <= 0)
		raise(sig);
}

/* Forget the ledger (its file is not whole any more), with a message. */
static void drop_ledger(void)
{
	if (ledmap)
		munmap(ledmap, sizeof(struct hp_ledger));
	if (ledfd >= 0)
		close(ledfd);
	ledmap = NULL;
	ledfd = -1;
	fprintf(stderr, "hostpin status: the ledger was truncated or replaced "
		"by another process while it was read; not read\n");
}

/* l, if its file still backs the whole mapping; else NULL (dropped). */
static struct hp_ledger *whole(struct hp_ledger *l)
{
	struct stat st;
	if (!l || ledfd < 0)
		return l;
	if (fstat(ledfd, &st) == 0 &&
	    st.st_size == (off_t)sizeof(struct hp_ledger) &&
	    (uint64_t)st.st_blocks * 512 >= sizeof(struct hp_ledger))
		return l;
	drop_ledger();
	return NULL;
}

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
				"size); not read\n", status_esc(path));
		return NULL; /* no hostpin process ever ran: nothing to show */
	}
	void *m = mmap(NULL, sizeof(struct hp_ledger),
		       PROT_READ | (rw ? PROT_WRITE : 0), MAP_SHARED, fd, 0);
	if (m == MAP_FAILED) {
		close(fd);
		return NULL;
	}
	if (ledfd >= 0)
		close(ledfd);
	ledfd = fd;
	ledmap = m;
	struct hp_ledger *l = m;
	if (atomic_load(&l->layout) != HP_LEDGER_LAYOUT ||
	    l->version != HP_LEDGER_VERSION ||
	    l->size != sizeof(struct hp_ledger)) {
		fprintf(stderr, "hostpin status: %s has another layout (another "
			"hostpin version)\n", status_esc(path));
		exit(1);
	}
	return l;
}

/* The command line of a slot, printable: every byte outside printable
 * ASCII (escape sequences, control characters, the rest) as \xHH, and a
 * backslash as \\, so nothing in the file reaches a terminal raw. */
const char *status_printable(const struct hp_lslot *s, char *out, size_t cap)
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


int status_did_something(struct hp_lslot *s)
{
	return C(s, pin_calls) || C(s, copies_seen) || C(s, bytes_peak) ||
	       C(s, fail_count) || C(s, over_cap) || C(s, mmap_ranges_now);
}

/* LIVE slots whose process is surely gone become DEAD (when we may
 * write): its lock is free, whatever its PID namespace; without a lock to
 * go by, a slot of another PID namespace, or whose process cannot be
 * looked at, stays LIVE (ledger.h).  The state, and the state word in
 * *wp for a later change (its generation: a slot reclaimed since is left
 * be). */
uint32_t status_state_word(struct hp_lslot *s, int rw, uint32_t *wp)
{
	uint32_t w = atomic_load_explicit(&s->state, memory_order_acquire);
	int lk = -1;
	if (HP_LS_ST(w) == HP_LS_LIVE && s->locked && ledmap &&
	    s >= ledmap->slot && s < ledmap->slot + HP_LEDGER_SLOTS)
		lk = hp_slot_locked(ledfd, (uint32_t)(s - ledmap->slot));
	if (HP_LS_ST(w) == HP_LS_LIVE &&
	    hp_slot_gone(s->pid, s->start, s->pidns, myns, !proc_ok, lk)) {
		uint32_t d = HP_LS_TO(w, HP_LS_DEAD);
		if (rw && !atomic_compare_exchange_strong(&s->state, &w, d))
			return *wp = w, HP_LS_ST(w);
		w = d;
	}
	*wp = w;
	return HP_LS_ST(w);
}
uint32_t status_state_of(struct hp_lslot *s, int rw)
{
	uint32_t w;
	return status_state_word(s, rw, &w);
}


/* The BACKEND column: the backend, the one auto chose; *state: how far
 * it got. */
static const char *backend_col(struct hp_lslot *s, char *out, size_t cap,
			       const char **state)
{
	static const char *const name[] = {"?", "none", "mlock", "cuda",
					   "level_zero", "auto"};
	uint64_t bk = C(s, backend);
	unsigned id = (unsigned)(bk & 15), ch = (unsigned)(bk >> 4 & 15);
	if (id > HP_BK_AUTO)
		id = 0;
	*state = "-";
	if (id == HP_BK_NONE || id == HP_BK_MLOCK || id == 0) {
		snprintf(out, cap, "%s", name[id]);
		return out;
	}
	*state = bk & HP_BK_READY    ? "ready"
		 : bk & HP_BK_DRIVER ? "not-ready"
				     : "no-driver";
	snprintf(out, cap, "%s%s%s", name[id],
		 id == HP_BK_AUTO && ch >= HP_BK_CUDA && ch <= HP_BK_LEVEL_ZERO
		     ? ">" : "",
		 id == HP_BK_AUTO && ch >= HP_BK_CUDA && ch <= HP_BK_LEVEL_ZERO
		     ? name[ch] : "");
	return out;
}

static void table(struct hp_ledger *l, int rw, int all)
{
	char a[24], b[24], c[24], bk[40];
	printf("%7s %5s %-15s %-9s %8s %8s %8s %6s %5s %8s  %s\n", "PID",
	       "RANK", "BACKEND", "STATE", "LIVE", "PINNED", "CACHED", "REGS",
	       "FAILS", "COPIES", "COMMAND");
	uint32_t hw = atomic_load(&l->hiwater);
	int n = 0;
	uint64_t tl = 0, tp = 0, tc = 0;
	for (uint32_t i = 0; i < hw && i < HP_LEDGER_SLOTS; i++) {
		struct hp_lslot *s = &l->slot[i];
		if (status_state_of(s, rw) != HP_LS_LIVE || (!all && !status_did_something(s)))
			continue;
		char rank[16] = "-";
		if (s->rank >= 0)
			snprintf(rank, sizeof(rank), "%d", s->rank);
		else if (s->local_rank >= 0)
			snprintf(rank, sizeof(rank), "L%d", s->local_rank);
		char cmd[4 * HP_LEDGER_CMD + 8];
		status_printable(s, cmd, sizeof(cmd));
		const char *bst;
		backend_col(s, bk, sizeof(bk), &bst);
		printf("%7d %5s %-15s %-9s %8s %8s %8s %6llu %5llu %8llu  "
		       "%.60s\n", s->pid, rank, bk, bst,
		       human(C(s, bytes_now), a),
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
			if (status_state_of(&l->slot[i], 1) == HP_LS_LIVE)
				t = hp_sat_add(t, atomic_load((_Atomic uint64_t *)((char *)&l->slot[i].ctr + f[k].off)));
		return t;
	}
	fprintf(stderr, "hostpin status: unknown counter '%s'\n", status_esc(name));
	exit(2);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: hostpin status [--all] [--watch [SECONDS]] [--count N]\n"
		"       hostpin status --total COUNTER\n"
		"       hostpin status --report JOB_PID\n"
		"       hostpin status [--all] --prometheus | "
		"--prometheus-file PATH [--watch [S]]\n"
		"  (no option)       one line per hostpin process of this user "
		"that did something\n"
		"  -a, --all         every live hostpin process, idle ones too\n"
		"  -w, --watch [S]   refresh every S seconds (default 2); on a "
		"terminal the screen\n"
		"                    is redrawn, into a pipe or file each "
		"snapshot follows the last\n"
		"                    after a blank line\n"
		"  -n, --count N     N snapshots, then exit (implies --watch)\n"
		"      --total C     counter C summed over the live processes, "
		"in bytes or a count:\n"
		"                    bytes_now pinned_bytes_now cached_bytes "
		"cached_blocks pin_calls\n"
		"                    copies_registered\n"
		"      --report PID  the merged report of the processes started "
		"by launcher PID\n"
		"                    (hostpin --stats prints it; frees their "
		"slots)\n"
		"      --prometheus  the figures in Prometheus' text format "
		"(0.0.4): hostpin_process_*\n"
		"                    (labels pid, rank, local_rank, job_pid, "
		"command) and hostpin_node_*\n"
		"                    (summed over the running processes); "
		"bytes, seconds, _total\n"
		"      --prometheus-file PATH  the same into PATH, atomically "
		"(PATH.tmp.PID, mode 0644,\n"
		"                    renamed): for node_exporter's textfile "
		"collector; with --watch S,\n"
		"                    rewritten every S seconds\n"
		"  -h, --help        this text\n"
		"BACKEND: the backend in use (auto>cuda: auto chose cuda); "
		"STATE: ready, not-ready\n"
		"(a driver is loaded, the device was never ready) or "
		"no-driver.  Sizes: B, K, M, G, T\n"
		"(powers of 1024).  HOSTPIN_LEDGER names the ledger, as for "
		"the library.\n");
}

/* A positive whole number of at most 9 digits, or -1. */
static int count_arg(const char *s)
{
	int v = 0, n = 0;
	for (; *s >= '0' && *s <= '9' && n < 9; s++, n++)
		v = v * 10 + (*s - '0');
	return *s || n == 0 || v == 0 ? -1 : v;
}

/* --stats needs the ledger: with HOSTPIN_LEDGER=off, or a ledger that
 * cannot be made or written, say so and ask every process for its own
 * report (HOSTPIN_STATS=1) instead.  0 if the ledger is usable. */
static int ledger_unusable(char *why, size_t cap)
{
	const char *p = getenv("HOSTPIN_LEDGER");
	if (p && !strcmp(p, "off")) {
		snprintf(why, cap, "HOSTPIN_LEDGER=off");
		return 1;
	}
	char path[340], dir[300];
	int dirfd = AT_FDCWD;
	const char *name = p;
	if (!p || !*p) {
		long taken;
		/* made as the library would make it (mode 0700, the
		 * user's): nothing else is created */
		dirfd = hp_ledger_dir(dir, sizeof(dir), 1, &taken);
		if (dirfd < 0) {
			snprintf(why, cap, "no directory of this user's can be "
				 "made in /dev/shm for the ledger (%s)",
				 strerror(errno));
			return 1;
		}
		snprintf(path, sizeof(path), "%s/" HP_LEDGER_NAME_FMT, dir,
			 HP_LEDGER_VERSION, sizeof(struct hp_lslot));
		name = path + strlen(dir) + 1;
	} else
		snprintf(path, sizeof(path), "%s", p);
	int fd = hp_ledger_open_checked(dirfd, name, 1), err = errno;
	if (fd >= 0) {
		close(fd);
	} else if (err == ENOENT) {
		/* not made yet: can a file be made beside it? */
		char tmp[400];
		const char *slash = strrchr(name, '/');
		snprintf(tmp, sizeof(tmp), "%.*s.hostpin-probe-%d",
			 slash ? (int)(slash - name + 1) : 0, name,
			 (int)getpid());
		fd = openat(dirfd, tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW |
					    O_CLOEXEC, 0600);
		err = errno;
		if (fd >= 0) {
			close(fd);
			unlinkat(dirfd, tmp, 0);
		}
	}
	if (dirfd != AT_FDCWD)
		close(dirfd);
	if (fd >= 0)
		return 0;
	if (err == EEXIST)
		snprintf(why, cap, "%s is not a ledger of this user's made by "
			 "hostpin", status_esc(path));
	else
		snprintf(why, cap, "the ledger %s cannot be %s (%s)", status_esc(path),
			 err == ENOENT || err == EROFS || err == EACCES
			     ? "made or written" : "opened",
			 strerror(err));
	return 1;
}

/* The merged report, a SIGBUS in the ledger (truncated meanwhile) cutting
 * it short with a message. */
static void guarded_report(struct hp_ledger *l)
{
	if (sigsetjmp(bus_jb, 1)) {
		bus_armed = 0;
		drop_ledger();
		return;
	}
	bus_armed = 1;
	status_report(l, (int)getpid());
	bus_armed = 0;
}

int main(int argc, char **argv)
{
	/* static: live across the sigsetjmp below (never clobbered) */
	static int all, watch, job, prom, count;
	static const char *tot, *promfile;
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sigbus;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, NULL);
	if (argc >= 5 && !strcmp(argv[1], "--run") && !strcmp(argv[3], "--")) {
		char why[512];
		int merged = !ledger_unusable(why, sizeof(why));
		if (!merged) {
			fprintf(stderr, "hostpin: --stats: no merged report: %s; "
				"each process prints its own report at its "
				"exit (HOSTPIN_STATS=1)\n", why);
			setenv("HOSTPIN_STATS", "1", 1);
		}
		int rc = hp_run_job(argv[2], argv + 4);
		struct hp_ledger *l = merged ? whole(open_ledger(1)) : NULL;
		if (l)
			guarded_report(l);
		else if (merged)
			fprintf(stderr, "hostpin: --stats: no merged report: "
				"the ledger cannot be read after the job\n");
		return rc;
	}
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--all") || !strcmp(a, "-a"))
			all = 1;
		else if (!strcmp(a, "--watch") || !strcmp(a, "-w")) {
			watch = 2;
			/* an optional value: a number, not an option */
			if (i + 1 < argc && argv[i + 1][0] >= '0' &&
			    argv[i + 1][0] <= '9') {
				if ((watch = count_arg(argv[++i])) < 0) {
					fprintf(stderr, "hostpin status: %s: "
						"'%s' is not a number of seconds "
						"(1 or more)\n", a, status_esc(argv[i]));
					return 2;
				}
			}
		} else if (!strcmp(a, "--prometheus")) {
			prom = 1;
		} else if (!strcmp(a, "--count") || !strcmp(a, "-n") ||
			   !strcmp(a, "--total") || !strcmp(a, "--report") ||
			   !strcmp(a, "--prometheus-file")) {
			if (i + 1 >= argc) {
				fprintf(stderr, "hostpin status: %s needs a "
					"value\n", a);
				usage(stderr);
				return 2;
			}
			const char *v = argv[++i];
			if (!strcmp(a, "--total"))
				tot = v;
			else if (a[2] == 'p') {
				if (!*v) {
					fprintf(stderr, "hostpin status: %s "
						"needs a file name\n", a);
					return 2;
				}
				promfile = v;
			} else if ((a[2] == 'r' ? (job = count_arg(v))
					      : (count = count_arg(v))) < 0) {
				fprintf(stderr, "hostpin status: %s: '%s' is not "
					"%s\n", a, status_esc(v),
					a[2] == 'r' ? "a process id"
						    : "a count (1 or more)");
				return 2;
			}
			if (count > 0 && !watch)
				watch = 2;
		} else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return 0;
		} else {
			fprintf(stderr, "hostpin status: unknown argument '%s'\n",
				status_esc(a));
			usage(stderr);
			return 2;
		}
	}
	/* static: read again after a siglongjmp from on_sigbus */
	static struct hp_ledger *l;
	static int left;
	l = open_ledger(1);
	left = count;
	if (sigsetjmp(bus_jb, 1)) {
		drop_ledger();
		l = NULL;
		if (!watch || tot || job)
			return 1;
	}
	bus_armed = 1;
	l = whole(l);
	if (tot) {
		printf("%llu\n", l ? (unsigned long long)total(l, tot) : 0ull);
		return 0;
	}
	if (job)
		return l ? status_report(l, job) : 0;
	if (prom && watch) {
		/* one exposition per output: a stream of them parses as
		 * nothing */
		fprintf(stderr, "hostpin status: --prometheus prints one "
			"snapshot; --watch goes with --prometheus-file\n");
		return 2;
	}
	if (prom || promfile) {
		status_prom_nocmd = promfile && status_proc_hidepid();
		for (;;) {
			int failed = 0;
			if (prom)
				status_prometheus(stdout, l, all);
			if (promfile && status_prometheus_file(promfile, l, all))
				failed = 1;
			/* a cycle that could not write (ENOSPC for a moment, a
			 * name taken) is said, and the next one tries again */
			if (failed && watch && !(left && left - 1 == 0))
				fprintf(stderr, "hostpin status: --prometheus-file: "
					"trying again in %d s\n", watch);
			if (!watch || (left && --left == 0))
				return failed || fflush(stdout) ? 1 : 0;
			sleep((unsigned)watch);
			l = whole(l);
			if (!l)
				l = whole(open_ledger(1));
		}
	}
	/* the screen is redrawn only on a terminal: into a pipe or a file,
	 * plain snapshots, a blank line between them */
	int tty = isatty(1);
	for (int first = 1;; first = 0) {
		if (watch && tty)
			printf("\033[H\033[J");
		else if (watch && !first)
			printf("\n");
		if (l)
			table(l, 1, all);
		else
			printf("no hostpin process has run on this node (no "
			       "ledger)\n");
		if (!watch || (left && --left == 0))
			return 0;
		fflush(stdout);
		sleep((unsigned)watch);
		l = whole(l);
		if (!l)
			l = whole(open_ledger(1));
	}
}
