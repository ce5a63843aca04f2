/* hostpin internals shared by the preload modules. */
#ifndef HP_HP_H
#define HP_HP_H

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <unistd.h>

#include "../registry/registry.h"

#define HP_HIDDEN __attribute__((visibility("hidden")))
#define HP_EXPORT __attribute__((visibility("default")))
#define hp_likely(x) __builtin_expect(!!(x), 1)
#define hp_unlikely(x) __builtin_expect(!!(x), 0)
#define HP_TLS __thread __attribute__((tls_model("initial-exec")))

/* One version string: the Makefile passes the VERSION file's. */
#ifndef HP_VERSION
#define HP_VERSION "unknown"
#endif

/* ---- options (options.c; options_names.c: the names; options_show.c: the
 * settings list) ---- */
enum {
#define HP_OPT(name, kind, def, choices, min, max, doc) HP_OPT_##name,
#include "base/options.def"
#undef HP_OPT
	HP_OPT_COUNT
};
enum { HP_BACKEND_AUTO, HP_BACKEND_NONE, HP_BACKEND_MLOCK, HP_BACKEND_CUDA,
       HP_BACKEND_LEVEL_ZERO };
enum { HP_COPY_SYNC, HP_COPY_ASYNC };
enum { HP_MMAP_OFF, HP_MMAP_PRIVATE, HP_MMAP_SHARED, HP_MMAP_ALL };
enum { HP_LOG_OFF, HP_LOG_ERROR, HP_LOG_WARN, HP_LOG_INFO, HP_LOG_DEBUG };
/* The exit status when HOSTPIN_STRICT=1 finds an invalid or unknown knob
 * at start (sysexits.h's EX_CONFIG; hostpin(7), HOSTPIN_STRICT). */
#define HP_STRICT_EXIT 78

typedef struct hp_optdesc {
	const char *name; /* without the HOSTPIN_ prefix */
	enum { HP_K_BOOL, HP_K_COUNT, HP_K_SIZE, HP_K_CAP, HP_K_ENUM, HP_K_STR } kind;
	const char *def, *choices;
	unsigned long long min, max;
	const char *doc;
} hp_optdesc_t;

HP_HIDDEN extern const hp_optdesc_t hp_optdesc[HP_OPT_COUNT];
HP_HIDDEN extern uint64_t hp_opt[HP_OPT_COUNT]; /* parsed values */
HP_HIDDEN extern char hp_optstr[HP_OPT_COUNT][256]; /* STR values */

/* Parse one value; 0, or EINVAL with *expect set to what was expected. */
HP_HIDDEN int hp_opt_parse(int i, const char *s, uint64_t *out,
			   const char **expect);
/* Read every knob from the environment (secure_getenv; the percent knobs
 * last: their base is read under HOSTPIN_SYSFS_ROOT), set the log level and
 * open HOSTPIN_LOG_FILE, then report each invalid value (that knob keeps its
 * default) and each unknown HOSTPIN_* variable.  Returns how many. */
HP_HIDDEN int hp_options_load(void);
/* Test hooks (base/testpause.c): hp_test_pause("name") sleeps where
 * HOSTPIN_TEST_PAUSE=DIR names a directory holding name.arm, until the
 * test opens it (DIR/name.go); inert otherwise.  Read at start-up. */
HP_HIDDEN void hp_test_pause_load(void);
HP_HIDDEN void hp_test_pause(const char *name);
/* The known HOSTPIN_* name (without the prefix) closest to name[0..len) by
 * edit distance; whether name[0..len) is known. */
HP_HIDDEN const char *hp_opt_closest(const char *name, size_t len);
HP_HIDDEN int hp_opt_known(const char *name, size_t len);
/* One warning per HOSTPIN_* variable that names no knob (unless the
 * parent process, with hostpin preloaded, said it already); their number.
 * For hp_options_load. */
HP_HIDDEN int hp_opt_report_unknown(void);
/* A percent knob's N (N% of the memory base), 0 for a plain size: what
 * the settings list says beside the bytes it became (options.c sets it). */
HP_HIDDEN extern unsigned char hp_opt_cap_pct[HP_OPT_COUNT];
/* The settings list (hostpin --show, and the HOSTPIN_LOG=info dump): one
 * line per knob, its effective value, sizes as people read them, the
 * test-only knobs left out; to fd, or to the log at info if fd < 0. */
HP_HIDDEN void hp_options_show(int fd);
/* A note shown after knob i's value in the settings list (a layer above
 * says what the knob chose: the copy threads, speed.c); NULL: none. */
HP_HIDDEN void hp_opt_note(int i, const char *note);
/* path under HOSTPIN_SYSFS_ROOT (test only: /sys and the cgroup files of
 * an injected machine), into out; 0 or ENAMETOOLONG.  The one place the
 * test root is applied. */
HP_HIDDEN int hp_sys_path(char *out, size_t cap, const char *path);
/* limits.c: the memory the process may use (the smallest of RAM and its
 * cgroup's memory limit; the base of every percent knob), the CPUs it may
 * use, and the info line that says which and why. */
HP_HIDDEN uint64_t hp_mem_base(void);
HP_HIDDEN const char *hp_mem_base_why(void); /* "RAM, ...", "cgroup v2 PATH" */
HP_HIDDEN unsigned hp_cpu_limit(void);
/* 1 if transparent huge pages can back an madvised range (mode always or
 * madvise) and HOSTPIN_HUGEPAGES is on (limits.c). */
HP_HIDDEN int hp_thp_ok(void);
HP_HIDDEN void hp_limits_log(void);

/* ---- logging (log.c): never allocates, never recurses ---- */
HP_HIDDEN extern int hp_log_level;
/* The log's descriptor: 2, or one of hostpin's own (high, close-on-exec);
 * write through hp_log_target(). */
HP_HIDDEN extern _Atomic int hp_log_fd;
/* Log to fd from now on, remembering which file it is. */
HP_HIDDEN void hp_log_use(int fd);
/* hp_log_fd, checked to be the same file still (a program that closed it
 * may have opened its own under the number): if not, the log file opened
 * again, or stderr. */
HP_HIDDEN int hp_log_target(void);
HP_HIDDEN int hp_fmt(char *buf, size_t cap, const char *fmt, va_list ap);
HP_HIDDEN int hp_snprintf(char *buf, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
HP_HIDDEN void hp_log(int level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* 0, or the errno of the write that failed. */
HP_HIDDEN int hp_write_all(int fd, const char *s, size_t n);
/* Write a finished log line to the log; if the log file fails, say so on
 * stderr (path, reason, what goes where now) and use stderr from then on. */
HP_HIDDEN void hp_log_write(const char *s, size_t n);
/* strerror(3)'s text without allocating; "Unknown error" for the rare. */
HP_HIDDEN const char *hp_strerror(int err);
/* The reason for a failed hp_open_out: hp_strerror, or what ELOOP and
 * EPERM mean there. */
HP_HIDDEN const char *hp_file_reason(int err);
/* Expand %p to the pid into out; 0 or ENAMETOOLONG. */
HP_HIDDEN int hp_expand_path(char *out, size_t cap, const char *tmpl);
/* Open tmpl (%p expanded into path[cap], which names it in messages) for
 * writing, close-on-exec, as outfile.h says (no FIFO, no link of another
 * user's, no file of another user's; created 0600); -1 with errno on
 * failure, and why[wcap] filled for a refusal. */
HP_HIDDEN int hp_open_out(const char *tmpl, int append, char *path,
			  size_t cap, char *why, size_t wcap);
/* The reason for a failed hp_open_out, for a message: why[] if it is set,
 * else hp_file_reason(err) and "(errno N)" written into it. */
HP_HIDDEN const char *hp_file_why(int err, char *why, size_t wcap);
/* s[n] into out[cap] with control characters escaped (\n, \t, \xHH):
 * user-controlled bytes in a message stay one line and never reach a
 * terminal as control sequences.  The length written. */
HP_HIDDEN size_t hp_escape(char *out, size_t cap, const char *s, size_t n);
HP_HIDDEN void hp_log_open(void);
HP_HIDDEN _Noreturn void hp_fatal(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));
#define HP_LOG_ONCE(level, ...)                                               \
	do {                                                                  \
		static _Atomic int once_;                                     \
		if (!atomic_exchange_explicit(&once_, 1,                       \
					      memory_order_relaxed))          \
			hp_log(level, __VA_ARGS__);                           \
	} while (0)

/* ---- small files: the one reader (header-only: the status program uses
 * it too) ---- */
/* Read the file at path into buf, NUL-terminated: up to end of file or
 * cap - 1 bytes, whichever comes first (a longer file is cut there; a read
 * interrupted by a signal is retried).  Its length, or -1 with errno when
 * it cannot be opened (ENOENT, EMFILE) or its first read fails (ESRCH: a
 * process gone); bytes read before a failing read are kept.  Raw open and
 * read on the caller's buffer: no stdio, no allocation, safe during the
 * allocator's initialisation.  cap >= 1. */
static inline ssize_t hp_read_small(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	size_t n = 0;
	int err = 0;
	while (n < cap - 1) {
		ssize_t r = read(fd, buf + n, cap - 1 - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			err = errno;
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	buf[n] = '\0';
	if (err && !n) {
		errno = err;
		return -1;
	}
	return (ssize_t)n;
}

/* ---- bootstrap, next-allocator symbols, the guard (boot.c) ---- */
enum { HP_ST_UNINIT, HP_ST_BUSY, HP_ST_READY, HP_ST_PASSTHROUGH };
HP_HIDDEN extern _Atomic int hp_state;
/* SIZE_MAX when not owning; 0 before initialisation.  Read relaxed by the
 * fast paths: any value they see is safe with any hp_real they see. */
HP_HIDDEN extern _Atomic size_t hp_threshold;
#define HP_THRESHOLD() atomic_load_explicit(&hp_threshold, memory_order_relaxed)
HP_HIDDEN extern HP_TLS int hp_in_hook;
HP_HIDDEN extern int hp_in_child; /* forked child: no device calls */
/* Whatever stmt calls (dlsym, the driver, libunwind) goes straight to the
 * next allocator and makes no hook act (invariant 5). */
/* The most one device registration covers: each driver call holds the
 * driver's locks for a while (0.1-0.35 s/GiB), and Linux 6.11-6.13 refuse
 * to pin 2 GiB or more in one call.  A larger range (or cell) is registered
 * as consecutive registrations of this size from its start (backend_cuda.c)
 * and a copy through it is split at their ends (pieces.c). */
#define HP_REG_PIECE_MAX ((size_t)1 << 30)

#define HP_GUARDED(stmt)                                                      	do {                                                                  		hp_in_hook++;                                                 		stmt;                                                         		hp_in_hook--;                                                 	} while (0)

#define HP_ALLOC_FNS(X)                                                       	X(malloc) X(free) X(calloc) X(realloc) X(posix_memalign)              	X(aligned_alloc) X(memalign) X(valloc) X(pvalloc)                     	X(malloc_usable_size) X(mmap) X(munmap) X(mremap) X(madvise)
typedef void *(*hp_fn_malloc)(size_t);
typedef void (*hp_fn_free)(void *);
typedef void *(*hp_fn_calloc)(size_t, size_t);
typedef void *(*hp_fn_realloc)(void *, size_t);
typedef int (*hp_fn_posix_memalign)(void **, size_t, size_t);
typedef void *(*hp_fn_aligned_alloc)(size_t, size_t);
typedef void *(*hp_fn_memalign)(size_t, size_t);
typedef void *(*hp_fn_valloc)(size_t);
typedef void *(*hp_fn_pvalloc)(size_t);
typedef size_t (*hp_fn_malloc_usable_size)(void *);
typedef void *(*hp_fn_mmap)(void *, size_t, int, int, int, long);
typedef int (*hp_fn_munmap)(void *, size_t);
typedef void *(*hp_fn_mremap)(void *, size_t, size_t, int, ...);
typedef int (*hp_fn_madvise)(void *, size_t, int);
/* The next allocator's functions, resolved once during initialisation
 * (boot.c's hp_next). */
struct hp_next {
#define HP_NEXT_FIELD(f) hp_fn_##f f;
	HP_ALLOC_FNS(HP_NEXT_FIELD)
#undef HP_NEXT_FIELD
};
/* What the wrappers call: statically the bootstrap stand-ins (boot.c),
 * then hp_next's values.  Relaxed loads: every value is callable. */
struct hp_real {
#define HP_REAL_FIELD(f) _Atomic(hp_fn_##f) f;
	HP_ALLOC_FNS(HP_REAL_FIELD)
#undef HP_REAL_FIELD
};
HP_HIDDEN extern struct hp_real hp_real;
#define HP_REAL(f) atomic_load_explicit(&hp_real.f, memory_order_relaxed)
HP_HIDDEN void hp_init_slow(void);
/* Initialised (now, if need be), active, and not inside hostpin itself? */
static inline int hp_ready(void)
{
	int st = atomic_load_explicit(&hp_state, memory_order_acquire);
	if (hp_unlikely(st == HP_ST_UNINIT || st == HP_ST_BUSY)) {
		hp_init_slow();
		st = atomic_load_explicit(&hp_state, memory_order_acquire);
	}
	return st == HP_ST_READY && !hp_in_hook;
}
HP_HIDDEN void hp_resolve_next(void);
HP_HIDDEN void hp_publish_next(void);
/* glibc's own dlsym and dlvsym (hostpin exports both names). */
HP_HIDDEN extern void *(*hp_dlsym_next)(void *, const char *);
HP_HIDDEN extern void *(*hp_dlvsym_next)(void *, const char *, const char *);
HP_HIDDEN void hp_dl_resolve(void);
/* Changes whenever an object is loaded or unloaded (dl_iterate_phdr's
 * counters; resolve.c). */
HP_HIDDEN unsigned long long hp_dl_generation(void);
/* 1 if the process's malloc is not hostpin's (ASan, valgrind): hostpin
 * then steps aside. */
HP_HIDDEN int hp_foreign_allocator(void);
/* Whether a driver or runtime hook should act (hostpin ready, not inside
 * itself, not in a forked child).  Where it forwards to: resolve.h. */
HP_HIDDEN int hp_hooks_active(void);
/* The guard (boot.c): 1 if this hook (a driver, runtime or loader hook, or
 * a stub of the copy engine) is the outermost and hostpin is active: it then
 * acts, and must call hp_hook_leave.  0: pass straight through. */
HP_HIDDEN int hp_hook_enter(void);
HP_HIDDEN void hp_hook_leave(void);
/* Starts fn(arg) on a detached thread that blocks every signal for its
 * whole life (invariant 11); stack: its size in bytes, 0 for the default.
 * Returns pthread_create's result: 0 when started. */
HP_HIDDEN int hp_thread_start(void *(*fn)(void *), void *arg, size_t stack);
/* The bootstrap arena that serves dlsym's own allocations. */
#define HP_ARENA_SIZE ((size_t)256 << 10)
HP_HIDDEN extern char hp_arena[HP_ARENA_SIZE];
HP_HIDDEN void *hp_arena_alloc(size_t n, size_t align);
static inline int hp_arena_owns(const void *p)
{
	return (uintptr_t)p - (uintptr_t)hp_arena < HP_ARENA_SIZE;
}
HP_HIDDEN size_t hp_arena_size(const void *p);
static inline size_t hp_page_round(size_t n)
{
	return (n + HP_PAGE_SIZE - 1) & ~(HP_PAGE_SIZE - 1);
}

/* ---- statistics: the counters and clock (base/counters.c), failures by
 * reason (policy/stats.c), the report (hooks/report.c) ---- */
struct hp_counters {
	_Atomic uint64_t blocks_now, bytes_now, blocks_peak, bytes_peak;
	_Atomic uint64_t pinned_blocks_now, pinned_bytes_now, pinned_bytes_peak;
	_Atomic uint64_t pending_blocks, mmap_ranges_now, mmap_bytes_now;
	_Atomic uint64_t pin_ns, over_cap, pin_calls, unpin_calls;
	_Atomic uint64_t leaked_blocks, adopted_blocks, foreign_ranges;
	_Atomic uint64_t copies_seen, copies_registered, copy_bytes_registered;
	_Atomic uint64_t copy_waits;
	_Atomic uint64_t cached_blocks, cached_bytes, cache_hits, cache_evictions;
	_Atomic uint64_t imports_dropped;
	_Atomic uint64_t fail_count; /* pin failures, every reason (ledger) */
	/* why nothing was pinned (the reports' one line; `hostpin status`):
	 * blocks and ranges of HOSTPIN_THRESHOLD or more ever tracked, the
	 * backend and how far it got (HP_BK_*), and the settings in force */
	_Atomic uint64_t large_blocks, backend, threshold, pin_after;
	/* the staging ring registered now (stage.c): pinned memory under
	 * the caps, not a block (not in pinned_bytes_*) */
	_Atomic uint64_t ring_bytes;
};
/* hp_counters.backend: the backend set (HP_BK_NONE.. in bits 0-3), the
 * one auto chose (bits 4-7), flags: a device driver was seen loaded, the
 * device was ready at least once. */
enum { HP_BK_NONE = 1, HP_BK_MLOCK, HP_BK_CUDA, HP_BK_LEVEL_ZERO, HP_BK_AUTO };
#define HP_BK_DRIVER 0x100u
#define HP_BK_READY 0x200u
/* This process's counters, in its own memory, always (base/counters.c):
 * what its caps, hostpin_stats() and its reports go by, so that no other
 * process can change them by writing to, truncating or removing the
 * node-wide ledger.  Their copy in the process's slot of the ledger
 * (ledger.h), which other processes and `hostpin status` read, is written
 * with pwrite, never through the ledger's mapping, so a ledger file
 * truncated by another process can raise no SIGBUS here (a program's own
 * SIGBUS handler, installed after start-up, never sees one of hostpin's):
 * at once when a gauge other processes sum changes (pinned, cached,
 * staging ring bytes), otherwise at most once a second (HP_CTR_*).  Where
 * the copy goes: hp_ctr_pub, set by node/ledger.c (NULL: no slot). */
struct hp_ctr_target {
	char path[340]; /* the ledger file, opened by path for each copy */
	dev_t dev;	/* and checked to be this file, */
	ino_t ino;
	off_t size;	/* of this size (not truncated) */
	off_t off;	/* the slot's counters in it */
};
HP_HIDDEN extern struct hp_counters hp_own;
HP_HIDDEN extern const struct hp_ctr_target *_Atomic hp_ctr_pub;
/* Copy hp_own into the slot: now (a gauge changed; forced), or if a
 * second passed since the last copy.  Never blocks: a copy in progress in
 * another thread makes another after it. */
HP_HIDDEN void hp_ctr_publish(int now);
/* Stop copying (before the slot is given up) and wait for a copy in
 * progress; in a forked child, forget the parent's. */
HP_HIDDEN void hp_ctr_unpublish(int child);
/* One copy into t now, in this thread (the last one, at exit). */
HP_HIDDEN void hp_ctr_copy_to(const struct hp_ctr_target *t);
static inline void hp_ctr_note(int gauge)
{
	if (atomic_load_explicit(&hp_ctr_pub, memory_order_relaxed))
		hp_ctr_publish(gauge);
}
#define HP_CTR_GAUGE(c)                                                       \
	(offsetof(struct hp_counters, c) ==                                   \
		 offsetof(struct hp_counters, pinned_bytes_now) ||            \
	 offsetof(struct hp_counters, c) ==                                   \
		 offsetof(struct hp_counters, ring_bytes) ||                  \
	 offsetof(struct hp_counters, c) ==                                   \
		 offsetof(struct hp_counters, cached_bytes))
/* plan.c: copies staged, their bytes, the staging ring's bytes. */
/* unknown.c: one call of line per copy entry point hostpin does not know
 * that it handed out a stub for: its name, lookups, calls (outermost),
 * waits (for the report). */
HP_HIDDEN void hp_unknown_report(void (*line)(const char *name,
					      unsigned long long lookups,
					      unsigned long long calls,
					      unsigned long long waits));
HP_HIDDEN void hp_stage_counts(uint64_t *copies, uint64_t *bytes,
			       uint64_t *ring_bytes);
#define hp_ctr hp_own
/* Every counter update: relaxed, since nothing is ordered by statistics.
 * A gauge never goes below zero (never wraps to 16384 PiB), whatever
 * went wrong elsewhere. */
/* a + b, or UINT64_MAX where that wraps: sums over other processes'
 * numbers (the ledger) never wrap to small. */
static inline uint64_t hp_sat_add(uint64_t a, uint64_t b)
{
	return a + b < a ? UINT64_MAX : a + b;
}
static inline void hp_ctr_sub(_Atomic uint64_t *c, uint64_t n)
{
	uint64_t cur = atomic_load_explicit(c, memory_order_relaxed);
	while (!atomic_compare_exchange_weak_explicit(
	    c, &cur, cur > n ? cur - n : 0, memory_order_relaxed,
	    memory_order_relaxed))
		;
}
static inline void hp_ctr_set2(_Atomic uint64_t *own, uint64_t v, int or)
{
	if (or)
		atomic_fetch_or_explicit(own, v, memory_order_relaxed);
	else
		atomic_store_explicit(own, v, memory_order_relaxed);
}
#define HP_CTR_ADD(c, n)                                                      \
	((void)atomic_fetch_add_explicit(&hp_own.c, (n),                      \
					 memory_order_relaxed),               \
	 hp_ctr_note(HP_CTR_GAUGE(c)))
#define HP_CTR_SUB(c, n) (hp_ctr_sub(&hp_own.c, (n)), hp_ctr_note(HP_CTR_GAUGE(c)))
#define HP_CTR_SET(c, v)                                                      \
	(hp_ctr_set2(&hp_own.c, (v), 0), hp_ctr_note(HP_CTR_GAUGE(c)))
#define HP_CTR_OR(c, v)                                                       \
	(hp_ctr_set2(&hp_own.c, (v), 1), hp_ctr_note(HP_CTR_GAUGE(c)))
/* now += n, and peak raised to it */
#define HP_CTR_PEAK(now, peak, n)                                             \
	(hp_stat_add_peak(&hp_own.now, &hp_own.peak, (n)),                    \
	 hp_ctr_note(HP_CTR_GAUGE(now)))
HP_HIDDEN void hp_stat_add_peak(_Atomic uint64_t *now, _Atomic uint64_t *peak,
				uint64_t n);
/* Count a failure under a reason name (a static string); 1 the first time
 * that reason is seen, so each reason is logged once. */
HP_HIDDEN int hp_stat_fail(const char *reason);
/* The reasons' slots (policy/stats.c), for the report: slot i's name and
 * count, NULL when empty; and the sum over them. */
#define HP_STAT_REASONS 16
HP_HIDDEN const char *hp_stat_reason(int i, uint64_t *n);
HP_HIDDEN uint64_t hp_stat_fail_total(void);
/* Copies staged (the copy engine's, copy/plan.c) and their bytes: counted
 * by hp_stat_staged, read by hp_stat_staged_get (not in the ledger slot:
 * its layout is unchanged); those planned as staged that found no slot
 * and went direct, cut at the registrations, none of them staged:
 * hp_stat_cut, hp_stat_cut_get. */
HP_HIDDEN void hp_stat_staged(uint64_t bytes);
HP_HIDDEN void hp_stat_staged_get(uint64_t *copies, uint64_t *bytes);
HP_HIDDEN void hp_stat_cut(uint64_t bytes);
HP_HIDDEN void hp_stat_cut_get(uint64_t *copies, uint64_t *bytes);
HP_HIDDEN void hp_stats_report(void);
HP_HIDDEN uint64_t hp_now_ns(void);

/* ---- the registry of ranges (boot.c) and what the wrappers call ---- */
HP_HIDDEN extern hp_registry_t hp_reg;
/* heap.c: hostpin's own blocks for the malloc family. */
HP_HIDDEN void *hp_block_alloc(size_t n, size_t align, int zero);
HP_HIDDEN int hp_block_free(void *p); /* 1 if p was ours and is released */
HP_HIDDEN void *hp_block_realloc(void *p, size_t n, int *handled);
HP_HIDDEN size_t hp_block_usable(const void *p, int *handled);
/* maps.c: the application's mappings. */
HP_HIDDEN void hp_mmap_track(void *p, size_t len, int prot, int flags,
			     const void *caller);
HP_HIDDEN void hp_range_release(uintptr_t a, size_t len);
/* maps.c: before a release's capture gate, the registered blocks' last
 * async copies in [a, a+len) waited for (hp_cuda_settle); no registry walk
 * before the first last-copy event (hp_cuda_events_tracked). */
HP_HIDDEN void hp_settle_range(uintptr_t a, size_t len);
/* maps.c: non-zero while a release of (part of) a tracked range is in
 * progress: its survivors may not be tracked yet (foreign.c waits). */
HP_HIDDEN int hp_carving(void);
/* maps.c: might [a, b) overlap a tracked range?  (the registry's bounds) */
HP_HIDDEN int hp_maps_may_hold(uintptr_t a, uintptr_t b);
/* maps.c: a CUDA graph capture that prohibits this thread's driver calls,
 * and [a, a+len) overlaps a registered range: 1 (only whole ones), 2 (part
 * of one); 0 otherwise.  hp_munmap_range: the program's munmap. */
HP_HIDDEN int hp_capture_holds(uintptr_t a, size_t len);
HP_HIDDEN int hp_munmap_range(void *a, size_t len);
/* maps.c: mmap(MAP_FIXED) over [a, a+len): 0 once what was there is
 * released, or -1 (ENOMEM: refused, nothing changed). */
HP_HIDDEN int hp_fixed_release(uintptr_t a, size_t len);
HP_HIDDEN void *hp_mremap_do(void *old, size_t oldlen, size_t newlen,
			     int flags, void *new_addr);
/* maps_advise.c: the program's madvise over tracked ranges. */
HP_HIDDEN int hp_madvise_do(void *a, size_t len, int advice);
/* leak.c: does [a, a+len) hold a leaked range (its device registration
 * could not be released)?  munmap that leaves such ranges mapped. */
HP_HIDDEN int hp_leaked_in(uintptr_t a, size_t len);
HP_HIDDEN int hp_munmap_do(void *a, size_t len);
/* numa.c: the program's own MADV_HUGEPAGE / MADV_NOHUGEPAGE over
 * [a, a+len): hostpin never advises those blocks again. */
HP_HIDDEN void hp_thp_advised(uintptr_t a, size_t len);
/* pin.c: adoption, fork; foreign.c: the program's own registrations. */
HP_HIDDEN void hp_pin_fork_child(void);
/* A forked child: the holds the parent's threads had end (adopt.c). */
HP_HIDDEN void hp_pin_fork_unbusy(void);
/* register.c: a forked child registers nothing in the background; blocks
 * registered in the background so far, and (*direct) the copies that went
 * direct through a part registered meanwhile (statistics). */
HP_HIDDEN void hp_register_fork_child(void);
HP_HIDDEN uint64_t hp_register_background_done(uint64_t *direct);
/* Register every pending block now, if the backend is ready. */
HP_HIDDEN void hp_adopt_pending(void);
/* Unregister every registered block once its copies completed (the
 * coverage check newly failed); they stay unregistered. */
HP_HIDDEN void hp_pin_unregister_all(void);
/* The application registers / unregisters [p, p+n) itself.  begin:
 * EBUSY when a block there kept a copy in flight too long to step aside
 * from (foreign.c): hostpin's registration stays, the program's call is
 * refused as the driver refuses memory already registered, and ended
 * (hp_foreign_end); else 0. */
HP_HIDDEN int hp_foreign_begin(void *p, size_t n);
HP_HIDDEN void hp_foreign_end(void *p);
/* The program released an import (or registration) that was hostpin's. */
HP_HIDDEN void hp_import_dropped(void *p);
/* cache.c: the lock, for the fork handlers. */
HP_HIDDEN void hp_cache_lock(void);
HP_HIDDEN void hp_cache_unlock(void);
HP_HIDDEN void hp_cache_fork_child(void);
HP_HIDDEN int hp_cache_holds(const hp_rec_t *r); /* r is a cached block */

/* ---- allocation sites (sites.c) ---- */
HP_HIDDEN unsigned hp_site_capture(void);
HP_HIDDEN void hp_site_account(unsigned site, size_t len, int add);
HP_HIDDEN void hp_sites_report(int fd);

/* ---- pre-faulting (prefault.c) ---- */
HP_HIDDEN void hp_prefault(void *base, size_t len);
/* memlock.c: 1 if locking len more bytes, with `locked` already locked by
 * hostpin, fits RLIMIT_MEMLOCK (or the limit does not apply); else 0 with
 * *why set. */
HP_HIDDEN int hp_memlock_fits(size_t len, size_t locked, const char **why);

/* ---- backends (backend.h) ---- */
#include "backend/backend.h"
HP_HIDDEN extern const hp_backend_t *hp_backend;

/* A size as people read it, into buf (at least 24 bytes): 512B, 64.0K,
 * 34.0M (binary units, one decimal); the reports' one unit style (exact
 * bytes go in JSON).  No floating point: the library's formatter has none. */
static inline const char *hp_human(uint64_t b, char *buf)
{
	if (b < 1024) {
		hp_snprintf(buf, 24, "%lluB", (unsigned long long)b);
		return buf;
	}
	uint64_t d = 1024;
	int i = 0;
	while (b / d >= 1024 && i < 4)
		d <<= 10, i++;
	uint64_t whole = b / d, tenth = ((b % d) * 10 + d / 2) / d;
	if (tenth == 10)
		whole++, tenth = 0;
	if (whole == 1024 && i < 4) /* 1023.96M rounds to 1.0G, not 1024.0M */
		whole = 1, i++;
	hp_snprintf(buf, 24, "%llu.%llu%c", (unsigned long long)whole,
		    (unsigned long long)tenth, "KMGTP"[i]);
	return buf;
}

#endif
