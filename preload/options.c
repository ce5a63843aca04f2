/* Knobs: parsed from the environment with secure_getenv, from the one table
 * in options.def.  No allocation. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include "hp.h"

const hp_optdesc_t hp_optdesc[HP_OPT_COUNT] = {
#define HP_OPT(name, kind, def, choices, min, max, doc)                        \
	{#name, HP_K_##kind, def, choices, min, max, doc},
#include "options.def"
#undef HP_OPT
};

uint64_t hp_opt[HP_OPT_COUNT];
char hp_optstr[HP_OPT_COUNT][256];

uint64_t hp_phys_ram(void)
{
	long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
	return pages > 0 && psz > 0 ? (uint64_t)pages * (uint64_t)psz : 0;
}

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

static int parse_size(const char *s, uint64_t *out)
{
	const char *e;
	uint64_t v;
	if (parse_u64(s, &e, &v))
		return EINVAL;
	unsigned sh = 0;
	switch (*e) {
	case 'k': case 'K': sh = 10; break;
	case 'm': case 'M': sh = 20; break;
	case 'g': case 'G': sh = 30; break;
	case 't': case 'T': sh = 40; break;
	case '\0': break;
	default: return EINVAL;
	}
	if (sh) {
		e++;
		if (*e == 'i' && e[1] == 'B')
			e += 2;
		else if (*e == 'B')
			e++;
	}
	if (*e || v > (UINT64_MAX >> sh))
		return EINVAL;
	*out = v << sh;
	return 0;
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
		*expect = "0 or 1";
		if (strcmp(s, "0") == 0 || strcmp(s, "1") == 0) {
			*out = (uint64_t)(s[0] - '0');
			return 0;
		}
		return EINVAL;
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
			*expect = "a size (with K/M/G/T) or 1%..100% of RAM";
			const char *e;
			uint64_t pct;
			if (parse_u64(s, &e, &pct) || *e != '%' || e[1] ||
			    pct < 1 || pct > 100)
				return EINVAL;
			*out = hp_phys_ram() / 100 * pct;
			return 0;
		}
		__attribute__((fallthrough)); /* a plain size */
	}
	case HP_K_SIZE: {
		static char buf[HP_OPT_COUNT][96];
		hp_snprintf(buf[i], sizeof(buf[i]),
			    "a size from %llu to %llu bytes, with optional "
			    "K/M/G/T suffix%s",
			    d->min, d->max,
			    d->kind == HP_K_CAP ? ", or N% of RAM" : "");
		*expect = buf[i];
		uint64_t v;
		if (parse_size(s, &v) || v < d->min || v > d->max)
			return EINVAL;
		*out = v;
		return 0;
	}
	}
	return EINVAL;
}

int hp_options_load(void)
{
	int bad = 0;
	for (int i = 0; i < HP_OPT_COUNT; i++) {
		const hp_optdesc_t *d = &hp_optdesc[i];
		char name[64];
		hp_snprintf(name, sizeof(name), "HOSTPIN_%s", d->name);
		const char *v = secure_getenv(name);
		const char *expect = "";
		int from_env = v != NULL;
		if (!v)
			v = d->def;
		if (hp_opt_parse(i, v, &hp_opt[i], &expect)) {
			if (from_env) {
				/* Always shown, whatever HOSTPIN_LOG says:
				 * the level itself may be the bad knob. */
				int lvl = hp_log_level;
				hp_log_level = HP_LOG_ERROR;
				hp_log(HP_LOG_ERROR,
				       "invalid %s=\"%s\": expected %s; "
				       "hostpin stays out of the way",
				       name, v, expect);
				hp_log_level = lvl;
				bad++;
			}
			/* the built-in default always parses */
			hp_opt_parse(i, d->def, &hp_opt[i], &expect);
			v = d->def;
		}
		if (d->kind == HP_K_STR) {
			strncpy(hp_optstr[i], v, sizeof(hp_optstr[i]) - 1);
			hp_optstr[i][sizeof(hp_optstr[i]) - 1] = '\0';
		}
	}
	return bad;
}

void hp_options_dump(void)
{
	for (int i = 0; i < HP_OPT_COUNT; i++) {
		const hp_optdesc_t *d = &hp_optdesc[i];
		char val[300];
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
		default:
			hp_snprintf(val, sizeof(val), "%llu",
				    (unsigned long long)hp_opt[i]);
		}
		hp_log(HP_LOG_INFO, "HOSTPIN_%s=%s (%s)", d->name, val, d->doc);
	}
}
