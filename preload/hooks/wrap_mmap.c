/* The exported mapping names: mmap, munmap, mremap, madvise.  A bounds
 * test against the registry, then one call into maps.c (madvise:
 * maps_advise.c) with hp_in_hook raised; everything else goes straight to
 * the next definition. */
#include <errno.h>
#include <stdarg.h>
#include <sys/mman.h>

#include "../hp.h"

#ifndef MADV_DONTNEED_LOCKED
#define MADV_DONTNEED_LOCKED 24 /* Linux 5.18; headers may lack it */
#endif

#define ready hp_ready

static int may_overlap(const void *a, size_t len)
{
	uintptr_t lo = atomic_load_explicit(&hp_reg.lo, memory_order_relaxed);
	uintptr_t hi = atomic_load_explicit(&hp_reg.hi, memory_order_relaxed);
	return (uintptr_t)a < hi && (uintptr_t)a + len > lo;
}

HP_EXPORT void *mmap(void *a, size_t len, int prot, int flags, int fd,
		     off_t off)
{
	if (hp_in_hook || !ready())
		return HP_REAL(mmap)(a, len, prot, flags, fd, off);
	if ((flags & MAP_FIXED) && may_overlap(a, len)) {
		/* MAP_FIXED replaces what is there: unpin it first; a range
		 * whose release the driver refused is never replaced. */
		int r;
		HP_GUARDED(r = hp_fixed_release((uintptr_t)a, len));
		if (r)
			return MAP_FAILED; /* ENOMEM, nothing changed */
	}
	void *p = HP_REAL(mmap)(a, len, prot, flags, fd, off);
	if (p != MAP_FAILED && len >= HP_THRESHOLD()) {
		int e = errno;
		HP_GUARDED(hp_mmap_track(p, len, prot, flags,
					 __builtin_return_address(0)));
		errno = e;
	}
	return p;
}

HP_EXPORT void *mmap64(void *a, size_t len, int prot, int flags, int fd,
		       off_t off)
{
	return mmap(a, len, prot, flags, fd, off);
}

HP_EXPORT int munmap(void *a, size_t len)
{
	if (!hp_in_hook && ready() && may_overlap(a, len)) {
		/* what stays registered (the driver refused) stays mapped */
		int r;
		HP_GUARDED(r = hp_munmap_range(a, len));
		return r;
	}
	return HP_REAL(munmap)(a, len);
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
		void *r;
		int leaked;
		HP_GUARDED(leaked = hp_leaked_in((uintptr_t)old, oldlen) ||
				    ((flags & MREMAP_FIXED) &&
				     hp_leaked_in((uintptr_t)new_addr, newlen)));
		if (leaked) {
			/* never moved, shrunk or replaced (invariant 1) */
			errno = ENOMEM;
			return MAP_FAILED;
		}
		HP_GUARDED(r = hp_mremap_do(old, oldlen, newlen, flags,
					    new_addr));
		return r;
	}
	return HP_REAL(mremap)(old, oldlen, newlen, flags, new_addr);
}

HP_EXPORT int madvise(void *a, size_t len, int advice)
{
	int discard = advice == MADV_DONTNEED || advice == MADV_FREE ||
		      advice == MADV_REMOVE || advice == MADV_DONTNEED_LOCKED;
	if (discard && !hp_in_hook && ready() && may_overlap(a, len)) {
		int r;
		HP_GUARDED(r = hp_madvise_do(a, len, advice));
		return r;
	}
	/* The program's own huge-page advice: passed through, and never
	 * undone by hostpin's advice when it pre-faults the block. */
	if ((advice == MADV_HUGEPAGE || advice == MADV_NOHUGEPAGE) &&
	    !hp_in_hook && ready() && may_overlap(a, len))
		HP_GUARDED(hp_thp_advised((uintptr_t)a, len));
	return HP_REAL(madvise)(a, len, advice);
}
