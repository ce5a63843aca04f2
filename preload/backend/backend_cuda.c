/* CUDA backend: registers ranges with the driver (cuMemHostRegister_v2,
 * PORTABLE) through a primary context the program already made active.
 * The driver is never linked and never initialised by hostpin: it is ready
 * once the program has loaded libcuda.so.1, called cuInit, and has an
 * active primary context (invariant 3). */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>

#include "cuda_api.h"
#include "../hostpin.h"
#include "../hp.h"
#include "../record.h"
#include "../base/resolve.h"
#include "../base/symtab.h"

static struct {
#define HP_FN_FIELD(name, R, params) hp_##name##_t name;
	HP_CU_DRIVER_FNS(HP_FN_FIELD, hp_CUresult)
#undef HP_FN_FIELD
} cu;

/* 0: driver not seen loaded yet; 1: entry points resolved; -1: unusable */
static _Atomic int cu_loaded;
static _Atomic int cu_ready; /* sticky once a primary context was active */
static _Atomic int cu_dev; /* the device whose primary context was active */
/* A context some application thread had current: pushed on threads that
 * have none.  Learnt, never created or retained. */
static _Atomic(hp_CUcontext) known_ctx;
static HP_TLS hp_CUcontext entered_ctx; /* what enter_ctx made current */

static const char *lib_name(void)
{
	return hp_optstr[HP_OPT_CUDA_LIB][0] ? hp_optstr[HP_OPT_CUDA_LIB]
					     : "libcuda.so.1";
}

static hp_obj_t cu_obj; /* the loaded driver */
/* The copy fences' entry points (hp_cuda_copy_fns); pf_state 0: not
 * resolved from the driver loaded now. */
static struct {
#define HP_FN_FIELD(name, R, params) hp_##name##_t name;
	HP_CU_POLICY_FNS(HP_FN_FIELD, hp_CUresult)
	HP_CU_POLICY_OPT_FNS(HP_FN_FIELD, hp_CUresult, int)
#undef HP_FN_FIELD
} pf;
static _Atomic int pf_state;
/* the staged copies' entry points: 0 not resolved; 1 usable; -1 not */
static _Atomic int sf_state;
/* Counts the contexts that ended and the drivers forgotten: the staging
 * ring (hp_cuda_ctx_epoch) is made again after either. */
static _Atomic unsigned ctx_epoch;
static _Atomic unsigned drv_gen; /* drivers forgotten (unloaded) */
/* The loader's generation at the last miss: until objects are loaded or
 * unloaded, the driver cannot have appeared, and glibc's library search
 * (tens of microseconds) is not repeated for every
 * large allocation. */
static _Atomic unsigned long long miss_gen = ~0ull;

static int find_driver(hp_obj_t *o)
{
	/* by default any libcuda.so*, as the loader's soname match would */
	return hp_obj_find(lib_name(),
			   hp_optstr[HP_OPT_CUDA_LIB][0] ? NULL : "libcuda.so", o);
}

/* The driver hostpin resolved was unloaded (a plug-in that brought it was
 * closed): never call it again.  Its registrations died with it; the blocks
 * go back to pending, and are registered again once a driver is loaded and
 * ready again.  Under no lock: racing threads forget the same. */
static void forget_driver(void)
{
	hp_log(HP_LOG_INFO, "the CUDA driver was unloaded: its registrations "
	       "are forgotten, blocks pending again");
	/* release: pairs with the acquires in load and cuda_ready */
	atomic_store_explicit(&cu_ready, 0, memory_order_release);
	atomic_store_explicit(&known_ctx, NULL, memory_order_relaxed);
	atomic_store_explicit(&miss_gen, ~0ull, memory_order_relaxed);
	atomic_store_explicit(&cu_loaded, 0, memory_order_release);
	/* release: pairs with the acquire in hp_cuda_copy_fns, which
	 * resolves the loaded driver's again */
	atomic_store_explicit(&pf_state, 0, memory_order_release);
	atomic_store_explicit(&sf_state, 0, memory_order_release);
	atomic_fetch_add_explicit(&ctx_epoch, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&drv_gen, 1, memory_order_relaxed);
	/* the policy sends the blocks back to pending */
	hp_backend_report(HP_EV_DEVICE_LOST);
}

/* 1 if the driver resolved earlier is gone (then forgotten). */
static int driver_gone(void)
{
	/* acquire: pairs with the release in load */
	if (atomic_load_explicit(&cu_loaded, memory_order_acquire) <= 0 ||
	    hp_obj_alive(&cu_obj))
		return 0;
	forget_driver();
	return 1;
}

/* Resolve the entry points if the program has loaded the driver. */
static int load(void)
{
	int st = atomic_load_explicit(&cu_loaded, memory_order_acquire);
	if (st > 0 && driver_gone())
		st = 0;
	if (st)
		return st > 0;
	unsigned long long gen = hp_dl_generation();
	if (atomic_load_explicit(&miss_gen, memory_order_relaxed) == gen)
		return 0;
	/* Only a driver the program loaded itself, found without the
	 * loader's lock (dlopen would wait for a thread running constructors
	 * in dlopen, which may be waiting for us). */
	hp_obj_t o;
	if (!find_driver(&o)) {
		atomic_store_explicit(&miss_gen, gen, memory_order_relaxed);
		return 0;
	}
	cu_obj = o;
	int ok = 1;
#define HP_FN_SYM(name, R, params)                                            \
	*(void **)&cu.name = hp_obj_sym(&o, #name);                              \
	ok &= cu.name != NULL;
	HP_CU_DRIVER_FNS(HP_FN_SYM, hp_CUresult)
#undef HP_FN_SYM
	if (!ok)
		hp_log(HP_LOG_WARN, "%s lacks an entry point hostpin needs; "
		       "CUDA registration off", lib_name());
	/* release: pairs with the acquire above; the table is complete. */
	atomic_store_explicit(&cu_loaded, ok ? 1 : -1, memory_order_release);
	hp_backend_note(NULL, HP_BK_DRIVER);
	return ok;
}

void *hp_cuda_sym(const char *name)
{
	if (!load()) {
		/* a driver loaded since, or one found through a copy */
		hp_obj_t o;
		return find_driver(&o) ? hp_obj_sym(&o, name) : NULL;
	}
	return hp_obj_sym(&cu_obj, name);
}

int hp_cuda_in_driver(const void *fn)
{
	/* the driver is what defines cuGetProcAddress (no dladdr: its loader
	 * lock) */
	hp_obj_t o;
	return hp_obj_of(fn, &o) && !hp_is_self(fn) &&
	       hp_obj_sym(&o, "cuGetProcAddress") != NULL;
}

static const char *err_name(hp_CUresult r)
{
	const char *s = NULL;
	if (cu.cuGetErrorName(r, &s) != HP_CUDA_SUCCESS || s == NULL)
		return "CUDA_ERROR_UNKNOWN";
	return s; /* the driver's static string */
}

static int cuda_probe(void) { return 1; }

int hp_cuda_loaded(void)
{
	hp_obj_t o;
	return find_driver(&o);
}

static int cuda_ready(void)
{
	if (atomic_load_explicit(&cu_ready, memory_order_acquire) &&
	    !driver_gone())
		return 1;
	if (!load())
		return 0;
	int n = 0;
	/* NOT_INITIALIZED until the program's own cuInit. */
	if (cu.cuDeviceGetCount(&n) != HP_CUDA_SUCCESS)
		return 0;
	for (int i = 0; i < n; i++) {
		hp_CUdevice d;
		unsigned flags;
		int active = 0;
		if (cu.cuDeviceGet(&d, i) == HP_CUDA_SUCCESS &&
		    cu.cuDevicePrimaryCtxGetState(d, &flags, &active) ==
			HP_CUDA_SUCCESS &&
		    active) {
			atomic_store_explicit(&cu_dev, d,
					      memory_order_relaxed);
			atomic_store_explicit(&cu_ready, 1,
					      memory_order_release);
			hp_log(HP_LOG_INFO, "CUDA ready (device %d active)", i);
			hp_backend_note(NULL, HP_BK_DRIVER | HP_BK_READY);
			return 1;
		}
	}
	return 0;
}

/* ---- contexts ----
 * A registration belongs to the context current when it was made and dies
 * with it.  Each block remembers that context (backend->owner).  Every
 * context seen current on a program thread is kept here with its device
 * (learnt while it is current), so that a primary context reset or release
 * (which names a device) finds its blocks, and so that a thread with no
 * context (the cache's decay thread, a worker freeing a block) can push one
 * that still lives.  A context that ended is marked so and never pushed
 * again; its slot is reused.  Learnt, never created or retained. */
#define MAX_CTXS HP_CUDA_MAX_CTXS
static struct {
	hp_CUcontext ctx;
	int dev;
	int alive;
	unsigned gen; /* its ends (a primary context comes back the same) */
} ctxs[MAX_CTXS];
static int nctxs;
static pthread_mutex_t own_mu = PTHREAD_MUTEX_INITIALIZER;
static HP_TLS hp_CUcontext pin_ctx; /* this thread's last pin's context */

/* 1 if the table holds ctx alive; -1 if it holds it ended; 0 if not. */
static int ctx_state(hp_CUcontext ctx)
{
	pthread_mutex_lock(&own_mu);
	int st = 0;
	for (int i = 0; i < nctxs && st <= 0; i++)
		if (ctxs[i].ctx == ctx)
			st = ctxs[i].alive ? 1 : -1;
	pthread_mutex_unlock(&own_mu);
	return st;
}

/* Called with ctx current on this thread; no lock across the driver call.
 * 1 if ctx lives (and is in the table, unless it is full). */
static int learn_ctx(hp_CUcontext ctx)
{
	if (ctx == NULL)
		return 0;
	if (ctx_state(ctx) > 0)
		return 1;
	hp_CUdevice d = -1;
	hp_CUresult r = cu.cuCtxGetDevice(&d);
	if (r == HP_CUDA_ERROR_CONTEXT_IS_DESTROYED)
		return 0; /* current here, but ended: never pushed */
	if (r != HP_CUDA_SUCCESS)
		d = -1;
	pthread_mutex_lock(&own_mu);
	int i = 0, free_slot = -1;
	for (; i < nctxs && ctxs[i].ctx != ctx; i++)
		if (!ctxs[i].alive && free_slot < 0)
			free_slot = i;
	if (i == nctxs) {
		if (free_slot >= 0)
			i = free_slot;
		else if (nctxs < MAX_CTXS)
			nctxs++;
	}
	int full = i == MAX_CTXS;
	if (!full)
		ctxs[i].ctx = ctx, ctxs[i].dev = d, ctxs[i].alive = 1;
	pthread_mutex_unlock(&own_mu);
	if (full)
		HP_LOG_ONCE(HP_LOG_WARN, "more than %d live CUDA contexts: "
			    "hostpin does not follow the ones beyond (a "
			    "block registered through one of them is not "
			    "sent back to pending when its device is reset)",
			    MAX_CTXS);
	return 1;
}

static void mark_ended(hp_CUcontext ctx)
{
	pthread_mutex_lock(&own_mu);
	for (int i = 0; i < nctxs; i++)
		if (ctxs[i].ctx == ctx && ctxs[i].alive)
			ctxs[i].alive = 0, ctxs[i].gen++;
	pthread_mutex_unlock(&own_mu);
	/* relaxed: a stale known_ctx is only a context to push, which the
	 * table then refuses */
	hp_CUcontext k = ctx;
	atomic_compare_exchange_strong_explicit(&known_ctx, &k, NULL,
						memory_order_relaxed,
						memory_order_relaxed);
}

/* Push a context that still lives: the one last known, else any other in
 * the table whose device's primary context is active.  1 if pushed. */
static int push_living(void)
{
	hp_CUcontext k = atomic_load_explicit(&known_ctx, memory_order_relaxed);
	if (k != NULL && ctx_state(k) >= 0 &&
	    cu.cuCtxPushCurrent_v2(k) == HP_CUDA_SUCCESS) {
		entered_ctx = k;
		return 1;
	}
	for (int i = 0; i < MAX_CTXS; i++) {
		pthread_mutex_lock(&own_mu);
		hp_CUcontext c = i < nctxs && ctxs[i].alive ? ctxs[i].ctx : NULL;
		int dev = i < nctxs ? ctxs[i].dev : -1;
		pthread_mutex_unlock(&own_mu);
		if (i >= nctxs)
			break;
		unsigned flags = 0;
		int active = 0;
		if (c == NULL || c == k || dev < 0 ||
		    cu.cuDevicePrimaryCtxGetState(dev, &flags, &active) !=
			HP_CUDA_SUCCESS ||
		    !active)
			continue;
		hp_CUresult r = cu.cuCtxPushCurrent_v2(c);
		if (r == HP_CUDA_SUCCESS) {
			atomic_store_explicit(&known_ctx, c,
					      memory_order_relaxed);
			entered_ctx = c;
			return 1;
		}
		if (r == HP_CUDA_ERROR_CONTEXT_IS_DESTROYED ||
		    r == HP_CUDA_ERROR_INVALID_CONTEXT)
			mark_ended(c);
	}
	return 0;
}

/* Make a context current for a driver call; returns 1 if one was pushed
 * (pop it afterwards), 0 if the thread had one, -1 if none lives that
 * hostpin knows. */
static int enter_ctx(void)
{
	hp_CUcontext cur = NULL;
	if (cu.cuCtxGetCurrent(&cur) == HP_CUDA_SUCCESS && cur != NULL) {
		if (learn_ctx(cur))
			atomic_store_explicit(&known_ctx, cur,
					      memory_order_relaxed);
		entered_ctx = cur;
		return 0;
	}
	return push_living() ? 1 : -1;
}

static void leave_ctx(int pushed)
{
	hp_CUcontext c;
	if (pushed == 1)
		cu.cuCtxPopCurrent_v2(&c);
}

static uintptr_t cuda_owner(void) { return (uintptr_t)pin_ctx; }

/* A context ended: never push it again; readiness is asked again (a
 * primary context must be active); its blocks go back to pending (the
 * caller's policy, told through ended[]). */
static int ctx_ended(hp_CUcontext ctx, uintptr_t *ended, int n)
{
	atomic_fetch_add_explicit(&ctx_epoch, 1, memory_order_relaxed);
	mark_ended(ctx);
	atomic_store_explicit(&cu_ready, 0, memory_order_release);
	ended[n] = (uintptr_t)ctx;
	return n + 1;
}

int hp_cuda_ctxs_reset(int dev, uintptr_t *ended)
{
	hp_CUcontext lost[MAX_CTXS];
	int n = 0, k = 0;
	pthread_mutex_lock(&own_mu);
	for (int i = 0; i < nctxs; i++)
		if (ctxs[i].dev == dev && ctxs[i].alive)
			lost[n++] = ctxs[i].ctx;
	pthread_mutex_unlock(&own_mu);
	/* the staging ring is made again (its context may not be in the
	 * table: learnt only when a block was registered) */
	atomic_fetch_add_explicit(&ctx_epoch, 1, memory_order_relaxed);
	/* readiness is asked again all the same; the contexts of other
	 * devices, and the one last known among them, stay */
	atomic_store_explicit(&cu_ready, 0, memory_order_release);
	for (int i = 0; i < n; i++)
		k = ctx_ended(lost[i], ended, k);
	return k;
}

int hp_cuda_ctxs_released(int dev, uintptr_t *ended)
{
	unsigned flags = 0;
	int active = 1;
	if (atomic_load_explicit(&cu_loaded, memory_order_acquire) > 0 &&
	    cu.cuDevicePrimaryCtxGetState(dev, &flags, &active) ==
		HP_CUDA_SUCCESS &&
	    !active)
		return hp_cuda_ctxs_reset(dev, ended); /* the last reference */
	return 0;
}

int hp_cuda_ctx_end(hp_CUcontext ctx, uintptr_t *ended)
{
	atomic_fetch_add_explicit(&ctx_epoch, 1, memory_order_relaxed);
	return ctx != NULL ? ctx_ended(ctx, ended, 0) : 0;
}

void hp_cuda_learn_ctx(void)
{
	hp_CUcontext cur = NULL;
	if (atomic_load_explicit(&cu_loaded, memory_order_acquire) > 0 &&
	    !driver_gone() &&
	    cu.cuCtxGetCurrent(&cur) == HP_CUDA_SUCCESS && learn_ctx(cur))
		atomic_store_explicit(&known_ctx, cur, memory_order_relaxed);
}

/* Registrations of at most HP_REG_PIECE_MAX (hp.h), unregistered by the
 * same bases. */
static size_t chunk(void)
{
	/* whole pages: two registrations must never share a page */
	uint64_t c = hp_opt[HP_OPT_REGISTER_CHUNK] & ~(uint64_t)(HP_PAGE_SIZE - 1);
	return c && c < HP_REG_PIECE_MAX ? (size_t)c : HP_REG_PIECE_MAX;
}

/* 0, EAGAIN (the context ended under us: another may do it later), or
 * EIO with *why set. */
static int cuda_unpin_n(char *b, size_t len, const char **why)
{
	int e = 0;
	for (size_t off = 0; off < len; off += chunk()) {
		hp_CUresult r = cu.cuMemHostUnregister(b + off);
		if (r == HP_CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED) {
			/* The program unregistered it behind our back:
			 * nothing of ours is left to release. */
			HP_CTR_ADD(imports_dropped, 1);
		} else if ((r == HP_CUDA_ERROR_CONTEXT_IS_DESTROYED ||
			    r == HP_CUDA_ERROR_INVALID_CONTEXT) &&
			   !e) {
			*why = "the CUDA context ended during unregistration";
			e = EAGAIN;
		} else if (r != HP_CUDA_SUCCESS && (!e || e == EAGAIN)) {
			*why = err_name(r);
			e = EIO;
		}
		if (len - off <= chunk())
			break;
	}
	return e;
}

static int cuda_pin(void *base, size_t len, const char **why)
{
	if (driver_gone())
		return EAGAIN; /* pending until a driver is ready again */
	/* a graph capture in progress: pending until it ends */
	if (!hp_capture_enter())
		return EAGAIN;
	int pushed = enter_ctx();
	if (pushed < 0) {
		hp_capture_leave();
		return EAGAIN; /* no context on this thread yet: pending */
	}
	char *b = base;
	size_t done = 0;
	int e = 0;
	while (done < len) {
		size_t n = len - done < chunk() ? len - done : chunk();
		hp_CUresult r = cu.cuMemHostRegister_v2(
		    b + done, n, HP_CU_MEMHOSTREGISTER_PORTABLE);
		if (r == HP_CUDA_ERROR_CONTEXT_IS_DESTROYED ||
		    r == HP_CUDA_ERROR_INVALID_CONTEXT) {
			/* a context that ended under us: not now (pending),
			 * and never pushed again */
			mark_ended(entered_ctx);
			e = EAGAIN;
			break;
		}
		if (r != HP_CUDA_SUCCESS) {
			*why = err_name(r);
			e = EIO;
			break;
		}
		done += n;
	}
	if (e && done) {
		const char *w2;
		cuda_unpin_n(b, done, &w2); /* undo the chunks that worked */
	}
	if (!e)
		pin_ctx = entered_ctx;
	leave_ctx(pushed);
	hp_capture_leave();
	return e;
}

/* EAGAIN: not now, the block stays registered (a graph capture is in
 * progress, or no context that hostpin knows lives on this thread or can
 * be pushed); the caller keeps it for a later try (pin.c). */
static int cuda_unpin(void *base, size_t len, const char **why)
{
	if (atomic_load_explicit(&cu_loaded, memory_order_acquire) <= 0 ||
	    driver_gone())
		return 0; /* the registration died with its driver */
	if (!hp_capture_enter()) {
		*why = "a CUDA graph capture is in progress";
		return EAGAIN;
	}
	int pushed = enter_ctx();
	int e;
	if (pushed < 0) {
		*why = "no CUDA context to unregister through";
		e = EAGAIN;
	} else {
		e = cuda_unpin_n(base, len, why);
		leave_ctx(pushed);
	}
	hp_capture_leave();
	return e;
}

/* The host NUMA node nearest the process's device: the driver's
 * CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID (CUDA 12.2), else the numa_node of the
 * device's PCI function in sysfs; -1 if unknown.  Read once: neither
 * changes while the process runs.  Neither entry point needs a context. */
typedef hp_CUresult (*attr_fn)(int *, int, hp_CUdevice);
typedef hp_CUresult (*busid_fn)(char *, int, hp_CUdevice);
#define HP_CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID 134
static int cuda_device_node(void)
{
	static _Atomic int node = -2; /* -2: not known yet */
	if (hp_in_child)
		return -1;
	int n = atomic_load_explicit(&node, memory_order_relaxed);
	if (n != -2 || !cuda_ready())
		return n < 0 ? -1 : n;
	hp_CUdevice d = atomic_load_explicit(&cu_dev, memory_order_relaxed);
	attr_fn attr = (attr_fn)hp_obj_sym(&cu_obj, "cuDeviceGetAttribute");
	busid_fn busid = (busid_fn)hp_obj_sym(&cu_obj, "cuDeviceGetPCIBusId");
	int v = -1;
	const char *how = "unknown";
	if (attr && attr(&v, HP_CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID, d) ==
		HP_CUDA_SUCCESS && v >= 0) {
		how = "CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID";
	} else {
		char id[32];
		v = -1;
		if (busid && busid(id, (int)sizeof(id), d) == HP_CUDA_SUCCESS) {
			id[sizeof(id) - 1] = '\0';
			if ((v = hp_pci_numa_node(id)) >= 0)
				how = "PCI numa_node";
		}
	}
	hp_log(HP_LOG_INFO, "CUDA device %d: host NUMA node %d (%s)", (int)d, v,
	       how);
	atomic_store_explicit(&node, v, memory_order_relaxed);
	return v;
}

/* ---- the capture gate (invariant 13; capture.c counts the captures) ----
 * While a stream captures a CUDA graph, the driver fails some "unsafe"
 * calls (registering and unregistering host memory, waiting on a stream or
 * an event), and the failure invalidates the capture: in global mode any
 * thread's, in thread-local mode only the capturing thread's, in relaxed
 * mode none (cudaStreamCaptureMode).  Such a call runs between
 * hp_capture_enter and hp_capture_leave.  A global capture's begin counts
 * itself first, then waits for the calls already inside the driver to
 * return (a Dekker pair on two sequentially consistent counters), so that
 * none reaches the driver once the capture began.  A thread-local capture
 * is counted in its own thread only (tl_caps: a thread's own calls are not
 * in flight while it begins one); other threads (the decay thread, other
 * copies) go on.  A thread's own interaction mode
 * (cudaThreadExchangeStreamCaptureMode) can only allow more than global
 * mode does: hostpin assumes the default, the strictest. */
static _Atomic int captures; /* in progress, in global mode */
static _Atomic int in_flight; /* unsafe driver calls in progress */
static HP_TLS int tl_caps; /* this thread's thread-local captures */

int hp_capture_busy(void)
{
	return tl_caps > 0 || atomic_load(&captures) > 0;
}

/* This thread holds the gate across several calls (hp_capture_hold): its
 * calls inside need no new look, a capture's begin waits for the hold. */
static HP_TLS int gate_held;

int hp_capture_enter(void)
{
	if (gate_held) {
		atomic_fetch_add(&in_flight, 1);
		return 1;
	}
	if (tl_caps > 0 || atomic_load(&captures) > 0)
		return 0;
	/* seq_cst both: pairs with hp_cuda_gate_close's count-then-wait */
	atomic_fetch_add(&in_flight, 1);
	if (atomic_load(&captures) > 0) {
		atomic_fetch_sub(&in_flight, 1);
		return 0;
	}
	return 1;
}

/* A global capture's begin sleeps on gate_cv until the calls in flight
 * returned; the last to leave wakes it (gate_mu is taken only while a
 * capture is counted). */
static pthread_mutex_t gate_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cv = PTHREAD_COND_INITIALIZER;

void hp_capture_leave(void)
{
	/* seq_cst both: pairs with hp_cuda_gate_close's count-then-wait */
	if (atomic_fetch_sub(&in_flight, 1) == 1 &&
	    atomic_load(&captures) > 0) {
		pthread_mutex_lock(&gate_mu);
		pthread_cond_broadcast(&gate_cv);
		pthread_mutex_unlock(&gate_mu);
	}
}

int hp_capture_hold(void)
{
	if (gate_held || !hp_capture_enter())
		return 0;
	gate_held = 1;
	return 1;
}

void hp_capture_unhold(void)
{
	gate_held = 0;
	hp_capture_leave();
}

void hp_cuda_gate_local(int d)
{
	tl_caps += d;
}

void hp_cuda_gate_close(void)
{
	atomic_fetch_add(&captures, 1);
}

void hp_cuda_gate_wait(void)
{
	/* A registration that started before the capture ends before it
	 * begins: one call (at most HP_REG_PIECE_MAX), or one piece of a
	 * background registration (hp_cells_pin_each).  Asleep, not
	 * spinning: the last call to leave wakes it. */
	pthread_mutex_lock(&gate_mu);
	while (atomic_load(&in_flight) > 0)
		pthread_cond_wait(&gate_cv, &gate_mu);
	pthread_mutex_unlock(&gate_mu);
}

void hp_cuda_gate_open(void)
{
	atomic_fetch_sub(&captures, 1);
}

/* ---- copy fences (the copy policy, copy.c, decides when) ----
 * After an async copy through a registered block, either the stream is
 * waited for, or an event recorded on it becomes the block's last copy,
 * which any release or reuse of the block waits for (quiesce).  Waits go
 * through the driver, whose streams and events the runtime's are. */

int hp_cuda_copy_fns(void)
{
	int st = atomic_load_explicit(&pf_state, memory_order_acquire);
	if (st)
		return st;
#define HP_FN_SYM(name, R, params) *(void **)&pf.name = hp_cuda_sym(#name);
	HP_CU_POLICY_FNS(HP_FN_SYM, )
	HP_CU_POLICY_OPT_FNS(HP_FN_SYM, , )
#undef HP_FN_SYM
	if (!pf.cuStreamSynchronize) {
		st = -1;
		hp_log(HP_LOG_WARN, "the CUDA driver lacks cuStreamSynchronize: "
		       "async copies through registered blocks cannot be made "
		       "host-synchronous");
	} else if (!pf.cuEventCreate || !pf.cuEventRecord ||
		   !pf.cuEventSynchronize || !pf.cuEventDestroy_v2) {
		st = 2;
		hp_log(HP_LOG_WARN, "the CUDA driver lacks event entry points: "
		       "HOSTPIN_COPY=async waits on the stream instead");
	} else {
		st = 1;
	}
	/* release: pairs with the acquire above; pf is complete. */
	atomic_store_explicit(&pf_state, st, memory_order_release);
	return st;
}

/* The (stream, event) pair of a block's last async copy changes under one
 * of these, so that a copy and a release racing on a block never see half
 * of a pair.  Held for a few loads and stores, never across a call. */
static atomic_flag pair_lock[64];

static atomic_flag *lock_of(hp_rec_t *r)
{
	atomic_flag *l = &pair_lock[((uintptr_t)r / sizeof(*r)) % 64];
	/* acquire: pairs with the release in unlock; the pair is ours */
	while (atomic_flag_test_and_set_explicit(l, memory_order_acquire))
		;
	return l;
}

static void unlock(atomic_flag *l)
{
	atomic_flag_clear_explicit(l, memory_order_release);
}

int hp_cuda_capturing(hp_cudaStream_t s)
{
	int st = HP_CU_STREAM_CAPTURE_STATUS_NONE;
	return pf.cuStreamIsCapturing && pf.cuStreamIsCapturing(s, &st) == 0 &&
	       st != HP_CU_STREAM_CAPTURE_STATUS_NONE;
}

void hp_cuda_wait_stream(hp_cudaStream_t s)
{
	pf.cuStreamSynchronize(s);
	HP_CTR_ADD(copy_waits, 1);
}

/* HOSTPIN_COPY=async: the block's last copy is now this one. */
int hp_cuda_track_event(hp_rec_t *r, hp_cudaStream_t s)
{
	hp_cudaEvent_t ev = NULL;
	if (pf.cuEventCreate(&ev, HP_CU_EVENT_DISABLE_TIMING) != 0)
		return -1;
	if (pf.cuEventRecord(ev, s) != 0) {
		pf.cuEventDestroy_v2(ev);
		return -1;
	}
	atomic_flag *l = lock_of(r);
	hp_cudaEvent_t old = (hp_cudaEvent_t)atomic_load_explicit(
	    &r->user[HP_U_EVENT], memory_order_relaxed);
	uintptr_t os = atomic_load_explicit(&r->user[HP_U_STREAM],
					    memory_order_relaxed);
	atomic_store_explicit(&r->user[HP_U_EVENT], (uintptr_t)ev,
			      memory_order_relaxed);
	atomic_store_explicit(&r->user[HP_U_STREAM], (uintptr_t)s,
			      memory_order_relaxed);
	unlock(l);
	if (old != NULL) {
		/* Same stream: the new event covers the old copy.  Another
		 * stream: wait for it before forgetting it. */
		if (os != (uintptr_t)s)
			pf.cuEventSynchronize(old);
		pf.cuEventDestroy_v2(old);
	}
	return 0;
}

void hp_cuda_quiesce(hp_rec_t *r)
{
	if (hp_in_child) {
		/* The parent's events are not the child's: nothing to wait
		 * for, and no pair lock to take (hp_cuda_fence_fork_child). */
		hp_cuda_forget(r);
		return;
	}
	atomic_flag *l = lock_of(r);
	hp_cudaEvent_t ev = (hp_cudaEvent_t)atomic_load_explicit(
	    &r->user[HP_U_EVENT], memory_order_relaxed);
	atomic_store_explicit(&r->user[HP_U_EVENT], 0, memory_order_relaxed);
	atomic_store_explicit(&r->user[HP_U_STREAM], 0, memory_order_relaxed);
	unlock(l);
	/* the driver that made ev unloaded: ev died with it (no call into
	 * an unloaded driver) */
	if (ev == NULL || !load() || hp_cuda_copy_fns() != 1)
		return;
	/* A block is neither unregistered nor released while a copy that
	 * used it may still run. */
	pf.cuEventSynchronize(ev);
	pf.cuEventDestroy_v2(ev);
	HP_CTR_ADD(copy_waits, 1);
}

void hp_cuda_forget(hp_rec_t *r)
{
	atomic_flag *l = lock_of(r);
	atomic_store_explicit(&r->user[HP_U_EVENT], 0, memory_order_relaxed);
	atomic_store_explicit(&r->user[HP_U_STREAM], 0, memory_order_relaxed);
	unlock(l);
}

/* ---- staged copies (stage.c decides; these make the driver calls) ----
 * The driver's own definitions (never hostpin's hooks), resolved once per
 * loaded driver; cuPointerGetAttribute is optional (without it, only
 * hostpin's registry says what is registered). */
typedef hp_CUresult (*htod_fn)(hp_CUdeviceptr, const void *, size_t,
			       hp_cudaStream_t);
typedef hp_CUresult (*dtoh_fn)(void *, hp_CUdeviceptr, size_t,
			       hp_cudaStream_t);
typedef hp_CUresult (*ptrattr_fn)(void *, int, hp_CUdeviceptr);
typedef hp_CUresult (*m2d_fn)(const hp_CUDA_MEMCPY2D *, hp_cudaStream_t);
static struct {
	htod_fn htod;
	dtoh_fn dtoh;
	ptrattr_fn attr;
	m2d_fn m2d; /* optional: without it 2D copies are not staged */
	hp_CUresult (*query)(hp_cudaEvent_t); /* optional: slots reused by
					       * their own stream only */
	hp_CUresult (*sctx)(hp_cudaStream_t, hp_CUcontext *); /* optional */
} sf;

int hp_cuda_stage_fns(void)
{
	if (hp_in_child || !load() || hp_cuda_copy_fns() != 1)
		return 0;
	int st = atomic_load_explicit(&sf_state, memory_order_acquire);
	if (st)
		return st > 0;
	*(void **)&sf.htod = hp_cuda_sym("cuMemcpyHtoDAsync_v2");
	*(void **)&sf.dtoh = hp_cuda_sym("cuMemcpyDtoHAsync_v2");
	*(void **)&sf.attr = hp_cuda_sym("cuPointerGetAttribute");
	*(void **)&sf.m2d = hp_cuda_sym("cuMemcpy2DAsync_v2");
	*(void **)&sf.query = hp_cuda_sym("cuEventQuery");
	*(void **)&sf.sctx = hp_cuda_sym("cuStreamGetCtx");
	/* without cuStreamIsCapturing a capturing stream cannot be told
	 * apart: nothing is staged */
	st = sf.htod && sf.dtoh && pf.cuStreamIsCapturing ? 1 : -1;
	/* release: pairs with the acquire above; sf is complete */
	atomic_store_explicit(&sf_state, st, memory_order_release);
	return st > 0;
}

uintptr_t hp_cuda_ctx_current(void)
{
	hp_CUcontext cur = NULL;
	if (cu.cuCtxGetCurrent(&cur) != HP_CUDA_SUCCESS)
		return 0;
	return (uintptr_t)cur;
}

unsigned hp_cuda_ctx_epoch(void)
{
	return atomic_load_explicit(&ctx_epoch, memory_order_relaxed);
}

uintptr_t hp_cuda_stream_ctx(hp_cudaStream_t s, uintptr_t cur)
{
	hp_CUcontext c = NULL;
	/* the legacy and per-thread default streams: the current context's */
	if (s == NULL || s == (hp_cudaStream_t)(uintptr_t)1 ||
	    s == HP_CU_STREAM_PER_THREAD || !sf.sctx ||
	    sf.sctx(s, &c) != HP_CUDA_SUCCESS || c == NULL)
		return cur;
	return (uintptr_t)c;
}

uint64_t hp_cuda_ctx_gen(uintptr_t ctx, int current)
{
	if (!load())
		return 0; /* no driver: nothing made through any context lives */
	if (current)
		learn_ctx((hp_CUcontext)ctx);
	uint64_t g = 0;
	pthread_mutex_lock(&own_mu);
	for (int i = 0; i < nctxs && !g; i++)
		if (ctxs[i].ctx == (hp_CUcontext)ctx && ctxs[i].alive)
			g = ((uint64_t)ctxs[i].gen << 1 | 1) << 31;
	pthread_mutex_unlock(&own_mu);
	return g ? g | atomic_load_explicit(&drv_gen, memory_order_relaxed)
		 : 0;
}

#define HP_CU_POINTER_ATTRIBUTE_MEMORY_TYPE 2
int hp_cuda_wait_context(void)
{
	/* resolved once per loaded driver with the copy fences */
	if (hp_in_child || !load() || hp_cuda_copy_fns() < 0 ||
	    pf.cuCtxSynchronize == NULL || !hp_capture_enter())
		return -1;
	hp_CUresult r = pf.cuCtxSynchronize();
	hp_capture_leave();
	return r == HP_CUDA_SUCCESS ? 0 : -1;
}

unsigned hp_cuda_mem_type(const void *p)
{
	unsigned type = 0;
	if (!sf.attr || sf.attr(&type, HP_CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
				(hp_CUdeviceptr)(uintptr_t)p) != HP_CUDA_SUCCESS)
		return 0;
	return type;
}

int hp_cuda_host_known(const void *p)
{
	unsigned type = 0;
	return sf.attr && sf.attr(&type, HP_CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
				  (hp_CUdeviceptr)(uintptr_t)p) ==
			      HP_CUDA_SUCCESS;
}

#define HP_CU_POINTER_ATTRIBUTE_RANGE_START_ADDR 11
#define HP_CU_POINTER_ATTRIBUTE_RANGE_SIZE 12
int hp_cuda_dev_fits(uintptr_t d, size_t n)
{
	hp_CUdeviceptr start = 0;
	size_t size = 0;
	if (!sf.attr ||
	    sf.attr(&start, HP_CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, d) !=
		HP_CUDA_SUCCESS ||
	    sf.attr(&size, HP_CU_POINTER_ATTRIBUTE_RANGE_SIZE, d) !=
		HP_CUDA_SUCCESS)
		return 1; /* not known: the driver's to refuse */
	return d >= start && d - start <= size && n <= size - (d - start);
}

int hp_cuda_ring_register(void *p, size_t n)
{
	if (!hp_capture_enter())
		return -1;
	hp_CUresult r = cu.cuMemHostRegister_v2(p, n,
						HP_CU_MEMHOSTREGISTER_PORTABLE);
	hp_capture_leave();
	return r;
}

int hp_cuda_ring_unregister(void *p)
{
	if (hp_in_child)
		return -1;
	if (atomic_load_explicit(&cu_loaded, memory_order_acquire) <= 0 ||
	    driver_gone())
		return HP_CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED; /* died with it */
	if (!hp_capture_enter())
		return -1;
	int pushed = enter_ctx(), r = -1;
	if (pushed >= 0) {
		r = cu.cuMemHostUnregister(p);
		leave_ctx(pushed);
	}
	hp_capture_leave();
	return r;
}

int hp_cuda_htod_async(uintptr_t d, const void *h, size_t n,
		       hp_cudaStream_t s)
{
	return sf.htod((hp_CUdeviceptr)d, h, n, s);
}

int hp_cuda_dtoh_async(void *h, uintptr_t d, size_t n, hp_cudaStream_t s)
{
	return sf.dtoh(h, (hp_CUdeviceptr)d, n, s);
}

int hp_cuda_2d_fn(void)
{
	return sf.m2d != NULL;
}

int hp_cuda_2d_async(const hp_CUDA_MEMCPY2D *p, hp_cudaStream_t s)
{
	return sf.m2d(p, s);
}

int hp_cuda_event_new(void **ev)
{
	return pf.cuEventCreate((hp_cudaEvent_t *)ev,
				HP_CU_EVENT_DISABLE_TIMING);
}

int hp_cuda_event_record(void *ev, hp_cudaStream_t s)
{
	return pf.cuEventRecord((hp_cudaEvent_t)ev, s);
}

int hp_cuda_event_wait(void *ev)
{
	return pf.cuEventSynchronize((hp_cudaEvent_t)ev);
}

int hp_cuda_event_query(void *ev)
{
	return sf.query ? sf.query((hp_cudaEvent_t)ev) : 600 /* NOT_READY */;
}

int hp_cuda_event_free(void *ev)
{
	return pf.cuEventDestroy_v2((hp_cudaEvent_t)ev);
}

int hp_cuda_stream_wait(hp_cudaStream_t s)
{
	return pf.cuStreamSynchronize(s);
}

void hp_cuda_fence_fork_child(void)
{
	/* Only this thread exists in the child: a lock a parent's thread held
	 * at the fork would never be released. */
	for (int i = 0; i < 64; i++)
		atomic_flag_clear_explicit(&pair_lock[i], memory_order_relaxed);
	pthread_mutex_init(&gate_mu, NULL);
	pthread_cond_init(&gate_cv, NULL);
}

static void cuda_fork_child(void)
{
	/* The child makes no CUDA call (invariant 4): forget the driver. */
	/* relaxed: the child has one thread now */
	atomic_store_explicit(&cu_loaded, -1, memory_order_relaxed);
	atomic_store_explicit(&cu_ready, 0, memory_order_relaxed);
}

const hp_backend_t hp_backend_cuda = {
	.name = "cuda", .probe = cuda_probe, .ready = cuda_ready,
	.pin = cuda_pin, .unpin = cuda_unpin, .fork_child = cuda_fork_child,
	.quiesce = hp_cuda_quiesce, .owner = cuda_owner,
	.device_node = cuda_device_node, .pin_flags = HOSTPIN_REGISTERED,
};
