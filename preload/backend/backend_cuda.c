/* CUDA backend: registers ranges with the driver (cuMemHostRegister_v2,
 * PORTABLE) through a primary context the program already made active.
 * The driver is never linked and never initialised by hostpin: it is ready
 * once the program has loaded libcuda.so.1, called cuInit, and has an
 * active primary context (invariant 3).  Here: finding the driver, its
 * readiness, registering and unregistering ranges, the device's NUMA node.
 * The contexts it learnt, pushed and ended: backend_cuda_ctx.c; the calls
 * the policy and the copy engine ask of the driver (the capture gate, copy
 * fences, staged copies): backend_cuda_calls.c. */
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
#include "cuda_int.h"

struct hp_cu_fns hp_cu;

/* 0: driver not seen loaded yet; 1: entry points resolved; -1: unusable */
_Atomic int hp_cu_loaded;
static _Atomic int cu_ready; /* sticky once a primary context was active */
static _Atomic int cu_dev; /* the device whose primary context was active */

static const char *lib_name(void)
{
	return hp_optstr[HP_OPT_CUDA_LIB][0] ? hp_optstr[HP_OPT_CUDA_LIB]
					     : "libcuda.so.1";
}

static hp_obj_t cu_obj; /* the loaded driver */
/* The copy fences' entry points (hp_cuda_copy_fns); pf_state 0: not
 * resolved from the driver loaded now. */
struct hp_cu_pfns hp_cu_pf;
_Atomic int hp_cu_pf_state;
/* the staged copies' entry points: 0 not resolved; 1 usable; -1 not */
_Atomic int hp_cu_sf_state;
/* Counts the contexts that ended and the drivers forgotten: the staging
 * ring (hp_cuda_ctx_epoch) is made again after either. */
_Atomic unsigned hp_cu_ctx_epoch;
_Atomic unsigned hp_cu_drv_gen; /* drivers forgotten (unloaded) */
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
	hp_cu_forget_known();
	atomic_store_explicit(&miss_gen, ~0ull, memory_order_relaxed);
	atomic_store_explicit(&hp_cu_loaded, 0, memory_order_release);
	/* release: pairs with the acquire in hp_cuda_copy_fns, which
	 * resolves the loaded driver's again */
	atomic_store_explicit(&hp_cu_pf_state, 0, memory_order_release);
	atomic_store_explicit(&hp_cu_sf_state, 0, memory_order_release);
	atomic_fetch_add_explicit(&hp_cu_ctx_epoch, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&hp_cu_drv_gen, 1, memory_order_relaxed);
	/* the policy sends the blocks back to pending */
	hp_backend_report(HP_EV_DEVICE_LOST);
}

/* 1 if the driver resolved earlier is gone (then forgotten). */
int hp_cu_driver_gone(void)
{
	/* acquire: pairs with the release in load */
	if (atomic_load_explicit(&hp_cu_loaded, memory_order_acquire) <= 0 ||
	    hp_obj_alive(&cu_obj))
		return 0;
	forget_driver();
	return 1;
}

/* Resolve the entry points if the program has loaded the driver. */
int hp_cu_load(void)
{
	int st = atomic_load_explicit(&hp_cu_loaded, memory_order_acquire);
	if (st > 0 && hp_cu_driver_gone())
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
	*(void **)&hp_cu.name = hp_obj_sym(&o, #name);                              \
	ok &= hp_cu.name != NULL;
	HP_CU_DRIVER_FNS(HP_FN_SYM, hp_CUresult)
#undef HP_FN_SYM
	if (!ok)
		hp_log(HP_LOG_WARN, "%s lacks an entry point hostpin needs; "
		       "CUDA registration off", lib_name());
	/* release: pairs with the acquire above; the table is complete. */
	atomic_store_explicit(&hp_cu_loaded, ok ? 1 : -1, memory_order_release);
	hp_backend_note(NULL, HP_BK_DRIVER);
	return ok;
}

void *hp_cuda_sym(const char *name)
{
	if (!hp_cu_load()) {
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

/* Readiness is asked again (a context ended: a primary context must be
 * active again). */
void hp_cu_unready(void)
{
	atomic_store_explicit(&cu_ready, 0, memory_order_release);
}

static const char *err_name(hp_CUresult r)
{
	const char *s = NULL;
	if (hp_cu.cuGetErrorName(r, &s) != HP_CUDA_SUCCESS || s == NULL)
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
	    !hp_cu_driver_gone())
		return 1;
	if (!hp_cu_load())
		return 0;
	int n = 0;
	/* NOT_INITIALIZED until the program's own cuInit. */
	if (hp_cu.cuDeviceGetCount(&n) != HP_CUDA_SUCCESS)
		return 0;
	for (int i = 0; i < n; i++) {
		hp_CUdevice d;
		unsigned flags;
		int active = 0;
		if (hp_cu.cuDeviceGet(&d, i) == HP_CUDA_SUCCESS &&
		    hp_cu.cuDevicePrimaryCtxGetState(d, &flags, &active) ==
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

static HP_TLS hp_CUcontext pin_ctx; /* this thread's last pin's context */
/* where that pin ended: a pin that begins there is the next piece of the
 * same block (pinpart.c's one call per piece), made through pin_ctx too,
 * so that a block's registration belongs to one context, its owner */
static HP_TLS uintptr_t pin_next;

static uintptr_t cuda_owner(void) { return (uintptr_t)pin_ctx; }
/* the pieces this thread registered back to back (each beginning where
 * the one before ended), [run_base, pin_next): all through pin_ctx at
 * generation run_gen (hp_cuda_ctx_gen), unless run_mixed */
static HP_TLS uintptr_t run_base;
static HP_TLS uint64_t run_gen;
static HP_TLS int run_mixed;

int hp_cuda_pin_intact(uintptr_t base, size_t len)
{
	if (run_mixed || run_gen == 0 || base < run_base ||
	    pin_next != base + len)
		return 0;
	return hp_cuda_ctx_gen((uintptr_t)pin_ctx, 0) == run_gen;
}

static HP_TLS uintptr_t pin_as; /* hp_cuda_pin_as */
void hp_cuda_pin_as(uintptr_t ctx) { pin_as = ctx; }

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
		hp_CUresult r = hp_cu.cuMemHostUnregister(b + off);
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
	if (hp_cu_driver_gone())
		return EAGAIN; /* pending until a driver is ready again */
	/* a graph capture in progress: pending until it ends */
	if (!hp_capture_enter())
		return EAGAIN;
	uint64_t as_gen = pin_as ? hp_cuda_ctx_gen(pin_as, 0) : 0;
	int pushed = as_gen ? hp_cuda_ctx_push(pin_as, as_gen) : -1;
	if (pushed >= 0)
		hp_cu_entered_ctx = (hp_CUcontext)pin_as;
	else
		pushed = hp_cu_enter_ctx_as((uintptr_t)base == pin_next
						? pin_ctx
						: NULL);
	if (pushed < 0) {
		hp_capture_leave();
		return EAGAIN; /* no context on this thread yet: pending */
	}
	hp_test_pause("pin_pushed");
	/* the generation of the context registered through, and its ends
	 * begun: one that ends during the call (another thread's cuCtxDestroy
	 * or reset) may be made again under the same handle before the driver
	 * sees the registration, which then lives in a context the table calls
	 * ended (never pushed again: its unregistration would find none) */
	struct hp_cu_watch w;
	uint64_t gen = hp_cu_watch_begin(&w, hp_cu_entered_ctx);
	if (!gen && hp_cu_ctx_ended(hp_cu_entered_ctx)) {
		/* it ended since it was pushed: not through it */
		hp_cu_leave_ctx(pushed);
		hp_capture_leave();
		return EAGAIN;
	}
	char *b = base;
	size_t done = 0;
	int e = 0;
	while (done < len) {
		size_t n = len - done < chunk() ? len - done : chunk();
		hp_CUresult r = hp_cu.cuMemHostRegister_v2(
		    b + done, n, HP_CU_MEMHOSTREGISTER_PORTABLE);
		if (r == HP_CUDA_ERROR_CONTEXT_IS_DESTROYED ||
		    r == HP_CUDA_ERROR_INVALID_CONTEXT) {
			/* a context that ended under us: not now (pending),
			 * and never pushed again */
			hp_cu_mark_ended(hp_cu_entered_ctx);
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
	if (!e && hp_cu_watch_ended(&w)) {
		/* it ended meanwhile: undone now, through the context still
		 * current here (a dead one answers that it died with it; an
		 * unloaded driver took it along), and pending; one the driver
		 * refuses to undo stays registered, the caller's to release
		 * (invariant 1) */
		const char *w2;
		if (hp_cu_driver_gone() || cuda_unpin_n(b, done, &w2) != EIO)
			e = EAGAIN;
	}
	if (!e) {
		if ((uintptr_t)base == pin_next && pin_next != 0)
			run_mixed |= hp_cu_entered_ctx != pin_ctx ||
				     gen != run_gen;
		else
			run_base = (uintptr_t)base, run_gen = gen,
			run_mixed = 0;
		pin_ctx = hp_cu_entered_ctx, pin_next = (uintptr_t)base + len;
	}
	hp_cu_leave_ctx(pushed);
	hp_capture_leave();
	return e;
}

/* EAGAIN: not now, the block stays registered (a graph capture is in
 * progress, or no context that hostpin knows lives on this thread or can
 * be pushed); the caller keeps it for a later try (pin.c). */
static int cuda_unpin(void *base, size_t len, const char **why)
{
	if (atomic_load_explicit(&hp_cu_loaded, memory_order_acquire) <= 0 ||
	    hp_cu_driver_gone())
		return 0; /* the registration died with its driver */
	if (!hp_capture_enter()) {
		*why = "a CUDA graph capture is in progress";
		return EAGAIN;
	}
	int pushed = hp_cu_enter_ctx();
	int e;
	if (pushed < 0) {
		*why = "no CUDA context to unregister through";
		e = EAGAIN;
	} else {
		e = cuda_unpin_n(base, len, why);
		hp_cu_leave_ctx(pushed);
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

static void cuda_fork_child(void)
{
	/* The child makes no CUDA call (invariant 4): forget the driver. */
	/* relaxed: the child has one thread now */
	atomic_store_explicit(&hp_cu_loaded, -1, memory_order_relaxed);
	atomic_store_explicit(&cu_ready, 0, memory_order_relaxed);
}

const hp_backend_t hp_backend_cuda = {
	.name = "cuda", .probe = cuda_probe, .ready = cuda_ready,
	.pin = cuda_pin, .unpin = cuda_unpin, .fork_child = cuda_fork_child,
	.quiesce = hp_cuda_quiesce, .owner = cuda_owner,
	.device_node = cuda_device_node, .pin_flags = HOSTPIN_REGISTERED,
};
