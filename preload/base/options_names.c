/* Knobs, the names: every HOSTPIN_* name hostpin knows (the knobs of
 * options.def and its other variables), the known name nearest a typo, and
 * one warning per unknown HOSTPIN_* variable, said once per job.  No
 * allocation.  Parsing and loading: options.c. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "../hp.h"

static char lower(char c)
{
	return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

/* Every name hostpin knows under HOSTPIN_: the knobs, then HP_ENV names. */
static const char *const known_names[] = {
#define HP_OPT(name, kind, def, choices, min, max, doc) #name,
#define HP_ENV(name, doc) #name,
#include "options.def"
#undef HP_OPT
#undef HP_ENV
};
#define N_KNOWN (sizeof(known_names) / sizeof(known_names[0]))

/* Edit distance (insert, delete, substitute; case-insensitive) between two
 * names, capped at 63 characters each: no allocation. */
static unsigned edit_distance(const char *a, size_t na, const char *b)
{
	unsigned row[64];
	size_t nb = strlen(b);
	if (na > 63)
		na = 63;
	if (nb > 63)
		nb = 63;
	for (size_t j = 0; j <= nb; j++)
		row[j] = (unsigned)j;
	for (size_t i = 1; i <= na; i++) {
		unsigned diag = row[0];
		row[0] = (unsigned)i;
		for (size_t j = 1; j <= nb; j++) {
			unsigned up = row[j];
			unsigned best = diag + (lower(a[i - 1]) != lower(b[j - 1]));
			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			diag = up;
		}
	}
	return row[nb];
}

const char *hp_opt_closest(const char *name, size_t len)
{
	const char *best = known_names[0];
	unsigned bd = ~0u;
	for (size_t k = 0; k < N_KNOWN; k++) {
		unsigned d = edit_distance(name, len, known_names[k]);
		if (d < bd)
			bd = d, best = known_names[k];
	}
	return best;
}

int hp_opt_known(const char *name, size_t len)
{
	for (size_t k = 0; k < N_KNOWN; k++)
		if (strlen(known_names[k]) == len &&
		    strncmp(known_names[k], name, len) == 0)
			return 1;
	return 0;
}

extern char **environ;

/* The unknown variables named one by one, at most; the rest are counted in
 * one line. */
#define UNKNOWN_SAID 16

/* Whether the parent process started with hostpin in its LD_PRELOAD (the
 * result), and which of entries e[0..k) it started with (seen[i]): it
 * warned about those already, so a typo is said once per job, not again
 * by every worker of torchrun or command of a shell.  One read of
 * /proc/PPID/environ (the parent's environment as it started), whatever
 * the number of entries: start-up stays linear in the environment.  An
 * entry longer than the buffer counts as not seen. */
static int parent_had(const char *const *e, int k, int *seen)
{
	char path[40], buf[4096];
	hp_snprintf(path, sizeof(path), "/proc/%d/environ", (int)getppid());
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	int preload = 0, skip = 0;
	size_t len = 0;
	for (;;) {
		ssize_t r = read(fd, buf + len, sizeof(buf) - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		len += (size_t)r;
		size_t start = 0;
		for (size_t i = 0; i < len; i++) {
			if (buf[i])
				continue;
			const char *p = buf + start;
			if (!skip && strncmp(p, "HOSTPIN_", 8) == 0)
				for (int j = 0; j < k; j++)
					if (!seen[j] && strcmp(p, e[j]) == 0)
						seen[j] = 1;
			if (!skip && strncmp(p, "LD_PRELOAD=", 11) == 0 &&
			    strstr(p, "hostpin"))
				preload = 1;
			skip = 0;
			start = i + 1;
		}
		memmove(buf, buf + start, len - start);
		len -= start;
		if (len == sizeof(buf)) /* one entry fills it: not ours */
			skip = 1, len = 0;
	}
	close(fd);
	return preload;
}

/* One warning per HOSTPIN_* variable that names no knob (unless the
 * parent process said it already), for the first UNKNOWN_SAID of them,
 * and one line for the rest; their number. */
int hp_opt_report_unknown(void)
{
	const char *said[UNKNOWN_SAID];
	int seen[UNKNOWN_SAID] = {0};
	int n = 0, k = 0;
	if (getauxval(AT_SECURE) || environ == NULL)
		return 0; /* secure_getenv ignores every knob there anyway */
	for (char **e = environ; *e; e++) {
		if (strncmp(*e, "HOSTPIN_", 8) != 0)
			continue;
		const char *name = *e + 8, *eq = strchr(name, '=');
		if (hp_opt_known(name, eq ? (size_t)(eq - name) : strlen(name)))
			continue;
		if (k < UNKNOWN_SAID)
			said[k++] = *e;
		n++;
	}
	if (!n)
		return 0;
	int preload = parent_had(said, k, seen), quiet = preload;
	for (int i = 0; i < k; i++) {
		const char *name = said[i] + 8, *eq = strchr(name, '=');
		size_t len = eq ? (size_t)(eq - name) : strlen(name);
		char shown[64];
		size_t m = len < sizeof(shown) - 1 ? len : sizeof(shown) - 1;
		memcpy(shown, name, m);
		shown[m] = '\0';
		if (preload && seen[i])
			continue;
		quiet = 0;
		hp_log(HP_LOG_WARN,
		       "unknown variable HOSTPIN_%s ignored; did you mean "
		       "HOSTPIN_%s? (hostpin-reference(7) lists every knob)%s",
		       shown, hp_opt_closest(name, len),
		       hp_opt[HP_OPT_STRICT] ? " (HOSTPIN_STRICT=1: fatal)"
					     : "");
	}
	if (n > k && !quiet)
		hp_log(HP_LOG_WARN, "%d more unknown HOSTPIN_* variables "
		       "ignored%s", n - k,
		       hp_opt[HP_OPT_STRICT] ? " (HOSTPIN_STRICT=1: fatal)" : "");
	return n;
}
