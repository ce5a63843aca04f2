/* Statistics: lock-free counters, failures by reason, the at-exit report
 * (text to the log, JSON to HOSTPIN_STATS_FILE). */
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hostpin.h"
#include "hp.h"

struct hp_counters hp_ctr;

#define MAX_REASONS 16
static struct {
	_Atomic(const char *) name;
	_Atomic uint64_t n;
} reasons[MAX_REASONS];

uint64_t hp_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void hp_stat_add_peak(_Atomic uint64_t *now, _Atomic uint64_t *peak,
		      uint64_t n)
{
	/* relaxed: statistics only; nothing is ordered by them. */
	uint64_t v = atomic_fetch_add_explicit(now, n, memory_order_relaxed) + n;
	uint64_t p = atomic_load_explicit(peak, memory_order_relaxed);
	while (v > p && !atomic_compare_exchange_weak_explicit(
			    peak, &p, v, memory_order_relaxed,
			    memory_order_relaxed))
		;
}

int hp_stat_fail(const char *reason)
{
	for (int i = 0; i < MAX_REASONS; i++) {
		const char *cur = atomic_load(&reasons[i].name);
		if (cur == NULL) {
			/* claim the empty slot; a racing claimer of the same
			 * slot with another reason moves on to the next */
			if (atomic_compare_exchange_strong(&reasons[i].name,
							   &cur, reason))
				cur = reason;
		}
		if (cur == reason || (cur && strcmp(cur, reason) == 0))
			return atomic_fetch_add_explicit(&reasons[i].n, 1,
							 memory_order_relaxed) ==
			       0;
	}
	atomic_fetch_add(&reasons[MAX_REASONS - 1].n, 1);
	return 0;
}

uint64_t hp_stat_fail_total(void)
{
	uint64_t t = 0;
	for (int i = 0; i < MAX_REASONS; i++)
		t += atomic_load_explicit(&reasons[i].n, memory_order_relaxed);
	return t;
}

HP_EXPORT int hostpin_stats(struct hostpin_stats *out, size_t size)
{
	struct hostpin_stats s;
#define L(f) atomic_load_explicit(&hp_ctr.f, memory_order_relaxed)
	s.blocks_now = L(blocks_now), s.bytes_now = L(bytes_now);
	s.blocks_peak = L(blocks_peak), s.bytes_peak = L(bytes_peak);
	s.pinned_blocks_now = L(pinned_blocks_now);
	s.pinned_bytes_now = L(pinned_bytes_now);
	s.pinned_bytes_peak = L(pinned_bytes_peak);
	s.pin_failures = hp_stat_fail_total();
	s.pending_blocks = L(pending_blocks);
	s.mmap_ranges_now = L(mmap_ranges_now);
	s.mmap_bytes_now = L(mmap_bytes_now);
	s.pin_ns = L(pin_ns);
	s.over_cap = L(over_cap);
	s.pin_calls = L(pin_calls), s.unpin_calls = L(unpin_calls);
	s.adopted_blocks = L(adopted_blocks);
	s.foreign_ranges = L(foreign_ranges);
	s.copies_seen = L(copies_seen);
	s.copies_registered = L(copies_registered);
	s.copy_bytes_registered = L(copy_bytes_registered);
	s.copy_waits = L(copy_waits);
	s.leaked_blocks = L(leaked_blocks);
	s.cached_blocks = L(cached_blocks), s.cached_bytes = L(cached_bytes);
	s.cache_hits = L(cache_hits), s.cache_evictions = L(cache_evictions);
	s.imports_dropped = L(imports_dropped);
#undef L
	if (out == NULL)
		return 22;
	memcpy(out, &s, size < sizeof(s) ? size : sizeof(s));
	return 0;
}

static void emit(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void emit(int fd, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	int n = hp_fmt(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	hp_write_all(fd, buf, (size_t)n < sizeof(buf) ? (size_t)n
						      : sizeof(buf) - 1);
}

void hp_stats_report(void)
{
	struct hostpin_stats s;
	hostpin_stats(&s, sizeof(s));
	int pid = (int)getpid();
	if (hp_opt[HP_OPT_STATS]) {
		int fd = hp_log_fd;
		emit(fd, "hostpin[%d]: report (backend %s)\n", pid,
		     hostpin_backend());
		emit(fd, "hostpin[%d]:   blocks now %llu (%llu bytes), peak "
		     "%llu (%llu bytes)\n", pid,
		     (unsigned long long)s.blocks_now,
		     (unsigned long long)s.bytes_now,
		     (unsigned long long)s.blocks_peak,
		     (unsigned long long)s.bytes_peak);
		emit(fd, "hostpin[%d]:   pinned now %llu ranges, %llu bytes; "
		     "peak %llu bytes; pinning took %llu.%06llu s\n", pid,
		     (unsigned long long)s.pinned_blocks_now,
		     (unsigned long long)s.pinned_bytes_now,
		     (unsigned long long)s.pinned_bytes_peak,
		     (unsigned long long)(s.pin_ns / 1000000000u),
		     (unsigned long long)(s.pin_ns % 1000000000u / 1000u));
		emit(fd, "hostpin[%d]:   pending %llu; mmap ranges tracked "
		     "%llu (%llu bytes); served unpinned over "
		     "HOSTPIN_MAX_PINNED %llu\n", pid,
		     (unsigned long long)s.pending_blocks,
		     (unsigned long long)s.mmap_ranges_now,
		     (unsigned long long)s.mmap_bytes_now,
		     (unsigned long long)s.over_cap);
		emit(fd, "hostpin[%d]:   pin calls %llu, unpin calls %llu; "
		     "adopted %llu; foreign %llu; leaked %llu\n", pid,
		     (unsigned long long)s.pin_calls,
		     (unsigned long long)s.unpin_calls,
		     (unsigned long long)s.adopted_blocks,
		     (unsigned long long)s.foreign_ranges,
		     (unsigned long long)s.leaked_blocks);
		emit(fd, "hostpin[%d]:   copies seen %llu, through registered "
		     "memory %llu (%llu bytes), waits %llu\n", pid,
		     (unsigned long long)s.copies_seen,
		     (unsigned long long)s.copies_registered,
		     (unsigned long long)s.copy_bytes_registered,
		     (unsigned long long)s.copy_waits);
		emit(fd, "hostpin[%d]:   cache: %llu blocks (%llu bytes), "
		     "%llu hits, %llu evictions\n", pid,
		     (unsigned long long)s.cached_blocks,
		     (unsigned long long)s.cached_bytes,
		     (unsigned long long)s.cache_hits,
		     (unsigned long long)s.cache_evictions);
		emit(fd, "hostpin[%d]:   pin failures %llu\n", pid,
		     (unsigned long long)s.pin_failures);
		for (int i = 0; i < MAX_REASONS; i++) {
			const char *r = atomic_load(&reasons[i].name);
			if (r)
				emit(fd, "hostpin[%d]:     %s: %llu\n", pid, r,
				     (unsigned long long)atomic_load(
					 &reasons[i].n));
		}
		hp_sites_report(fd);
	}
	if (hp_optstr[HP_OPT_STATS_FILE][0]) {
		int fd = hp_open_out(hp_optstr[HP_OPT_STATS_FILE], 0);
		if (fd < 0) {
			hp_log(HP_LOG_WARN, "cannot write HOSTPIN_STATS_FILE=%s",
			       hp_optstr[HP_OPT_STATS_FILE]);
			return;
		}
		emit(fd, "{\"pid\": %d, \"backend\": \"%s\", ", pid,
		     hostpin_backend());
#define J(f) emit(fd, "\"" #f "\": %llu, ", (unsigned long long)s.f)
		J(blocks_now); J(bytes_now); J(blocks_peak); J(bytes_peak);
		J(pinned_blocks_now); J(pinned_bytes_now); J(pinned_bytes_peak);
		J(pin_failures); J(pending_blocks); J(mmap_ranges_now);
		J(mmap_bytes_now); J(pin_ns); J(over_cap); J(pin_calls);
		J(unpin_calls); J(adopted_blocks); J(foreign_ranges);
		J(copies_seen); J(copies_registered); J(copy_bytes_registered);
		J(copy_waits); J(leaked_blocks); J(cached_blocks);
		J(cached_bytes); J(cache_hits); J(cache_evictions);
		J(imports_dropped);
#undef J
		emit(fd, "\"failures\": {");
		const char *sep = "";
		for (int i = 0; i < MAX_REASONS; i++) {
			const char *r = atomic_load(&reasons[i].name);
			if (r) {
				emit(fd, "%s\"%s\": %llu", sep, r,
				     (unsigned long long)atomic_load(
					 &reasons[i].n));
				sep = ", ";
			}
		}
		emit(fd, "}}\n");
		close(fd);
	}
}
