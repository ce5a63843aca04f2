/* hostpin range registry: maps page-aligned address ranges to block records.
 *
 * A page-keyed radix tree of three levels over the 47-bit user address space
 * (2 MiB leaves).
 * A slot holds either a child node or a tagged record pointer; a record that
 * covers a slot's whole span is stored in that slot instead of below it (an
 * empty leaf left there by earlier ranges is taken back), so a range costs a
 * slot per 2 MiB of its body plus at most 511 per unaligned edge, not a slot
 * per page.  Readers take no lock and never block; writers are serialised by one
 * mutex.  Nodes and records come from mmap and are never returned to the OS,
 * so a reader holding a stale pointer always reads mapped memory.  Nothing
 * here allocates with malloc or knows about devices.
 *
 * Error convention: 0 or a positive errno.
 */
#ifndef HP_REGISTRY_H
#define HP_REGISTRY_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define HP_PAGE_SHIFT 12
#define HP_PAGE_SIZE ((uintptr_t)1 << HP_PAGE_SHIFT)
#define HP_VA_BITS 47
#define HP_VA_END ((uintptr_t)1 << HP_VA_BITS)

/* Level split of the 35-bit page number: 11 + 15 + 9 bits.  A leaf covers
 * 2 MiB (512 pages), a level-1 slot 2 MiB, a level-1 node 64 GiB: a range
 * pays a store per 2 MiB of its body and at most 511 per unaligned edge, and
 * none at an edge on a 2 MiB boundary (hostpin aligns its large blocks so). */
#define HP_L0_BITS 11
#define HP_L1_BITS 15
#define HP_L2_BITS 9

/* Record states.  The registry owns FREE; the others are the caller's to use,
 * as long as they are non-zero and below 2^32. */
enum { HP_REC_FREE = 0 };

#define HP_REC_USER_WORDS 6

typedef struct hp_rec {
	/* Seqlock over base/len: odd while a writer rewrites them for reuse. */
	_Atomic uint64_t seq;
	_Atomic uintptr_t base;
	_Atomic size_t len;
	/* (generation << 32) | state.  The generation changes every time the
	 * record is reused, so a claim made from a stale snapshot fails. */
	_Atomic uint64_t word;
	/* Free for the caller (block size, flags...); zeroed on insert. */
	_Atomic uintptr_t user[HP_REC_USER_WORDS];
} hp_rec_t;

typedef struct hp_snap {
	uintptr_t base;
	size_t len;
	uint64_t word;
} hp_snap_t;

typedef struct hp_registry {
	_Atomic uintptr_t root[(size_t)1 << HP_L0_BITS];
	/* Lowest inserted address and one past the highest.  Only ever widened. */
	_Atomic uintptr_t lo, hi;
	pthread_mutex_t wlock;
	/* Below: writer-only state, protected by wlock. */
	char *node_cur, *node_end; /* bump area for nodes */
	hp_rec_t *free_recs;       /* free list, linked through user[0] */
	/* Record chunks, linked through their first record; read lock-free by
	 * hp_registry_each. */
	_Atomic(hp_rec_t *) chunks;
	size_t live;               /* live records */
	size_t meta_bytes;         /* bytes of nodes and records mapped */
	size_t slots_used;         /* non-empty slots (for metadata accounting) */
	/* Empty leaves taken back from slots a range now covers whole, for
	 * reuse (never unmapped: a reader may still hold one). */
	_Atomic uintptr_t *spare[64];
	int nspare;
} hp_registry_t;

#define HP_REGISTRY_INIT                                                      \
	{                                                                     \
		.lo = UINTPTR_MAX, .hi = 0, .wlock = PTHREAD_MUTEX_INITIALIZER \
	}

static inline uint32_t hp_word_state(uint64_t w) { return (uint32_t)w; }

/* Initialise a registry in caller-provided zeroed memory (or use
 * HP_REGISTRY_INIT for a static one). */
void hp_registry_init(hp_registry_t *r);

/* Insert [base, base+len); both page aligned, len > 0, below HP_VA_END.
 * Returns 0 and the new record in *out, or EINVAL (bad range), EEXIST
 * (overlaps a live range), ENOMEM (mmap failed). */
int hp_registry_insert(hp_registry_t *r, uintptr_t base, size_t len,
		       uint32_t state, hp_rec_t **out);

/* Remove a live record's range and return the record to the pool.  The
 * caller must own the record (normally after winning hp_registry_claim). */
int hp_registry_remove(hp_registry_t *r, hp_rec_t *rec);

/* A record that moves (hostpin's realloc growth): detach takes a live
 * record's range out of the registry, as remove does, but keeps the record
 * the caller's instead of returning it to the pool; attach inserts the
 * caller's record (detached, or never put back) at a range, as insert does
 * (EINVAL, EEXIST, ENOMEM: the record stays the caller's); put returns it
 * to the pool.  Attaching a detached record at its old range again, while
 * nothing overlapping was inserted, cannot fail: nodes are never freed. */
int hp_registry_detach(hp_registry_t *r, hp_rec_t *rec);
int hp_registry_attach(hp_registry_t *r, hp_rec_t *rec, uintptr_t base,
		       size_t len, uint32_t state);
void hp_registry_put(hp_registry_t *r, hp_rec_t *rec);
/* Map the nodes that inserting [base, base+len) will need, storing
 * nothing: an attach or insert there then needs no memory, as long as no
 * range overlapping it is inserted meanwhile.  0, EINVAL, ENOMEM, or
 * EEXIST where a live range's record holds a slot it needs (an overlap is
 * not always seen here: attach and insert see it). */
int hp_registry_prepare(hp_registry_t *r, uintptr_t base, size_t len);

/* Lock-free: the record whose range contains addr, with a consistent
 * snapshot of it in *snap, or NULL. */
hp_rec_t *hp_registry_lookup(const hp_registry_t *r, uintptr_t addr,
			     hp_snap_t *snap);

/* As lookup, but only a record whose range starts exactly at addr. */
hp_rec_t *hp_registry_lookup_base(const hp_registry_t *r, uintptr_t addr,
				  hp_snap_t *snap);

/* Lock-free bounds test: 0 means addr is certainly not registered. */
static inline int hp_registry_maybe(const hp_registry_t *r, uintptr_t addr)
{
	/* relaxed: bounds are written before the slots that make a range
	 * visible are published with release; a reader that synchronises
	 * with that publication also sees the wider bounds. */
	return addr >= atomic_load_explicit(&r->lo, memory_order_relaxed) &&
	       addr < atomic_load_explicit(&r->hi, memory_order_relaxed);
}

/* Widen the bounds to cover [lo, hi) without inserting anything: callers
 * whose fast negative test is hp_registry_maybe then see such addresses on
 * their slow path.  Lookups there still miss. */
void hp_registry_reserve_bounds(hp_registry_t *r, uintptr_t lo, uintptr_t hi);

/* Change the state of rec from the snapshot word `expect` to `state`, keeping
 * the generation.  Returns 1 for the one caller that wins, 0 otherwise (also
 * when the snapshot is FREE or already in `state`). */
int hp_registry_claim(hp_rec_t *rec, uint64_t expect, uint32_t state);

/* Call fn for each live record overlapping [base, base+len), in address
 * order.  Lock-free; records may change under the caller, who must claim
 * before acting.  A non-zero return from fn stops the walk and is returned. */
typedef int (*hp_rec_fn)(hp_rec_t *rec, const hp_snap_t *snap, void *arg);
int hp_registry_each_overlap(const hp_registry_t *r, uintptr_t base,
			     size_t len, hp_rec_fn fn, void *arg);

/* Call fn for every live record (pool order, not address order). */
int hp_registry_each(hp_registry_t *r, hp_rec_fn fn, void *arg);

/* Writer lock, for callers that need several operations to be atomic with
 * respect to other writers, and for fork handlers.  The insert/remove calls
 * take it themselves; the _locked variants expect it held. */
void hp_registry_lock(hp_registry_t *r);
void hp_registry_unlock(hp_registry_t *r);
int hp_registry_insert_locked(hp_registry_t *r, uintptr_t base, size_t len,
			      uint32_t state, hp_rec_t **out);
int hp_registry_remove_locked(hp_registry_t *r, hp_rec_t *rec);

/* Live records and metadata bytes currently mapped (nodes + record pool). */
size_t hp_registry_count(hp_registry_t *r);
size_t hp_registry_meta_bytes(hp_registry_t *r);
/* Bytes of slots in use (8 per non-empty slot) plus 64 per live record: the
 * metadata that registered ranges actually occupy. */
size_t hp_registry_used_meta_bytes(hp_registry_t *r);

#endif
