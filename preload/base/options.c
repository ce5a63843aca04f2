/* Knobs: parsed from the environment with secure_getenv, from the one table
 * in options.def, and loaded.  No allocation.  The names hostpin knows and
 * the unknown ones: options_names.c; the settings list: options_show.c. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
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
unsigned char hp_opt_cap_pct[HP_OPT_COUNT];

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
	hp_opt_cap_pct[i] = 0;
	if (d->kind == HP_K_CAP && v[0] && v[strlen(v) - 1] == '%') {
		const char *e;
		uint64_t pct;
		if (parse_u64(v, &e, &pct) == 0)
			hp_opt_cap_pct[i] = (unsigned char)pct;
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
	hp_test_pause_load(); /* tests only: HOSTPIN_TEST_PAUSE */
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
	return bad + hp_opt_report_unknown();
}
