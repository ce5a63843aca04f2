/* ze_prog modes on Level Zero memory and copies (issue 41; included by
 * ze_prog.c after ze_faults.h: its helpers).  Each asks the fake driver
 * itself whether a range is imported.
 *   usm       zeMemAllocHost/Shared/Device (the driver allocates inside the
 *             call): never hostpin's, never imported (the fake records an
 *             import of its USM memory as VIOLATION import-usm); the
 *             program's own block still is
 *   copies    blocks copied once and twice through a regular command list
 *             (plain, from another context, by regions):
 *             with HP_EXPECT_LAZY (HOSTPIN_PIN_AFTER=2) the one copied once
 *             is not imported, the one copied twice is; data checked
 *             through host -> device -> host
 *   inflight  a block freed (and a mapping unmapped) while copies appended
 *             from it have not run (executed, not synchronised; appended to
 *             an immediate list, not synchronised; the same waited for
 *             through an event and a fence): the fake records a copy
 *             that runs after its import was released as VIOLATION
 *             copy-after-release; the import goes once the copy ran; a
 *             block of the same size allocated meanwhile is not the freed
 *             one (the cache keeps no block a copy may still write) */
#include <level_zero/ze_ddi.h>

struct zq {
	ze_context_handle_t c;
	ze_device_handle_t dev;
	ze_command_queue_handle_t q;
	ze_command_list_handle_t l, imm;
};

static struct zq zq_up(void)
{
	struct zq z;
	ze_driver_handle_t d = init();
	uint32_t n = 1;
	CHECK(zeDeviceGet(d, &n, &z.dev) == ZE_RESULT_SUCCESS);
	ze_context_desc_t cd = {.stype = ZE_STRUCTURE_TYPE_CONTEXT_DESC};
	CHECK(zeContextCreate(d, &cd, &z.c) == ZE_RESULT_SUCCESS);
	ze_command_queue_desc_t qd = {.stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC};
	CHECK(zeCommandQueueCreate(z.c, z.dev, &qd, &z.q) == ZE_RESULT_SUCCESS);
	ze_command_list_desc_t ld = {.stype = ZE_STRUCTURE_TYPE_COMMAND_LIST_DESC};
	CHECK(zeCommandListCreate(z.c, z.dev, &ld, &z.l) == ZE_RESULT_SUCCESS);
	CHECK(zeCommandListCreateImmediate(z.c, z.dev, &qd, &z.imm) ==
	      ZE_RESULT_SUCCESS);
	return z;
}

static void zq_down(struct zq *z)
{
	CHECK(zeCommandListDestroy(z->imm) == ZE_RESULT_SUCCESS);
	CHECK(zeCommandListDestroy(z->l) == ZE_RESULT_SUCCESS);
	CHECK(zeCommandQueueDestroy(z->q) == ZE_RESULT_SUCCESS);
	CHECK(zeContextDestroy(z->c) == ZE_RESULT_SUCCESS);
}

/* zeCommandListAppendMemoryCopy, or (HP_ZE_DDI=1) the entry of the table
 * the loader hands out, found with dlsym on its handle, as the Unified
 * Runtime's statically linked loader library reaches it. */
static ze_pfnCommandListAppendMemoryCopy_t append_fn(void)
{
	static ze_command_list_dditable_t t;
	if (!getenv("HP_ZE_DDI"))
		return zeCommandListAppendMemoryCopy;
	if (!t.pfnAppendMemoryCopy) {
		ze_pfnGetCommandListProcAddrTable_t get;
		*(void **)&get = dlsym(dlopen("libze_loader.so.1", RTLD_NOW),
				       "zeGetCommandListProcAddrTable");
		CHECK(get && get(ZE_API_VERSION_CURRENT, &t) == ZE_RESULT_SUCCESS);
	}
	return t.pfnAppendMemoryCopy;
}

/* the regular list closed, executed, synchronised, reset */
static void zq_run(struct zq *z)
{
	CHECK(zeCommandListClose(z->l) == ZE_RESULT_SUCCESS);
	CHECK(zeCommandQueueExecuteCommandLists(z->q, 1, &z->l, NULL) ==
	      ZE_RESULT_SUCCESS);
	CHECK(zeCommandQueueSynchronize(z->q, UINT64_MAX) == ZE_RESULT_SUCCESS);
	CHECK(zeCommandListReset(z->l) == ZE_RESULT_SUCCESS);
}

/* dst <- src through the regular list, executed and synchronised */
static void zq_copy(struct zq *z, void *dst, const void *src, size_t n)
{
	CHECK(append_fn()(z->l, dst, src, n, NULL, 0, NULL) == ZE_RESULT_SUCCESS);
	zq_run(z);
}

static void *dev_alloc(struct zq *z, size_t n)
{
	ze_device_mem_alloc_desc_t dd = {.stype = ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC};
	void *p = NULL;
	CHECK(zeMemAllocDevice(z->c, &dd, n, 64, z->dev, &p) == ZE_RESULT_SUCCESS);
	return p;
}

static void usm(void)
{
	struct zq z = zq_up();
	ze_host_mem_alloc_desc_t hd = {.stype = ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC};
	ze_device_mem_alloc_desc_t dd = {.stype = ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC};
	void *h = NULL, *s = NULL;
	CHECK(zeMemAllocHost(z.c, &hd, 8 * MB, 64, &h) == ZE_RESULT_SUCCESS);
	CHECK(zeMemAllocShared(z.c, &dd, &hd, 8 * MB, 64, z.dev, &s) ==
	      ZE_RESULT_SUCCESS);
	void *d = dev_alloc(&z, 8 * MB);
	memset(h, 1, 8 * MB), memset(s, 2, 8 * MB);
	/* the program's own block: imported at once (PIN_AFTER=0) or at
	 * its copies; the next allocation is where adoption would have
	 * imported a driver block left pending */
	char *p = malloc(8 * MB);
	tp_fill(p, 8 * MB, 9);
	zq_copy(&z, d, p, 8 * MB);
	zq_copy(&z, d, p, 8 * MB);
	zq_copy(&z, h, d, 8 * MB);
	CHECK(tp_verify(h, 8 * MB, 9));
	if (hp)
		CHECK(imported(p, 8 * MB) && registered(p));
	void *usms[] = {h, s, d};
	for (int i = 0; i < 3; i++)
		CHECK(tp_flags(usms[i]) == 0 && !imported(usms[i], 1));
	free(p);
	for (int i = 0; i < 3; i++)
		CHECK(zeMemFree(z.c, usms[i]) == ZE_RESULT_SUCCESS);
	zq_down(&z);
}

static void copies(void)
{
	struct zq z = zq_up();
	int lazy = getenv("HP_EXPECT_LAZY") != NULL;
	char *once = malloc(8 * MB), *twice = malloc(8 * MB), *back = malloc(8 * MB);
	void *d = dev_alloc(&z, 8 * MB);
	tp_fill(once, 8 * MB, 1), tp_fill(twice, 8 * MB, 2);
	zq_copy(&z, d, once, 8 * MB);
	zq_copy(&z, back, d, 8 * MB);
	CHECK(tp_verify(back, 8 * MB, 1));
	zq_copy(&z, d, twice, 8 * MB);
	if (hp && lazy)
		CHECK(!imported(twice, 1) && !registered(twice));
	/* the second copy from another context: imported before it runs */
	CHECK(zeCommandListAppendMemoryCopyFromContext(z.l, d, z.c, twice, 8 * MB,
						       NULL, 0, NULL) == 0);
	zq_run(&z);
	if (hp) {
		CHECK(imported(twice, 8 * MB) && registered(twice));
		CHECK(lazy ? !imported(once, 1) : imported(once, 8 * MB));
	}
	zq_copy(&z, back, d, 8 * MB);
	CHECK(tp_verify(back, 8 * MB, 2));
	/* region copies: 64 rows of 64 KiB, twice */
	char *reg = malloc(8 * MB);
	tp_fill(reg, 8 * MB, 6);
	ze_copy_region_t rg = {0, 0, 0, 65536, 64, 1};
	for (int i = 0; i < 2; i++) {
		if (hp && lazy)
			CHECK(!imported(reg, 1));
		CHECK(zeCommandListAppendMemoryCopyRegion(z.l, d, &rg, 65536, 0, reg,
							  &rg, 65536, 0, NULL, 0,
							  NULL) == 0);
		zq_run(&z);
	}
	if (hp)
		CHECK(imported(reg, 8 * MB));
	zq_copy(&z, back, d, 4 * MB);
	CHECK(tp_verify(back, 4 * MB, 6));
	free(reg);
	free(once), free(twice), free(back);
	CHECK(zeMemFree(z.c, d) == ZE_RESULT_SUCCESS);
	zq_down(&z);
}

static void inflight(void)
{
	struct zq z = zq_up();
	void *d = dev_alloc(&z, 8 * MB);
	char *b = malloc(8 * MB);
	tp_fill(b, 8 * MB, 3);
	zq_copy(&z, d, b, 8 * MB);
	zq_copy(&z, d, b, 8 * MB);
	if (hp)
		CHECK(imported(b, 8 * MB));
	/* a copy into a block, executed, not synchronised; the block freed
	 * and a block of its size allocated and written meanwhile (with the
	 * cache on, it must not be the freed one: the copy would land in
	 * it) */
	char *in = malloc(8 * MB);
	zq_copy(&z, in, d, 8 * MB);
	zq_copy(&z, in, d, 8 * MB);
	CHECK(zeCommandListAppendMemoryCopy(z.l, in, d, 8 * MB, NULL, 0, NULL) == 0);
	CHECK(zeCommandListClose(z.l) == 0);
	CHECK(zeCommandQueueExecuteCommandLists(z.q, 1, &z.l, NULL) == 0);
	free(in);
	char *again = malloc(8 * MB);
	tp_fill(again, 8 * MB, 11);
	CHECK(zeCommandQueueSynchronize(z.q, UINT64_MAX) == 0);
	CHECK(zeCommandListReset(z.l) == 0);
	CHECK(tp_verify(again, 8 * MB, 11));
	free(again);
	/* executed, not synchronised: freed meanwhile */
	CHECK(zeCommandListAppendMemoryCopy(z.l, d, b, 8 * MB, NULL, 0, NULL) == 0);
	CHECK(zeCommandListClose(z.l) == 0);
	CHECK(zeCommandQueueExecuteCommandLists(z.q, 1, &z.l, NULL) == 0);
	free(b);
	if (hp)
		CHECK(imported(b, 8 * MB)); /* kept until the copy ran */
	CHECK(zeCommandQueueSynchronize(z.q, UINT64_MAX) == 0);
	CHECK(zeCommandListReset(z.l) == 0);
	/* an immediate list: the copy runs at its host synchronisation */
	char *m = mmap(NULL, 8 * MB, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(m != MAP_FAILED);
	tp_fill(m, 8 * MB, 4);
	zq_copy(&z, d, m, 8 * MB);
	zq_copy(&z, d, m, 8 * MB);
	ze_driver_handle_t drv;
	uint32_t one = 1;
	CHECK(zeDriverGet(&one, &drv) == 0);
	ze_result_t (*hsync)(ze_command_list_handle_t, uint64_t) = NULL;
	CHECK(zeDriverGetExtensionFunctionAddress(drv, "zeCommandListHostSynchronize",
						  (void **)&hsync) == 0 && hsync);
	CHECK(zeCommandListAppendMemoryCopy(z.imm, d, m, 8 * MB, NULL, 0, NULL) == 0);
	CHECK(munmap(m, 8 * MB) == 0);
	if (hp)
		CHECK(imported(m, 8 * MB));
	CHECK(hsync(z.imm, UINT64_MAX) == 0);
	/* the imports go once the copies ran (and hostpin saw them run) */
	if (hp)
		CHECK(!imported(b, 1) && !imported(m, 1));
	/* an immediate list's copy signalling an event, waited for; a
	 * regular list executed with a fence, waited for */
	ze_event_pool_desc_t pd = {.stype = ZE_STRUCTURE_TYPE_EVENT_POOL_DESC,
				   .count = 1};
	ze_event_pool_handle_t pool;
	ze_event_handle_t ev;
	ze_event_desc_t ed = {.stype = ZE_STRUCTURE_TYPE_EVENT_DESC};
	CHECK(zeEventPoolCreate(z.c, &pd, 1, &z.dev, &pool) == 0);
	CHECK(zeEventCreate(pool, &ed, &ev) == 0);
	ze_fence_desc_t fd = {.stype = ZE_STRUCTURE_TYPE_FENCE_DESC};
	ze_fence_handle_t fence;
	CHECK(zeFenceCreate(z.q, &fd, &fence) == 0);
	char *e1 = malloc(8 * MB), *f1 = malloc(8 * MB);
	tp_fill(e1, 8 * MB, 7), tp_fill(f1, 8 * MB, 8);
	for (int i = 0; i < 2; i++)
		zq_copy(&z, d, e1, 8 * MB), zq_copy(&z, d, f1, 8 * MB);
	CHECK(zeCommandListAppendMemoryCopy(z.imm, d, e1, 8 * MB, ev, 0, NULL) == 0);
	CHECK(zeCommandListAppendMemoryCopy(z.l, d, f1, 8 * MB, NULL, 0, NULL) == 0);
	CHECK(zeCommandListClose(z.l) == 0);
	CHECK(zeCommandQueueExecuteCommandLists(z.q, 1, &z.l, fence) == 0);
	free(e1), free(f1);
	if (hp)
		CHECK(imported(e1, 8 * MB) && imported(f1, 8 * MB));
	CHECK(zeEventHostSynchronize(ev, UINT64_MAX) == 0);
	if (hp)
		CHECK(!imported(e1, 1) && imported(f1, 8 * MB));
	CHECK(zeFenceHostSynchronize(fence, UINT64_MAX) == 0);
	if (hp)
		CHECK(!imported(f1, 1));
	CHECK(zeCommandListReset(z.l) == 0);
	CHECK(zeFenceDestroy(fence) == 0 && zeEventDestroy(ev) == 0 &&
	      zeEventPoolDestroy(pool) == 0);
	CHECK(zeMemFree(z.c, d) == 0);
	zq_down(&z);
}

/* For a measurement, not a test: 8 blocks of 256 MiB allocated after
 * zeInit, one byte written per MiB, never copied; prints the time the
 * allocations took and the peak resident size (imports commit every page
 * first).  bench/by-hand.md, "Level Zero: eager import". */
#include <time.h>
static void nocopy(void)
{
	init();
	struct timespec t0, t1;
	char *b[8];
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0; i < 8; i++) {
		b[i] = malloc(256 * MB);
		CHECK(b[i]);
		for (size_t o = 0; o < 256 * MB; o += MB)
			b[i][o] = 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	char line[256];
	long hwm = -1;
	FILE *f = fopen("/proc/self/status", "r");
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "VmHWM:", 6))
			hwm = atol(line + 6);
	if (f)
		fclose(f);
	printf("nocopy: 2048 MiB allocated in %.1f ms, peak resident %ld MiB\n",
	       (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6,
	       hwm / 1024);
	for (int i = 0; i < 8; i++)
		free(b[i]);
}

static int copy_mode(const char *m)
{
	if (!strcmp(m, "usm")) usm();
	else if (!strcmp(m, "copies")) copies();
	else if (!strcmp(m, "inflight")) inflight();
	else if (!strcmp(m, "nocopy")) nocopy();
	else return 0;
	return 1;
}
