/* hostpin range registry, the writers: the page source, the tree's slots,
 * insert and remove.  The readers are in registry_read.c; registry.h has the
 * shape and the contract. */
#include "registry_int.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Tree nodes come from chunks of this size. */
#define NODE_CHUNK ((size_t)1 << 21)

/* The registry's own page source: the raw system call, never the process's
 * mmap symbol, which an interposer (hostpin itself) may own. */
static void *os_map(size_t len)
{
	long p = syscall(SYS_mmap, NULL, len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == -1 ? NULL : (void *)p; /* glibc: -1 and errno */
}

void hp_registry_init(hp_registry_t *r)
{
	memset(r, 0, sizeof(*r));
	atomic_init(&r->lo, UINTPTR_MAX);
	atomic_init(&r->hi, 0);
	pthread_mutex_init(&r->wlock, NULL);
}

void hp_registry_lock(hp_registry_t *r) { pthread_mutex_lock(&r->wlock); }
void hp_registry_unlock(hp_registry_t *r) { pthread_mutex_unlock(&r->wlock); }

/* Writer only. */
static _Atomic uintptr_t *node_alloc(hp_registry_t *r, int level)
{
	/* a multiple of the page size at every level, like NODE_CHUNK */
	size_t bytes = level_slots[level] * sizeof(uintptr_t);
	if (level == 2 && r->nspare)
		return r->spare[--r->nspare]; /* empty, so all zero */
	if (r->node_cur == NULL || r->node_cur + bytes > r->node_end) {
		char *c = os_map(NODE_CHUNK);
		if (c == NULL)
			return NULL;
		r->meta_bytes += NODE_CHUNK;
		r->node_cur = c;
		r->node_end = c + NODE_CHUNK;
	}
	void *n = r->node_cur;
	r->node_cur += bytes;
	return n; /* fresh mmap memory is zero: every slot empty */
}

/* Writer only. */
static hp_rec_t *rec_alloc(hp_registry_t *r)
{
	if (r->free_recs == NULL) {
		hp_rec_t *c = os_map(REC_CHUNK);
		if (c == NULL)
			return NULL;
		r->meta_bytes += REC_CHUNK;
		/* c[0] links the chunk list; the rest go on the free list. */
		atomic_store_explicit(&c[0].user[0],
				      (uintptr_t)atomic_load_explicit(
					  &r->chunks, memory_order_relaxed),
				      memory_order_relaxed);
		/* release: pairs with the acquire in hp_registry_each, which
		 * then sees the link and the zeroed records. */
		atomic_store_explicit(&r->chunks, c, memory_order_release);
		size_t n = REC_CHUNK / sizeof(hp_rec_t);
		for (size_t i = n - 1; i >= 1; i--) {
			atomic_store_explicit(&c[i].user[0],
					      (uintptr_t)r->free_recs,
					      memory_order_relaxed);
			r->free_recs = &c[i];
		}
	}
	hp_rec_t *rec = r->free_recs;
	r->free_recs = (hp_rec_t *)atomic_load_explicit(&rec->user[0],
							  memory_order_relaxed);
	return rec;
}

/* Writer only. */
static void put_rec(hp_registry_t *r, hp_rec_t *rec)
{
	/* release: a reader without a claim that reads this link as the
	 * record's first user word sees its FREE word after it (hostpin's
	 * record.h, hp_rec_read_live) */
	atomic_store_explicit(&rec->user[0], (uintptr_t)r->free_recs,
			      memory_order_release);
	r->free_recs = rec;
}

/* Store `val` (a record pointer or 0) into every slot covering pages [lo, hi)
 * under `node`, whose first page is `nbase`.  A slot fully covered and not
 * holding a child takes the value itself; otherwise we descend, creating
 * children only when storing.  Writer only. */
static int set_range(hp_registry_t *r, _Atomic uintptr_t *node, int level,
		     uintptr_t nbase, uintptr_t lo, uintptr_t hi, uintptr_t val)
{
	unsigned sh = slot_shift[level];
	size_t first = (lo - nbase) >> sh, last = (hi - 1 - nbase) >> sh;
	for (size_t i = first; i <= last; i++) {
		uintptr_t s0 = nbase + ((uintptr_t)i << sh);
		uintptr_t s1 = s0 + ((uintptr_t)1 << sh);
		/* relaxed: writers are serialised by wlock, which orders
		 * this load after every earlier writer's store. */
		uintptr_t cur = atomic_load_explicit(&node[i],
						     memory_order_relaxed);
		int child = (cur & TAG_CHILD) != 0;
		if (!child && (level == 2 || (lo <= s0 && s1 <= hi))) {
			if ((cur != 0) != (val != 0))
				r->slots_used += val ? 1 : (size_t)-1;
			/* release: pairs with the acquire loads in lookup and
			 * the overlap walk, so a reader that sees the record
			 * pointer also sees its base, len and state. */
			atomic_store_explicit(&node[i], val,
					      memory_order_release);
			continue;
		}
		if (child && val != 0 && level == 1 && lo <= s0 && s1 <= hi) {
			/* The new range covers this leaf whole and overlaps no
			 * live range, so the leaf is empty: store the record
			 * here instead of in its 512 slots, and keep the leaf
			 * for reuse.  A reader still inside it finds zeros, or
			 * after reuse records whose range it checks. */
			r->slots_used++;
			/* release: as below */
			atomic_store_explicit(&node[i], val,
					      memory_order_release);
			if (r->nspare < (int)(sizeof(r->spare) / sizeof(r->spare[0])))
				r->spare[r->nspare++] =
				    (_Atomic uintptr_t *)(cur & ~TAG_CHILD);
			continue;
		}
		if (!child) {
			if (val == 0)
				continue; /* nothing below to clear */
			_Atomic uintptr_t *n = node_alloc(r, level + 1);
			if (n == NULL)
				return ENOMEM;
			uintptr_t expect = 0;
			/* release: pairs with the readers' acquire loads, so a
			 * reader that sees the child sees it zeroed.  The CAS
			 * cannot fail under wlock; it documents publication. */
			atomic_compare_exchange_strong_explicit(
			    &node[i], &expect, (uintptr_t)n | TAG_CHILD,
			    memory_order_release, memory_order_relaxed);
			cur = (uintptr_t)n | TAG_CHILD;
		}
		int e = set_range(r, (_Atomic uintptr_t *)(cur & ~TAG_CHILD),
				  level + 1, s0,
				  lo > s0 ? lo : s0, hi < s1 ? hi : s1, val);
		if (e)
			return e;
	}
	return 0;
}

static int range_ok(uintptr_t base, size_t len)
{
	return len != 0 && (base & (HP_PAGE_SIZE - 1)) == 0 &&
	       (len & (HP_PAGE_SIZE - 1)) == 0 && base < HP_VA_END &&
	       len <= HP_VA_END - base;
}

static int any_overlap(hp_rec_t *rec, const hp_snap_t *s, void *arg)
{
	(void)rec, (void)s, (void)arg;
	return 1;
}

/* Range and state checked, or EINVAL / EEXIST.  Writer only. */
static int insert_ok(hp_registry_t *r, uintptr_t base, size_t len,
		     uint32_t state)
{
	if (!range_ok(base, len) || state == HP_REC_FREE)
		return EINVAL;
	if (hp_registry_each_overlap(r, base, len, any_overlap, NULL))
		return EEXIST;
	return 0;
}

/* Publish rec (the caller's, FREE) at [base, base+len), checked by
 * insert_ok.  On failure (ENOMEM) the record is left FREE and still the
 * caller's.  Writer only. */
static int publish(hp_registry_t *r, hp_rec_t *rec, uintptr_t base,
		   size_t len, uint32_t state)
{
	/* Seqlock write without fences (ThreadSanitizer cannot model them):
	 * odd seq, then each field with release, so a reader whose acquire
	 * load sees a new field value also sees the odd seq; even seq last.
	 * A reader holding a stale pointer to this record either sees the
	 * old fields with an unchanged even seq or retries. */
	uint64_t seq = atomic_load_explicit(&rec->seq, memory_order_relaxed);
	atomic_store_explicit(&rec->seq, seq + 1, memory_order_relaxed);
	uint64_t gen = (atomic_load_explicit(&rec->word, memory_order_relaxed) >>
			32) + 1;
	atomic_store_explicit(&rec->base, base, memory_order_release);
	atomic_store_explicit(&rec->len, len, memory_order_release);
	atomic_store_explicit(&rec->word, (gen << 32) | state,
			      memory_order_release);
	for (int i = 0; i < HP_REC_USER_WORDS; i++)
		atomic_store_explicit(&rec->user[i], 0, memory_order_relaxed);
	/* release: pairs with the acquire load of seq in read_rec. */
	atomic_store_explicit(&rec->seq, seq + 2, memory_order_release);

	/* Widen bounds before publishing slots (see hp_registry_maybe). */
	if (base < atomic_load_explicit(&r->lo, memory_order_relaxed))
		atomic_store_explicit(&r->lo, base, memory_order_relaxed);
	if (base + len > atomic_load_explicit(&r->hi, memory_order_relaxed))
		atomic_store_explicit(&r->hi, base + len,
				      memory_order_relaxed);

	uintptr_t p0 = base >> HP_PAGE_SHIFT, p1 = (base + len) >> HP_PAGE_SHIFT;
	int e = set_range(r, r->root, 0, 0, p0, p1, (uintptr_t)rec);
	if (e) {
		/* Undo the partial publication; clearing allocates nothing. */
		set_range(r, r->root, 0, 0, p0, p1, 0);
		atomic_store_explicit(&rec->word, (gen << 32) | HP_REC_FREE,
				      memory_order_release);
		return e;
	}
	r->live++;
	return 0;
}

int hp_registry_insert_locked(hp_registry_t *r, uintptr_t base, size_t len,
			      uint32_t state, hp_rec_t **out)
{
	int e = insert_ok(r, base, len, state);
	if (e)
		return e;
	hp_rec_t *rec = rec_alloc(r);
	if (rec == NULL)
		return ENOMEM;
	e = publish(r, rec, base, len, state);
	if (e) {
		put_rec(r, rec);
		return e;
	}
	*out = rec;
	return 0;
}

int hp_registry_attach(hp_registry_t *r, hp_rec_t *rec, uintptr_t base,
		       size_t len, uint32_t state)
{
	hp_registry_lock(r);
	int e = insert_ok(r, base, len, state);
	if (e == 0)
		e = publish(r, rec, base, len, state);
	hp_registry_unlock(r);
	return e;
}

/* Create the children that set_range storing a record over pages [lo, hi)
 * under node would create; store nothing.  Writer only. */
static int make_path(hp_registry_t *r, _Atomic uintptr_t *node, int level,
		     uintptr_t nbase, uintptr_t lo, uintptr_t hi)
{
	if (level == 2)
		return 0; /* leaves store records */
	unsigned sh = slot_shift[level];
	size_t first = (lo - nbase) >> sh, last = (hi - 1 - nbase) >> sh;
	for (size_t i = first; i <= last; i++) {
		uintptr_t s0 = nbase + ((uintptr_t)i << sh);
		uintptr_t s1 = s0 + ((uintptr_t)1 << sh);
		if (lo <= s0 && s1 <= hi)
			continue; /* covered whole: stored here, no node */
		/* relaxed: writers are serialised by wlock */
		uintptr_t cur = atomic_load_explicit(&node[i],
						     memory_order_relaxed);
		if (cur != 0 && !(cur & TAG_CHILD))
			return EEXIST; /* a live range's record */
		if (cur == 0) {
			_Atomic uintptr_t *n = node_alloc(r, level + 1);
			if (n == NULL)
				return ENOMEM;
			cur = (uintptr_t)n | TAG_CHILD;
			/* release: as in set_range (a reader sees it zeroed) */
			atomic_store_explicit(&node[i], cur,
					      memory_order_release);
		}
		int e = make_path(r, (_Atomic uintptr_t *)(cur & ~TAG_CHILD),
				  level + 1, s0, lo > s0 ? lo : s0,
				  hi < s1 ? hi : s1);
		if (e)
			return e;
	}
	return 0;
}

int hp_registry_prepare(hp_registry_t *r, uintptr_t base, size_t len)
{
	if (!range_ok(base, len))
		return EINVAL;
	hp_registry_lock(r);
	int e = make_path(r, r->root, 0, 0, base >> HP_PAGE_SHIFT,
			  (base + len) >> HP_PAGE_SHIFT);
	hp_registry_unlock(r);
	return e;
}

void hp_registry_reserve_bounds(hp_registry_t *r, uintptr_t lo, uintptr_t hi)
{
	hp_registry_lock(r);
	/* relaxed, as in insert: see hp_registry_maybe */
	if (lo < atomic_load_explicit(&r->lo, memory_order_relaxed))
		atomic_store_explicit(&r->lo, lo, memory_order_relaxed);
	if (hi > atomic_load_explicit(&r->hi, memory_order_relaxed))
		atomic_store_explicit(&r->hi, hi, memory_order_relaxed);
	hp_registry_unlock(r);
}

int hp_registry_insert(hp_registry_t *r, uintptr_t base, size_t len,
		       uint32_t state, hp_rec_t **out)
{
	hp_registry_lock(r);
	int e = hp_registry_insert_locked(r, base, len, state, out);
	hp_registry_unlock(r);
	return e;
}

void hp_registry_put(hp_registry_t *r, hp_rec_t *rec)
{
	hp_registry_lock(r);
	put_rec(r, rec);
	hp_registry_unlock(r);
}

/* Take rec's range out; the record stays FREE and the caller's. */
static int take_out(hp_registry_t *r, hp_rec_t *rec)
{
	uint64_t w = atomic_load_explicit(&rec->word, memory_order_relaxed);
	if (hp_word_state(w) == HP_REC_FREE)
		return EINVAL;
	uintptr_t base = atomic_load_explicit(&rec->base, memory_order_relaxed);
	size_t len = atomic_load_explicit(&rec->len, memory_order_relaxed);
	set_range(r, r->root, 0, 0, base >> HP_PAGE_SHIFT,
		  (base + len) >> HP_PAGE_SHIFT, 0);
	/* Empty the range under the seqlock, so a reader still holding the
	 * pointer finds that it contains nothing: lookup needs no state test.
	 * Same protocol as in insert. */
	uint64_t seq = atomic_load_explicit(&rec->seq, memory_order_relaxed);
	atomic_store_explicit(&rec->seq, seq + 1, memory_order_relaxed);
	atomic_store_explicit(&rec->len, 0, memory_order_release);
	/* release: a claimer that loads FREE with acquire also sees the
	 * slots cleared.  Keeps the generation; reuse bumps it. */
	atomic_store_explicit(&rec->word, w & ~(uint64_t)UINT32_MAX,
			      memory_order_release);
	atomic_store_explicit(&rec->seq, seq + 2, memory_order_release);
	r->live--;
	return 0;
}

int hp_registry_remove_locked(hp_registry_t *r, hp_rec_t *rec)
{
	int e = take_out(r, rec);
	if (e == 0)
		put_rec(r, rec);
	return e;
}

int hp_registry_detach(hp_registry_t *r, hp_rec_t *rec)
{
	hp_registry_lock(r);
	int e = take_out(r, rec);
	hp_registry_unlock(r);
	return e;
}

int hp_registry_remove(hp_registry_t *r, hp_rec_t *rec)
{
	hp_registry_lock(r);
	int e = hp_registry_remove_locked(r, rec);
	hp_registry_unlock(r);
	return e;
}
