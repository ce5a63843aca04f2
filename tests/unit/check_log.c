/* Check suite for preload/base/log.c: the allocation-free formatter and path
 * expansion. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <string.h>
#include <unistd.h>

#include "../../preload/hp.h"
#include "unit.h"

START_TEST(formatter_matches_printf_for_what_it_supports)
{
	char a[256], b[256];
	hp_snprintf(a, sizeof(a), "%s=%d %u %x %lld %llu %zu %06llu %c%%", "k",
		    -42, 42u, 0xbeefu, -1ll, 18446744073709551615ull,
		    (size_t)12345, 42ull, 'z');
	snprintf(b, sizeof(b), "%s=%d %u %x %lld %llu %zu %06llu %c%%", "k",
		 -42, 42u, 0xbeefu, -1ll, 18446744073709551615ull,
		 (size_t)12345, 42ull, 'z');
	ck_assert_str_eq(a, b);
	hp_snprintf(a, sizeof(a), "%p %s", (void *)0x7f00dead0000, (char *)NULL);
	ck_assert_str_eq(a, "0x7f00dead0000 (null)");
}
END_TEST

START_TEST(formatter_truncates_without_overflow)
{
	char buf[8];
	memset(buf, 'X', sizeof(buf));
	int n = hp_snprintf(buf, 6, "%s", "abcdefghij");
	ck_assert_int_eq(n, 10);
	ck_assert_str_eq(buf, "abcde");
	ck_assert_int_eq(buf[6], 'X');
}
END_TEST

START_TEST(paths_expand_the_pid)
{
	char out[64], want[64];
	ck_assert_int_eq(hp_expand_path(out, sizeof(out), "/tmp/h-%p.log"), 0);
	snprintf(want, sizeof(want), "/tmp/h-%d.log", (int)getpid());
	ck_assert_str_eq(out, want);
	ck_assert_int_eq(hp_expand_path(out, 8, "/tmp/long-name-%p"),
			 ENAMETOOLONG);
}
END_TEST

/* A log descriptor the program closed and reused for a file of its own is
 * never written (the log goes to stderr when no log file can be opened
 * again). */
START_TEST(log_never_writes_into_a_reused_descriptor)
{
	char a[] = "/tmp/hp-log-a-XXXXXX", b[] = "/tmp/hp-log-b-XXXXXX";
	int fa = mkstemp(a);
	ck_assert_int_ge(fa, 0);
	hp_log_use(fa);
	ck_assert_int_eq(hp_log_target(), fa);
	close(fa);
	int fb = mkstemp(b); /* the lowest free number: the log's */
	ck_assert_int_eq(fb, fa);
	ck_assert_int_eq(hp_log_target(), 2);
	hp_log_write("hostpin[unit]: this line goes to stderr\n", 40);
	struct stat st;
	ck_assert_int_eq(fstat(fb, &st), 0);
	ck_assert_int_eq((int)st.st_size, 0);
	close(fb);
	unlink(a);
	unlink(b);
}
END_TEST

Suite *log_suite(void)
{
	Suite *s = suite_create("log");
	TCase *t = tcase_create("format");
	tcase_add_test(t, formatter_matches_printf_for_what_it_supports);
	tcase_add_test(t, formatter_truncates_without_overflow);
	tcase_add_test(t, paths_expand_the_pid);
	tcase_add_test(t, log_never_writes_into_a_reused_descriptor);
	suite_add_tcase(s, t);
	return s;
}
