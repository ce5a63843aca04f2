/* hostpin range registry, the readers: lookup, claim, the walks over
 * ranges and records, the counts.  None takes the writers' lock; each
 * reads a record under its seqlock (read_rec).  The writers are in
 * registry.c. */
#include "registry_int.h"

/* Consistent read of a record reached through a slot.  Returns 0 if a writer
 * was rewriting it (the caller treats that as a miss: the record is being
 * reused, so it no longer belongs to the address being looked up). */
static inline int read_rec(const hp_rec_t *rec, hp_snap_t *s)
{
	/* acquire: pairs with the final release store of seq in insert, so
	 * the fields read below are at least as new as that seq. */
	uint64_t s1 = atomic_load_explicit(&rec->seq, memory_order_acquire);
	/* acquire on each field: pairs with the writer's release stores; a
	 * field written after the odd seq makes the odd seq visible to the
	 * re-read below, and keeps that re-read after the field loads. */
	s->base = atomic_load_explicit(&rec->base, memory_order_acquire);
	s->len = atomic_load_explicit(&rec->len, memory_order_acquire);
	s->word = atomic_load_explicit(&rec->word, memory_order_acquire);
	uint64_t s2 = atomic_load_explicit(&rec->seq, memory_order_relaxed);
	return s1 == s2 && !(s1 & 1);
}

hp_rec_t *hp_registry_lookup(const hp_registry_t *r, uintptr_t addr,
			     hp_snap_t *snap)
{
	if (!hp_registry_maybe(r, addr))
		return NULL;
	uintptr_t pg = addr >> HP_PAGE_SHIFT;
	/* acquire on every slot load: pairs with the release stores in
	 * set_range, so the node or record behind the pointer is initialised. */
	uintptr_t s = atomic_load_explicit(&r->root[pg >> slot_shift[0]],
					   memory_order_acquire);
	/* Records stored above the leaves are rare (ranges covering a 16 MiB
	 * or 64 GiB aligned span): lay out the descent as the straight path. */
	if (__builtin_expect(s & TAG_CHILD, 1)) {
		s = atomic_load_explicit(
		    &((_Atomic uintptr_t *)(s - TAG_CHILD))
			[(pg >> slot_shift[1]) & (level_slots[1] - 1)],
		    memory_order_acquire);
		if (__builtin_expect(s & TAG_CHILD, 1))
			s = atomic_load_explicit(
			    &((_Atomic uintptr_t *)(s - TAG_CHILD))
				[pg & (level_slots[2] - 1)],
			    memory_order_acquire);
	}
	if (s == 0)
		return NULL;
	hp_rec_t *rec = (hp_rec_t *)s;
	/* A removed record has len 0, so the containment test also rejects
	 * records removed or being reused under us. */
	if (!read_rec(rec, snap) || addr - snap->base >= snap->len)
		return NULL;
	return rec;
}

hp_rec_t *hp_registry_lookup_base(const hp_registry_t *r, uintptr_t addr,
				  hp_snap_t *snap)
{
	hp_rec_t *rec = hp_registry_lookup(r, addr, snap);
	return rec != NULL && snap->base == addr ? rec : NULL;
}

int hp_registry_claim(hp_rec_t *rec, uint64_t expect, uint32_t state)
{
	/* Claiming into the state the snapshot already shows would let a
	 * second claimer "win" a record the first one holds. */
	if (hp_word_state(expect) == state ||
	    hp_word_state(expect) == HP_REC_FREE)
		return 0;
	uint64_t want = (expect & ~(uint64_t)UINT32_MAX) | state;
	/* acq_rel: the winner sees everything the previous owner published
	 * with its state change (acquire) and publishes its own (release).
	 * One CAS on one word: exactly one of any racing claimers wins. */
	return atomic_compare_exchange_strong_explicit(
	    &rec->word, &expect, want, memory_order_acq_rel,
	    memory_order_relaxed);
}

struct walk {
	hp_rec_fn fn;
	void *arg;
	hp_rec_t *last;
};

static int walk_node(_Atomic uintptr_t *node, int level, uintptr_t nbase,
		     uintptr_t lo, uintptr_t hi, struct walk *w)
{
	unsigned sh = slot_shift[level];
	size_t first = (lo - nbase) >> sh, last = (hi - 1 - nbase) >> sh;
	for (size_t i = first; i <= last; i++) {
		uintptr_t s0 = nbase + ((uintptr_t)i << sh);
		uintptr_t s1 = s0 + ((uintptr_t)1 << sh);
		/* acquire: as in lookup. */
		uintptr_t s = atomic_load_explicit(&node[i],
						   memory_order_acquire);
		if (s == 0)
			continue;
		if (s & TAG_CHILD) {
			int e = walk_node((_Atomic uintptr_t *)(s - TAG_CHILD),
					  level + 1, s0,
					  lo > s0 ? lo : s0, hi < s1 ? hi : s1,
					  w);
			if (e)
				return e;
			continue;
		}
		hp_rec_t *rec = (hp_rec_t *)s;
		/* A record's slots are contiguous in address order, so
		 * consecutive hits on the same record are one report. */
		if (rec == w->last)
			continue;
		hp_snap_t snap;
		if (!read_rec(rec, &snap) ||
		    hp_word_state(snap.word) == HP_REC_FREE)
			continue;
		uintptr_t a = lo << HP_PAGE_SHIFT, b = hi << HP_PAGE_SHIFT;
		if (snap.base >= b || snap.base + snap.len <= a)
			continue;
		w->last = rec;
		int e = w->fn(rec, &snap, w->arg);
		if (e)
			return e;
	}
	return 0;
}

int hp_registry_each_overlap(const hp_registry_t *r, uintptr_t base,
			     size_t len, hp_rec_fn fn, void *arg)
{
	if (len == 0 || base >= HP_VA_END)
		return 0;
	uintptr_t end = len > HP_VA_END - base ? HP_VA_END : base + len;
	if (end <= atomic_load_explicit(&r->lo, memory_order_relaxed) ||
	    base >= atomic_load_explicit(&r->hi, memory_order_relaxed))
		return 0;
	struct walk w = {fn, arg, NULL};
	uintptr_t p0 = base >> HP_PAGE_SHIFT;
	uintptr_t p1 = (end + HP_PAGE_SIZE - 1) >> HP_PAGE_SHIFT;
	return walk_node((_Atomic uintptr_t *)r->root, 0, 0, p0, p1, &w);
}

int hp_registry_each(hp_registry_t *r, hp_rec_fn fn, void *arg)
{
	size_t n = REC_CHUNK / sizeof(hp_rec_t);
	/* Chunks added during the walk are missed; their records are newer
	 * than the walk. */
	for (hp_rec_t *c = atomic_load_explicit(&r->chunks,
						memory_order_acquire);
	     c != NULL;
	     c = (hp_rec_t *)atomic_load_explicit(&c[0].user[0],
						  memory_order_relaxed)) {
		for (size_t i = 1; i < n; i++) {
			hp_snap_t snap;
			if (!read_rec(&c[i], &snap) ||
			    hp_word_state(snap.word) == HP_REC_FREE)
				continue;
			int e = fn(&c[i], &snap, arg);
			if (e)
				return e;
		}
	}
	return 0;
}

size_t hp_registry_count(hp_registry_t *r) { return r->live; }
size_t hp_registry_meta_bytes(hp_registry_t *r) { return r->meta_bytes; }
size_t hp_registry_used_meta_bytes(hp_registry_t *r)
{
	return r->slots_used * sizeof(uintptr_t) + r->live * sizeof(hp_rec_t);
}
