/* ze_prog modes on Level Zero's own gaps (issue 22, items 13-15; included
 * by ze_prog.c: its helpers).  Each asks the fake driver itself whether a
 * range is imported (fake_ze_is_imported), not only hostpin.
 *   mmap_init    zeInit, then a 32 MiB mmap, an mremap growing a mapping,
 *                a malloc: each imported at once under the defaults
 *   fixed_keep   MAP_FIXED over the head, middle and tail of imported
 *                mappings: what stays in place is imported (PIN_AFTER=0)
 *   threads_mmap workers mmap while other threads allocate, import and
 *                release their own blocks: every mapping imported
 *   window_mmap  a worker's mmap held (by gdb, 186-faults_ze_threads.sh)
 *                inside hostpin right after "not ready", while the main
 *                thread's zeInit and adoption run: the block is imported
 *   ctx_alloc    the driver allocates 32 MiB inside zeContextCreate
 *                (FAKE_ZE_CTX_ALLOC=malloc|mmap): no call into it from
 *                there; its block is never hostpin's nor imported */
#include <pthread.h>
#include <stdatomic.h>

/* A function of the fake driver (the first of ZE_ENABLE_ALT_DRIVERS),
 * which the loader opened in a local scope. */
static void *fake_sym(const char *name)
{
	char path[4096];
	const char *e = getenv("ZE_ENABLE_ALT_DRIVERS");
	CHECK(e && strlen(e) < sizeof(path));
	strcpy(path, e);
	*strchrnul(path, ',') = 0;
	void *h = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
	CHECK(h);
	void *f = dlsym(h, name);
	CHECK(f);
	return f;
}

/* Is [p, p+n) inside one import of the fake driver? */
static int imported(const void *p, size_t n)
{
	static int (*is)(const void *, size_t);
	if (!is)
		*(void **)&is = fake_sym("fake_ze_is_imported");
	return is(p, n);
}

static char *map(size_t n)
{
	char *m = mmap(NULL, n, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(m != MAP_FAILED);
	memset(m, 7, n);
	return m;
}

/* Item 13: blocks after zeInit imported at once (HOSTPIN_PIN_AFTER=0). */
static void mmap_init(void)
{
	init();
	char *m = map(32 * MB);
	if (hp) {
		CHECK(imported(m, 32 * MB));
		CHECK(registered(m));
	}
	char *g = map(32 * MB);
	char *q = mremap(g, 32 * MB, 64 * MB, MREMAP_MAYMOVE);
	CHECK(q != MAP_FAILED);
	memset(q + 32 * MB, 8, 32 * MB);
	if (hp) /* the old import released first: the fake flags overlaps */
		CHECK(imported(q, 64 * MB) && registered(q));
	CHECK(q[0] == 7 && q[64 * MB - 1] == 8);
	char *p = malloc(32 * MB);
	memset(p, 9, 32 * MB);
	if (hp)
		CHECK(imported(p, 32 * MB) && registered(p));
	free(p);
	CHECK(munmap(q, 64 * MB) == 0 && munmap(m, 32 * MB) == 0);
}

/* Item 14: MAP_FIXED over the head, then the tail, then the middle of one
 * imported mapping (an allocator decommitting with MAP_FIXED); after each,
 * every part left in place is imported (again), and so is each new
 * mapping. */
static void fixed_keep(void)
{
	init();
	char *m = map(96 * MB), *f[3];
	if (hp)
		CHECK(imported(m, 96 * MB));
	static const size_t at[3] = {0, 80 * MB, 40 * MB};
	for (int i = 0; i < 3; i++) {
		f[i] = mmap(m + at[i], 16 * MB, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
		CHECK(f[i] == m + at[i] && f[i][0] == 0);
		memset(f[i], 1, 16 * MB);
	}
	CHECK(m[16 * MB] == 7 && m[40 * MB - 1] == 7 && m[56 * MB] == 7 &&
	      m[80 * MB - 1] == 7);
	if (hp) {
		CHECK(imported(m + 16 * MB, 24 * MB) && registered(m + 16 * MB));
		CHECK(imported(m + 56 * MB, 24 * MB) && registered(m + 56 * MB));
		for (int i = 0; i < 3; i++)
			CHECK(imported(f[i], 16 * MB));
	}
	CHECK(munmap(m, 96 * MB) == 0);
}

/* Item 14: worker threads map blocks before, while and after the main
 * thread initialises Level Zero, while other threads allocate blocks and
 * import and release parts of them (SYCL's prepare_for_device_copy); every
 * mapping ends up imported, however the threads interleave.  A block left
 * pending (or lazy) just as another thread's zeInit adopted the others is
 * the race: the tracking thread looks at readiness again after announcing
 * its block (pin.c, adopt_again). */
#define WORKERS 4
#define ALLOCS 3
#define MAXB 128
static char *blocks[WORKERS][MAXB];
static int nblocks[WORKERS];
static atomic_int t_inited, t_stop, t_fns;
static imp_t t_imp;
static rel_t t_rel;
static ze_driver_handle_t t_nd;

static void *mapper(void *arg)
{
	long k = (long)arg;
	int after = 0; /* blocks mapped once zeInit had returned */
	while (nblocks[k] < MAXB && after < 8) {
		char *p = mmap(NULL, 2 * MB, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		CHECK(p != MAP_FAILED);
		p[0] = p[2 * MB - 1] = 7;
		blocks[k][nblocks[k]++] = p;
		after += atomic_load(&t_inited);
	}
	return NULL;
}

static void *allocator(void *arg)
{
	(void)arg;
	while (!atomic_load(&t_stop)) {
		char *p = malloc(4 * MB);
		CHECK(p);
		p[0] = 1;
		if (atomic_load(&t_fns)) {
			CHECK(t_imp(t_nd, p + MB, MB) == ZE_RESULT_SUCCESS);
			CHECK(t_rel(t_nd, p + MB) == ZE_RESULT_SUCCESS);
		}
		free(p);
	}
	return NULL;
}

static void threads_mmap(void)
{
	pthread_t t[WORKERS + ALLOCS];
	for (long i = 0; i < WORKERS; i++)
		CHECK(pthread_create(&t[i], NULL, mapper, (void *)i) == 0);
	for (int i = 0; i < ALLOCS; i++)
		CHECK(pthread_create(&t[WORKERS + i], NULL, allocator, NULL) == 0);
	ze_driver_handle_t d = init();
	atomic_store(&t_inited, 1);
	fns(d, &t_imp, &t_rel);
	t_nd = native(d);
	atomic_store(&t_fns, 1);
	for (int i = 0; i < WORKERS; i++)
		CHECK(pthread_join(t[i], NULL) == 0);
	atomic_store(&t_stop, 1);
	for (int i = 0; i < ALLOCS; i++)
		CHECK(pthread_join(t[WORKERS + i], NULL) == 0);
	int missed = 0, total = 0;
	for (int i = 0; i < WORKERS; i++)
		for (int j = 0; j < nblocks[i]; j++, total++) {
			if (hp && !(imported(blocks[i][j], 2 * MB) &&
				    registered(blocks[i][j])))
				missed++;
			CHECK(blocks[i][j][0] == 7 && blocks[i][j][2 * MB - 1] == 7);
		}
	printf("threads_mmap: %d of %d mappings not imported\n", missed, total);
	CHECK(missed == 0);
	for (int i = 0; i < WORKERS; i++)
		for (int j = 0; j < nblocks[i]; j++)
			CHECK(munmap(blocks[i][j], 2 * MB) == 0);
}

/* Item 14, the interleaving forced: a worker's mmap is held by a debugger
 * (186-faults_ze_threads.sh drives gdb) inside hostpin just after the
 * backend answered "not ready" for its block and before the block is
 * marked pending, while this thread's zeInit returns and hostpin's
 * adoption at zeInit looks for pending blocks (none yet).  Then the worker
 * goes on.  The block must be imported when its mmap returns: nothing
 * after it (no large malloc, no other zeInit) adopts it.  The same under
 * the defaults, held where the block is about to be marked lazy.  w_mapping tells
 * gdb which call to stop in; gdb sets w_stopped once it holds the worker;
 * ze_window_after_init is where gdb lets the worker go.  Without gdb the
 * worker's mmap simply completes first (w_block). */
volatile int w_mapping, w_stopped;
static char *volatile w_block;

__attribute__((noinline)) void ze_window_after_init(void)
{
	__asm__ volatile("" ::: "memory");
}

static void *window_mapper(void *arg)
{
	(void)arg;
	w_mapping = 1;
	char *p = mmap(NULL, 2 * MB, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	w_mapping = 0;
	CHECK(p != MAP_FAILED);
	p[0] = p[2 * MB - 1] = 7;
	w_block = p;
	return NULL;
}

static void window_mmap(void)
{
	/* ZE_WINDOW_BEFORE=1: a block of this thread's from before zeInit,
	 * so that the adoption at zeInit walks the registry (and passes the
	 * worker's block, not yet marked) instead of finding nothing */
	const char *e = getenv("ZE_WINDOW_BEFORE");
	char *b = e && *e == '1' ? map(2 * MB) : NULL;
	pthread_t t;
	CHECK(pthread_create(&t, NULL, window_mapper, NULL) == 0);
	while (!w_stopped && !w_block)
		sched_yield(); /* a condition, not a timing: gdb or the worker */
	init();
	ze_window_after_init();
	CHECK(pthread_join(t, NULL) == 0);
	char *p = w_block;
	int imp = imported(p, 2 * MB);
	printf("window_mmap: held=%d flags=%#x imported=%d\n", w_stopped,
	       tp_flags(p), imp);
	if (hp)
		CHECK(imp && registered(p));
	if (hp && b)
		CHECK(imported(b, 2 * MB) && registered(b));
	CHECK(munmap(p, 2 * MB) == 0);
	CHECK(!b || munmap(b, 2 * MB) == 0);
}

/* Item 15: the driver's own allocation inside zeContextCreate.  The fake
 * records a call into it from there as a VIOLATION (the runner checks). */
static void ctx_alloc(void)
{
	ze_driver_handle_t d = init();
	ze_context_desc_t desc = {.stype = ZE_STRUCTURE_TYPE_CONTEXT_DESC};
	ze_context_handle_t c;
	CHECK(zeContextCreate(d, &desc, &c) == ZE_RESULT_SUCCESS);
	char *p = malloc(8 * MB); /* the program's own block */
	memset(p, 3, 8 * MB);
	if (hp) /* HP_EXPECT_LAZY: imported at its copies, and it has none */
		CHECK(getenv("HP_EXPECT_LAZY") ? !imported(p, 1)
					       : imported(p, 8 * MB) && registered(p));
	const char *how = getenv("FAKE_ZE_CTX_ALLOC");
	void *(*buf)(void);
	*(void **)&buf = fake_sym("fake_ze_ctx_buffer");
	CHECK(buf());
	/* the driver's block, malloc'd or mmap'd: its own, never hostpin's
	 * nor imported (invariant 8; issue 41) */
	if (hp && how)
		CHECK(!imported(buf(), 1) && tp_flags(buf()) == 0);
	CHECK(zeContextDestroy(c) == ZE_RESULT_SUCCESS);
	free(p);
}

static int faults_mode(const char *m)
{
	if (!strcmp(m, "mmap_init")) mmap_init();
	else if (!strcmp(m, "fixed_keep")) fixed_keep();
	else if (!strcmp(m, "threads_mmap")) threads_mmap();
	else if (!strcmp(m, "window_mmap")) window_mmap();
	else if (!strcmp(m, "ctx_alloc")) ctx_alloc();
	else return 0;
	return 1;
}
