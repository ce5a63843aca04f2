/* Staged copies: the copy engine's first part (DESIGN.md, "The way data
 * flows" 6).  A copy of HOSTPIN_STAGE_MIN bytes or more whose host side is
 * not registered (a hostpin block pending or not yet worth registering, or
 * memory hostpin does not own: shared and file mappings, the heap) goes
 * through a ring of staging slots that hostpin mapped and registered once
 * through the program's current context (never a context of its own:
 * invariant 3), each chunk's DMA enqueued on the program's own stream, in
 * order, and an event recorded after it, so that a slot is reused only once
 * its event completed.  Semantics are those of pageable memory (CUDA's
 * "API synchronization behavior"): an H2D call returns once the whole
 * source is staged (the DMA may still run), a D2H call once the data is in
 * the program's memory, a synchronous call once the copy completed.
 *
 * The copy threads (HOSTPIN_STAGE_THREADS, the calling thread counted)
 * copy each chunk into or out of its slot together, pipelined against the
 * DMA of the other slots.  There is one ring per direction, each half of
 * HOSTPIN_STAGE_BUFFER, made at the first copy staged that way (the pinned
 * memory of both is what one ring had): an H2D and a D2H copy of two program
 * threads are staged at once (the link carries both directions at full
 * rate); a copy holds its direction's ring, so two copies the same way
 * are staged one after the other.  Driver calls go through the backend
 * contract (backend_cuda.c). */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "backend.h"
#include "record.h"
#include "stage.h"

#define SLOTS 4

/* The statistics of staging (not in the ledger slot: its layout is
 * unchanged). */
static _Atomic uint64_t st_copies, st_bytes, st_ring;

void hp_stage_counts(uint64_t *copies, uint64_t *bytes, uint64_t *ring_bytes)
{
	/* relaxed: statistics order nothing */
	*copies = atomic_load_explicit(&st_copies, memory_order_relaxed);
	*bytes = atomic_load_explicit(&st_bytes, memory_order_relaxed);
	*ring_bytes = atomic_load_explicit(&st_ring, memory_order_relaxed);
}

/* The rings: [0] H2D, [1] D2H. */
struct ring {
	pthread_mutex_t mu;
	int state; /* 0: not made yet; 1: ready; -1: could not be made */
	char *base;
	size_t slot, len;
	int next; /* the slot the next chunk takes */
	uintptr_t ctx; /* the context it was made through */
	unsigned epoch; /* hp_cuda_ctx_epoch then */
	void *ev[SLOTS];
	int used[SLOTS]; /* ev[i] recorded after slot i's last DMA */
};
static struct ring rings[2] = {{.mu = PTHREAD_MUTEX_INITIALIZER},
			       {.mu = PTHREAD_MUTEX_INITIALIZER}};

int hp_stage_on(void)
{
	if (!hp_opt[HP_OPT_STAGE] || !hp_opt[HP_OPT_REGISTER_DEVICE])
		return 0;
	if (hp_backend == &hp_backend_cuda)
		return 1;
	const hp_backend_t *c = hp_backend_auto_chosen();
	return hp_backend == &hp_backend_auto &&
	       (c == NULL || c == &hp_backend_cuda);
}

/* ---- copy threads (HOSTPIN_STAGE_THREADS) ----
 * The threads that copy into and out of the ring, the calling thread
 * counted: each chunk's memcpy is split in parts that the calling thread
 * and the helpers take (a 2D copy's rows: parts of whole rows), and the
 * chunk is done when every part is.  One job at a time (busy): a copy
 * staged the other way meanwhile copies its chunks alone.  Helpers are started the first time
 * staging is used, block every signal (invariant 11), and live as long as
 * the process; a forked child stages nothing and so never needs them. */
#define MAX_HELPERS 63
#define PART_MIN ((size_t)1 << 20) /* below: the calling thread alone */
static struct {
	pthread_mutex_t mu;
	pthread_cond_t go, done;
	int helpers, busy;
	unsigned gen; /* the job's number */
	char *dst;
	const char *src;
	size_t len, part;
	size_t w, dp, sp; /* w != 0: len rows of w bytes, parts of part rows */
	int parts, next, left;
} pool = {.mu = PTHREAD_MUTEX_INITIALIZER,
	  .go = PTHREAD_COND_INITIALIZER,
	  .done = PTHREAD_COND_INITIALIZER};

/* Under pool.mu: take and copy parts of the job until none is left. */
static void pool_take(void)
{
	while (pool.next < pool.parts) {
		int i = pool.next++;
		size_t off = (size_t)i * pool.part;
		size_t len = pool.len - off < pool.part ? pool.len - off
							: pool.part;
		size_t w = pool.w, dp = pool.dp, sp = pool.sp;
		char *d = pool.dst + (w ? off * dp : off);
		const char *sr = pool.src + (w ? off * sp : off);
		pthread_mutex_unlock(&pool.mu);
		if (w == 0)
			memcpy(d, sr, len);
		for (size_t k = 0; w && k < len; k++)
			memcpy(d + k * dp, sr + k * sp, w);
		pthread_mutex_lock(&pool.mu);
		if (--pool.left == 0)
			pthread_cond_broadcast(&pool.done);
	}
}

static void *helper_main(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&pool.mu);
	unsigned seen = pool.gen;
	for (;;) {
		while (pool.gen == seen)
			pthread_cond_wait(&pool.go, &pool.mu);
		seen = pool.gen;
		pool_take();
	}
	return NULL;
}

/* Once: start the helpers (HOSTPIN_STAGE_THREADS - 1; by
 * default min(2, CPUs the process may use) - 1). */
static void pool_start(void)
{
	unsigned n = (unsigned)hp_opt[HP_OPT_STAGE_THREADS];
	if (n == 0) {
		unsigned c = hp_cpu_limit();
		n = c < 2 ? 1 : 2;
	}
	if (n > MAX_HELPERS + 1)
		n = MAX_HELPERS + 1;
	int k = 0; /* every signal blocked (invariant 11) */
	while (k + 1 < (int)n && hp_thread_start(helper_main, NULL, 0) == 0)
		k++;
	if (k + 1 < (int)n)
		hp_log(HP_LOG_WARN, "staging: started %d of %u copy threads",
		       k + 1, n);
	pthread_mutex_lock(&pool.mu);
	pool.helpers = k;
	pthread_mutex_unlock(&pool.mu);
}

/* Under pool.mu, the job set: run it with the helpers, then unlock. */
static void pool_run(void)
{
	pool.parts = (int)((pool.len + pool.part - 1) / pool.part);
	pool.next = 0, pool.left = pool.parts;
	pool.busy = 1;
	pool.gen++;
	pthread_cond_broadcast(&pool.go);
	pool_take();
	while (pool.left > 0)
		pthread_cond_wait(&pool.done, &pool.mu);
	pool.busy = 0;
	pthread_mutex_unlock(&pool.mu);
}

/* memcpy, by the copy threads together. */
static void pcopy(void *dst, const void *src, size_t len)
{
	pthread_mutex_lock(&pool.mu);
	int parts = pool.helpers + 1;
	if (parts == 1 || pool.busy || len < 2 * PART_MIN) {
		pthread_mutex_unlock(&pool.mu);
		memcpy(dst, src, len);
		return;
	}
	size_t part = (len + (size_t)parts - 1) / (size_t)parts;
	part = (part + 4095) & ~(size_t)4095;
	pool.dst = dst, pool.src = src, pool.len = len, pool.part = part;
	pool.w = 0;
	pool_run();
}

/* rows rows of w bytes, dp and sp bytes apart, by the copy threads
 * together (a 2D copy's host side, to or from a slot). */
static void pcopy_rows(char *dst, size_t dp, const char *src, size_t sp,
		       size_t w, size_t rows)
{
	if (dp == w && sp == w) {
		pcopy(dst, src, rows * w);
		return;
	}
	pthread_mutex_lock(&pool.mu);
	int parts = pool.helpers + 1;
	if (parts == 1 || pool.busy || rows < 2 || rows * w < 2 * PART_MIN) {
		pthread_mutex_unlock(&pool.mu);
		for (size_t i = 0; i < rows; i++)
			memcpy(dst + i * dp, src + i * sp, w);
		return;
	}
	pool.dst = dst, pool.src = src, pool.len = rows;
	pool.part = (rows + (size_t)parts - 1) / (size_t)parts;
	pool.w = w, pool.dp = dp, pool.sp = sp;
	pool_run();
}

static int slot_free(struct ring *R, int k);

/* At exit, before any library's destructor (atexit runs this before the
 * handlers the driver and runtime registered earlier): the ring's last
 * DMAs are waited for and its registration released, so the driver sees
 * every registration of hostpin's released.  Skipped while a copy holds
 * the ring (another thread still copying at exit). */
static void ring_exit_one(struct ring *R)
{
	if (pthread_mutex_trylock(&R->mu) != 0)
		return;
	if (R->state > 0 && hp_capture_enter()) {
		for (int i = 0; i < SLOTS; i++)
			slot_free(R, i);
		hp_capture_leave();
		if (hp_cuda_ring_unregister(R->base) == 0) {
			R->state = -1; /* not used again */
			HP_CTR_SUB(ring_bytes, R->len);
		}
	}
	pthread_mutex_unlock(&R->mu);
}

static void ring_exit(void)
{
	if (hp_in_child)
		return;
	ring_exit_one(&rings[0]);
	ring_exit_one(&rings[1]);
}

/* Once, at the first ring made: the exit hook, the copy threads. */
static void rings_first(void)
{
	if (atexit(ring_exit) != 0)
		hp_log(HP_LOG_WARN, "staging: no exit hook: the rings stay "
		       "registered at exit");
	pool_start();
}

/* Under R->mu: make the ring R once: its events, then its mapping,
 * registered through the context current on this thread.  1 if ready. */
static int ring_ready(struct ring *R, uintptr_t ctx)
{
	if (R->state > 0 && R->epoch != hp_cuda_ctx_epoch()) {
		/* A context ended (perhaps the ring's: its registration and
		 * events died with it, and no DMA of it runs) or the driver
		 * was unloaded: made again, through the context current now.
		 * Its events are not destroyed (they may be dead). */
		for (int i = 0; i < SLOTS; i++)
			slot_free(R, i); /* an error: its context ended */
		if (hp_cuda_ring_unregister(R->base) != 0)
			hp_log(HP_LOG_INFO, "staging ring: its context ended; "
			       "made again");
		hp_real.munmap(R->base, R->len);
		HP_CTR_SUB(ring_bytes, R->len);
		atomic_fetch_sub_explicit(&st_ring, R->len,
					  memory_order_relaxed);
		for (int i = 0; i < SLOTS; i++)
			R->ev[i] = NULL, R->used[i] = 0;
		R->state = 0;
	}
	if (R->state)
		return R->state > 0 && R->ctx == ctx;
	/* HOSTPIN_STAGE_BUFFER: both rings together */
	size_t len = (size_t)hp_opt[HP_OPT_STAGE_BUFFER] / 2;
	size_t slot = (len / SLOTS) & ~(size_t)(HP_PAGE_SIZE - 1);
	if (slot < HP_PAGE_SIZE)
		slot = HP_PAGE_SIZE;
	len = slot * SLOTS;
	unsigned epoch = hp_cuda_ctx_epoch();
	const char *what = "given its events";
	int r = 0;
	char *b = MAP_FAILED;
	for (int i = 0; r == 0 && i < SLOTS; i++)
		if (R->ev[i] == NULL)
			r = hp_cuda_event_new(&R->ev[i]);
	int reserved = 0;
	if (r == 0) {
		/* pinned memory: under the caps with the blocks', in
		 * the ledger (not a block's: the reports' pinned bytes
		 * are blocks) */
		what = "reserved under HOSTPIN_MAX_PINNED and "
		       "HOSTPIN_NODE_MAX_PINNED";
		if (!(reserved = hp_cap_reserve_ring(len)))
			r = -1;
	}
	if (r == 0) {
		what = "mapped";
		b = hp_real.mmap(NULL, len, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (b == MAP_FAILED)
			r = -1;
	}
	if (r == 0) {
		what = "registered";
		if ((r = hp_cuda_ring_register(b, len)) != 0)
			hp_real.munmap(b, len);
	}
	if (r != 0 && reserved)
		HP_CTR_SUB(ring_bytes, len);
	if (r != 0) {
		/* said once (the state is sticky; the other direction's
		 * ring, if refused too, is said at info level) */
		static _Atomic int said;
		hp_log(atomic_exchange(&said, 1) ? HP_LOG_INFO : HP_LOG_WARN,
		       "the staging ring (%s, %zu bytes) could not be %s (%d): "
		       "large copies from unregistered memory go to the "
		       "driver as they are", R == &rings[0] ? "H2D" : "D2H",
		       len, what, r);
		R->state = -1;
		return 0;
	}
	R->base = b, R->slot = slot, R->len = len;
	R->ctx = ctx, R->epoch = epoch;
	atomic_fetch_add_explicit(&st_ring, len, memory_order_relaxed);
	static pthread_once_t first = PTHREAD_ONCE_INIT;
	pthread_once(&first, rings_first);
	hp_log(HP_LOG_INFO, "staging ring (%s): %d slots of %zu bytes, "
	       "registered", R == &rings[0] ? "H2D" : "D2H", SLOTS, slot);
	R->state = 1;
	return 1;
}

/* Whether the host side h starts in a hostpin block of c that is not
 * registered as a whole (nor the program's own registration): what the
 * driver knows of it is a part that the registration thread registered
 * (register.c), so the copy is staged all the same. */
static int own_block(const hp_copy_t *c, const void *h)
{
	hp_snap_t b;
	for (int i = 0; i < c->n; i++)
		if (!(hp_rflags(c->r[i]) & (HOSTPIN_REGISTERED | HP_F_FOREIGN)) &&
		    hp_registry_lookup(&hp_reg, (uintptr_t)h, &b) == c->r[i])
			return 1;
	return 0;
}

/* Whether this copy (htod: H2D, else D2H) is staged: its direction's
 * ring, with the capture gate entered and the ring's lock held (stage_done
 * releases both); NULL if not. */
static struct ring *stage_begin(const hp_copy_t *c, const void *h, size_t n,
				hp_cudaStream_t s, int htod)
{
	if (n < hp_opt[HP_OPT_STAGE_MIN] || h == NULL || hp_in_child ||
	    c->overflow || !hp_stage_on())
		return NULL;
	/* a hostpin block registered now: the direct path */
	for (int i = 0; i < c->n; i++)
		if (hp_rflags(c->r[i]) & HOSTPIN_REGISTERED)
			return NULL;
	uintptr_t ctx;
	if (!hp_cuda_stage_fns() || !(ctx = hp_cuda_ctx_current()) ||
	    (hp_cuda_host_known(h) && !own_block(c, h)))
		return NULL; /* no context here, or memory the driver knows */
	/* A stream capturing a graph records the copy instead of running it;
	 * any wait now would invalidate a capture elsewhere (invariant 13). */
	if (hp_cuda_capturing(s) || !hp_capture_enter())
		return NULL;
	struct ring *R = &rings[htod ? 0 : 1];
	pthread_mutex_lock(&R->mu);
	/* the ring is used through the context it was made in (its
	 * events are that context's); other contexts' copies pass */
	if (!ring_ready(R, ctx)) {
		pthread_mutex_unlock(&R->mu);
		hp_capture_leave();
		return NULL;
	}
	return R;
}

static void stage_done(struct ring *R, size_t n)
{
	pthread_mutex_unlock(&R->mu);
	hp_capture_leave();
	atomic_fetch_add_explicit(&st_copies, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&st_bytes, n, memory_order_relaxed);
}

/* Slot k is free once its last DMA completed; an error that DMA raised is
 * the answer. */
static int slot_free(struct ring *R, int k)
{
	if (!R->used[k])
		return 0;
	int r = hp_cuda_event_wait(R->ev[k]);
	R->used[k] = 0;
	return r;
}

/* After the DMA of slot k was enqueued on s: its event.  If the record
 * failed, wait for the stream instead, so that the slot is free. */
static int slot_fence(struct ring *R, int k, hp_cudaStream_t s)
{
	int r = hp_cuda_event_record(R->ev[k], s);
	if (r == 0)
		R->used[k] = 1;
	else
		hp_cuda_stream_wait(s);
	return r;
}

static char *slot_at(const struct ring *R, int k)
{
	return R->base + (size_t)k * R->slot;
}

static hp_cudaStream_t program_stream(hp_cudaStream_t s, int ptsz)
{
	return s == NULL && ptsz ? HP_CU_STREAM_PER_THREAD : s;
}

/* A copy [h, h+n) inside the block [base, base+len) a device backend
 * registered: one DMA per registration it crosses (hp_cells_piece_end), in
 * order on s, up to the first error (returned); *queued: whether any was
 * enqueued. */
static int per_piece(uintptr_t base, size_t len, uintptr_t d, char *h,
		     size_t n, hp_cudaStream_t s, int htod, int *queued)
{
	uintptr_t a = (uintptr_t)h;
	int r = 0;
	*queued = 0;
	for (size_t off = 0; off < n && r == 0;) {
		size_t l = hp_cells_piece_end(base, len, a + off) - (a + off);
		if (l > n - off)
			l = n - off;
		r = htod ? hp_cuda_htod_async(d + off, h + off, l, s)
			 : hp_cuda_dtoh_async(h + off, d + off, l, s);
		*queued |= r == 0;
		off += l;
	}
	return r;
}

/* A copy wholly inside one registered hostpin block that crosses the end
 * of one of the block's registrations (a block over HP_REG_PIECE_MAX, or
 * cells of HOSTPIN_REGISTER_CHUNK): one DMA per registration, in order on
 * the program's stream, so that the driver sees each part inside one
 * registration (a range across two is not one registered range to it).
 * 2 if done so (*res: the first error); 0: not such a copy. */
static int split(const hp_copy_t *c, uintptr_t d, char *h, size_t n,
		 hp_cudaStream_t s, int htod, int sync, int *res)
{
	if (h == NULL || hp_in_child || c->overflow || c->n != 1 ||
	    !(hp_rflags(c->r[0]) & HOSTPIN_REGISTERED) || !hp_stage_on())
		return 0;
	hp_snap_t b;
	uintptr_t a = (uintptr_t)h;
	if (hp_registry_lookup(&hp_reg, a, &b) != c->r[0] ||
	    n > b.base + b.len - a ||
	    hp_cells_piece_end(b.base, b.len, a) >= a + n)
		return 0;
	if (!hp_cuda_stage_fns() || !hp_cuda_ctx_current() ||
	    hp_cuda_capturing(s) || !hp_capture_enter())
		return 0;
	int queued;
	int r = per_piece(b.base, b.len, d, h, n, s, htod, &queued);
	if (r == 0 && sync)
		r = hp_cuda_stream_wait(s);
	hp_capture_leave();
	*res = r;
	return 2;
}

/* A copy through a block being registered in the background
 * (register.c), wholly inside the part of it registered so far, whatever
 * its size ("being registered" is a state of the block every copy
 * honours: a small one, not staged, would reach the driver as registered
 * memory all the same): direct, one DMA per registration on the
 * program's stream, then a wait for the stream whatever the form (the
 * block is not REGISTERED, so no fence follows: this keeps the semantics
 * of the pageable memory it still is, as HOSTPIN_COPY=sync does for a
 * registered block, and the pieces are not unregistered under the DMA).
 * 1 if done so (*res: the first error); 0 if not. */
static int prefix(const hp_copy_t *c, uintptr_t d, char *h, size_t n,
		  hp_cudaStream_t s, int htod, int *res)
{
	if (h == NULL || hp_in_child || c->overflow || c->n != 1 ||
	    (hp_rflags(c->r[0]) & HOSTPIN_REGISTERED) || !hp_stage_on())
		return 0;
	uintptr_t a = (uintptr_t)h, base = 0;
	size_t len = 0;
	if (hp_register_prefix(c->r[0], a, n, &base, &len) != 2)
		return 0;
	if (!hp_cuda_stage_fns() || !hp_cuda_ctx_current() ||
	    hp_cuda_capturing(s) || !hp_capture_enter()) {
		hp_register_prefix_leave();
		return 0;
	}
	int queued;
	int r = per_piece(base, len, d, h, n, s, htod, &queued);
	if (queued) { /* even after an error: what was queued may run */
		int w = hp_cuda_stream_wait(s);
		if (r == 0)
			r = w;
	}
	hp_capture_leave();
	hp_register_prefix_leave();
	*res = r;
	return 1;
}

int hp_stage_htod(const hp_copy_t *c, uintptr_t d, const void *h, size_t n,
		  hp_cudaStream_t s, int ptsz, int sync, int *res)
{
	s = program_stream(s, ptsz);
	if (split(c, d, (char *)(uintptr_t)h, n, s, 1, sync, res))
		return 2;
	if (prefix(c, d, (char *)(uintptr_t)h, n, s, 1, res))
		return 1;
	struct ring *R = stage_begin(c, h, n, s, 1);
	if (R == NULL)
		return 0;
	int r = 0;
	for (size_t off = 0; off < n && r == 0;) {
		size_t len = n - off < R->slot ? n - off : R->slot;
		int k = R->next;
		R->next = (k + 1) % SLOTS;
		if ((r = slot_free(R, k)) != 0)
			break;
		pcopy(slot_at(R, k), (const char *)h + off, len);
		r = hp_cuda_htod_async(d + off, slot_at(R, k), len, s);
		if (r == 0)
			r = slot_fence(R, k, s);
		off += len;
	}
	/* the source is staged: an async call returns (the DMA may run);
	 * a synchronous one after the copy, with its error if it failed */
	if (r == 0 && sync)
		r = hp_cuda_stream_wait(s);
	stage_done(R, n);
	*res = r;
	return 1;
}

/* Under R->mu: the D2H pipeline of m chunks through R.  issue(i, k, arg) enqueues
 * chunk i's DMA into slot k on s; drain(i, k, arg) copies slot k out into
 * the program's memory.  Up to SLOTS chunks in flight, each drained in
 * order once its event completed: when it returns 0, all the data is in
 * the program's memory. */
static int dtoh_pipeline(struct ring *R, size_t m, hp_cudaStream_t s,
			 int (*issue)(size_t i, int k, void *arg),
			 void (*drain)(size_t i, int k, void *arg), void *arg)
{
	int base = R->next, r = 0;
	size_t issued = 0, drained = 0;
	while (drained < m && r == 0) {
		while (issued < m && issued - drained < SLOTS && r == 0) {
			int k = (int)((base + issued) % SLOTS);
			if ((r = slot_free(R, k)) != 0)
				break;
			r = issue(issued, k, arg);
			if (r == 0)
				r = slot_fence(R, k, s);
			issued++;
		}
		if (r)
			break;
		int k = (int)((base + drained) % SLOTS);
		if ((r = slot_free(R, k)) != 0)
			break;
		drain(drained, k, arg);
		drained++;
	}
	R->next = (int)((base + issued) % SLOTS);
	return r;
}

/* A 1D copy's chunks: slot-sized parts of [h, h+n). */
struct dtoh1 {
	struct ring *R;
	char *h;
	uintptr_t d;
	size_t n;
	hp_cudaStream_t s;
};

static size_t chunk_len(const struct ring *R, size_t n, size_t off)
{
	return n - off < R->slot ? n - off : R->slot;
}

static int dtoh1_issue(size_t i, int k, void *arg)
{
	struct dtoh1 *j = arg;
	size_t off = i * j->R->slot;
	return hp_cuda_dtoh_async(slot_at(j->R, k), j->d + off,
				  chunk_len(j->R, j->n, off), j->s);
}

static void dtoh1_drain(size_t i, int k, void *arg)
{
	struct dtoh1 *j = arg;
	size_t off = i * j->R->slot;
	pcopy(j->h + off, slot_at(j->R, k), chunk_len(j->R, j->n, off));
}

int hp_stage_dtoh(const hp_copy_t *c, void *h, uintptr_t d, size_t n,
		  hp_cudaStream_t s, int ptsz, int sync, int *res)
{
	s = program_stream(s, ptsz);
	if (split(c, d, h, n, s, 0, sync, res))
		return 2;
	if (prefix(c, d, h, n, s, 0, res))
		return 1;
	struct ring *R = stage_begin(c, h, n, s, 0);
	if (R == NULL)
		return 0;
	struct dtoh1 j = {.R = R, .h = h, .d = d, .n = n, .s = s};
	int r = dtoh_pipeline(R, (n + R->slot - 1) / R->slot, s, dtoh1_issue,
			      dtoh1_drain, &j);
	stage_done(R, n);
	*res = r;
	return 1;
}

/* ---- 2D and 3D copies ----
 * A side of a CUDA_MEMCPY2D (or of a 3D copy's slice): host memory the
 * driver does not know (HOST, or UNIFIED pointing at such memory), or
 * memory a DMA from the ring can reach (DEVICE, or UNIFIED memory the
 * driver knows). */
static char *side_host(hp_CUmemorytype m, const void *host, hp_CUdeviceptr dev)
{
	if (m == HP_CU_MEMORYTYPE_HOST)
		return (char *)(uintptr_t)host;
	if (m == HP_CU_MEMORYTYPE_UNIFIED && dev &&
	    !hp_cuda_host_known((const void *)(uintptr_t)dev))
		return (char *)(uintptr_t)dev;
	return NULL;
}
static int side_device(hp_CUmemorytype m, hp_CUdeviceptr dev)
{
	return m == HP_CU_MEMORYTYPE_DEVICE ||
	       (m == HP_CU_MEMORYTYPE_UNIFIED && dev &&
		hp_cuda_host_known((const void *)(uintptr_t)dev));
}

/* A rectangle to stage: depth slices of H rows of w bytes, its rows
 * numbered slice after slice.  p: a 2D descriptor whose device side is the
 * program's, at slice 0 (its Y counts the rows before the first slice);
 * h, pitch: the first host byte, the host rows' pitch; hs: bytes from one
 * host slice to the next; dh: rows from one device slice to the next.
 * Its chunks: as many rows as fit a slot, one 2D DMA each; across slices
 * when the device side's slices follow each other (dh == H: its rows are
 * then evenly pitched), else per slice (cps chunks a slice). */
struct rect {
	struct ring *R;
	const hp_CUDA_MEMCPY2D *p;
	char *h;
	size_t pitch, hs, dh, w, H, depth, per, cps;
	int across;
	hp_cudaStream_t s;
};

/* Chunk i: its first row *g and its rows. */
static size_t rect_chunk(const struct rect *j, size_t i, size_t *g)
{
	size_t y, left;
	if (j->across) {
		y = *g = i * j->per;
		left = j->H * j->depth - y;
	} else {
		y = (i % j->cps) * j->per;
		*g = i / j->cps * j->H + y;
		left = j->H - y;
	}
	return left < j->per ? left : j->per;
}

/* Row g's row on the device side, counted from p's Y. */
static size_t rect_dev_row(const struct rect *j, size_t g)
{
	return g / j->H * j->dh + g % j->H;
}

/* rows rows from row g of the host side into the slot sl (in), or out of
 * it, slice by slice. */
static void rect_host(const struct rect *j, size_t g, size_t rows, char *sl,
		      int in)
{
	while (rows) {
		size_t y = g % j->H, t = j->H - y < rows ? j->H - y : rows;
		char *h = j->h + g / j->H * j->hs + y * j->pitch;
		if (in)
			pcopy_rows(sl, j->w, h, j->pitch, j->w, t);
		else
			pcopy_rows(h, j->pitch, sl, j->w, j->w, t);
		sl += t * j->w, g += t, rows -= t;
	}
}

static int stage_2d_htod(const struct rect *j, size_t m)
{
	int r = 0;
	for (size_t i = 0; i < m && r == 0; i++) {
		size_t g, rows = rect_chunk(j, i, &g);
		struct ring *R = j->R;
		int k = R->next;
		R->next = (k + 1) % SLOTS;
		if ((r = slot_free(R, k)) != 0)
			break;
		rect_host(j, g, rows, slot_at(R, k), 1);
		hp_CUDA_MEMCPY2D q = *j->p; /* the device side as the program's */
		q.srcXInBytes = 0, q.srcY = 0;
		q.srcMemoryType = HP_CU_MEMORYTYPE_HOST;
		q.srcHost = slot_at(R, k), q.srcDevice = 0, q.srcArray = NULL;
		q.srcPitch = j->w;
		q.dstY = j->p->dstY + rect_dev_row(j, g), q.Height = rows;
		r = hp_cuda_2d_async(&q, j->s);
		if (r == 0)
			r = slot_fence(R, k, j->s);
	}
	return r;
}

static int dtoh2_issue(size_t i, int k, void *arg)
{
	struct rect *j = arg;
	size_t g, rows = rect_chunk(j, i, &g);
	hp_CUDA_MEMCPY2D q = *j->p; /* the device side as the program's */
	q.dstXInBytes = 0, q.dstY = 0;
	q.dstMemoryType = HP_CU_MEMORYTYPE_HOST;
	q.dstHost = slot_at(j->R, k);
	q.dstDevice = 0, q.dstArray = NULL, q.dstPitch = j->w;
	q.srcY = j->p->srcY + rect_dev_row(j, g);
	q.Height = rows;
	return hp_cuda_2d_async(&q, j->s);
}

static void dtoh2_drain(size_t i, int k, void *arg)
{
	struct rect *j = arg;
	size_t g, rows = rect_chunk(j, i, &g);
	rect_host(j, g, rows, slot_at(j->R, k), 0);
}

/* a*b+c, or SIZE_MAX if that overflows */
static size_t mul_add(size_t a, size_t b, size_t c)
{
	size_t r;
	if (__builtin_mul_overflow(a, b, &r) || __builtin_add_overflow(r, c, &r))
		return SIZE_MAX;
	return r;
}

/* A 2D copy p, or depth slices of it (a 3D copy: sh, dh the source's and
 * the destination's slice heights in rows, p's Y counting the rows before
 * the first slice), between pitched host memory and device memory: as
 * hp_stage_2d. */
static int stage_rect(const hp_copy_t *c, const hp_CUDA_MEMCPY2D *p,
		      size_t depth, size_t sh, size_t dh, hp_cudaStream_t s,
		      int ptsz, int sync, int *res)
{
	size_t w = p->WidthInBytes, H = p->Height, n = mul_add(w, H, 0);
	n = mul_add(n, depth, 0);
	if (w == 0 || H == 0 || depth == 0 || n == SIZE_MAX || hp_in_child ||
	    !hp_stage_on() || !hp_cuda_stage_fns() || !hp_cuda_2d_fn())
		return 0;
	if (n < hp_opt[HP_OPT_STAGE_MIN])
		return 0;
	char *sho = side_host(p->srcMemoryType, p->srcHost, p->srcDevice);
	char *dho = side_host(p->dstMemoryType, p->dstHost, p->dstDevice);
	int htod;
	if (sho && !dho && side_device(p->dstMemoryType, p->dstDevice))
		htod = 1;
	else if (dho && !sho && side_device(p->srcMemoryType, p->srcDevice))
		htod = 0;
	else
		return 0; /* an array, host to host, device to device */
	size_t pitch = htod ? p->srcPitch : p->dstPitch;
	size_t x = htod ? p->srcXInBytes : p->dstXInBytes;
	size_t y = htod ? p->srcY : p->dstY;
	size_t hh = htod ? sh : dh, dvh = htod ? dh : sh;
	size_t dy = htod ? p->dstY : p->srcY;
	if (pitch < w)
		return 0; /* the driver's to refuse */
	if (depth > 1 && (hh < H || dvh < H))
		return 0; /* slices overlap: the driver's to refuse */
	/* the last host byte and the last device row within reach */
	size_t hl = mul_add(depth - 1, hh, y + H - 1);
	if (y > SIZE_MAX - H || hl == SIZE_MAX ||
	    mul_add(hl, pitch, x + w) == SIZE_MAX ||
	    mul_add(depth - 1, dvh, dy + H) == SIZE_MAX)
		return 0;
	char *h = (htod ? sho : dho) + y * pitch + x; /* the first host byte */
	s = program_stream(s, ptsz);
	struct ring *R = stage_begin(c, h, n, s, htod);
	if (R == NULL)
		return 0;
	if (w > R->slot) { /* a row wider than a slot: as it is */
		pthread_mutex_unlock(&R->mu);
		hp_capture_leave();
		return 0;
	}
	struct rect j = {.R = R, .p = p, .h = h, .pitch = pitch,
			 .hs = hh * pitch, .dh = dvh, .w = w, .H = H,
			 .depth = depth, .per = R->slot / w,
			 .across = depth == 1 || dvh == H, .s = s};
	j.cps = (H + j.per - 1) / j.per;
	size_t m = j.across ? (H * depth + j.per - 1) / j.per : j.cps * depth;
	/* as hp_stage_htod / hp_stage_dtoh, in chunks of rows */
	int r = htod ? stage_2d_htod(&j, m)
		     : dtoh_pipeline(R, m, s, dtoh2_issue, dtoh2_drain, &j);
	if (r == 0 && sync && htod)
		r = hp_cuda_stream_wait(s);
	stage_done(R, n);
	*res = r;
	return 1;
}

int hp_stage_2d(const hp_copy_t *c, const hp_CUDA_MEMCPY2D *p,
		hp_cudaStream_t s, int ptsz, int sync, int *res)
{
	return p ? stage_rect(c, p, 1, 0, 0, s, ptsz, sync, res) : 0;
}

int hp_stage_3d(const hp_copy_t *c, const hp_CUDA_MEMCPY3D *p,
		hp_cudaStream_t s, int ptsz, int sync, int *res)
{
	if (p == NULL || p->srcLOD || p->dstLOD || p->reserved0 ||
	    p->reserved1 || p->Depth == 0)
		return 0;
	/* a slice height of 0 (allowed with a depth of 1): no Z with it */
	if ((p->srcZ && p->srcHeight == 0) || (p->dstZ && p->dstHeight == 0))
		return 0;
	size_t sy = mul_add(p->srcZ, p->srcHeight, p->srcY);
	size_t dy = mul_add(p->dstZ, p->dstHeight, p->dstY);
	if (sy == SIZE_MAX || dy == SIZE_MAX)
		return 0;
	/* slice 0 as a 2D copy: Y counts the rows of the slices before it */
	hp_CUDA_MEMCPY2D q = {
	    .srcXInBytes = p->srcXInBytes, .srcY = sy,
	    .srcMemoryType = p->srcMemoryType, .srcHost = p->srcHost,
	    .srcDevice = p->srcDevice, .srcArray = p->srcArray,
	    .srcPitch = p->srcPitch,
	    .dstXInBytes = p->dstXInBytes, .dstY = dy,
	    .dstMemoryType = p->dstMemoryType, .dstHost = p->dstHost,
	    .dstDevice = p->dstDevice, .dstArray = p->dstArray,
	    .dstPitch = p->dstPitch,
	    .WidthInBytes = p->WidthInBytes, .Height = p->Height};
	return stage_rect(c, &q, p->Depth, p->srcHeight, p->dstHeight, s, ptsz,
			  sync, res);
}
