/* A fake libcuda.so.1 for tests: keeps its own table of host registrations,
 * answers like the driver, records every call with the caller's pid in
 * $FAKE_CUDA_LOG, flags invariant violations, and fails the Nth call of a
 * function on request: FAKE_CUDA_FAIL="fn:N[:code],...".  Devices:
 * FAKE_CUDA_DEVICES (default 2), each with its primary context;
 * FAKE_CUDA_OWN_CTXS=1 lets the program create contexts of its own.  Graph
 * capture (fake_copy.h) follows the driver's modes: while a stream captures
 * in global mode, any thread's registration, unregistration or wait fails
 * (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED), invalidates the capture and is
 * logged as "VIOLATION capture-invalidated-by fn"; in thread-local mode only
 * the capturing thread's; in relaxed mode none; and a thread that set its
 * own interaction mode (cuThreadExchangeStreamCaptureMode) relaxed makes
 * such calls freely, thread-local only its own captures prohibit them
 * (as the driver API documentation describes).  FAKE_CUDA_LATE_DMA=1
 * (fake_late.h): DMA on a worker per stream; FAKE_CUDA_TIMED=1
 * (fake_timed.h, benchmarks only): that, on a modelled link with rates. */
#include <dlfcn.h>
#include <fcntl.h>

typedef int CUresult;
typedef int CUdevice;
struct CUctx_st {
	int dev;
};
typedef struct CUctx_st *CUcontext;

enum {
	OK = 0, NOT_INITIALIZED = 3, INVALID_VALUE = 1, OUT_OF_MEMORY = 2,
	INVALID_DEVICE = 101, INVALID_CONTEXT = 201, ALREADY_REG = 712,
	NOT_REG = 713, CTX_DESTROYED = 709
};

#define FAKE_RESULT CUresult
#define FAKE_UNINIT NOT_INITIALIZED
#define FAKE_DEFAULT_FAIL OUT_OF_MEMORY
#define FAKE_FAIL_ENV "FAKE_CUDA_FAIL"
#define FAKE_HELD "registered"
#include "fake_common.h"

static int inflight(const void *p, size_t n);
static void timed_register(void *p, size_t n);
static int capture_prohibits(const char *fn);

#define MAXDEV 8
static int ndev = 2;
static struct CUctx_st prim[MAXDEV];
static int prim_ref[MAXDEV];
/* A primary context reset, or released to no reference, is destroyed
 * (with every registration made through it) until retained again. */
static int prim_dead[MAXDEV];
static int ctx_dead(CUcontext c)
{
	return c >= prim && c < prim + MAXDEV && prim_dead[c - prim];
}
/* Counts each primary context's ends (what was made in it died then). */
static unsigned ctx_gen[MAXDEV];
/* Registrations die with the context that made them. */
static void drop_owned(CUcontext c)
{
	if (c >= prim && c < prim + MAXDEV)
		ctx_gen[c - prim]++;
	for (int i = 0; i < nheld; i++)
		if (held[i].owner == c) {
			logf_("CTXDROP %p %zu", (void *)held[i].base, held[i].len);
			held[i] = held[--nheld];
			i--;
		}
}
static __thread CUcontext stack[16];
static __thread int depth;

/* A forked child inherits neither registrations nor a usable driver. */
static void fake_child(void)
{
	nheld = 0;
	depth = 0;
	pthread_mutex_init(&mu, NULL);
}

__attribute__((constructor)) static void fake_init(void)
{
	pthread_atfork(NULL, NULL, fake_child);
	const char *p = getenv("FAKE_CUDA_LOG");
	if (p)
		logfd = open(p, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	const char *d = getenv("FAKE_CUDA_DEVICES");
	if (d)
		ndev = atoi(d) > 0 && atoi(d) <= MAXDEV ? atoi(d) : 2;
	for (int i = 0; i < MAXDEV; i++)
		prim[i].dev = i;
}

CUresult cuInit(unsigned flags)
{
	ENTRY("cuInit");
	(void)flags;
	initialized = 1;
	RETURN(OK);
}

/* FAKE_CUDA_VERSION (default 12000): the version the driver reports; the
 * real 13.x runtimes need 13000 or more. */
CUresult cuDriverGetVersion(int *v)
{
	const char *e = getenv("FAKE_CUDA_VERSION");
	*v = e && atoi(e) > 0 ? atoi(e) : 12000;
	return OK;
}

CUresult cuGetErrorName(CUresult e, const char **s)
{
	switch (e) {
	case OK: *s = "CUDA_SUCCESS"; break;
	case NOT_INITIALIZED: *s = "CUDA_ERROR_NOT_INITIALIZED"; break;
	case OUT_OF_MEMORY: *s = "CUDA_ERROR_OUT_OF_MEMORY"; break;
	case INVALID_VALUE: *s = "CUDA_ERROR_INVALID_VALUE"; break;
	case INVALID_CONTEXT: *s = "CUDA_ERROR_INVALID_CONTEXT"; break;
	case ALREADY_REG: *s = "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED"; break;
	case NOT_REG: *s = "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED"; break;
	default: *s = "CUDA_ERROR_UNKNOWN"; return INVALID_VALUE;
	}
	return OK;
}

CUresult cuDeviceGetCount(int *n)
{
	ENTRY("cuDeviceGetCount");
	NEED_INIT;
	*n = ndev;
	RETURN(OK);
}

CUresult cuDeviceGet(CUdevice *d, int ordinal)
{
	ENTRY("cuDeviceGet");
	NEED_INIT;
	if (ordinal < 0 || ordinal >= ndev)
		RETURN(INVALID_DEVICE);
	*d = ordinal;
	RETURN(OK);
}

CUresult cuDevicePrimaryCtxGetState(CUdevice d, unsigned *flags, int *active)
{
	ENTRY("cuDevicePrimaryCtxGetState");
	NEED_INIT;
	if (d < 0 || d >= ndev)
		RETURN(INVALID_DEVICE);
	*flags = 0;
	*active = prim_ref[d] > 0 && !prim_dead[d];
	RETURN(OK);
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d)
{
	ENTRY("cuDevicePrimaryCtxRetain");
	NEED_INIT;
	if (d < 0 || d >= ndev)
		RETURN(INVALID_DEVICE);
	prim_ref[d]++;
	prim_dead[d] = 0;
	logf_("RETAIN %d", d);
	*c = &prim[d];
	RETURN(OK);
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d)
{
	ENTRY("cuDevicePrimaryCtxRelease_v2");
	NEED_INIT;
	if (d < 0 || d >= ndev)
		RETURN(INVALID_DEVICE);
	if (prim_ref[d] > 0 && --prim_ref[d] == 0) {
		logf_("CTXEND %d", d);
		drop_owned(&prim[d]);
		prim_dead[d] = 1;
	}
	RETURN(OK);
}

CUresult cuDevicePrimaryCtxRelease(CUdevice d)
{
	return cuDevicePrimaryCtxRelease_v2(d);
}

/* Destroys the context's state; it stays retained, and is created again
 * when next retained. */
CUresult cuDevicePrimaryCtxReset_v2(CUdevice d)
{
	ENTRY("cuDevicePrimaryCtxReset_v2");
	NEED_INIT;
	if (d < 0 || d >= ndev)
		RETURN(INVALID_DEVICE);
	logf_("CTXEND %d", d);
	drop_owned(&prim[d]);
	prim_dead[d] = 1;
	RETURN(OK);
}

CUresult cuDevicePrimaryCtxReset(CUdevice d)
{
	return cuDevicePrimaryCtxReset_v2(d);
}

CUresult cuCtxDestroy_v2(CUcontext c)
{
	ENTRY("cuCtxDestroy_v2");
	NEED_INIT;
	if (c == NULL)
		RETURN(INVALID_CONTEXT);
	logf_("CTXEND %d", c->dev);
	drop_owned(c);
	if (c >= prim && c < prim + MAXDEV)
		prim_dead[c - prim] = 1;
	RETURN(OK);
}

CUresult cuCtxGetDevice(CUdevice *d)
{
	ENTRY("cuCtxGetDevice");
	NEED_INIT;
	if (!depth)
		RETURN(INVALID_CONTEXT);
	if (ctx_dead(stack[depth - 1]))
		RETURN(CTX_DESTROYED);
	*d = stack[depth - 1]->dev;
	RETURN(OK);
}

CUresult cuCtxCreate_v2(CUcontext *c, unsigned flags, CUdevice d)
{
	ENTRY("cuCtxCreate_v2");
	(void)flags;
	NEED_INIT;
	if (getenv("FAKE_CUDA_OWN_CTXS")) {
		/* a program that makes its own contexts (a test that wants
		 * many): each a new one, logged apart from CTXCREATE, which
		 * flags hostpin creating one */
		*c = calloc(1, sizeof(**c));
		(*c)->dev = d;
		logf_("OWNCTX %d", d);
		RETURN(OK);
	}
	logf_("CTXCREATE %d", d);
	*c = &prim[d];
	RETURN(OK);
}

CUresult cuCtxGetCurrent(CUcontext *c)
{
	ENTRY("cuCtxGetCurrent");
	NEED_INIT;
	*c = depth ? stack[depth - 1] : NULL;
	RETURN(OK);
}

CUresult cuCtxSetCurrent(CUcontext c)
{
	ENTRY("cuCtxSetCurrent");
	NEED_INIT;
	if (c == NULL) {
		if (depth)
			depth--;
		RETURN(OK);
	}
	logf_("CTXCUR %d", c->dev);
	if (depth)
		stack[depth - 1] = c;
	else
		stack[depth++] = c;
	RETURN(OK);
}

CUresult cuCtxPushCurrent_v2(CUcontext c)
{
	ENTRY("cuCtxPushCurrent_v2");
	NEED_INIT;
	if (c == NULL || depth == 16)
		RETURN(INVALID_VALUE);
	if (ctx_dead(c)) {
		logf_("VIOLATION push-destroyed-context %d", c->dev);
		RETURN(CTX_DESTROYED);
	}
	logf_("CTXCUR %d", c->dev);
	stack[depth++] = c;
	RETURN(OK);
}

CUresult cuCtxPopCurrent_v2(CUcontext *c)
{
	ENTRY("cuCtxPopCurrent_v2");
	NEED_INIT;
	if (!depth)
		RETURN(INVALID_CONTEXT);
	*c = stack[--depth];
	RETURN(OK);
}

/* FAKE_CUDA_RESIDENT=1: the driver pins the pages it registers, so they
 * stay resident until unregistered: each is faulted in at registration
 * (an atomic add of 0, which changes no data), and every registration
 * call, unregistration and the exit check that all registered pages are
 * still resident.  A page discarded while registered (MADV_DONTNEED over
 * it) is then flagged, once per registration.  Off by default: a machine
 * that swaps could page out what a test registered. */
static int resident_on = -1;
static int resident_check(void)
{
	if (resident_on < 0) {
		const char *e = getenv("FAKE_CUDA_RESIDENT");
		resident_on = e && *e == '1';
	}
	return resident_on;
}
static void resident_touch(char *p, size_t n)
{
	if (!resident_check())
		return;
	uintptr_t a = (uintptr_t)p & ~(uintptr_t)4095;
	for (; a < (uintptr_t)p + n; a += 4096)
		__atomic_fetch_add((char *)a, 0, __ATOMIC_RELAXED);
}
static void resident_audit(void)
{
	if (!resident_check())
		return;
	unsigned char v[512];
	for (int i = 0; i < nheld; i++) {
		uintptr_t a = (uintptr_t)held[i].base & ~(uintptr_t)4095;
		uintptr_t e = ((uintptr_t)held[i].base + held[i].len + 4095) &
			      ~(uintptr_t)4095;
		for (; a < e; a += sizeof(v) * 4096) {
			size_t k = e - a < sizeof(v) * 4096 ? e - a
							    : sizeof(v) * 4096;
			if (mincore((void *)a, k, v) != 0)
				break;
			size_t j = 0;
			while (j < k / 4096 && (v[j] & 1))
				j++;
			if (j < k / 4096) {
				logf_("VIOLATION registered-pages-discarded %p "
				      "(page %p)", (void *)held[i].base,
				      (void *)(a + j * 4096));
				resident_touch(held[i].base, held[i].len);
				break;
			}
		}
	}
}
/* A sync point a test program chooses: check now (before it reads pages
 * that a discard would have emptied, which faults them in again). */
void fake_cuda_audit(void);
void fake_cuda_audit(void)
{
	pthread_mutex_lock(&mu);
	resident_audit();
	pthread_mutex_unlock(&mu);
}

/* A test program may export fake_cuda_unreg_hook(p): called at the start of
 * every cuMemHostUnregister, outside the fake's lock, so the program can
 * hold the unregistering thread there while other threads run. */
static void unreg_hook(void *p)
{
	static void (*hook)(void *);
	static int looked;
	if (!__atomic_load_n(&looked, __ATOMIC_ACQUIRE)) {
		*(void **)&hook = dlsym(RTLD_DEFAULT, "fake_cuda_unreg_hook");
		__atomic_store_n(&looked, 1, __ATOMIC_RELEASE);
	}
	if (hook)
		hook(p);
}

/* The same for registrations: fake_cuda_reg_hook(p, n), called at the
 * start of every cuMemHostRegister, outside the fake's lock. */
static void reg_hook(void *p, size_t n)
{
	static void (*hook)(void *, size_t);
	static int looked;
	if (!__atomic_load_n(&looked, __ATOMIC_ACQUIRE)) {
		*(void **)&hook = dlsym(RTLD_DEFAULT, "fake_cuda_reg_hook");
		__atomic_store_n(&looked, 1, __ATOMIC_RELEASE);
	}
	if (hook)
		hook(p, n);
}

/* FAKE_CUDA_REGISTER_GATE=BYTES: a registration of BYTES or more waits,
 * outside the fake's lock, until the program opens the gate
 * (fake_cuda_open_gate), as a long registration holds its caller; the
 * program sees how many wait (fake_cuda_gate_waiters).
 * fake_cuda_open_gate_once lets exactly one held (or the next) such
 * registration through, the gate staying closed for the others.
 * FAKE_CUDA_HTOD_GATE=BYTES: an async H2D copy of BYTES or more waits at
 * the same gate (outside the fake's lock), before it is enqueued; an H2A
 * copy too (FAKE_CUDA_DTOH_GATE: a D2H or A2H copy). */
static pthread_mutex_t gate_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cv = PTHREAD_COND_INITIALIZER;
static int gate_open, gate_waiters, gate_tokens;

void fake_cuda_open_gate_once(void)
{
	pthread_mutex_lock(&gate_mu);
	gate_tokens++;
	pthread_cond_broadcast(&gate_cv);
	pthread_mutex_unlock(&gate_mu);
}

void fake_cuda_open_gate(void)
{
	pthread_mutex_lock(&gate_mu);
	gate_open = 1;
	pthread_cond_broadcast(&gate_cv);
	pthread_mutex_unlock(&gate_mu);
}

int fake_cuda_gate_waiters(void)
{
	pthread_mutex_lock(&gate_mu);
	int n = gate_waiters;
	pthread_mutex_unlock(&gate_mu);
	return n;
}

/* The gate, for a call of n bytes where the variable env says BYTES (the
 * same gate: FAKE_CUDA_HTOD_GATE holds async H2D copies, fake_copy.h). */
static void gate_wait(const char *env, size_t n)
{
	const char *e = getenv(env);
	if (!e || !*e || n < (size_t)atoll(e))
		return;
	pthread_mutex_lock(&gate_mu);
	gate_waiters++;
	while (!gate_open && gate_tokens == 0)
		pthread_cond_wait(&gate_cv, &gate_mu);
	if (!gate_open)
		gate_tokens--;
	gate_waiters--;
	pthread_mutex_unlock(&gate_mu);
}

/* tests/fuzz: a failure the program arms (fake_common.h), and threads
 * of its own exempt from it. */
void fake_cuda_fail_arm(const char *fn, int n, int code);
void fake_cuda_fail_arm(const char *fn, int n, int code)
{
	fail_arm(fn, n, code);
}
void fake_cuda_fail_exempt(int on);
void fake_cuda_fail_exempt(int on)
{
	fail_exempt = on;
}

/* FAKE_CUDA_REGISTER_DELAY_US=N: a registration takes N microseconds per
 * MiB (outside the fake's lock), so a background registration is still
 * under way while the program goes on (tests/fuzz). */
static void register_delay(size_t n)
{
	const char *e = getenv("FAKE_CUDA_REGISTER_DELAY_US");
	long us = e ? atol(e) : 0;
	if (us > 0)
		usleep((useconds_t)(us * (long)(n >> 20)));
}


/* FAKE_CUDA_REGISTER_HOLD_AFTER=BYTES: a registration of BYTES or more,
 * once made (the range held), waits before it returns until the program
 * lets it go (fake_cuda_release_registration); the program sees how many
 * wait (fake_cuda_registrations_held).  A gate of its own. */
static pthread_mutex_t hold_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t hold_cv = PTHREAD_COND_INITIALIZER;
static int hold_waiting, hold_open;

int fake_cuda_registrations_held(void)
{
	pthread_mutex_lock(&hold_mu);
	int n = hold_waiting;
	pthread_mutex_unlock(&hold_mu);
	return n;
}

void fake_cuda_release_registration(void)
{
	pthread_mutex_lock(&hold_mu);
	hold_open = 1;
	pthread_cond_broadcast(&hold_cv);
	pthread_mutex_unlock(&hold_mu);
}

static CUresult hold_after(CUresult r, size_t n)
{
	const char *e = getenv("FAKE_CUDA_REGISTER_HOLD_AFTER");
	if (r != OK || !e || !*e || n < (size_t)atoll(e))
		return r;
	pthread_mutex_lock(&hold_mu);
	hold_waiting++;
	while (!hold_open)
		pthread_cond_wait(&hold_cv, &hold_mu);
	hold_waiting--;
	pthread_mutex_unlock(&hold_mu);
	return r;
}

static CUresult register_range(void *p, size_t n, unsigned flags);
CUresult cuMemHostRegister_v2(void *p, size_t n, unsigned flags)
{
	return hold_after(register_range(p, n, flags), n);
}

static CUresult register_range(void *p, size_t n, unsigned flags)
{
	reg_hook(p, n);
	gate_wait("FAKE_CUDA_REGISTER_GATE", n);
	register_delay(n);
	timed_register(p, n); /* FAKE_CUDA_TIMED: seconds per GiB (fake_timed.h) */
	ENTRY("cuMemHostRegister_v2");
	resident_audit();
	if (capture_prohibits("cuMemHostRegister_v2"))
		RETURN(900);
	if (!initialized) {
		logf_("VIOLATION register-before-init %p", p);
		RETURN(NOT_INITIALIZED);
	}
	if (!depth)
		RETURN(INVALID_CONTEXT);
	if (ctx_dead(stack[depth - 1]))
		RETURN(CTX_DESTROYED);
	if (n == 0)
		RETURN(INVALID_VALUE);
	if (!mapped(p, n)) {
		logf_("VIOLATION register-unmapped %p %zu", p, n);
		RETURN(INVALID_VALUE);
	}
	/* The driver pins whole pages: ranges sharing a page overlap. */
	char *pa = (char *)((uintptr_t)p & ~(uintptr_t)4095);
	size_t pn = (((uintptr_t)p + n + 4095) & ~(uintptr_t)4095) - (uintptr_t)pa;
	for (int i = 0; i < nheld; i++) {
		char *ha = (char *)((uintptr_t)held[i].base & ~(uintptr_t)4095);
		char *he = (char *)(((uintptr_t)held[i].base + held[i].len + 4095) &
				    ~(uintptr_t)4095);
		if (pa < he && ha < pa + pn) {
			logf_("OVERLAP %p %zu", p, n);
			RETURN(ALREADY_REG);
		}
	}
	if (nheld == MAXHELD)
		RETURN(OUT_OF_MEMORY);
	held[nheld].base = p, held[nheld].len = n;
	held[nheld].owner = stack[depth - 1];
	held[nheld].flags = flags;
	nheld++;
	resident_touch(p, n);
	logf_("REG %p %zu %u ctxdev=%d", p, n, flags, stack[depth - 1]->dev);
	RETURN(OK);
}

CUresult cuMemHostRegister(void *p, size_t n, unsigned flags)
{
	return cuMemHostRegister_v2(p, n, flags);
}

CUresult cuMemHostUnregister(void *p)
{
	unreg_hook(p);
	ENTRY("cuMemHostUnregister");
	resident_audit();
	NEED_INIT;
	if (capture_prohibits("cuMemHostUnregister"))
		RETURN(900);
	if (!depth)
		RETURN(INVALID_CONTEXT);
	if (ctx_dead(stack[depth - 1]))
		RETURN(CTX_DESTROYED);
	int i = find(p, 1, 1);
	if (i < 0)
		RETURN(NOT_REG);
	if (inflight(p, held[i].len))
		logf_("VIOLATION unregister-with-copy-in-flight %p", p);
	logf_("UNREG %p %zu", p, held[i].len);
	held[i] = held[--nheld];
	RETURN(OK);
}

/* tests/fuzz: how many bytes of [p, p+n) registrations hold. */
size_t fake_cuda_registered_bytes(const void *p, size_t n);
size_t fake_cuda_registered_bytes(const void *p, size_t n)
{
	const char *a = p, *e = a + n;
	size_t in = 0;
	pthread_mutex_lock(&mu);
	for (int i = 0; i < nheld; i++) {
		const char *lo = held[i].base > a ? held[i].base : a;
		const char *hi = held[i].base + held[i].len < e
					 ? held[i].base + held[i].len : e;
		if (lo < hi)
			in += (size_t)(hi - lo);
	}
	pthread_mutex_unlock(&mu);
	return in;
}

/* For the fake runtime: is [p, p+n) inside one registration? */
int fake_cuda_is_registered(const void *p, size_t n)
{
	return held_covers(p, n);
}

__attribute__((destructor)) static void fake_fini(void)
{
	pthread_mutex_lock(&mu);
	audit();
	resident_audit();
	logf_("EXIT live=%d", nheld);
	pthread_mutex_unlock(&mu);
}

/* Streams, events, device memory, copies and cuGetProcAddress. */
#include "fake_copy.h"

/* ---- synchronous copies ----
 * The async form on the legacy (or per-thread) default stream, then a wait
 * for that stream: they return after the copy, registered memory or not. */
#define SYNC_FN(name, params, pt, CALL)                                       \
	CUresult name params                                                  \
	{                                                                     \
		ENTRY(#name);                                                 \
		pthread_mutex_unlock(&mu);                                    \
		stream_t *s_ = (pt) ? (stream_t *)0x2 : NULL;                 \
		CUresult r_ = CALL;                                           \
		if (r_ == OK)                                                 \
			cuStreamSynchronize(s_);                              \
		return r_;                                                    \
	}
#define SYNC_FN2(name, params, CALL)                                          \
	SYNC_FN(name, params, 0, CALL) SYNC_FN(name##_ptds, params, 1, CALL)
SYNC_FN2(cuMemcpyHtoD_v2, (CUdeviceptr d, const void *h, size_t n),
	 cuMemcpyHtoDAsync_v2(d, h, n, s_))
SYNC_FN2(cuMemcpyDtoH_v2, (void *h, CUdeviceptr d, size_t n),
	 cuMemcpyDtoHAsync_v2(h, d, n, s_))
SYNC_FN2(cuMemcpy, (CUdeviceptr d, CUdeviceptr sr, size_t n),
	 cuMemcpyAsync(d, sr, n, s_))
SYNC_FN2(cuMemcpy2D_v2, (const M2D *p), cuMemcpy2DAsync_v2(p, s_))
SYNC_FN2(cuMemcpy2DUnaligned_v2, (const M2D *p), cuMemcpy2DAsync_v2(p, s_))
SYNC_FN2(cuMemcpy3D_v2, (const M3D *p), cuMemcpy3DAsync_v2(p, s_))
SYNC_FN2(cuMemcpy3DPeer, (const M3D *p), cuMemcpy3DPeerAsync(p, s_))
SYNC_FN2(cuMemcpyHtoA_v2, (CUarray a, size_t off, const void *h, size_t n),
	 cuMemcpyHtoAAsync_v2(a, off, h, n, s_))
SYNC_FN2(cuMemcpyAtoH_v2, (void *h, CUarray a, size_t off, size_t n),
	 cuMemcpyAtoHAsync_v2(h, a, off, n, s_))

/* ---- where a device sits: FAKE_CUDA_NUMA_ID (CU_DEVICE_ATTRIBUTE_
 * HOST_NUMA_ID; unset: -1, as without NUMA support) and FAKE_CUDA_BUSID
 * (cuDeviceGetPCIBusId; unset: 0000:3B:00.0) ---- */
static int rt_attr(int attr, int *v);
CUresult cuDeviceGetAttribute(int *v, int attr, CUdevice d)
{
	ENTRY("cuDeviceGetAttribute");
	NEED_INIT;
	if (d < 0 || d >= ndev)
		RETURN(INVALID_DEVICE);
	if (attr != 134 && rt_attr(attr, v)) /* fake_rt.h */
		RETURN(OK);
	if (attr != 134) /* only HOST_NUMA_ID is modelled */
		RETURN(INVALID_VALUE);
	const char *e = getenv("FAKE_CUDA_NUMA_ID");
	*v = e ? atoi(e) : -1;
	RETURN(OK);
}

CUresult cuDeviceGetPCIBusId(char *buf, int len, CUdevice d)
{
	ENTRY("cuDeviceGetPCIBusId");
	NEED_INIT;
	if (d < 0 || d >= ndev || len < 13)
		RETURN(INVALID_VALUE);
	const char *e = getenv("FAKE_CUDA_BUSID");
	snprintf(buf, (size_t)len, "%s", e ? e : "0000:3B:00.0");
	RETURN(OK);
}

/* What a real CUDA 13.x runtime needs of the driver (FAKE_CUDA_VERSION). */
#include "fake_rt.h"
