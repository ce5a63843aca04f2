/* Knobs: parsed from the environment with secure_getenv, from the one table
 * in options.def.  No allocation. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include "../hp.h"

const hp_optdesc_t hp_optdesc[HP_OPT_COUNT] = {
#define HP_OPT(name, kind, def, choices, min, max, doc)                        \
	{#name, HP_K_##kind, def, choices, min, max, doc},
#include "options.def"
#undef HP_OPT
};

uint64_t hp_opt[HP_OPT_COUNT];
char hp_optstr[HP_OPT_COUNT][256];
/* A percent knob's N (N% of the memory base), 0 for a plain size: what
 * the settings list says beside the bytes it became. */
static unsigned char cap_pct[HP_OPT_COUNT];

static int parse_u64(const char *s, const char **end, uint64_t *out)
{
	uint64_t v = 0;
	if (*s < '0' || *s > '9')
		return EINVAL;
	for (; *s >= '0' && *s <= '9'; s++) {
		if (v > (UINT64_MAX - 9) / 10)
			return EINVAL;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	*end = s, *out = v;
	return 0;
}

static char lower(char c)
{
	return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

/* ASCII, case-insensitive: locale-free and allocation-free. */
static int ieq(const char *a, const char *b)
{
	for (; *a && lower(*a) == lower(*b); a++, b++)
		;
	return *a == '\0' && *b == '\0';
}

/* A number, then optionally k/m/g/t (any case, powers of 1024) followed by
 * an optional b or ib, or a bare b: 4096, 4096B, 64K, 64kb, 64KiB, 4mb. */
static int parse_size(const char *s, uint64_t *out)
{
	const char *e;
	uint64_t v;
	if (parse_u64(s, &e, &v))
		return EINVAL;
	unsigned sh = 0;
	switch (lower(*e)) {
	case 'k': sh = 10; break;
	case 'm': sh = 20; break;
	case 'g': sh = 30; break;
	case 't': sh = 40; break;
	case 'b': e++; break;
	case '\0': break;
	default: return EINVAL;
	}
	if (sh) {
		e++;
		if (lower(e[0]) == 'i' && lower(e[1]) == 'b')
			e += 2;
		else if (lower(*e) == 'b')
			e++;
	}
	if (*e || v > (UINT64_MAX >> sh))
		return EINVAL;
	*out = v << sh;
	return 0;
}

static int parse_bool(const char *s, uint64_t *out)
{
	static const char *const yes[] = {"1", "yes", "true", "on"};
	static const char *const no[] = {"0", "no", "false", "off"};
	for (int k = 0; k < 4; k++) {
		if (ieq(s, yes[k]) || ieq(s, no[k])) {
			*out = ieq(s, yes[k]);
			return 0;
		}
	}
	return EINVAL;
}

/* A size bound as people write it: the largest of K, M, G, T that divides
 * it exactly (4K, 1T, 1024T), else bytes. */
static void size_bound(uint64_t v, char *out, size_t cap)
{
	int u = 0;
	while (u < 4 && v && v % 1024 == 0)
		v /= 1024, u++;
	hp_snprintf(out, cap, "%llu%s", (unsigned long long)v,
		    (const char *[]){"", "K", "M", "G", "T"}[u]);
}

/* What a size knob takes, in the words the launcher uses too
 * (scripts/hostpin's sizearg): one phrase for both. */
static const char *size_words(int i, const hp_optdesc_t *d)
{
	static char buf[HP_OPT_COUNT][240];
	char lo[24], hi[24];
	size_bound(d->min, lo, sizeof(lo));
	size_bound(d->max, hi, sizeof(hi));
	hp_snprintf(buf[i], sizeof(buf[i]),
		    "a size from %s to %s: a number of bytes with an optional "
		    "K, M, G or T (4096, 4096B, 64K, 64kb, 2MiB, 1G; any case, "
		    "powers "
		    "of 1024)%s", lo, hi,
		    d->kind == HP_K_CAP ? ", or N% of the memory base from 1% "
					  "to 100%" : "");
	return buf[i];
}

/* Index of s in a '|'-separated list, or -1. */
static int enum_index(const char *choices, const char *s)
{
	size_t n = strlen(s);
	int i = 0;
	for (const char *c = choices; *c; i++) {
		const char *bar = strchr(c, '|');
		size_t len = bar ? (size_t)(bar - c) : strlen(c);
		if (len == n && strncmp(c, s, n) == 0)
			return i;
		if (!bar)
			break;
		c = bar + 1;
	}
	return -1;
}

int hp_opt_parse(int i, const char *s, uint64_t *out, const char **expect)
{
	const hp_optdesc_t *d = &hp_optdesc[i];
	switch (d->kind) {
	case HP_K_BOOL:
		*expect = "a boolean: 1, yes, true, on or 0, no, false, off "
			  "(any case)";
		return parse_bool(s, out);
	case HP_K_ENUM: {
		*expect = d->choices;
		int k = enum_index(d->choices, s);
		if (k < 0)
			return EINVAL;
		*out = (uint64_t)k;
		return 0;
	}
	case HP_K_STR:
		*expect = "a string of at most 255 bytes";
		if (strlen(s) > 255)
			return EINVAL;
		*out = 0;
		return 0;
	case HP_K_COUNT: {
		static char cbuf[HP_OPT_COUNT][64];
		hp_snprintf(cbuf[i], sizeof(cbuf[i]), "a number from %llu to %llu",
			    d->min, d->max);
		*expect = cbuf[i];
		const char *e;
		uint64_t v;
		if (parse_u64(s, &e, &v) || *e || v < d->min || v > d->max)
			return EINVAL;
		*out = v;
		return 0;
	}
	case HP_K_CAP: {
		size_t n = strlen(s);
		if (n > 1 && s[n - 1] == '%') {
			*expect = size_words(i, d);
			const char *e;
			uint64_t pct;
			if (parse_u64(s, &e, &pct) || *e != '%' || e[1] ||
			    pct < 1 || pct > 100)
				return EINVAL;
			*out = hp_mem_base() / 100 * pct;
			return 0;
		}
		__attribute__((fallthrough)); /* a plain size */
	}
	case HP_K_SIZE: {
		*expect = size_words(i, d);
		uint64_t v;
		if (parse_size(s, &v) || v < d->min || v > d->max)
			return EINVAL;
		*out = v;
		return 0;
	}
	}
	return EINVAL;
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

/* Whether the parent process started with hostpin in its LD_PRELOAD and
 * this very environment entry: then it warned about the entry already, and
 * a typo is said once per job, not again by every worker of torchrun or
 * command of a shell.  Read from /proc/PPID/environ (the parent's
 * environment as it started); an entry longer than the buffer counts as
 * not seen. */
static int parent_had(const char *entry)
{
	char path[40], buf[4096];
	hp_snprintf(path, sizeof(path), "/proc/%d/environ", (int)getppid());
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	int same = 0, preload = 0, skip = 0;
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
			const char *e = buf + start;
			if (!skip && strcmp(e, entry) == 0)
				same = 1;
			if (!skip && strncmp(e, "LD_PRELOAD=", 11) == 0 &&
			    strstr(e, "hostpin"))
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
	return same && preload;
}

/* One warning per HOSTPIN_* variable that names no knob (unless the
 * parent process said it already); their number. */
static int report_unknown(void)
{
	int n = 0;
	if (getauxval(AT_SECURE) || environ == NULL)
		return 0; /* secure_getenv ignores every knob there anyway */
	for (char **e = environ; *e; e++) {
		if (strncmp(*e, "HOSTPIN_", 8) != 0)
			continue;
		const char *name = *e + 8, *eq = strchr(name, '=');
		size_t len = eq ? (size_t)(eq - name) : strlen(name);
		if (hp_opt_known(name, len))
			continue;
		char shown[64];
		size_t m = len < sizeof(shown) - 1 ? len : sizeof(shown) - 1;
		memcpy(shown, name, m);
		shown[m] = '\0';
		n++;
		if (parent_had(*e))
			continue;
		hp_log(HP_LOG_WARN,
		       "unknown variable HOSTPIN_%s ignored; did you mean "
		       "HOSTPIN_%s? (hostpin(7) lists every knob)%s",
		       shown, hp_opt_closest(name, len),
		       hp_opt[HP_OPT_STRICT] ? " (HOSTPIN_STRICT=1: fatal)"
					     : "");
	}
	return n;
}

int hp_sys_path(char *out, size_t cap, const char *path)
{
	int n = hp_snprintf(out, cap, "%s%s", hp_optstr[HP_OPT_SYSFS_ROOT],
			    path);
	return n < 0 || (size_t)n >= cap ? ENAMETOOLONG : 0;
}

/* Read knob i from the environment: its value, or its default with the
 * bad value and what was expected in *badval, *badexp. */
static void load_one(int i, const char **badval, const char **badexp)
{
	const hp_optdesc_t *d = &hp_optdesc[i];
	char name[64];
	hp_snprintf(name, sizeof(name), "HOSTPIN_%s", d->name);
	const char *v = secure_getenv(name);
	const char *expect = "";
	*badval = NULL;
	if (!v)
		v = d->def;
	if (hp_opt_parse(i, v, &hp_opt[i], &expect)) {
		*badval = v, *badexp = expect;
		/* the built-in default always parses */
		hp_opt_parse(i, d->def, &hp_opt[i], &expect);
		v = d->def;
	}
	cap_pct[i] = 0;
	if (d->kind == HP_K_CAP && v[0] && v[strlen(v) - 1] == '%') {
		const char *e;
		uint64_t pct;
		if (parse_u64(v, &e, &pct) == 0)
			cap_pct[i] = (unsigned char)pct;
	}
	if (d->kind == HP_K_STR) {
		strncpy(hp_optstr[i], v, sizeof(hp_optstr[i]) - 1);
		hp_optstr[i][sizeof(hp_optstr[i]) - 1] = '\0';
	}
}

int hp_options_load(void)
{
	const char *badval[HP_OPT_COUNT], *badexp[HP_OPT_COUNT];
	/* A percent knob (HP_K_CAP) is a share of the memory base, which
	 * limits.c reads from the cgroup files under HOSTPIN_SYSFS_ROOT: every
	 * other knob, that one included, is read first. */
	for (int i = 0; i < HP_OPT_COUNT; i++)
		if (hp_optdesc[i].kind != HP_K_CAP)
			load_one(i, &badval[i], &badexp[i]);
	for (int i = 0; i < HP_OPT_COUNT; i++)
		if (hp_optdesc[i].kind == HP_K_CAP)
			load_one(i, &badval[i], &badexp[i]);
	/* Messages go where HOSTPIN_LOG_FILE says, at HOSTPIN_LOG's level:
	 * both are known now. */
	hp_log_level = (int)hp_opt[HP_OPT_LOG];
	hp_log_open();
	int bad = 0;
	for (int i = 0; i < HP_OPT_COUNT; i++) {
		if (!badval[i])
			continue;
		bad++;
		/* Always shown, whatever HOSTPIN_LOG says: the level itself
		 * may be the bad knob. */
		int lvl = hp_log_level;
		hp_log_level = HP_LOG_ERROR;
		hp_log(HP_LOG_ERROR,
		       "invalid HOSTPIN_%s=\"%s\": expected %s; using the "
		       "default %s%s",
		       hp_optdesc[i].name, badval[i], badexp[i],
		       hp_optdesc[i].kind == HP_K_STR ? "(empty)"
						      : hp_optdesc[i].def,
		       hp_opt[HP_OPT_STRICT] ? " (HOSTPIN_STRICT=1: fatal)" : "");
		hp_log_level = lvl;
	}
	return bad + report_unknown();
}

/* A knob the settings list leaves out: the tests' own (options.def marks
 * them by a doc starting "test only:"). */
static int test_only(const hp_optdesc_t *d)
{
	return strncmp(d->doc, "test only:", 10) == 0;
}

/* Knob i's line in the settings list, into out[cap]: its effective value
 * (after the memory base, the CPU limit and the fallbacks), sizes as
 * people read them; 0 for a knob the list leaves out. */
static int show_line(int i, char *out, size_t cap)
{
	const hp_optdesc_t *d = &hp_optdesc[i];
	char val[300], note[400], h2[24];
	note[0] = '\0';
	if (test_only(d))
		return 0;
	switch (d->kind) {
	case HP_K_STR:
		hp_snprintf(val, sizeof(val), "\"%s\"", hp_optstr[i]);
		break;
	case HP_K_ENUM: {
		const char *c = d->choices;
		for (uint64_t k = 0; k < hp_opt[i] && c; k++) {
			c = strchr(c, '|');
			c = c ? c + 1 : NULL;
		}
		size_t n = c ? strcspn(c, "|") : 0;
		if (n > sizeof(val) - 1)
			n = sizeof(val) - 1;
		memcpy(val, c ? c : "", n);
		val[n] = '\0';
		break;
	}
	case HP_K_SIZE:
	case HP_K_CAP:
		hp_human(hp_opt[i], val);
		if (cap_pct[i])
			hp_snprintf(note, sizeof(note),
				    "%u%% of the memory base %s: %s",
				    (unsigned)cap_pct[i],
				    hp_human(hp_mem_base(), h2),
				    hp_mem_base_why());
		break;
	default:
		hp_snprintf(val, sizeof(val), "%llu",
			    (unsigned long long)hp_opt[i]);
	}
	/* the fallbacks: what the job gets where it differs from the knob */
	if (i == HP_OPT_PREFAULT_THREADS && hp_opt[i] > hp_cpu_limit()) {
		hp_snprintf(val, sizeof(val), "%u", hp_cpu_limit());
		hp_snprintf(note, sizeof(note), "asked: %llu; CPUs %u",
			    (unsigned long long)hp_opt[i], hp_cpu_limit());
	} else if (i == HP_OPT_HUGEPAGES && hp_opt[i] && !hp_thp_ok()) {
		hp_snprintf(val, sizeof(val), "0");
		hp_snprintf(note, sizeof(note), "asked: 1; the transparent "
			    "huge page mode is not always or madvise");
	} else if (i == HP_OPT_BACKEND && hp_backend &&
		   strcmp(val, hp_backend->name) != 0) {
		hp_snprintf(note, sizeof(note), "asked: %s", val);
		hp_snprintf(val, sizeof(val), "%s", hp_backend->name);
	}
	hp_snprintf(out, cap, "HOSTPIN_%s=%s%s%s%s", d->name, val,
		    note[0] ? " (" : "", note, note[0] ? ")" : "");
	return 1;
}

/* The knobs in the order of their names, as README's table and hostpin(7)
 * list them (options.def keeps them by concern). */
static void by_name(int order[HP_OPT_COUNT])
{
	for (int i = 0; i < HP_OPT_COUNT; i++) {
		int j = i;
		while (j > 0 && strcmp(hp_optdesc[order[j - 1]].name,
				       hp_optdesc[i].name) > 0) {
			order[j] = order[j - 1];
			j--;
		}
		order[j] = i;
	}
}

void hp_options_show(int fd)
{
	char line[800];
	int order[HP_OPT_COUNT];
	by_name(order);
	for (int k = 0; k < HP_OPT_COUNT; k++) {
		int i = order[k];
		if (!show_line(i, line, sizeof(line)))
			continue;
		if (fd < 0) {
			hp_log(HP_LOG_INFO, "%s", line);
			continue;
		}
		/* a string knob's value may hold any byte: one line, and
		 * nothing a terminal acts on */
		char esc[1600];
		size_t n = hp_escape(esc, sizeof(esc) - 1, line, strlen(line));
		esc[n] = '\n';
		hp_write_all(fd, esc, n + 1);
	}
}
