/* A fake libcuda.so.1 for tests: keeps its own table of host registrations,
 * answers like the driver, records every call with the caller's pid in
 * $FAKE_CUDA_LOG, flags invariant violations, and fails the Nth call of a
 * function on request: FAKE_CUDA_FAIL="fn:N[:code],...". */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <stdint.h>
#include <unistd.h>

typedef int CUresult;
typedef int CUdevice;
struct CUctx_st {
	int dev;
};
typedef struct CUctx_st *CUcontext;

enum {
	OK = 0, NOT_INITIALIZED = 3, INVALID_VALUE = 1, OUT_OF_MEMORY = 2,
	INVALID_DEVICE = 101, INVALID_CONTEXT = 201, ALREADY_REG = 712,
	NOT_REG = 713
};

#define MAXDEV 8
#define MAXREG 4096
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int initialized, ndev = 2;
static struct CUctx_st prim[MAXDEV];
static int prim_ref[MAXDEV];
static struct {
	char *base;
	size_t len;
	int pid;
} reg[MAXREG];
static int nreg;
static __thread CUcontext stack[16];
static __thread int depth;
static int logfd = -1;

static void logf_(const char *fmt, ...)
{
	char buf[512];
	int n = snprintf(buf, sizeof(buf), "%d ", (int)getpid());
	va_list ap;
	va_start(ap, fmt);
	n += vsnprintf(buf + n, sizeof(buf) - (size_t)n, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(buf) - 2)
		n = (int)sizeof(buf) - 2;
	buf[n++] = '\n';
	if (logfd >= 0)
		(void)!write(logfd, buf, (size_t)n);
}

/* A forked child inherits neither registrations nor a usable driver. */
static void fake_child(void)
{
	nreg = 0;
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

/* Is every page of [p, p+n) mapped? */
static int mapped(const void *p, size_t n)
{
	uintptr_t a = (uintptr_t)p & ~(uintptr_t)4095;
	size_t len = ((uintptr_t)p + n - a + 4095) & ~(size_t)4095;
	unsigned char v[1];
	/* mincore fails with ENOMEM on an unmapped page: one page a call */
	for (size_t off = 0; off < len; off += 4096)
		if (mincore((void *)(a + off), 4096, v) != 0 && errno == ENOMEM)
			return 0;
	return 1;
}

/* Every registered range must still be mapped: a range released while
 * registered is what invariant 1 forbids. */
static void audit(void)
{
	for (int i = 0; i < nreg; i++)
		if (!mapped(reg[i].base, reg[i].len)) {
			logf_("VIOLATION registered-range-unmapped %p %zu",
			      (void *)reg[i].base, reg[i].len);
			reg[i] = reg[--nreg];
			i--;
		}
}

static CUresult inject(const char *fn)
{
	static struct {
		char name[64];
		int n, code, seen;
	} rule[16];
	static int nrule = -1;
	if (nrule < 0) {
		nrule = 0;
		const char *s = getenv("FAKE_CUDA_FAIL");
		while (s && *s && nrule < 16) {
			int code = OUT_OF_MEMORY, n = 1, used = 0;
			char name[64];
			if (sscanf(s, "%63[^:]:%d%n", name, &n, &used) < 2)
				break;
			s += used;
			if (*s == ':') {
				int u2 = 0;
				sscanf(s + 1, "%d%n", &code, &u2);
				s += 1 + u2;
			}
			strcpy(rule[nrule].name, name);
			rule[nrule].n = n, rule[nrule].code = code;
			rule[nrule++].seen = 0;
			if (*s == ',')
				s++;
		}
	}
	for (int i = 0; i < nrule; i++)
		if (strcmp(rule[i].name, fn) == 0 && ++rule[i].seen == rule[i].n) {
			logf_("INJECT %s %d", fn, rule[i].code);
			return rule[i].code;
		}
	return OK;
}

#define ENTRY(fn)                                                             \
	pthread_mutex_lock(&mu);                                              \
	logf_("CALL %s", fn);                                                 \
	audit();                                                              \
	CUresult inj_ = inject(fn);                                           \
	if (inj_ != OK) {                                                     \
		pthread_mutex_unlock(&mu);                                    \
		return inj_;                                                  \
	}
#define RETURN(v)                                                             \
	do {                                                                  \
		CUresult r_ = (v);                                            \
		pthread_mutex_unlock(&mu);                                    \
		return r_;                                                    \
	} while (0)
#define NEED_INIT                                                             \
	if (!initialized)                                                     \
	RETURN(NOT_INITIALIZED)

CUresult cuInit(unsigned flags)
{
	ENTRY("cuInit");
	(void)flags;
	initialized = 1;
	RETURN(OK);
}

CUresult cuDriverGetVersion(int *v)
{
	*v = 12000;
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
	*active = prim_ref[d] > 0;
	RETURN(OK);
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d)
{
	ENTRY("cuDevicePrimaryCtxRetain");
	NEED_INIT;
	if (d < 0 || d >= ndev)
		RETURN(INVALID_DEVICE);
	prim_ref[d]++;
	logf_("RETAIN %d", d);
	*c = &prim[d];
	RETURN(OK);
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d)
{
	ENTRY("cuDevicePrimaryCtxRelease_v2");
	NEED_INIT;
	if (prim_ref[d] > 0)
		prim_ref[d]--;
	RETURN(OK);
}

CUresult cuCtxCreate_v2(CUcontext *c, unsigned flags, CUdevice d)
{
	ENTRY("cuCtxCreate_v2");
	(void)flags;
	NEED_INIT;
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

static int find(const char *p, size_t n, int exact)
{
	for (int i = 0; i < nreg; i++) {
		if (exact && reg[i].base == p)
			return i;
		if (!exact && p < reg[i].base + reg[i].len &&
		    reg[i].base < p + n)
			return i;
	}
	return -1;
}

CUresult cuMemHostRegister_v2(void *p, size_t n, unsigned flags)
{
	ENTRY("cuMemHostRegister_v2");
	if (!initialized) {
		logf_("VIOLATION register-before-init %p", p);
		RETURN(NOT_INITIALIZED);
	}
	if (!depth)
		RETURN(INVALID_CONTEXT);
	if (n == 0)
		RETURN(INVALID_VALUE);
	if (!mapped(p, n)) {
		logf_("VIOLATION register-unmapped %p %zu", p, n);
		RETURN(INVALID_VALUE);
	}
	if (find(p, n, 0) >= 0) {
		logf_("OVERLAP %p %zu", p, n);
		RETURN(ALREADY_REG);
	}
	if (nreg == MAXREG)
		RETURN(OUT_OF_MEMORY);
	reg[nreg].base = p, reg[nreg].len = n, reg[nreg].pid = getpid();
	nreg++;
	logf_("REG %p %zu %u ctxdev=%d", p, n, flags, stack[depth - 1]->dev);
	RETURN(OK);
}

CUresult cuMemHostRegister(void *p, size_t n, unsigned flags)
{
	return cuMemHostRegister_v2(p, n, flags);
}

CUresult cuMemHostUnregister(void *p)
{
	ENTRY("cuMemHostUnregister");
	NEED_INIT;
	if (!depth)
		RETURN(INVALID_CONTEXT);
	int i = find(p, 1, 1);
	if (i < 0)
		RETURN(NOT_REG);
	int (*inflight)(const void *, size_t) =
	    (int (*)(const void *, size_t))dlsym(RTLD_DEFAULT,
						 "fake_cudart_inflight");
	if (inflight && inflight(p, reg[i].len))
		logf_("VIOLATION unregister-with-copy-in-flight %p", p);
	logf_("UNREG %p %zu", p, reg[i].len);
	reg[i] = reg[--nreg];
	RETURN(OK);
}

/* For the fake runtime: is [p, p+n) inside one registration? */
int fake_cuda_is_registered(const void *p, size_t n)
{
	pthread_mutex_lock(&mu);
	int yes = 0;
	for (int i = 0; i < nreg; i++)
		if ((const char *)p >= reg[i].base &&
		    (const char *)p + n <= reg[i].base + reg[i].len)
			yes = 1;
	pthread_mutex_unlock(&mu);
	return yes;
}

__attribute__((destructor)) static void fake_fini(void)
{
	pthread_mutex_lock(&mu);
	audit();
	logf_("EXIT live=%d", nreg);
	pthread_mutex_unlock(&mu);
}
