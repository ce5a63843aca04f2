/* The copy policy (invariant 7), one for every CUDA copy hook, runtime or
 * driver.  On pageable memory an async H2D copy returns once the source is
 * staged and an async D2H once the copy is done; on registered memory both
 * return at once.  So after a copy through a registered block hostpin waits
 * on the stream (HOSTPIN_COPY=sync), or records an event that any release
 * or reuse of the block waits for (async).  Waits go through the driver,
 * whose streams and events the runtime's are: the CUDA backend's copy
 * fences (backend_cuda_calls.c) make the waits and events; this file decides. */
#include <sched.h>
#include <time.h>

#include "../hooks.h"
#include "../record.h"

/* hp_cuda_copy_fns's answer for a driver with waits but no events */
#define FENCES_WAIT_ONLY 2

void hp_copy_init(hp_copy_t *c)
{
	c->n = c->overflow = c->held = 0;
	c->all = 0;
	c->nowait = c->blocked = 0;
	c->bytes = 0;
}

/* c's counts as a copy that may reach the driver with its blocks' memory
 * as it is (passing.c), let go. */
static void pass_go(hp_copy_t *c)
{
	for (int i = 0; i < c->held; i++)
		c->pass[i] = hp_pass_sub(c->pass[i]);
	c->all = hp_pass_sub(c->all);
}

/* The copy's blocks counted in flight until its end, so that hostpin's own
 * unregistration of one (stepping aside for the program's registration,
 * foreign.c) waits for it; a block being stepped aside from is waited for
 * first, counting nothing meanwhile (whatever else this copy counted is let
 * go too: no wait while holding a count). */
static void let_go(hp_copy_t *c)
{
	for (int i = 0; i < c->held; i++)
		hp_hold_sub(c->pass[i]);
	hp_hold_sub(c->all);
	c->held = 0;
	c->all = 0;
}

/* A copy of more blocks than it records (overflow) counted after a mark
 * anywhere (passing.c: hp_hold_all_waits): until it goes, 1; 0 at once
 * if a capture parks the registration thread, which may be this thread's
 * own capture (the copy then goes as it is: a limit, docs/design.md). */
static int wait_all(void)
{
	for (unsigned i = 0; hp_hold_all_waits(); i++) {
		if (hp_capture_busy() && hp_register_parked())
			return 0;
		if (i < 100) {
			sched_yield();
			continue;
		}
		struct timespec ts = {0, 1000000};
		nanosleep(&ts, NULL);
	}
	return 1;
}

/* What a mark on r asks of a copy (hp_hold_waits), or nothing once r is
 * back in the registry's pool: a copy whose host interval reached a block
 * another thread freed after the walk (a huge one, to the end of the
 * address space: issue 39, seed 113's `bogus` copies) holds a record
 * whose flags word is then the pool's link, whose bits may read as a
 * mark for ever.  Every read of a copy's record's flags after the walk
 * goes so (hp_rflags_live: registered(), the plan's). */
static unsigned rec_waits(hp_rec_t *r)
{
	return hp_rec_read_live(r, hp_hold_waits);
}

/* Counted the same way, as a copy that may reach the driver with the
 * block's memory as it is (passing.c): a registration of the block
 * begun later waits for it, or is put off; one in progress inside
 * another thread's call (HP_F_PINNING) is waited for first, as a step
 * aside is, and the copy then planned with the block as it left it. */
static void hold(hp_copy_t *c)
{
	/* a copy of more blocks than it records: counted as one through
	 * every block (passing.c's ALL), and it waits for a mark anywhere */
	int all_ok = 1;
	for (;;) {
		for (; c->held < c->n; c->held++)
			c->pass[c->held] = hp_hold_add(c->r[c->held]);
		if (c->overflow && c->all == 0)
			c->all = hp_hold_add_all();
		int wait = -1;
		unsigned why = 0;
		hp_hold_fence();
		for (int i = 0; i < c->n && wait < 0; i++)
			if ((why = rec_waits(c->r[i])) != 0)
				wait = i;
		if (wait < 0 && !(c->all && all_ok && hp_hold_all_waits()))
			return;
		let_go(c);
		if (c->nowait) {
			c->blocked = 1;
			return;
		}
		if (wait < 0)
			all_ok = wait_all();
		else
			while (rec_waits(c->r[wait]) & why)
				sched_yield();
	}
}

/* c counted on its blocks, waiting first where hp_copy_host did not
 * (nowait) */
void hp_copy_hold(hp_copy_t *c)
{
	c->nowait = 0;
	hold(c);
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
	/* A block the program registered itself: its copies are the
	 * program's business, not counted towards hostpin's registration. */
	if (f & HP_F_FOREIGN)
		f &= ~(HOSTPIN_PENDING | HP_F_LAZY);
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
	hp_test_pause("copy_walked"); /* tests: a block freed meanwhile */
	if (w.pending || w.nlazy) {
		/* The program is copying: it has a device context now, so
		 * pending blocks, and these if this copy makes them worth it
		 * (HOSTPIN_PIN_AFTER), are registered before the copy runs. */
		HP_GUARDED(
		    hp_cuda_learn_ctx(); hp_backend_events_act();
		    if (w.pending) hp_adopt_pending();
		    for (int i = 0; i < w.nlazy; i++)
			    hp_pin_copied(w.lazy[i], &w.lazys[i]));
	}
	hold(c);
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
		if (hp_rflags_live(c->r[i]) & HOSTPIN_REGISTERED)
			reg++;
	return reg;
}

/* Blocks of c held by a thread that may be registering them now (busy,
 * not marked registered yet). */
static int changing(const hp_copy_t *c)
{
	for (int i = 0; i < c->n; i++)
		/* acquire: a registration's claim before its driver call */
		if (hp_word_state(atomic_load_explicit(
			&c->r[i]->word, memory_order_acquire)) == HP_REC_BUSY)
			return 1;
	return 0;
}

int hp_copy_maybe_registered(const hp_copy_t *c)
{
	return registered(c) || changing(c);
}

static void sync_end(hp_copy_t *c, int ok)
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

/* A wait for s while a capture prohibits stream and event waits here:
 * 0 once the work queued on s ran.  The stream's entry keeps a capture
 * from beginning there meanwhile (a captured host function would never
 * run). */
static int wait_quiet(hp_cudaStream_t s)
{
	if (!hp_capture_stream_enter(s))
		return -1;
	int r = hp_cuda_capturing(s) ? -1 : hp_cuda_wait_stream_quiet(s);
	hp_capture_stream_leave(s);
	return r;
}

/* The wait for s outside the capture gate (a host function on it); in
 * the gate only where there is no such wait (a held stream's wait inside
 * it kept a capture's begin elsewhere waiting: issue 39 item 2, late_fix
 * capture_changing, fuzz cases/capture-untracked-wait-73100612). */
static void wait_outside(hp_cudaStream_t s)
{
	if (wait_quiet(s) != 0 && hp_capture_enter()) {
		hp_cuda_wait_stream(s);
		hp_capture_leave();
	}
}

static void copy_end(hp_copy_t *c, hp_cudaStream_t s, int ptsz, int ok)
{
	hp_hook_leave();
	if (!ok || (c->n == 0 && !c->overflow))
		return;
	int reg = registered(c);
	HP_CTR_ADD(copies_seen, 1);
	if (!reg) {
		/* pageable: the driver already kept the semantics; unless a
		 * block was being changed meanwhile (registered by another
		 * thread, not marked yet: the driver may have had this copy
		 * as registered memory): waited for (issue 39 item 10),
		 * outside the capture gate as below (a held stream's wait
		 * inside it kept a capture's begin elsewhere waiting:
		 * late_fix capture_changing) */
		if (changing(c)) {
			if (s == NULL && ptsz)
				s = HP_CU_STREAM_PER_THREAD;
			hp_in_hook++;
			if (hp_cuda_copy_fns() >= 0 && !hp_cuda_capturing(s))
				wait_outside(s);
			hp_in_hook--;
		}
		return;
	}
	HP_CTR_ADD(copies_registered, 1);
	HP_CTR_ADD(copy_bytes_registered, c->bytes);
	if (s == NULL && ptsz)
		s = HP_CU_STREAM_PER_THREAD;
	hp_in_hook++;
	int st = hp_cuda_copy_fns();
	hp_backend_events_act();
	/* HOSTPIN_COPY=async: a block's last copy on another stream, which
	 * track_event waits for, waited for before the gate, this thread in
	 * relaxed capture mode (a held stream's wait inside it kept a
	 * capture's begin elsewhere waiting: issue 39, late_fix
	 * capture_replaced) */
	if (st == 1 && hp_opt[HP_OPT_COPY] != HP_COPY_SYNC && !c->overflow &&
	    !hp_cuda_capturing(s))
		for (int i = 0; i < c->n; i++)
			if (hp_rflags_live(c->r[i]) & HOSTPIN_REGISTERED)
				hp_cuda_settle(c->r[i], hp_stream_key(s));
	/* No way to wait (st < 0); or a stream capturing into a CUDA
	 * graph, which records the copy instead of running it: waiting would
	 * invalidate the capture. */
	if (st >= 0 && !hp_cuda_capturing(s) && !hp_capture_enter()) {
		/* Another stream captures a graph in global mode (or this
		 * thread's in thread-local mode): a stream or event wait now
		 * would invalidate that capture (invariant 13); the copy,
		 * not captured, still keeps pageable semantics: a host
		 * function on its stream says when it ran.  The stream's
		 * entry keeps a capture from beginning there meanwhile (a
		 * captured host function would never run). */
		if (wait_quiet(s) != 0)
			HP_LOG_ONCE(HP_LOG_INFO, "a copy through registered "
				    "memory during a CUDA graph capture "
				    "elsewhere in the process: not waited for "
				    "(a wait would invalidate the capture)");
	} else if (st >= 0 && !hp_cuda_capturing(s)) {
		if (hp_opt[HP_OPT_COPY] == HP_COPY_SYNC ||
		    st == FENCES_WAIT_ONLY || c->overflow) {
			/* The wait outside the gate (a host function on s),
			 * so that a capture's begin elsewhere, the process's
			 * first too, never waits for this stream's work
			 * (issue 39 item 2); in it only where there is no
			 * such wait */
			hp_capture_leave();
			wait_outside(s);
			hp_in_hook--;
			hp_coverage_poll();
			return;
		} else {
			int untracked = 0;
			for (int i = 0; i < c->n && !untracked; i++)
				untracked = (hp_rflags_live(c->r[i]) &
					     HOSTPIN_REGISTERED) &&
					    hp_cuda_track_event(
						c->r[i], s, hp_stream_key(s));
			if (untracked) {
				/* No event (one of another context's stream,
				 * say): the safe wait, outside the gate as
				 * above (a held stream's wait inside it kept
				 * a capture's begin elsewhere waiting: fuzz
				 * cases/capture-untracked-wait-73100612) */
				hp_capture_leave();
				wait_outside(s);
				hp_in_hook--;
				hp_coverage_poll();
				return;
			}
		}
		hp_capture_leave();
	}
	hp_in_hook--;
	/* After the wait: an object with unguarded copies loaded since the
	 * last look makes hostpin unregister its blocks. */
	hp_coverage_poll();
}

void hp_copy_passing_end(hp_copy_t *c)
{
	pass_go(c);
}

void hp_copy_sync_end(hp_copy_t *c, int ok)
{
	sync_end(c, ok);
	let_go(c);
}

void hp_copy_end(hp_copy_t *c, hp_cudaStream_t s, int ptsz, int ok)
{
	copy_end(c, s, ptsz, ok);
	let_go(c);
}

void hp_copy_join(hp_copy_t *into, hp_copy_t *c, int ok)
{
	if (into == NULL || !ok) {
		let_go(c);
		return;
	}
	/* into's blocks are all held (its held == n): each of c's moves with
	 * its count, or lets it go where into has it already (or is full:
	 * then into assumes registered blocks, as an overflowing copy does);
	 * its count as a pass-through ends: c's call returned */
	pass_go(c);
	for (int i = 0; i < c->held; i++) {
		int have = 0;
		for (int j = 0; j < into->n && !have; j++)
			have = into->r[j] == c->r[i];
		if (!have && into->n < HP_COPY_RECS) {
			into->pass[into->n] = c->pass[i];
			into->r[into->n++] = c->r[i];
			continue;
		}
		/* into full: counted as a copy through every block before
		 * its block's count goes (passing.c: a step aside drains
		 * ALL after the block's stripe) */
		if (!have && into->all == 0)
			into->all = hp_pass_sub(hp_hold_add_all());
		into->overflow |= !have;
		hp_hold_sub(c->pass[i]);
	}
	if (into->all == 0)
		into->all = c->all;
	else
		hp_hold_sub(c->all);
	c->all = 0;
	into->held = into->n;
	into->overflow |= c->overflow;
	into->bytes += c->bytes;
	c->held = 0;
}
