/* A second preload that resolves with RTLD_NEXT, as interposers do: its
 * lookups must stay relative to itself, with hostpin before or after it. */
#include <dlfcn.h>
#include <string.h>

static const char *owner(void *p)
{
	Dl_info di;
	if (p == NULL || !dladdr(p, &di) || di.dli_fname == NULL)
		return "none";
	const char *b = strrchr(di.dli_fname, '/');
	return b ? b + 1 : di.dli_fname;
}

/* Who defines the next malloc after this library (dlsym and dlvsym). */
const char *next_malloc_owner(void) { return owner(dlsym(RTLD_NEXT, "malloc")); }
const char *next_malloc_owner_v(void)
{
	return owner(dlvsym(RTLD_NEXT, "malloc", "GLIBC_2.2.5"));
}
/* RTLD_DEFAULT from here, and a lookup on a handle. */
const char *default_puts_owner(void) { return owner(dlsym(RTLD_DEFAULT, "puts")); }
