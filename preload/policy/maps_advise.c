/* madvise over tracked ranges (hp_madvise_do): the records a discard
 * overlaps are held one at a time, their cells unpinned, the pages
 * discarded and pinned again (invariant 1: a registered page is never
 * discarded); during a CUDA graph capture a discard is zeroed, skipped or
 * refused instead (maps.c's comment on the program's unmaps during a
 * capture, invariant 13).  The rest of the program's mappings (tracking,
 * munmap, mremap, MAP_FIXED) is maps.c's.  Called from wrap_mmap.c with
 * hp_in_hook raised. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../record.h"
#include "../base/resolve.h"

#ifndef MADV_DONTNEED_LOCKED
#define MADV_DONTNEED_LOCKED 24 /* Linux 5.18; headers may lack it */
#endif

/* [a, b) of private anonymous memory reads zero, as after MADV_DONTNEED;
 * 0, or -1 if a page cannot be written (read(2) says EFAULT there). */
static int zero_range(uintptr_t a, uintptr_t b)
{
	int fd = (int)syscall(SYS_openat, AT_FDCWD, "/dev/zero",
			      O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	while (a < b) {
		long n = syscall(SYS_read, fd, (void *)a, b - a);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		a += (uintptr_t)n;
	}
	syscall(SYS_close, fd);
	return a < b ? -1 : 0;
}

static int discard_held(hp_rec_t *r, uintptr_t a, uintptr_t b, int advice)
{
	if (advice == MADV_FREE)
		return 0; /* lazy: the pages may keep their contents */
	int private_anon = (hp_rflags(r) & HOSTPIN_KIND_MALLOC) ||
			   hp_opt[HP_OPT_MMAP] == HP_MMAP_PRIVATE;
	if (advice == MADV_DONTNEED || advice == MADV_DONTNEED_LOCKED)
		if (private_anon && zero_range(a, b) == 0)
			return 0;
	HP_LOG_ONCE(HP_LOG_WARN, "madvise discard of a registered range while "
		    "a CUDA graph is captured: refused (EBUSY)");
	return EBUSY;
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
		if (!hp_maps_may_hold(ad->cur, ad->end) ||
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
			 * then look again from ad->cur (the registration
			 * thread's block: what is left cancelled, after one
			 * piece at most, asleep) */
			int c = hp_register_cancel(r);
			if (c < 0) {
				/* parked for a capture (maybe this thread's):
				 * as a registered block during a capture */
				advise_gap(ad, a);
				if (discard_held(r, a, b, ad->advice) &&
				    !ad->ret)
					ad->ret = -1, ad->err = EBUSY;
				ad->cur = b;
			} else if (!c)
				sched_yield();
			continue;
		}
		advise_gap(ad, a);
		ad->cur = a;
		ad->to = b;
		/* Locked pages refuse DONTNEED (EINVAL), and a registered
		 * page must not be discarded (invariant 1): unpin the cells
		 * [a, b) touches, discard, pin them again (their pages now
		 * zero).  The capture gate is held across all of it, as
		 * one driver call holds it: a capture that begins meanwhile
		 * waits for its end, never cuts it between the unpin and
		 * the pin again (that pin then refused, its undo too: cells
		 * left registered under a record counted unpinned, then
		 * unmapped registered: tests/fuzz/cases/discard-capture-
		 * 552341.prog).  No hold: a capture is in progress. */
		int reg = (hp_rflags(r) & HOSTPIN_REGISTERED) != 0;
		if (reg) /* its last copy waited for before the gate */
			hp_settle_range(a, b - a);
		int held = reg && hp_capture_hold();
		if (reg && !held) {
			/* no unregistration now: zeroed, skipped or refused */
			if (discard_held(r, a, b, ad->advice) && !ad->ret)
				ad->ret = -1, ad->err = EBUSY;
		} else if (hp_pin_discard(r, s, a, b, discard_cb, ad) &&
			   !ad->ret)
			ad->ret = -1, ad->err = EBUSY;
		if (held)
			hp_capture_unhold();
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
