/* What the fake drivers share: a table of host ranges the driver holds
 * (registrations or imports), a log line per event with the caller's pid,
 * an audit that flags ranges unmapped while held, and fault injection.
 * Before including, a fake defines FAKE_RESULT (its result type),
 * FAKE_UNINIT (its "not initialised" code), FAKE_DEFAULT_FAIL (the code an
 * injected failure returns unless told), FAKE_FAIL_ENV (the variable naming
 * failures, "fn:N[:code],...") and FAKE_HELD (what a held range is called in
 * violation lines). */
#ifndef FAKE_COMMON_H
#define FAKE_COMMON_H

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define MAXHELD 4096
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int initialized;
static struct {
	char *base;
	size_t len;
	void *owner; /* the context that registered it (CUDA) */
	unsigned flags; /* its registration flags (CUDA) */
} held[MAXHELD];
static int nheld;
static int logfd = -1;
static const char *tag = ""; /* printed after the pid when non-empty */

static void logf_(const char *fmt, ...)
{
	char buf[512];
	int n = snprintf(buf, sizeof(buf), "%d %s%s", (int)getpid(), tag,
			 *tag ? " " : "");
	va_list ap;
	va_start(ap, fmt);
	n += vsnprintf(buf + n, sizeof(buf) - (size_t)n, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(buf) - 2)
		n = (int)sizeof(buf) - 2;
	buf[n++] = '\n';
	if (logfd >= 0)
		(void)!write(logfd, buf, (size_t)n);
}

/* Is every page of [p, p+n) mapped?  mincore fails with ENOMEM when any
 * page of its range is unmapped: one call per 16 MiB, so auditing on every
 * driver call stays cheap. */
static int mapped(const void *p, size_t n)
{
	uintptr_t a = (uintptr_t)p & ~(uintptr_t)4095;
	size_t len = ((uintptr_t)p + n - a + 4095) & ~(size_t)4095;
	unsigned char v[4096];
	for (size_t off = 0; off < len; off += sizeof(v) * 4096) {
		size_t k = len - off < sizeof(v) * 4096 ? len - off
							: sizeof(v) * 4096;
		if (mincore((void *)(a + off), k, v) != 0 && errno == ENOMEM)
			return 0;
	}
	return 1;
}

/* Every held range must still be mapped: one released while held is what
 * invariant 1 forbids. */
static void audit(void)
{
	/* FAKE_CUDA_TIMED=2, the memcpy-bound benchmark model (issue 43):
	 * no audit, a mincore per 16 MiB held on every call (tens of
	 * microseconds of the caller's CPU a call once a few hundred MiB are
	 * registered, where a driver's call costs a few) */
	static int skip = -1;
	if (skip < 0) {
		const char *e = getenv("FAKE_CUDA_TIMED");
		skip = e && *e == '2';
	}
	for (int i = 0; i < nheld && !skip; i++)
		if (!mapped(held[i].base, held[i].len)) {
			logf_("VIOLATION " FAKE_HELD "-range-unmapped %p %zu",
			      (void *)held[i].base, held[i].len);
			held[i] = held[--nheld];
			i--;
		}
}

/* Index of the held range starting at p (exact) or overlapping [p, p+n). */
static int find(const char *p, size_t n, int exact)
{
	for (int i = 0; i < nheld; i++) {
		if (exact && held[i].base == p)
			return i;
		if (!exact && p < held[i].base + held[i].len &&
		    held[i].base < p + n)
			return i;
	}
	return -1;
}

/* Is [p, p+n) inside one held range? */
static int held_covers(const void *p, size_t n)
{
	pthread_mutex_lock(&mu);
	int yes = 0;
	for (int i = 0; i < nheld; i++)
		if ((const char *)p >= held[i].base &&
		    (const char *)p + n <= held[i].base + held[i].len)
			yes = 1;
	pthread_mutex_unlock(&mu);
	return yes;
}

/* A program may arm one failure itself (tests/fuzz): the nth call of fn
 * from now, on any thread but those that declared themselves exempt
 * (fake_*_fail_exempt(1): a program's other threads), answers code;
 * disarmed by fake_*_fail_arm(NULL, 0, 0).  Called outside the fake's
 * lock. */
static struct {
	char name[64];
	int n, code;
} armed;
static __thread int fail_exempt;
static __attribute__((unused)) void fail_arm(const char *fn, int n, int code)
{
	pthread_mutex_lock(&mu);
	armed.n = fn ? n : 0;
	if (fn)
		snprintf(armed.name, sizeof(armed.name), "%s", fn);
	armed.code = code;
	pthread_mutex_unlock(&mu);
}

static FAKE_RESULT inject(const char *fn)
{
	if (armed.n > 0 && !fail_exempt && strcmp(armed.name, fn) == 0 &&
	    --armed.n == 0) {
		logf_("INJECT %s %d (armed)", fn, armed.code);
		return (FAKE_RESULT)armed.code;
	}
	static struct {
		char name[64];
		int n, seen, code;
	} rule[16];
	static int nrule = -1;
	if (nrule < 0) {
		nrule = 0;
		const char *s = getenv(FAKE_FAIL_ENV);
		while (s && *s && nrule < 16) {
			int code = (int)FAKE_DEFAULT_FAIL, n = 1, used = 0;
			char name[64];
			if (sscanf(s, "%63[^:]:%d%n", name, &n, &used) < 2)
				break;
			s += used;
			if (*s == ':') {
				int u2 = 0;
				sscanf(s + 1, "%i%n", &code, &u2);
				s += 1 + u2;
			}
			strcpy(rule[nrule].name, name);
			rule[nrule].n = n, rule[nrule].code = code;
			rule[nrule++].seen = 0;
			if (*s == ',')
				s++;
		}
	}
	for (int i = 0; i < nrule; i++)
		if (strcmp(rule[i].name, fn) == 0 && ++rule[i].seen == rule[i].n) {
			logf_("INJECT %s %d", fn, rule[i].code);
			return (FAKE_RESULT)rule[i].code;
		}
	return (FAKE_RESULT)0;
}

/* Set while the driver allocates memory for itself inside one of its entry
 * points (FAKE_*_ALLOC_IN_CALL): any call into the driver from there (an
 * allocator registering the block) is a VIOLATION. */
static __thread volatile int in_call;
static void *fake_alloc_in_call(const char *how);

#define ENTRY(fn)                                                             \
	pthread_mutex_lock(&mu);                                              \
	if (in_call)                                                          \
		logf_("VIOLATION reentrant-call %s", fn);                     \
	logf_("CALL %s", fn);                                                 \
	audit();                                                              \
	FAKE_RESULT inj_ = inject(fn);                                        \
	if (inj_ != 0) {                                                      \
		pthread_mutex_unlock(&mu);                                    \
		return inj_;                                                  \
	}
#define RETURN(v)                                                             \
	do {                                                                  \
		FAKE_RESULT r_ = (v);                                         \
		pthread_mutex_unlock(&mu);                                    \
		return r_;                                                    \
	} while (0)
#define NEED_INIT                                                             \
	if (!initialized)                                                     \
	RETURN(FAKE_UNINIT)

#endif

/* The driver's own 4 MiB allocation inside an entry point, with malloc or
 * with C++'s operator new (how: "malloc" or "new"; NULL: none), touched
 * and freed, with in_call raised (not under mu: an allocator may call in). */
/* weak: only a process with libstdc++ (the Level Zero loader brings it)
 * has them; "new" falls back to malloc elsewhere */
void *_Znwm(size_t) __attribute__((weak));      /* operator new */
void _ZdlPv(void *) __attribute__((weak));      /* operator delete */
static __attribute__((unused)) void *fake_alloc_in_call(const char *how)
{
	if (!how || !*how)
		return NULL;
	int cxx = strcmp(how, "new") == 0 && _Znwm && _ZdlPv;
	in_call = 1;
	char *volatile own = cxx ? _Znwm((size_t)4 << 20) : malloc((size_t)4 << 20);
	memset(own, 1, (size_t)4 << 20);
	if (cxx)
		_ZdlPv(own);
	else
		free(own);
	in_call = 0;
	return NULL;
}
