/* A Level Zero program over the real loader and the fake driver(s), run
 * under hostpin.  ze_prog adopt|work|foreign|drop|fork, the range modes
 * (ze_ranges.h), the fault modes (ze_faults.h), USM and copies (ze_copy.h)
 * Exits non-zero on what it would not see without hostpin; the runner
 * checks the fake driver's log. */
#include <level_zero/ze_api.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tp.h"

#define MB ((size_t)1 << 20)
static int hp;
typedef ze_result_t (*imp_t)(ze_driver_handle_t, void *, size_t);
typedef ze_result_t (*rel_t)(ze_driver_handle_t, void *);

static int registered(const void *p) { return (tp_flags(p) & HOSTPIN_REGISTERED) != 0; }

static ze_driver_handle_t init(void)
{
	ze_result_t (*ini)(ze_init_flags_t) = zeInit;
	if (getenv("HP_ZE_HANDLE")) /* found on the loader's handle (ctypes) */
		*(void **)&ini = dlsym(dlopen("libze_loader.so.1", RTLD_NOW),
				       "zeInit");
	CHECK(ini && ini(0) == ZE_RESULT_SUCCESS);
	uint32_t n = 1;
	ze_driver_handle_t d;
	CHECK(zeDriverGet(&n, &d) == ZE_RESULT_SUCCESS && n >= 1);
	return d;
}

static void adopt(void)
{
	char *b[3];
	for (int i = 0; i < 3; i++) {
		b[i] = malloc(4 * MB);
		tp_fill(b[i], 4 * MB, (unsigned)i);
		if (hp)
			CHECK(tp_flags(b[i]) & HOSTPIN_PENDING);
	}
	init();
	if (hp)
		for (int i = 0; i < 3; i++)
			CHECK(registered(b[i])); /* adopted at zeInit */
	char *late = malloc(8 * MB);
	memset(late, 1, 8 * MB);
	if (hp)
		CHECK(registered(late));
	for (int i = 0; i < 3; i++) {
		CHECK(tp_verify(b[i], 4 * MB, (unsigned)i));
		free(b[i]);
	}
	free(late);
}

static void work(void)
{
	init();
	char *b[8];
	for (int i = 0; i < 8; i++) {
		b[i] = malloc(4 * MB);
		tp_fill(b[i], 4 * MB, (unsigned)i);
	}
	for (int i = 0; i < 8; i += 2) {
		b[i] = realloc(b[i], 9 * MB);
		CHECK(b[i] && tp_verify(b[i], 4 * MB, (unsigned)i));
	}
	for (int i = 0; i < 8; i++)
		free(b[i]);
}

/* Extension functions go straight to the driver: call them with its own
 * handle, as a correct program does when the loader wraps handles. */
static ze_driver_handle_t native(ze_driver_handle_t d)
{
	ze_result_t (*tr)(int, void *, void **) =
	    (ze_result_t(*)(int, void *, void **))dlsym(RTLD_DEFAULT,
							"zelLoaderTranslateHandle");
	void *n = d;
	if (tr && tr(0 /* ZEL_HANDLE_DRIVER */, d, &n) != 0)
		n = d;
	return n;
}

static void fns(ze_driver_handle_t d, imp_t *imp, rel_t *rel)
{
	CHECK(zeDriverGetExtensionFunctionAddress(d, "zexDriverImportExternalPointer",
						  (void **)imp) == 0);
	CHECK(zeDriverGetExtensionFunctionAddress(d, "zexDriverReleaseImportedPointer",
						  (void **)rel) == 0);
}

/* zeInit, the import and release extension functions, and the driver's own
 * handle to call them with. */
static ze_driver_handle_t ext_up(imp_t *imp, rel_t *rel)
{
	ze_driver_handle_t d = init();
	fns(d, imp, rel);
	return native(d);
}

static void foreign(void)
{
	imp_t imp;
	rel_t rel;
	ze_driver_handle_t nd = ext_up(&imp, &rel);
	char *p = malloc(16 * MB);
	tp_fill(p, 16 * MB, 5);
	if (hp)
		CHECK(registered(p));
	/* SYCL's prepare_for_device_copy on part of a hostpin block */
	CHECK(imp(nd, p + 4 * MB, 4 * MB) == ZE_RESULT_SUCCESS);
	if (hp)
		CHECK(!registered(p));
	CHECK(rel(nd, p + 4 * MB) == ZE_RESULT_SUCCESS);
	if (hp)
		CHECK(registered(p));
	CHECK(tp_verify(p, 16 * MB, 5));
	free(p);
}

/* The program releases hostpin's own import through a function pointer it
 * got from the loader directly (not through hostpin): hostpin must notice
 * at free time instead of releasing twice. */
static void drop(void)
{
	ze_driver_handle_t d = init();
	void *loader = dlopen("libze_loader.so.1", RTLD_NOW | RTLD_NOLOAD);
	CHECK(loader);
	ze_result_t (*get)(ze_driver_handle_t, const char *, void **) =
	    (ze_result_t(*)(ze_driver_handle_t, const char *, void **))dlsym(
		loader, "zeDriverGetExtensionFunctionAddress");
	rel_t rel = NULL;
	CHECK(get(d, "zexDriverReleaseImportedPointer", (void **)&rel) == 0);
	char *p = malloc(8 * MB);
	memset(p, 4, 8 * MB);
	if (hp)
		CHECK(registered(p));
	CHECK(rel(native(d), p) == ZE_RESULT_SUCCESS); /* drops hostpin's import */
	free(p);
}

/* The program releases hostpin's import through the hooked function (as
 * SYCL's release_from_device_copy would): hostpin notices and imports the
 * block again. */
static void drop_hooked(void)
{
	imp_t imp;
	rel_t rel;
	ze_driver_handle_t nd = ext_up(&imp, &rel);
	char *p = malloc(8 * MB);
	memset(p, 4, 8 * MB);
	CHECK(rel(nd, p) == ZE_RESULT_SUCCESS);
	if (hp)
		CHECK(registered(p)); /* imported again, and says so */
	free(p);
}

static void forked(void)
{
	init();
	tp_fork_check(hp);
}

#ifdef WITH_INITDRIVERS
/* zeInitDrivers (Level Zero 1.10) instead of zeInit: blocks from before
 * are adopted the same.  (Debian's loader 1.8 lacks it: the test links
 * libze_initdrivers.so, which provides it.) */
ze_result_t zeInitDrivers(uint32_t *, ze_driver_handle_t *, void *);
static void initdrivers(void)
{
	char *b = malloc(4 * MB);
	tp_fill(b, 4 * MB, 5);
	if (hp)
		CHECK(tp_flags(b) & HOSTPIN_PENDING);
	uint32_t n = 0;
	CHECK(zeInitDrivers(&n, NULL, NULL) == ZE_RESULT_SUCCESS && n >= 1);
	if (hp)
		CHECK(registered(b));
	CHECK(tp_verify(b, 4 * MB, 5));
	free(b);
}
#endif

/* The driver allocates 4 MiB inside zeDriverGetProperties
 * (FAKE_ZE_ALLOC_IN_CALL): the fake records a call into it from there. */
static void reenter(void)
{
	ze_driver_handle_t d = init();
	char *b = malloc(4 * MB);
	memset(b, 1, 4 * MB);
	if (hp)
		CHECK(registered(b));
	ze_driver_properties_t p = {.stype = ZE_STRUCTURE_TYPE_DRIVER_PROPERTIES};
	CHECK(zeDriverGetProperties(d, &p) == ZE_RESULT_SUCCESS);
	free(b);
}

#ifdef AS_PLUGIN
#define main plug_main
void *plug_kept[2];
static void keep(void)
{
	init();
	tp_plug_keep(plug_kept, hp);
}
static void readopt(void)
{
	init();
	tp_plug_kept(plug_kept, hp);
}
#endif

/* Range shapes and refused releases. */
#include "ze_ranges.h"
/* Level Zero's own gaps (issue 22). */
#include "ze_faults.h"
/* USM and copies (issue 41). */
#include "ze_copy.h"

#ifndef AS_PLUGIN /* a plug-in exporting the fake's hook: a dependency of
		    * the driver (dlsym), never unloaded */
/* Audit c: the program releases hostpin's import (through the hook, as
 * SYCL's release_from_device_copy does) while another thread holds the
 * block: its madvise(DONTNEED), which released the import, discarded the
 * pages and imported it again, held inside that import once made
 * (fake_ze_import_hook).  The release found the block held and gave up:
 * the import it released was the one just made, and the block stayed
 * flagged imported, never imported again.  It must wait for the hold and
 * import the block again.  The release runs on a thread of its own; a
 * pause point inside hostpin (HOSTPIN_TEST_PAUSE, import_dropped_wait)
 * shows that it waits. */
static char *dh_p;
static _Atomic int dh_armed, dh_inside, dh_go, dh_released;
static rel_t dh_rel;
static ze_driver_handle_t dh_nd;
void fake_ze_import_hook(void *p, size_t n);
void fake_ze_import_hook(void *p, size_t n)
{
	(void)n;
	int one = 1;
	if (p != dh_p || !atomic_compare_exchange_strong(&dh_armed, &one, 0))
		return;
	dh_inside = 1;
	while (!dh_go)
		usleep(1000);
}
static void *dh_discarder(void *arg)
{
	(void)arg;
	CHECK(madvise(dh_p, 8 * MB, MADV_DONTNEED) == 0);
	return NULL;
}
static void *dh_releaser(void *arg)
{
	(void)arg;
	CHECK(dh_rel(dh_nd, dh_p) == ZE_RESULT_SUCCESS);
	dh_released = 1;
	return NULL;
}
static int dh_pt(const char *name)
{
	char p[512];
	snprintf(p, sizeof(p), "%s/%s", getenv("HOSTPIN_TEST_PAUSE"), name);
	return access(p, F_OK) == 0;
}
static void dh_touch(const char *name)
{
	char p[512];
	snprintf(p, sizeof(p), "%s/%s", getenv("HOSTPIN_TEST_PAUSE"), name);
	FILE *f = fopen(p, "w");
	CHECK(f != NULL);
	fclose(f);
}
static void drop_held(void)
{
	imp_t imp;
	CHECK(getenv("HOSTPIN_TEST_PAUSE") != NULL);
	ze_driver_handle_t d = init();
	fns(d, &imp, &dh_rel);
	dh_nd = native(d);
	ze_result_t (*base)(ze_driver_handle_t, void *, void **) = NULL;
	CHECK(zeDriverGetExtensionFunctionAddress(
		  d, "zexDriverGetHostPointerBaseAddress", (void **)&base) == 0 &&
	      base);
	dh_p = malloc(8 * MB);
	memset(dh_p, 4, 8 * MB);
	CHECK(registered(dh_p));
	dh_touch("import_dropped_wait.arm");
	dh_armed = 1;
	pthread_t t, r;
	CHECK(pthread_create(&t, NULL, dh_discarder, NULL) == 0);
	for (int i = 0; !dh_inside; i++) {
		CHECK(i < 60000);
		usleep(1000);
	}
	CHECK(pthread_create(&r, NULL, dh_releaser, NULL) == 0);
	for (int i = 0; !dh_released && !dh_pt("import_dropped_wait.paused"); i++) {
		CHECK(i < 60000);
		usleep(1000);
	}
	dh_go = 1;
	dh_touch("import_dropped_wait.go");
	CHECK(pthread_join(t, NULL) == 0);
	CHECK(pthread_join(r, NULL) == 0);
	void *b = NULL;
	if (!registered(dh_p) || base(dh_nd, dh_p, &b) != ZE_RESULT_SUCCESS ||
	    b != dh_p) {
		fprintf(stderr, "not imported again (flagged %d)\n",
			registered(dh_p));
		exit(1);
	}
	free(dh_p);
}

#endif

int main(int argc, char **argv)
{
	CHECK(argc == 2);
	hp = tp_query() != NULL && getenv("HP_EXPECT_ACTIVE") != NULL;
	const char *m = argv[1];
	if (!strcmp(m, "adopt")) adopt();
#ifdef WITH_INITDRIVERS
	else if (!strcmp(m, "initdrivers")) initdrivers();
#endif
	else if (!strcmp(m, "reenter")) reenter();
#ifdef AS_PLUGIN
	else if (!strcmp(m, "keep")) keep();
	else if (!strcmp(m, "readopt")) readopt();
#endif
	else if (!strcmp(m, "work")) work();
	else if (!strcmp(m, "foreign")) foreign();
	else if (!strcmp(m, "drop")) drop();
	else if (!strcmp(m, "drop_hooked")) drop_hooked();
#ifndef AS_PLUGIN
	else if (!strcmp(m, "drop_held")) drop_held();
#endif
	else if (!strcmp(m, "noinit")) tp_pending_only(hp);
	else if (!strcmp(m, "fork")) forked();
	else if (ranges_mode(m)) ;
	else if (faults_mode(m)) ;
	else if (copy_mode(m)) ;
	else return 2;
	printf("ze_prog %s: ok\n", m);
	return 0;
}
