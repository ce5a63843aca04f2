/* Pinning in cells, and operations on part of a pinned range.
 *
 * A device backend's registrations of a range are the cells of an absolute
 * grid of HOSTPIN_REGISTER_CHUNK bytes clipped to the range, each its own
 * registration unregistered by its own base (the driver needs the exact
 * base).  The mlock backend, and the HOSTPIN_MLOCK fallback, lock pages:
 * any page range is theirs to lock or unlock.  A discard (MADV_DONTNEED)
 * or a partial munmap then unpins and pins again only the cells it touches,
 * not the whole mapping, and what survives a partial munmap keeps its pins
 * (invariant 2: cells never overlap; invariant 1: a cell is unpinned before
 * its pages are discarded or unmapped).  The grid is absolute, so the cells
 * of a survivor are those it had, cut at its new edge.
 *
 * Whole registrations (HOSTPIN_REGISTER_CHUNK=0, the default) cannot be
 * redone in part: a purge costs a whole unregister, and registering again
 * at once a whole register, every time.  So a range whose whole
 * registration a purge or partial unmap undid is not registered again
 * there: where copies are counted it waits for its HOSTPIN_PIN_AFTER-th
 * copy again (from a count of 0), else it is registered again once; and a
 * range a purge does this to a second time (HP_F_CHURN) stays
 * unregistered: the program keeps purging it, a driver-level registration
 * cannot follow.  What a partial unmap or MAP_FIXED leaves in place is a
 * new, smaller range: registered again (or waiting for copies again)
 * whatever happened to it before, so an allocator that decommits parts of
 * a mapping with MAP_FIXED keeps the rest registered. */
#include <errno.h>
#include <sys/mman.h>

#include "../record.h"

/* How a backend's pins of a range divide: the unit a part of it is
 * unpinned and pinned again in. */
enum unit {
	U_WHOLE, /* one registration of the whole range (REGISTER_CHUNK=0) */
	U_PAGES, /* any page range (locks: mlock, the HOSTPIN_MLOCK fallback) */
	U_CELLS, /* the cells of the HOSTPIN_REGISTER_CHUNK grid, *cell bytes */
};
static enum unit unit_of(unsigned dev, size_t *cell)
{
	*cell = 0;
	if (!dev || hp_backend->pin_flags == HOSTPIN_LOCKED)
		return U_PAGES;
	/* whole pages: two registrations must never share a page */
	*cell = (size_t)(hp_opt[HP_OPT_REGISTER_CHUNK] &
			 ~(uint64_t)(HP_PAGE_SIZE - 1));
	return *cell ? U_CELLS : U_WHOLE;
}

static uintptr_t next_edge(uintptr_t x, size_t c, uintptr_t end)
{
	uintptr_t n = x - x % c + c;
	return n < end && n > x ? n : end;
}

/* Unpin [a, b) in units u (cells of c bytes). */
static int cells_unpin_c(uintptr_t a, uintptr_t b, enum unit u, size_t c,
			 const char **why)
{
	int e = 0;
	if (u != U_CELLS)
		return a < b ? hp_backend->unpin((void *)a, b - a, why) : 0;
	for (uintptr_t x = a, n; x < b; x = n) {
		n = next_edge(x, c, b);
		const char *w = "unknown";
		int r = hp_backend->unpin((void *)x, n - x, &w);
		if (r && !e)
			e = r, *why = w;
	}
	return e;
}

/* Undo the pieces [base, x) of a registration that stops (failed or
 * cancelled); ep: the contexts' epoch when it began.  0 if undone, or
 * refused for want of a context after one ended (its pieces died with
 * it: the backend undoes at once a piece that outlives its context's end,
 * backend_cuda.c); else non-zero: they stay registered, and the block is
 * kept registered, for its release to unregister or leak (invariant 1),
 * never released over a live registration. */
static int undo_pieces(uintptr_t base, uintptr_t x, enum unit u, size_t c,
		       unsigned ep)
{
	const char *w = "unknown";
	int e = cells_unpin_c(base, x, u, c, &w);
	if (!e || (e == EAGAIN && hp_cuda_ctx_epoch() != ep))
		return 0;
	HP_LOG_ONCE(HP_LOG_WARN, "a registration stopped part way could not "
		    "be undone (%s): its block stays registered until "
		    "released", w);
	return e;
}

int hp_cells_pin(uintptr_t base, size_t len, const char **why)
{
	return hp_cells_pin_each(base, len, why, NULL, 0);
}

int hp_cells_pin_each(uintptr_t base, size_t len, const char **why,
		      int (*done)(uintptr_t upto), int fault)
{
	size_t c;
	enum unit u = unit_of(1, &c);
	uintptr_t end = base + len;
	if (done) {
		/* One backend call per registration (hp_cells_piece_end:
		 * the pieces the backend would make in one call, and
		 * unregisters by the same bases), each reported when made.
		 * The capture gate is held per piece (invariant 13), as one
		 * call holds it, so a capture's begin waits for one piece,
		 * not the block: one that begins between pieces keeps those
		 * made registered (as a registered block's are) and the next
		 * waits for its end (hp_register_piece_hold). */
		if (!hp_capture_hold())
			return EAGAIN; /* a capture: pending until it ends */
		unsigned ep = hp_cuda_ctx_epoch();
		int e = 0;
		for (uintptr_t x = base, n; x < end && !e; x = n) {
			n = hp_cells_piece_end(base, len, x);
			if (x > base) {
				hp_capture_unhold();
				int h = hp_register_piece_hold();
				if (!h) {
					/* the exit, during a capture: the
					 * pieces made cannot be undone now;
					 * they end with the process */
					done(base);
					*why = "the process exits";
					return ECANCELED;
				}
				/* cancelled (or the exit) while it waited:
				 * the next piece is never begun */
				if (h == 2) {
					e = ECANCELED, *why = "cancelled";
					done(base);
					if (undo_pieces(base, x, u, c, ep))
						e = 0; /* registered, kept */
					break;
				}
			}
			if (fault)
				hp_prefault((void *)x, n - x);
			e = hp_backend->pin((void *)x, n - x, why);
			if (!e && done(n)) {
				e = ECANCELED, *why = "cancelled";
				x = n; /* undo this piece too */
			}
			if (e) {
				done(base); /* no copy uses [base, x) now */
				if (undo_pieces(base, x, u, c, ep)) {
					e = 0; /* registered, kept */
					break;
				}
			}
		}
		hp_capture_unhold();
		return e;
	}
	if (u != U_CELLS)
		return hp_backend->pin((void *)base, len, why);
	/* All the cells inside one capture gate hold (invariant 13), as one
	 * call of several chunks holds it: a capture begun meanwhile waits
	 * for the last cell, never refuses the next cell and the undo of
	 * those made (which were left registered under a range counted
	 * pending: fuzz cases/violation-capture-cell-73101353).  A caller
	 * holding the gate already (a release's survivors, a discard) keeps
	 * it. */
	int held = hp_capture_hold();
	if (!held && !hp_capture_held())
		return EAGAIN; /* a capture: pending until it ends */
	int e = 0;
	for (uintptr_t x = base, n; x < end && !e; x = n) {
		n = next_edge(x, c, end);
		e = hp_backend->pin((void *)x, n - x, why);
		if (e) {
			const char *w;
			cells_unpin_c(base, x, u, c, &w); /* undo the cells done */
		}
	}
	if (held)
		hp_capture_unhold();
	return e;
}

uintptr_t hp_cells_piece_end(uintptr_t base, size_t len, uintptr_t x)
{
	size_t cell;
	enum unit u = unit_of(1, &cell);
	uintptr_t end = base + len, cs = base;
	if (u == U_PAGES)
		return end;
	size_t piece = HP_REG_PIECE_MAX;
	if (u == U_CELLS) {
		cs = x - x % cell;
		if (cs < base)
			cs = base;
		end = next_edge(x, cell, end);
		if (cell < piece)
			piece = cell;
	}
	uintptr_t pe = cs + ((x - cs) / piece + 1) * piece;
	return pe < end ? pe : end;
}

int hp_cells_unpin(uintptr_t base, size_t len, const char **why)
{
	size_t c;
	enum unit u = unit_of(1, &c);
	return cells_unpin_c(base, base + len, u, c, why);
}

/* Unpin or pin [a, b) of a range pinned by the backend (dev) or locked by
 * the HOSTPIN_MLOCK fallback. */
static int part_unpin(unsigned dev, uintptr_t a, uintptr_t b, const char **why)
{
	if (a >= b)
		return 0;
	HP_CTR_ADD(unpin_calls, 1);
	if (dev) {
		int e = hp_cells_unpin(a, b - a, why);
		hp_backend_events_act();
		return e;
	}
	if (munlock((void *)a, b - a) == 0)
		return 0;
	*why = "munlock failed";
	return errno;
}

static int part_pin(unsigned dev, uintptr_t a, uintptr_t b, const char **why)
{
	if (a >= b)
		return 0;
	HP_CTR_ADD(pin_calls, 1);
	uint64_t t0 = hp_now_ns();
	int e = 0;
	if (dev) {
		e = hp_cells_pin(a, b - a, why);
		hp_backend_events_act();
	} else if (mlock((void *)a, b - a) != 0)
		*why = "mlock: RLIMIT_MEMLOCK or out of memory", e = errno;
	HP_CTR_ADD(pin_ns, hp_now_ns() - t0);
	return e;
}

/* part_pin through r's owner (the context of the rest of its pins). */
static int part_pin_of(const hp_rec_t *r, unsigned dev, uintptr_t a,
		       uintptr_t b, const char **why)
{
	hp_cuda_pin_as(atomic_load_explicit(&r->user[HP_U_OWNER],
					    memory_order_relaxed));
	int e = part_pin(dev, a, b, why);
	hp_cuda_pin_as(0);
	return e;
}

/* The cells of [base, end) that [a, b) touches. */
static void span(unsigned dev, uintptr_t base, uintptr_t end, uintptr_t a,
		 uintptr_t b, uintptr_t *lo, uintptr_t *hi)
{
	size_t c;
	switch (unit_of(dev, &c)) {
	case U_PAGES:
		*lo = a, *hi = b;
		return;
	case U_WHOLE:
		*lo = base, *hi = end;
		return;
	case U_CELLS:
		break;
	}
	uintptr_t l = a - a % c, h = b % c ? b - b % c + c : b;
	*lo = l < base ? base : l;
	*hi = h > end ? end : h;
}

static void say_failed(const char *why, int e, uintptr_t a, size_t len)
{
	if (hp_stat_fail(why))
		hp_log(HP_LOG_WARN,
		       "cannot pin %zu bytes at %p again after a discard or "
		       "partial unmap: %s (errno %d); the range stays usable, "
		       "unpinned (reported once per reason)",
		       len, (void *)a, why, e);
}

/* The whole of a pinned record is to end up unpinned, [lo, hi) already is:
 * unpin the rest, and count it as an unpinned record. */
static void drop_rest(hp_rec_t *r, unsigned dev, uintptr_t base, size_t len,
		      uintptr_t lo, uintptr_t hi)
{
	const char *w;
	part_unpin(dev, base, lo, &w);
	part_unpin(dev, hi, base + len, &w);
	hp_set_rflags(r, hp_rflags(r) & ~HP_PIN_MASK);
	HP_CTR_SUB(pinned_blocks_now, 1);
	HP_CTR_SUB(pinned_bytes_now, len);
	hp_site_account(hp_rsite(r), len, 0);
}

/* A device range of whole registrations, unregistered by a purge or a
 * partial unmap (flags f before; the counts still include it): 1 if it is
 * left unregistered (lazy again, or for good), 0 to register it again.
 * split: r is what a partial unmap or MAP_FIXED left in place, a new and
 * smaller range, not one the program keeps purging: registered again at
 * once (or lazy again where copies are counted), and never counted as
 * churn. */
static int hold_off(hp_rec_t *r, unsigned f, unsigned dev, uintptr_t base,
		    size_t len, int split)
{
	size_t c;
	if (!dev || unit_of(dev, &c) != U_WHOLE)
		return 0;
	int lazy = (split || !(f & HP_F_CHURN)) && hp_pin_counts_copies();
	if (split && !lazy)
		return 0;
	if (!(f & HP_F_CHURN) && !lazy) {
		hp_set_rflags(r, hp_rflags(r) | HP_F_CHURN);
		return 0;
	}
	drop_rest(r, dev, base, len, base, base + len); /* nothing left to unpin */
	if (lazy) {
		atomic_store_explicit(&r->user[HP_U_COPIES], 0,
				      memory_order_relaxed);
		hp_set_rflags(r, hp_rflags(r) | HP_F_LAZY |
				     (split ? 0 : HP_F_CHURN));
	} else {
		HP_LOG_ONCE(HP_LOG_INFO,
			    "a registered range was purged twice: left "
			    "unregistered (whole registrations cannot follow "
			    "a program that keeps purging; "
			    "HOSTPIN_REGISTER_CHUNK registers in parts)");
	}
	return 1;
}

/* A device registration held here (a discard, a partial unmap's
 * survivor) while the coverage check found an unguarded copy entry point:
 * the check's walk (hp_pin_unregister_all) skipped it, held, so it is not
 * registered again; [lo, hi) is unpinned, the rest is unpinned too
 * (audit e).  1 if so. */
static int coverage_drops(hp_rec_t *r, unsigned dev, uintptr_t base,
			  size_t len, uintptr_t lo, uintptr_t hi)
{
	if (!(dev & HOSTPIN_REGISTERED) || !hp_coverage_bad())
		return 0;
	drop_rest(r, dev, base, len, lo, hi);
	return 1;
}

int hp_pin_discard(hp_rec_t *r, const hp_snap_t *s, uintptr_t a, uintptr_t b,
		   void (*discard)(void *), void *arg)
{
	unsigned f = hp_rflags(r);
	if (!(f & HP_PIN_MASK)) {
		discard(arg); /* nothing pinned: nothing to undo or redo */
		return 0;
	}
	if (hp_backend->quiesce) {
		hp_backend->quiesce(r);
		hp_backend_events_act();
	}
	unsigned dev = f & hp_backend->pin_flags;
	uintptr_t lo, hi, end = s->base + s->len;
	span(dev, s->base, end, a, b, &lo, &hi);
	const char *why = "unknown";
	int e = part_unpin(dev, lo, hi, &why);
	if (e == EAGAIN && hp_pin_lost_held(r, s->len)) {
		/* the context ended while r was held here (the end's walk
		 * skipped it): nothing left registered to undo or redo */
		discard(arg);
		return 0;
	}
	if (e) {
		if (hp_stat_fail(why))
			hp_log(HP_LOG_WARN,
			       "cannot unpin %zu bytes at %p to discard them: "
			       "%s (errno %d); not discarded (reported once "
			       "per reason)",
			       (size_t)(hi - lo), (void *)lo, why, e);
		return EBUSY;
	}
	discard(arg);
	if (hold_off(r, f, dev, s->base, s->len, 0))
		return 0;
	/* a context end while r was held here (its walk skipped r), after
	 * the unpin: the rest of its registrations died with it; pinned
	 * again, part would be alive under a block counted registered over
	 * dead ones, or, refused, it would be left unregistered for good:
	 * pending again instead (audit d) */
	if (hp_pin_lost_held(r, s->len))
		return 0;
	if (coverage_drops(r, dev, s->base, s->len, lo, hi))
		return 0;
	e = part_pin_of(r, dev, lo, hi, &why);
	if (e == EAGAIN && hp_pin_lost_held(r, s->len))
		return 0;
	if (e) {
		drop_rest(r, dev, s->base, s->len, lo, hi);
		say_failed(why, e, lo, hi - lo);
	}
	return 0;
}

/* A survivor [sb, se) of a split record, pinned except for [pa, pb). */
static void survivor(unsigned kind, unsigned f, uintptr_t owner,
		     unsigned dev, uintptr_t sb, uintptr_t se, uintptr_t pa,
		     uintptr_t pb)
{
	unsigned pinf = f & HP_PIN_MASK;
	hp_rec_t *n;
	const char *why = "unknown";
	/* held (BUSY) until its pins are what they should be: a step aside
	 * meanwhile waits (foreign.c's claim) */
	int e = hp_registry_insert(&hp_reg, sb, se - sb, HP_REC_BUSY, &n);
	if (e) {
		/* untracked from now on, so it must not stay pinned */
		part_unpin(dev, sb, pa, &why);
		part_unpin(dev, pb, se, &why);
		HP_LOG_ONCE(HP_LOG_WARN, "cannot track %zu bytes at %p: %s "
			    "(errno %d); left to the system, unpinned",
			    (size_t)(se - sb), (void *)sb, hp_track_reason(e),
			    e);
		return;
	}
	hp_count_track(kind, se - sb, 1);
	/* seq_cst: tracked before it looks; hp_foreign_begin adds the range
	 * before its walk (one of the two sees the other) */
	atomic_thread_fence(memory_order_seq_cst);
	if (hp_foreign_overlaps(sb, se - sb)) {
		/* The program registers part of it (its step aside found the
		 * split record being released: foreign.c's carve_wait): its
		 * pins undone, as hp_pin_each leaves such a survivor. */
		part_unpin(dev, sb, pa, &why);
		part_unpin(dev, pb, se, &why);
		atomic_store_explicit(&n->user[HP_U_FLAGS],
				      kind | HP_F_FOREIGN | (f & HP_F_CHURN),
				      memory_order_relaxed);
		HP_CTR_ADD(foreign_ranges, 1);
		hp_busy_end(n, HP_REC_LIVE);
		return;
	}
	atomic_store_explicit(&n->user[HP_U_FLAGS],
			      kind | pinf | (f & HP_F_CHURN),
			      memory_order_relaxed);
	/* its pins are the split record's: their context's end finds it */
	atomic_store_explicit(&n->user[HP_U_OWNER], owner,
			      memory_order_relaxed);
	HP_CTR_ADD(pinned_blocks_now, 1);
	HP_CTR_ADD(pinned_bytes_now, se - sb);
	if (!hold_off(n, f, dev, sb, se - sb, 1) &&
	    !hp_pin_lost_held(n, se - sb) &&
	    !coverage_drops(n, dev, sb, se - sb, pa, pb)) {
		e = part_pin_of(n, dev, pa, pb, &why);
		if (e && !(e == EAGAIN && hp_pin_lost_held(n, se - sb))) {
			drop_rest(n, dev, sb, se - sb, pa, pb);
			say_failed(why, e, pa, pb - pa);
		}
	}
	/* held (BUSY) since its insertion: a context end meanwhile skipped
	 * it (audit d) */
	hp_pin_lost_held(n, se - sb);
	hp_busy_end(n, HP_REC_LIVE);
}

int hp_pin_split(hp_rec_t *r, const hp_snap_t *s, uintptr_t a, uintptr_t b)
{
	unsigned f = hp_rflags(r);
	uintptr_t base = s->base, end = base + s->len;
	uintptr_t ca = a > base ? a : base, cb = b < end ? b : end;
	/* Only the program's own mappings: part of a heap block unmapped by
	 * the program (a misuse) goes the plain way. */
	if (!(f & HP_PIN_MASK) || (f & HP_F_FOREIGN) ||
	    !(f & HOSTPIN_KIND_MMAP) || (ca == base && cb == end))
		return EINVAL; /* the caller untracks it whole */
	if (hp_backend->quiesce) {
		hp_backend->quiesce(r);
		hp_backend_events_act();
	}
	unsigned dev = f & hp_backend->pin_flags;
	uintptr_t lo, hi;
	span(dev, base, end, ca, cb, &lo, &hi);
	const char *why = "unknown";
	if (part_unpin(dev, lo, hi, &why))
		return EBUSY; /* the caller's whole unpin decides: leak */
	/* [base, lo) and [hi, end) stay pinned; the survivors take them */
	unsigned kind = f & HP_KIND_MASK;
	hp_count_track(kind, s->len, 0);
	HP_CTR_SUB(pinned_blocks_now, 1);
	HP_CTR_SUB(pinned_bytes_now, s->len);
	hp_site_account(hp_rsite(r), s->len, 0);
	uintptr_t owner = atomic_load_explicit(&r->user[HP_U_OWNER],
					       memory_order_relaxed);
	hp_registry_remove(&hp_reg, r);
	if (ca > base)
		survivor(kind, f, owner, dev, base, ca, lo, ca);
	if (cb < end)
		survivor(kind, f, owner, dev, cb, end, cb, hi);

	return 0;
}
