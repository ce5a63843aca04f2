/* The application's own mappings: which mmaps are tracked and pinned, and
 * what munmap, mremap and MAP_FIXED do to tracked or owned ranges: unpin
 * the affected part first (invariant 1), pin what survives; during a CUDA
 * graph capture, what is refused instead.  madvise: maps_advise.c.  Called
 * from wrap_mmap.c with hp_in_hook raised. */
#include <dlfcn.h>
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "../record.h"
#include "../base/resolve.h"

/* Memory the device libraries map for themselves (cudaHostAlloc, driver
 * buffers) is theirs: never touch it (invariant 8).  Known names, and any
 * object that exports a driver's or loader's marks (a Level Zero driver
 * mapping inside zeContextCreate: importing it would call into the driver
 * from inside its own call, invariant 11). */
static int from_device_library(const void *caller)
{
	if (caller != NULL && hp_in_device_obj(caller))
		return 1;
	static const char *const libs[] = {"libcuda", "libnvidia", "libcudart",
					   "libze_", "libze-", "libigdrcl",
					   "libcupti", "libnccl"};
	Dl_info di;
	if (caller == NULL || !dladdr(caller, &di) || di.dli_fname == NULL)
		return 0;
	const char *base = strrchr(di.dli_fname, '/');
	base = base ? base + 1 : di.dli_fname;
	for (size_t i = 0; i < sizeof(libs) / sizeof(libs[0]); i++)
		if (strncmp(base, libs[i], strlen(libs[i])) == 0)
			return 1;
	return 0;
}

void hp_mmap_track(void *p, size_t len, int prot, int flags,
		   const void *caller)
{
	uint64_t pol = hp_opt[HP_OPT_MMAP];
	int anon = (flags & MAP_ANONYMOUS) != 0;
	int shared = (flags & MAP_TYPE) != MAP_PRIVATE;
	if (pol == HP_MMAP_OFF || len < hp_threshold ||
	    len < hp_opt[HP_OPT_MMAP_MIN] || /* CPython's arenas & co */
	    (pol == HP_MMAP_PRIVATE && (!anon || shared)) ||
	    (pol == HP_MMAP_SHARED && !anon))
		return;
	/* Reservations are not buffers: locking them would commit them. */
	if (!(prot & (PROT_READ | PROT_WRITE)) || (flags & MAP_NORESERVE) ||
	    from_device_library(caller))
		return;
	hp_track((uintptr_t)p, hp_page_up(len), HOSTPIN_KIND_MMAP);
}

struct carve {
	uintptr_t a, b;  /* the range being released */
	unsigned kind;   /* kind of the first affected record, or 0 */
	uint64_t copies; /* its copy count (HP_U_COPIES) */
	int unmap;       /* the program's munmap: whole ranges may wait */
	int stuck;       /* one left as it was: its registration parked */
};

/* Releases of (part of) a range in progress (carve_one): from before
 * the claim until what survives is tracked, pinned or stepped aside
 * from.  A step aside that ran meanwhile waits for them (foreign.c's
 * carve_wait). */
static _Atomic unsigned carving;

int hp_carving(void)
{
	/* seq_cst: pairs with the increment before carve_one's claim */
	return atomic_load(&carving) != 0;
}

static int carve_in(hp_rec_t *r, const hp_snap_t *s0, struct carve *c);

static int carve_one(hp_rec_t *r, const hp_snap_t *s0, void *arg)
{
	atomic_fetch_add(&carving, 1); /* seq_cst: before the claim */
	carve_in(r, s0, arg);
	atomic_fetch_sub(&carving, 1); /* seq_cst: after the survivors */
	return 0;
}

static int carve_in(hp_rec_t *r, const hp_snap_t *s0, struct carve *c)
{
	hp_snap_t sv = *s0, *s = &sv;
	if (!hp_claim_release(r, s)) {
		/* someone else is releasing it, or (a capture counted while
		 * the caller holds the gate) its registration thread parked
		 * with pieces made: the caller must not release its pages */
		if (hp_register_holds(r))
			c->stuck = 1;
		return 0;
	}
	unsigned kind = hp_rflags(r) & HP_KIND_MASK;
	/* relaxed: a count (copy.c), carried to what continues the range */
	uint64_t copies = atomic_load_explicit(&r->user[HP_U_COPIES],
					       memory_order_relaxed);
	if (!c->kind)
		c->kind = kind, c->copies = copies;
	/* Part of a pinned range: unpin only the cells the release touches;
	 * the rest keeps its pins. */
	if (hp_pin_split(r, s, c->a, c->b) == 0)
		return 0;
	unsigned carry = hp_rflags(r);
	/* A mapping the program unmaps whole whose unregistration cannot be
	 * made now (a CUDA graph capture, no context): kept mapped and
	 * registered, unregistered and unmapped later (pin.c's retry);
	 * hp_munmap_do leaves it mapped meanwhile. */
	int whole = s->base >= c->a && s->base + s->len <= c->b;
	if (c->unmap && whole && (kind & HOSTPIN_KIND_MMAP)
		? hp_untrack_release(r, s)
		: hp_untrack(r, s))
		return 0; /* leaked or deferred: stays registered */
	uintptr_t end = s->base + s->len;
	/* Survivors lie outside [a, b): safe to pin again before the caller
	 * releases [a, b), and outside what this walk still visits. */
	if (s->base < c->a)
		hp_track_as(s->base, c->a - s->base, HOSTPIN_KIND_MMAP, carry,
			    copies);
	if (end > c->b)
		hp_track_as(c->b, end - c->b, HOSTPIN_KIND_MMAP, carry, copies);
	return 0;
}

/* Might [a, b) overlap a tracked range (maps_advise.c too)?  An interval test against the
 * registry's bounds: a range that starts below the lowest tracked range
 * (a reservation released whole after a commit inside it) still reaches
 * the walk. */
int hp_maps_may_hold(uintptr_t a, uintptr_t b)
{
	/* relaxed: as hp_registry_maybe (the bounds are written before the
	 * slots that make a range visible are published) */
	return a < b &&
	       a < atomic_load_explicit(&hp_reg.hi, memory_order_relaxed) &&
	       b > atomic_load_explicit(&hp_reg.lo, memory_order_relaxed);
}

/* Unpin and untrack [a, a+len) before the caller unmaps or replaces it;
 * the parts of affected ranges outside it stay tracked and pinned.  Returns
 * the kind of the first range affected (0 if none). */
/* The kind of the first tracked range [a, a+len) overlapped (0: none), and
 * its copy count in *copies. */
static unsigned release_range(uintptr_t a, size_t len, uint64_t *copies,
			      int unmap, int *stuck)
{
	struct carve c = {a & ~(HP_PAGE_SIZE - 1), hp_page_up(a + len), 0, 0,
			  unmap, 0};
	if (len && hp_maps_may_hold(c.a, c.b))
		hp_registry_each_overlap(&hp_reg, c.a, c.b - c.a, carve_one,
					 &c);
	if (copies)
		*copies = c.copies;
	if (stuck)
		*stuck |= c.stuck;
	return c.kind;
}

void hp_range_release(uintptr_t a, size_t len)
{
	release_range(a, len, NULL, 0, NULL);
}

/* ---- the program's unmaps during a CUDA graph capture (invariant 13) ----
 * While a capture prohibits this thread's driver calls (capture.c: a
 * global one anywhere, a thread-local one of this thread), a registered
 * range can be neither unregistered nor given up (invariant 1: its pages
 * are never unmapped, replaced or discarded while registered).  So:
 *   munmap of whole registered ranges: each is kept mapped and registered
 *     (LEAKED with HP_F_DEFER, as a released heap block), the call
 *     returns 0; when the capture ends they are unregistered and unmapped
 *     (hp_retry_deferred from the capture's end);
 *   munmap of part of a registered range, mmap(MAP_FIXED) or mremap over
 *     one: refused with ENOMEM, nothing changed (the kernel's own answer
 *     when a mapping cannot be split or moved: glibc's realloc and the
 *     allocators fall back to a new mapping and a copy; copying here
 *     instead would hand the program an address it did not ask for, or
 *     none at all under MREMAP_FIXED);
 *   (madvise, maps_advise.c's discard_held:)
 *   MADV_FREE: nothing done (the kernel may leave the pages as they were);
 *   MADV_DONTNEED(_LOCKED) of private anonymous memory: the range is
 *     zeroed instead (what it reads afterwards either way), by a read of
 *     /dev/zero, which fails on pages the program cannot write instead of
 *     faulting;
 *   other discards (MADV_REMOVE; any under HOSTPIN_MMAP=shared|all, where
 *     the record does not say whether its mapping is private): refused
 *     (EBUSY), as when an unregistration fails.
 * No gap between the check and the release: each holds the capture gate
 * from its check to its last pin (release_hold; a discard per record,
 * maps_advise.c's advise_records), one driver call to a capture, which begins after it
 * (capture_modes.c split_*, discard_race).  A block whose background
 * registration parked meanwhile is not released: refused, ENOMEM. */
struct held {
	uintptr_t a, b;
	int any, part;
};

static int held_one(hp_rec_t *r, const hp_snap_t *s0, void *arg)
{
	struct held *h = arg;
	hp_snap_t sv = *s0, *s = &sv;
	/* a block being registered in the background: what is left of its
	 * registration cancelled and the thread waited for (it waits for no
	 * capture's end unless parked between two pieces: -1 at once), then
	 * the block as the thread left it, as any other (refused instead, a
	 * whole munmap kept a mapping the program gave up, registered again
	 * once the capture ended, for good: fuzz cases/munmap-registering-
	 * capture-55000541.prog) */
	int busy = hp_register_holds(r);
	int c = busy ? hp_register_cancel(r) : 0;
	if (busy && c >= 0 && hp_registry_lookup(&hp_reg, s0->base, s) != r)
		return 0; /* released meanwhile */
	/* parked: its pieces made cannot be undone during the capture (nor
	 * may this thread wait for its end: it may be this thread's), so
	 * neither part nor whole */
	if (c < 0 || hp_register_holds(r)) {
		h->any = 1, h->part = 1;
		return 0;
	}
	if (hp_word_state(s->word) == HP_REC_LEAKED ||
	    !(hp_rflags(r) & HOSTPIN_REGISTERED))
		return 0;
	h->any = 1;
	h->part |= s->base < h->a || s->base + s->len > h->b;
	return 0;
}

int hp_capture_holds(uintptr_t a, size_t len)
{
	struct held h = {a & ~(HP_PAGE_SIZE - 1), hp_page_up(a + len), 0, 0};
	if (!len || !hp_capture_busy() || !hp_maps_may_hold(h.a, h.b))
		return 0;
	hp_registry_each_overlap(&hp_reg, h.a, h.b - h.a, held_one, &h);
	return h.part ? 2 : h.any;
}

/* Before the gate (issue 39): each registered block's last async copy in
 * [a, a + len) waited for with this thread in relaxed capture mode
 * (hp_cuda_settle), so that the release's wait in the gate (quiesce)
 * finds it done and a global capture's begin elsewhere never waits for a
 * held stream's DMA (late_fix capture_unmap, capture_mremap,
 * capture_fixed; maps_advise.c's discards: capture_dontneed). */
static int settle_one(hp_rec_t *r, const hp_snap_t *s, void *arg)
{
	(void)s, (void)arg;
	if (hp_rflags(r) & HOSTPIN_REGISTERED)
		hp_cuda_settle(r, 0);
	return 0;
}

void hp_settle_range(uintptr_t a, size_t len)
{
	/* No block ever had a last-copy event (HOSTPIN_COPY=sync, the
	 * default: none ever; async: no async copy through a registered
	 * block yet): nothing to wait for, no walk (late_fix settle_skip). */
	if (!atomic_load_explicit(&hp_cuda_events_tracked,
				  memory_order_relaxed))
		return;
	if (len && len <= UINTPTR_MAX - a &&
	    hp_backend->quiesce == hp_cuda_quiesce &&
	    hp_maps_may_hold(a, a + len)) {
		hp_test_pause("settle_walk"); /* tests: the walk made */
		hp_registry_each_overlap(&hp_reg, a, len, settle_one, NULL);
	}
}

/* The capture gate held for a release (1; then hp_capture_unhold), or 0:
 * a capture prohibits this thread's calls (the caller's check decides). */
static int release_hold(void)
{
	for (;;) {
		if (hp_capture_hold())
			return 1;
		if (hp_capture_busy() || hp_capture_held())
			return 0;
		/* the capture counted at the first look ended: look again */
	}
}

static void say_parked(const char *what)
{
	HP_LOG_ONCE(HP_LOG_WARN, "%s of a block being registered while a CUDA "
		    "graph capture begins: refused (ENOMEM; its registration "
		    "cannot be undone before the capture ends)", what);
	errno = ENOMEM;
}

/* A refusal during a capture, said once per kind of call. */
struct refusal {
	_Atomic int said;
	const char *msg;
};

/* Release [a, a+len) before the caller unmaps (unmap: the program's
 * munmap, whose whole ranges may wait) or replaces it, holding the capture
 * gate from the check to the last pin (release_hold).  0; or -1, errno
 * ENOMEM: without the gate, hp_capture_holds(a, len) at least refuse (1:
 * a registered range, 2: part of one; 0: never asked), nothing released
 * (rf said); or a block being registered in the background parked (what:
 * the call, for say_parked). */
static int release_gated(uintptr_t a, size_t len, int unmap, int refuse,
			 struct refusal *rf, const char *what)
{
	hp_settle_range(a, len);
	int held = release_hold();
	if (!held && refuse && hp_capture_holds(a, len) >= refuse) {
		if (!atomic_exchange_explicit(&rf->said, 1,
					      memory_order_relaxed))
			hp_log(HP_LOG_WARN, "%s", rf->msg);
		errno = ENOMEM;
		return -1;
	}
	int stuck = 0;
	release_range(a, len, NULL, unmap, &stuck);
	if (held)
		hp_capture_unhold();
	if (stuck) {
		say_parked(what);
		return -1;
	}
	return 0;
}

int hp_munmap_range(void *a, size_t len)
{
	static struct refusal part = {
	    0, "munmap of part of a registered range (or of a block being "
	       "registered) while a CUDA graph is captured: refused (ENOMEM; "
	       "its registration cannot be split during the capture)"};
	uintptr_t p = (uintptr_t)a;
	/* asked only where the kernel would not refuse it first (EINVAL) */
	int refuse = !(p & (HP_PAGE_SIZE - 1)) && len <= UINTPTR_MAX - p;
	if (release_gated(p, len, 1, refuse ? 2 : 0, &part, "munmap"))
		return -1;
	return hp_munmap_do(a, len);
}

int hp_fixed_release(uintptr_t a, size_t len)
{
	static struct refusal over = {
	    0, "mmap(MAP_FIXED) over a registered range while a CUDA graph "
	       "is captured: refused (ENOMEM)"};
	if (release_gated(a, len, 0, 1, &over, "mmap(MAP_FIXED)"))
		return -1;
	if (hp_leaked_in(a, len)) {
		HP_LOG_ONCE(HP_LOG_WARN, "mmap(MAP_FIXED) over a range whose "
			    "device registration could not be released: "
			    "refused (ENOMEM)");
		errno = ENOMEM;
		return -1;
	}
	return 0;
}

void *hp_mremap_do(void *old, size_t oldlen, size_t newlen, int flags,
		   void *new_addr)
{
	uint64_t copies;
	hp_settle_range((uintptr_t)old, oldlen);
	if (flags & MREMAP_FIXED)
		hp_settle_range((uintptr_t)new_addr, newlen);
	int held = release_hold();
	if (!held && (hp_capture_holds((uintptr_t)old, oldlen) ||
		      ((flags & MREMAP_FIXED) &&
		       hp_capture_holds((uintptr_t)new_addr, newlen)))) {
		HP_LOG_ONCE(HP_LOG_WARN, "mremap of a registered range while a "
			    "CUDA graph is captured: refused (ENOMEM)");
		errno = ENOMEM; /* never moved, resized or replaced */
		return MAP_FAILED;
	}
	int stuck = 0;
	unsigned kind = release_range((uintptr_t)old, oldlen, &copies, 0,
				      &stuck);
	if (flags & MREMAP_FIXED)
		release_range((uintptr_t)new_addr, newlen, NULL, 0, &stuck);
	void *r = MAP_FAILED;
	if (stuck) {
		say_parked("mremap");
		kind = 0; /* what was released stays untracked */
	} else if (hp_leaked_in((uintptr_t)old, oldlen) ||
		   ((flags & MREMAP_FIXED) &&
		    hp_leaked_in((uintptr_t)new_addr, newlen))) {
		errno = ENOMEM; /* a refused release: never moved (invariant 1) */
		kind = 0;
	} else {
		r = hp_real.mremap(old, oldlen, newlen, flags, new_addr);
	}
	int e = errno;
	/* what moved (or stayed) is tracked again inside the hold: a
	 * capture begins after its registration, as after one call */
	if (kind && r != MAP_FAILED)
		hp_track_as((uintptr_t)r, hp_page_up(newlen), HOSTPIN_KIND_MMAP,
			    0, copies);
	else if (kind && oldlen)
		hp_track_as((uintptr_t)old & ~(HP_PAGE_SIZE - 1),
			    hp_page_up(oldlen), HOSTPIN_KIND_MMAP, 0, copies);
	if (held)
		hp_capture_unhold();
	errno = e;
	return r;
}

