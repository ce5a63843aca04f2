/* ze_prog modes on range shapes and refused releases (included by
 * ze_prog.c: its helpers).
 *   straddle     the program imports a range that starts below hostpin's
 *                lowest block and ends inside it
 *   two_foreign  two imports of the program in one block
 *   munmap_leak  release refused (FAKE_ZE_FAIL): munmap leaves it mapped */
#include <sys/mman.h>
#include <sys/syscall.h>

static void straddle(void)
{
	imp_t imp;
	rel_t rel;
	ze_driver_handle_t nd = ext_up(&imp, &rel);
	char *r = tp_below_and_block(hp), *m = r + 4 * MB;
	CHECK(imp(nd, r + 2 * MB, 4 * MB) == ZE_RESULT_SUCCESS);
	if (hp)
		CHECK(!registered(m));
	CHECK(rel(nd, r + 2 * MB) == ZE_RESULT_SUCCESS);
	if (hp)
		CHECK(registered(m));
	CHECK(munmap(m, 12 * MB) == 0);
	syscall(SYS_munmap, r, 4 * MB);
}

static void two_foreign(void)
{
	imp_t imp;
	rel_t rel;
	ze_driver_handle_t nd = ext_up(&imp, &rel);
	char *p = malloc(16 * MB);
	tp_fill(p, 16 * MB, 4);
	if (hp)
		CHECK(registered(p));
	CHECK(imp(nd, p, 2 * MB) == ZE_RESULT_SUCCESS);
	CHECK(imp(nd, p + 8 * MB, 2 * MB) == ZE_RESULT_SUCCESS);
	CHECK(rel(nd, p + 8 * MB) == ZE_RESULT_SUCCESS);
	if (hp)
		CHECK(!registered(p)); /* the first import still covers part */
	CHECK(rel(nd, p) == ZE_RESULT_SUCCESS);
	if (hp)
		CHECK(registered(p));
	CHECK(tp_verify(p, 16 * MB, 4));
	free(p);
}

static void munmap_leak(void)
{
	init();
	char *m = tp_map_filled(16 * MB, 5, hp);
	CHECK(munmap(m, 16 * MB) == 0);
	if (hp) {
		CHECK(tp_mapped(m, 16 * MB) && m[0] == 5);
		struct hostpin_stats st;
		CHECK(tp_stats(&st) == 0 && st.leaked_blocks == 1);
	}
}

static int ranges_mode(const char *m)
{
	if (!strcmp(m, "straddle")) straddle();
	else if (!strcmp(m, "two_foreign")) two_foreign();
	else if (!strcmp(m, "munmap_leak")) munmap_leak();
	else return 0;
	return 1;
}
