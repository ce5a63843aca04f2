/* The cache of freed blocks.
 * Freed blocks stay mapped and pinned, and are handed out again for an
 * allocation that fits them with at most 1/8 waste, oldest first (so a
 * block just freed is not the next one reused).  Bounded by HOSTPIN_CACHE;
 * while nothing gets pinned, by 64 MiB of blocks up to 32 MiB, so a process
 * without a device uses memory much as it would with glibc.  The lock is never held across a
 * backend call.
 * Retention follows the job: a block cached unused for HOSTPIN_CACHE_DECAY_MS
 * is given back (unpinned, unmapped), by a helper thread while the cache
 * holds pinned blocks (so it happens even if the process makes no further
 * call), else at the next cache call; and all hostpin processes of the user
 * on the node keep at most HOSTPIN_NODE_CACHE cached together (the ledger). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../node/ledger.h"
#include "../record.h"

#define CACHE_SLOTS 128
#define CACHE_IDLE_CAP ((size_t)64 << 20)
static pthread_mutex_t cache_mu = PTHREAD_MUTEX_INITIALIZER;
static struct centry {
	hp_rec_t *rec;
	uintptr_t base;
	size_t len;
	uint64_t t; /* when it was cached (hp_now_ns) */
	uint32_t gen; /* the record's generation then */
} cache[CACHE_SLOTS];
static int ncache;
static pthread_cond_t decay_cv;
static int decay_on; /* this process has the decay thread; under cache_mu */
/* At exit the thread stops giving blocks back: a driver call racing with
 * the driver's own teardown is not safe.  decay_busy: it is evicting now
 * (outside the lock); decay_stop: it must not start again. */
static int decay_busy, decay_stop;
static size_t cache_bytes;

#define CACHE_IDLE_MAX_BLOCK ((size_t)32 << 20)

/* The cap for a block of len bytes.  While the device is not in use (no
 * block pinned, no device copy seen) the cache behaves like glibc's heap:
 * blocks up to 32 MiB (glibc's largest dynamic mmap threshold), 64 MiB in
 * all; larger ones are unmapped at once, as glibc unmaps its mmapped
 * chunks, so caching them cannot thrash. */
static size_t cache_cap(size_t len)
{
	size_t cap = (size_t)hp_opt[HP_OPT_CACHE];
	/* Device copies seen count, not only pins: a block freed before its
	 * HOSTPIN_PIN_AFTER-th copy keeps its count in the cache, so the next
	 * step's buffer of that size, served from it, is registered. */
	int device_in_use =
	    hp_backend != &hp_backend_none && !hp_in_child &&
	    (atomic_load_explicit(&hp_ctr.pinned_blocks_now,
				  memory_order_relaxed) > 0 ||
	     atomic_load_explicit(&hp_ctr.copies_seen, memory_order_relaxed) > 0);
	if (device_in_use)
		return cap;
	if (len > CACHE_IDLE_MAX_BLOCK)
		return 0;
	return cap < CACHE_IDLE_CAP ? cap : CACHE_IDLE_CAP;
}

void hp_cache_lock(void) { pthread_mutex_lock(&cache_mu); }
/* A forked child has no decay thread (it starts its own when it needs
 * one). */
void hp_cache_fork_child(void) { decay_on = decay_busy = 0; }
void hp_cache_unlock(void) { pthread_mutex_unlock(&cache_mu); }
int hp_cache_holds(const hp_rec_t *r)
{
	pthread_mutex_lock(&cache_mu);
	int yes = 0;
	for (int i = 0; i < ncache && !yes; i++)
		yes = cache[i].rec == r;
	pthread_mutex_unlock(&cache_mu);
	return yes;
}

/* Is e's block still the one cached, cached or held (busy) now?  (Not
 * when an munmap took it meanwhile, its record maybe reused.) */
static int still_cached(const struct centry *e, hp_snap_t *s)
{
	uint32_t st;
	return hp_registry_lookup(&hp_reg, e->base, s) == e->rec &&
	       s->base == e->base && (uint32_t)(s->word >> 32) == e->gen &&
	       ((st = hp_word_state(s->word)) == HP_REC_CACHED ||
		st == HP_REC_BUSY);
}

static void recache(const struct centry *e);

static void evict(struct centry *v, int n)
{
	for (int i = 0; i < n; i++) {
		hp_snap_t s;
		if (!still_cached(&v[i], &s))
			continue; /* an munmap took it meanwhile */
		/* Held by another thread (adoption, the registration thread:
		 * what is left cancelled), or the claim lost to such a hold:
		 * waited for.  Skipped, it would stay mapped and registered
		 * for good, out of the cache.  Where the wait cannot be made
		 * now (the registration parked for a capture), cached again. */
		if (!hp_claim_release(v[i].rec, &s)) {
			if (still_cached(&v[i], &s))
				recache(&v[i]);
			continue;
		}
		HP_CTR_ADD(cache_evictions, 1);
		/* invariant 1: unpin, forget, and only then unmap */
		if (hp_untrack_release(v[i].rec, &s) == 0)
			hp_real.munmap((void *)s.base, s.len);
	}
}

/* ---- decay ---- */
static uint64_t decay_ns(void)
{
	return hp_opt[HP_OPT_CACHE_DECAY_MS] * 1000000u;
}

/* Under cache_mu: move the entries cached before now - decay (the oldest
 * first: entries are kept in the order they were cached) into v. */
static int take_expired(struct centry *v, uint64_t now)
{
	int n = 0;
	while (ncache && cache[0].t + decay_ns() <= now) {
		v[n++] = cache[0];
		cache_bytes -= cache[0].len;
		memmove(&cache[0], &cache[1],
			sizeof(cache[0]) * (size_t)(ncache - 1));
		ncache--;
		HP_CTR_SUB(cached_blocks, 1);
		HP_CTR_SUB(cached_bytes, v[n - 1].len);
	}
	return n;
}


/* An entry whose block could not be evicted now (still_cached, its holder
 * not waited for): back at the end of the cache, as if cached now (the
 * decay thread looks again a decay later).  With the cache's slots all
 * taken meanwhile it stays out (said once): mapped and registered. */
static void recache(const struct centry *e)
{
	pthread_mutex_lock(&cache_mu);
	if (ncache < CACHE_SLOTS) {
		cache[ncache] = *e;
		cache[ncache++].t = hp_now_ns();
		cache_bytes += e->len;
		HP_CTR_ADD(cached_blocks, 1);
		HP_CTR_ADD(cached_bytes, e->len);
	} else {
		HP_LOG_ONCE(HP_LOG_WARN, "a cached block of %zu bytes at %p "
			    "could not be given back (held during a CUDA graph "
			    "capture) nor cached again: kept mapped",
			    e->len, (void *)e->base);
	}
	pthread_mutex_unlock(&cache_mu);
}

/* The helper thread: sleeps until the oldest entry is due, gives back
 * what is due, and sleeps without a deadline while the cache is empty. */
static void *decay_main(void *arg)
{
	(void)arg;
	hp_in_hook = 1; /* nothing this thread does is the program's */
	static struct centry v[CACHE_SLOTS];
	pthread_mutex_lock(&cache_mu);
	for (;;) {
		if (!ncache) {
			pthread_cond_wait(&decay_cv, &cache_mu);
			continue;
		}
		uint64_t now = hp_now_ns(), due = cache[0].t + decay_ns();
		if (due > now) {
			struct timespec ts = {(time_t)(due / 1000000000u),
					      (long)(due % 1000000000u)};
			pthread_cond_timedwait(&decay_cv, &cache_mu, &ts);
			continue;
		}
		if (decay_stop) {
			pthread_cond_wait(&decay_cv, &cache_mu); /* for ever */
			continue;
		}
		int n = take_expired(v, now);
		decay_busy = 1;
		pthread_mutex_unlock(&cache_mu);
		evict(v, n);
		pthread_mutex_lock(&cache_mu);
		decay_busy = 0;
		pthread_cond_broadcast(&decay_cv);
	}
	return NULL;
}

/* Registered with atexit when the thread starts, so it runs before any
 * library's destructor (the driver's included): wait for an eviction in
 * progress, and start no other. */
static void decay_exit(void)
{
	pthread_mutex_lock(&cache_mu);
	decay_stop = 1;
	while (decay_on && decay_busy)
		pthread_cond_wait(&decay_cv, &cache_mu);
	pthread_mutex_unlock(&cache_mu);
}

/* Under cache_mu: start the helper thread once this process caches a
 * pinned block (a process that never does gets no thread: invariant 9; a
 * forked child starts its own).  Every signal blocked (invariant 11). */
static void decay_start(void)
{
	if (decay_on)
		return;
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&decay_cv, &ca); /* a fork's child: fresh */
	pthread_condattr_destroy(&ca);
	static int exit_hook;
	if (hp_thread_start(decay_main, NULL, 0) == 0) {
		decay_on = 1;
		if (!exit_hook)
			exit_hook = atexit(decay_exit) == 0;
	}
	else
		HP_LOG_ONCE(HP_LOG_WARN, "cannot start the cache decay "
			    "thread: idle cached blocks are given back only at "
			    "the next allocation or free");
}

void *hp_cache_take(size_t len, size_t align, size_t *got)
{
	if (!atomic_load_explicit(&hp_ctr.cached_blocks, memory_order_relaxed))
		return NULL;
	struct centry v[CACHE_SLOTS];
	int nv = 0;
	int node = hp_numa_want(); /* only a block on the node asked for */
	hp_backend_events_act();
	pthread_mutex_lock(&cache_mu);
	if (!decay_on) { /* no thread: expire inline */
		nv = take_expired(v, hp_now_ns());
		if (nv) {
			pthread_mutex_unlock(&cache_mu);
			evict(v, nv);
			pthread_mutex_lock(&cache_mu);
		}
	}
	for (int i = 0; i < ncache; i++) {
		struct centry e = cache[i];
		if (e.len < len || e.len - len > len / 8 ||
		    (align > HP_PAGE_SIZE && (e.base & (align - 1))) ||
		    (node >= 0 && hp_rnode(e.rec) != node))
			continue;
		hp_snap_t s;
		int live = still_cached(&e, &s);
		if (live && hp_word_state(s.word) == HP_REC_BUSY)
			/* held by another thread (adoption, the registration
			 * thread: a block queued before its free): still
			 * cached, for a later allocation.  Dropped, it would
			 * stay mapped and registered for good. */
			continue;
		if (live && !hp_registry_claim(e.rec, s.word, HP_REC_LIVE)) {
			i--; /* the claim lost: looked at again */
			continue;
		}
		memmove(&cache[i], &cache[i + 1],
			sizeof(cache[0]) * (size_t)(ncache - i - 1));
		ncache--;
		cache_bytes -= e.len;
		HP_CTR_SUB(cached_blocks, 1);
		HP_CTR_SUB(cached_bytes, e.len);
		if (!live) {
			i--; /* stale: released by an munmap meanwhile */
			continue;
		}
		pthread_mutex_unlock(&cache_mu);
		HP_CTR_ADD(cache_hits, 1);
		if (hp_opt[HP_OPT_BACKTRACE] && (hp_rflags(e.rec) & HP_PIN_MASK)) {
			/* pinned memory now owned by the new caller's site */
			hp_site_account(hp_rsite(e.rec), e.len, 0);
			hp_set_rsite(e.rec, hp_site_capture());
			hp_site_account(hp_rsite(e.rec), e.len, 1);
		}
		hp_count_track(HOSTPIN_KIND_MALLOC, e.len, 1);
		*got = e.len;
		return (void *)e.base;
	}
	pthread_mutex_unlock(&cache_mu);
	return NULL;
}

/* What this process may still cache under the node-wide budget: the
 * budget less what the other live processes hold. */
static size_t node_room(void)
{
	uint64_t budget = hp_opt[HP_OPT_NODE_CACHE];
	if (!hp_ledger_on())
		return budget;
	uint64_t own = atomic_load_explicit(&hp_ctr.cached_bytes,
					    memory_order_relaxed);
	uint64_t all = HP_LEDGER_SUM(cached_bytes);
	uint64_t others = all > own ? all - own : 0;
	if (others >= budget && hp_ledger_reap()) /* some were dead */
		all = HP_LEDGER_SUM(cached_bytes),
		others = all > own ? all - own : 0;
	return others >= budget ? 0 : (size_t)(budget - others);
}

int hp_cache_keep(hp_rec_t *r, hp_snap_t *s)
{
	size_t cap = cache_cap(s->len);
	if (!decay_ns() || (hp_rflags(r) & (HP_F_FOREIGN | HOSTPIN_KIND_MMAP)))
		return 0;
	/* an unguarded copy entry point was found while it was being
	 * released (the coverage check's walk skipped it): not kept
	 * registered, released (audit e) */
	if ((hp_rflags(r) & HOSTPIN_REGISTERED) && hp_coverage_bad())
		return 0;
	/* the node's budget matters once the device is in use; idle caches are
	 * small (cache_cap) and skip the ledger scan */
	size_t room = cap > CACHE_IDLE_CAP ? node_room() : cap;
	int node_bound = room < cap;
	if (node_bound)
		cap = room;
	uint64_t now = hp_now_ns();
	if (s->len > cap) {
		if (!node_bound)
			return 0;
		/* not kept; what this process holds beyond the node's room
		 * goes too, so the node's total comes back under budget */
		struct centry v[CACHE_SLOTS];
		int nv = 0;
		pthread_mutex_lock(&cache_mu);
		while (ncache && cache_bytes > cap) {
			v[nv++] = cache[0];
			cache_bytes -= cache[0].len;
			memmove(&cache[0], &cache[1],
				sizeof(cache[0]) * (size_t)(ncache - 1));
			ncache--;
			HP_CTR_SUB(cached_blocks, 1);
			HP_CTR_SUB(cached_bytes, v[nv - 1].len);
		}
		pthread_mutex_unlock(&cache_mu);
		evict(v, nv);
		return 0;
	}
	/* While a CUDA graph is captured, no wait for its last copy
	 * (invariant 13): not kept, its release waits instead. */
	if (hp_capture_busy() &&
	    atomic_load_explicit(&r->user[HP_U_EVENT], memory_order_relaxed))
		return 0;
	/* Not reused while a copy that used it may still run: waited for,
	 * or, where the backend cannot wait (Level Zero copies appended, not
	 * yet run), not kept: its release waits until they ran. */
	if (hp_backend->busy && hp_backend->busy((void *)s->base, s->len))
		return 0;
	if (hp_backend->quiesce) {
		hp_backend->quiesce(r);
		hp_backend_events_act();
	}
	/* its CUDA context ended while it was being released (the end's
	 * walk skipped it): its registration died; kept so, it would be
	 * handed out flagged registered over a dead one (audit d): pending
	 * again, registered by adoption or its next copies */
	hp_pin_lost_held(r, s->len);
	struct centry victims[CACHE_SLOTS];
	int nv = 0;
	pthread_mutex_lock(&cache_mu);
	int pinned = (hp_rflags(r) & HP_PIN_MASK) != 0;
	if (!decay_on)
		nv = take_expired(victims, now);
	while (ncache && (cache_bytes + s->len > cap || ncache == CACHE_SLOTS)) {
		victims[nv++] = cache[0];
		cache_bytes -= cache[0].len;
		memmove(&cache[0], &cache[1],
			sizeof(cache[0]) * (size_t)(ncache - 1));
		ncache--;
		HP_CTR_SUB(cached_blocks, 1);
		HP_CTR_SUB(cached_bytes, victims[nv - 1].len);
	}
	/* relaxed: we hold r (claimed); the claim's CAS orders */
	hp_registry_claim(r, atomic_load_explicit(&r->word, memory_order_relaxed), HP_REC_CACHED);
	cache[ncache++] = (struct centry){
	    r, s->base, s->len, now,
	    (uint32_t)(atomic_load_explicit(&r->word, memory_order_relaxed) >>
		       32)};
	cache_bytes += s->len;
	HP_CTR_ADD(cached_blocks, 1);
	HP_CTR_ADD(cached_bytes, s->len);
	if (pinned)
		decay_start();
	if (ncache == 1 && decay_on)
		pthread_cond_signal(&decay_cv); /* it slept with no deadline */
	pthread_mutex_unlock(&cache_mu);
	hp_count_track(HOSTPIN_KIND_MALLOC, s->len, 0);
	evict(victims, nv);
	return 1;
}
