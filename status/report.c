/* The merged report of a launcher job's processes (the launcher's --stats):
 * one report, every process that did something (whatever way it ended)
 * counted once. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "status.h"

void status_job_end(int ws, const char *cmd)
{
	if (ws == -1)
		return; /* it never started: run.c said why */
	char c[80];
	snprintf(c, sizeof(c), "%s", status_esc(cmd));
	if (WIFSIGNALED(ws)) {
		int sig = WTERMSIG(ws);
		fprintf(stderr, "hostpin: the command (%s) was ended by signal "
			"%d (%s)%s; exit status %d\n", c, sig, strsignal(sig),
			WCOREDUMP(ws) ? ", core dumped" : "", 128 + sig);
		return;
	}
	int st = WEXITSTATUS(ws);
	const char *strict = getenv("HOSTPIN_STRICT");
	fprintf(stderr, "hostpin: the command (%s) %s with status %d%s\n", c,
		st ? "failed" : "exited", st,
		st == 78 && strict && strcmp(strict, "0") != 0
		    ? " (HOSTPIN_STRICT=1 stopped it before it ran: the "
		      "message above names the knob)"
		    : "");
}

/* Word k (0 or 1) of slot s's command line (space-separated), into out. */
static const char *word(const struct hp_lslot *s, int k, char *out, size_t cap)
{
	char line[4 * HP_LEDGER_CMD + 8];
	status_printable(s, line, sizeof(line));
	const char *p = line;
	for (; k > 0 && *p; k--)
		p += strcspn(p, " ") + (p[strcspn(p, " ")] ? 1 : 0);
	snprintf(out, cap, "%.*s", (int)strcspn(p, " "), p);
	return out;
}

/* Slot s's counters added into *t (a process's, or a summary slot's
 * folded ones); its pinned peak, which the report sums apart. */
static uint64_t add_counters(struct hp_counters *t, const struct hp_lslot *s)
{
#define ADD(f) t->f += C(s, f);
	ADD(pin_calls) ADD(unpin_calls) ADD(pin_ns) ADD(fail_count)
	ADD(over_cap) ADD(adopted_blocks) ADD(leaked_blocks)
	ADD(copies_seen) ADD(copies_registered)
	ADD(copy_bytes_registered) ADD(copy_waits) ADD(cache_hits)
	ADD(cache_evictions) ADD(foreign_ranges) ADD(blocks_peak)
#undef ADD
	return C(s, pinned_bytes_peak);
}

/* The programs of the processes that did nothing: the first three names,
 * distinct, and whether there were more. */
struct idle_names {
	char n[3][48];
	int k, more;
};

static void idle_add(struct idle_names *in, const struct hp_lslot *s)
{
	char w[128];
	word(s, 0, w, sizeof(w));
	const char *b = strrchr(w, '/');
	b = b ? b + 1 : w;
	for (int i = 0; i < in->k; i++)
		if (strncmp(in->n[i], b, sizeof(in->n[i]) - 1) == 0)
			return;
	if (in->k == 3) {
		in->more = 1;
		return;
	}
	snprintf(in->n[in->k++], sizeof(in->n[0]), "%.47s", b);
}

/* ": a, b, c, ..." into out, or "". */
static const char *idle_list(const struct idle_names *in, char *out, size_t cap)
{
	out[0] = '\0';
	for (int i = 0; i < in->k; i++) {
		size_t n = strlen(out);
		snprintf(out + n, cap - n, "%s%s", i ? ", " : ": ", in->n[i]);
	}
	if (in->more) {
		size_t n = strlen(out);
		snprintf(out + n, cap - n, ", ...");
	}
	return out;
}

/* What a slot of the command's pid held when the report read it. */
struct image {
	uint64_t start, born, ended;
	uint32_t execd;
};

/* Of two slots of the command's pid, whether s holds a later image than
 * t (what the process ended as): the one that exited (only the last image
 * runs exit(); an exec's image before it ended without), then the one no
 * later image marked as its predecessor (execd), then the later born. */
static int newer(const struct hp_lslot *s, const struct image *t)
{
	if (!s->ended != !t->ended)
		return s->ended != 0;
	if (!s->execd != !t->execd)
		return !s->execd;
	return s->born > t->born;
}

int status_report(struct hp_ledger *l, int job, int child, const char *argv0)
{
	struct idle_names in;
	memset(&in, 0, sizeof(in));
	char ended[4 * HP_LEDGER_CMD + 8] = "", w0[128] = "", w1[128] = "";
	/* the command's process's slot, and what it held when read */
	const struct hp_lslot *cs = NULL;
	struct image cs_at = {0, 0, 0, 0};
	/* an image of the command's process (its start) did something */
	int child_did = 0;
	uint64_t did_start = 0;
	uint64_t js = hp_proc_start(job);
	if (js == HP_START_UNKNOWN) {
		fprintf(stderr, "hostpin: job report: cannot read /proc/%d/stat\n",
			job);
		return 0;
	}
	struct hp_counters t;
	memset(&t, 0, sizeof(t));
	int n = 0, idle = 0, running = 0, folded = 0;
	uint64_t peak_sum = 0;
	uint32_t hw = atomic_load(&l->hiwater);
	char a[24], b[24], c[24];
	FILE *o = stderr;
	/* the per-process lines, printed under the job's summary: hostpin(1)
	 * says the summary comes first */
	char *procs = NULL;
	size_t procs_len = 0;
	FILE *po = open_memstream(&procs, &procs_len);
	if (!po)
		po = o;
	/* the job's counters for the "nothing pinned" line: every process
	 * of the job, the idle ones too */
	struct hp_counters m;
	memset(&m, 0, sizeof(m));
	int seen = 0;
	for (int pass = 0; pass < 2; pass++)
	for (uint32_t i = 0; i < hw && i < HP_LEDGER_SLOTS; i++) {
		struct hp_lslot *s = &l->slot[i];
		uint32_t w, st = status_state_word(s, 1, &w);
		if ((st != HP_LS_LIVE && st != HP_LS_DEAD && st != HP_LS_SUM) ||
		    s->job_pid != job || s->job_start != js)
			continue;
		if (st == HP_LS_SUM && pass == 1) {
			/* read: the slot is free again */
			atomic_compare_exchange_strong(&s->state, &w,
						       HP_LS_TO(w, HP_LS_FREE));
			continue;
		}
		if (pass == 0 && child > 0 && s->pid == child &&
		    (!cs || newer(s, &cs_at))) {
			/* the command's own process, as it ended */
			cs = s;
			cs_at = (struct image){s->start, s->born, s->ended,
					       s->execd};
			status_printable(s, ended, sizeof(ended));
			word(s, 0, w0, sizeof(w0));
			word(s, 1, w1, sizeof(w1));
		}
		if (pass == 0) {
			uint64_t bk = C(s, backend);
			if (!seen++) {
				m.backend = bk;
				m.threshold = C(s, threshold);
				m.pin_after = C(s, pin_after);
			}
			m.backend |= bk & ~(uint64_t)15;
#define ADD(f) m.f += C(s, f);
			ADD(pinned_bytes_peak) ADD(large_blocks) ADD(copies_seen)
			ADD(fail_count) ADD(over_cap)
#undef ADD
		}
		if (st == HP_LS_SUM) {
			/* processes folded into one slot when the table was
			 * full (ledger.h): counted, not listed one by one */
			int k = HP_SUM_DID(s) > 0 ? HP_SUM_DID(s) : 0;
			/* the file's word: no count wraps */
			if (k > INT_MAX - n)
				k = INT_MAX - n;
			if (k > INT_MAX - folded)
				k = INT_MAX - folded;
			peak_sum += add_counters(&t, s);
			n += k;
			folded += k;
			continue;
		}
		if (!status_did_something(s)) {
			if (pass == 1 && st == HP_LS_DEAD) {
				atomic_compare_exchange_strong(
				    &s->state, &w, HP_LS_TO(w, HP_LS_FREE));
				/* an image of the command's process that
				 * did nothing while another did (or before
				 * an exec): its process is counted once */
				if (!cs || s->pid != child ||
				    s->start != cs_at.start ||
				    (s == cs && !(child_did &&
						  did_start == cs_at.start))) {
					idle++;
					idle_add(&in, s);
				}
			}
			continue;
		}
		if (pass == 0 && s->pid == child) {
			child_did = 1;
			did_start = s->start;
		}
		if (pass == 0) {
			peak_sum += add_counters(&t, s);
			n += n < INT_MAX;
			running += st == HP_LS_LIVE;
			continue;
		}
		char rank[24] = "";
		if (s->rank >= 0)
			snprintf(rank, sizeof(rank), " rank %d", s->rank);
		char cmd[4 * HP_LEDGER_CMD + 8];
		status_printable(s, cmd, sizeof(cmd));
		fprintf(po, "hostpin:   pid %d%s%s: peak pinned %s, %llu "
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
	if (po != o)
		fclose(po);
	char why[256];
	const char *idle_why =
	    seen ? hp_idle_reason(&m, why, sizeof(why)) : NULL;
	const char *mlock_note = seen ? hp_mlock_note(&m) : NULL;
	/* a shim (pyenv's) or a wrapper exec'd onward: the process ended as
	 * another program than the one named (a #! script's interpreter,
	 * whose second word is the script, is not one) */
	char onward[4 * HP_LEDGER_CMD + 80] = "";
	if (ended[0] && argv0 && strcmp(w0, argv0) != 0 && strcmp(w1, argv0) != 0)
		snprintf(onward, sizeof(onward), "hostpin:   %s exec'd onward "
			 "(a shim or a wrapper); the process ended as: %.80s\n",
			 status_esc(argv0), ended);
	char names[200];
	idle_list(&in, names, sizeof(names));
	if (n == 0) {
		free(procs);
		fprintf(o, "hostpin: job report: no process of the job used hostpin "
			"(%d did nothing%s)\n", idle, names);
		fputs(onward, o);
		if (idle_why)
			fprintf(o, "hostpin:   %s\n", idle_why);
		return 0;
	}
	(void)c;
	fprintf(o, "hostpin: job report: %d process%s (%d still running; %d "
		"that did nothing left out%s)\n", n, n == 1 ? "" : "es", running,
		idle, names);
	fputs(onward, o);
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
	if (procs) {
		fputs(procs, o);
		free(procs);
	}
	if (folded)
		fprintf(o, "hostpin:   and %d more process%s that ended while "
			"the ledger's table was full: counted above, not "
			"listed one by one\n", folded, folded == 1 ? "" : "es");
	if (idle_why)
		fprintf(o, "hostpin:   %s\n", idle_why);
	if (mlock_note)
		fprintf(o, "hostpin:   %s\n", mlock_note);
	return 0;
}
