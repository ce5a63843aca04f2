/* Logging that never allocates: own formatter into a stack buffer, write(2).
 * Safe inside malloc, signal-free paths and early start-up. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "hp.h"

int hp_log_level = HP_LOG_WARN;
int hp_log_fd = 2;

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

/* Supports %s %c %d %i %u %x %p %% with l, ll and z length modifiers and a
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
		case 'x': {
			unsigned long long v =
			    lng ? va_arg(ap, unsigned long long)
				: va_arg(ap, unsigned);
			at = put_num(buf, cap, at, v, 0, *f == 'x' ? 16 : 10,
				     width);
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

void hp_write_all(int fd, const char *s, size_t n)
{
	while (n) {
		ssize_t w = write(fd, s, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		s += w, n -= (size_t)w;
	}
}

static void vlog(const char *fmt, va_list ap)
{
	char buf[512];
	int e = errno;
	size_t n = (size_t)hp_snprintf(buf, sizeof(buf), "hostpin[%d]: ",
				       (int)getpid());
	n += (size_t)hp_fmt(buf + n, sizeof(buf) - n - 1, fmt, ap);
	if (n > sizeof(buf) - 2)
		n = sizeof(buf) - 2;
	buf[n++] = '\n';
	hp_write_all(hp_log_fd, buf, n);
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

int hp_open_out(const char *path, int append)
{
	/* Secure-execution processes (setuid...) never get files written. */
	if (getauxval(AT_SECURE))
		return -1;
	char p[512];
	if (hp_expand_path(p, sizeof(p), path))
		return -1;
	return open(p, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW |
			   (append ? O_APPEND : O_TRUNC),
		    0644);
}

void hp_log_open(void)
{
	const char *path = hp_optstr[HP_OPT_LOG_FILE];
	if (!path[0])
		return;
	int fd = hp_open_out(path, 1);
	if (fd < 0) {
		hp_log(HP_LOG_WARN,
		       "cannot open HOSTPIN_LOG_FILE=%s (errno %d; symlinks "
		       "are refused); logging to stderr",
		       path, errno);
		return;
	}
	hp_log_fd = fd;
}
