/* The application's own mappings: which mmaps are tracked and pinned, and
 * what munmap, mremap, MAP_FIXED and madvise do to tracked or owned ranges:
 * unpin the affected part first (invariant 1), pin what survives.  Called
 * from wrap_mmap.c with hp_in_hook raised. */
#include <dlfcn.h>
#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>

#include "record.h"
#include "resolve.h"

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
};

static int carve_one(hp_rec_t *r, const hp_snap_t *s0, void *arg)
{
	struct carve *c = arg;
	hp_snap_t sv = *s0, *s = &sv;
	if (!hp_claim_release(r, s))
		return 0; /* someone else is releasing it */
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
	if (hp_untrack(r, s))
		return 0; /* leaked: stays registered, never reused */
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

/* Might [a, b) overlap a tracked range?  An interval test against the
 * registry's bounds: a range that starts below the lowest tracked range
 * (a reservation released whole after a commit inside it) still reaches
 * the walk. */
static int may_hold(uintptr_t a, uintptr_t b)
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
static unsigned release_range(uintptr_t a, size_t len, uint64_t *copies)
{
	struct carve c = {a & ~(HP_PAGE_SIZE - 1), hp_page_up(a + len), 0, 0};
	if (len && may_hold(c.a, c.b))
		hp_registry_each_overlap(&hp_reg, c.a, c.b - c.a, carve_one,
					 &c);
	if (copies)
		*copies = c.copies;
	return c.kind;
}

void hp_range_release(uintptr_t a, size_t len) { release_range(a, len, NULL); }

void *hp_mremap_do(void *old, size_t oldlen, size_t newlen, int flags,
		   void *new_addr)
{
	uint64_t copies;
	unsigned kind = release_range((uintptr_t)old, oldlen, &copies);
	if (flags & MREMAP_FIXED)
		release_range((uintptr_t)new_addr, newlen, NULL);
	if (hp_leaked_in((uintptr_t)old, oldlen) ||
	    ((flags & MREMAP_FIXED) && hp_leaked_in((uintptr_t)new_addr, newlen))) {
		errno = ENOMEM; /* a refused release: never moved (invariant 1) */
		return MAP_FAILED;
	}
	void *r = hp_real.mremap(old, oldlen, newlen, flags, new_addr);
	if (!kind)
		return r;
	int e = errno;
	if (r != MAP_FAILED)
		hp_track_as((uintptr_t)r, hp_page_up(newlen), HOSTPIN_KIND_MMAP,
			    0, copies);
	else if (oldlen)
		hp_track_as((uintptr_t)old & ~(HP_PAGE_SIZE - 1),
			    hp_page_up(oldlen), HOSTPIN_KIND_MMAP, 0, copies);
	errno = e;
	return r;
}

struct advise {
	uintptr_t cur, end, to;
	int advice, ret, err;
};

static void advise_gap(struct advise *ad, uintptr_t to)
{
	if (to > ad->cur) {
		if (hp_real.madvise((void *)ad->cur, to - ad->cur, ad->advice) &&
		    !ad->ret)
			ad->ret = -1, ad->err = errno;
	}
}

static void discard_cb(void *arg)
{
	struct advise *ad = arg;
	advise_gap(ad, ad->to);
}

/* The first record overlapping [cur, end), with its snapshot. */
struct first {
	hp_rec_t *r;
	hp_snap_t s;
};

static int first_one(hp_rec_t *r, const hp_snap_t *s, void *arg)
{
	struct first *f = arg;
	f->r = r, f->s = *s;
	return 1;
}

/* Purge the records [ad->cur, ad->end) overlaps, one at a time, and the
 * gaps between them.  A record another thread holds (a purge of another
 * part of it, adoption) or releases is waited for, then looked up again:
 * its pages are never purged while it may be pinned (invariant 1), and the
 * gap purge never runs over it. */
static void advise_records(struct advise *ad)
{
	while (ad->cur < ad->end) {
		struct first f = {NULL, {0, 0, 0}};
		if (!may_hold(ad->cur, ad->end) ||
		    !hp_registry_each_overlap(&hp_reg, ad->cur,
					      ad->end - ad->cur, first_one, &f))
			return;
		hp_rec_t *r = f.r;
		const hp_snap_t *s = &f.s;
		uintptr_t a = s->base > ad->cur ? s->base : ad->cur;
		uintptr_t b = s->base + s->len < ad->end ? s->base + s->len
							 : ad->end;
		if (hp_word_state(s->word) == HP_REC_LEAKED) {
			/* still registered (a refused release): never
			 * discarded */
			advise_gap(ad, a);
			ad->cur = b;
			if (!ad->ret)
				ad->ret = -1, ad->err = EBUSY;
			continue;
		}
		uint32_t st = hp_busy_begin(r, s);
		if (!st) {
			/* held or being released by another thread: wait,
			 * then look again from ad->cur */
			sched_yield();
			continue;
		}
		advise_gap(ad, a);
		ad->cur = a;
		ad->to = b;
		/* Locked pages refuse DONTNEED (EINVAL), and a registered
		 * page must not be discarded (invariant 1): unpin the cells
		 * [a, b) touches, discard, pin them again (their pages now
		 * zero). */
		if (hp_pin_discard(r, s, a, b, discard_cb, ad) && !ad->ret)
			ad->ret = -1, ad->err = EBUSY;
		ad->cur = b;
		hp_busy_end(r, st);
	}
}

int hp_madvise_do(void *a, size_t len, int advice)
{
	struct advise ad = {(uintptr_t)a, (uintptr_t)a + hp_page_up(len), 0,
			    advice, 0, 0};
	if (((uintptr_t)a & (HP_PAGE_SIZE - 1)) || ad.end < ad.cur) {
		errno = EINVAL;
		return -1;
	}
	advise_records(&ad);
	advise_gap(&ad, ad.end);
	if (ad.ret)
		errno = ad.err;
	return ad.ret;
}
