/* Level Zero backend (Intel GPUs): imports ranges into every GPU driver that
 * has the host-pointer import extension (zexDriverImportExternalPointer),
 * which is what lets copies from them run at DMA speed.  The loader is never
 * linked and never initialised by hostpin: the drivers are discovered when
 * the program's own zeInit or zeInitDrivers returns (hooks_ze.c), never
 * from an allocation, which may be a driver's own.  Imports are not reference-
 * counted, so a program (or SYCL) that releases an overlapping import drops
 * ours too: before releasing, hostpin asks the driver whether its import is
 * still there. */
#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <string.h>

#include "../hostpin.h"
#include "../hp.h"
#include "../record.h"
#include "../base/resolve.h"
#include "ze_api.h"

#define MAX_DRIVERS 8

static struct {
#define HP_FN_FIELD(name, R, params) hp_##name##_t name;
	HP_ZE_LOADER_FNS(HP_FN_FIELD, hp_ze_result_t, hp_ze_init_flags_t,
			 hp_zel_handle_type_t)
#undef HP_FN_FIELD
} ze;

struct zdrv {
	hp_ze_driver_handle_t native; /* the driver's own handle */
	struct hp_zex_fns f;
	hp_obj_t obj; /* the object its import functions live in */
};
static struct zdrv drivers[MAX_DRIVERS];
static int ndrivers;
static _Atomic int ze_state;   /* 0 unknown, 1 ready, -1 unusable */
static pthread_mutex_t ze_mu = PTHREAD_MUTEX_INITIALIZER;
static hp_obj_t loader; /* the loader discover() used */

static const char *lib_name(void)
{
	return hp_optstr[HP_OPT_ZE_LIB][0] ? hp_optstr[HP_OPT_ZE_LIB]
					   : "libze_loader.so.1";
}

static const char *ze_err(hp_ze_result_t r)
{
	switch ((unsigned)r) {
	case 0x70000001u: return "ZE_RESULT_ERROR_DEVICE_LOST";
	case 0x70000002u: return "ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY";
	case 0x78000001u: return "ZE_RESULT_ERROR_UNINITIALIZED";
	case 0x78000003u: return "ZE_RESULT_ERROR_UNSUPPORTED_FEATURE";
	case 0x78000004u: return "ZE_RESULT_ERROR_INVALID_ARGUMENT";
	case 0x78000005u: return "ZE_RESULT_ERROR_INVALID_NULL_HANDLE";
	case 0x78000007u: return "ZE_RESULT_ERROR_INVALID_NULL_POINTER";
	case 0x78000008u: return "ZE_RESULT_ERROR_INVALID_SIZE";
	default: return "ZE_RESULT_ERROR_UNKNOWN";
	}
}

/* The host NUMA node of the first device of the first driver hostpin
 * imports for: its PCI function's numa_node in sysfs (the Level Zero
 * equivalent of CUDA's HOST_NUMA_ID is the device's PCI address).  Read at
 * discovery, under ze_mu; -1: unknown. */
static _Atomic int ze_node = -1;

static void learn_node(hp_obj_t *o, hp_ze_driver_handle_t h)
{
	hp_zeDevicePciGetPropertiesExt_t pci =
	    (hp_zeDevicePciGetPropertiesExt_t)hp_obj_sym(
		o, "zeDevicePciGetPropertiesExt");
	hp_ze_device_handle_t dev = NULL;
	uint32_t one = 1;
	struct hp_ze_pci_ext_properties pp = {
	    .stype = HP_ZE_STRUCTURE_TYPE_PCI_EXT_PROPERTIES};
	int v = -1;
	char bdf[32] = "none";
	if (pci && ze.zeDeviceGet(h, &one, &dev) == HP_ZE_RESULT_SUCCESS &&
	    dev && pci(dev, &pp) == HP_ZE_RESULT_SUCCESS) {
		hp_snprintf(bdf, sizeof(bdf), "%04x:%02x:%02x.%x", pp.domain,
			    pp.bus, pp.device, pp.function);
		v = hp_pci_numa_node(bdf);
	}
	hp_log(HP_LOG_INFO, "Level Zero device (PCI %s): host NUMA node %d%s",
	       bdf, v, v >= 0 ? " (PCI numa_node)" : " (unknown)");
	atomic_store_explicit(&ze_node, v, memory_order_relaxed);
}

static int ze_device_node(void)
{
	if (hp_in_child)
		return -1;
	return atomic_load_explicit(&ze_node, memory_order_relaxed);
}

/* Find the drivers and their import functions, when the program's zeInit
 * or zeInitDrivers returned (hp_ze_note_init), never from an allocation
 * path.  Called with ze_mu held. */
static int discover(void)
{
	/* without the loader's lock: see backend_cuda.c */
	hp_obj_t o;
	if (!hp_obj_find(lib_name(),
			 hp_optstr[HP_OPT_ZE_LIB][0] ? NULL : "libze_loader.so", &o))
		return 0;
	loader = o;
	int ok = 1;
#define HP_FN_SYM(name, R, params) *(void **)&ze.name = hp_obj_sym(&o, #name);
	HP_ZE_LOADER_FNS(HP_FN_SYM, , , )
#undef HP_FN_SYM
	ok = ze.zeDriverGet && ze.zeDriverGetExtensionFunctionAddress &&
	     ze.zeDeviceGet; /* zelLoaderTranslateHandle is optional */
	if (!ok) {
		hp_log(HP_LOG_WARN, "%s lacks an entry point hostpin needs; "
		       "Level Zero import off", lib_name());
		return -1;
	}
	hp_ze_driver_handle_t hs[MAX_DRIVERS];
	uint32_t n = MAX_DRIVERS;
	if (ze.zeDriverGet(&n, hs) != HP_ZE_RESULT_SUCCESS)
		return 0;
	ndrivers = 0;
	for (uint32_t i = 0; i < n && i < MAX_DRIVERS; i++) {
		uint32_t nd = 0;
		if (ze.zeDeviceGet(hs[i], &nd, NULL) != HP_ZE_RESULT_SUCCESS ||
		    nd == 0)
			continue;
		struct zdrv d = {0};
		int have = 1;
		/* Preset the out-pointer: a driver may succeed without
		 * writing it. */
#define HP_FN_EXT(name, R, params)                                            \
	{                                                                     \
		void *f = NULL;                                               \
		if (ze.zeDriverGetExtensionFunctionAddress(hs[i], #name, &f) != \
			HP_ZE_RESULT_SUCCESS ||                               \
		    f == NULL)                                                \
			have = 0;                                             \
		*(void **)&d.f.name = f;                                        \
	}
		HP_ZEX_FNS(HP_FN_EXT, )
#undef HP_FN_EXT
		if (!have) {
			HP_LOG_ONCE(HP_LOG_WARN,
				    "Level Zero driver lacks host-pointer import "
				    "(zexDriverImportExternalPointer): its "
				    "copies stay at pageable speed");
			continue;
		}
		/* Extension functions go straight to the driver, which
		 * expects its own handle, not the loader's wrapper. */
		void *native = hs[i];
		if (ze.zelLoaderTranslateHandle &&
		    ze.zelLoaderTranslateHandle(HP_ZEL_HANDLE_DRIVER, hs[i],
						&native) != HP_ZE_RESULT_SUCCESS)
			native = hs[i];
		d.native = native;
		if (!hp_obj_of((const void *)d.f.zexDriverImportExternalPointer,
			       &d.obj))
			continue;
		if (ndrivers == 0)
			learn_node(&o, hs[i]);
		drivers[ndrivers++] = d;
	}
	hp_log(HP_LOG_INFO, "Level Zero ready: %d driver(s) with host-pointer "
	       "import", ndrivers);
	hp_backend_note(NULL, HP_BK_DRIVER | HP_BK_READY);
	return 1;
}

static int ze_probe(void) { return 1; }

int hp_ze_loaded(void)
{
	hp_obj_t o;
	return hp_obj_find(lib_name(), hp_optstr[HP_OPT_ZE_LIB][0]
					   ? NULL
					   : "libze_loader.so",
			   &o);
}

/* 1 if the loader or a driver hostpin imported through was unloaded (a
 * plug-in that brought them was closed): then never call them again.  The
 * imports died with them; the blocks go back to pending, imported again
 * after the program initialises Level Zero again. */
static int ze_gone(void)
{
	/* acquire: pairs with the release in ze_ready */
	if (atomic_load_explicit(&ze_state, memory_order_acquire) <= 0)
		return 0;
	int gone = !hp_obj_alive(&loader);
	for (int i = 0; i < ndrivers && !gone; i++)
		gone = !hp_obj_alive(&drivers[i].obj);
	if (!gone)
		return 0;
	pthread_mutex_lock(&ze_mu);
	int was = atomic_load_explicit(&ze_state, memory_order_relaxed) > 0;
	if (was) {
		hp_log(HP_LOG_INFO, "the Level Zero loader or a driver was "
		       "unloaded: its imports are forgotten, blocks pending "
		       "again");
		ndrivers = 0;
		/* release: pairs with the acquire in ze_ready */
		atomic_store_explicit(&ze_state, 0, memory_order_release);
	}
	pthread_mutex_unlock(&ze_mu);
	if (was) /* the policy sends its blocks back to pending */
		hp_backend_report(HP_EV_DEVICE_LOST);
	return 1;
}

/* Ready once discovery (at the program's zeInit) found the drivers.  Never
 * discovers here: ready() runs on allocation paths, and a driver allocates
 * inside its own calls (zeContextCreate), where a call back into it would
 * deadlock on the driver's lock (invariant 11). */
static int ze_ready(void)
{
	/* acquire: pairs with the release in hp_ze_note_init */
	int st = atomic_load_explicit(&ze_state, memory_order_acquire);
	if (st > 0 && ze_gone())
		st = 0;
	return st > 0;
}

static int release_n(int n, void *base)
{
	int e = 0;
	for (int i = 0; i < n; i++)
		if (drivers[i].f.zexDriverReleaseImportedPointer(drivers[i].native,
							       base))
			e = EIO;
	return e;
}

static int ze_pin(void *base, size_t len, const char **why)
{
	if (ze_gone())
		return EAGAIN; /* pending until Level Zero is ready again */
	if (ndrivers == 0) {
		*why = "driver lacks host-pointer import";
		return EIO;
	}
	for (int i = 0; i < ndrivers; i++) {
		hp_ze_result_t r = drivers[i].f.zexDriverImportExternalPointer(
		    drivers[i].native, base, len);
		if (r != HP_ZE_RESULT_SUCCESS) {
			*why = ze_err(r);
			release_n(i, base);
			return EIO;
		}
	}
	return 0;
}

#define HP_ZE_INVALID_ARGUMENT 0x78000004 /* the driver's "not imported" */

static int ze_unpin(void *base, size_t len, const char **why)
{
	if (atomic_load_explicit(&ze_state, memory_order_acquire) <= 0 ||
	    ze_gone())
		return 0; /* the import died with its driver */
	if (hp_ze_inflight_busy(base, len)) {
		/* a copy appended from it may not have run: kept imported
		 * (and mapped) until it has (ze_inflight.c, invariant 1) */
		*why = "a Level Zero copy from it has not run yet";
		return EAGAIN;
	}
	int e = 0;
	for (int i = 0; i < ndrivers; i++) {
		void *b = NULL;
		hp_ze_result_t r = drivers[i].f.zexDriverGetHostPointerBaseAddress(
		    drivers[i].native, base, &b);
		int dropped = (r == HP_ZE_RESULT_SUCCESS && b != base) ||
			      r == HP_ZE_INVALID_ARGUMENT;
		if (!dropped) {
			/* Imported, or the query itself failed: release. */
			r = drivers[i].f.zexDriverReleaseImportedPointer(
			    drivers[i].native, base);
			dropped = r == HP_ZE_INVALID_ARGUMENT;
			if (r != HP_ZE_RESULT_SUCCESS && !dropped && !e) {
				*why = ze_err(r);
				e = EIO;
			}
		}
		if (dropped) {
			/* Someone released an overlapping import, which
			 * dropped ours: releasing again would fail or, worse,
			 * drop theirs. */
			HP_CTR_ADD(imports_dropped, 1);
			HP_LOG_ONCE(HP_LOG_INFO,
				    "import of %p was dropped by another "
				    "release (Level Zero imports are not "
				    "reference-counted); not releasing it again",
				    base);
		}
	}
	return e;
}

/* The program's zeInit or zeInitDrivers returned success, outside any
 * driver call: find the drivers now, once (again after an unload), if
 * Level Zero is the backend in use or auto may still choose it. */
void hp_ze_note_init(void)
{
	const hp_backend_t *c = hp_backend_auto_chosen();
	if (hp_in_child ||
	    !(hp_backend == &hp_backend_level_zero ||
	      (hp_backend == &hp_backend_auto &&
	       (c == NULL || c == &hp_backend_level_zero))))
		return;
	pthread_mutex_lock(&ze_mu);
	if (atomic_load_explicit(&ze_state, memory_order_relaxed) == 0) {
		int st = discover();
		if (st)
			/* release: pairs with the acquire in ze_ready; the
			 * driver table is complete before anyone reads it. */
			atomic_store_explicit(&ze_state, st,
					      memory_order_release);
	}
	pthread_mutex_unlock(&ze_mu);
}

static void ze_fork_child(void)
{
	/* relaxed: the child has one thread; no Level Zero call there */
	atomic_store_explicit(&ze_state, -1, memory_order_relaxed);
	hp_ze_inflight_fork_child();
}

const hp_backend_t hp_backend_level_zero = {
	.name = "level_zero", .probe = ze_probe, .ready = ze_ready,
	.pin = ze_pin, .unpin = ze_unpin, .fork_child = ze_fork_child,
	.device_node = ze_device_node, .busy = hp_ze_inflight_busy,
	.pin_flags = HOSTPIN_REGISTERED,
};
