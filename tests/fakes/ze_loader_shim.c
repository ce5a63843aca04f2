/* A shim in front of Debian's Level Zero loader (libze1 1.8.12) for the
 * Unified Runtime's Level Zero adapter (make check-xpu).  Installed as
 * libze_loader.so.1 in a directory on LD_LIBRARY_PATH, it loads the real
 * loader ($ZE_SHIM_REAL, default Debian's path) and forwards every entry
 * point the build listed (ze_shim_list.h, from the real loader's dynamic
 * symbols) through a jump, except:
 *  - zeLoaderInit: the adapter calls it at each of its inits; loader 1.8
 *    adds its drivers again each time (two platforms, then a crash), so
 *    only the first call reaches it.
 * ZE_SHIM_LOG=1 writes each overridden call to stderr.  x86-64 only. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "ze_shim_list.h"

#define DECL(n) __attribute__((visibility("hidden"))) void *fwd_##n;
ZE_SHIM_LIST(DECL)
#define TRAMP(n)                                                              \
	__asm__(".globl " #n "\n.type " #n ",@function\n" #n ":\n"             \
		"\tjmp *fwd_" #n "(%rip)\n.size " #n ",.-" #n "\n");
ZE_SHIM_LIST(TRAMP)

static void *real;

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
}

static int logging(void)
{
	const char *e = getenv("ZE_SHIM_LOG");
	return e && *e == '1';
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
}

__attribute__((visibility("default"))) int zeLoaderInit(int flags)
{
	(void)flags;
	pthread_once(&once, init_once);
	if (logging())
		fprintf(stderr, "ze_loader_shim: zeLoaderInit -> %d\n", first_rc);
	return first_rc;
}
