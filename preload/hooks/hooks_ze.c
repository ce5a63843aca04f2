/* Hooks on the Level Zero loader's exported entry points: zeInit (the
 * program initialised Level Zero: adopt pending blocks), and the lookup of
 * the import extension, whose functions the program gets as wrappers so
 * that hostpin steps aside for its imports (invariant 8), through the same
 * sequence as the CUDA hooks.  Copies: ze_copy.c. */
#include <string.h>

#include "../hooks.h"
#include "../base/resolve.h"
#include "../backend/ze_api.h"

#define MAX_DRIVERS 8

/* zeInitDrivers (Level Zero 1.10): current oneAPI runtimes call it instead
 * of zeInit. */
typedef hp_ze_result_t (*hp_zeInitDrivers_t)(uint32_t *,
					     hp_ze_driver_handle_t *, void *);

static hp_fwd_t next_zeInit = HP_FWD_INIT("zeInit"),
		next_zeInitDrivers = HP_FWD_INIT("zeInitDrivers"),
		next_zeGetExt =
		    HP_FWD_INIT("zeDriverGetExtensionFunctionAddress");
/* The functions found on a loader's handle (dlsym), which the wrappers
 * handed out for them call. */
static _Atomic(void *) lk_zeInit_fn, lk_zeInitDrivers_fn, lk_zeGetExt_fn;

/* The program initialised Level Zero, and no driver call is in progress on
 * this thread: discover the drivers here (never later, from an allocation
 * that may be the driver's own inside zeContextCreate), let auto choose,
 * and adopt the blocks from before. */
static void inited(void)
{
	if (hp_hook_enter()) {
		HP_GUARDED(hp_ze_note_init(); (void)hp_backend->ready();
			   hp_backend_events_act();
			   hp_adopt_pending());
		hp_hook_leave();
	}
}

static hp_ze_result_t init_body(hp_zeInit_t fn, hp_ze_init_flags_t flags)
{
	if (fn == NULL)
		return 0x78000001; /* ZE_RESULT_ERROR_UNINITIALIZED */
	hp_ze_result_t r = fn(flags);
	if (r == HP_ZE_RESULT_SUCCESS)
		inited();
	return r;
}

static hp_ze_result_t init_drivers_body(hp_zeInitDrivers_t fn, uint32_t *n,
					hp_ze_driver_handle_t *h, void *desc)
{
	if (fn == NULL)
		return 0x78000001; /* ZE_RESULT_ERROR_UNINITIALIZED */
	hp_ze_result_t r = fn(n, h, desc);
	if (r == HP_ZE_RESULT_SUCCESS)
		inited();
	return r;
}

HP_EXPORT hp_ze_result_t zeInit(hp_ze_init_flags_t flags)
{
	return init_body((hp_zeInit_t)HP_FWD(next_zeInit), flags);
}

static hp_ze_result_t lk_zeInit(hp_ze_init_flags_t flags)
{
	/* acquire: pairs with the release in hp_ze_wrap */
	return init_body((hp_zeInit_t)atomic_load_explicit(
			     &lk_zeInit_fn, memory_order_acquire),
			 flags);
}

HP_EXPORT hp_ze_result_t zeInitDrivers(uint32_t *n, hp_ze_driver_handle_t *h,
				       void *desc)
{
	return init_drivers_body((hp_zeInitDrivers_t)HP_FWD(next_zeInitDrivers),
				 n, h, desc);
}

static hp_ze_result_t lk_zeInitDrivers(uint32_t *n, hp_ze_driver_handle_t *h,
				       void *desc)
{
	/* acquire: pairs with the release in hp_ze_wrap */
	return init_drivers_body(
	    (hp_zeInitDrivers_t)atomic_load_explicit(&lk_zeInitDrivers_fn,
						     memory_order_acquire),
	    n, h, desc);
}

/* The real functions, per driver handle the program asked the loader with
 * (and its translation to the driver's own handle).  Entries are filled
 * under app_mu and never change once napp counts them. */
static struct {
	hp_ze_driver_handle_t h, native;
	struct hp_zex_fns real;
} app[MAX_DRIVERS];
static _Atomic int napp;
static pthread_mutex_t app_mu = PTHREAD_MUTEX_INITIALIZER;

static struct hp_zex_fns *app_real(hp_ze_driver_handle_t h)
{
	/* acquire: pairs with the release that counted the entry */
	int n = atomic_load_explicit(&napp, memory_order_acquire);
	for (int i = 0; i < n; i++)
		if (app[i].h == h || app[i].native == h)
			return &app[i].real;
	return n ? &app[0].real : NULL;
}

static hp_ze_result_t app_import(hp_ze_driver_handle_t h, void *p, size_t n)
{
	struct hp_zex_fns *d = app_real(h);
	if (!hp_hook_enter())
		return d->zexDriverImportExternalPointer(h, p, n);
	hp_step_aside(p, n);
	hp_ze_result_t r = d->zexDriverImportExternalPointer(h, p, n);
	if (r != HP_ZE_RESULT_SUCCESS)
		hp_step_aside_failed(p);
	hp_hook_leave();
	return r;
}

static hp_ze_result_t app_release(hp_ze_driver_handle_t h, void *p)
{
	struct hp_zex_fns *d = app_real(h);
	if (!hp_hook_enter())
		return d->zexDriverReleaseImportedPointer(h, p);
	hp_ze_result_t r = d->zexDriverReleaseImportedPointer(h, p);
	/* SYCL's release_from_device_copy on a hostpin block releases our
	 * import: the step-aside sequence notices and imports it again. */
	if (r == HP_ZE_RESULT_SUCCESS)
		hp_step_aside_released(p);
	hp_hook_leave();
	return r;
}

static hp_ze_result_t app_base(hp_ze_driver_handle_t h, void *p, void **b)
{
	return app_real(h)->zexDriverGetHostPointerBaseAddress(h, p, b);
}

static hp_ze_result_t get_ext_body(hp_zeDriverGetExtensionFunctionAddress_t next,
				   hp_ze_driver_handle_t h, const char *name,
				   void **fn)
{
	if (next == NULL)
		return 0x78000001; /* ZE_RESULT_ERROR_UNINITIALIZED */
	hp_ze_result_t r = next(h, name, fn);
	if (r != HP_ZE_RESULT_SUCCESS || fn == NULL || *fn == NULL ||
	    name == NULL || !hp_hooks_active())
		return r;
	if (strcmp(name, "zeCommandListHostSynchronize") == 0) {
		/* 1.6, past loader 1.8's tables: an immediate list's copies
		 * ran (ze_copy.c) */
		HP_GUARDED(*fn = hp_ze_host_sync_wrap(*fn));
		return r;
	}
	void *wrap = NULL;
	pthread_mutex_lock(&app_mu);
	int n = atomic_load_explicit(&napp, memory_order_relaxed), i = 0;
	while (i < n && app[i].h != h)
		i++;
	if (i == n && n < MAX_DRIVERS) {
		void *native = h;
		/* the translation of the loader this call went to */
		hp_zelLoaderTranslateHandle_t tr = NULL;
		hp_obj_t o;
		if (hp_obj_of((const void *)next, &o))
			*(void **)&tr = hp_obj_sym(&o, "zelLoaderTranslateHandle");
		if (!tr || tr(HP_ZEL_HANDLE_DRIVER, h, &native) !=
			       HP_ZE_RESULT_SUCCESS)
			native = h;
		app[n].native = native;
		app[n].h = h;
		/* release: pairs with the acquire in app_real */
		atomic_store_explicit(&napp, n + 1, memory_order_release);
	}
	if (i < MAX_DRIVERS) {
		if (strcmp(name, "zexDriverImportExternalPointer") == 0) {
			*(void **)&app[i].real.zexDriverImportExternalPointer = *fn;
			wrap = (void *)app_import;
		} else if (strcmp(name, "zexDriverReleaseImportedPointer") == 0) {
			*(void **)&app[i].real.zexDriverReleaseImportedPointer = *fn;
			wrap = (void *)app_release;
		} else if (strcmp(name, "zexDriverGetHostPointerBaseAddress") ==
			   0) {
			*(void **)&app[i].real.zexDriverGetHostPointerBaseAddress =
			    *fn;
			wrap = (void *)app_base;
		}
	}
	pthread_mutex_unlock(&app_mu);
	if (wrap)
		*fn = wrap;
	return r;
}

HP_EXPORT hp_ze_result_t zeDriverGetExtensionFunctionAddress(
    hp_ze_driver_handle_t h, const char *name, void **fn)
{
	return get_ext_body(
	    (hp_zeDriverGetExtensionFunctionAddress_t)HP_FWD(next_zeGetExt), h,
	    name, fn);
}

static hp_ze_result_t lk_zeGetExt(hp_ze_driver_handle_t h, const char *name,
				  void **fn)
{
	/* acquire: pairs with the release in hp_ze_wrap */
	return get_ext_body((hp_zeDriverGetExtensionFunctionAddress_t)
				atomic_load_explicit(&lk_zeGetExt_fn,
						     memory_order_acquire),
			    h, name, fn);
}

/* Looked up on a loader's handle: the wrapper, calling what the loader
 * returned.  One loader at a time: a second one's function (while the
 * first is loaded) is handed out as is. */
static const struct {
	const char *name;
	_Atomic(void *) *slot;
	void *wrapper;
} ze_names[] = {
	{"zeInit", &lk_zeInit_fn, (void *)lk_zeInit},
	{"zeInitDrivers", &lk_zeInitDrivers_fn, (void *)lk_zeInitDrivers},
	{"zeDriverGetExtensionFunctionAddress", &lk_zeGetExt_fn,
	 (void *)lk_zeGetExt},
};
#define NZE (sizeof(ze_names) / sizeof(ze_names[0]))

int hp_ze_wrapped_name(const char *name)
{
	if (hp_ze_copy_wrapped_name(name))
		return 1;
	for (size_t i = 0; i < NZE; i++)
		if (strcmp(ze_names[i].name, name) == 0)
			return 1;
	return 0;
}

void *hp_ze_wrap(const char *symbol, void *fn)
{
	if (hp_ze_copy_wrapped_name(symbol))
		return hp_ze_copy_wrap(symbol, fn);
	for (size_t i = 0; i < NZE; i++) {
		if (strcmp(ze_names[i].name, symbol) != 0)
			continue;
		void *cur = NULL;
		hp_obj_t o;
		/* release: pairs with the acquires in the lk_ wrappers */
		while (!atomic_compare_exchange_strong_explicit(
		    ze_names[i].slot, &cur, fn, memory_order_release,
		    memory_order_acquire)) {
			if (cur == fn)
				break;
			if (hp_obj_of(cur, &o))
				return fn; /* another loader's, still loaded */
		}
		return ze_names[i].wrapper;
	}
	return fn;
}
