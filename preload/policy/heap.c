/* hostpin's own heap: the page-aligned mappings that serve large
 * malloc-family allocations, and the ring of recently freed ones that turns
 * a double free into a clear message.  Called from wrap_malloc.c with
 * hp_in_hook raised. */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "../record.h"

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
 * pointers and double frees of hostpin blocks, as glibc does for its own.
 * *handed (free and realloc only), while a capture parks the registration
 * thread holding the block: 2 (free) the thread releases the block itself;
 * 3 (realloc) the block stays the thread's until then (mapped, cancelled),
 * to be moved.  NULL then. */
static hp_rec_t *own_block(void *p, hp_snap_t *s, const char *fn,
			   int *handed)
{
	/* free() and realloc cancel a registration in progress (after one
	 * piece at most; free() during a capture that parked it: at once);
	 * malloc_usable_size waits for it (asleep) */
	int realloc_ = strcmp(fn, "realloc") == 0;
	int (*held)(const hp_rec_t *) =
	    handed ? (realloc_ ? hp_register_cancel_realloc
			       : hp_register_cancel_free)
	    : realloc_ ? hp_register_cancel
		       : hp_register_wait;
	hp_rec_t *r = hp_registry_lookup(&hp_reg, (uintptr_t)p, s);
	/* Adoption, madvise or a foreign registration holds it briefly.  A
	 * pointer inside a block being released: wait for the record (a
	 * safeguard: every release, grow_block's included, takes the record
	 * out before the kernel can hand the range out again). */
	struct timespec t0 = {0, 0};
	for (unsigned spins = 0;
	     r && (hp_word_state(s->word) == HP_REC_BUSY ||
		   (hp_word_state(s->word) == HP_REC_RELEASING &&
		    s->base != (uintptr_t)p && !hp_waited(&t0, spins, 10)));
	     spins++) {
		/* the registration thread's block: after one piece at most
		 * (free, realloc), asleep */
		int h = hp_word_state(s->word) == HP_REC_BUSY &&
				s->base == (uintptr_t)p
			    ? held(r)
			    : 0;
		if (h >= 2) {
			*handed = h;
			return NULL;
		}
		if (!h)
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
	hp_test_pause("release_claimed"); /* tests: r RELEASING */
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
	int handed = 0;
	hp_rec_t *r = own_block(p, &s, "free", &handed);
	if (r == NULL)
		return handed;
	release_block(r, &s, "free");
	return 1;
}

void hp_block_release_freed(hp_rec_t *r, uintptr_t base)
{
	hp_snap_t s;
	if (hp_registry_lookup(&hp_reg, base, &s) == r && s.base == base &&
	    (hp_rflags(r) & HOSTPIN_KIND_MALLOC))
		release_block(r, &s, "free");
}

size_t hp_block_usable(const void *p, int *handled)
{
	hp_snap_t s;
	hp_rec_t *r = own_block((void *)p, &s, "malloc_usable_size", NULL);
	*handled = r != NULL;
	return r ? s.len : 0;
}

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

/* A move into the placeholder [d, d+len) failed.  The kernel may have
 * unmapped the placeholder before it failed (MREMAP_FIXED unmaps its target
 * first), and a mapping of another thread may lie there since: unmap only
 * what is mapped back here.  Where something is still there (the intact
 * placeholder, or another's mapping) it stays: address space lost, never
 * anybody's memory.  (A kernel without MAP_FIXED_NOREPLACE takes d as a
 * hint: what it maps elsewhere is unmapped again.) */
static void drop_placeholder(void *d, size_t len)
{
	void *m = hp_real.mmap(d, len, PROT_NONE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE |
				   MAP_FIXED_NOREPLACE,
			       -1, 0);
	if (m != MAP_FAILED)
		hp_real.munmap(m, len);
}

/* What cannot happen: a grown block cannot be tracked (a record over a
 * place that only this thread holds).  Hand the caller memory of the next
 * allocator's, which its free understands, with the block's bytes; the
 * block at [q, q+len) is unmapped. */
static void *untrackable(void *q, size_t len, size_t keep, size_t n)
{
	void *m = hp_real.malloc(n);
	if (m == NULL)
		hp_fatal("realloc(): block %p (%zu bytes) cannot be tracked "
			 "again, nor copied (no memory)", q, len);
	memcpy(m, q, keep);
	hp_real.munmap(q, len);
	return m;
}

/* Grow a claimed block by moving its pages rather than copying them
 * (mremap, as glibc grows its mmapped chunks), with half again as much
 * headroom, so that a buffer grown in small steps costs amortised O(1) per
 * byte even when each move re-pins it.  The block is unpinned and its
 * record taken out of the registry before its pages move, and tracked and
 * pinned again where they are after (invariant 1): no record ever covers an
 * address the kernel may hand out meanwhile.  The record stays this
 * thread's, and the registry's nodes for each place it may go are mapped
 * before, so tracking it again needs no memory.  It grows in place where
 * the kernel can; else it moves into a placeholder reserved at a fresh
 * block's alignment (2 MiB from 2 MiB up).  NULL, with the block tracked at
 * its old place (unless it had to be leaked: *leaked), if it cannot grow
 * this way. */
static void *grow_block(hp_rec_t *r, hp_snap_t *s, size_t n, int *leaked)
{
	size_t len = hp_page_up(n), more = s->len + s->len / 2;
	if (more > len && more > s->len)
		len = hp_page_up(more);
	/* relaxed: a count (copy.c); the block keeps it where it goes */
	uint64_t copies = atomic_load_explicit(&r->user[HP_U_COPIES],
					       memory_order_relaxed);
	void *old = (void *)s->base, *q, *d;
	/* In place only where it starts as a new block of len would: a block
	 * of less than 2 MiB moves once to pass it. */
	int here = len < HUGE || (s->base & (HUGE - 1)) == 0;
	/* nodes for the block grown in place (EEXIST: a range lies after it,
	 * so it cannot grow there anyway) */
	if (here)
		hp_registry_prepare(&hp_reg, s->base, len);
	if (hp_untrack_keep(r, s)) {
		*leaked = 1; /* still registered: never moved or reused */
		return NULL;
	}
	errno = ENOMEM;
	q = here ? hp_real.mremap(old, s->len, len, 0) : MAP_FAILED;
	if (q != MAP_FAILED) {
		if (hp_track_again(r, s->base, len, HOSTPIN_KIND_MALLOC,
				   copies) == 0)
			return q;
		/* no node for its new end after all: its old size again (a
		 * tail the kernel cannot cut stays mapped, untracked) */
		hp_real.mremap(old, len, s->len, 0);
		goto stay;
	}
	/* ENOMEM: no room after it (or not tried).  Anything else (a block
	 * split by mprotect, RLIMIT_MEMLOCK) would fail the move too, and
	 * after its target is gone. */
	if (errno != ENOMEM)
		goto stay;
	d = map_aligned(len, HP_PAGE_SIZE, PROT_NONE, MAP_NORESERVE);
	if (d == NULL)
		goto stay;
	if (hp_registry_prepare(&hp_reg, (uintptr_t)d, len)) {
		hp_real.munmap(d, len); /* untouched: still ours */
		goto stay;
	}
	q = hp_real.mremap(old, s->len, len, MREMAP_MAYMOVE | MREMAP_FIXED, d);
	if (q == MAP_FAILED) {
		drop_placeholder(d, len);
		goto stay;
	}
	if (hp_track_again(r, (uintptr_t)q, len, HOSTPIN_KIND_MALLOC,
			   copies) == 0)
		return q;
	q = untrackable(q, len, s->len, n);
	hp_registry_put(&hp_reg, r);
	return q;
stay:
	if (hp_track_again(r, s->base, s->len, HOSTPIN_KIND_MALLOC, copies) == 0)
		return NULL;
	q = untrackable(old, s->len, s->len, n);
	hp_registry_put(&hp_reg, r);
	return q;
}

/* realloc of a block whose background registration a capture parked
 * (the capture may be this thread's to end: no wait for it): moved, the
 * new block filled while the registration thread holds the old one, the
 * old one then freed as free() does (handed to the thread). */
static void *realloc_parked(void *p, size_t len, size_t n)
{
	if (n >= hp_threshold && n <= len && n > len / 2)
		return p;
	void *q = NULL;
	if (n) {
		q = n >= hp_threshold ? hp_block_alloc(n, 0, 0) : NULL;
		if (q == NULL)
			q = hp_real.malloc(n);
		if (q == NULL) {
			errno = ENOMEM;
			return NULL; /* old block untouched */
		}
		memcpy(q, p, n < len ? n : len);
	}
	hp_block_free(p);
	return q;
}

void *hp_block_realloc(void *p, size_t n, int *handled)
{
	hp_snap_t s;
	int parked = 0;
	hp_rec_t *r = own_block(p, &s, "realloc", &parked);
	*handled = r != NULL || parked;
	if (parked)
		return realloc_parked(p, s.len, n);
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
			if (q) {
				memcpy(q, p, s.len);
				return q;
			}
			/* None: the block stays the program's, as realloc
			 * requires, live and registered; its release tries
			 * the unpin again. */
			hp_busy_end(r, HP_REC_LIVE);
			HP_CTR_SUB(leaked_blocks, 1);
			errno = ENOMEM;
			return NULL;
		}
		/* tracked again at its old place: copy as before */
		r = own_block(p, &s, "realloc", NULL);
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
