/* hostpin-status --prometheus and --prometheus-file: the node's ledger in
 * Prometheus' text exposition format (version 0.0.4), to stdout or to a
 * file replaced whole (for node_exporter's textfile collector). */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../preload/node/ledger.h"
#include "../preload/base/outfile.h"
#include "status.h"

/* ---- --prometheus: the text exposition format, version 0.0.4 ----
 * Per process (the processes the table lists) hostpin_process_*, labelled
 * pid, rank, local_rank, job_pid and command; over every live process (as
 * --total sums them) hostpin_node_*, without labels.  A counter of one
 * process only grows while that process lives (a new pid is a new
 * series), so it is a counter (_total); its sum over the running
 * processes falls when one exits, so the node's sums are gauges. */
enum { PM_GAUGE, PM_COUNTER, PM_NS };
static const struct pmet {
	const char *name; /* after hostpin_process_ / hostpin_node_ */
	int kind;	  /* PM_NS: a counter of nanoseconds, in seconds */
	int node;	  /* also summed for the node */
	size_t off;	  /* in struct hp_counters */
	const char *help;
} pmet[] = {
#define PM(n, k, node, f, h) {n, k, node, offsetof(struct hp_counters, f), h},
	PM("live_bytes", PM_GAUGE, 1, bytes_now,
	   "Bytes in hostpin's large blocks and ranges now (LIVE).")
	PM("blocks", PM_GAUGE, 1, blocks_now,
	   "hostpin's large blocks and ranges now.")
	PM("pinned_bytes", PM_GAUGE, 1, pinned_bytes_now,
	   "Bytes registered with the device (or locked) now (PINNED).")
	PM("pinned_blocks", PM_GAUGE, 1, pinned_blocks_now,
	   "Blocks registered with the device (or locked) now.")
	PM("pinned_peak_bytes", PM_GAUGE, 0, pinned_bytes_peak,
	   "The most bytes registered at once since the process started.")
	PM("cached_bytes", PM_GAUGE, 1, cached_bytes,
	   "Bytes of freed blocks kept registered for reuse now (CACHED).")
	PM("cached_blocks", PM_GAUGE, 1, cached_blocks,
	   "Freed blocks kept registered for reuse now.")
	PM("registrations", PM_COUNTER, 1, pin_calls,
	   "Registrations made (REGS).")
	PM("unregistrations", PM_COUNTER, 1, unpin_calls,
	   "Registrations released.")
	PM("registration_failures", PM_COUNTER, 1, fail_count,
	   "Registrations that failed, every reason (FAILS).")
	PM("registration_seconds", PM_NS, 1, pin_ns,
	   "Time spent registering.")
	PM("over_cap_blocks", PM_COUNTER, 1, over_cap,
	   "Blocks served unregistered because a cap was reached.")
	PM("copies", PM_COUNTER, 1, copies_seen,
	   "Device copies from or to host memory seen.")
	PM("registered_copies", PM_COUNTER, 1, copies_registered,
	   "Device copies through registered memory (COPIES).")
	PM("registered_copy_bytes", PM_COUNTER, 1, copy_bytes_registered,
	   "Bytes copied through registered memory.")
	PM("cache_hits", PM_COUNTER, 1, cache_hits,
	   "Allocations served from the cache of registered blocks.")
#undef PM
};
#define NPMET (sizeof(pmet) / sizeof(pmet[0]))

/* one process, read once, so that every family shows the same moment */
struct psnap {
	int pid, rank, local_rank, job;
	uint64_t born, ns;
	char cmd[HP_LEDGER_CMD + 1];
	uint64_t v[NPMET];
};
static struct psnap snap[HP_LEDGER_SLOTS];
/* The command label left empty: /proc hides other users' processes
 * (hidepid), and a file node_exporter reads (0644) must not show them
 * their command lines. */
int status_prom_nocmd;

/* /proc is mounted with hidepid=1 or more (or invisible). */
int status_proc_hidepid(void)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[4096];
	int hide = 0;
	while (f && fgets(line, sizeof(line), f)) {
		char mnt[256];
		const char *opt = strstr(line, " - ");
		if (sscanf(line, "%*s %*s %*s %*s %255s", mnt) != 1 ||
		    strcmp(mnt, "/proc") || !opt)
			continue;
		const char *h = strstr(opt, "hidepid=");
		if (h && strncmp(h + 8, "0", 1) && strncmp(h + 8, "off", 3))
			hide = 1;
	}
	if (f)
		fclose(f);
	return hide;
}

/* A label value: backslash, double quote and newline escaped as the format
 * wants (\\ \" \n); any other byte outside printable ASCII (a control
 * character, or a UTF-8 sequence the slot's 96 bytes may have cut) as the
 * text \xHH, its backslash escaped: the value is always valid UTF-8. */
static void prom_label(FILE *o, const char *v)
{
	for (; *v; v++) {
		unsigned char c = (unsigned char)*v;
		if (c == '\\' || c == '"')
			fprintf(o, "\\%c", c);
		else if (c == '\n')
			fputs("\\n", o);
		else if (c >= 0x20 && c < 0x7f)
			putc(c, o);
		else
			fprintf(o, "\\\\x%02x", c);
	}
}

static void prom_value(FILE *o, int kind, uint64_t v)
{
	if (kind == PM_NS)
		fprintf(o, " %llu.%09llu\n",
			(unsigned long long)(v / 1000000000u),
			(unsigned long long)(v % 1000000000u));
	else
		fprintf(o, " %llu\n", (unsigned long long)v);
}

static void prom_family(FILE *o, const char *scope, const char *name,
			const char *suffix, const char *type, const char *help,
			const char *what)
{
	fprintf(o, "# HELP hostpin_%s_%s%s %s%s%s\n", scope, name, suffix,
		help, *what ? " " : "", what);
	fprintf(o, "# TYPE hostpin_%s_%s%s %s\n", scope, name, suffix, type);
}

/* The exposition of ledger l (NULL: none, every node figure 0) into o;
 * all: idle processes get series too. */
void status_prometheus(FILE *o, struct hp_ledger *l, int all)
{
	int n = 0, live = 0;
	uint64_t node[NPMET];
	memset(node, 0, sizeof(node));
	uint32_t hw = l ? atomic_load(&l->hiwater) : 0;
	for (uint32_t i = 0; i < hw && i < HP_LEDGER_SLOTS; i++) {
		struct hp_lslot *s = &l->slot[i];
		if (status_state_of(s, 1) != HP_LS_LIVE)
			continue;
		struct psnap *p = &snap[n];
		for (size_t k = 0; k < NPMET; k++) {
			p->v[k] = atomic_load_explicit(
			    (_Atomic uint64_t *)((char *)&s->ctr + pmet[k].off),
			    memory_order_relaxed);
			node[k] = hp_sat_add(node[k], p->v[k]);
		}
		live++;
		if (!all && !status_did_something(s))
			continue;
		p->pid = s->pid, p->job = s->job_pid, p->born = s->born;
		p->ns = s->pidns;
		p->rank = s->rank, p->local_rank = s->local_rank;
		memcpy(p->cmd, s->cmd, HP_LEDGER_CMD);
		p->cmd[HP_LEDGER_CMD] = '\0';
		n++;
	}
	const char *each = "Per hostpin process.";
	prom_family(o, "process", "start_time", "_seconds", "gauge",
		    "When the process attached to the ledger, seconds since "
		    "the Epoch.", each);
	for (size_t k = 0; k <= NPMET; k++) {
		if (k > 0) {
			const struct pmet *m = &pmet[k - 1];
			prom_family(o, "process", m->name,
				    m->kind == PM_GAUGE ? "" : "_total",
				    m->kind == PM_GAUGE ? "gauge" : "counter",
				    m->help, each);
		}
		for (int j = 0; j < n; j++) {
			struct psnap *p = &snap[j];
			char r[16] = "", lr[16] = "", jb[16] = "", ns[24] = "";
			if (p->rank >= 0)
				snprintf(r, sizeof(r), "%d", p->rank);
			if (p->local_rank >= 0)
				snprintf(lr, sizeof(lr), "%d", p->local_rank);
			if (p->job > 0)
				snprintf(jb, sizeof(jb), "%d", p->job);
			/* pid and PID namespace: unique per process on the
			 * node (containers' pid-1 jobs share a ledger) */
			if (p->ns)
				snprintf(ns, sizeof(ns), "%llu",
					 (unsigned long long)p->ns);
			fprintf(o, "hostpin_process_%s%s{pid=\"%d\",pidns=\"%s\","
				"rank=\"%s\",local_rank=\"%s\",job_pid=\"%s\","
				"command=\"",
				k ? pmet[k - 1].name : "start_time",
				!k ? "_seconds"
				: pmet[k - 1].kind == PM_GAUGE ? "" : "_total",
				p->pid, ns, r, lr, jb);
			prom_label(o, status_prom_nocmd ? "" : p->cmd);
			fputs("\"}", o);
			if (k)
				prom_value(o, pmet[k - 1].kind, p->v[k - 1]);
			else
				prom_value(o, PM_GAUGE, p->born);
		}
	}
	const char *sum = "Summed over the hostpin processes running on the "
			  "node (falls when one exits).";
	prom_family(o, "node", "processes", "", "gauge", "hostpin processes "
		    "running on the node, idle ones too.", "");
	fprintf(o, "hostpin_node_processes %d\n", live);
	for (size_t k = 0; k < NPMET; k++) {
		if (!pmet[k].node)
			continue;
		prom_family(o, "node", pmet[k].name, "", "gauge", pmet[k].help,
			    sum);
		fprintf(o, "hostpin_node_%s", pmet[k].name);
		prom_value(o, pmet[k].kind, node[k]);
	}
}

/* An unpredictable number for a temporary name: another user cannot take
 * the names a writer will use. */
static unsigned long long tmp_random(void)
{
	unsigned long long r = 0;
	if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r)) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		r ^= (unsigned long long)ts.tv_nsec * 0x9e3779b97f4a7c15ull ^
		     (unsigned long long)getpid() << 32 ^ (unsigned long long)ts.tv_sec;
	}
	return r;
}

/* --prometheus-file: the exposition written to PATH.tmp.PID.RANDOM (a new
 * unpredictable name for each snapshot, tried again under another if
 * one is refused: a name another user took costs nothing), mode 0644
 * (node_exporter may run as another user), then renamed over PATH within
 * the same directory, so a reader (node_exporter's textfile collector
 * reads *.prom) sees the old file or the new one whole.  The file is
 * opened as the library opens its files (outfile.h: no FIFO, no link or
 * file of another user's, no directory others may change).  0, or 1 with
 * a message. */
int status_prometheus_file(const char *path, struct hp_ledger *l, int all)
{
	char tmp[4200], why[512];
	const char *leaf = strrchr(path, '/');
	leaf = leaf ? leaf + 1 : path;
	if (!*leaf) {
		fprintf(stderr, "hostpin status: --prometheus-file: '%s' names a "
			"directory (expected a file name)\n", status_esc(path));
		return 1;
	}
	const char *tleaf = tmp + (leaf - path);
	int dir = -1, fd = -1;
	for (int tries = 0; fd < 0 && tries < 8; tries++) {
		if (snprintf(tmp, sizeof(tmp), "%s.tmp.%d.%016llx", path,
			     (int)getpid(), tmp_random()) >= (int)sizeof(tmp)) {
			fprintf(stderr, "hostpin status: --prometheus-file: "
				"name too long\n");
			return 1;
		}
		if (dir >= 0)
			close(dir), dir = -1;
		why[0] = '\0';
		fd = hp_out_open_in(tmp, 0, 0644, why, sizeof(why), &dir);
		if (fd < 0 && !why[0] && errno != EEXIST)
			break; /* the directory's fault, not the name's */
	}
	FILE *o = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!o) {
		int e = errno;
		fprintf(stderr, "hostpin status: --prometheus-file: cannot "
			"create %s: %s\n", status_esc(tmp), why[0] ? why : strerror(e));
		if (fd >= 0)
			close(fd), unlinkat(dir, tleaf, 0);
		if (dir >= 0)
			close(dir);
		return 1;
	}
	int err = fchmod(fd, 0644) ? errno : 0; /* whatever the umask */
	status_prometheus(o, l, all);
	if (ferror(o) && !err)
		err = errno ? errno : EIO;
	if (fclose(o) && !err)
		err = errno;
	if (!err && renameat(dir, tleaf, dir, leaf))
		err = errno;
	if (err) {
		fprintf(stderr, "hostpin status: --prometheus-file: cannot "
			"write %s: %s\n", status_esc(path), strerror(err));
		unlinkat(dir, tleaf, 0);
	}
	close(dir);
	return err ? 1 : 0;
}
