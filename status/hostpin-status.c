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
 * HOSTPIN_LEDGER names the ledger file, as for the library.  This file: the
 * table, --total, the options and main; the ledger as read (opening it, the
 * SIGBUS guard, slot states): ledger_read.c. */
#include <setjmp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../preload/node/ledger.h"
#include "run.h"
#include "status.h"

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
		"       hostpin status --clean\n"
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
		"      --clean       remove this user's ledgers that no process "
		"uses (/dev/shm/\n"
		"                    hostpin-UID.d/: they outlive every hostpin "
		"process)\n"
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

/* The merged report, a SIGBUS in the ledger (truncated meanwhile) cutting
 * it short with a message. */
static void guarded_report(struct hp_ledger *l, int child, const char *argv0)
{
	if (sigsetjmp(status_bus_jb, 1)) {
		status_bus_armed = 0;
		status_drop_ledger();
		return;
	}
	status_bus_armed = 1;
	status_report(l, (int)getpid(), child, argv0);
	status_bus_armed = 0;
}

int main(int argc, char **argv)
{
	/* static: live across the sigsetjmp below (never clobbered) */
	static int all, watch, job, prom, count;
	static const char *tot, *promfile;
	status_catch_sigbus();
	if (argc >= 5 && !strcmp(argv[1], "--run") && !strcmp(argv[3], "--")) {
		char why[512];
		int merged = !status_ledger_unusable(why, sizeof(why));
		if (!merged) {
			fprintf(stderr, "hostpin: --stats: no merged report: %s; "
				"each process prints its own report at its "
				"exit (HOSTPIN_STATS=1)\n", why);
			setenv("HOSTPIN_STATS", "1", 1);
		}
		int ws, child, rc = hp_run_job(argv[2], argv + 4, &ws, &child);
		status_job_end(ws, argv[4]);
		struct hp_ledger *l = merged ? status_whole(status_open_ledger(1)) : NULL;
		if (l)
			guarded_report(l, child, argv[4]);
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
		} else if (!strcmp(a, "--clean")) {
			if (argc != 2) {
				fprintf(stderr, "hostpin status: --clean goes "
					"alone\n");
				return 2;
			}
			return status_clean();
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
	l = status_open_ledger(1);
	left = count;
	if (sigsetjmp(status_bus_jb, 1)) {
		status_drop_ledger();
		l = NULL;
		if (!watch || tot || job)
			return 1;
	}
	status_bus_armed = 1;
	l = status_whole(l);
	if (tot) {
		printf("%llu\n", l ? (unsigned long long)total(l, tot) : 0ull);
		return 0;
	}
	if (job)
		return l ? status_report(l, job, 0, NULL) : 0;
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
			l = status_whole(l);
			if (!l)
				l = status_whole(status_open_ledger(1));
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
		l = status_whole(l);
		if (!l)
			l = status_whole(status_open_ledger(1));
	}
}
