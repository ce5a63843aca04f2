/* The exported malloc-family names.  Each wrapper holds no policy: a
 * threshold or bounds test on the fast path, then one call into heap.c with
 * hp_in_hook raised so that whatever hostpin does underneath goes to the
 * next allocator (invariant 5). */
#include <errno.h>
#include <string.h>

#include "../hp.h"
#include "../base/resolve.h"

#define ready hp_ready

/* Symbols resolved (init done or passed through)? */
static int have_real(void)
{
	ready();
	int st = atomic_load_explicit(&hp_state, memory_order_acquire);
	return st == HP_ST_READY || st == HP_ST_PASSTHROUGH;
}

static int pow2(size_t a) { return a && !(a & (a - 1)); }

/* Should hostpin serve n bytes?  The first test is the cheap filter; before
 * initialisation the threshold is 0, so it is tested again once ready() has
 * initialised. */
static int want_large(size_t n)
{
	return n >= HP_THRESHOLD() && ready() && n >= HP_THRESHOLD();
}

/* The exported wrapper's caller, set on its way to a large block: the pin
 * policy leaves a block the GPU stack allocates for itself pending. */
static HP_TLS const void *caller;
#define CALLER() (caller = __builtin_return_address(0))

static void *large_alloc_z(size_t n, size_t align, int zero)
{
	void *p;
	int dev;
	hp_alloc_ra = caller;
	/* A block a GPU driver, runtime or loader allocates for itself (USM
	 * host and shared memory inside zeMemAllocHost/zeMemAllocShared,
	 * which the driver registers itself; command and staging buffers) is
	 * the next allocator's: never imported nor registered by hostpin
	 * (invariant 8), and no call into the driver from inside its own. */
	HP_GUARDED(dev = hp_alloc_from_device());
	if (dev) {
		hp_alloc_ra = caller = NULL;
		return NULL;
	}
	HP_GUARDED(p = hp_block_alloc(n, align, zero));
	/* releases that waited for a driver's own call to return */
	if (!hp_in_hook)
		hp_retry_deferred_driver();
	hp_alloc_ra = caller = NULL;
	return p;
}

static void *large_alloc(size_t n, size_t align)
{
	return large_alloc_z(n, align, 0);
}

static void *malloc_slow(size_t n)
{
	if (!have_real()) {
		void *p = hp_arena_alloc(n, 16);
		if (!p)
			errno = ENOMEM;
		return p;
	}
	if (want_large(n)) {
		void *p = large_alloc(n, 0);
		if (p)
			return p;
	}
	return HP_REAL(malloc)(n);
}

HP_EXPORT void *malloc(size_t n)
{
	if (hp_likely(n < HP_THRESHOLD()))
		return HP_REAL(malloc)(n);
	CALLER();
	return malloc_slow(n);
}

/* free() of a pointer inside the registry's bounds (which also cover the
 * bootstrap arena, so the fast path needs no arena test). */
static __attribute__((noinline)) void free_slow(void *p)
{
	if (hp_arena_owns(p))
		return; /* bootstrap arena: never reused */
	/* Thread arenas live among our mappings: a pointer that is not page
	 * aligned and in no range is the next allocator's. */
	hp_snap_t s;
	if (((uintptr_t)p & (HP_PAGE_SIZE - 1)) &&
	    !hp_registry_lookup(&hp_reg, (uintptr_t)p, &s)) {
		HP_REAL(free)(p);
		return;
	}
	if (!have_real())
		return; /* nothing but the arena exists yet */
	int mine;
	/* a block the driver frees inside one of its own calls: its release
	 * waits until the call returned (invariant 11, pin.c) */
	hp_alloc_ra = caller;
	HP_GUARDED(mine = hp_block_free(p));
	if (!mine)
		HP_REAL(free)(p);
	/* releases that waited for a driver's own call to return */
	if (!hp_in_hook)
		hp_retry_deferred_driver();
	hp_alloc_ra = caller = NULL;
}

HP_EXPORT void free(void *p)
{
	if (hp_likely(!hp_registry_maybe(&hp_reg, (uintptr_t)p))) {
		if (hp_likely(p != NULL))
			HP_REAL(free)(p);
		return;
	}
	CALLER();
	free_slow(p);
}

HP_EXPORT void *calloc(size_t n, size_t m)
{
	CALLER();
	size_t t;
	if (__builtin_mul_overflow(n, m, &t)) {
		errno = ENOMEM;
		return NULL;
	}
	if (hp_likely(t < HP_THRESHOLD()))
		return HP_REAL(calloc)(n, m);
	if (!have_real()) {
		void *p = hp_arena_alloc(t, 16); /* static: zero */
		if (!p)
			errno = ENOMEM;
		return p;
	}
	if (want_large(t)) {
		void *p = large_alloc_z(t, 0, 1);
		if (p)
			return p;
	}
	return HP_REAL(calloc)(n, m);
}

HP_EXPORT void *realloc(void *p, size_t n)
{
	CALLER();
	if (p == NULL)
		return malloc(n);
	if (hp_unlikely(hp_arena_owns(p))) {
		if (n == 0)
			return NULL;
		void *q = malloc(n);
		if (q) {
			size_t o = hp_arena_size(p);
			memcpy(q, p, o < n ? o : n);
		}
		return q;
	}
	if (hp_likely(n < HP_THRESHOLD() &&
		      !hp_registry_maybe(&hp_reg, (uintptr_t)p)))
		return HP_REAL(realloc)(p, n);
	if (!have_real())
		return NULL;
	int mine = 0;
	void *q;
	HP_GUARDED(q = hp_block_realloc(p, n, &mine));
	if (mine)
		return q;
	/* p belongs to the next allocator. */
	if (want_large(n)) {
		size_t old = HP_REAL(malloc_usable_size)(p);
		q = large_alloc(n, 0);
		if (q) {
			memcpy(q, p, old < n ? old : n);
			HP_REAL(free)(p);
			return q;
		}
	}
	return HP_REAL(realloc)(p, n);
}

HP_EXPORT void *reallocarray(void *p, size_t n, size_t m)
{
	size_t t;
	if (__builtin_mul_overflow(n, m, &t)) {
		errno = ENOMEM;
		return NULL;
	}
	return realloc(p, t);
}

HP_EXPORT int posix_memalign(void **out, size_t align, size_t n)
{
	CALLER();
	if (want_large(n) && pow2(align) &&
	    align % sizeof(void *) == 0) {
		void *p = large_alloc(n, align);
		if (p) {
			*out = p;
			return 0;
		}
	}
	if (!have_real()) {
		void *p = hp_arena_alloc(n, align);
		if (!p)
			return ENOMEM;
		*out = p;
		return 0;
	}
	return HP_REAL(posix_memalign)(out, align, n);
}

/* memalign and aligned_alloc share glibc's rules; a non-power-of-two
 * alignment goes to glibc, which rounds it or refuses it. */
static void *aligned(size_t align, size_t n, int is_aligned_alloc)
{
	if (want_large(n) && pow2(align) &&
	    align <= ((size_t)1 << 40)) {
		void *p = large_alloc(n, align);
		if (p)
			return p;
	}
	if (!have_real())
		return hp_arena_alloc(n, align);
	return is_aligned_alloc ? HP_REAL(aligned_alloc)(align, n)
				: HP_REAL(memalign)(align, n);
}

HP_EXPORT void *memalign(size_t align, size_t n)
{
	CALLER();
	return aligned(align, n, 0);
}

HP_EXPORT void *aligned_alloc(size_t align, size_t n)
{
	CALLER();
	return aligned(align, n, 1);
}

HP_EXPORT void *valloc(size_t n)
{
	CALLER();
	if (want_large(n)) {
		void *p = large_alloc(n, 0); /* page aligned */
		if (p)
			return p;
	}
	return have_real() ? HP_REAL(valloc)(n) : hp_arena_alloc(n, 4096);
}

HP_EXPORT void *pvalloc(size_t n)
{
	CALLER();
	size_t r = (n + HP_PAGE_SIZE - 1) & ~(HP_PAGE_SIZE - 1);
	if (r >= n && want_large(n)) {
		void *p = large_alloc(r, 0);
		if (p)
			return p;
	}
	return have_real() ? HP_REAL(pvalloc)(n) : hp_arena_alloc(r, 4096);
}

HP_EXPORT size_t malloc_usable_size(void *p)
{
	if (p == NULL)
		return 0;
	if (hp_arena_owns(p))
		return hp_arena_size(p);
	if (hp_registry_maybe(&hp_reg, (uintptr_t)p)) {
		int mine = 0;
		size_t n;
		HP_GUARDED(n = hp_block_usable(p, &mine));
		if (mine)
			return n;
	}
	return HP_REAL(malloc_usable_size)(p);
}

