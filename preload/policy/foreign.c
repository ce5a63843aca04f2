/* Registrations and imports the program makes itself over hostpin's ranges
 * (invariant 8).  Before the program's call, hostpin steps aside: it
 * unregisters every block the program's range overlaps and marks it
 * HP_F_FOREIGN.  A block stays so while ANY program range overlaps it: a
 * block may carry several (two cudaHostRegister calls over two parts of
 * it), and registering it again around one that remains would fail.  The
 * ranges live in a table (multiset: the same range may be registered twice,
 * the second call failing), grown with the next mmap, never under a driver
 * call.  Called with hp_in_hook raised (hooks.c). */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "../record.h"

struct frange {
	uintptr_t a, b; /* [a, b) */
};
static pthread_mutex_t fr_mu = PTHREAD_MUTEX_INITIALIZER;
static struct frange *fr; /* under fr_mu */
static size_t nfr, capfr;
/* nfr, for the lock-free negative in hp_foreign_overlaps: relaxed, a
 * stale zero only races with a program registration still in progress. */
static _Atomic size_t fr_count;

static uintptr_t end_of(const void *p, size_t n)
{
	uintptr_t a = (uintptr_t)p;
	return n > UINTPTR_MAX - a ? UINTPTR_MAX : a + n;
}

static int fr_add(uintptr_t a, uintptr_t b)
{
	int e = 0;
	pthread_mutex_lock(&fr_mu);
	if (nfr == capfr) {
		size_t ncap = capfr ? capfr * 2 : 256;
		struct frange *n = HP_REAL(mmap)(NULL, ncap * sizeof(*n),
						 PROT_READ | PROT_WRITE,
						 MAP_PRIVATE | MAP_ANONYMOUS,
						 -1, 0);
		if (n == MAP_FAILED) {
			e = ENOMEM;
			goto out;
		}
		if (fr) {
			memcpy(n, fr, nfr * sizeof(*n));
			HP_REAL(munmap)(fr, capfr * sizeof(*fr));
		}
		fr = n, capfr = ncap;
	}
	fr[nfr++] = (struct frange){a, b};
	atomic_store_explicit(&fr_count, nfr, memory_order_relaxed);
out:
	pthread_mutex_unlock(&fr_mu);
	return e;
}

/* Remove the latest range starting at a; 1 and *out if there was one. */
static int fr_remove(uintptr_t a, struct frange *out)
{
	int found = 0;
	pthread_mutex_lock(&fr_mu);
	for (size_t i = nfr; i-- > 0;)
		if (fr[i].a == a) {
			*out = fr[i];
			memmove(&fr[i], &fr[i + 1], (nfr - i - 1) * sizeof(*fr));
			nfr--;
			found = 1;
			break;
		}
	atomic_store_explicit(&fr_count, nfr, memory_order_relaxed);
	pthread_mutex_unlock(&fr_mu);
	return found;
}

int hp_foreign_overlaps(uintptr_t base, size_t len)
{
	if (atomic_load_explicit(&fr_count, memory_order_relaxed) == 0)
		return 0;
	uintptr_t end = end_of((void *)base, len);
	int hit = 0;
	pthread_mutex_lock(&fr_mu);
	for (size_t i = 0; i < nfr && !hit; i++)
		hit = fr[i].a < end && base < fr[i].b;
	pthread_mutex_unlock(&fr_mu);
	return hit;
}

int hp_foreign_hides(const void *p)
{
	hp_snap_t s;
	hp_rec_t *r;
	if (!hp_registry_maybe(&hp_reg, (uintptr_t)p) ||
	    (r = hp_registry_lookup(&hp_reg, (uintptr_t)p, &s)) == NULL)
		return 0;
	return !(hp_rflags(r) & HP_F_FOREIGN);
}

/* A page of hostpin's own that nothing ever registers. */
static char pageable_probe[4096] __attribute__((aligned(4096)));

void *hp_foreign_asked(void *p)
{
	return hp_foreign_hides(p) ? (void *)pageable_probe : p;
}

/* Claim r for a change of its foreign state: its busy claim, waited for
 * while another thread holds it (another thread's registration or
 * unregistration of a piece of the same block, a copy's pin; the
 * registration thread's: what is left cancelled, *cancelled set): a
 * block skipped here would lose a range the program still holds
 * (issue 39: 8 threads registering pieces of one block).  0 if r is no
 * longer a live block (being released: nothing of ours stays, or what a
 * partial unmap left is found after carve_wait). */
static uint32_t claim(hp_rec_t *r, hp_snap_t *s, int *cancelled)
{
	for (;;) {
		uint32_t st = hp_busy_begin(r, s);
		if (st)
			return st;
		uint32_t now = hp_word_state(s->word);
		if (now != HP_REC_BUSY && now != HP_REC_LIVE &&
		    now != HP_REC_CACHED)
			return 0;
		/* A LIVE or CACHED snapshot whose claim failed is stale:
		 * another thread claimed r since (a second piece's step
		 * aside).  Skipping r then would let the program's
		 * registration overlap ours (late_reg own_pieces, 1 run in
		 * 20): looked at again below. */
		if (now == HP_REC_BUSY && cancelled && hp_register_cancel(r))
			*cancelled = 1;
		else
			sched_yield();
		/* the holder changed the state word: a fresh snapshot */
		if (hp_registry_lookup_base(&hp_reg, s->base, s) != r)
			return 0;
	}
}

/* Undo hostpin's registration of r (claimed) once no copy counted on it
 * before is in flight (hp_hold_drain, passing.c): a copy queued by another
 * thread into another part of the block (issue 39:
 * final-violation-96518924, a batch D2H under HOSTPIN_COPY=sync not yet
 * waited for) must not see its registration vanish.  Copies starting
 * meanwhile wait for HP_F_ASIDE to go.  A forked child makes no driver
 * call (and its counts are the parent's threads'). */
static int unpin_aside(hp_rec_t *r, const hp_snap_t *s)
{
	if (hp_in_child || !(hp_rflags(r) & HOSTPIN_REGISTERED))
		return hp_unpin(r, s->base, s->len);
	if (hp_hold_drain(r) != 0) {
		HP_LOG_ONCE(HP_LOG_WARN, "the program registers %p, "
			    "part of a block of hostpin's that a copy "
			    "in flight has waited on for 10 s (its "
			    "stream may wait for the registering "
			    "thread): refused as memory already "
			    "registered (712)", (void *)s->base);
		return EBUSY;
	}
	int e = hp_unpin(r, s->base, s->len);
	hp_hold_drain_end(r);
	return e;
}

struct aside {
	int n; /* blocks stepped aside from */
	int busy; /* one still had a copy in flight (unpin_aside) */
};
static int foreign_one(hp_rec_t *r, const hp_snap_t *s0, void *arg)
{
	struct aside *w = arg;
	/* being registered in the background: what is left cancelled, the
	 * pieces made undone, then stepped aside as for any block */
	int cancelled = 0;
	hp_snap_t s = *s0;
	uint32_t st = claim(r, &s, &cancelled);
	if (!st)
		return 0;
	/* Step aside: the application's registration must not fail with
	 * "already registered" because of ours.  (A cancelled background
	 * registration has undone its pieces: nothing of ours is left.) */
	int e = unpin_aside(r, &s);
	if (e == 0 || cancelled) {
		if (!(hp_rflags(r) & HP_F_FOREIGN))
			HP_CTR_ADD(foreign_ranges, 1);
		hp_set_rflags(r, hp_rflags(r) | HP_F_FOREIGN);
		w->n++;
	} else if (e == EBUSY) {
		w->busy = 1;
	}
	hp_busy_end(r, st);
	return 0;
}

/* A partial unmap (maps.c) holds its block, being released, until its
 * survivors are new records that keep the block's registrations: the walk
 * found the block gone (claim) or passed before the survivors were
 * tracked, and the program's registration overlapped ours (712).  A
 * survivor tracked after the range was added steps aside by itself
 * (pinpart.c, hp_pin_each); before, the walk after this wait finds it.
 * 1 if a release was in progress.  Bounded as unpin_aside (the release
 * may wait for copies whose stream waits for this thread). */
static int carve_wait(void)
{
	/* seq_cst: the walk's reads before the count's */
	atomic_thread_fence(memory_order_seq_cst);
	if (!hp_carving())
		return 0;
	uint64_t t0 = hp_now_ns();
	for (unsigned i = 0; hp_carving(); i++) {
		if (i < 1000) {
			sched_yield();
			continue;
		}
		if (hp_now_ns() - t0 > HP_ASIDE_WAIT_NS &&
		    i - 1000 >= HP_ASIDE_WAIT_LOOKS)
			break;
		struct timespec ts = {0, 1000000};
		nanosleep(&ts, NULL);
	}
	return 1;
}

int hp_foreign_begin(void *p, size_t n)
{
	if (n == 0)
		return 0;
	/* The range first: a block tracked meanwhile inside it (a survivor
	 * of a partial munmap) is then left alone by hp_pin. */
	uintptr_t a = (uintptr_t)p, b = end_of(p, n);
	if (fr_add(a, b)) {
		HP_LOG_ONCE(HP_LOG_WARN, "out of memory for the program's "
			    "registrations: hostpin cannot step aside for "
			    "%zu bytes at %p", n, p);
		return 0;
	}
	/* seq_cst: the range before the walk's reads; a survivor of a
	 * partial unmap tracks itself before it looks (pinpart.c): one of
	 * the two sees the other */
	atomic_thread_fence(memory_order_seq_cst);
	/* Compared as intervals: a range that starts below hostpin's lowest
	 * block and ends inside it overlaps that block too. */
	struct aside w = {0, 0};
	hp_registry_each_overlap(&hp_reg, a, b - a, foreign_one, &w);
	if (carve_wait())
		/* what a partial unmap left of a block it held (claim: being
		 * released) or had not yet tracked when the walk passed:
		 * stepped aside from now */
		hp_registry_each_overlap(&hp_reg, a, b - a, foreign_one, &w);
	if (w.busy)
		return EBUSY; /* the caller ends it (hp_foreign_end) */
	if (!w.n) {
		/* Nothing of ours under it: not kept (the program may never
		 * unregister memory that is not ours). */
		struct frange x;
		fr_remove(a, &x);
	}
	return 0;
}

static int unforeign_one(hp_rec_t *r, const hp_snap_t *s0, void *arg)
{
	(void)arg;
	uint32_t st;
	hp_snap_t sn = *s0;
	const hp_snap_t *s = &sn;
	/* Ours again only once no range of the program overlaps it (asked
	 * again under the claim: another thread may register a piece
	 * meanwhile). */
	if (!(hp_rflags(r) & HP_F_FOREIGN) ||
	    hp_foreign_overlaps(s->base, s->len) ||
	    !(st = claim(r, &sn, NULL)))
		return 0;
	if (!(hp_rflags(r) & HP_F_FOREIGN) ||
	    hp_foreign_overlaps(s->base, s->len)) {
		hp_busy_end(r, st);
		return 0;
	}
	hp_set_rflags(r, hp_rflags(r) & ~HP_F_FOREIGN);
	/* Ours again, but not registered at once: the program's copies
	 * through its own registration were not counted, and a program that
	 * pins and unpins one buffer in turn (DeepSpeed's native backend)
	 * would have it registered by hostpin between its own registrations.
	 * It earns registration anew (HOSTPIN_PIN_AFTER copies). */
	hp_pin_earn_again(r, s);
	hp_busy_end(r, st);
	return 0;
}

void hp_foreign_end(void *p)
{
	struct frange x;
	if (fr_remove((uintptr_t)p, &x))
		hp_registry_each_overlap(&hp_reg, x.a, x.b - x.a,
					 unforeign_one, NULL);
}

void hp_import_dropped(void *p)
{
	struct timespec t0 = {0, 0};
	for (unsigned spins = 0;; spins++) {
		hp_snap_t s;
		hp_rec_t *r = hp_registry_lookup(&hp_reg, (uintptr_t)p, &s);
		if (r == NULL || (hp_rflags(r) & HP_F_FOREIGN))
			return;
		uint32_t st = hp_busy_begin(r, &s);
		if (!st) {
			/* Another thread holds it (a discard or a copy
			 * importing it, adoption): the import the program
			 * just released may be the one it made, and the
			 * block would stay flagged imported, never imported
			 * again (audit c): looked at once it let go. */
			if (hp_word_state(s.word) != HP_REC_BUSY ||
			    hp_waited(&t0, spins, 10))
				return;
			if (!spins)
				hp_test_pause("import_dropped_wait");
			sched_yield();
			continue;
		}
		/* The program released our import from (at least) one
		 * driver.  The backend's unpin asks each driver whether our
		 * import is still there and releases only what is; then the
		 * block is imported again. */
		if ((hp_rflags(r) & HOSTPIN_REGISTERED) &&
		    hp_unpin(r, s.base, s.len) == 0)
			hp_pin(r, s.base, s.len);
		hp_busy_end(r, st);
		return;
	}
}
