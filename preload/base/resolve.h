/* Where a call or a lookup goes: the one view of the loaded objects and
 * their generation, and the forwarding of every hook (resolve.c).
 *
 * A name hostpin exports binds every caller in the process, so a hook's
 * "next" is the definition its caller would have reached without hostpin:
 * for a call from object X, the next definition in X's own lookup order
 * (the global scope after hostpin, then X's local scope), with the version
 * X's reference asks for.  Found once per caller object and cached in the
 * hook's own few entries, which an answer made stale by an unload is
 * overwritten in (so no number of unloads fills the cache); a miss is kept
 * only until the next load or unload. */
#ifndef HP_RESOLVE_H
#define HP_RESOLVE_H

#include "symtab.h"

/* Bumped after every dlclose (the only way objects leave the process
 * short of a failed dlopen): a cached answer made at an older value may
 * point into an unloaded object. */
HP_HIDDEN extern _Atomic unsigned long hp_dl_epoch;
static inline unsigned long hp_dl_epoch_now(void)
{
	/* acquire: pairs with the release in dlclose (resolve.c) */
	return atomic_load_explicit(&hp_dl_epoch, memory_order_acquire);
}

/* One cached answer, in place: a seqlock (seq odd while written) lets
 * readers take it without a lock and a writer replace it, so that an
 * answer made stale by an unload is overwritten, never leaked. */
typedef struct hp_fwd_ent {
	_Atomic unsigned seq;
	_Atomic uintptr_t lo, len;         /* the caller object's span */
	_Atomic unsigned long epoch;       /* hp_dl_epoch when resolved */
	_Atomic unsigned long long gen;    /* hp_dl_generation when resolved */
	_Atomic(void *) fn;                /* NULL: a miss, good for gen only */
} hp_fwd_ent_t;
#define HP_FWD_WAYS 4
/* One hook's forwarding: the answers for its last few caller objects. */
typedef struct hp_fwd {
	const char *name;
	hp_fwd_ent_t e[HP_FWD_WAYS];
	_Atomic unsigned rr;
} hp_fwd_t;
#define HP_FWD_INIT(n) {.name = (n)}

/* A consistent copy of entry e: 1, or 0 while it is being written. */
typedef struct hp_fwd_val {
	uintptr_t lo, len;
	unsigned long epoch;
	unsigned long long gen;
	void *fn;
} hp_fwd_val_t;
static inline int hp_fwd_read(hp_fwd_ent_t *e, hp_fwd_val_t *v)
{
	/* acquire: pairs with the release that ended the write */
	unsigned s1 = atomic_load_explicit(&e->seq, memory_order_acquire);
	if (s1 & 1)
		return 0;
	/* relaxed: validated by the sequence below */
	v->lo = atomic_load_explicit(&e->lo, memory_order_relaxed);
	v->len = atomic_load_explicit(&e->len, memory_order_relaxed);
	v->epoch = atomic_load_explicit(&e->epoch, memory_order_relaxed);
	v->gen = atomic_load_explicit(&e->gen, memory_order_relaxed);
	v->fn = atomic_load_explicit(&e->fn, memory_order_relaxed);
	/* acquire fence: the loads above happen before the re-read */
	atomic_thread_fence(memory_order_acquire);
	return atomic_load_explicit(&e->seq, memory_order_relaxed) == s1;
}

HP_HIDDEN void *hp_fwd_slow(hp_fwd_t *f, const void *ra);
/* The function a call to f's name from return address ra goes on to, or
 * NULL (none in the caller's scope).  Lock-free when cached. */
static inline void *hp_fwd(hp_fwd_t *f, const void *ra)
{
	unsigned long ep = hp_dl_epoch_now();
	for (int i = 0; i < HP_FWD_WAYS; i++) {
		hp_fwd_val_t v;
		if (hp_fwd_read(&f->e[i], &v) && (uintptr_t)ra - v.lo < v.len &&
		    v.epoch == ep && v.fn)
			return v.fn;
	}
	return hp_fwd_slow(f, ra);
}
/* In an exported hook: its caller's next definition. */
#define HP_FWD(f) hp_fwd(&(f), __builtin_return_address(0))

/* Uncached: name as the caller at ra would find it past hostpin (dlsym's
 * RTLD_DEFAULT answer for it, were hostpin not loaded). */
HP_HIDDEN void *hp_resolve_for(const void *ra, const char *name);
/* The object holding addr: 1 and *o filled, or 0. */
HP_HIDDEN int hp_obj_of(const void *addr, hp_obj_t *o);
/* 1 if o (filled by hp_obj_find or hp_obj_of) is still loaded. */
HP_HIDDEN int hp_obj_alive(hp_obj_t *o);
/* 1 if addr lies in hostpin's own object. */
HP_HIDDEN int hp_is_self(const void *addr);
/* 1 if addr lies in a GPU driver, runtime or loader (an object that
 * defines cuGetProcAddress, cudaGetDriverEntryPoint, zeInit or a Level
 * Zero driver's zeGetDriverProcAddrTable), other than hostpin. */
HP_HIDDEN int hp_in_device_obj(const void *addr);
/* The exported allocation wrappers' caller while they serve a large block
 * (NULL otherwise): a block a device object allocates for itself goes to
 * the next allocator (invariant 8); one it frees inside its own call is
 * released after the call (invariant 11). */
HP_HIDDEN extern HP_TLS const void *hp_alloc_ra;
HP_HIDDEN int hp_alloc_from_device(void);

#endif
