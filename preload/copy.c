/* The copy policy (invariant 7), one for every CUDA copy hook, runtime or
 * driver.  On pageable memory an async H2D copy returns once the source is
 * staged and an async D2H once the copy is done; on registered memory both
 * return at once.  So after a copy through a registered block hostpin waits
 * on the stream (HOSTPIN_COPY=sync), or records an event that any release
 * or reuse of the block waits for (async).  Waits go through the driver,
 * whose streams and events the runtime's are. */
#include "hooks.h"
#include "record.h"

static struct {
#define HP_FN_FIELD(name, R, params) hp_##name##_t name;
	HP_CU_POLICY_FNS(HP_FN_FIELD, hp_CUresult)
	HP_CU_POLICY_OPT_FNS(HP_FN_FIELD, hp_CUresult, int)
#undef HP_FN_FIELD
} pf;
/* 0 unresolved; 1 waits and events; 2 waits only (no event entry points);
 * -1 not even cuStreamSynchronize. */
static _Atomic int pf_state;

static int policy_fns(void)
{
	int st = atomic_load_explicit(&pf_state, memory_order_acquire);
	if (st)
		return st;
#define HP_FN_SYM(name, R, params) *(void **)&pf.name = hp_cuda_sym(#name);
	HP_CU_POLICY_FNS(HP_FN_SYM, )
	HP_CU_POLICY_OPT_FNS(HP_FN_SYM, , )
#undef HP_FN_SYM
	if (!pf.cuStreamSynchronize) {
		st = -1;
		hp_log(HP_LOG_WARN, "the CUDA driver lacks cuStreamSynchronize: "
		       "async copies through registered blocks cannot be made "
		       "host-synchronous");
	} else if (!pf.cuEventCreate || !pf.cuEventRecord ||
		   !pf.cuEventSynchronize || !pf.cuEventDestroy_v2) {
		st = 2;
		hp_log(HP_LOG_WARN, "the CUDA driver lacks event entry points: "
		       "HOSTPIN_COPY=async waits on the stream instead");
	} else {
		st = 1;
	}
	/* release: pairs with the acquire above; pf is complete. */
	atomic_store_explicit(&pf_state, st, memory_order_release);
	return st;
}

void hp_copy_forget_driver(void)
{
	/* release: pairs with the acquire in policy_fns, which resolves the
	 * loaded driver's again */
	atomic_store_explicit(&pf_state, 0, memory_order_release);
}

/* The (stream, event) pair of a block's last async copy changes under one
 * of these, so that a copy and a release racing on a block never see half
 * of a pair.  Held for a few loads and stores, never across a call. */
static atomic_flag pair_lock[64];

static atomic_flag *lock_of(hp_rec_t *r)
{
	atomic_flag *l = &pair_lock[((uintptr_t)r / sizeof(*r)) % 64];
	/* acquire: pairs with the release in unlock; the pair is ours */
	while (atomic_flag_test_and_set_explicit(l, memory_order_acquire))
		;
	return l;
}

static void unlock(atomic_flag *l)
{
	atomic_flag_clear_explicit(l, memory_order_release);
}

void hp_copy_init(hp_copy_t *c)
{
	c->n = c->overflow = 0;
	c->bytes = 0;
}

static void copy_add(hp_copy_t *c, hp_rec_t *r)
{
	for (int i = 0; i < c->n; i++)
		if (c->r[i] == r)
			return;
	if (c->n == HP_COPY_RECS)
		c->overflow = 1;
	else
		c->r[c->n++] = r;
}

struct copy_walk {
	hp_copy_t *c;
	int hit, pending, nlazy;
	/* Blocks registered at their HOSTPIN_PIN_AFTER-th copy: counted
	 * after the walk, outside the registry iteration. */
	hp_rec_t *lazy[HP_COPY_RECS];
	hp_snap_t lazys[HP_COPY_RECS];
};

static int copy_one(hp_rec_t *r, const hp_snap_t *s, void *arg)
{
	struct copy_walk *w = arg;
	w->hit = 1;
	unsigned f = hp_rflags(r);
	w->pending |= (f & HOSTPIN_PENDING) != 0;
	if ((f & HP_F_LAZY) && w->nlazy < HP_COPY_RECS) {
		w->lazy[w->nlazy] = r;
		w->lazys[w->nlazy++] = *s;
	}
	copy_add(w->c, r);
	return 0;
}

void hp_copy_host(hp_copy_t *c, const void *p, size_t n)
{
	uintptr_t a = (uintptr_t)p;
	if (p == NULL)
		return;
	if (n > UINTPTR_MAX - a)
		n = UINTPTR_MAX - a;
	/* Every block the host interval [p, p+n) overlaps, not only the one
	 * holding its first byte: a copy that starts outside a block and
	 * runs into one reaches registered memory too. */
	struct copy_walk w = {.c = c};
	hp_registry_each_overlap(&hp_reg, a, n ? n : 1, copy_one, &w);
	if (w.pending || w.nlazy) {
		/* The program is copying: it has a device context now, so
		 * pending blocks, and these if this copy makes them worth it
		 * (HOSTPIN_PIN_AFTER), are registered before the copy runs. */
		HP_GUARDED(
		    hp_cuda_learn_ctx();
		    if (w.pending) hp_adopt_pending();
		    for (int i = 0; i < w.nlazy; i++)
			    hp_pin_copied(w.lazy[i], &w.lazys[i]));
	}
	if (w.hit)
		c->bytes += n;
	/* Released blocks whose unregistration waited (a graph capture, no
	 * context then): this thread can make a context current now. */
	hp_retry_deferred();
}

/* Blocks of c that are registered (overflow: assume some are). */
static int registered(const hp_copy_t *c)
{
	int reg = c->overflow; /* blocks not looked at: assume registered */
	for (int i = 0; i < c->n; i++)
		if (hp_rflags(c->r[i]) & HOSTPIN_REGISTERED)
			reg++;
	return reg;
}

void hp_copy_sync_end(hp_copy_t *c, int ok)
{
	hp_hook_leave();
	if (!ok || (c->n == 0 && !c->overflow))
		return;
	/* A synchronous copy returns after it completed, registered memory
	 * or not: nothing to wait for; it counts (hp_copy_host) and is
	 * counted. */
	HP_CTR_ADD(copies_seen, 1);
	if (registered(c)) {
		HP_CTR_ADD(copies_registered, 1);
		HP_CTR_ADD(copy_bytes_registered, c->bytes);
	}
}

static int capturing(hp_cudaStream_t s)
{
	int st = HP_CU_STREAM_CAPTURE_STATUS_NONE;
	return pf.cuStreamIsCapturing && pf.cuStreamIsCapturing(s, &st) == 0 &&
	       st != HP_CU_STREAM_CAPTURE_STATUS_NONE;
}

static void wait_stream(hp_cudaStream_t s)
{
	pf.cuStreamSynchronize(s);
	HP_CTR_ADD(copy_waits, 1);
}

/* HOSTPIN_COPY=async: the block's last copy is now this one. */
static int track_event(hp_rec_t *r, hp_cudaStream_t s)
{
	hp_cudaEvent_t ev = NULL;
	if (pf.cuEventCreate(&ev, HP_CU_EVENT_DISABLE_TIMING) != 0)
		return -1;
	if (pf.cuEventRecord(ev, s) != 0) {
		pf.cuEventDestroy_v2(ev);
		return -1;
	}
	atomic_flag *l = lock_of(r);
	hp_cudaEvent_t old = (hp_cudaEvent_t)atomic_load_explicit(
	    &r->user[HP_U_EVENT], memory_order_relaxed);
	uintptr_t os = atomic_load_explicit(&r->user[HP_U_STREAM],
					    memory_order_relaxed);
	atomic_store_explicit(&r->user[HP_U_EVENT], (uintptr_t)ev,
			      memory_order_relaxed);
	atomic_store_explicit(&r->user[HP_U_STREAM], (uintptr_t)s,
			      memory_order_relaxed);
	unlock(l);
	if (old != NULL) {
		/* Same stream: the new event covers the old copy.  Another
		 * stream: wait for it before forgetting it. */
		if (os != (uintptr_t)s)
			pf.cuEventSynchronize(old);
		pf.cuEventDestroy_v2(old);
	}
	return 0;
}

void hp_copy_end(hp_copy_t *c, hp_cudaStream_t s, int ptsz, int ok)
{
	hp_hook_leave();
	if (!ok || (c->n == 0 && !c->overflow))
		return;
	int reg = c->overflow; /* blocks not looked at: assume registered */
	for (int i = 0; i < c->n; i++)
		if (hp_rflags(c->r[i]) & HOSTPIN_REGISTERED)
			reg++;
	HP_CTR_ADD(copies_seen, 1);
	if (!reg)
		return; /* pageable: the driver already kept the semantics */
	HP_CTR_ADD(copies_registered, 1);
	HP_CTR_ADD(copy_bytes_registered, c->bytes);
	if (s == NULL && ptsz)
		s = HP_CU_STREAM_PER_THREAD;
	hp_in_hook++;
	int st = policy_fns();
	if (st < 0 || capturing(s)) {
		/* No way to wait; or a stream capturing into a CUDA graph,
		 * which records the copy instead of running it: waiting would
		 * invalidate the capture. */
	} else if (!hp_capture_enter()) {
		/* Another stream captures a graph in global mode: any wait
		 * now would invalidate that capture (invariant 13). */
		HP_LOG_ONCE(HP_LOG_INFO, "a copy through registered memory "
			    "during a CUDA graph capture elsewhere in the "
			    "process: not waited for (a wait would invalidate "
			    "the capture)");
	} else {
		if (hp_opt[HP_OPT_COPY] == HP_COPY_SYNC || st == 2 ||
		    c->overflow) {
			wait_stream(s);
		} else {
			for (int i = 0; i < c->n; i++)
				if ((hp_rflags(c->r[i]) & HOSTPIN_REGISTERED) &&
				    track_event(c->r[i], s)) {
					wait_stream(s); /* no event: the safe
							 * wait */
					break;
				}
		}
		hp_capture_leave();
	}
	hp_in_hook--;
	/* After the wait: an object with unguarded copies loaded since the
	 * last look makes hostpin unregister its blocks. */
	hp_coverage_poll();
}

void hp_cuda_quiesce(hp_rec_t *r)
{
	if (hp_in_child) {
		/* The parent's events are not the child's: nothing to wait
		 * for, and no pair lock to take (hp_copy_fork_child). */
		hp_cuda_forget(r);
		return;
	}
	atomic_flag *l = lock_of(r);
	hp_cudaEvent_t ev = (hp_cudaEvent_t)atomic_load_explicit(
	    &r->user[HP_U_EVENT], memory_order_relaxed);
	atomic_store_explicit(&r->user[HP_U_EVENT], 0, memory_order_relaxed);
	atomic_store_explicit(&r->user[HP_U_STREAM], 0, memory_order_relaxed);
	unlock(l);
	if (ev == NULL || policy_fns() != 1)
		return;
	/* A block is neither unregistered nor released while a copy that
	 * used it may still run. */
	pf.cuEventSynchronize(ev);
	pf.cuEventDestroy_v2(ev);
	HP_CTR_ADD(copy_waits, 1);
}

void hp_cuda_forget(hp_rec_t *r)
{
	atomic_flag *l = lock_of(r);
	atomic_store_explicit(&r->user[HP_U_EVENT], 0, memory_order_relaxed);
	atomic_store_explicit(&r->user[HP_U_STREAM], 0, memory_order_relaxed);
	unlock(l);
}

void hp_copy_fork_child(void)
{
	/* Only this thread exists in the child: a lock a parent's thread held
	 * at the fork would never be released. */
	for (int i = 0; i < 64; i++)
		atomic_flag_clear_explicit(&pair_lock[i], memory_order_relaxed);
}
