/* cuda_prog modes on range shapes, refused releases, the coverage check
 * and context lifetime (included by cuda_prog.c: its helpers and R).
 *   straddle      the program registers a range that starts below
 *                 hostpin's lowest block and ends inside it
 *   two_foreign   two registrations of the program in one block
 *   munmap_leak   unregistration refused (FAKE_CUDA_FAIL): munmap, free and
 *                 MAP_FIXED leave the range mapped
 *   runs_into     a 2D copy whose first row lies outside a block and whose
 *                 second row lies inside it
 *   coverage_late an object with an unknown copy entry point is loaded
 *                 while blocks (one cached) are registered
 *   reset_rt      cudaDeviceReset; reset_drv / release_drv / destroy_drv:
 *                 the driver's cuDevicePrimaryCtxReset_v2 / Release_v2 /
 *                 cuCtxDestroy_v2, found as HP_CTX_PATH says (linked, gpa,
 *                 entry, dlsym) */

static void straddle(void)
{
	CHECK(R.cudaSetDevice(0) == 0);
	char *r = tp_below_and_block(hp), *m = r + 4 * MB;
	/* starts 2 MiB below the block, ends 2 MiB inside it */
	CHECK(R.cudaHostRegister(r + 2 * MB, 4 * MB, 0) == 0);
	if (hp)
		CHECK(!registered(m));
	CHECK(R.cudaHostUnregister(r + 2 * MB) == 0);
	if (hp)
		CHECK(registered(m) && cu_is_registered(m, 12 * MB));
	CHECK(munmap(m, 12 * MB) == 0);
	syscall(SYS_munmap, r, 4 * MB);
}

static void two_foreign(void)
{
	CHECK(R.cudaSetDevice(0) == 0);
	char *p = malloc(16 * MB);
	tp_fill(p, 16 * MB, 3);
	if (hp)
		CHECK(registered(p));
	/* one at the block's first byte, one inside */
	CHECK(R.cudaHostRegister(p, 2 * MB, 0) == 0);
	CHECK(cu_reg(p + 8 * MB, 2 * MB, 0) == 0);
	if (hp)
		CHECK(!registered(p));
	/* the second released first: the first still covers part of the
	 * block, which must not be registered around it */
	CHECK(cu_unreg(p + 8 * MB) == 0);
	if (hp)
		CHECK(!registered(p));
	CHECK(cu_is_registered(p, 2 * MB));
	CHECK(R.cudaHostUnregister(p) == 0);
	if (hp)
		CHECK(registered(p) && cu_is_registered(p, 16 * MB));
	CHECK(tp_verify(p, 16 * MB, 3));
	free(p);
}

/* FAKE_CUDA_FAIL refuses the first two unregistrations: the munmap's and
 * the free's. */
static void munmap_leak(void)
{
	CHECK(R.cudaSetDevice(0) == 0);
	char *m = tp_map_filled(16 * MB, 5, hp);
	CHECK(munmap(m, 16 * MB) == 0);
	if (hp) {
		/* still registered: never unmapped, never replaced */
		CHECK(tp_mapped(m, 16 * MB) && cu_is_registered(m, 16 * MB));
		CHECK(mmap(m, 4 * MB, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) ==
		      MAP_FAILED);
		CHECK(tp_mapped(m, 16 * MB) && m[0] == 5);
		char *n = mmap(NULL, 16 * MB, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		CHECK(n != MAP_FAILED && n != m);
		munmap(n, 16 * MB);
	}
	char *b = malloc(8 * MB);
	memset(b, 6, 8 * MB);
	free(b);
	if (hp) {
		CHECK(tp_mapped(b, 8 * MB) && cu_is_registered(b, 8 * MB));
		struct hostpin_stats st;
		CHECK(tp_stats(&st) == 0 && st.leaked_blocks == 2);
	}
}

/* Rows of 1 MiB, pitch 3.5 MiB: row 0 in plain memory below the block,
 * row 1 inside it; the first byte and rows * width miss the block. */
static void runs_into(void)
{
	CHECK(R.cudaSetDevice(0) == 0);
	char *r = tp_below_and_block(hp);
	char *src = r + 1 * MB;
	size_t w = 1 * MB, pitch = 7 * MB / 2;
	void *d;
	CHECK(R.cudaMalloc(&d, 2 * w) == 0);
	memset(src, 0x11, w);
	memset(src + pitch, 0x11, w);
	CHECK(R.cudaMemcpy2DAsync(d, w, src, pitch, w, 2, H2D, NULL) == 0);
	/* after an async H2D returns, the source may change */
	memset(src, 0x22, w);
	memset(src + pitch, 0x22, w);
	R.cudaDeviceSynchronize();
	char *back = malloc(2 * w);
	dev_read(back, d, 2 * w);
	CHECK(all(back, 2 * w, 0x11));
	free(back);
	munmap(r + 4 * MB, 12 * MB);
	syscall(SYS_munmap, r, 4 * MB);
}

static void coverage_late(void)
{
	CHECK(R.cudaSetDevice(0) == 0);
	char *p = malloc(8 * MB), *q = malloc(8 * MB);
	memset(p, 1, 8 * MB);
	memset(q, 2, 8 * MB);
	free(q); /* cached (HOSTPIN_CACHE), registered */
	if (hp)
		CHECK(registered(p) && cu_is_registered(q, 8 * MB));
	CHECK(dlopen(getenv("HP_LATE_EXTRA"), RTLD_NOW | RTLD_LOCAL));
	char *q2 = malloc(8 * MB); /* the cached block again */
	if (hp) {
		CHECK(q2 == q);
		CHECK(!registered(p) && !cu_is_registered(p, 8 * MB));
		CHECK(!registered(q2) && !cu_is_registered(q2, 8 * MB));
		char *n = malloc(4 * MB);
		memset(n, 3, 4 * MB);
		CHECK(!registered(n));
		free(n);
	}
	/* p is plain memory now: pageable semantics without a wait */
	void *d;
	CHECK(R.cudaMalloc(&d, 8 * MB) == 0);
	CHECK(h2d(d, p, 8 * MB, NULL) == 0);
	memset(p, 9, 8 * MB);
	R.cudaDeviceSynchronize();
	dev_read(q2, d, 8 * MB);
	CHECK(all(q2, 8 * MB, 1));
	free(p);
	free(q2);
}

/* ---- context lifetime ---- */
typedef int (*devfn_t)(int);
static void *ctx_fn(const char *name, const char *base)
{
	const char *how = getenv("HP_CTX_PATH") ? getenv("HP_CTX_PATH") : "dlsym";
	void *f = NULL;
	if (!strcmp(how, "linked"))
		f = linked_sym(name);
	else if (!strcmp(how, "gpa"))
		f = by_gpa(base, 0);
	else if (!strcmp(how, "entry"))
		CHECK(R.cudaGetDriverEntryPoint(base, &f, 0, NULL) == 0);
	else
		f = dlsym(libcuda(), name);
	CHECK(f != NULL);
	return f;
}

/* A thread with no context allocates: hostpin must not push a context
 * that ended (the fake flags it). */
static void *alloc_thread(void *arg)
{
	(void)arg;
	char *q = malloc(4 * MB);
	memset(q, 1, 4 * MB);
	if (hp)
		CHECK(!registered(q));
	free(q);
	return NULL;
}

static void after_end(char *p)
{
	if (hp)
		CHECK(!registered(p) && (tp_flags(p) & HOSTPIN_PENDING));
	CHECK(!cu_is_registered(p, 8 * MB));
	pthread_t t;
	pthread_create(&t, NULL, alloc_thread, NULL);
	pthread_join(t, NULL);
}

/* The next copy, with a context active again, registers the block again. */
static void again(char *p)
{
	void *d;
	CHECK(R.cudaMalloc(&d, 8 * MB) == 0);
	CHECK(R.cudaMemcpyAsync(d, p, 8 * MB, H2D, NULL) == 0);
	R.cudaDeviceSynchronize();
	if (hp)
		CHECK(registered(p) && cu_is_registered(p, 8 * MB));
	CHECK(tp_verify(p, 8 * MB, 7));
	free(p);
}

static void reset_rt(void)
{
	CHECK(R.cudaSetDevice(0) == 0);
	char *p = malloc(8 * MB);
	tp_fill(p, 8 * MB, 7);
	if (hp)
		CHECK(registered(p));
	CHECK(R.cudaDeviceReset() == 0);
	after_end(p);
	CHECK(R.cudaSetDevice(0) == 0);
	again(p);
}

static void reretain(void)
{
	int (*retain)(void **, int) =
	    (int (*)(void **, int))(LINKED ? linked_sym("cuDevicePrimaryCtxRetain")
					   : dlsym(libcuda(), "cuDevicePrimaryCtxRetain"));
	int (*set)(void *) = (int (*)(void *))dlsym(libcuda(), "cuCtxSetCurrent");
	void *c;
	CHECK(retain && set && retain(&c, 0) == 0 && set(c) == 0);
}

static void reset_drv(void)
{
	devfn_t reset = (devfn_t)ctx_fn("cuDevicePrimaryCtxReset_v2",
					"cuDevicePrimaryCtxReset");
	CHECK(R.cudaSetDevice(0) == 0);
	char *p = malloc(8 * MB);
	tp_fill(p, 8 * MB, 7);
	if (hp)
		CHECK(registered(p));
	CHECK(reset(0) == 0);
	after_end(p);
	reretain();
	again(p);
}

static void release_drv(void)
{
	devfn_t release = (devfn_t)ctx_fn("cuDevicePrimaryCtxRelease_v2",
					  "cuDevicePrimaryCtxRelease");
	CHECK(R.cudaSetDevice(0) == 0); /* the runtime's reference */
	reretain();                     /* and the program's */
	char *p = malloc(8 * MB);
	tp_fill(p, 8 * MB, 7);
	if (hp)
		CHECK(registered(p));
	CHECK(release(0) == 0); /* one reference left: nothing ends */
	if (hp)
		CHECK(registered(p));
	CHECK(cu_is_registered(p, 8 * MB));
	CHECK(release(0) == 0); /* the last: the context ends */
	after_end(p);
	reretain();
	again(p);
}

/* cuCtxDestroy of the context hostpin registered through (the fake lets a
 * program destroy the primary context's handle, and creates it again at
 * the next retain). */
static void destroy_drv(void)
{
	int (*destroy)(void *) = (int (*)(void *))ctx_fn("cuCtxDestroy_v2",
							  "cuCtxDestroy");
	int (*get)(void **) = (int (*)(void **))dlsym(libcuda(), "cuCtxGetCurrent");
	CHECK(R.cudaSetDevice(0) == 0);
	char *p = malloc(8 * MB);
	tp_fill(p, 8 * MB, 7);
	if (hp)
		CHECK(registered(p));
	void *c = NULL;
	CHECK(get && get(&c) == 0 && c);
	CHECK(destroy(c) == 0);
	after_end(p);
	reretain();
	again(p);
}

static int ranges_mode(const char *m)
{
	if (!strcmp(m, "straddle")) straddle();
	else if (!strcmp(m, "two_foreign")) two_foreign();
	else if (!strcmp(m, "munmap_leak")) munmap_leak();
	else if (!strcmp(m, "runs_into")) runs_into();
	else if (!strcmp(m, "coverage_late")) coverage_late();
	else if (!strcmp(m, "reset_rt")) reset_rt();
	else if (!strcmp(m, "reset_drv")) reset_drv();
	else if (!strcmp(m, "release_drv")) release_drv();
	else if (!strcmp(m, "destroy_drv")) destroy_drv();
	else return 0;
	return 1;
}
