/* Registration off the critical path: the copy engine's second part.
 *
 * A block that earns registration at its HOSTPIN_PIN_AFTER-th copy
 * (pin.c's hp_pin_copied) is not registered inside that copy's hook when
 * the copy can be staged instead (HOSTPIN_REGISTER_BACKGROUND, staging on,
 * the block at least HOSTPIN_STAGE_MIN): it is queued here, and one thread
 * of hostpin's (started at the first such block: invariant 9; every signal
 * blocked: invariant 11) registers it, through the context the program
 * used last (the CUDA backend pushes it: invariant 3), in registrations of
 * at most 1 GiB each (backend_cuda.c).  Meanwhile the block's copies are
 * staged (stage.c), so the copy that earned registration is never slower
 * than a staged one, and no driver lock is held by a program thread while
 * registration runs.
 *
 * The thread never registers while a CUDA graph capture in global or
 * thread-local mode is in progress (invariant 13): it sleeps until the
 * capture's end.  It holds the capture gate one piece at a time, so a
 * capture's begin waits for the piece in flight, not the block; one that
 * begins between pieces leaves those made registered and the next piece
 * waits (asleep) for its end.  It holds the block (its busy claim) while
 * it registers, as the copy hook did; a free of the block meanwhile
 * cancels what is left (hp_register_cancel: after the piece in flight,
 * the pieces made undone; during a capture that parked the registration,
 * once the capture ended, as the undo needs the gate).  A queued block is
 * marked HP_F_QUEUED; a block released before its turn is skipped (its
 * record no longer matches), one released and tracked again at the same
 * place is a new record without the mark.  At exit the registration in
 * progress is cancelled after its piece in flight (the pieces made undone,
 * or, during a capture, left to end with the process) and no other
 * begun.
 *
 * Before its first piece, the thread waits for the copies planned as
 * passed through before the block became its own (passing.c): the driver
 * has each before any piece is registered.
 *
 * A registered piece carries direct DMA at once: the thread registers the
 * block one registration at a time (hp_pin_each; each piece pre-faulted
 * just before it is registered) and publishes after each
 * how far the block is registered (pre.upto).  A copy wholly inside that
 * prefix goes direct (plan.c, pieces.c), as a reader (so does one that
 * must not go as it is and cannot be staged, anywhere in the block, begun
 * or still queued: cut at its registrations-to-be): it counts itself in
 * pre.readers from the moment it read the prefix until its stream was
 * waited for (the block is not REGISTERED yet, so nothing else fences the
 * copy).  Before any piece is unregistered again (a registration that
 * failed undoes the pieces made) and before the job ends, the prefix is
 * withdrawn and the readers are waited for, so that no piece is
 * unregistered under a DMA.
 *
 * This file holds the job in progress: its registration piece by piece
 * (hp_register_run), the prefix copies read, the cancels and waits of the
 * program's threads, a context's end met, the capture gate between
 * pieces.  The queue and the thread that runs the jobs: register_queue.c. */
#include <pthread.h>

#include "../record.h"
#include "../copy/stage.h"

/* statistics: blocks registered by the thread, and the copies that went
 * direct through a registered prefix (relaxed: counts) */
static _Atomic uint64_t bg_done, bg_direct;

/* The job in progress: its record and range, and the end of the prefix
 * registered so far (pre.base: none); copies reading it (pre.readers).
 * The lock is never held across a driver call. */
static struct {
	pthread_mutex_t mu;
	pthread_cond_t cv; /* the last reader left */
	const hp_rec_t *r;
	uintptr_t base, upto;
	size_t len;
	int readers;
	/* the block held now (pre.r's until its claim is let go), and
	 * whether its owner or the program cancelled what is left */
	const hp_rec_t *held;
	int cancel;
	/* the thread sleeps between two pieces for a capture's end
	 * (parked); a free() of the held block then returns at once and
	 * the thread releases the block itself once the pieces made are
	 * undone (handed) */
	int parked, handed;
	/* the held block's state before its busy claim (LIVE or CACHED):
	 * what a forked child, where no thread ends the claim, puts back */
	uint32_t held_st;
	/* the contexts' epoch when the job began; its last piece made with
	 * none of them ended since, or with its own living on (settled):
	 * flagged registered next, so a context's end waits for the thread
	 * to meet it (hp_register_end_met); one ended before, the pieces
	 * undone and the block pending again (restart) */
	unsigned ep;
	int settled, restart;
} pre = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

/* pre.r, read without the lock by copies of more blocks than they record
 * (hp_register_taken, passing.c's ALL): seq_cst, written before the
 * thread's drain (its fence) and after its last piece. */
static _Atomic(const hp_rec_t *) taken;

int hp_register_taken(const hp_rec_t *r)
{
	const hp_rec_t *t = atomic_load(&taken);
	return t != NULL && (r == NULL || t == r);
}

int hp_register_parked(void)
{
	pthread_mutex_lock(&pre.mu);
	int k = pre.parked;
	pthread_mutex_unlock(&pre.mu);
	return k;
}

/* Under pre.mu: no copy reads the prefix any more. */
static void pre_drain(void)
{
	while (pre.readers > 0)
		pthread_cond_wait(&pre.cv, &pre.mu);
}

/* hp_pin_each's report: [pre.base, upto) is registered; upto == base:
 * nothing is (a piece is about to be unregistered): withdrawn, and the
 * copies that read it waited for.  Non-zero: cancelled, stop. */
static int pre_progress(uintptr_t upto)
{
	pthread_mutex_lock(&pre.mu);
	/* the exit cancels what is left too (hp_register_exiting) */
	int c = (pre.cancel || hp_register_exiting()) && upto > pre.base;
	if (!c && upto > pre.base && upto == pre.base + pre.len) {
		/* the last piece: under pre.mu, as the end's look at
		 * pre.settled (its epoch and the ended context's mark made
		 * before it), so that the block is either flagged registered
		 * and met by the end, or undone here (issue 39 item 5) */
		if (hp_cuda_ctx_epoch() != pre.ep &&
		    !((hp_backend == &hp_backend_cuda ||
		       hp_backend_auto_chosen() == &hp_backend_cuda) &&
		      hp_cuda_pin_intact(pre.base, pre.len)))
			c = pre.restart = 1;
		else
			pre.settled = 1;
	}
	if (!c)
		pre.upto = upto;
	if (upto <= pre.base)
		pre_drain();
	pthread_mutex_unlock(&pre.mu);
	return c;
}

/* hp_pass_drain's: what is left was cancelled, or the process exits. */
static int drain_stop(void)
{
	pthread_mutex_lock(&pre.mu);
	int c = pre.cancel || hp_register_exiting();
	pthread_mutex_unlock(&pre.mu);
	return c;
}

/* If r is the block held by the thread: cancel (mode 1, 2) or not (0)
 * what is left, and sleep until the thread let go of it: 1; else 0.
 * Mode 2 (a free): if the thread is parked for a capture, it releases
 * the block itself once allowed: 2 at once.  Mode 3 (a realloc): parked,
 * 3 at once, the block still held (cancelled). */
static int held_wait(const hp_rec_t *r, int mode)
{
	if (r == NULL || hp_registrar)
		return 0;
	pthread_mutex_lock(&pre.mu);
	int k = pre.held == r && !pre.handed;
	if (pre.held == r && pre.handed && mode == 1 && hp_capture_busy())
		k = -1; /* freed during the capture: the thread's now */
	if (k > 0) {
		/* after the piece in flight (one piece at most), the thread
		 * undoes the pieces made and lets go */
		if (mode) {
			pre.cancel = 1;
			/* wakes a registrar parked for a capture */
			pthread_cond_broadcast(&pre.cv);
		}
		while (pre.held == r) {
			/* parked for a capture, which may be this thread's:
			 * a purge or munmap cannot wait for its end (its
			 * caller refuses or zeroes instead) */
			if (mode == 1 && pre.parked && hp_capture_busy()) {
				k = -1;
				break;
			}
			if (mode >= 2 && pre.parked) {
				/* the pieces made cannot be undone before
				 * the capture's end (which may be this
				 * thread's to make): a free hands the block
				 * to the thread, which releases it then; a
				 * realloc (3) moves it meanwhile (the thread
				 * holds it, mapped) */
				pre.handed = mode == 2;
				k = mode;
				break;
			}
			pthread_cond_wait(&pre.cv, &pre.mu);
		}
	}
	pthread_mutex_unlock(&pre.mu);
	return k;
}

int hp_register_cancel(const hp_rec_t *r) { return held_wait(r, 1); }

int hp_register_holds(const hp_rec_t *r)
{
	if (r == NULL || hp_registrar)
		return 0;
	pthread_mutex_lock(&pre.mu);
	int k = pre.held == r;
	pthread_mutex_unlock(&pre.mu);
	return k;
}

int hp_register_cancel_free(const hp_rec_t *r) { return held_wait(r, 2); }

int hp_register_cancel_realloc(const hp_rec_t *r) { return held_wait(r, 3); }

int hp_register_wait(const hp_rec_t *r) { return held_wait(r, 0); }

void hp_register_end_met(void)
{
	if (hp_registrar || hp_in_child)
		return;
	pthread_mutex_lock(&pre.mu);
	const hp_rec_t *r = pre.held;
	/* its last piece made before the end's mark (pre_progress): the
	 * thread meets the end (hp_pin_restart_if_ended) after no driver
	 * call that waits for a registration; a capture parks it only
	 * between pieces */
	int wait = r != NULL && pre.settled && !pre.handed;
	pthread_mutex_unlock(&pre.mu);
	if (!wait)
		return;
	hp_test_pause("end_met_wait");
	pthread_mutex_lock(&pre.mu);
	while (pre.held == r && !pre.parked)
		pthread_cond_wait(&pre.cv, &pre.mu);
	pthread_mutex_unlock(&pre.mu);
}

int hp_register_prefix(const hp_rec_t *r, uintptr_t a, size_t n,
		       uintptr_t *base, size_t *len)
{
	if (r == NULL)
		return 0;
	int k = 0;
	pthread_mutex_lock(&pre.mu);
	if (pre.r == r) {
		k = 1;
		if (a >= pre.base && a < pre.upto && n <= pre.upto - a) {
			k = 2;
			pre.readers++;
			atomic_fetch_add_explicit(&bg_direct, 1,
						  memory_order_relaxed);
			*base = pre.base, *len = pre.len;
		}
	} else if (hp_rflags((hp_rec_t *)(uintptr_t)r) & HP_F_QUEUED) {
		/* queued: the registration thread may register its first
		 * piece before a copy planned as pageable reaches the driver
		 * (cases/queued-partial-96518872.prog) */
		k = 1;
	}
	pthread_mutex_unlock(&pre.mu);
	return k;
}

int hp_register_prefix_all(const hp_rec_t *r, uintptr_t a, uintptr_t *base,
			   size_t *len)
{
	int k = 0;
	/* a queued block's range, the job's (hp_register_run: a record no
	 * longer there, or moved, is not registered) */
	hp_snap_t b;
	int at = r != NULL && hp_registry_lookup(&hp_reg, a, &b) == r;
	pthread_mutex_lock(&pre.mu);
	if (r != NULL && pre.r == r) {
		k = 1;
		pre.readers++;
		*base = pre.base, *len = pre.len;
	} else if (at && (hp_rflags((hp_rec_t *)(uintptr_t)r) & HP_F_QUEUED)) {
		/* queued: the thread may begin it before the copy reaches
		 * the driver (m2d-partial-96527741): a reader already, so
		 * that the job's pieces, each registered whole or not under
		 * the copy's parts, are not unregistered under them */
		k = 1;
		pre.readers++;
		*base = b.base, *len = b.len;
	}
	pthread_mutex_unlock(&pre.mu);
	return k;
}

void hp_register_prefix_leave(void)
{
	pthread_mutex_lock(&pre.mu);
	if (--pre.readers == 0)
		pthread_cond_broadcast(&pre.cv);
	pthread_mutex_unlock(&pre.mu);
}

uint64_t hp_register_background_done(uint64_t *direct)
{
	*direct = atomic_load_explicit(&bg_direct, memory_order_relaxed);
	return atomic_load_explicit(&bg_done, memory_order_relaxed);
}

/* Register the job queued as jr at base, len (register_queue.c), if its
 * record is still the block that was queued; 0 if done (or gone), 1 if it
 * must wait (held by another thread now). */
int hp_register_run(hp_rec_t *jr, uintptr_t base, size_t len)
{
	hp_snap_t s;
	hp_rec_t *r = hp_registry_lookup(&hp_reg, base, &s);
	if (r != jr || s.base != base || s.len != len ||
	    !(hp_rflags(r) & HP_F_QUEUED))
		return 0; /* released (or moved) before its turn */
	uint32_t st = hp_busy_begin(r, &s);
	if (!st) {
		unsigned w = hp_word_state(s.word);
		return w == HP_REC_LIVE || w == HP_REC_CACHED || w == HP_REC_BUSY;
	}
	unsigned ep = hp_cuda_ctx_epoch();
	if (hp_rflags(r) & HP_F_QUEUED) {
		hp_log(HP_LOG_DEBUG, "block %p (%zu bytes): registering in the "
		       "background", (void *)s.base, s.len);
		hp_test_pause("bg_claimed"); /* tests: r busy, unregistered */
		pthread_mutex_lock(&pre.mu);
		/* queued or pre.r, never neither, to hp_register_prefix */
		hp_set_rflags(r, hp_rflags(r) & ~HP_F_QUEUED);
		pre.r = r, pre.base = pre.upto = s.base, pre.len = s.len;
		pre.held = r, pre.held_st = st, pre.cancel = 0;
		pre.ep = ep, pre.settled = pre.restart = 0;
		atomic_store(&taken, r);
		pthread_mutex_unlock(&pre.mu);
		/* the copies planned before as passed through (passing.c)
		 * reach the driver before any piece is registered: a
		 * cancel or the exit meanwhile leaves it unregistered */
		if (hp_pass_drain(r, s.base, drain_stop))
			hp_pin_each(r, s.base, s.len, pre_progress);
		/* registered (copies now fenced as the block's: hp_copy_end)
		 * or not: the prefix's readers are done before the block is
		 * let go */
		hp_test_pause("bg_settled");
		pthread_mutex_lock(&pre.mu);
		pre.r = NULL, pre.upto = pre.base;
		atomic_store(&taken, NULL);
		pre_drain();
		int restart = pre.restart;
		pre.restart = 0;
		pthread_mutex_unlock(&pre.mu);
		hp_backend_events_act();
		if (restart && !(hp_rflags(r) & (HP_PIN_MASK | HOSTPIN_PENDING))) {
			/* its last piece made after a context's end: undone,
			 * registered again by its next copies or adoption */
			hp_set_rflags(r, hp_rflags(r) | HOSTPIN_PENDING);
			HP_CTR_ADD(pending_blocks, 1);
			hp_log(HP_LOG_INFO, "block %p (%zu bytes): a CUDA "
			       "context ended while it was being registered: "
			       "pending again", (void *)s.base, s.len);
		}
		hp_pin_restart_if_ended(r, s.base, s.len, ep, 1);
		if (hp_rflags(r) & HOSTPIN_REGISTERED)
			atomic_fetch_add_explicit(&bg_done, 1,
						  memory_order_relaxed);
	}
	hp_pin_recheck_ended(r, st, base, len, ep, 1);
	pthread_mutex_lock(&pre.mu);
	int handed = pre.held == r && pre.handed;
	if (pre.held == r) {
		pre.held = NULL, pre.cancel = pre.handed = 0;
		pthread_cond_broadcast(&pre.cv);
	}
	pthread_mutex_unlock(&pre.mu);
	hp_test_pause("bg_ended"); /* tests: the job over, nothing held */
	/* the program freed it during a capture: ours to free (not at an
	 * exit during that capture: the pieces made may still be
	 * registered, the memory stays mapped to the end) */
	if (handed && !hp_register_exiting())
		hp_block_release_freed(r, base);
	return 0;
}

/* Sleep (no spin) while a capture prohibits this thread's registrations;
 * a capture's end, a cancel or the exit wakes it (hp_register_wake). */
void hp_register_capture_sleep(void)
{
	pthread_mutex_lock(&pre.mu);
	while (hp_capture_busy() && !hp_register_stopped())
		pthread_cond_wait(&pre.cv, &pre.mu);
	pthread_mutex_unlock(&pre.mu);
}

void hp_register_wake(void)
{
	pthread_mutex_lock(&pre.mu);
	pthread_cond_broadcast(&pre.cv);
	pthread_mutex_unlock(&pre.mu);
}

int hp_register_piece_hold(void)
{
	for (;;) {
		if (hp_capture_hold()) {
			pthread_mutex_lock(&pre.mu);
			int c = pre.cancel || hp_register_exiting();
			pthread_mutex_unlock(&pre.mu);
			return c ? 2 : 1;
		}
		if (hp_register_exiting())
			return 0;
		pthread_mutex_lock(&pre.mu);
		/* parked: a free() of the block waiting now returns (the
		 * block is released here once the capture ended) */
		pre.parked = 1;
		pthread_cond_broadcast(&pre.cv);
		while (hp_capture_busy() && !hp_register_exiting())
			pthread_cond_wait(&pre.cv, &pre.mu);
		pre.parked = 0;
		pthread_mutex_unlock(&pre.mu);
	}
}

void hp_register_fork_child(void)
{
	/* The block the parent's thread was registering: that thread does
	 * not exist here, so nothing would end its busy claim, and the
	 * child's free, realloc or purge of the block would wait for ever.
	 * The child owns no half-finished registration of its parent (the
	 * block is plain memory here: invariant 4, hp_pin_fork_child forgot
	 * its pin flags): the claim ends now.  Read without the lock: only
	 * this thread exists. */
	hp_rec_t *h = (hp_rec_t *)(uintptr_t)pre.held;
	if (h != NULL && pre.held_st != 0) {
		hp_set_rflags(h, hp_rflags(h) & ~HP_F_QUEUED);
		hp_busy_end(h, pre.held_st);
	}
	/* the thread is the parent's; its lock may have been held */
	pthread_mutex_init(&pre.mu, NULL);
	pthread_cond_init(&pre.cv, NULL);
	pre.r = NULL, pre.readers = 0;
	atomic_store(&taken, NULL);
	pre.held = NULL, pre.cancel = 0;
	pre.parked = pre.handed = 0;
	hp_register_queue_fork_child();
	hp_capture_stream_fork_child();
	hp_pin_fork_unbusy();
}
