/* What a real CUDA runtime (PyPI's libcudart.so.13, a framework's static
 * copy) needs of the driver to initialise and run, included at the end of
 * fake_cuda.c.  On only when FAKE_CUDA_VERSION is 13000 or more: the fake
 * then answers cuGetProcAddress for the entry points below, and every other
 * name with a stub, as a real runtime expects every entry point of its
 * version to exist.  A stub answers success and writes nothing: the 13.2
 * runtime calls a few entry points at start-up (cuStreamWaitValue32,
 * cuMipmappedArrayGetLevel, cuGraphGetId) and gives up on any error; each
 * call of a stub is logged ("UNSUPPORTED name"), so a test that needs one
 * sees it.  Kernels, modules and libraries are accepted and do nothing:
 * tests check copies only. */

#define STUB_RESULT OK

static CUresult rt_unsupported(void)
{
	return STUB_RESULT;
}

static int rt_mode(void)
{
	const char *e = getenv("FAKE_CUDA_VERSION");
	return e && atoi(e) >= 13000;
}

/* Unmodelled entry points: one stub per name handed out (up to 1024), so
 * a call logs which ("UNSUPPORTED name"). */
#define NSTUB 1024
static char stub_name[NSTUB][96]; /* no malloc inside the driver */
static int nstub;
static CUresult stub_call(int i)
{
	logf_("UNSUPPORTED %s", stub_name[i]);
	return STUB_RESULT;
}
#define ST1(i) static CUresult stub_##i(void) { return stub_call(i); }
#define ST4(i) ST1(i##0) ST1(i##1) ST1(i##2) ST1(i##3)
#define ST16(i) ST4(i##0) ST4(i##1) ST4(i##2) ST4(i##3)
#define ST64(i) ST16(i##0) ST16(i##1) ST16(i##2) ST16(i##3)
#define ST256(i) ST64(i##0) ST64(i##1) ST64(i##2) ST64(i##3)
ST256(0) ST256(1) ST256(2) ST256(3)
#define SP1(i) (void *)stub_##i,
#define SP4(i) SP1(i##0) SP1(i##1) SP1(i##2) SP1(i##3)
#define SP16(i) SP4(i##0) SP4(i##1) SP4(i##2) SP4(i##3)
#define SP64(i) SP16(i##0) SP16(i##1) SP16(i##2) SP16(i##3)
#define SP256(i) SP64(i##0) SP64(i##1) SP64(i##2) SP64(i##3)
static void *const stubs[NSTUB] = {SP256(0) SP256(1) SP256(2) SP256(3)};
/* (called under mu, from cuGetProcAddress_v2) */
static void *rt_stub(const char *sym)
{
	for (int i = 0; i < nstub; i++)
		if (strcmp(stub_name[i], sym) == 0)
			return stubs[i];
	if (nstub == NSTUB)
		return (void *)rt_unsupported;
	snprintf(stub_name[nstub], sizeof(stub_name[0]), "%s", sym);
	return stubs[nstub++];
}

/* ---- the runtime's private tables (cuGetExportTable) ----
 * Undocumented tables of function pointers the runtime asks the driver
 * for by UUID; slot 0 usually holds the table's size in bytes.  Only the
 * slots a runtime calls are given meaning; the others are logged no-ops
 * that answer success, so a slot a new runtime starts to call shows up in
 * the fake's log as "DARK uuid slot" instead of jumping to NULL. */
typedef struct {
	unsigned char b[16];
} fake_uuid;
#define DARK_SLOTS 16
#define DARK_STUB(t, i)                                                       \
	static CUresult dark_##t##_##i(void)                                  \
	{                                                                     \
		logf_("DARK %s %d", #t, i);                                   \
		return OK;                                                    \
	}
#define DARK_ROW(t)                                                           \
	DARK_STUB(t, 0) DARK_STUB(t, 1) DARK_STUB(t, 2) DARK_STUB(t, 3)       \
	DARK_STUB(t, 4) DARK_STUB(t, 5) DARK_STUB(t, 6) DARK_STUB(t, 7)       \
	DARK_STUB(t, 8) DARK_STUB(t, 9) DARK_STUB(t, 10) DARK_STUB(t, 11)     \
	DARK_STUB(t, 12) DARK_STUB(t, 13) DARK_STUB(t, 14) DARK_STUB(t, 15)
#define DARK_FILL(tab, t)                                                     \
	do {                                                                  \
		void *s_[DARK_SLOTS] = {                                      \
			(void *)dark_##t##_0, (void *)dark_##t##_1,           \
			(void *)dark_##t##_2, (void *)dark_##t##_3,           \
			(void *)dark_##t##_4, (void *)dark_##t##_5,           \
			(void *)dark_##t##_6, (void *)dark_##t##_7,           \
			(void *)dark_##t##_8, (void *)dark_##t##_9,           \
			(void *)dark_##t##_10, (void *)dark_##t##_11,         \
			(void *)dark_##t##_12, (void *)dark_##t##_13,         \
			(void *)dark_##t##_14, (void *)dark_##t##_15};        \
		memcpy(tab, s_, sizeof(s_));                                  \
	} while (0)
DARK_ROW(cudart)
DARK_ROW(hooks)
DARK_ROW(tls)
DARK_ROW(ctxstore)
DARK_ROW(ctxcheck)
DARK_ROW(other)

typedef struct {
	unsigned magic, version;
	const void *data;
	const void *more;
} fatbin_wrapper;

struct CUmod_st {
	int dummy;
};
static struct CUmod_st the_module;
static struct CUmod_st *module_of(const void *image)
{
	(void)image;
	return &the_module;
}

/* cudart interface: load a module from the program's embedded fatbin, and
 * retain a device's primary context */
static CUresult dark_module(struct CUmod_st **m, const fatbin_wrapper *w)
{
	logf_("MODULE %s", w ? "fatbin" : "none");
	*m = module_of(w);
	return OK;
}
static CUresult dark_module_ext1(struct CUmod_st **m, const fatbin_wrapper *w,
				 void *a, void *b, unsigned c)
{
	(void)a, (void)b, (void)c;
	return dark_module(m, w);
}
static CUresult dark_module_ext2(const void *fatbin, struct CUmod_st **m,
				 void *a, void *b, unsigned c)
{
	(void)a, (void)b, (void)c;
	logf_("MODULE fatbin");
	*m = module_of(fatbin);
	return OK;
}
static CUresult dark_primary(CUcontext *c, CUdevice d)
{
	return cuDevicePrimaryCtxRetain(c, d);
}
/* tools hooks: buffers the runtime writes its tool state into */
static void dark_buffer1(void **p, size_t *n)
{
	static char buf[1024];
	if (p)
		*p = buf;
	if (n)
		*n = sizeof(buf);
}
static void dark_buffer2(void **p, size_t *n)
{
	static char buf[16];
	if (p)
		*p = buf;
	if (n)
		*n = 14;
}
/* context-local storage: a small table of (context, key) -> value */
static struct {
	void *ctx, *key, *value;
} cls[256];
static int ncls;
static void *cls_ctx(void *c)
{
	return c ? c : depth ? (void *)stack[depth - 1] : NULL;
}
static CUresult dark_cls_put(void *c, void *key, void *value, void *dtor)
{
	(void)dtor;
	c = cls_ctx(c);
	pthread_mutex_lock(&mu);
	int i = 0;
	while (i < ncls && !(cls[i].ctx == c && cls[i].key == key))
		i++;
	if (i == ncls && ncls < 256)
		ncls++;
	if (i < 256)
		cls[i].ctx = c, cls[i].key = key, cls[i].value = value;
	pthread_mutex_unlock(&mu);
	return i < 256 ? OK : OUT_OF_MEMORY;
}
static CUresult dark_cls_delete(void *c, void *key)
{
	c = cls_ctx(c);
	pthread_mutex_lock(&mu);
	for (int i = 0; i < ncls; i++)
		if (cls[i].ctx == c && cls[i].key == key)
			cls[i] = cls[--ncls];
	pthread_mutex_unlock(&mu);
	return OK;
}
static CUresult dark_cls_get(void **value, void *c, void *key)
{
	c = cls_ctx(c);
	*value = NULL;
	CUresult r = 500; /* CUDA_ERROR_NOT_FOUND */
	pthread_mutex_lock(&mu);
	for (int i = 0; i < ncls; i++)
		if (cls[i].ctx == c && cls[i].key == key)
			*value = cls[i].value, r = OK;
	pthread_mutex_unlock(&mu);
	return r;
}
static CUresult dark_ctx_check(void *c, unsigned *result, const void **detail)
{
	(void)c, (void)detail;
	if (result)
		*result = 0;
	return OK;
}
static unsigned dark_zero(void)
{
	return 0;
}

/* The runtime checks that it talks to the real driver: it sends a version
 * and the time, and expects a keyed digest (HMAC over MD2, RFC 2104 and
 * RFC 1319, with a fixed 16-byte key) of what the driver knows: its
 * version, the process and thread, where its tables and this function
 * are, the time, and each device's UUID and PCI domain, bus and device.
 * Versions ending in 0 or 1 expect fixed answers. */
static const unsigned char md2_s[256] = {
	41, 46, 67, 201, 162, 216, 124, 1, 61, 54, 84, 161, 236, 240, 6, 19,
	98, 167, 5, 243, 192, 199, 115, 140, 152, 147, 43, 217, 188, 76, 130, 202,
	30, 155, 87, 60, 253, 212, 224, 22, 103, 66, 111, 24, 138, 23, 229, 18,
	190, 78, 196, 214, 218, 158, 222, 73, 160, 251, 245, 142, 187, 47, 238, 122,
	169, 104, 121, 145, 21, 178, 7, 63, 148, 194, 16, 137, 11, 34, 95, 33,
	128, 127, 93, 154, 90, 144, 50, 39, 53, 62, 204, 231, 191, 247, 151, 3,
	255, 25, 48, 179, 72, 165, 181, 209, 215, 94, 146, 42, 172, 86, 170, 198,
	79, 184, 56, 210, 150, 164, 125, 182, 118, 252, 107, 226, 156, 116, 4, 241,
	69, 157, 112, 89, 100, 113, 135, 32, 134, 91, 207, 101, 230, 45, 168, 2,
	27, 96, 37, 173, 174, 176, 185, 246, 28, 70, 97, 105, 52, 64, 126, 15,
	85, 71, 163, 35, 221, 81, 175, 58, 195, 92, 249, 206, 186, 197, 234, 38,
	44, 83, 13, 110, 133, 40, 132, 9, 211, 223, 205, 244, 65, 129, 77, 82,
	106, 220, 55, 200, 108, 193, 171, 250, 36, 225, 123, 8, 12, 189, 177, 74,
	120, 136, 149, 139, 227, 99, 232, 109, 233, 203, 213, 254, 59, 0, 29, 57,
	242, 239, 183, 14, 102, 88, 208, 228, 166, 119, 114, 248, 235, 117, 75, 10,
	49, 68, 80, 180, 143, 237, 31, 26, 219, 153, 141, 51, 159, 17, 131, 20};
struct md2 {
	unsigned char x[48], c[16], n, l;
};
static void md2_byte(struct md2 *m, unsigned char b)
{
	m->x[16 + m->n] = b;
	m->x[32 + m->n] = m->x[m->n] ^ b;
	m->l = m->c[m->n] ^= md2_s[b ^ m->l];
	if (++m->n < 16)
		return;
	m->n = 0;
	unsigned t = 0;
	for (unsigned r = 0; r < 18; r++) {
		for (int k = 0; k < 48; k++)
			t = m->x[k] ^= md2_s[t];
		t = (t + r) & 255;
	}
}
static void md2_bytes(struct md2 *m, const void *p, size_t n, unsigned char x)
{
	for (size_t i = 0; i < n; i++)
		md2_byte(m, ((const unsigned char *)p)[i] ^ x);
}
static void md2_final(struct md2 *m, unsigned char out[16])
{
	unsigned char pad = (unsigned char)(16 - m->n);
	for (unsigned i = 0; i < pad; i++)
		md2_byte(m, pad);
	unsigned char c[16];
	memcpy(c, m->c, 16);
	md2_bytes(m, c, 16, 0);
	memcpy(out, m->x, 16);
}
static void *t_integrity[3];
static void *t_cudart[DARK_SLOTS];
static CUresult rt_uuid(unsigned char *u, CUdevice d);
static CUresult dark_integrity(unsigned version, unsigned long long secs,
			       unsigned long long out[2])
{
	static const unsigned char key[16] = {
		0x14, 0x6a, 0xdd, 0xae, 0x53, 0xa9, 0xa7, 0x52,
		0xaa, 0x08, 0x41, 0x36, 0x0b, 0xf5, 0x5a, 0x9f};
	if (version % 10 < 2) {
		out[0] = version % 10 ? 0x1841181c03cb675cULL
				      : 0x3341181c03cb675cULL;
		out[1] = 0x8ed383aa1f4cd1e8ULL;
		return OK;
	}
	struct {
		unsigned driver, version, pid, thread;
		const void *cudart, *table, *fn;
		unsigned long long secs;
	} in;
	memset(&in, 0, sizeof(in));
	int v;
	cuDriverGetVersion(&v);
	in.driver = (unsigned)v, in.version = version;
	in.pid = (unsigned)getpid();
	in.thread = (unsigned)(uintptr_t)pthread_self();
	in.cudart = t_cudart, in.table = t_integrity;
	in.fn = (const void *)dark_integrity, in.secs = secs;
	struct md2 m;
	memset(&m, 0, sizeof(m));
	md2_bytes(&m, key, 16, 0x36);
	md2_bytes(&m, &in, sizeof(in), 0);
	for (int d = 0; d < ndev; d++) {
		struct {
			unsigned char uuid[16];
			int domain, bus, dev;
		} di;
		rt_uuid(di.uuid, d);
		rt_attr(50, &di.domain);
		rt_attr(33, &di.bus);
		rt_attr(34, &di.dev);
		md2_bytes(&m, &di, sizeof(di), 0);
	}
	unsigned char inner[16];
	md2_final(&m, inner);
	memset(&m, 0, sizeof(m));
	md2_bytes(&m, key, 16, 0x5c);
	md2_bytes(&m, inner, 16, 0);
	unsigned char d16[16];
	md2_final(&m, d16);
	memcpy(out, d16, 16);
	return OK;
}

static void *t_hooks[DARK_SLOTS], *t_tls[DARK_SLOTS],
	*t_cls[DARK_SLOTS], *t_check[DARK_SLOTS], *t_other[DARK_SLOTS];
static void dark_tables(void)
{
	DARK_FILL(t_cudart, cudart);
	t_cudart[0] = (void *)(13 * sizeof(void *));
	t_cudart[1] = (void *)dark_module;
	t_cudart[2] = (void *)dark_primary;
	t_cudart[6] = (void *)dark_module_ext1;
	t_cudart[8] = (void *)dark_module_ext2;
	DARK_FILL(t_hooks, hooks);
	t_hooks[0] = (void *)(7 * sizeof(void *));
	t_hooks[2] = (void *)dark_buffer1;
	t_hooks[6] = (void *)dark_buffer2;
	DARK_FILL(t_tls, tls);
	t_tls[0] = (void *)(4 * sizeof(void *));
	DARK_FILL(t_cls, ctxstore); /* no size slot */
	t_cls[0] = (void *)dark_cls_put;
	t_cls[1] = (void *)dark_cls_delete;
	t_cls[2] = (void *)dark_cls_get;
	DARK_FILL(t_check, ctxcheck);
	t_check[0] = (void *)(4 * sizeof(void *));
	t_check[2] = (void *)dark_ctx_check;
	t_check[3] = (void *)dark_zero;
	t_integrity[0] = (void *)(3 * sizeof(void *));
	t_integrity[1] = (void *)dark_integrity;
	t_integrity[2] = NULL;
	DARK_FILL(t_other, other);
	t_other[0] = (void *)(DARK_SLOTS * sizeof(void *));
}

CUresult cuGetExportTable(const void **table, const fake_uuid *id)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, dark_tables);
	static const struct {
		unsigned char b[4];
		void **t;
	} known[] = {
		{{0x6b, 0xd5, 0xfb, 0x6c}, t_cudart},
		{{0xa0, 0x94, 0x79, 0x8c}, t_hooks},
		{{0x42, 0xd8, 0x5a, 0x81}, t_tls},
		{{0xc6, 0x93, 0x33, 0x6e}, t_cls},
		{{0x26, 0x3e, 0x88, 0x60}, t_check},
		{{0xd4, 0x08, 0x20, 0x55}, t_integrity},
	};
	const unsigned char *u = id->b;
	logf_("EXPORTTABLE %02x%02x%02x%02x", u[0], u[1], u[2], u[3]);
	*table = NULL;
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (memcmp(known[i].b, u, 4) == 0) {
			*table = known[i].t;
			return OK;
		}
	/* f8cff951 asks whether the driver bootstraps the runtime itself:
	 * not found, so the runtime takes its ordinary path */
	if (u[0] == 0xf8 && u[1] == 0xcf)
		return 500;

	*table = t_other;
	return OK;
}

/* ---- the device, as a runtime and a framework ask about it: an
 * H100-like part (compute capability 9.0, 80 GiB) ---- */
static int rt_attr(int attr, int *v)
{
	static const struct {
		int attr, value;
	} a[] = {
		{1, 1024}, {2, 1024}, {3, 1024}, {4, 64}, {5, 2147483647},
		{6, 65535}, {7, 65535}, {8, 49152}, {9, 65536}, {10, 32},
		{11, 2147483647}, {12, 65536}, {13, 1755000}, {14, 512},
		{15, 1}, {16, 132}, {19, 1}, {30, 512}, {31, 1}, {33, 0x3b},
		{36, 2619000}, {37, 5120}, {38, 52428800}, {39, 2048},
		{40, 3}, {41, 1}, {50, 0}, {51, 32}, {75, 9}, {76, 0},
		{78, 1}, {79, 1}, {80, 1}, {81, 233472}, {82, 65536}, {83, 1},
		{86, 0}, {88, 0}, {89, 1}, {90, 1}, {91, 1}, {95, 1},
		{97, 232448}, {99, 1}, {102, 1}, {103, 1}, {106, 32},
		{108, 0}, {109, 0}, {111, 1024}, {113, 1}, {115, 1},
		{120, 1}, {126, 4}, {130, 0}, {131, -1},
	};
	if (!rt_mode())
		return 0;
	*v = 0;
	for (size_t i = 0; i < sizeof(a) / sizeof(a[0]); i++)
		if (a[i].attr == attr)
			*v = a[i].value;
	return 1;
}

static CUresult rt_name(char *buf, int len, CUdevice d)
{
	if (len < 1 || d < 0 || d >= ndev)
		return INVALID_VALUE;
	snprintf(buf, (size_t)len, "hostpin fake GPU %d", d);
	return OK;
}
static CUresult rt_totalmem(size_t *n, CUdevice d)
{
	(void)d;
	*n = (size_t)80 << 30;
	return OK;
}
static CUresult rt_uuid(unsigned char *u, CUdevice d)
{
	memset(u, 0, 16);
	u[0] = 0x4e, u[15] = (unsigned char)d;
	return OK;
}
static CUresult rt_luid(char *luid, unsigned *mask, CUdevice d)
{
	(void)d;
	memset(luid, 0, 8);
	*mask = 1;
	return OK;
}
static CUresult rt_meminfo(size_t *free_, size_t *total)
{
	*free_ = (size_t)79 << 30, *total = (size_t)80 << 30;
	return OK;
}
static CUresult rt_zero_uint(unsigned *v)
{
	*v = 0;
	return OK;
}
static CUresult rt_ok(void)
{
	return OK;
}
static CUresult rt_apiversion(CUcontext c, unsigned *v)
{
	(void)c;
	*v = 13020;
	return OK;
}
static CUresult rt_getlimit(size_t *v, int limit)
{
	*v = limit == 0 ? 1024 : limit == 2 ? 8 << 20 : 0;
	return OK;
}
static CUresult rt_prio_range(int *least, int *greatest)
{
	if (least)
		*least = 0;
	if (greatest)
		*greatest = -5;
	return OK;
}
static CUresult rt_pop(CUcontext *c)
{
	return cuCtxPopCurrent_v2(c);
}
static CUresult rt_push(CUcontext c)
{
	return cuCtxPushCurrent_v2(c);
}
static CUresult rt_ctx_get_device(CUdevice *d)
{
	return cuCtxGetDevice(d);
}

/* ---- streams and events ---- */
static CUresult rt_stream_prio(stream_t **s, unsigned flags, int prio)
{
	(void)prio;
	return cuStreamCreate(s, flags);
}
static CUresult rt_stream_wait_event(stream_t *s, struct event *e,
				     unsigned flags)
{
	(void)s, (void)flags;
	run_to(e, 1); /* the event's work first: ordered, deterministic */
	return OK;
}
static CUresult rt_stream_flags(stream_t *s, unsigned *f)
{
	(void)s;
	*f = 0;
	return OK;
}
static CUresult rt_stream_prio_get(stream_t *s, int *p)
{
	(void)s;
	*p = 0;
	return OK;
}
static CUresult rt_stream_id(stream_t *s, unsigned long long *id)
{
	*id = (unsigned long long)(uintptr_t)S(s);
	return OK;
}
static CUresult rt_stream_ctx(stream_t *s, CUcontext *c)
{
	(void)s;
	*c = depth ? stack[depth - 1] : &prim[0];
	return OK;
}
static CUresult rt_elapsed(float *ms, struct event *a, struct event *b)
{
	(void)a, (void)b;
	*ms = 0.5f;
	return OK;
}
static CUresult rt_record_flags(struct event *e, stream_t *s, unsigned f)
{
	(void)f;
	return cuEventRecord(e, s);
}
/* the 13.x capture query: (stream, status, id, graph, deps, edges, n) */
static CUresult rt_capture_info(stream_t *s, int *status,
				unsigned long long *id, void **graph,
				const void **deps, const void **edges,
				size_t *ndeps)
{
	if (edges)
		*edges = NULL;
	return cuStreamGetCaptureInfo_v2(s, status, id, graph, deps, ndeps);
}
/* a host function runs in stream order, in time, unasked as a driver
 * runs it: the stream's work up to it is run (in the late mode its
 * worker is asked to; nothing after it is) */
static CUresult rt_host_func(stream_t *s, void (*fn)(void *), void *arg)
{
	struct op *o = op_new();
	memset(o, 0, sizeof(*o));
	o->host_fn = fn, o->host_arg = arg;
	unsigned long long qn = enqueue(s, o);
	if (qn && late_on())
		late_run(S(s), qn, 0);
	else if (qn)
		run_queue(s, o); /* o: compared, not read (may be run) */
	return OK;
}
CUresult cuLaunchHostFunc(stream_t *s, void (*fn)(void *), void *arg);
CUresult cuLaunchHostFunc(stream_t *s, void (*fn)(void *), void *arg)
{
	return rt_host_func(s, fn, arg);
}
struct rt_cb {
	void (*fn)(stream_t *, CUresult, void *);
	stream_t *s;
	void *arg;
};
static void rt_cb_run(void *p)
{
	struct rt_cb *c = p;
	c->fn(c->s, OK, c->arg);
	unraw(c, sizeof(*c));
}
static CUresult rt_add_callback(stream_t *s,
				void (*fn)(stream_t *, CUresult, void *),
				void *arg, unsigned flags)
{
	(void)flags;
	struct rt_cb *c = raw(sizeof(*c));
	c->fn = fn, c->s = s, c->arg = arg;
	return rt_host_func(s, rt_cb_run, c);
}

/* ---- memory ---- */
/* cuMemHostAlloc: page-locked memory of the driver's own, mapped for the
 * device: recorded as registered (copies from it are direct), logged
 * HOSTALLOC so tests tell it from REG */
static CUresult rt_host_alloc(void **pp, size_t n, unsigned flags)
{
	size_t len = (n + 4095) & ~(size_t)4095;
	char *p = raw(len ? len : 4096);
	if (p == MAP_FAILED)
		return OUT_OF_MEMORY;
	pthread_mutex_lock(&mu);
	if (nheld == MAXHELD) {
		pthread_mutex_unlock(&mu);
		unraw(p, len);
		return OUT_OF_MEMORY;
	}
	held[nheld].base = p, held[nheld].len = len;
	/* the context it belongs to (queries answer its device) */
	held[nheld].owner = depth ? stack[depth - 1] : &prim[0];
	held[nheld].flags = flags;
	nheld++;
	logf_("HOSTALLOC %p %zu %u", (void *)p, len, flags);
	pthread_mutex_unlock(&mu);
	*pp = p;
	return OK;
}
static CUresult rt_host_alloc0(void **pp, size_t n)
{
	return rt_host_alloc(pp, n, 0);
}
static CUresult rt_free_host(void *p)
{
	pthread_mutex_lock(&mu);
	int i = find(p, 1, 1);
	size_t len = i >= 0 ? held[i].len : 0;
	if (i >= 0) {
		logf_("HOSTFREE %p %zu", p, len);
		held[i] = held[--nheld];
	}
	pthread_mutex_unlock(&mu);
	if (i < 0)
		return INVALID_VALUE;
	unraw(p, len);
	return OK;
}
static CUresult rt_alloc_pitch(CUdeviceptr *p, size_t *pitch, size_t w,
			       size_t h, unsigned elt)
{
	(void)elt;
	*pitch = (w + 511) & ~(size_t)511;
	return cuMemAlloc_v2(p, *pitch * (h ? h : 1));
}
static CUresult rt_alloc_async(CUdeviceptr *p, size_t n, stream_t *s)
{
	(void)s;
	return cuMemAlloc_v2(p, n);
}
static CUresult rt_free_async(CUdeviceptr p, stream_t *s)
{
	cuStreamSynchronize(s);
	return cuMemFree_v2(p);
}
static CUresult rt_addr_range(CUdeviceptr *base, size_t *n, CUdeviceptr p)
{
	for (int i = 0; i < ndev_mem; i++)
		if ((char *)(uintptr_t)p >= devmem[i].base &&
		    (char *)(uintptr_t)p < devmem[i].base + devmem[i].len) {
			if (base)
				*base = (CUdeviceptr)(uintptr_t)devmem[i].base;
			if (n)
				*n = devmem[i].len;
			return OK;
		}
	return INVALID_VALUE;
}
/* memsets of device memory: after the stream's queued work */
static CUresult rt_set8(CUdeviceptr d, unsigned char v, size_t n)
{
	cuCtxSynchronize();
	memset((void *)(uintptr_t)d, v, n);
	return OK;
}
static CUresult rt_set8a(CUdeviceptr d, unsigned char v, size_t n,
			 stream_t *s)
{
	(void)s;
	return rt_set8(d, v, n);
}
static CUresult rt_set32(CUdeviceptr d, unsigned v, size_t n)
{
	cuCtxSynchronize();
	for (size_t i = 0; i < n; i++)
		((unsigned *)(uintptr_t)d)[i] = v;
	return OK;
}
static CUresult rt_set32a(CUdeviceptr d, unsigned v, size_t n, stream_t *s)
{
	(void)s;
	return rt_set32(d, v, n);
}
static CUresult rt_dtod(CUdeviceptr d, CUdeviceptr s, size_t n)
{
	return cuMemcpy(d, s, n);
}
static CUresult rt_dtoda(CUdeviceptr d, CUdeviceptr s, size_t n, stream_t *st)
{
	return cuMemcpyAsync(d, s, n, st);
}
static CUresult rt_peer(CUdeviceptr d, CUcontext dc, CUdeviceptr s,
			CUcontext sc, size_t n)
{
	(void)dc, (void)sc;
	return cuMemcpy(d, s, n);
}
static CUresult rt_peera(CUdeviceptr d, CUcontext dc, CUdeviceptr s,
			 CUcontext sc, size_t n, stream_t *st)
{
	(void)dc, (void)sc;
	return cuMemcpyAsync(d, s, n, st);
}

/* ---- modules, libraries, kernels: handles that do nothing; a global
 * (__device__ variable, for cudaMemcpyToSymbol) is 64 MiB of device memory
 * per name (64 MiB, untouched until used) ---- */
static struct {
	char name[128];
	CUdeviceptr p;
} globals[64];
static int nglobals;
static CUresult rt_global(CUdeviceptr *p, size_t *n, void *mod,
			  const char *name)
{
	(void)mod;
	pthread_mutex_lock(&mu);
	int i = 0;
	while (i < nglobals && strcmp(globals[i].name, name))
		i++;
	int fresh = i == nglobals && nglobals < 64;
	pthread_mutex_unlock(&mu);
	if (i == 64)
		return OUT_OF_MEMORY;
	if (fresh) {
		CUdeviceptr m;
		if (cuMemAlloc_v2(&m, (size_t)64 << 20))
			return OUT_OF_MEMORY;
		pthread_mutex_lock(&mu);
		snprintf(globals[nglobals].name, sizeof(globals[0].name), "%s",
			 name);
		globals[nglobals++].p = m;
		pthread_mutex_unlock(&mu);
	}
	if (p)
		*p = globals[i].p;
	if (n)
		*n = (size_t)64 << 20;
	return OK;
}
static CUresult rt_module_load(struct CUmod_st **m, const void *image)
{
	*m = module_of(image);
	return OK;
}
static CUresult rt_library_load(struct CUmod_st **l, const void *code)
{
	logf_("LIBRARY");
	*l = module_of(code);
	return OK;
}
static struct CUmod_st the_function;
static CUresult rt_get_function(struct CUmod_st **f, void *mod,
				const char *name)
{
	(void)mod, (void)name;
	*f = &the_function;
	return OK;
}
static CUresult rt_kernel_function(struct CUmod_st **f, void *kernel)
{
	(void)kernel;
	*f = &the_function;
	return OK;
}
static CUresult rt_library_module(struct CUmod_st **m, void *lib)
{
	(void)lib;
	*m = &the_module;
	return OK;
}
static CUresult rt_func_attr(int *v, int attr, void *f)
{
	(void)f;
	*v = attr == 0 ? 1024 : attr == 4 ? 32 : 0;
	return OK;
}
static CUresult rt_kernel_attr(int *v, int attr, void *k, CUdevice d)
{
	(void)d;
	return rt_func_attr(v, attr, k);
}
static CUresult rt_occupancy(int *n, void *f, int bs, size_t smem)
{
	(void)f, (void)bs, (void)smem;
	*n = 1;
	return OK;
}
static CUresult rt_error_string(CUresult e, const char **s)
{
	return cuGetErrorName(e, s) == OK ? OK : (*s = "unknown error", OK);
}

/* ---- kernels: accepted, nothing runs (tests check copies only) ---- */
static CUresult rt_launch(void)
{
	return OK;
}

static const struct proc rt_procs[] = {
#define R(n, f) {#n, 0, 0, (void *)f},
	R(cuGetExportTable, cuGetExportTable)
	R(cuDriverGetVersion, cuDriverGetVersion)
	R(cuLaunchKernel, rt_launch) R(cuLaunchKernelEx, rt_launch)
	R(cuLaunchCooperativeKernel, rt_launch)
	R(cuLaunchHostFunc, rt_host_func) R(cuStreamAddCallback, rt_add_callback)
	R(cuDeviceGetName, rt_name) R(cuDeviceTotalMem, rt_totalmem)
	R(cuDeviceGetUuid, rt_uuid) R(cuDeviceGetLuid, rt_luid)
	R(cuMemGetInfo, rt_meminfo) R(cuCtxGetFlags, rt_zero_uint)
	R(cuDevicePrimaryCtxRelease, cuDevicePrimaryCtxRelease_v2)
	R(cuDevicePrimaryCtxReset, cuDevicePrimaryCtxReset_v2)
	R(cuDevicePrimaryCtxSetFlags, rt_ok) R(cuCtxSetLimit, rt_ok)
	R(cuCtxGetApiVersion, rt_apiversion) R(cuCtxGetLimit, rt_getlimit)
	R(cuCtxGetStreamPriorityRange, rt_prio_range)
	R(cuCtxPopCurrent, rt_pop) R(cuCtxPushCurrent, rt_push)
	R(cuCtxGetDevice, rt_ctx_get_device)
	R(cuStreamCreateWithPriority, rt_stream_prio)
	R(cuStreamDestroy, rt_ok) R(cuStreamWaitEvent, rt_stream_wait_event)
	R(cuStreamGetFlags, rt_stream_flags)
	R(cuStreamGetPriority, rt_stream_prio_get)
	R(cuStreamGetId, rt_stream_id) R(cuStreamGetCtx, rt_stream_ctx)
	R(cuStreamGetCaptureInfo, rt_capture_info)
	R(cuEventElapsedTime, rt_elapsed) R(cuEventRecordWithFlags, rt_record_flags)
	R(cuMemHostAlloc, rt_host_alloc) R(cuMemAllocHost, rt_host_alloc0)
	R(cuMemFreeHost, rt_free_host) R(cuMemAllocPitch, rt_alloc_pitch)
	R(cuMemAllocAsync, rt_alloc_async) R(cuMemFreeAsync, rt_free_async)
	R(cuMemGetAddressRange, rt_addr_range)
	R(cuMemsetD8, rt_set8) R(cuMemsetD8Async, rt_set8a)
	R(cuMemsetD32, rt_set32) R(cuMemsetD32Async, rt_set32a)
	R(cuMemcpyDtoD, rt_dtod) R(cuMemcpyDtoDAsync, rt_dtoda)
	R(cuMemcpyPeer, rt_peer) R(cuMemcpyPeerAsync, rt_peera)
	R(cuModuleLoadData, rt_module_load) R(cuModuleLoadFatBinary, rt_module_load)
	R(cuModuleUnload, rt_ok) R(cuModuleGetFunction, rt_get_function)
	R(cuModuleGetGlobal, rt_global) R(cuLibraryGetGlobal, rt_global)
	R(cuLibraryLoadData, rt_library_load) R(cuLibraryUnload, rt_ok)
	R(cuLibraryGetKernel, rt_get_function)
	R(cuLibraryGetModule, rt_library_module)
	R(cuKernelGetFunction, rt_kernel_function)
	R(cuFuncGetAttribute, rt_func_attr) R(cuFuncSetAttribute, rt_ok)
	R(cuKernelGetAttribute, rt_kernel_attr) R(cuKernelSetAttribute, rt_ok)
	R(cuOccupancyMaxActiveBlocksPerMultiprocessor, rt_occupancy)
	R(cuGetErrorString, rt_error_string) R(cuGetErrorName, cuGetErrorName)
#undef R
};

static const struct proc *rt_proc(const char *sym)
{
	for (size_t i = 0; i < sizeof(rt_procs) / sizeof(rt_procs[0]); i++)
		if (strcmp(rt_procs[i].name, sym) == 0)
			return &rt_procs[i];
	return NULL;
}
