/* Check suite for preload/base/options*.c and the man page: every knob parses
 * its own default, rejects bad values with a useful "expected", and is
 * documented in man/hostpin-reference.7: one alphabetical ENVIRONMENT list whose
 * entries give the type, range, choices and default of options.def. */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "../../preload/hp.h"
#include "unit.h"

static int opt_index(const char *name)
{
	for (int i = 0; i < HP_OPT_COUNT; i++)
		if (strcmp(hp_optdesc[i].name, name) == 0)
			return i;
	return -1;
}

static uint64_t parse_ok(const char *name, const char *v)
{
	uint64_t out = 0;
	const char *exp = NULL;
	int i = opt_index(name);
	ck_assert_int_ge(i, 0);
	ck_assert_msg(hp_opt_parse(i, v, &out, &exp) == 0, "%s=%s rejected",
		      name, v);
	return out;
}

static const char *parse_bad(const char *name, const char *v)
{
	uint64_t out = 0;
	const char *exp = NULL;
	int i = opt_index(name);
	ck_assert_int_ge(i, 0);
	ck_assert_msg(hp_opt_parse(i, v, &out, &exp) == EINVAL,
		      "%s=%s accepted", name, v);
	ck_assert_ptr_nonnull(exp);
	return exp;
}

START_TEST(every_default_parses)
{
	for (int i = 0; i < HP_OPT_COUNT; i++) {
		uint64_t out;
		const char *exp;
		ck_assert_msg(hp_opt_parse(i, hp_optdesc[i].def, &out, &exp) == 0,
			      "default of %s", hp_optdesc[i].name);
	}
}
END_TEST

START_TEST(sizes_take_suffixes_and_ranges)
{
	ck_assert_uint_eq(parse_ok("THRESHOLD", "1M"), 1 << 20);
	ck_assert_uint_eq(parse_ok("THRESHOLD", "64K"), 64 << 10);
	ck_assert_uint_eq(parse_ok("THRESHOLD", "64k"), 64 << 10);
	ck_assert_uint_eq(parse_ok("THRESHOLD", "2MiB"), 2 << 20);
	ck_assert_uint_eq(parse_ok("THRESHOLD", "3G"), 3ull << 30);
	ck_assert_uint_eq(parse_ok("THRESHOLD", "1T"), 1ull << 40);
	ck_assert_uint_eq(parse_ok("THRESHOLD", "8192"), 8192);
	const char *e = parse_bad("THRESHOLD", "1K"); /* below 4096 */
	ck_assert_ptr_nonnull(strstr(e, "4096"));
	parse_bad("THRESHOLD", "");
	parse_bad("THRESHOLD", "-1M");
	parse_bad("THRESHOLD", "1.5M");
	parse_bad("THRESHOLD", "12Q");
	parse_bad("THRESHOLD", "2T");
	parse_bad("THRESHOLD", "99999999999999999999999");
	parse_bad("THRESHOLD", "1M ");
}
END_TEST

START_TEST(sizes_take_every_spelling_of_a_unit)
{
	static const char *const k64[] = {"64k", "64K", "64kb", "64KB", "64Kb",
					  "64kB", "64KiB", "64kib", "64KIB"};
	for (size_t j = 0; j < sizeof(k64) / sizeof(k64[0]); j++)
		ck_assert_uint_eq(parse_ok("THRESHOLD", k64[j]), 64 << 10);
	ck_assert_uint_eq(parse_ok("THRESHOLD", "4mb"), 4 << 20);
	ck_assert_uint_eq(parse_ok("THRESHOLD", "4Mib"), 4 << 20);
	ck_assert_uint_eq(parse_ok("THRESHOLD", "1gB"), 1ull << 30);
	ck_assert_uint_eq(parse_ok("THRESHOLD", "1tib"), 1ull << 40);
	ck_assert_uint_eq(parse_ok("THRESHOLD", "4096B"), 4096);
	ck_assert_uint_eq(parse_ok("THRESHOLD", "4096b"), 4096);
	ck_assert_uint_eq(parse_ok("MAX_PINNED", "2gib"), 2ull << 30);
	parse_bad("THRESHOLD", "64Ki");
	parse_bad("THRESHOLD", "64KBB");
	parse_bad("THRESHOLD", "64iB");
	parse_bad("THRESHOLD", "4096BB");
	parse_bad("THRESHOLD", "B");
	parse_bad("THRESHOLD", "1MiBx");
	const char *e = parse_bad("THRESHOLD", "12Q");
	ck_assert_ptr_nonnull(strstr(e, "64kb"));
	ck_assert_ptr_nonnull(strstr(e, "4096B"));
}
END_TEST

START_TEST(bools_take_words_in_any_case)
{
	static const char *const yes[] = {"1", "yes", "YES", "true", "True",
					  "on", "ON"};
	static const char *const no[] = {"0", "no", "No", "false", "FALSE",
					 "off", "Off"};
	for (size_t j = 0; j < 7; j++) {
		ck_assert_uint_eq(parse_ok("DISABLE", yes[j]), 1);
		ck_assert_uint_eq(parse_ok("STATS", no[j]), 0);
	}
	parse_bad("DISABLE", "2");
	parse_bad("DISABLE", "y");
	parse_bad("DISABLE", "yes ");
	parse_bad("DISABLE", "");
	const char *e = parse_bad("STRICT", "maybe");
	ck_assert_ptr_nonnull(strstr(e, "yes"));
	ck_assert_ptr_nonnull(strstr(e, "off"));
}
END_TEST

START_TEST(unknown_names_get_the_closest_knob)
{
	ck_assert_str_eq(hp_opt_closest("THRESHHOLD", 10), "THRESHOLD");
	ck_assert_str_eq(hp_opt_closest("BACKENED", 8), "BACKEND");
	ck_assert_str_eq(hp_opt_closest("STAT", 4), "STATS");
	ck_assert_str_eq(hp_opt_closest("stats_file", 10), "STATS_FILE");
	ck_assert_str_eq(hp_opt_closest("MAXPINNED", 9), "MAX_PINNED");
	ck_assert_str_eq(hp_opt_closest("LOGFILE=x", 7), "LOG_FILE");
	ck_assert_int_eq(hp_opt_known("THRESHOLD", 9), 1);
	ck_assert_int_eq(hp_opt_known("LIB", 3), 1); /* the launcher's */
	ck_assert_int_eq(hp_opt_known("THRESHOLDX", 9), 1);
	ck_assert_int_eq(hp_opt_known("THRESHOLDX", 10), 0);
	ck_assert_int_eq(hp_opt_known("threshold", 9), 0);
	ck_assert_int_eq(hp_opt_known("", 0), 0);
}
END_TEST

START_TEST(caps_take_a_percentage_of_ram)
{
	uint64_t ram = hp_mem_base();
	ck_assert_uint_gt(ram, 0);
	ck_assert_uint_eq(parse_ok("MAX_PINNED", "50%"), ram / 100 * 50);
	ck_assert_uint_eq(parse_ok("MAX_PINNED", "100%"), ram / 100 * 100);
	ck_assert_uint_eq(parse_ok("MAX_PINNED", "10G"), 10ull << 30);
	ck_assert_uint_eq(parse_ok("MAX_PINNED", "0"), 0);
	parse_bad("MAX_PINNED", "0%");
	parse_bad("MAX_PINNED", "101%");
	parse_bad("MAX_PINNED", "%");
	parse_bad("MAX_PINNED", "5%%");
}
END_TEST

/* hp_read_small, the one small-file reader (sysfs, cgroup files,
 * /proc/PID/stat, /proc/self/cmdline): a file longer than the buffer is
 * cut at cap - 1 bytes, NUL-terminated; an empty file is 0 bytes. */
static void write_file(const char *path, size_t n)
{
	FILE *f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	for (size_t i = 0; i < n; i++)
		fputc('a' + (int)(i % 26), f);
	fclose(f);
}

START_TEST(small_reader_cuts_a_long_file_at_the_buffer)
{
	char path[] = "/tmp/hp-unit-read-XXXXXX";
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	close(fd);
	char buf[16];
	memset(buf, 'x', sizeof(buf));
	write_file(path, 100);
	ck_assert_int_eq(hp_read_small(path, buf, sizeof(buf)), 15);
	ck_assert_str_eq(buf, "abcdefghijklmno");
	write_file(path, 15); /* exactly what fits */
	ck_assert_int_eq(hp_read_small(path, buf, sizeof(buf)), 15);
	ck_assert_str_eq(buf, "abcdefghijklmno");
	write_file(path, 3);
	ck_assert_int_eq(hp_read_small(path, buf, sizeof(buf)), 3);
	ck_assert_str_eq(buf, "abc");
	write_file(path, 0);
	memset(buf, 'x', sizeof(buf));
	ck_assert_int_eq(hp_read_small(path, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "");
	ck_assert_int_eq(hp_read_small(path, buf, 1), 0); /* room for NUL only */
	unlink(path);
	/* /proc files report a size of 0 and are read to their end */
	static char big[4096];
	ck_assert_int_gt(hp_read_small("/proc/self/stat", big, sizeof(big)), 20);
	ck_assert_ptr_nonnull(strchr(big, ')'));
}
END_TEST

/* -1 with the errno of what failed, whether the open (ENOENT, EMFILE: the
 * callers tell "absent" from "ask again later" by it) or the first read
 * (EISDIR here; ESRCH for a /proc/PID file whose process is gone), kept
 * across the close. */
START_TEST(small_reader_fails_with_the_errno_of_the_failure)
{
	char buf[64];
	errno = 0;
	ck_assert_int_eq(hp_read_small("/nonexistent/hp-unit", buf, sizeof(buf)),
			 -1);
	ck_assert_int_eq(errno, ENOENT);
	errno = 0;
	ck_assert_int_eq(hp_read_small("/", buf, sizeof(buf)), -1);
	ck_assert_int_eq(errno, EISDIR);
	/* no descriptor left */
	struct rlimit old, low;
	ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &old), 0);
	low = old;
	low.rlim_cur = 64;
	ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &low), 0);
	int fds[64], n = 0;
	while (n < 64 && (fds[n] = dup(0)) >= 0)
		n++;
	errno = 0;
	ssize_t r = hp_read_small("/proc/self/stat", buf, sizeof(buf));
	int err = errno;
	while (n > 0)
		close(fds[--n]);
	ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &old), 0);
	ck_assert_int_eq(r, -1);
	ck_assert_int_eq(err, EMFILE);
	ck_assert_int_gt(hp_read_small("/proc/self/stat", buf, sizeof(buf)), 0);
}
END_TEST

START_TEST(enums_and_bools_name_their_choices)
{
	ck_assert_uint_eq(parse_ok("BACKEND", "mlock"), HP_BACKEND_MLOCK);
	ck_assert_uint_eq(parse_ok("BACKEND", "auto"), HP_BACKEND_AUTO);
	ck_assert_uint_eq(parse_ok("MMAP", "all"), HP_MMAP_ALL);
	ck_assert_uint_eq(parse_ok("LOG", "debug"), HP_LOG_DEBUG);
	ck_assert_str_eq(parse_bad("BACKEND", "mloc"),
			 "auto|none|mlock|cuda|level_zero");
	ck_assert_uint_eq(parse_ok("BACKEND", "level_zero"), HP_BACKEND_LEVEL_ZERO);
	ck_assert_uint_eq(parse_ok("BACKEND", "cuda"), HP_BACKEND_CUDA);
	ck_assert_uint_eq(parse_ok("COPY", "async"), HP_COPY_ASYNC);
	parse_bad("BACKEND", "mlockx");
	parse_bad("BACKEND", "");
	ck_assert_uint_eq(parse_ok("STRICT", "1"), 1);
	parse_bad("DISABLE", "2");
}
END_TEST

/* A size as the man page writes a range: plain bytes below 1 MiB, else the
 * largest unit that divides it (1T, 1P). */
static void man_size(char *buf, size_t n, unsigned long long v)
{
	static const char unit[] = "KMGTP";
	int u = -1;
	if (v >= (1ull << 20))
		while (u < 4 && v % (1ull << (10 * (u + 2))) == 0)
			u++;
	if (u < 0)
		snprintf(buf, n, "%llu", v);
	else
		snprintf(buf, n, "%llu%c", v >> (10 * (u + 1)), unit[u]);
}

/* Text that must appear in an entry between its name and its default: the
 * type line, from options.def (STR knobs describe their own type). */
static int man_type(const hp_optdesc_t *o, char *buf, size_t n)
{
	char lo[32], hi[32];
	switch (o->kind) {
	case HP_K_BOOL:
		return snprintf(buf, n, "Boolean.\n"), 1;
	case HP_K_CAP:
		man_size(hi, sizeof(hi), o->max);
		return snprintf(buf, n, "Cap: a size up to %s, or 1%% to 100%% "
				"of the memory base.\n", hi), 1;
	case HP_K_SIZE:
		man_size(lo, sizeof(lo), o->min);
		man_size(hi, sizeof(hi), o->max);
		return snprintf(buf, n, "Size, %s to %s.\n", lo, hi), 1;
	case HP_K_COUNT:
		return snprintf(buf, n, "Integer, %llu to %llu", o->min,
				o->max), 1;
	case HP_K_ENUM:
		return snprintf(buf, n, "One of\n"), 1;
	default:
		return 0;
	}
}

START_TEST(every_knob_is_documented_in_the_man_page)
{
	FILE *f = fopen(HP_SRCDIR "/man/hostpin-reference.7", "r");
	ck_assert_ptr_nonnull(f);
	static char man[1 << 17];
	size_t n = fread(man, 1, sizeof(man) - 1, f);
	man[n] = '\0';
	fclose(f);
	/* every entry lives in ENVIRONMENT, the knobs in alphabetical order */
	const char *env = strstr(man, "\n.SH ENVIRONMENT\n");
	ck_assert_msg(env != NULL, "hostpin-reference.7 has no ENVIRONMENT section");
	const char *env_end = strstr(env + 1, "\n.SH ");
	ck_assert_ptr_nonnull(env_end);
	for (int i = 0; i < HP_OPT_COUNT; i++) {
		const hp_optdesc_t *o = &hp_optdesc[i];
		char key[80];
		/* the entry header: .TP, .B HOSTPIN_NAME, then its default */
		snprintf(key, sizeof(key), ".TP\n.B HOSTPIN_%s\n", o->name);
		const char *at = strstr(man, key);
		ck_assert_msg(at != NULL, "HOSTPIN_%s has no entry in hostpin-reference.7",
			      o->name);
		ck_assert_msg(at > env && at < env_end,
			      "HOSTPIN_%s: its entry is not under ENVIRONMENT",
			      o->name);
		const char *next = strstr(at + 1, ".TP\n.B HOSTPIN_");
		if (next == NULL || next > env_end)
			next = env_end;
		char def[80];
		snprintf(def, sizeof(def), "Default: %s%s%s.",
			 o->kind == HP_K_STR ? "empty" : "\\fB",
			 o->kind == HP_K_STR ? "" : o->def,
			 o->kind == HP_K_STR ? "" : "\\fP");
		const char *d = strstr(at, def);
		ck_assert_msg(d != NULL && d < next,
			      "HOSTPIN_%s: man page lacks \"%s\" in its entry",
			      o->name, def);
		/* the type line, right after the name */
		char type[160];
		if (man_type(o, type, sizeof(type)))
			ck_assert_msg(strncmp(at + strlen(key), type,
					      strlen(type)) == 0,
				      "HOSTPIN_%s: entry does not start with "
				      "\"%.*s\" (options.def)", o->name,
				      (int)strcspn(type, "\n"), type);
		/* every choice of an enum named before the default */
		for (const char *c = o->choices; o->kind == HP_K_ENUM && *c;) {
			size_t len = strcspn(c, "|");
			char ch[80];
			snprintf(ch, sizeof(ch), "\n.BR %.*s ", (int)len, c);
			const char *hit = strstr(at, ch);
			ck_assert_msg(hit != NULL && hit < d,
				      "HOSTPIN_%s: choice %.*s not listed "
				      "before the default", o->name, (int)len, c);
			c += len + (c[len] == '|');
		}
		const char *pit = strstr(at, "\\fIPitfalls:\\fP");
		ck_assert_msg(pit != NULL && pit < next,
			      "HOSTPIN_%s: entry has no Pitfalls paragraph",
			      o->name);
		/* alphabetical: no knob sorting before this one comes after */
		for (int j = 0; j < HP_OPT_COUNT; j++) {
			if (strcmp(hp_optdesc[j].name, o->name) >= 0)
				continue;
			snprintf(key, sizeof(key), ".TP\n.B HOSTPIN_%s\n",
				 hp_optdesc[j].name);
			const char *other = strstr(man, key);
			ck_assert_msg(other == NULL || other < at,
				      "HOSTPIN_%s comes before HOSTPIN_%s in "
				      "ENVIRONMENT: keep the list alphabetical",
				      o->name, hp_optdesc[j].name);
		}
	}
}
END_TEST

Suite *options_suite(void)
{
	Suite *s = suite_create("options");
	TCase *t = tcase_create("parse");
	tcase_add_test(t, every_default_parses);
	tcase_add_test(t, sizes_take_suffixes_and_ranges);
	tcase_add_test(t, sizes_take_every_spelling_of_a_unit);
	tcase_add_test(t, bools_take_words_in_any_case);
	tcase_add_test(t, unknown_names_get_the_closest_knob);
	tcase_add_test(t, caps_take_a_percentage_of_ram);
	tcase_add_test(t, enums_and_bools_name_their_choices);
	tcase_add_test(t, every_knob_is_documented_in_the_man_page);
	tcase_add_test(t, small_reader_cuts_a_long_file_at_the_buffer);
	tcase_add_test(t, small_reader_fails_with_the_errno_of_the_failure);
	suite_add_tcase(s, t);
	return s;
}
