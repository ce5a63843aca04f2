/* Blocks and mappings: hostpin's own mappings for large allocations, the
 * application mmaps it tracks, and the pin policy between them and the
 * backend.  Every function here runs with hp_in_hook raised by its caller
 * in interpose.c, so anything it calls that allocates or maps goes straight
 * to the next allocator. */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>

#include "hostpin.h"
#include "hp.h"

hp_registry_t hp_reg = HP_REGISTRY_INIT;

#define PAGE HP_PAGE_SIZE
#define KIND_MASK (HOSTPIN_KIND_MALLOC | HOSTPIN_KIND_MMAP)
#define PIN_MASK (HOSTPIN_LOCKED | HOSTPIN_REGISTERED)

static size_t page_up(size_t n) { return (n + PAGE - 1) & ~(PAGE - 1); }

/* The allocation site (HOSTPIN_BACKTRACE) rides in the flags word's upper
 * half; rflags()/set_rflags() see only the lower. */
#define SITE_SHIFT 32

static unsigned rsite(hp_rec_t *r)
{
	return (unsigned)(atomic_load_explicit(&r->user[HP_U_FLAGS],
					       memory_order_relaxed) >>
			  SITE_SHIFT);
}

static unsigned rflags(hp_rec_t *r)
{
	/* relaxed: flags are written by the thread that owns the record
	 * (it won the claim or created it); other readers only report. */
	return (unsigned)atomic_load_explicit(&r->user[HP_U_FLAGS],
					      memory_order_relaxed);
}

static void set_rflags(hp_rec_t *r, unsigned f)
{
	atomic_store_explicit(&r->user[HP_U_FLAGS],
			      ((uintptr_t)rsite(r) << SITE_SHIFT) | f,
			      memory_order_relaxed);
}

static void set_rsite(hp_rec_t *r, unsigned site)
{
	atomic_store_explicit(&r->user[HP_U_FLAGS],
			      ((uintptr_t)site << SITE_SHIFT) | rflags(r),
			      memory_order_relaxed);
}

/* ---- pin policy ---- */

/* Reserve len bytes under HOSTPIN_MAX_PINNED; 0 if over the cap. */
static int cap_reserve(size_t len)
{
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

static void pin(hp_rec_t *r, uintptr_t base, size_t len)
{
	if (hp_backend == &hp_backend_none || hp_in_child)
		return;
	if (!cap_reserve(len)) {
		atomic_fetch_add(&hp_ctr.over_cap, 1);
		HP_LOG_ONCE(HP_LOG_WARN,
			    "HOSTPIN_MAX_PINNED (%llu bytes) reached: further "
			    "blocks are served unpinned",
			    (unsigned long long)hp_opt[HP_OPT_MAX_PINNED]);
		return;
	}
	const char *why = "unknown";
	int e = EAGAIN;
	if (!(rflags(r) & HP_F_FOREIGN) && hp_backend->ready()) {
		uint64_t t0 = hp_now_ns();
		hp_prefault((void *)base, len);
		e = hp_backend->pin((void *)base, len, &why);
		atomic_fetch_add_explicit(&hp_ctr.pin_ns, hp_now_ns() - t0,
					  memory_order_relaxed);
		atomic_fetch_add_explicit(&hp_ctr.pin_calls, 1,
					  memory_order_relaxed);
	}
	if (e == EAGAIN) { /* not now: the device runtime is not ready */
		atomic_fetch_sub(&hp_ctr.pinned_bytes_now, len);
		if (!(rflags(r) & HOSTPIN_PENDING)) {
			set_rflags(r, rflags(r) | HOSTPIN_PENDING);
			atomic_fetch_add(&hp_ctr.pending_blocks, 1);
		}
		return;
	}
	if (rflags(r) & HOSTPIN_PENDING) {
		set_rflags(r, rflags(r) & ~HOSTPIN_PENDING);
		atomic_fetch_sub(&hp_ctr.pending_blocks, 1);
	}
	if (e) {
		/* HOSTPIN_MLOCK: a block the device refused is at least kept
		 * resident. */
		int locked = hp_opt[HP_OPT_MLOCK] &&
			     hp_backend->pin_flags != HOSTPIN_LOCKED &&
			     mlock((void *)base, len) == 0;
		if (locked) {
			set_rflags(r, rflags(r) | HOSTPIN_LOCKED);
			atomic_fetch_add(&hp_ctr.pinned_blocks_now, 1);
		} else {
			atomic_fetch_sub(&hp_ctr.pinned_bytes_now, len);
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
	set_rflags(r, rflags(r) | hp_backend->pin_flags);
	atomic_fetch_add(&hp_ctr.pinned_blocks_now, 1);
	hp_site_account(rsite(r), len, 1);
	/* the reservation is now real: account the peak */
	hp_stat_add_peak(&hp_ctr.pinned_bytes_now, &hp_ctr.pinned_bytes_peak, 0);
}

/* Undo pin(); non-zero if the backend refused (the caller must then leak
 * the range: invariant 1). */
static int unpin(hp_rec_t *r, uintptr_t base, size_t len)
{
	hp_copy_quiesce(r);
	unsigned f = rflags(r);
	if (f & HOSTPIN_PENDING) {
		set_rflags(r, f & ~HOSTPIN_PENDING);
		atomic_fetch_sub(&hp_ctr.pending_blocks, 1);
	}
	if (!(f & PIN_MASK))
		return 0;
	const char *why = "unknown";
	atomic_fetch_add_explicit(&hp_ctr.unpin_calls, 1, memory_order_relaxed);
	int e = 0;
	if (f & hp_backend->pin_flags)
		e = hp_in_child ? 0 : hp_backend->unpin((void *)base, len, &why);
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
	set_rflags(r, rflags(r) & ~PIN_MASK);
	atomic_fetch_sub(&hp_ctr.pinned_blocks_now, 1);
	atomic_fetch_sub(&hp_ctr.pinned_bytes_now, len);
	hp_site_account(rsite(r), len, 0);
	return 0;
}

static void count_track(unsigned kind, size_t len, int add)
{
	if (kind & HOSTPIN_KIND_MALLOC) {
		if (add) {
			hp_stat_add_peak(&hp_ctr.blocks_now,
					 &hp_ctr.blocks_peak, 1);
			hp_stat_add_peak(&hp_ctr.bytes_now, &hp_ctr.bytes_peak,
					 len);
		} else {
			atomic_fetch_sub(&hp_ctr.blocks_now, 1);
			atomic_fetch_sub(&hp_ctr.bytes_now, len);
		}
	} else {
		atomic_fetch_add(&hp_ctr.mmap_ranges_now, add ? 1 : -1ull);
		atomic_fetch_add(&hp_ctr.mmap_bytes_now, add ? len : 0 - len);
	}
}

/* Insert and pin a range we own or track; 0 or an errno. */
static int track(uintptr_t base, size_t len, unsigned kind, size_t req)
{
	hp_rec_t *r;
	int e = hp_registry_insert(&hp_reg, base, len, HP_REC_LIVE, &r);
	if (e) {
		HP_LOG_ONCE(HP_LOG_WARN, "cannot track %zu bytes at %p "
			    "(errno %d): left to the system", len,
			    (void *)base, e);
		return e;
	}
	(void)req;
	atomic_store_explicit(&r->user[HP_U_FLAGS], kind, memory_order_relaxed);
	if (kind & HOSTPIN_KIND_MALLOC)
		set_rsite(r, hp_site_capture());
	count_track(kind, len, 1);
	pin(r, base, len);
	return 0;
}

/* Unpin and forget a claimed record.  0, or non-zero if it had to be
 * leaked (unpin refused): then it stays in the registry as LEAKED. */
static int untrack(hp_rec_t *r, const hp_snap_t *s)
{
	unsigned kind = rflags(r) & KIND_MASK;
	if (unpin(r, s->base, s->len)) {
		uint64_t w = atomic_load(&r->word);
		hp_registry_claim(r, w, HP_REC_LEAKED);
		atomic_fetch_add(&hp_ctr.leaked_blocks, 1);
		return EBUSY;
	}
	count_track(kind, s->len, 0);
	hp_registry_remove(&hp_reg, r);
	return 0;
}

/* ---- recently freed blocks, for a clear double-free message ---- */
#define FREED_RING 256
static _Atomic uintptr_t freed_ring[FREED_RING];
static _Atomic unsigned freed_at;

static void remember_freed(uintptr_t base)
{
	unsigned i = atomic_fetch_add_explicit(&freed_at, 1,
					       memory_order_relaxed);
	atomic_store_explicit(&freed_ring[i % FREED_RING], base,
			      memory_order_relaxed);
}

static int recently_freed_and_unmapped(uintptr_t p)
{
	unsigned char v;
	if (p & (PAGE - 1))
		return 0;
	for (int i = 0; i < FREED_RING; i++)
		if (atomic_load_explicit(&freed_ring[i],
					 memory_order_relaxed) == p)
			/* ENOMEM from mincore: nothing is mapped there, so
			 * this cannot be a live block of any allocator. */
			return mincore((void *)p, PAGE, &v) != 0 &&
			       errno == ENOMEM;
	return 0;
}

/* ---- the cache of freed blocks ----
 * Freed blocks stay mapped and pinned, and are handed out again for an
 * allocation that fits them with at most 1/8 waste, oldest first (so a
 * block just freed is not the next one reused).  Bounded by HOSTPIN_CACHE;
 * while nothing gets pinned, by 64 MiB of blocks up to 32 MiB, so a process
 * without a device uses memory much as it would with glibc.  The lock is never held across a
 * backend call. */
#define CACHE_SLOTS 128
#define CACHE_IDLE_CAP ((size_t)64 << 20)
static pthread_mutex_t cache_mu = PTHREAD_MUTEX_INITIALIZER;
static struct centry {
	hp_rec_t *rec;
	uintptr_t base;
	size_t len;
} cache[CACHE_SLOTS];
static int ncache;
static size_t cache_bytes;

#define CACHE_IDLE_MAX_BLOCK ((size_t)32 << 20)

/* The cap for a block of len bytes.  While nothing is pinned the cache
 * behaves like glibc's heap: blocks up to 32 MiB (glibc's largest dynamic
 * mmap threshold), 64 MiB in all; larger ones are unmapped at once, as
 * glibc unmaps its mmapped chunks, so caching them cannot thrash. */
static size_t cache_cap(size_t len)
{
	size_t cap = (size_t)hp_opt[HP_OPT_CACHE];
	int pinning = hp_backend != &hp_backend_none && !hp_in_child &&
		      atomic_load_explicit(&hp_ctr.pinned_blocks_now,
					   memory_order_relaxed) > 0;
	if (pinning)
		return cap;
	if (len > CACHE_IDLE_MAX_BLOCK)
		return 0;
	return cap < CACHE_IDLE_CAP ? cap : CACHE_IDLE_CAP;
}

void hp_cache_lock(void) { pthread_mutex_lock(&cache_mu); }
void hp_cache_unlock(void) { pthread_mutex_unlock(&cache_mu); }

static void evict(struct centry *v, int n)
{
	for (int i = 0; i < n; i++) {
		hp_snap_t s;
		if (hp_registry_lookup(&hp_reg, v[i].base, &s) != v[i].rec ||
		    hp_word_state(s.word) != HP_REC_CACHED ||
		    !hp_registry_claim(v[i].rec, s.word, HP_REC_RELEASING))
			continue; /* an munmap took it meanwhile */
		atomic_fetch_add(&hp_ctr.cache_evictions, 1);
		/* invariant 1: unpin, forget, and only then unmap */
		if (untrack(v[i].rec, &s) == 0)
			hp_real.munmap((void *)s.base, s.len);
	}
}

/* Take a cached block of len bytes (page multiple) aligned to align; its
 * real length (up to len + len/8) in *got. */
static void *cache_get(size_t len, size_t align, size_t *got)
{
	if (!atomic_load_explicit(&hp_ctr.cached_blocks, memory_order_relaxed))
		return NULL;
	pthread_mutex_lock(&cache_mu);
	for (int i = 0; i < ncache; i++) {
		struct centry e = cache[i];
		if (e.len < len || e.len - len > len / 8 ||
		    (align > HP_PAGE_SIZE && (e.base & (align - 1))))
			continue;
		memmove(&cache[i], &cache[i + 1],
			sizeof(cache[0]) * (size_t)(ncache - i - 1));
		ncache--;
		cache_bytes -= e.len;
		atomic_fetch_sub(&hp_ctr.cached_blocks, 1);
		atomic_fetch_sub(&hp_ctr.cached_bytes, e.len);
		hp_snap_t s;
		if (hp_registry_lookup(&hp_reg, e.base, &s) != e.rec ||
		    hp_word_state(s.word) != HP_REC_CACHED ||
		    !hp_registry_claim(e.rec, s.word, HP_REC_LIVE)) {
			i--; /* stale: released by an munmap meanwhile */
			continue;
		}
		pthread_mutex_unlock(&cache_mu);
		atomic_fetch_add(&hp_ctr.cache_hits, 1);
		if (hp_opt[HP_OPT_BACKTRACE] && (rflags(e.rec) & PIN_MASK)) {
			/* pinned memory now owned by the new caller's site */
			hp_site_account(rsite(e.rec), e.len, 0);
			set_rsite(e.rec, hp_site_capture());
			hp_site_account(rsite(e.rec), e.len, 1);
		}
		count_track(HOSTPIN_KIND_MALLOC, e.len, 1);
		*got = e.len;
		return (void *)e.base;
	}
	pthread_mutex_unlock(&cache_mu);
	return NULL;
}

/* Keep a claimed (RELEASING) block for reuse; 0 if it does not fit. */
static int cache_put(hp_rec_t *r, hp_snap_t *s)
{
	size_t cap = cache_cap(s->len);
	if (s->len > cap || (rflags(r) & (HP_F_FOREIGN | HOSTPIN_KIND_MMAP)))
		return 0;
	/* Not reused while a copy that used it may still run. */
	hp_copy_quiesce(r);
	struct centry victims[CACHE_SLOTS];
	int nv = 0;
	pthread_mutex_lock(&cache_mu);
	while (ncache && (cache_bytes + s->len > cap || ncache == CACHE_SLOTS)) {
		victims[nv++] = cache[0];
		cache_bytes -= cache[0].len;
		memmove(&cache[0], &cache[1],
			sizeof(cache[0]) * (size_t)(ncache - 1));
		ncache--;
		atomic_fetch_sub(&hp_ctr.cached_blocks, 1);
		atomic_fetch_sub(&hp_ctr.cached_bytes, victims[nv - 1].len);
	}
	hp_registry_claim(r, atomic_load(&r->word), HP_REC_CACHED);
	cache[ncache++] = (struct centry){r, s->base, s->len};
	cache_bytes += s->len;
	atomic_fetch_add(&hp_ctr.cached_blocks, 1);
	atomic_fetch_add(&hp_ctr.cached_bytes, s->len);
	pthread_mutex_unlock(&cache_mu);
	count_track(HOSTPIN_KIND_MALLOC, s->len, 0);
	evict(victims, nv);
	return 1;
}

/* Empty the cache (at exit, and for tests through hostpin_trim). */
void hp_cache_drain(void)
{
	struct centry v[CACHE_SLOTS];
	pthread_mutex_lock(&cache_mu);
	int n = ncache;
	memcpy(v, cache, sizeof(cache[0]) * (size_t)n);
	ncache = 0;
	cache_bytes = 0;
	atomic_store(&hp_ctr.cached_blocks, 0);
	atomic_store(&hp_ctr.cached_bytes, 0);
	pthread_mutex_unlock(&cache_mu);
	evict(v, n);
}

/* ---- malloc-family blocks ---- */

void *hp_block_alloc(size_t n, size_t align, int zero)
{
	if (n > PTRDIFF_MAX) {
		errno = ENOMEM;
		return NULL;
	}
	size_t len = page_up(n);
	size_t got;
	void *hit = cache_get(len, align, &got);
	if (hit) {
		/* Reused memory: calloc zeroes all of the usable size, as
		 * glibc does. */
		if (zero)
			memset(hit, 0, got);
		return hit;
	}
	size_t huge = (size_t)2 << 20;
	if (hp_opt[HP_OPT_HUGEPAGES] && len >= huge && align < huge)
		align = huge; /* THP needs 2 MiB-aligned extents */
	size_t extra = align > PAGE ? align - PAGE : 0;
	if (len + extra < len)
		return NULL;
	char *m = hp_real.mmap(NULL, len + extra, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return NULL; /* the caller falls back to the next allocator */
	uintptr_t base = (uintptr_t)m;
	if (extra) {
		uintptr_t b = (base + align - 1) & ~(uintptr_t)(align - 1);
		if (b > base)
			hp_real.munmap(m, b - base);
		if (base + extra > b)
			hp_real.munmap((void *)(b + len), base + extra - b);
		base = b;
	}
	if (hp_opt[HP_OPT_HUGEPAGES] && len >= huge)
		hp_real.madvise((void *)base, len, MADV_HUGEPAGE);
	if (track(base, len, HOSTPIN_KIND_MALLOC, n)) {
		hp_real.munmap((void *)base, len);
		return NULL;
	}
	/* The device may have become ready since earlier blocks were left
	 * pending: adopt them now too. */
	hp_adopt_pending();
	return (void *)base;
}

/* Claim r (LIVE or CACHED) for release, waiting out a BUSY holder; 0 if it
 * is in no state to be released (someone else releases it, or it leaked). */
static int claim_release(hp_rec_t *r, hp_snap_t *s)
{
	for (;;) {
		uint32_t st = hp_word_state(s->word);
		if ((st == HP_REC_LIVE || st == HP_REC_CACHED) &&
		    hp_registry_claim(r, s->word, HP_REC_RELEASING))
			return 1;
		if (hp_registry_lookup(&hp_reg, s->base, s) != r ||
		    hp_word_state(s->word) != HP_REC_BUSY)
			return 0;
		sched_yield();
	}
}

/* Hold r briefly (adoption, madvise, a foreign registration): returns the
 * state to restore with busy_end, or 0 if r is neither LIVE nor CACHED. */
static uint32_t busy_begin(hp_rec_t *r, const hp_snap_t *s)
{
	uint32_t st = hp_word_state(s->word);
	if ((st != HP_REC_LIVE && st != HP_REC_CACHED) ||
	    !hp_registry_claim(r, s->word, HP_REC_BUSY))
		return 0;
	return st;
}

static void busy_end(hp_rec_t *r, uint32_t st)
{
	hp_registry_claim(r, atomic_load(&r->word), st);
}

/* The record of the malloc block that p is the base of; aborts on interior
 * pointers and double frees of hostpin blocks, as glibc does for its own. */
static hp_rec_t *own_block(void *p, hp_snap_t *s, const char *fn)
{
	hp_rec_t *r = hp_registry_lookup(&hp_reg, (uintptr_t)p, s);
	/* Adoption, madvise or a foreign registration holds it briefly. */
	while (r && hp_word_state(s->word) == HP_REC_BUSY) {
		sched_yield();
		r = hp_registry_lookup(&hp_reg, (uintptr_t)p, s);
	}
	if (r == NULL) {
		if (recently_freed_and_unmapped((uintptr_t)p))
			hp_fatal("%s(): double free of hostpin block %p", fn,
				 p);
		return NULL;
	}
	if (!(rflags(r) & HOSTPIN_KIND_MALLOC))
		return NULL; /* an application mapping: not a heap pointer */
	if (s->base != (uintptr_t)p)
		hp_fatal("%s(): invalid pointer %p: it lies inside hostpin "
			 "block %p (%zu bytes) but is not its start",
			 fn, p, (void *)s->base, s->len);
	if (hp_word_state(s->word) != HP_REC_LIVE)
		hp_fatal("%s(): double free of hostpin block %p", fn, p);
	return r;
}

static void release_block(hp_rec_t *r, hp_snap_t *s, const char *fn)
{
	if (!claim_release(r, s))
		hp_fatal("%s(): double free of hostpin block %p (racing "
			 "release)", fn, (void *)s->base);
	if (cache_put(r, s))
		return;
	if (untrack(r, s) == 0) {
		hp_real.munmap((void *)s->base, s->len);
		remember_freed(s->base);
	}
}

int hp_block_free(void *p)
{
	hp_snap_t s;
	hp_rec_t *r = own_block(p, &s, "free");
	if (r == NULL)
		return 0;
	release_block(r, &s, "free");
	return 1;
}

size_t hp_block_usable(const void *p, int *handled)
{
	hp_snap_t s;
	hp_rec_t *r = own_block((void *)p, &s, "malloc_usable_size");
	*handled = r != NULL;
	return r ? s.len : 0;
}

void *hp_block_realloc(void *p, size_t n, int *handled)
{
	hp_snap_t s;
	hp_rec_t *r = own_block(p, &s, "realloc");
	*handled = r != NULL;
	if (r == NULL)
		return NULL;
	if (n == 0) { /* glibc: free and return NULL */
		release_block(r, &s, "realloc");
		return NULL;
	}
	/* Stays a hostpin block and fits without wasting over half: keep. */
	if (n >= hp_threshold && n <= s.len && n > s.len / 2)
		return p;
	void *q = n >= hp_threshold ? hp_block_alloc(n, 0, 0) : NULL;
	if (q == NULL)
		q = hp_real.malloc(n);
	if (q == NULL) {
		errno = ENOMEM;
		return NULL; /* old block untouched, as realloc requires */
	}
	memcpy(q, p, n < s.len ? n : s.len);
	release_block(r, &s, "realloc");
	return q;
}

/* ---- application mappings ---- */

/* Memory the device libraries map for themselves (cudaHostAlloc, driver
 * buffers) is theirs: never touch it (invariant 8). */
static int from_device_library(const void *caller)
{
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

void hp_mmap_track(void *p, size_t len, int prot, int flags, int fd,
		   const void *caller)
{
	(void)fd;
	uint64_t pol = hp_opt[HP_OPT_MMAP];
	int anon = (flags & MAP_ANONYMOUS) != 0;
	int shared = (flags & MAP_TYPE) != MAP_PRIVATE;
	if (pol == HP_MMAP_OFF || len < hp_threshold ||
	    (pol == HP_MMAP_PRIVATE && (!anon || shared)) ||
	    (pol == HP_MMAP_SHARED && !anon))
		return;
	/* Reservations are not buffers: locking them would commit them. */
	if (!(prot & (PROT_READ | PROT_WRITE)) || (flags & MAP_NORESERVE) ||
	    from_device_library(caller))
		return;
	track((uintptr_t)p, page_up(len), HOSTPIN_KIND_MMAP, len);
}

struct carve {
	uintptr_t a, b; /* the range being released */
	unsigned kind;  /* kind of the first affected record, or 0 */
};

static int carve_one(hp_rec_t *r, const hp_snap_t *s0, void *arg)
{
	struct carve *c = arg;
	hp_snap_t sv = *s0, *s = &sv;
	if (!claim_release(r, s))
		return 0; /* someone else is releasing it */
	unsigned kind = rflags(r) & KIND_MASK;
	if (!c->kind)
		c->kind = kind;
	if (untrack(r, s))
		return 0; /* leaked: stays registered, never reused */
	uintptr_t end = s->base + s->len;
	/* Survivors lie outside [a, b): safe to pin again before the caller
	 * releases [a, b), and outside what this walk still visits. */
	if (s->base < c->a)
		track(s->base, c->a - s->base, HOSTPIN_KIND_MMAP,
		      c->a - s->base);
	if (end > c->b)
		track(c->b, end - c->b, HOSTPIN_KIND_MMAP, end - c->b);
	return 0;
}

/* Unpin and untrack [a, a+len) before the caller unmaps or replaces it;
 * the parts of affected ranges outside it stay tracked and pinned.  Returns
 * the kind of the first range affected (0 if none). */
static unsigned release_range(uintptr_t a, size_t len)
{
	struct carve c = {a & ~(PAGE - 1), page_up(a + len), 0};
	if (len == 0 || !hp_registry_maybe(&hp_reg, c.a) ||
	    c.b <= c.a)
		goto out;
	hp_registry_each_overlap(&hp_reg, c.a, c.b - c.a, carve_one, &c);
out:
	return c.kind;
}

void hp_range_release(uintptr_t a, size_t len) { release_range(a, len); }

void *hp_mremap_do(void *old, size_t oldlen, size_t newlen, int flags,
		   void *new_addr)
{
	unsigned kind = release_range((uintptr_t)old, oldlen);
	if (flags & MREMAP_FIXED)
		release_range((uintptr_t)new_addr, newlen);
	void *r = hp_real.mremap(old, oldlen, newlen, flags, new_addr);
	if (!kind)
		return r;
	int e = errno;
	if (r != MAP_FAILED)
		track((uintptr_t)r, page_up(newlen), HOSTPIN_KIND_MMAP, newlen);
	else if (oldlen)
		track((uintptr_t)old & ~(PAGE - 1), page_up(oldlen),
		      HOSTPIN_KIND_MMAP, oldlen);
	errno = e;
	return r;
}

struct advise {
	uintptr_t cur, end;
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

static int advise_one(hp_rec_t *r, const hp_snap_t *s, void *arg)
{
	struct advise *ad = arg;
	uint32_t st = busy_begin(r, s);
	if (!st)
		return 0;
	uintptr_t a = s->base > ad->cur ? s->base : ad->cur;
	uintptr_t b = s->base + s->len < ad->end ? s->base + s->len : ad->end;
	advise_gap(ad, a);
	ad->cur = a;
	/* Locked pages refuse DONTNEED (EINVAL): unpin, discard, pin again.
	 * The range survives, so it is pinned again (its pages now zero). */
	if (unpin(r, s->base, s->len) == 0) {
		advise_gap(ad, b);
		pin(r, s->base, s->len);
	} else if (!ad->ret) {
		ad->ret = -1, ad->err = EBUSY;
	}
	ad->cur = b;
	busy_end(r, st);
	return 0;
}

/* ---- adoption and foreign registrations ---- */

static int adopt_one(hp_rec_t *r, const hp_snap_t *s, void *arg)
{
	(void)arg;
	uint32_t st;
	if (!(rflags(r) & HOSTPIN_PENDING) || !(st = busy_begin(r, s)))
		return 0;
	pin(r, s->base, s->len);
	if (!(rflags(r) & HOSTPIN_PENDING) && (rflags(r) & PIN_MASK))
		atomic_fetch_add(&hp_ctr.adopted_blocks, 1);
	busy_end(r, st);
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

static int foreign_one(hp_rec_t *r, const hp_snap_t *s, void *arg)
{
	uint32_t st = busy_begin(r, s);
	if (!st)
		return 0;
	/* Step aside: the application's registration must not fail with
	 * "already registered" because of ours. */
	if (unpin(r, s->base, s->len) == 0) {
		set_rflags(r, rflags(r) | HP_F_FOREIGN);
		atomic_store_explicit(&r->user[HP_U_FOREIGN], (uintptr_t)arg,
				      memory_order_relaxed);
		atomic_fetch_add(&hp_ctr.foreign_ranges, 1);
	}
	busy_end(r, st);
	return 0;
}

void hp_foreign_begin(void *p, size_t n)
{
	if (n && hp_registry_maybe(&hp_reg, (uintptr_t)p))
		hp_registry_each_overlap(&hp_reg, (uintptr_t)p, n, foreign_one,
					 p);
}

static int unforeign_one(hp_rec_t *r, const hp_snap_t *s, void *arg)
{
	uint32_t st;
	if (!(rflags(r) & HP_F_FOREIGN) ||
	    atomic_load_explicit(&r->user[HP_U_FOREIGN],
				 memory_order_relaxed) != (uintptr_t)arg ||
	    !(st = busy_begin(r, s)))
		return 0;
	set_rflags(r, rflags(r) & ~HP_F_FOREIGN);
	pin(r, s->base, s->len); /* ours again */
	busy_end(r, st);
	return 0;
}

void hp_foreign_end(void *p)
{
	hp_registry_each(&hp_reg, unforeign_one, p);
}

void hp_import_dropped(void *p)
{
	hp_snap_t s;
	hp_rec_t *r = hp_registry_lookup(&hp_reg, (uintptr_t)p, &s);
	uint32_t st;
	if (r == NULL || (rflags(r) & HP_F_FOREIGN) ||
	    !(rflags(r) & HOSTPIN_REGISTERED) || !(st = busy_begin(r, &s)))
		return;
	/* The program released our import from (at least) one driver.  The
	 * backend's unpin asks each driver whether our import is still there
	 * and releases only what is; then the block is imported again. */
	if (unpin(r, s.base, s.len) == 0)
		pin(r, s.base, s.len);
	busy_end(r, st);
}

unsigned hp_block_flags(const void *p, hp_rec_t **rec)
{
	hp_snap_t s;
	hp_rec_t *r = hp_registry_lookup(&hp_reg, (uintptr_t)p, &s);
	*rec = r;
	return r ? rflags(r) : 0;
}

int hp_madvise_do(void *a, size_t len, int advice)
{
	struct advise ad = {(uintptr_t)a, (uintptr_t)a + page_up(len), advice,
			    0, 0};
	if (((uintptr_t)a & (PAGE - 1)) || ad.end < ad.cur) {
		errno = EINVAL;
		return -1;
	}
	if (hp_registry_maybe(&hp_reg, ad.cur) ||
	    hp_registry_maybe(&hp_reg, ad.end - 1))
		hp_registry_each_overlap(&hp_reg, ad.cur, ad.end - ad.cur,
					 advise_one, &ad);
	advise_gap(&ad, ad.end);
	if (ad.ret)
		errno = ad.err;
	return ad.ret;
}

/* ---- fork ---- */

static int child_forget(hp_rec_t *r, const hp_snap_t *s, void *arg)
{
	(void)s, (void)arg;
	/* Memory locks and device registrations are not inherited: the
	 * child's blocks are plain memory, and it never unpins them. */
	unsigned f = rflags(r);
	if (f & PIN_MASK)
		atomic_fetch_sub(&hp_ctr.pinned_blocks_now, 1);
	if (f & HOSTPIN_PENDING)
		atomic_fetch_sub(&hp_ctr.pending_blocks, 1);
	set_rflags(r, f & ~(PIN_MASK | HOSTPIN_PENDING));
	return 0;
}

void hp_block_fork_child(void)
{
	hp_in_hook++;
	hp_backend->fork_child();
	hp_registry_each(&hp_reg, child_forget, NULL);
	atomic_store(&hp_ctr.pinned_bytes_now, 0);
	hp_in_hook--;
}

/* ---- query API ---- */

HP_EXPORT int hostpin_query(const void *p, struct hostpin_range *out)
{
	hp_snap_t s;
	hp_rec_t *r = hp_registry_lookup(&hp_reg, (uintptr_t)p, &s);
	/* freed blocks (cached, or leaked after a failed unpin) are nobody's */
	if (r == NULL || hp_word_state(s.word) == HP_REC_LEAKED ||
	    hp_word_state(s.word) == HP_REC_CACHED)
		return 0;
	if (out) {
		out->base = (void *)s.base;
		out->len = s.len;
		out->flags = rflags(r);
	}
	return 1;
}

HP_EXPORT const char *hostpin_backend(void)
{
	if (atomic_load(&hp_state) != HP_ST_READY)
		return "disabled";
	if (hp_backend == &hp_backend_auto && hp_backend_auto_chosen())
		return hp_backend_auto_chosen()->name;
	return hp_backend->name;
}
