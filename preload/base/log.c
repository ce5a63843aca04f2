/* Logging that never allocates: own formatter into a stack buffer, write(2).
 * Safe inside malloc, signal-free paths and early start-up. */
#include <errno.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <time.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../hp.h"
#include "outfile.h"

int hp_log_level = HP_LOG_WARN;
_Atomic int hp_log_fd = 2;
/* The expanded HOSTPIN_LOG_FILE path while logging to it; set once by
 * init before any other thread can log. */
static char log_path[512];
/* Set when a write to the log file failed: messages go to stderr from then
 * on.  Relaxed: it only picks the descriptor, it publishes nothing. */
static _Atomic int log_broken;

static size_t put(char *buf, size_t cap, size_t at, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++, at++)
		if (at + 1 < cap)
			buf[at] = s[i];
	return at;
}

static size_t put_num(char *buf, size_t cap, size_t at, unsigned long long v,
		      int neg, unsigned base, int width)
{
	char tmp[24];
	int n = 0;
	do {
		tmp[n++] = "0123456789abcdef"[v % base];
		v /= base;
	} while (v);
	while (n < width && n < 23)
		tmp[n++] = '0';
	if (neg)
		at = put(buf, cap, at, "-", 1);
	while (n)
		at = put(buf, cap, at, &tmp[--n], 1);
	return at;
}

/* Supports %s %c %d %i %u %o %x %p %% with l, ll and z length modifiers and a
 * zero-padded width (%06llu). */
int hp_fmt(char *buf, size_t cap, const char *f, va_list ap)
{
	size_t at = 0;
	for (; *f; f++) {
		if (*f != '%') {
			at = put(buf, cap, at, f, 1);
			continue;
		}
		int lng = 0, width = 0;
		f++;
		while (*f >= '0' && *f <= '9')
			width = width * 10 + (*f++ - '0');
		while (*f == 'l' || *f == 'z')
			lng += *f == 'z' ? 2 : 1, f++;
		switch (*f) {
		case 's': {
			const char *s = va_arg(ap, const char *);
			if (!s)
				s = "(null)";
			at = put(buf, cap, at, s, strlen(s));
			break;
		}
		case 'c': {
			char c = (char)va_arg(ap, int);
			at = put(buf, cap, at, &c, 1);
			break;
		}
		case 'd':
		case 'i': {
			long long v = lng ? va_arg(ap, long long)
					  : va_arg(ap, int);
			at = put_num(buf, cap, at,
				     v < 0 ? 0ull - (unsigned long long)v
					   : (unsigned long long)v,
				     v < 0, 10, width);
			break;
		}
		case 'u':
		case 'o':
		case 'x': {
			unsigned long long v =
			    lng ? va_arg(ap, unsigned long long)
				: va_arg(ap, unsigned);
			at = put_num(buf, cap, at, v, 0,
				     *f == 'x' ? 16 : *f == 'o' ? 8 : 10, width);
			break;
		}
		case 'p':
			at = put(buf, cap, at, "0x", 2);
			at = put_num(buf, cap, at,
				     (uintptr_t)va_arg(ap, void *), 0, 16, 0);
			break;
		case '%':
			at = put(buf, cap, at, "%", 1);
			break;
		case '\0':
			f--;
			break;
		default:
			at = put(buf, cap, at, f - 1, 2);
		}
	}
	if (cap)
		buf[at < cap ? at : cap - 1] = '\0';
	return (int)at;
}

int hp_snprintf(char *buf, size_t cap, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = hp_fmt(buf, cap, fmt, ap);
	va_end(ap);
	return n;
}

/* hostpin's writes (the log, the reports, --show) never kill the program:
 * SIGXFSZ (a file at RLIMIT_FSIZE) and SIGPIPE (a pipe whose reader has
 * gone) are blocked in this thread around them, and the one our write
 * raised is taken back before the mask is restored; the write fails with
 * EFBIG or EPIPE instead, which the caller reports.  A signal of the same
 * kind that was pending before stays pending, and the program's own writes
 * get theirs as always.  Raw system calls: signal-safe, no allocation. */
int hp_write_all(int fd, const char *s, size_t n)
{
	sigset_t quiet, old, pend;
	sigemptyset(&quiet);
	sigaddset(&quiet, SIGPIPE);
	sigaddset(&quiet, SIGXFSZ);
	int masked = pthread_sigmask(SIG_BLOCK, &quiet, &old) == 0;
	sigemptyset(&pend);
	if (masked)
		sigpending(&pend);
	int err = 0;
	while (n) {
		ssize_t w = write(fd, s, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			err = errno;
			break;
		}
		if (w == 0) {
			err = EIO;
			break;
		}
		s += w, n -= (size_t)w;
	}
	if (masked) {
		static const struct timespec now = {0, 0};
		sigset_t ours;
		sigemptyset(&ours);
		if (err == EPIPE && !sigismember(&pend, SIGPIPE))
			sigaddset(&ours, SIGPIPE);
		if (err == EFBIG && !sigismember(&pend, SIGXFSZ))
			sigaddset(&ours, SIGXFSZ);
		while (sigtimedwait(&ours, NULL, &now) > 0)
			;
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	}
	return err;
}

const char *hp_strerror(int e)
{
	/* strerror(3) may allocate (its unknown-error buffer, locale data):
	 * the usual file errors, in glibc's words. */
	switch (e) {
	case EPERM: return "Operation not permitted";
	case ENOENT: return "No such file or directory";
	case EIO: return "Input/output error";
	case ENXIO: return "No such device or address";
	case EBADF: return "Bad file descriptor";
	case EACCES: return "Permission denied";
	case EEXIST: return "File exists";
	case ENOTDIR: return "Not a directory";
	case EISDIR: return "Is a directory";
	case EINVAL: return "Invalid argument";
	case ENFILE: return "Too many open files in system";
	case EMFILE: return "Too many open files";
	case ETXTBSY: return "Text file busy";
	case EFBIG: return "File too large";
	case ENOSPC: return "No space left on device";
	case EROFS: return "Read-only file system";
	case EPIPE: return "Broken pipe";
	case ENAMETOOLONG: return "File name too long";
	case ELOOP: return "Too many levels of symbolic links";
	case EDQUOT: return "Disk quota exceeded";
	case ENOMEM: return "Cannot allocate memory";
	case EAGAIN: return "Resource temporarily unavailable";
	case EINTR: return "Interrupted system call";
	case ESTALE: return "Stale file handle";
	case ENODEV: return "No such device";
	case EOPNOTSUPP: return "Operation not supported";
	default: return "Unknown error";
	}
}

/* The log's own descriptors sit at or above this number, out of the way of
 * programs that dup2 onto low numbers. */
#define LOG_FD_MIN 1000
/* Which file hp_log_fd was opened on (when it is not stderr): a program that
 * closes every descriptor it did not open and then opens its own file (a
 * checkpoint) may get the log's number; a log line there is lost data. */
static _Atomic uint64_t log_dev, log_ino;
/* Set while one thread finds a new descriptor for the log. */
static _Atomic int log_fixing;

/* fd moved to a high, close-on-exec number (or fd itself if it cannot be). */
static int log_high(int fd)
{
	int h = fcntl(fd, F_DUPFD_CLOEXEC, LOG_FD_MIN);
	if (h < 0)
		return fd;
	close(fd);
	return h;
}

void hp_log_use(int fd)
{
	struct stat st;
	if (fstat(fd, &st))
		return; /* keep the log where it was */
	/* relaxed: a reader that sees a mix of old and new takes the slow
	 * path in hp_log_target, which checks again under log_fixing */
	atomic_store_explicit(&log_dev, (uint64_t)st.st_dev, memory_order_relaxed);
	atomic_store_explicit(&log_ino, (uint64_t)st.st_ino, memory_order_relaxed);
	/* release: pairs with the acquire in hp_log_target */
	atomic_store_explicit(&hp_log_fd, fd, memory_order_release);
}

/* fd is still the file the log was opened on. */
static int log_ours(int fd)
{
	struct stat st;
	return fstat(fd, &st) == 0 &&
	       (uint64_t)st.st_dev == atomic_load_explicit(&log_dev,
							  memory_order_relaxed) &&
	       (uint64_t)st.st_ino == atomic_load_explicit(&log_ino,
							  memory_order_relaxed);
}

int hp_log_target(void)
{
	/* acquire: pairs with the release in hp_log_use */
	int fd = atomic_load_explicit(&hp_log_fd, memory_order_acquire);
	if (fd == 2 || log_ours(fd))
		return fd;
	/* Closed by the program, and perhaps its own file under the number
	 * now: never write there.  One thread reopens the log file (append)
	 * at a new high number; meanwhile the others use stderr. */
	if (atomic_exchange_explicit(&log_fixing, 1, memory_order_acquire))
		return 2;
	fd = atomic_load_explicit(&hp_log_fd, memory_order_acquire);
	if (fd != 2 && !log_ours(fd)) {
		int nfd = -1, err = EBADF;
		char why[320] = "";
		if (log_path[0]) {
			nfd = hp_out_open(log_path, 1, 0600, why, sizeof(why));
			err = errno;
		}
		if (nfd >= 0) {
			nfd = log_high(nfd);
			hp_log_use(nfd);
		}
		if (nfd < 0 || atomic_load_explicit(&hp_log_fd,
						    memory_order_relaxed) != nfd) {
			if (nfd >= 0)
				close(nfd);
			/* release: as in hp_log_use */
			atomic_store_explicit(&hp_log_fd, 2, memory_order_release);
			if (log_path[0]) {
				char buf[768];
				int m = hp_snprintf(
				    buf, sizeof(buf),
				    "hostpin[%d]: the program closed hostpin's "
				    "descriptor of HOSTPIN_LOG_FILE=%s and it "
				    "cannot be opened again: %s; "
				    "logging to stderr from now on\n",
				    (int)getpid(), log_path,
				    hp_file_why(err, why, sizeof(why)));
				hp_write_all(2, buf,
					     (size_t)m < sizeof(buf)
						 ? (size_t)m
						 : sizeof(buf) - 1);
			}
		}
	}
	fd = atomic_load_explicit(&hp_log_fd, memory_order_acquire);
	atomic_store_explicit(&log_fixing, 0, memory_order_release);
	return fd;
}

/* Where a log line goes: the log file, or stderr once that has failed. */
void hp_log_write(const char *s, size_t n)
{
	/* relaxed: see log_broken */
	if (atomic_load_explicit(&log_broken, memory_order_relaxed)) {
		hp_write_all(2, s, n);
		return;
	}
	int err = hp_write_all(hp_log_target(), s, n);
	if (err == 0 || !log_path[0])
		return; /* stderr itself failed: nowhere left to say so */
	if (atomic_exchange_explicit(&log_broken, 1, memory_order_relaxed)) {
		hp_write_all(2, s, n); /* another thread said it */
		return;
	}
	char buf[768];
	int m = hp_snprintf(buf, sizeof(buf),
			    "hostpin[%d]: cannot write HOSTPIN_LOG_FILE=%s: %s "
			    "(errno %d); this message and every later one, the "
			    "report at exit included, go to stderr instead\n",
			    (int)getpid(), log_path, hp_strerror(err), err);
	hp_write_all(2, buf, (size_t)m < sizeof(buf) ? (size_t)m
						     : sizeof(buf) - 1);
	hp_write_all(2, s, n);
}

size_t hp_escape(char *out, size_t cap, const char *s, size_t n)
{
	size_t at = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		char e[4] = {'\\', 0, 0, 0};
		size_t k = 2;
		/* C0 controls, DEL, and C1 controls in UTF-8 (0xc2 0x80-0x9f),
		 * which some terminals obey as escape sequences */
		int c1 = c == 0xc2 && i + 1 < n &&
			 (unsigned char)s[i + 1] >= 0x80 &&
			 (unsigned char)s[i + 1] <= 0x9f;
		/* a backslash doubled: a backslash and an n in the value
		 * must not read as an escaped newline */
		if (c == '\\')
			e[1] = '\\';
		else if (c == '\n')
			e[1] = 'n';
		else if (c == '\t')
			e[1] = 't';
		else if (c == '\r')
			e[1] = 'r';
		else if (c < 0x20 || c == 0x7f || c1) {
			if (c1)
				c = (unsigned char)s[++i];
			e[1] = 'x', e[2] = "0123456789abcdef"[c >> 4],
			e[3] = "0123456789abcdef"[c & 15], k = 4;
		} else
			e[0] = (char)c, k = 1;
		if (at + k >= cap)
			break;
		memcpy(out + at, e, k);
		at += k;
	}
	if (cap)
		out[at] = '\0';
	return at;
}

static void vlog(const char *fmt, va_list ap)
{
	char raw[512], buf[768];
	int e = errno;
	size_t n = (size_t)hp_snprintf(buf, sizeof(buf), "hostpin[%d]: ",
				       (int)getpid());
	size_t m = (size_t)hp_fmt(raw, sizeof(raw), fmt, ap);
	if (m > sizeof(raw) - 1)
		m = sizeof(raw) - 1;
	/* what a message quotes (a knob's value, a name, a path) may hold
	 * any byte: one line, and nothing a terminal acts on */
	n += hp_escape(buf + n, sizeof(buf) - n - 1, raw, m);
	buf[n++] = '\n';
	hp_log_write(buf, n);
	errno = e;
}

void hp_log(int level, const char *fmt, ...)
{
	if (level > hp_log_level)
		return;
	va_list ap;
	va_start(ap, fmt);
	vlog(fmt, ap);
	va_end(ap);
}

void hp_fatal(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vlog(fmt, ap);
	va_end(ap);
	abort();
}

int hp_expand_path(char *out, size_t cap, const char *t)
{
	size_t at = 0;
	for (; *t; t++) {
		char num[24];
		const char *s = t;
		size_t n = 1;
		if (t[0] == '%' && t[1] == 'p') {
			n = (size_t)hp_snprintf(num, sizeof(num), "%d",
						(int)getpid());
			s = num, t++;
		}
		if (at + n + 1 > cap)
			return ENAMETOOLONG;
		memcpy(out + at, s, n);
		at += n;
	}
	out[at] = '\0';
	return 0;
}

int hp_open_out(const char *tmpl, int append, char *path, size_t cap,
		char *why, size_t wcap)
{
	why[0] = '\0';
	int err = hp_expand_path(path, cap, tmpl);
	if (err) {
		/* name what there is: the template */
		hp_snprintf(path, cap, "%s", tmpl);
		errno = err;
		return -1;
	}
	/* Secure-execution processes (setuid...) never get files written. */
	if (getauxval(AT_SECURE)) {
		errno = EPERM;
		return -1;
	}
	return hp_out_open(path, append, 0600, why, wcap);
}

/* The reason in a file error: strerror's words, except where the errno
 * alone would mislead. */
const char *hp_file_reason(int err)
{
	if (err == ELOOP)
		return "it is a symbolic link, which hostpin refuses (O_NOFOLLOW)";
	if (err == EPERM && getauxval(AT_SECURE))
		return "a secure-execution (set-user-ID) process, where hostpin "
		       "writes no files";
	return hp_strerror(err);
}

const char *hp_file_why(int err, char *why, size_t wcap)
{
	if (!why[0])
		hp_snprintf(why, wcap, "%s (errno %d)", hp_file_reason(err),
			    err);
	return why;
}

void hp_log_open(void)
{
	const char *tmpl = hp_optstr[HP_OPT_LOG_FILE];
	char path[sizeof(log_path)], why[320];
	if (!tmpl[0])
		return;
	int fd = hp_open_out(tmpl, 1, path, sizeof(path), why, sizeof(why));
	if (fd < 0) {
		int err = errno;
		hp_log(HP_LOG_WARN,
		       "cannot open HOSTPIN_LOG_FILE=%s: %s; "
		       "logging to stderr instead",
		       path, hp_file_why(err, why, sizeof(why)));
		return;
	}
	memcpy(log_path, path, sizeof(log_path));
	hp_log_use(log_high(fd));
}
