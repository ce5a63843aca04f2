/* hostpin's own heap: the page-aligned mappings that serve large
 * malloc-family allocations, and the ring of recently freed ones that turns
 * a double free into a clear message.  Called from wrap_malloc.c with
 * hp_in_hook raised. */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "record.h"

/* Recently freed blocks, for a clear double-free message. */
#define FREED_RING 256
static _Atomic uintptr_t freed_ring[FREED_RING];
static _Atomic unsigned freed_at;

static void remember_freed(uintptr_t base)
{
	unsigned i = atomic_fetch_add_explicit(&freed_at, 1,
					       memory_order_relaxed);
	atomic_store_explicit(&freed_ring[i % FREED_RING], base,
			      memory_order_relaxed);
}

static int recently_freed_and_unmapped(uintptr_t p)
{
	unsigned char v;
	if (p & (HP_PAGE_SIZE - 1))
		return 0;
	for (int i = 0; i < FREED_RING; i++)
		if (atomic_load_explicit(&freed_ring[i],
					 memory_order_relaxed) == p)
			/* ENOMEM from mincore: nothing is mapped there, so
			 * this cannot be a live block of any allocator. */
			return mincore((void *)p, HP_PAGE_SIZE, &v) != 0 &&
			       errno == ENOMEM;
	return 0;
}

#define HUGE ((size_t)2 << 20)

/* A private anonymous mapping of len bytes (a page multiple) aligned to
 * align, and to 2 MiB from 2 MiB up: the registry then stores the block a
 * slot per 2 MiB (none at its head), and transparent huge pages can back
 * it.  NULL if it cannot be mapped. */
static void *map_aligned(size_t len, size_t align, int prot, int flags)
{
	if (len >= HUGE && align < HUGE)
		align = HUGE;
	size_t extra = align > HP_PAGE_SIZE ? align - HP_PAGE_SIZE : 0;
	if (len + extra < len)
		return NULL;
	char *m = hp_real.mmap(NULL, len + extra, prot,
			       MAP_PRIVATE | MAP_ANONYMOUS | flags, -1, 0);
	if (m == MAP_FAILED)
		return NULL;
	uintptr_t base = (uintptr_t)m;
	if (extra) {
		uintptr_t b = (base + align - 1) & ~(uintptr_t)(align - 1);
		if (b > base)
			hp_real.munmap(m, b - base);
		if (base + extra > b)
			hp_real.munmap((void *)(b + len), base + extra - b);
		base = b;
	}
	return (void *)base;
}

void *hp_block_alloc(size_t n, size_t align, int zero)
{
	if (n > PTRDIFF_MAX) {
		errno = ENOMEM;
		return NULL;
	}
	size_t len = hp_page_up(n);
	size_t got;
	hp_coverage_poll(); /* a cached block may be registered */
	void *hit = hp_cache_take(len, align, &got);
	if (hit) {
		/* Reused memory: calloc zeroes all of the usable size, as
		 * glibc does. */
		if (zero)
			memset(hit, 0, got);
		/* a block cached while pending (freed by the driver inside
		 * its own call, say) is adopted now, as after a miss */
		hp_adopt_pending();
		return hit;
	}
	size_t huge = HUGE;
	void *m = map_aligned(len, align, PROT_READ | PROT_WRITE, 0);
	if (m == NULL)
		return NULL; /* the caller falls back to the next allocator */
	uintptr_t base = (uintptr_t)m;
	/* Huge pages from the first touch for blocks the program fills; not
	 * for calloc, whose untouched pages must stay uncommitted (one touch
	 * would commit 2 MiB).  Pinning advises those before pre-faulting. */
	if (!zero && len >= huge && hp_thp_ok())
		hp_real.madvise((void *)base, len, MADV_HUGEPAGE);
	if (hp_track(base, len, HOSTPIN_KIND_MALLOC)) {
		hp_real.munmap((void *)base, len);
		return NULL;
	}
	/* The device may have become ready since earlier blocks were left
	 * pending: adopt them now too. */
	hp_adopt_pending();
	return (void *)base;
}

/* The record of the malloc block that p is the base of; aborts on interior
 * pointers and double frees of hostpin blocks, as glibc does for its own. */
static hp_rec_t *own_block(void *p, hp_snap_t *s, const char *fn)
{
	hp_rec_t *r = hp_registry_lookup(&hp_reg, (uintptr_t)p, s);
	/* Adoption, madvise or a foreign registration holds it briefly.  A
	 * pointer inside a block being released may be memory the kernel
	 * handed out again: a block grown by mremap leaves its old place
	 * before its record goes (grow_block), so wait for the record. */
	struct timespec t0 = {0, 0};
	for (unsigned spins = 0;
	     r && (hp_word_state(s->word) == HP_REC_BUSY ||
		   (hp_word_state(s->word) == HP_REC_RELEASING &&
		    s->base != (uintptr_t)p && !hp_waited(&t0, spins, 10)));
	     spins++) {
		sched_yield();
		r = hp_registry_lookup(&hp_reg, (uintptr_t)p, s);
	}
	if (r == NULL) {
		if (recently_freed_and_unmapped((uintptr_t)p))
			hp_fatal("%s(): double free of hostpin block %p", fn,
				 p);
		return NULL;
	}
	if (!(hp_rflags(r) & HOSTPIN_KIND_MALLOC))
		return NULL; /* an application mapping: not a heap pointer */
	if (s->base != (uintptr_t)p)
		hp_fatal("%s(): invalid pointer %p: it lies inside hostpin "
			 "block %p (%zu bytes) but is not its start",
			 fn, p, (void *)s->base, s->len);
	if (hp_word_state(s->word) != HP_REC_LIVE)
		hp_fatal("%s(): double free of hostpin block %p", fn, p);
	return r;
}

static void release_block(hp_rec_t *r, hp_snap_t *s, const char *fn)
{
	if (!hp_claim_release(r, s))
		hp_fatal("%s(): double free of hostpin block %p (racing "
			 "release)", fn, (void *)s->base);
	if (hp_cache_keep(r, s))
		return;
	if (hp_untrack_release(r, s) == 0) {
		hp_real.munmap((void *)s->base, s->len);
		remember_freed(s->base);
	}
}

int hp_block_free(void *p)
{
	hp_snap_t s;
	hp_rec_t *r = own_block(p, &s, "free");
	if (r == NULL)
		return 0;
	release_block(r, &s, "free");
	return 1;
}

size_t hp_block_usable(const void *p, int *handled)
{
	hp_snap_t s;
	hp_rec_t *r = own_block((void *)p, &s, "malloc_usable_size");
	*handled = r != NULL;
	return r ? s.len : 0;
}

/* Grow a claimed block by moving its pages rather than copying them
 * (mremap, as glibc grows its mmapped chunks), with half again as much
 * headroom, so that a buffer grown in small steps costs amortised O(1) per
 * byte even when each move re-pins it.  The block is unpinned and forgotten
 * before its pages move and tracked and pinned again at the new place
 * (invariant 1).  NULL, with the block still tracked at its old place
 * (unless it had to be leaked: *leaked), if it cannot grow this way. */
static void *grow_block(hp_rec_t *r, hp_snap_t *s, size_t n, int *leaked)
{
	size_t len = hp_page_up(n), more = s->len + s->len / 2;
	if (more > len && more > s->len)
		len = hp_page_up(more);
	/* relaxed: a count (copy.c); the block keeps it where it goes */
	uint64_t copies = atomic_load_explicit(&r->user[HP_U_COPIES],
					       memory_order_relaxed);
	if (hp_untrack(r, s)) {
		*leaked = 1; /* still registered: never moved or reused */
		return NULL;
	}
	void *q = hp_real.mremap((void *)s->base, s->len, len, MREMAP_MAYMOVE);
	if (q == MAP_FAILED) {
		hp_track_as(s->base, s->len, HOSTPIN_KIND_MALLOC, 0, copies);
		return NULL;
	}
	if (hp_track_as((uintptr_t)q, len, HOSTPIN_KIND_MALLOC, 0, copies) == 0)
		return q;
	/* Cannot be tracked (no memory for the registry): hand the caller
	 * memory of the next allocator's, which its free understands. */
	void *m = hp_real.malloc(n);
	if (m)
		memcpy(m, q, s->len < n ? s->len : n);
	hp_real.munmap(q, len);
	return m;
}

void *hp_block_realloc(void *p, size_t n, int *handled)
{
	hp_snap_t s;
	hp_rec_t *r = own_block(p, &s, "realloc");
	*handled = r != NULL;
	if (r == NULL)
		return NULL;
	if (n == 0) { /* glibc: free and return NULL */
		release_block(r, &s, "realloc");
		return NULL;
	}
	/* Stays a hostpin block and fits without wasting over half: keep. */
	if (n >= hp_threshold && n <= s.len && n > s.len / 2)
		return p;
	/* Growing: move the pages (a block the program registered itself
	 * stays where it is: the program holds its address; a registered one
	 * while a CUDA graph capture holds hostpin back is copied, its
	 * release deferred: it cannot be unregistered now). */
	if (n > s.len && n <= PTRDIFF_MAX && !(hp_rflags(r) & HP_F_FOREIGN) &&
	    !((hp_rflags(r) & HOSTPIN_REGISTERED) && hp_capture_busy())) {
		if (!hp_claim_release(r, &s))
			hp_fatal("realloc(): double free of hostpin block %p "
				 "(racing release)", p);
		int leaked = 0;
		void *q = grow_block(r, &s, n, &leaked);
		if (q)
			return q;
		if (leaked) { /* copy out; the old block is never reused */
			q = hp_block_alloc(n, 0, 0);
			if (q == NULL)
				q = hp_real.malloc(n);
			if (q)
				memcpy(q, p, s.len);
			else
				errno = ENOMEM;
			return q;
		}
		/* tracked again at its old place: copy as before */
		r = own_block(p, &s, "realloc");
		if (r == NULL)
			return NULL; /* cannot happen: it is ours again */
	}
	void *q = n >= hp_threshold ? hp_block_alloc(n, 0, 0) : NULL;
	if (q == NULL)
		q = hp_real.malloc(n);
	if (q == NULL) {
		errno = ENOMEM;
		return NULL; /* old block untouched, as realloc requires */
	}
	memcpy(q, p, n < s.len ? n : s.len);
	release_block(r, &s, "realloc");
	return q;
}
