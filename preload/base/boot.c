/* Bootstrap: the next allocator's symbols and the functions that stand in
 * for them until they are resolved, the static arena that serves dlsym's
 * own allocations, the recursion guard, and glibc's own dlsym and dlvsym
 * (found in libc's symbol table, since hostpin exports both names). */
#include <dlfcn.h>
#include <errno.h>
#include <gnu/libc-version.h>
#include <stdlib.h>
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "symtab.h"
#include "../hp.h"

_Atomic int hp_state = HP_ST_UNINIT;
/* 0 until ready: every allocation takes the slow path, which initialises. */
_Atomic size_t hp_threshold = 0;
HP_TLS int hp_in_hook;
int hp_in_child;
static struct hp_next hp_next; /* the next allocator (struct in hp.h) */
/* The registry of ranges (hp.h), the layer below everything else. */
hp_registry_t hp_reg = HP_REGISTRY_INIT;

/* ---- bootstrap arena ---- */
_Alignas(4096) char hp_arena[HP_ARENA_SIZE];
static _Atomic size_t arena_used;

void *hp_arena_alloc(size_t n, size_t align)
{
	if (align < 16)
		align = 16;
	if (n > HP_ARENA_SIZE || align > 4096)
		return NULL;
	/* 16-byte header before each allocation holds its size. */
	size_t need = n + align + 16;
	size_t at = atomic_fetch_add_explicit(&arena_used, need,
					      memory_order_relaxed);
	if (at + need > HP_ARENA_SIZE)
		return NULL;
	uintptr_t p = ((uintptr_t)hp_arena + at + 16 + align - 1) &
		      ~(align - 1);
	((size_t *)p)[-1] = n;
	return (void *)p; /* static memory: already zero */
}

size_t hp_arena_size(const void *p) { return ((const size_t *)p)[-1]; }

/* ---- stand-ins until the next allocator is resolved ----
 * hp_real starts out pointing here, so a thread that reads hp_real before
 * it sees the resolved values (the fast paths read it relaxed) still calls
 * something valid: these initialise, or serve the arena while the
 * initialising thread recurses, and then call the resolved function, read
 * after the acquire in boot_ready. */
static int boot_ready(void)
{
	int st = atomic_load_explicit(&hp_state, memory_order_acquire);
	if (st == HP_ST_UNINIT || st == HP_ST_BUSY) {
		hp_init_slow();
		st = atomic_load_explicit(&hp_state, memory_order_acquire);
	}
	return st == HP_ST_READY || st == HP_ST_PASSTHROUGH;
}

static void *arena_or_enomem(size_t n, size_t align)
{
	void *p = hp_arena_alloc(n, align);
	if (!p)
		errno = ENOMEM;
	return p;
}

static void *boot_malloc(size_t n)
{
	return boot_ready() ? hp_next.malloc(n) : arena_or_enomem(n, 16);
}
static void boot_free(void *p)
{
	if (!hp_arena_owns(p) && boot_ready())
		hp_next.free(p);
}
static void *boot_calloc(size_t n, size_t m)
{
	size_t t;
	if (boot_ready())
		return hp_next.calloc(n, m);
	if (__builtin_mul_overflow(n, m, &t)) {
		errno = ENOMEM;
		return NULL;
	}
	return arena_or_enomem(t, 16); /* static: zero */
}
static void *boot_realloc(void *p, size_t n)
{
	if (boot_ready())
		return hp_next.realloc(p, n);
	void *q = arena_or_enomem(n, 16);
	if (q && p)
		memcpy(q, p, hp_arena_size(p) < n ? hp_arena_size(p) : n);
	return q;
}
static int boot_posix_memalign(void **out, size_t a, size_t n)
{
	if (boot_ready())
		return hp_next.posix_memalign(out, a, n);
	return (*out = hp_arena_alloc(n, a)) ? 0 : ENOMEM;
}
static void *boot_aligned_alloc(size_t a, size_t n)
{
	return boot_ready() ? hp_next.aligned_alloc(a, n)
			    : arena_or_enomem(n, a);
}
static void *boot_memalign(size_t a, size_t n)
{
	return boot_ready() ? hp_next.memalign(a, n) : arena_or_enomem(n, a);
}
static void *boot_valloc(size_t n)
{
	return boot_ready() ? hp_next.valloc(n) : arena_or_enomem(n, 4096);
}
static void *boot_pvalloc(size_t n)
{
	return boot_ready() ? hp_next.pvalloc(n)
			    : arena_or_enomem(hp_page_round(n), 4096);
}
static size_t boot_malloc_usable_size(void *p)
{
	if (hp_arena_owns(p))
		return hp_arena_size(p);
	return boot_ready() ? hp_next.malloc_usable_size(p) : 0;
}
/* Mapping calls during our own start-up go to the kernel directly. */
static void *boot_mmap(void *a, size_t len, int prot, int flags, int fd,
		       long off)
{
	if (hp_next.mmap)
		return hp_next.mmap(a, len, prot, flags, fd, off);
	return (void *)syscall(SYS_mmap, a, len, prot, flags, fd, off);
}
static int boot_munmap(void *a, size_t len)
{
	if (hp_next.munmap)
		return hp_next.munmap(a, len);
	return (int)syscall(SYS_munmap, a, len);
}
static void *boot_mremap(void *old, size_t oldlen, size_t newlen, int flags,
			 ...)
{
	void *na = NULL;
	if (flags & MREMAP_FIXED) {
		va_list ap;
		va_start(ap, flags);
		na = va_arg(ap, void *);
		va_end(ap);
	}
	if (hp_next.mremap)
		return hp_next.mremap(old, oldlen, newlen, flags, na);
	return (void *)syscall(SYS_mremap, old, oldlen, newlen, flags, na);
}
static int boot_madvise(void *a, size_t len, int advice)
{
	if (hp_next.madvise)
		return hp_next.madvise(a, len, advice);
	return (int)syscall(SYS_madvise, a, len, advice);
}

struct hp_real hp_real = {
#define HP_BOOT_INIT(f) .f = boot_##f,
	HP_ALLOC_FNS(HP_BOOT_INIT)
#undef HP_BOOT_INIT
};

/* ---- glibc's dlsym and dlvsym ----
 * hostpin exports both names (hooks_dlsym.c), so every call to them from
 * anywhere, hostpin included, reaches hostpin; the real ones are looked up
 * in libc's own dynamic symbol table (libdl's before glibc 2.34) with its
 * GNU hash. */
void *(*hp_dlsym_next)(void *, const char *);
void *(*hp_dlvsym_next)(void *, const char *, const char *);

/* The object holding gnu_get_libc_version is libc: nobody interposes it
 * (ASan and TSan do dl_iterate_phdr and dladdr's neighbours).  Found by
 * address with dl_iterate_phdr, not dladdr, which takes the loader's lock. */
static int libc_dl(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	uintptr_t a = (uintptr_t)&gnu_get_libc_version;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD ||
		    a - (info->dlpi_addr + ph->p_vaddr) >= ph->p_memsz)
			continue;
		void **out = arg;
		out[0] = hp_elf_lookup(info->dlpi_addr, info->dlpi_phdr,
				       info->dlpi_phnum, "dlsym");
		out[1] = hp_elf_lookup(info->dlpi_addr, info->dlpi_phdr,
				       info->dlpi_phnum, "dlvsym");
		return 1;
	}
	return 0;
}

static void find_libc_dl(void)
{
	void *f[2] = {NULL, NULL};
	dl_iterate_phdr(libc_dl, f);
	/* Before glibc 2.34 they are libdl.so.2's, loaded with hostpin (it
	 * links -ldl); hp_obj_find walks dl_iterate_phdr too. */
	hp_obj_t dl;
	if ((f[0] == NULL || f[1] == NULL) &&
	    hp_obj_find("libdl.so.2", NULL, &dl)) {
		f[0] = hp_obj_sym(&dl, "dlsym");
		f[1] = hp_obj_sym(&dl, "dlvsym");
	}
	if (f[0] == NULL || f[1] == NULL)
		hp_fatal("cannot find dlsym and dlvsym in the C library");
	*(void **)&hp_dlvsym_next = f[1];
	/* release: pairs with the acquire in hp_dl_resolve. */
	__atomic_store_n((void **)&hp_dlsym_next, f[0], __ATOMIC_RELEASE);
}

void hp_dl_resolve(void)
{
	if (__atomic_load_n((void **)&hp_dlsym_next, __ATOMIC_ACQUIRE) == NULL)
		find_libc_dl(); /* idempotent: racing threads store the same */
}

/* ---- the threads hostpin starts ----
 * Created with every signal blocked, for its whole life: a signal the
 * program blocks and collects with signalfd or sigwait must never be
 * delivered to one of hostpin's threads instead (invariant 11).  A thread
 * inherits its creator's mask, so the caller's mask is filled around
 * pthread_create and restored after. */
int hp_thread_start(void *(*fn)(void *), void *arg, size_t stack)
{
	pthread_attr_t a;
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	if (stack)
		pthread_attr_setstacksize(&a, stack);
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_t t;
	int e = pthread_create(&t, &a, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&a);
	return e;
}

/* ---- is hostpin the process's allocator? ---- */
static int is_malloc(const char *name, void *arg)
{
	(void)arg;
	return strcmp(name, "malloc") == 0;
}

/* The first object in load order that defines malloc is the process's
 * allocator (an executable's PLT slot for malloc is not a definition):
 * 1 if it is hostpin (the object holding this function), 0 if another,
 * -1 if none.  No dladdr: it takes the loader's lock. */
static int first_malloc(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	if (!hp_elf_each_func(info->dlpi_addr, info->dlpi_phdr,
			      info->dlpi_phnum, is_malloc, NULL))
		return 0;
	uintptr_t self = (uintptr_t)hp_foreign_allocator;
	int mine = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_LOAD &&
		    self - (info->dlpi_addr + ph->p_vaddr) < ph->p_memsz)
			mine = 1;
	}
	*(int *)arg = mine;
	return 1;
}

int hp_foreign_allocator(void)
{
#ifdef HP_EMBEDDED_TEST
	return 0; /* compiled into a test program under a sanitizer */
#endif
	/* valgrind redirects malloc by address, wherever it is defined;
	 * ASan defines it in the executable or in libasan, ahead of us. */
	const char *pre = getenv("LD_PRELOAD");
	int first = -1;
	dl_iterate_phdr(first_malloc, &first);
	int other = first == 0;
	int vg = pre && strstr(pre, "vgpreload_");
	if (other || vg)
		hp_log(HP_LOG_INFO, "the process's allocator is not hostpin's "
		       "(%s): hostpin stays out of the way",
		       other ? "another malloc comes first" : "valgrind");
	return other || vg;
}

/* ---- symbols ---- */
void hp_resolve_next(void)
{
	hp_dl_resolve();
#define HP_RESOLVE(f)                                                         \
	*(void **)&hp_next.f = hp_dlsym_next(RTLD_NEXT, #f);                  \
	if (hp_next.f == NULL)                                                \
		hp_fatal("cannot resolve " #f " in the next library: "         \
			 "hostpin must be preloaded into a dynamically "      \
			 "linked program");
	HP_ALLOC_FNS(HP_RESOLVE)
#undef HP_RESOLVE
}

/* Publish the resolved functions to the fast paths (before hp_state's
 * release store, which orders them for the boot_* readers). */
void hp_publish_next(void)
{
#define HP_PUBLISH(f)                                                         \
	atomic_store_explicit(&hp_real.f, hp_next.f, memory_order_relaxed);
	HP_ALLOC_FNS(HP_PUBLISH)
#undef HP_PUBLISH
}

int hp_hooks_active(void)
{
	return atomic_load_explicit(&hp_state, memory_order_acquire) ==
		   HP_ST_READY &&
	       !hp_in_hook && !hp_in_child;
}

/* The guard every device hook goes through (hooks.h). */
/* Hooks entered on this thread: the runtime's hook calls into the driver,
 * whose hook must then leave everything to the outer one (one wait per
 * copy, one step-aside per registration). */
static HP_TLS int hook_depth;

int hp_hook_enter(void)
{
	if (hook_depth || !hp_hooks_active())
		return 0;
	hook_depth++;
	return 1;
}

void hp_hook_leave(void) { hook_depth--; }
