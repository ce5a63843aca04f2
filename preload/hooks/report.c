/* The statistics as the program sees them: hostpin_stats() and the at-exit
 * report (text to the log, JSON to HOSTPIN_STATS_FILE).  At the top with the
 * other exported entry points because it reads every layer: the counters,
 * the failures by reason (policy/stats.c), the copy engine's counts. */
#include <errno.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../hostpin.h"
#include "../copy/stage.h"
#include "../hp.h"
#include "../node/ledger.h"

/* The statistics that are plain counters, by the name they share in
 * hp_ctr and struct hostpin_stats: one list for hostpin_stats() and the JSON
 * report.  (pin_failures is the sum over reasons.) */
#define HP_COUNTERS(X)                                                        \
	X(blocks_now) X(bytes_now) X(blocks_peak) X(bytes_peak)               \
	X(pinned_blocks_now) X(pinned_bytes_now) X(pinned_bytes_peak)         \
	X(pending_blocks) X(mmap_ranges_now) X(mmap_bytes_now) X(pin_ns)      \
	X(over_cap) X(pin_calls) X(unpin_calls) X(adopted_blocks)             \
	X(foreign_ranges) X(copies_seen) X(copies_registered)                 \
	X(copy_bytes_registered) X(copy_waits) X(leaked_blocks)               \
	X(cached_blocks) X(cached_bytes) X(cache_hits) X(cache_evictions)     \
	X(imports_dropped)

HP_EXPORT int hostpin_stats(struct hostpin_stats *out, size_t size)
{
	struct hostpin_stats s;
	/* relaxed: statistics order nothing */
#define L(f) s.f = atomic_load_explicit(&hp_ctr.f, memory_order_relaxed);
	HP_COUNTERS(L)
#undef L
	s.pin_failures = hp_stat_fail_total();
	if (out == NULL)
		return EINVAL;
	memcpy(out, &s, size < sizeof(s) ? size : sizeof(s));
	return 0;
}

/* One line of the report: to the log (fd < 0), or to the JSON file fd,
 * keeping the first write error in *err. */
static int json_err;
static void emit(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void emit(int fd, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	int n = hp_fmt(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	size_t len = (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1;
	if (fd < 0)
		hp_log_write(buf, len);
	else if (!json_err)
		json_err = hp_write_all(fd, buf, len);
}

/* One line per copy entry point hostpin does not know (unknown.c). */
static int report_pid;
static void unknown_line(const char *name, unsigned long long lookups,
			 unsigned long long calls, unsigned long long waits)
{
	emit(-1, "hostpin[%d]:   unknown copy entry point %s: looked up "
	     "%llu times, called %llu; hostpin waited for the context after "
	     "%llu calls (registration stays on)\n", report_pid, name,
	     lookups, calls, waits);
}

/* The same in the JSON report: one object each in "unknown_copy_entry_points"
 * (the name as the program looked it up, characters other than those of a
 * C name written as '?'). */
static int unknown_fd = -1;
static const char *unknown_sep;
static void unknown_json(const char *name, unsigned long long lookups,
			 unsigned long long calls, unsigned long long waits)
{
	char safe[64];
	size_t i = 0;
	for (; name[i] && i < sizeof(safe) - 1; i++) {
		char ch = name[i];
		int ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
			 (ch >= '0' && ch <= '9') || ch == '_';
		safe[i] = ok ? ch : '?';
	}
	safe[i] = 0;
	emit(unknown_fd, "%s{\"name\": \"%s\", \"lookups\": %llu, "
	     "\"calls\": %llu, \"waits\": %llu}", unknown_sep, safe,
	     lookups, calls, waits);
	unknown_sep = ", ";
}

void hp_stats_report(void)
{
	struct hostpin_stats s;
	hostpin_stats(&s, sizeof(s));
	int pid = (int)getpid();
	if (hp_opt[HP_OPT_STATS]) {
		int fd = -1; /* the log */
		emit(fd, "hostpin[%d]: report (backend %s, hostpin %s)\n", pid,
		     hostpin_backend(), HP_VERSION);
		char h1[24], h2[24], h3[24], why[256];
		emit(fd, "hostpin[%d]:   blocks now %llu (%s), peak %llu "
		     "(%s)\n", pid, (unsigned long long)s.blocks_now,
		     hp_human(s.bytes_now, h1),
		     (unsigned long long)s.blocks_peak,
		     hp_human(s.bytes_peak, h2));
		emit(fd, "hostpin[%d]:   pinned now %llu ranges, %s; peak %s; "
		     "pinning took %llu.%06llu s\n", pid,
		     (unsigned long long)s.pinned_blocks_now,
		     hp_human(s.pinned_bytes_now, h1),
		     hp_human(s.pinned_bytes_peak, h2),
		     (unsigned long long)(s.pin_ns / 1000000000u),
		     (unsigned long long)(s.pin_ns % 1000000000u / 1000u));
		emit(fd, "hostpin[%d]:   pending %llu; mmap ranges tracked "
		     "%llu (%s); served unpinned over HOSTPIN_MAX_PINNED "
		     "%llu\n", pid, (unsigned long long)s.pending_blocks,
		     (unsigned long long)s.mmap_ranges_now,
		     hp_human(s.mmap_bytes_now, h1),
		     (unsigned long long)s.over_cap);
		emit(fd, "hostpin[%d]:   pin calls %llu, unpin calls %llu; "
		     "adopted %llu; foreign %llu; leaked %llu\n", pid,
		     (unsigned long long)s.pin_calls,
		     (unsigned long long)s.unpin_calls,
		     (unsigned long long)s.adopted_blocks,
		     (unsigned long long)s.foreign_ranges,
		     (unsigned long long)s.leaked_blocks);
		emit(fd, "hostpin[%d]:   copies seen %llu, through registered "
		     "memory %llu (%s), waits %llu\n", pid,
		     (unsigned long long)s.copies_seen,
		     (unsigned long long)s.copies_registered,
		     hp_human(s.copy_bytes_registered, h1),
		     (unsigned long long)s.copy_waits);
		report_pid = pid;
		hp_unknown_report(unknown_line);
		uint64_t sc, sb, sr;
		hp_stage_counts(&sc, &sb, &sr);
		emit(fd, "hostpin[%d]:   staged copies %llu (%s), staging ring "
		     "%s\n", pid, (unsigned long long)sc, hp_human(sb, h1),
		     hp_human(sr, h2));
		if (sc)
			emit(fd, "hostpin[%d]:   copy threads: %s\n", pid,
			     hp_pool_note());
		uint64_t cc, cb;
		hp_stat_cut_get(&cc, &cb);
		if (cc)
			emit(fd, "hostpin[%d]:   copies cut at registrations "
			     "for want of a staging slot %llu (%s)\n", pid,
			     (unsigned long long)cc, hp_human(cb, h1));
		uint64_t bgd, bgr = hp_register_background_done(&bgd);
		if (bgr || bgd)
			emit(fd, "hostpin[%d]:   registered in the background: "
			     "%llu blocks; copies direct through a part "
			     "registered meanwhile %llu\n", pid,
			     (unsigned long long)bgr, (unsigned long long)bgd);
		emit(fd, "hostpin[%d]:   cache: %llu blocks (%s), %llu hits, "
		     "%llu evictions\n", pid,
		     (unsigned long long)s.cached_blocks,
		     hp_human(s.cached_bytes, h3),
		     (unsigned long long)s.cache_hits,
		     (unsigned long long)s.cache_evictions);
		emit(fd, "hostpin[%d]:   imports of hostpin's released by the "
		     "program %llu\n", pid,
		     (unsigned long long)s.imports_dropped);
		emit(fd, "hostpin[%d]:   pin failures %llu\n", pid,
		     (unsigned long long)s.pin_failures);
		uint64_t rn;
		for (int i = 0; i < HP_STAT_REASONS; i++) {
			const char *r = hp_stat_reason(i, &rn);
			if (r)
				emit(fd, "hostpin[%d]:     %s: %llu\n", pid, r,
				     (unsigned long long)rn);
		}
		/* when nothing was pinned, why, in one line */
		if (hp_idle_reason(&hp_ctr, why, sizeof(why)))
			emit(fd, "hostpin[%d]:   %s\n", pid, why);
		if (hp_mlock_note(&hp_ctr))
			emit(fd, "hostpin[%d]:   %s\n", pid,
			     hp_mlock_note(&hp_ctr));
		hp_sites_report(hp_log_target());
	}
	if (hp_optstr[HP_OPT_STATS_FILE][0]) {
		char path[512], fwhy[320];
		int fd = hp_open_out(hp_optstr[HP_OPT_STATS_FILE], 0, path,
				     sizeof(path), fwhy, sizeof(fwhy));
		if (fd < 0) {
			int err = errno;
			hp_log(HP_LOG_WARN, "cannot open HOSTPIN_STATS_FILE=%s: "
			       "%s; the JSON report is lost",
			       path, hp_file_why(err, fwhy, sizeof(fwhy)));
			return;
		}
		json_err = 0;
		emit(fd, "{\"pid\": %d, \"version\": \"%s\", \"backend\": "
		     "\"%s\", ", pid, HP_VERSION, hostpin_backend());
#define J(f) emit(fd, "\"" #f "\": %llu, ", (unsigned long long)s.f);
		HP_COUNTERS(J)
		J(pin_failures)
#undef J
		uint64_t jc[4], jr;
		hp_stage_counts(&jc[0], &jc[1], &jr);
		hp_stat_cut_get(&jc[2], &jc[3]);
		emit(fd, "\"staged_copies\": %llu, \"staged_bytes\": %llu, "
		     "\"cut_copies\": %llu, \"cut_bytes\": %llu, ",
		     (unsigned long long)jc[0], (unsigned long long)jc[1],
		     (unsigned long long)jc[2], (unsigned long long)jc[3]);
		emit(fd, "\"failures\": {");
		const char *sep = "";
		uint64_t jn;
		for (int i = 0; i < HP_STAT_REASONS; i++) {
			const char *r = hp_stat_reason(i, &jn);
			if (r) {
				emit(fd, "%s\"%s\": %llu", sep, r,
				     (unsigned long long)jn);
				sep = ", ";
			}
		}
		emit(fd, "}, \"unknown_copy_entry_points\": [");
		unknown_fd = fd, unknown_sep = "";
		hp_unknown_report(unknown_json);
		unknown_fd = -1;
		emit(fd, "]}\n");
		/* close reports what a network or quota-limited file system
		 * refused only now */
		int err = json_err;
		if (close(fd) && !err && errno != EINTR)
			err = errno;
		if (err)
			hp_log(HP_LOG_WARN, "cannot write HOSTPIN_STATS_FILE=%s: "
			       "%s (errno %d); the JSON report there is "
			       "incomplete", path, hp_strerror(err), err);
	}
}
