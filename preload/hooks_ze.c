/* Hooks on the Level Zero loader's exported entry points: zeInit (the
 * program initialised Level Zero: adopt pending blocks), and the lookup of
 * the import extension, whose functions the program gets as wrappers so
 * that hostpin steps aside for its imports (invariant 8), through the same
 * sequence as the CUDA hooks. */
#include <string.h>

#include "hooks.h"
#include "ze_api.h"

#define MAX_DRIVERS 8

static _Atomic(void *) next_zeInit, next_zeGetExt;

HP_EXPORT hp_ze_result_t zeInit(hp_ze_init_flags_t flags)
{
	hp_zeInit_t fn = (hp_zeInit_t)hp_next_sym(&next_zeInit, "zeInit");
	if (fn == NULL)
		return 0x78000001; /* ZE_RESULT_ERROR_UNINITIALIZED */
	hp_ze_result_t r = fn(flags);
	if (r == HP_ZE_RESULT_SUCCESS && hp_hook_enter()) {
		hp_ze_note_init();
		HP_GUARDED(hp_adopt_pending()); /* blocks from before zeInit */
		hp_hook_leave();
	}
	return r;
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

HP_EXPORT hp_ze_result_t zeDriverGetExtensionFunctionAddress(
    hp_ze_driver_handle_t h, const char *name, void **fn)
{
	hp_zeDriverGetExtensionFunctionAddress_t next =
	    (hp_zeDriverGetExtensionFunctionAddress_t)hp_next_sym(
		&next_zeGetExt, "zeDriverGetExtensionFunctionAddress");
	if (next == NULL)
		return 0x78000001; /* ZE_RESULT_ERROR_UNINITIALIZED */
	hp_ze_result_t r = next(h, name, fn);
	if (r != HP_ZE_RESULT_SUCCESS || fn == NULL || *fn == NULL ||
	    name == NULL || !hp_hooks_active())
		return r;
	void *wrap = NULL;
	pthread_mutex_lock(&app_mu);
	int n = atomic_load_explicit(&napp, memory_order_relaxed), i = 0;
	while (i < n && app[i].h != h)
		i++;
	if (i == n && n < MAX_DRIVERS) {
		void *native = h;
		hp_zelLoaderTranslateHandle_t tr;
		HP_GUARDED(tr = (hp_zelLoaderTranslateHandle_t)hp_dlsym(
			       RTLD_DEFAULT, "zelLoaderTranslateHandle"));
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
