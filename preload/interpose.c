/* The exported libc names.  Each wrapper holds no policy: a threshold or
 * bounds test on the fast path, then a call into block.c with hp_in_hook
 * raised so that whatever hostpin does underneath goes to the next
 * allocator (invariant 5). */
#include <errno.h>
#include <stdarg.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "hp.h"

#define ENTER (hp_in_hook++)
#define LEAVE (hp_in_hook--)

static int ready(void)
{
	int st = atomic_load_explicit(&hp_state, memory_order_acquire);
	if (hp_unlikely(st == HP_ST_UNINIT || st == HP_ST_BUSY)) {
		hp_init_slow();
		st = atomic_load_explicit(&hp_state, memory_order_acquire);
	}
	return st == HP_ST_READY && !hp_in_hook;
}

/* Symbols resolved (init done or passed through) and not recursing? */
static int have_real(void)
{
	ready();
	return hp_real.malloc != NULL;
}

static int pow2(size_t a) { return a && !(a & (a - 1)); }

/* Should hostpin serve n bytes?  The first test is the cheap filter; before
 * initialisation hp_threshold is 0, so it is tested again once ready() has
 * initialised. */
static int want_large(size_t n)
{
	return n >= hp_threshold && ready() && n >= hp_threshold;
}

static void *large_alloc_z(size_t n, size_t align, int zero)
{
	ENTER;
	void *p = hp_block_alloc(n, align, zero);
	LEAVE;
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
	return hp_real.malloc(n);
}

HP_EXPORT void *malloc(size_t n)
{
	if (hp_likely(n < hp_threshold))
		return hp_real.malloc(n);
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
		hp_real.free(p);
		return;
	}
	if (!have_real())
		return; /* nothing but the arena exists yet */
	ENTER;
	int mine = hp_block_free(p);
	LEAVE;
	if (!mine)
		hp_real.free(p);
}

HP_EXPORT void free(void *p)
{
	if (hp_likely(!hp_registry_maybe(&hp_reg, (uintptr_t)p))) {
		if (hp_likely(p != NULL))
			hp_real.free(p);
		return;
	}
	free_slow(p);
}

HP_EXPORT void *calloc(size_t n, size_t m)
{
	size_t t;
	if (__builtin_mul_overflow(n, m, &t)) {
		errno = ENOMEM;
		return NULL;
	}
	if (hp_likely(t < hp_threshold))
		return hp_real.calloc(n, m);
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
	return hp_real.calloc(n, m);
}

HP_EXPORT void *realloc(void *p, size_t n)
{
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
	if (hp_likely(n < hp_threshold &&
		      !hp_registry_maybe(&hp_reg, (uintptr_t)p)))
		return hp_real.realloc(p, n);
	if (!have_real())
		return NULL;
	int mine = 0;
	void *q;
	ENTER;
	q = hp_block_realloc(p, n, &mine);
	LEAVE;
	if (mine)
		return q;
	/* p belongs to the next allocator. */
	if (want_large(n)) {
		size_t old = hp_real.malloc_usable_size(p);
		q = large_alloc(n, 0);
		if (q) {
			memcpy(q, p, old < n ? old : n);
			hp_real.free(p);
			return q;
		}
	}
	return hp_real.realloc(p, n);
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
	return hp_real.posix_memalign(out, align, n);
}

/* memalign and aligned_alloc share glibc's rules; a non-power-of-two
 * alignment goes to glibc, which rounds it or refuses it. */
static void *aligned(size_t align, size_t n, void *(*real)(size_t, size_t))
{
	if (want_large(n) && pow2(align) &&
	    align <= ((size_t)1 << 40)) {
		void *p = large_alloc(n, align);
		if (p)
			return p;
	}
	if (!have_real())
		return hp_arena_alloc(n, align);
	return (real == NULL ? hp_real.memalign : real)(align, n);
}

HP_EXPORT void *memalign(size_t align, size_t n)
{
	return aligned(align, n, hp_real.memalign);
}

HP_EXPORT void *aligned_alloc(size_t align, size_t n)
{
	return aligned(align, n, hp_real.aligned_alloc);
}

HP_EXPORT void *valloc(size_t n)
{
	if (want_large(n)) {
		void *p = large_alloc(n, 0); /* page aligned */
		if (p)
			return p;
	}
	return have_real() ? hp_real.valloc(n) : hp_arena_alloc(n, 4096);
}

HP_EXPORT void *pvalloc(size_t n)
{
	size_t r = (n + HP_PAGE_SIZE - 1) & ~(HP_PAGE_SIZE - 1);
	if (r >= n && want_large(n)) {
		void *p = large_alloc(r, 0);
		if (p)
			return p;
	}
	return have_real() ? hp_real.pvalloc(n) : hp_arena_alloc(r, 4096);
}

HP_EXPORT size_t malloc_usable_size(void *p)
{
	if (p == NULL)
		return 0;
	if (hp_arena_owns(p))
		return hp_arena_size(p);
	if (hp_registry_maybe(&hp_reg, (uintptr_t)p)) {
		int mine = 0;
		ENTER;
		size_t n = hp_block_usable(p, &mine);
		LEAVE;
		if (mine)
			return n;
	}
	return hp_real.malloc_usable_size(p);
}

/* ---- mappings ---- */

static int may_overlap(const void *a, size_t len)
{
	uintptr_t lo = atomic_load_explicit(&hp_reg.lo, memory_order_relaxed);
	uintptr_t hi = atomic_load_explicit(&hp_reg.hi, memory_order_relaxed);
	return (uintptr_t)a < hi && (uintptr_t)a + len > lo;
}

static void *raw_mmap(void *a, size_t len, int prot, int flags, int fd,
		      off_t off)
{
	if (hp_real.mmap)
		return hp_real.mmap(a, len, prot, flags, fd, off);
	/* Before the symbols exist (during our own start-up). */
	return (void *)syscall(SYS_mmap, a, len, prot, flags, fd, off);
}

HP_EXPORT void *mmap(void *a, size_t len, int prot, int flags, int fd,
		     off_t off)
{
	if (hp_in_hook || !ready())
		return raw_mmap(a, len, prot, flags, fd, off);
	if ((flags & MAP_FIXED) && may_overlap(a, len)) {
		/* MAP_FIXED replaces what is there: unpin it first. */
		ENTER;
		hp_range_release((uintptr_t)a, len);
		LEAVE;
	}
	void *p = hp_real.mmap(a, len, prot, flags, fd, off);
	if (p != MAP_FAILED && len >= hp_threshold) {
		int e = errno;
		ENTER;
		hp_mmap_track(p, len, prot, flags, fd,
			      __builtin_return_address(0));
		LEAVE;
		errno = e;
	}
	return p;
}

HP_EXPORT void *mmap64(void *a, size_t len, int prot, int flags, int fd,
		       off_t off) __attribute__((alias("mmap")));

HP_EXPORT int munmap(void *a, size_t len)
{
	if (!hp_in_hook && ready() && may_overlap(a, len)) {
		ENTER;
		hp_range_release((uintptr_t)a, len);
		LEAVE;
	}
	if (hp_real.munmap)
		return hp_real.munmap(a, len);
	return (int)syscall(SYS_munmap, a, len);
}

HP_EXPORT void *mremap(void *old, size_t oldlen, size_t newlen, int flags, ...)
{
	void *new_addr = NULL;
	if (flags & MREMAP_FIXED) {
		va_list ap;
		va_start(ap, flags);
		new_addr = va_arg(ap, void *);
		va_end(ap);
	}
	if (!hp_in_hook && ready() &&
	    (may_overlap(old, oldlen) ||
	     ((flags & MREMAP_FIXED) && may_overlap(new_addr, newlen)))) {
		ENTER;
		void *r = hp_mremap_do(old, oldlen, newlen, flags, new_addr);
		LEAVE;
		return r;
	}
	if (!hp_real.mremap)
		return (void *)syscall(SYS_mremap, old, oldlen, newlen, flags,
				       new_addr);
	return hp_real.mremap(old, oldlen, newlen, flags, new_addr);
}

HP_EXPORT int madvise(void *a, size_t len, int advice)
{
	int discard = advice == MADV_DONTNEED || advice == MADV_FREE ||
		      advice == MADV_REMOVE;
	if (discard && !hp_in_hook && ready() && may_overlap(a, len)) {
		ENTER;
		int r = hp_madvise_do(a, len, advice);
		LEAVE;
		return r;
	}
	if (!hp_real.madvise)
		return (int)syscall(SYS_madvise, a, len, advice);
	return hp_real.madvise(a, len, advice);
}
