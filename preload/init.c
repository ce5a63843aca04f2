/* Bootstrap: staged, lazy initialisation with a constructor as well; the
 * next allocator's symbols; the static arena that serves dlsym's own
 * allocations; fork handlers; the at-exit report. */
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "hp.h"

_Atomic int hp_state = HP_ST_UNINIT;
/* 0 until ready: every allocation takes the slow path, which initialises. */
size_t hp_threshold = 0;
HP_TLS int hp_in_hook;
int hp_in_child;
struct hp_real hp_real;
const hp_backend_t *hp_backend = &hp_backend_none;

/* ---- bootstrap arena ---- */
#define ARENA_SIZE HP_ARENA_SIZE
#define arena hp_arena
_Alignas(4096) char hp_arena[HP_ARENA_SIZE];
static _Atomic size_t arena_used;

void *hp_arena_alloc(size_t n, size_t align)
{
	if (align < 16)
		align = 16;
	if (n > ARENA_SIZE || align > 4096)
		return NULL;
	/* 16-byte header before each allocation holds its size. */
	size_t need = n + align + 16;
	size_t at = atomic_fetch_add_explicit(&arena_used, need,
					      memory_order_relaxed);
	if (at + need > ARENA_SIZE)
		return NULL;
	uintptr_t p = ((uintptr_t)arena + at + 16 + align - 1) & ~(align - 1);
	((size_t *)p)[-1] = n;
	return (void *)p; /* static memory: already zero */
}

size_t hp_arena_size(const void *p) { return ((const size_t *)p)[-1]; }

/* ---- symbols ---- */
static void *next_sym(const char *name)
{
	void *p = dlsym(RTLD_NEXT, name);
	if (!p)
		hp_fatal("cannot resolve %s in the next library: hostpin "
			 "must be preloaded into a dynamically linked program",
			 name);
	return p;
}

static void resolve(void)
{
#define R(f) *(void **)&hp_real.f = next_sym(#f)
	R(malloc); R(free); R(calloc); R(realloc); R(posix_memalign);
	R(aligned_alloc); R(memalign); R(valloc); R(pvalloc);
	R(malloc_usable_size); R(mmap); R(munmap); R(mremap); R(madvise);
#undef R
}

/* ---- fork ---- */
static void fork_prepare(void)
{
	hp_cache_lock();
	hp_registry_lock(&hp_reg);
}
static void fork_parent(void)
{
	hp_registry_unlock(&hp_reg);
	hp_cache_unlock();
}
static void fork_child(void)
{
	hp_registry_unlock(&hp_reg);
	hp_cache_unlock();
	hp_in_child = 1;
	hp_block_fork_child();
}

void *hp_next_sym(_Atomic(void *) *slot, const char *name)
{
	void *p = atomic_load_explicit(slot, memory_order_acquire);
	if (p == NULL) {
		hp_in_hook++; /* dlsym may allocate */
		p = dlsym(RTLD_NEXT, name);
		hp_in_hook--;
		if (p == NULL)
			hp_fatal("%s called but no library after hostpin "
				 "defines it", name);
		/* release: pairs with the acquire above. */
		atomic_store_explicit(slot, p, memory_order_release);
	}
	return p;
}

int hp_hooks_active(void)
{
	return atomic_load_explicit(&hp_state, memory_order_acquire) ==
		   HP_ST_READY &&
	       !hp_in_hook && !hp_in_child;
}

static const hp_backend_t *pick_backend(void)
{
	switch (hp_opt[HP_OPT_BACKEND]) {
	case HP_BACKEND_MLOCK:
		return &hp_backend_mlock;
	case HP_BACKEND_NONE:
		return &hp_backend_none;
	case HP_BACKEND_CUDA:
		return hp_opt[HP_OPT_REGISTER_DEVICE] ? &hp_backend_cuda
						      : &hp_backend_none;
	case HP_BACKEND_LEVEL_ZERO:
		return hp_opt[HP_OPT_REGISTER_DEVICE] ? &hp_backend_level_zero
						      : &hp_backend_none;
	default:
		/* auto: the device backend the program turns out to use;
		 * blocks stay pending (and cost nothing) until then. */
		return hp_opt[HP_OPT_REGISTER_DEVICE] ? &hp_backend_auto
						      : &hp_backend_none;
	}
}

void hp_init_slow(void)
{
	if (hp_in_hook)
		return; /* recursion from inside init: caller uses the arena */
	int expect = HP_ST_UNINIT;
	if (!atomic_compare_exchange_strong(&hp_state, &expect, HP_ST_BUSY)) {
		/* Another thread is initialising: wait for it. */
		while (atomic_load_explicit(&hp_state, memory_order_acquire) ==
		       HP_ST_BUSY)
			sched_yield();
		return;
	}
	hp_in_hook++;
	/* The bootstrap arena counts as inside the registry's bounds, so that
	 * free()'s one bounds test also sends arena pointers to its slow path,
	 * before the first of them exists. */
	hp_registry_reserve_bounds(&hp_reg, (uintptr_t)hp_arena,
				   (uintptr_t)hp_arena + HP_ARENA_SIZE);
	resolve();
	int bad = hp_options_load();
	hp_log_level = (int)hp_opt[HP_OPT_LOG];
	hp_log_open();
	if (hp_opt[HP_OPT_STATS] && hp_log_fd == 2) {
		/* Programs such as coreutils close stderr in an atexit
		 * handler, before our report: keep a private duplicate, high
		 * and close-on-exec, out of the program's way. */
		int fd = fcntl(2, F_DUPFD_CLOEXEC, 1000);
		if (fd >= 0)
			hp_log_fd = fd;
	}
	int st = HP_ST_READY;
	if (bad && hp_opt[HP_OPT_STRICT])
		hp_fatal("HOSTPIN_STRICT=1 and %d invalid knob(s): aborting",
			 bad);
	if (bad || hp_opt[HP_OPT_DISABLE])
		st = HP_ST_PASSTHROUGH;
	if (st == HP_ST_READY) {
		hp_backend = pick_backend();
		if (hp_backend->probe()) {
			hp_log(HP_LOG_WARN, "backend %s unavailable; pinning "
			       "nothing", hp_backend->name);
			hp_backend = &hp_backend_none;
		}
		pthread_atfork(fork_prepare, fork_parent, fork_child);
		hp_threshold = (size_t)hp_opt[HP_OPT_THRESHOLD];
		hp_log(HP_LOG_INFO, "ready: backend %s", hp_backend->name);
		hp_options_dump();
	} else {
		hp_threshold = SIZE_MAX;
		hp_log(HP_LOG_INFO, "pass-through");
	}
	hp_in_hook--;
	/* release: pairs with the acquire in the waiting loop above, so
	 * waiters see the symbols and options. */
	atomic_store_explicit(&hp_state, st, memory_order_release);
}

__attribute__((constructor)) static void hp_ctor(void)
{
	if (atomic_load(&hp_state) == HP_ST_UNINIT)
		hp_init_slow();
}

__attribute__((destructor)) static void hp_dtor(void)
{
	if (atomic_load(&hp_state) == HP_ST_READY)
		hp_stats_report();
}
