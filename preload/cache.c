/* The cache of freed blocks.
 * Freed blocks stay mapped and pinned, and are handed out again for an
 * allocation that fits them with at most 1/8 waste, oldest first (so a
 * block just freed is not the next one reused).  Bounded by HOSTPIN_CACHE;
 * while nothing gets pinned, by 64 MiB of blocks up to 32 MiB, so a process
 * without a device uses memory much as it would with glibc.  The lock is never held across a
 * backend call. */
#include <pthread.h>
#include <string.h>

#include "record.h"

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
		HP_CTR_ADD(cache_evictions, 1);
		/* invariant 1: unpin, forget, and only then unmap */
		if (hp_untrack(v[i].rec, &s) == 0)
			hp_real.munmap((void *)s.base, s.len);
	}
}

void *hp_cache_take(size_t len, size_t align, size_t *got)
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
		HP_CTR_SUB(cached_blocks, 1);
		HP_CTR_SUB(cached_bytes, e.len);
		hp_snap_t s;
		if (hp_registry_lookup(&hp_reg, e.base, &s) != e.rec ||
		    hp_word_state(s.word) != HP_REC_CACHED ||
		    !hp_registry_claim(e.rec, s.word, HP_REC_LIVE)) {
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

int hp_cache_keep(hp_rec_t *r, hp_snap_t *s)
{
	size_t cap = cache_cap(s->len);
	if (s->len > cap || (hp_rflags(r) & (HP_F_FOREIGN | HOSTPIN_KIND_MMAP)))
		return 0;
	/* Not reused while a copy that used it may still run. */
	if (hp_backend->quiesce)
		hp_backend->quiesce(r);
	struct centry victims[CACHE_SLOTS];
	int nv = 0;
	pthread_mutex_lock(&cache_mu);
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
	cache[ncache++] = (struct centry){r, s->base, s->len};
	cache_bytes += s->len;
	HP_CTR_ADD(cached_blocks, 1);
	HP_CTR_ADD(cached_bytes, s->len);
	pthread_mutex_unlock(&cache_mu);
	hp_count_track(HOSTPIN_KIND_MALLOC, s->len, 0);
	evict(victims, nv);
	return 1;
}
