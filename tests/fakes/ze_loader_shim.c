/* A shim in front of Debian's Level Zero loader (libze1 1.8.12) for the
 * Unified Runtime's Level Zero adapter (make check-xpu).  Installed as
 * libze_loader.so.1 in a directory on LD_LIBRARY_PATH, it loads the real
 * loader ($ZE_SHIM_REAL, default Debian's path) and forwards every entry
 * point the build listed (ze_shim_list.h, from the real loader's dynamic
 * symbols) through a jump, except:
 *  - zeLoaderInit: the adapter calls it at each of its inits, and loader
 *    1.8 adds its drivers at each call, its own first zeInit making one
 *    more (two platforms, then a crash): the first call here makes that
 *    zeInit instead, and none reaches the real zeLoaderInit.
 *  - the entry points of ze_shim_extra.h, newer than spec 1.4: the
 *    adapter's library layer (a newer loader's, linked in) fills its
 *    tables with the loader's exports by name; for one the loader lacks it
 *    answers UNSUPPORTED, then jumps to NULL at the next call.  The shim
 *    exports each, as a jump to the driver's function of that name
 *    (zeDriverGetExtensionFunctionAddress, asked at the first
 *    zeLoaderInit) or, where the driver has none, to a function answering
 *    ZE_RESULT_ERROR_UNSUPPORTED_FEATURE.  The handles the adapter holds
 *    are the driver's own (one driver: the loader does not intercept), so
 *    the driver's function may take them.
 * ZE_SHIM_LOG=1 writes each overridden call to stderr.  x86-64 only. */
#include <dlfcn.h>
#include <level_zero/ze_api.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "ze_shim_extra.h"

#include "ze_shim_list.h"

#define DECL(n) __attribute__((visibility("hidden"))) void *fwd_##n;
ZE_SHIM_LIST(DECL)
ZE_SHIM_EXTRA(DECL)
#define TRAMP(n)                                                              \
	__asm__(".globl " #n "\n.type " #n ",@function\n" #n ":\n"             \
		"\tjmp *fwd_" #n "(%rip)\n.size " #n ",.-" #n "\n");
ZE_SHIM_LIST(TRAMP)
ZE_SHIM_EXTRA(TRAMP)

static void *real;
static int logging(void);
static int unsupported(void);

__attribute__((constructor)) static void shim_init(void)
{
	const char *p = getenv("ZE_SHIM_REAL");
	real = dlopen(p && *p ? p : "/usr/lib/x86_64-linux-gnu/libze_loader.so.1",
		      RTLD_NOW | RTLD_LOCAL);
	if (!real) {
		fprintf(stderr, "ze_loader_shim: %s\n", dlerror());
		abort();
	}
#define FILL(n) fwd_##n = dlsym(real, #n);
	ZE_SHIM_LIST(FILL)
#define UNSUP(n) fwd_##n = (void *)unsupported;
	ZE_SHIM_EXTRA(UNSUP)
}

static int logging(void)
{
	const char *e = getenv("ZE_SHIM_LOG");
	return e && *e == '1';
}

static int unsupported(void)
{
	return ZE_RESULT_ERROR_UNSUPPORTED_FEATURE;
}

/* the newer entry points: the driver's, or unsupported */
static void resolve_extra(void)
{
	typedef ze_result_t (*get_fn)(uint32_t *, ze_driver_handle_t *);
	typedef ze_result_t (*addr_fn)(ze_driver_handle_t, const char *, void **);
	get_fn get = (get_fn)dlsym(real, "zeDriverGet");
	addr_fn addr = (addr_fn)dlsym(real, "zeDriverGetExtensionFunctionAddress");
	uint32_t n = 1;
	ze_driver_handle_t d = NULL;
	if (!get || get(&n, &d) != ZE_RESULT_SUCCESS)
		d = NULL;
#define RESOLVE(name)                                                         \
	{                                                                     \
		void *f = NULL;                                               \
		if (!d || !addr || addr(d, #name, &f) != ZE_RESULT_SUCCESS)   \
			f = NULL;                                             \
		fwd_##name = f ? f : (void *)unsupported;                     \
		if (logging())                                                \
			fprintf(stderr, "ze_loader_shim: %s: %s\n", #name,    \
				f ? "the driver's" : "unsupported");          \
	}
	ZE_SHIM_EXTRA(RESOLVE)
}

typedef int (*init_fn)(int);
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int first_rc;

/* Loader 1.8 initialises itself inside its first zeInit (its own library
 * layer calls its zeLoaderInit there) and adds its drivers again at each
 * further zeLoaderInit: the first call here makes that zeInit, none reaches
 * the real zeLoaderInit. */
static void init_once(void)
{
	init_fn f = (init_fn)dlsym(real, "zeInit");
	first_rc = f ? f(0) : 0;
	resolve_extra();
}

__attribute__((visibility("default"))) int zeLoaderInit(int flags)
{
	(void)flags;
	pthread_once(&once, init_once);
	if (logging())
		fprintf(stderr, "ze_loader_shim: zeLoaderInit -> %d\n", first_rc);
	return first_rc;
}

