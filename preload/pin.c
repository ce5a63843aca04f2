/* The pin policy: what happens to a range between the registry and the
 * backend.  The HOSTPIN_MAX_PINNED cap, pin and unpin, tracking, adoption of
 * pending blocks, stepping aside for the program's own registrations, and
 * the forked child's forgetting.  Every function here runs with hp_in_hook
 * raised by its caller, so whatever it calls that allocates or maps goes
 * straight to the next allocator. */
#include <errno.h>
#include <sys/mman.h>

#include "ledger.h"
#include "record.h"
#include "resolve.h"

hp_registry_t hp_reg = HP_REGISTRY_INIT;

/* ---- pin policy ---- */

/* Reserve len bytes under HOSTPIN_MAX_PINNED; 0 if over the cap, or over
 * HOSTPIN_NODE_MAX_PINNED with what the node's other hostpin processes
 * pin (ledger.h; processes racing here may overshoot by a block each). */
static int cap_reserve(size_t len)
{
	uint64_t node_max = hp_opt[HP_OPT_NODE_MAX_PINNED];
	if (HP_LEDGER_SUM(pinned_bytes_now) + len > node_max &&
	    (!hp_ledger_reap() || HP_LEDGER_SUM(pinned_bytes_now) + len > node_max))
		return 0;
	uint64_t max = hp_opt[HP_OPT_MAX_PINNED];
	uint64_t cur = atomic_load_explicit(&hp_ctr.pinned_bytes_now,
					    memory_order_relaxed);
	do {
		if (cur + len > max)
			return 0;
	} while (!atomic_compare_exchange_weak_explicit(
	    &hp_ctr.pinned_bytes_now, &cur, cur + len, memory_order_relaxed,
	    memory_order_relaxed));
	return 1;
}

void hp_pin(hp_rec_t *r, uintptr_t base, size_t len)
{
	/* A range the program registered itself is left alone until the
	 * program unregisters it (hp_foreign_end pins it then): not pending,
	 * so adoption never walks the registry for it. */
	if (hp_backend == &hp_backend_none || hp_in_child ||
	    (hp_rflags(r) & HP_F_FOREIGN))
		return;
	if (hp_foreign_overlaps(base, len)) {
		/* a survivor of a partial munmap under a program range */
		hp_set_rflags(r, hp_rflags(r) | HP_F_FOREIGN);
		return;
	}
	if (!cap_reserve(len)) {
		HP_CTR_ADD(over_cap, 1);
		HP_LOG_ONCE(HP_LOG_WARN,
			    "HOSTPIN_MAX_PINNED (%llu bytes) or "
			    "HOSTPIN_NODE_MAX_PINNED (%llu bytes) reached: "
			    "further blocks are served unpinned",
			    (unsigned long long)hp_opt[HP_OPT_MAX_PINNED],
			    (unsigned long long)hp_opt[HP_OPT_NODE_MAX_PINNED]);
		return;
	}
	const char *why = "unknown";
	int e = EAGAIN;
	if ((hp_backend->pin_flags & HOSTPIN_REGISTERED) &&
	    hp_alloc_from_device()) {
		/* The driver, runtime or loader allocated this inside one of
		 * its own calls: no call into it from there (invariant 11);
		 * pending, adopted later. */
	} else if (!hp_backend->ready()) {
		/* e stays EAGAIN */
	} else if (hp_coverage_ok(hp_backend, &why)) {
		e = EPERM; /* refused: a copy could bypass the hooks */
	} else if (hp_backend == &hp_backend_mlock &&
		   !hp_memlock_fits(len, atomic_load_explicit(
				    &hp_ctr.pinned_bytes_now,
				    memory_order_relaxed) - len, &why)) {
		e = ENOMEM; /* the kernel would refuse: no pre-fault work */
	} else {
		uint64_t t0 = hp_now_ns();
		hp_prefault((void *)base, len);
		e = hp_cells_pin(base, len, &why);
		HP_CTR_ADD(pin_ns, hp_now_ns() - t0);
		HP_CTR_ADD(pin_calls, 1);
	}
	if (e == EAGAIN) { /* not now: the device runtime is not ready */
		HP_CTR_SUB(pinned_bytes_now, len);
		if (!(hp_rflags(r) & HOSTPIN_PENDING)) {
			hp_set_rflags(r, hp_rflags(r) | HOSTPIN_PENDING);
			HP_CTR_ADD(pending_blocks, 1);
		}
		return;
	}
	if (hp_rflags(r) & HOSTPIN_PENDING) {
		hp_set_rflags(r, hp_rflags(r) & ~HOSTPIN_PENDING);
		HP_CTR_SUB(pending_blocks, 1);
	}
	if (e) {
		/* HOSTPIN_MLOCK: a block the device refused is at least kept
		 * resident. */
		int locked = hp_opt[HP_OPT_MLOCK] &&
			     hp_backend->pin_flags != HOSTPIN_LOCKED &&
			     mlock((void *)base, len) == 0;
		if (locked) {
			hp_set_rflags(r, hp_rflags(r) | HOSTPIN_LOCKED);
			HP_CTR_ADD(pinned_blocks_now, 1);
		} else {
			HP_CTR_SUB(pinned_bytes_now, len);
		}
		int first = hp_stat_fail(why);
		if (hp_opt[HP_OPT_STRICT])
			hp_fatal("cannot pin %zu bytes at %p: %s (errno %d); "
				 "HOSTPIN_STRICT=1: aborting",
				 len, (void *)base, why, e);
		if (first)
			hp_log(HP_LOG_WARN,
			       "cannot pin %zu bytes at %p: %s (errno %d); the "
			       "memory stays usable, %s (reported once per "
			       "reason; counted in the statistics)",
			       len, (void *)base, why, e,
			       locked ? "locked (HOSTPIN_MLOCK)" : "unpinned");
		return;
	}
	if (hp_coverage_bad() && hp_backend->unpin((void *)base, len, &why) == 0) {
		/* the check failed while this registration was made */
		HP_CTR_SUB(pinned_bytes_now, len);
		return;
	}
	hp_set_rflags(r, hp_rflags(r) | hp_backend->pin_flags);
	atomic_store_explicit(&r->user[HP_U_OWNER],
			      hp_backend->owner ? hp_backend->owner() : 0,
			      memory_order_relaxed); /* as the flags */
	HP_CTR_ADD(pinned_blocks_now, 1);
	hp_site_account(hp_rsite(r), len, 1);
	/* the reservation is now real: account the peak */
	hp_stat_add_peak(&hp_ctr.pinned_bytes_now, &hp_ctr.pinned_bytes_peak, 0);
}

/* Undo hp_pin(); non-zero if the backend refused (the caller must then leak
 * the range: invariant 1). */
int hp_unpin(hp_rec_t *r, uintptr_t base, size_t len)
{
	if (hp_backend->quiesce)
		hp_backend->quiesce(r);
	unsigned f = hp_rflags(r);
	if (f & HOSTPIN_PENDING) {
		hp_set_rflags(r, f & ~HOSTPIN_PENDING);
		HP_CTR_SUB(pending_blocks, 1);
	}
	if (!(f & HP_PIN_MASK))
		return 0;
	const char *why = "unknown";
	HP_CTR_ADD(unpin_calls, 1);
	int e = 0;
	if (f & hp_backend->pin_flags)
		e = hp_in_child ? 0 : hp_cells_unpin(base, len, &why);
	else if ((f & HOSTPIN_LOCKED) && munlock((void *)base, len) != 0)
		why = "munlock failed", e = errno; /* the HOSTPIN_MLOCK fallback */
	if (e) {
		if (hp_stat_fail(why))
			hp_log(HP_LOG_WARN,
			       "cannot unpin %zu bytes at %p: %s (errno %d); "
			       "leaking the mapping rather than reusing it "
			       "(reported once per reason)",
			       len, (void *)base, why, e);
		return e;
	}
	hp_set_rflags(r, hp_rflags(r) & ~HP_PIN_MASK);
	HP_CTR_SUB(pinned_blocks_now, 1);
	HP_CTR_SUB(pinned_bytes_now, len);
	hp_site_account(hp_rsite(r), len, 0);
	return 0;
}

void hp_count_track(unsigned kind, size_t len, int add)
{
	if (kind & HOSTPIN_KIND_MALLOC) {
		if (add) {
			hp_stat_add_peak(&hp_ctr.blocks_now,
					 &hp_ctr.blocks_peak, 1);
			hp_stat_add_peak(&hp_ctr.bytes_now, &hp_ctr.bytes_peak,
					 len);
		} else {
			HP_CTR_SUB(blocks_now, 1);
			HP_CTR_SUB(bytes_now, len);
		}
	} else {
		HP_CTR_ADD(mmap_ranges_now, add ? 1 : -1ull);
		HP_CTR_ADD(mmap_bytes_now, add ? len : 0 - len);
	}
}

int hp_track(uintptr_t base, size_t len, unsigned kind)
{
	hp_rec_t *r;
	int e = hp_registry_insert(&hp_reg, base, len, HP_REC_LIVE, &r);
	if (e) {
		HP_LOG_ONCE(HP_LOG_WARN, "cannot track %zu bytes at %p "
			    "(errno %d): left to the system", len,
			    (void *)base, e);
		return e;
	}
	atomic_store_explicit(&r->user[HP_U_FLAGS], kind, memory_order_relaxed);
	if (kind & HOSTPIN_KIND_MALLOC)
		hp_set_rsite(r, hp_site_capture());
	hp_count_track(kind, len, 1);
	hp_pin(r, base, len);
	return 0;
}

/* A leaked record stays in the registry as LEAKED: never reused. */
int hp_untrack(hp_rec_t *r, const hp_snap_t *s)
{
	unsigned kind = hp_rflags(r) & HP_KIND_MASK;
	if (hp_unpin(r, s->base, s->len)) {
		/* relaxed: we hold r (claimed); the claim's CAS orders */
		uint64_t w = atomic_load_explicit(&r->word, memory_order_relaxed);
		hp_registry_claim(r, w, HP_REC_LEAKED);
		HP_CTR_ADD(leaked_blocks, 1);
		return EBUSY;
	}
	/* s->word is the state before the release claim: a cached block
	 * left the counts when hp_cache_keep took it */
	if (hp_word_state(s->word) != HP_REC_CACHED)
		hp_count_track(kind, s->len, 0);
	hp_registry_remove(&hp_reg, r);
	return 0;
}


/* ---- adoption (foreign registrations: foreign.c) ---- */

static int adopt_one(hp_rec_t *r, const hp_snap_t *s, void *arg)
{
	(void)arg;
	uint32_t st;
	if (!(hp_rflags(r) & HOSTPIN_PENDING) || !(st = hp_busy_begin(r, s)))
		return 0;
	hp_pin(r, s->base, s->len);
	if (!(hp_rflags(r) & HOSTPIN_PENDING) && (hp_rflags(r) & HP_PIN_MASK))
		HP_CTR_ADD(adopted_blocks, 1);
	hp_busy_end(r, st);
	return 0;
}

void hp_adopt_pending(void)
{
	if (atomic_load_explicit(&hp_ctr.pending_blocks,
				 memory_order_relaxed) == 0 ||
	    hp_in_child || !hp_backend->ready())
		return;
	hp_registry_each(&hp_reg, adopt_one, NULL);
}

struct lost {
	uintptr_t owner;
	int n;
};

static int lost_one(hp_rec_t *r, const hp_snap_t *s, void *arg)
{
	struct lost *l = arg;
	uint32_t st;
	if (!(hp_rflags(r) & hp_backend->pin_flags & HOSTPIN_REGISTERED) ||
	    atomic_load_explicit(&r->user[HP_U_OWNER], memory_order_relaxed) !=
		l->owner ||
	    !(st = hp_busy_begin(r, s)))
		return 0;
	/* The driver dropped the registration with its context: nothing to
	 * unregister, no copy of that context left to wait for. */
	if (hp_backend->quiesce)
		hp_cuda_forget(r);
	hp_set_rflags(r, (hp_rflags(r) & ~HOSTPIN_REGISTERED) | HOSTPIN_PENDING);
	atomic_store_explicit(&r->user[HP_U_OWNER], 0, memory_order_relaxed);
	HP_CTR_SUB(pinned_blocks_now, 1);
	HP_CTR_SUB(pinned_bytes_now, s->len);
	hp_site_account(hp_rsite(r), s->len, 0);
	HP_CTR_ADD(pending_blocks, 1);
	hp_busy_end(r, st);
	l->n++;
	return 0;
}

int hp_pin_owner_lost(uintptr_t owner)
{
	struct lost l = {owner, 0};
	if (owner && !hp_in_child)
		hp_registry_each(&hp_reg, lost_one, &l);
	return l.n;
}

static int unregister_one(hp_rec_t *r, const hp_snap_t *s, void *arg)
{
	(void)arg;
	uint32_t st;
	if (!(hp_rflags(r) & HOSTPIN_REGISTERED) || !(st = hp_busy_begin(r, s)))
		return 0;
	hp_unpin(r, s->base, s->len); /* waits for its copies first */
	hp_busy_end(r, st);
	return 0;
}

void hp_pin_unregister_all(void)
{
	if (!hp_in_child)
		hp_registry_each(&hp_reg, unregister_one, NULL);
}

unsigned hp_block_flags(const void *p, hp_rec_t **rec)
{
	hp_snap_t s;
	hp_rec_t *r = hp_registry_lookup(&hp_reg, (uintptr_t)p, &s);
	*rec = r;
	return r ? hp_rflags(r) : 0;
}

/* ---- the device was unloaded ---- */

static int unloaded_one(hp_rec_t *r, const hp_snap_t *s, void *arg)
{
	(void)arg;
	uint32_t st;
	if (!(hp_rflags(r) & hp_backend->pin_flags) ||
	    !(st = hp_busy_begin(r, s)))
		return 0;
	/* Its registration died with the driver, and its copies' events
	 * with it: no unpin call, nothing to wait for. */
	if (hp_backend->quiesce)
		hp_cuda_forget(r);
	hp_set_rflags(r, (hp_rflags(r) & ~HP_PIN_MASK) | HOSTPIN_PENDING);
	atomic_store_explicit(&r->user[HP_U_OWNER], 0, memory_order_relaxed);
	HP_CTR_SUB(pinned_blocks_now, 1);
	HP_CTR_SUB(pinned_bytes_now, s->len);
	HP_CTR_ADD(pending_blocks, 1);
	hp_site_account(hp_rsite(r), s->len, 0);
	hp_busy_end(r, st);
	return 0;
}

void hp_device_lost(void)
{
	hp_in_hook++;
	hp_registry_each(&hp_reg, unloaded_one, NULL);
	hp_in_hook--;
}

/* ---- fork ---- */

static int child_forget(hp_rec_t *r, const hp_snap_t *s, void *arg)
{
	(void)s, (void)arg;
	/* Memory locks and device registrations are not inherited: the
	 * child's blocks are plain memory, and it never unpins them. */
	unsigned f = hp_rflags(r);
	if (f & HP_PIN_MASK)
		HP_CTR_SUB(pinned_blocks_now, 1);
	if (f & HOSTPIN_PENDING)
		HP_CTR_SUB(pending_blocks, 1);
	hp_set_rflags(r, f & ~(HP_PIN_MASK | HOSTPIN_PENDING));
	return 0;
}

void hp_pin_fork_child(void)
{
	hp_in_hook++;
	hp_backend->fork_child();
	hp_registry_each(&hp_reg, child_forget, NULL);
	atomic_store_explicit(&hp_ctr.pinned_bytes_now, 0, memory_order_relaxed);
	hp_in_hook--;
}

