/* The copy plan: the copy engine's entry (docs/design.md, the way data
 * flows).  A copy hook hands its host side here (stage.h: hp_stage_htod,
 * hp_stage_dtoh; hp_stage_unified, hp_stage_2d, hp_stage_3d for unified and 2D/3D
 * copies), and hp_copy_plan decides, once, what the copy is:
 *
 *   passed through  to the driver as it is (the hook's own call);
 *   pieces          direct, one DMA per registration of a registered block
 *                   it crosses (pieces.c);
 *   prefix          the same inside the registered prefix of a block being
 *                   registered in the background, then a wait (pieces.c);
 *   staged          through a ring of staging slots (stage.c, stage_rect.c).
 *
 * The plan records what its executor needs (the stream and its identity,
 * the stream's context, the form and how an error ends: HP_STAGE_*) and
 * holds what its execution needs held (the capture gate and the stream's
 * entry, the prefix's reader count, the ring's claim) until
 * hp_copy_plan_end, which lets go of it and ends the copy as the plan says
 * (hp_copy_end, hp_copy_sync_end): the hook gets the result, or
 * HP_COPY_PASSED and makes its own call.  Driver calls go through the backend contract
 * (backend_cuda_calls.c). */
#include <stdlib.h>

#include "../backend/backend.h"
#include "../record.h"
#include "stage.h"

/* The statistics of staging: the copies (policy/stats.c), the rings. */
void hp_stage_counts(uint64_t *copies, uint64_t *bytes, uint64_t *ring_bytes)
{
	hp_stat_staged_get(copies, bytes);
	*ring_bytes = hp_ring_bytes();
}

int hp_stage_on(void)
{
	return hp_opt[HP_OPT_STAGE] && hp_stage_pieces_on();
}

int hp_stage_pieces_on(void)
{
	if (!hp_opt[HP_OPT_REGISTER_DEVICE])
		return 0;
	if (hp_backend == &hp_backend_cuda)
		return 1;
	const hp_backend_t *c = hp_backend_auto_chosen();
	return hp_backend == &hp_backend_auto &&
	       (c == NULL || c == &hp_backend_cuda);
}

hp_cudaStream_t hp_program_stream(hp_cudaStream_t s, int ptsz)
{
	return s == NULL && ptsz ? HP_CU_STREAM_PER_THREAD : s;
}

/* Whether the host side h starts in a hostpin block of c that is not
 * registered as a whole (nor the program's own registration): what the
 * driver knows of it is a part that the registration thread registered
 * (register.c), so the copy is staged all the same. */
static int own_block(const hp_copy_t *c, const void *h)
{
	hp_snap_t b;
	for (int i = 0; i < c->n; i++)
		if (!(hp_rflags_live(c->r[i]) & (HOSTPIN_REGISTERED | HP_F_FOREIGN)) &&
		    hp_registry_lookup(&hp_reg, (uintptr_t)h, &b) == c->r[i])
			return 1;
	return 0;
}

/* A block among the copy's that the program registered itself
 * (HP_F_FOREIGN): pinned memory to the driver, which a DMA queued on the
 * stream (the program's own async D2H into it) may still write. */
static int foreign_any(const hp_copy_t *c)
{
	for (int i = 0; i < c->n; i++)
		if (hp_rflags_live(c->r[i]) & HP_F_FOREIGN)
			return 1;
	return 0;
}

/* A copy of several driver calls on its stream may run: no capture
 * begins on the stream until stream_leave (capture.c: one call to the
 * program, captured whole or not at all; the stream told apart by its
 * identity, a per-thread default stream being the thread's), none is in
 * progress there, and none that prohibits this thread's calls anywhere.
 * The capture gate is not held for the copy's length: each call a capture
 * prohibits enters it alone (stage.c; issue 39 item 2). */
static int stream_enter(hp_cudaStream_t s)
{
	if (!hp_capture_stream_enter(s))
		return 0;
	if (hp_cuda_capturing(s) || hp_capture_busy()) {
		hp_capture_stream_leave(s);
		return 0;
	}
	return 1;
}

static void stream_leave(hp_cudaStream_t s)
{
	hp_capture_stream_leave(s);
}

/* The same for a copy by pieces through a registered block, or through
 * the registered prefix of a block being registered: its calls are
 * copies on s alone, of the program's own kind, and its waits a host
 * function on s (hp_stage_wait_stream), so a capture elsewhere that
 * prohibits other calls of this thread's (hostpin's stream and event
 * waits, the ring's events) leaves them be; s itself must not be
 * capturing (one call to the program, captured whole or not at all).
 * Passed as it is instead, such a copy reaches the driver only partly
 * registered (cases/capture-local-prefix-96554664). */
static int stream_enter_pieces(hp_cudaStream_t s)
{
	if (!hp_capture_stream_enter(s))
		return 0;
	if (hp_cuda_capturing(s)) {
		hp_capture_stream_leave(s);
		return 0;
	}
	return 1;
}

/* An async copy on s, a stream capturing now (any mode; a begin hostpin
 * saw): entered as captured (P->captured: its calls graph nodes, never
 * waited for; the capture's end on s waits for the copy,
 * hp_capture_end_wait), so that it goes by pieces, never whole across a
 * registration's end (issue 39 item 6). */
static int enter_captured(struct hp_plan *P, hp_cudaStream_t s)
{
	return P->captured = !(P->how & HP_STAGE_SYNC) &&
			     hp_cuda_capturing(s) &&
			     hp_capture_stream_enter_captured(s);
}

/* The driver's staging calls are there and this thread has a context. */
static int driver_here(void)
{
	return hp_cuda_stage_fns() && hp_cuda_ctx_current();
}

struct find_rec {
	const hp_rec_t *r;
	hp_snap_t *b;
};

static int find_rec(hp_rec_t *r, const hp_snap_t *sn, void *arg)
{
	struct find_rec *f = arg;
	if (r != f->r)
		return 0;
	*f->b = *sn;
	return 1;
}

/* Whether r, a block being registered or queued for it, overlaps the
 * copy [a, a+n); *at: the copy's first address in it (what
 * hp_register_prefix_all is asked about: plan_several, the staged
 * plan's P->rega). */
static int reg_at(const hp_rec_t *r, uintptr_t a, size_t n, uintptr_t *at)
{
	hp_snap_t b;
	struct find_rec f = {r, &b};
	if (!hp_registry_each_overlap(&hp_reg, a, n, find_rec, &f))
		return 0;
	*at = a > b.base ? a : b.base;
	return 1;
}

/* Whether [a, a+n), which overlaps the registered block of c (its one),
 * crosses the end of one of the block's registrations (a block over
 * HP_REG_PIECE_MAX, cells of HOSTPIN_REGISTER_CHUNK) or either end of the
 * block itself (it runs on into memory hostpin does not track: a
 * MAP_FIXED survivor's neighbour, cases/batch-past-block-96571474);
 * *b: the block.  Such a copy goes by pieces, cut at the block's ends
 * and registrations (pieces.c, stage_rect.c), or staged: the driver never
 * gets a range only partly registered. */
static int across_pieces(const hp_copy_t *c, uintptr_t a, size_t n,
			 hp_snap_t *b)
{
	struct find_rec f = {c->r[0], b};
	if (!hp_registry_each_overlap(&hp_reg, a, n, find_rec, &f))
		return 0;
	return a < b->base || n > b->base + b->len - a ||
	       hp_cells_piece_end(b->base, b->len, a) < a + n;
}

static void plan_make(struct hp_plan *P, hp_copy_t *c, const void *h,
		      size_t n, uintptr_t d, hp_cudaStream_t s, int htod,
		      size_t rect, int how);

/* A copy [a, a+n) of several blocks, r among them the registration
 * thread's block or one queued for it, that cannot be staged (no ring for
 * its stream's context, a capture that prohibits the ring's calls): a
 * reader of r's prefix (hp_register_prefix_all: no piece unregistered
 * under it, nor another block's job begun before it ends), direct by
 * pieces cut at every block's ends and registrations (P->len 0), each
 * piece registered or not, whole, when the driver gets it; then a wait,
 * as a copy of the one block across its prefix's end.  Its passing count
 * is kept to its end (hp_copy_plan).  0: r is neither (its registration
 * ended, or a piece was undone, since plan_make looked): the caller cuts
 * it by pieces all the same (never whole: r registered now, its
 * neighbour not, is a range only partly registered; cases/196-late_more.sh
 * LM_END), each piece as it is when the driver gets it, the copy still
 * counted as passing (a job of r begun again waits for it). */
static int plan_several(struct hp_plan *P, const hp_rec_t *r, uintptr_t a,
			size_t n, hp_cudaStream_t s)
{
	uintptr_t base, at;
	size_t len;
	hp_test_pause("several_look"); /* tests: r's job ends meanwhile */
	if (!reg_at(r, a, n, &at) ||
	    !hp_register_prefix_all(r, at, &base, &len))
		return 0;
	if (stream_enter_pieces(s) || enter_captured(P, s))
		P->kind = HP_PLAN_PREFIX, P->base = 0, P->len = 0;
	else
		hp_register_prefix_leave();
	return 1;
}

/* The plan; a copy that never reaches the driver with its block's memory
 * as it is (by pieces, in a registering block's prefix, or staged as a
 * block being registered, its rest cut at the pieces) lets go of its
 * count as one that might (passing.c): the registration thread does not
 * wait for it. */
void hp_copy_plan(struct hp_plan *P, hp_copy_t *c, const void *h, size_t n,
		  uintptr_t d, hp_cudaStream_t s, int htod, size_t rect,
		  int how)
{
	plan_make(P, c, h, n, d, s, htod, rect, how);
	/* a copy the driver must not get as it is: never made again whole
	 * after an error (HP_STAGE_RETRY; hp_copy_plan_end) */
	P->whole_no = P->kind != HP_PLAN_PASS &&
		      (P->kind != HP_PLAN_STAGED || P->must || P->registering);
	/* (a copy of several blocks by pieces or as a prefix's reader,
	 * P->len 0, hands the driver the parts in blocks not registered as
	 * they are: counted until its end, as one passed) */
	if (P->kind != HP_PLAN_PASS &&
	    (P->kind != HP_PLAN_STAGED || P->registering) &&
	    (P->kind == HP_PLAN_STAGED || P->len != 0))
		hp_copy_passing_end(c);
}

static void plan_make(struct hp_plan *P, hp_copy_t *c, const void *h,
		      size_t n, uintptr_t d, hp_cudaStream_t s, int htod,
		      size_t rect, int how)
{
	*P = (struct hp_plan){.kind = HP_PLAN_PASS, .htod = htod, .how = how,
			      .c = c, .s = s, .sid = hp_stream_key(s)};
	/* Nothing for hostpin to do: no host side, a forked child (no driver
	 * calls of its own), more records than a copy tracks, another
	 * backend.  With staging off (HOSTPIN_STAGE=0) a copy across a
	 * registered block's registrations still goes by pieces. */
	if (h == NULL || hp_in_child || c->overflow || !hp_stage_pieces_on())
		return;
	uintptr_t a = (uintptr_t)h;
	/* A range no memory holds ((size_t)-1 bytes): the driver's to refuse
	 * (issue 39 item 9). */
	if (n == 0 || n > UINTPTR_MAX - a)
		return;
	int one = c->n == 1;
	/* must: the driver must not get the copy as it is, whatever its
	 * size: staged (issue 39 item 6 and the 2D/3D limit) */
	int must = 0;
	/* A copy of several blocks, one of them the registration thread's
	 * or queued for it: nothing below cuts it at that block's registered
	 * part, and the thread began it (or may) after this copy was counted
	 * (passing.c: its drain did not wait for it): staged, or where it
	 * cannot be cut as that block's prefix reader (plan_several), never
	 * handed to the driver only partly registered (hp_register_prefix: 1 for
	 * such a block, no reader counted where no copy lies in a prefix) */
	int reg = -1; /* that block's index */
	for (int i = 0; i < c->n && !one && !must; i++) {
		uintptr_t b0;
		size_t l0;
		must = hp_register_prefix(c->r[i], 0, SIZE_MAX, &b0, &l0) != 0;
		reg = must ? i : -1;
	}

	/* A registered block: registered memory, the driver's, unless the
	 * copy crosses the end of one of the block's registrations: then a
	 * 1D copy goes as one DMA per registration, so that the driver sees
	 * each part inside one registration (a range across two is not one
	 * registered range to it); a 2D or 3D one is staged, or where it
	 * cannot be (staging off, no ring: the stream's context not
	 * current, a capture elsewhere that prohibits the ring's calls),
	 * goes by pieces too, its rows cut at the registrations
	 * (stage_rect.c: never a range only partly registered, issue 39
	 * item 6).  An H2D from a registered block is never staged: staging
	 * reads its source on the CPU at the call, before DMAs queued ahead
	 * of it on the stream wrote it (a D2H into that source, returned at
	 * once: HOSTPIN_COPY=async, or the program's own async copy); by
	 * pieces the driver orders it after them, as a copy from pinned
	 * memory (the engine tester's cases/staged-src-after-d2h-88101692,
	 * late_more's staged_after_d2h; a wait for the stream first could
	 * block on work the program lets run only later). */
	int split = 0, pre = 0;
	uintptr_t base = 0;
	size_t len = 0;
	/* A copy of several blocks, one of them registered by hostpin:
	 * never to the driver whole, a range across a registration's end
	 * (cases/mapfix-two-blocks-96568487: from a registered block on into
	 * the MAP_FIXED mapping next to it, registered by this copy's
	 * count): a 1D copy by pieces cut at every block's ends and
	 * registrations (P->len 0: pieces.c looks them up), a 2D or 3D D2H
	 * staged (an H2D by pieces too: never staged, below) */
	for (int i = 0; i < c->n && !one && !split; i++)
		split = (hp_rflags_live(c->r[i]) & HOSTPIN_REGISTERED) != 0;
	if (split && ((!must && !rect) || htod))
		goto pieces;
	must |= split && rect;
	if (one && (hp_rflags_live(c->r[0]) & HOSTPIN_REGISTERED)) {
		hp_snap_t b;
		if (!across_pieces(c, a, n, &b))
			return;
		P->base = b.base, P->len = b.len;
		split = 1;
		if (!rect || htod)
			goto pieces;
		must = 1;
	}
	/* never staged from a block the program registered (above): by
	 * pieces, each part as it is, the driver orders it after the DMAs
	 * queued before it (late_more's staged_after_foreign_d2h) */
	if (!hp_stage_on() || (htod && foreign_any(c)))
		goto pieces;

	/* A block being registered in the background (register.c), the copy
	 * wholly inside the part registered so far, whatever its size ("being
	 * registered" is a state of the block every copy honours): a 1D copy
	 * direct by pieces, then a wait for the stream (pieces.c);
	 * hp_register_prefix counts it as a reader of the prefix: no piece is
	 * unregistered under it.  Across the registered part's end, or a 2D
	 * or 3D copy there: staged (the driver never gets a range only partly
	 * registered). */
	pre = one && !must ? hp_register_prefix(c->r[0], a, n, &base, &len) : 0;
	P->registering = pre != 0;
	if (pre == 2) {
		/* (on s capturing: captured pieces, the prefix's reader
		 * until its calls returned, never a wait) */
		if (!rect && driver_here() &&
		    (stream_enter_pieces(s) || enter_captured(P, s))) {
			P->kind = HP_PLAN_PREFIX;
			P->base = base, P->len = len;
			return;
		}
		hp_register_prefix_leave();
	}
	if (pre == 1) { /* staged; a rest unstaged cut at pieces */
		hp_snap_t b;
		if (hp_registry_lookup(&hp_reg, a, &b) == c->r[0])
			P->base = b.base, P->len = b.len;
	} else if (pre == 2 && rect) {
		P->base = base, P->len = len;
	}
	must |= pre == 1 || (pre == 2 && rect);
	if (how & HP_STAGE_DIRECT) /* no ring carries it: cut, or as it is */
		goto pieces;

	/* Staged: HOSTPIN_STAGE_MIN bytes or more whose host side is not
	 * registered (a hostpin block pending or not yet worth registering,
	 * or memory hostpin does not own), a context current here, and the
	 * host memory unknown to the driver (or a block of hostpin's it knows
	 * a registered part of); or a copy that must be.  Copy threads that
	 * would not beat the pageable path (speed.c) pass it, unless it must
	 * be staged, or it is a D2H into a destination not resident (the
	 * pageable path faults it in on one thread: staging never loses). */
	if ((n < hp_opt[HP_OPT_STAGE_MIN] ||
	     !hp_pool_worth_at(htod, rect ? NULL : h, n)) && !must)
		return;
	for (int i = 0; i < c->n && !must; i++)
		if (hp_rflags_live(c->r[i]) & HOSTPIN_REGISTERED)
			return; /* a hostpin block registered now: direct */
	uintptr_t ctx;
	if (!hp_cuda_stage_fns() || !(ctx = hp_cuda_ctx_current()) ||
	    (!must && hp_cuda_host_known(h) && !own_block(c, h)))
		goto pieces; /* no context here, or memory the driver knows */
	/* staged in chunks: a copy the driver would refuse whole (past the
	 * end of its device allocation) goes to it as it is, nothing
	 * written (d: 0 for a 2D copy, whose caller checked it) */
	if (d && !hp_cuda_dev_fits(d, n))
		return;
	if (!stream_enter(s)) {
		if (must) /* a capture prohibits the ring's calls here */
			goto pieces;
		return;
	}
	/* the ring of the stream's context (a device's stream may be used
	 * with another device current): made only through the current one.
	 * Its context, generation and device are the plan's: what the ring
	 * and its growth use, never asked again (issue 39 item 4) */
	P->ctx = hp_cuda_stream_ctx(s, ctx);
	P->here = P->ctx == ctx;
	P->gen = hp_cuda_ctx_gen(P->ctx, P->here);
	P->dev = hp_cuda_ctx_dev(P->ctx);
	P->R = hp_ring_get(P, must);
	/* a row wider than a slot: as it is */
	if (P->R != NULL && rect > P->R->slot) {
		hp_ring_put(P->R);
		P->R = NULL;
	}
	if (P->R == NULL) {
		stream_leave(s);
		goto pieces;
	}
	P->kind = HP_PLAN_STAGED;
	P->queued = 1; /* its pipeline's DMAs: fenced on any error */
	P->must = must;
	if (reg >= 0) { /* (as plan_several) */
		if (reg_at(c->r[reg], a, n, &P->rega))
			P->reg = c->r[reg];
	} else if (pre) {
		P->reg = c->r[0], P->rega = a;
	}
	return;
pieces: /* unstaged, one that must not go as it is: cut at registrations */
	if (!driver_here())
		return;
	/* of several blocks, one the registration thread's or queued for it
	 * (reg): as below, a reader of that block's prefix, cut at every
	 * block's ends and registrations (P->len 0, pieces.c) */
	if (reg >= 0 && plan_several(P, c->r[reg], a, n, s))
		return;
	if (reg >= 0) /* (refused: cut, as one across a registered block) */
		split = 1, P->base = 0, P->len = 0;
	/* across the end of the registered prefix of a block being
	 * registered, or in a block queued for it (the thread may begin it
	 * before the driver gets the copy): direct by pieces as a reader of
	 * the prefix (no piece unregistered under it; each piece registered
	 * or not, whole, when the driver gets it), then a wait, as inside
	 * the prefix */
	if (pre && hp_register_prefix_all(c->r[0], a, &base, &len)) {
		/* (a 1D copy wholly inside the block: pieces.c) */
		/* (on s capturing, an async copy: captured pieces, the
		 * registered part's as registered memory, the rest's as
		 * pageable, a reader only until its calls returned: the
		 * capture never waits for the registration thread) */
		if ((rect || (a >= base && n <= base + len - a)) &&
		    (stream_enter_pieces(s) || enter_captured(P, s))) {
			P->kind = HP_PLAN_PREFIX;
			P->base = base, P->len = len;
		} else {
			hp_register_prefix_leave();
		}
		return;
	}
	/* a registered block's (registered meanwhile, too) */
	if (pre && (hp_rflags_live(c->r[0]) & HOSTPIN_REGISTERED)) {
		hp_snap_t b;
		if ((split = across_pieces(c, a, n, &b)))
			P->base = b.base, P->len = b.len;
	}
	/* (a 2D or 3D one too: its calls are copies on s, its waits a host
	 * function on s, as a 1D one's; cases/capture-local-2d-96559960) */
	if (split && stream_enter_pieces(s))
		P->kind = HP_PLAN_PIECES;
	/* an async copy (1D, 2D or 3D) on a stream capturing now, in any
	 * mode: captured as one node per registration (its rows cut at
	 * them), never whole across two (issue 39 item 6;
	 * cases/capture-own-pieces-538235, capture-stream-pieces); asked of
	 * the stream itself: stream_enter_pieces also fails with hostpin's
	 * stream table full, and a stream not capturing must not lose the
	 * error's fence (plan_wait).  The capture's end on s waits for the
	 * copy (hp_capture_end_wait): captured whole, by whichever thread
	 * ends it. */
	else if (split && !(how & HP_STAGE_SYNC) && hp_cuda_capturing(s) &&
		 hp_capture_stream_enter_captured(s))
		P->kind = HP_PLAN_PIECES, P->captured = 1;
}

/* The waits that end a copy's DMAs, for every executor, read from the
 * plan (its kind, form, direction, and whether DMAs may be queued): an
 * error returns only once every DMA the copy queued before it completed
 * (issue 39 item 3: none lands in the program's memory after the error
 * returned); a copy in the registered prefix of a block being registered
 * waits for what it queued whatever the form (the pageable semantics the
 * block still has; no piece is unregistered under its DMAs); a
 * synchronous form waits for a copy by pieces and for a staged H2D (a
 * staged D2H is complete once drained).  Made while the plan still holds
 * what it holds (the stream's entry, the prefix's readers, the ring). */
static int plan_wait(const struct hp_plan *P, int r)
{
	int sync = P->how & HP_STAGE_SYNC, wait;
	if (r == HP_COPY_PASSED || P->kind == HP_PLAN_PASS || P->captured)
		return r;
	if (r != 0 || P->kind == HP_PLAN_PREFIX)
		wait = P->queued;
	else if (P->kind == HP_PLAN_PIECES)
		wait = sync;
	else
		wait = (sync && P->htod) || P->reader ||
		       (P->passed && hp_copy_maybe_registered(P->c));
	if (wait) {
		int w = hp_stage_wait_stream(P->s);
		if (r == 0)
			r = w;
	}
	return r;
}

int hp_plan_rest(struct hp_plan *P)
{
	uintptr_t base;
	size_t len;
	if (!P->must)
		return 0;
	if (P->reg != NULL && !P->reader)
		P->reader = hp_register_prefix_all(P->reg, P->rega, &base,
						   &len);
	return 1;
}

int hp_copy_plan_end(struct hp_plan *P, size_t n, int r)
{
	r = plan_wait(P, r);
	switch (P->kind) {
	case HP_PLAN_PASS:
		return HP_COPY_PASSED;
	case HP_PLAN_PIECES:
		stream_leave(P->s);
		break;
	case HP_PLAN_PREFIX:
		stream_leave(P->s);
		hp_register_prefix_leave(); /* the DMAs completed */
		break;
	case HP_PLAN_STAGED:
		hp_ring_put(P->R);
		stream_leave(P->s);
		if (P->reader) /* its rest's DMAs completed (plan_wait) */
			hp_register_prefix_leave();
		if (r != HP_COPY_PASSED && P->cut) /* none of it staged */
			hp_stat_cut(n);
		else if (r != HP_COPY_PASSED)
			hp_stat_staged(n);
		break;
	}
	/* The end of a copy made here (its waits and fence: plan_wait): an
	 * error the caller makes again in its own terms
	 * passes (HP_STAGE_RETRY: its call ends the copy), unless the driver
	 * must not get the copy whole (whole_no: the caller's call would
	 * hand it over across a registration's end, a registration of its
	 * block free to begin or end under it: the error is returned,
	 * cases/187-chunk_dma.sh chunks_redo); one through a
	 * registered block by pieces ends as a copy through registered
	 * memory (an async form: the wait or event of HOSTPIN_COPY); the
	 * others as a copy through unregistered memory, counted. */
	if (r == HP_COPY_PASSED ||
	    (r != 0 && (P->how & HP_STAGE_RETRY) && !P->whole_no))
		return HP_COPY_PASSED;
	if (P->kind == HP_PLAN_PIECES && !(P->how & HP_STAGE_SYNC))
		hp_copy_end(P->c, P->s, 0, r == 0);
	else
		hp_copy_sync_end(P->c, r == 0);
	return r;
}

/* A 1D copy of n bytes between host memory h and device memory d: its
 * plan, executed, ended; what the hook gets (stage.h). */
static int copy_1d(hp_copy_t *c, uintptr_t d, char *h, size_t n,
		   hp_cudaStream_t s, int htod, int how)
{
	struct hp_plan P;
	hp_copy_plan(&P, c, h, n, d, s, htod, 0, how);
	int r = HP_COPY_PASSED;
	if (P.kind == HP_PLAN_PIECES || P.kind == HP_PLAN_PREFIX)
		r = hp_pieces_run(&P, d, h, n);
	else if (P.kind == HP_PLAN_STAGED)
		r = hp_stage_lin(&P, d, h, n);
	return hp_copy_plan_end(&P, n, r);
}

int hp_stage_htod(hp_copy_t *c, uintptr_t d, const void *h, size_t n,
		  hp_cudaStream_t s, int ptsz, int how)
{
	return copy_1d(c, d, (char *)(uintptr_t)h, n,
		       hp_program_stream(s, ptsz), 1, how);
}

int hp_stage_dtoh(hp_copy_t *c, void *h, uintptr_t d, size_t n,
		  hp_cudaStream_t s, int ptsz, int how)
{
	return copy_1d(c, d, h, n, hp_program_stream(s, ptsz), 0, how);
}

/* ---- what the hooks hand over without a direction or as a rectangle ----
 * decided here, once: the executors read the plan, never the descriptor
 * or the driver's answers again. */

/* Host memory the driver does not know, or a block of hostpin's (which
 * the driver may know in part while it is being registered: the plan
 * splits or stages such a copy at what is registered). */
static int unified_host(const void *p, unsigned type)
{
	return type == 0 || hp_foreign_hides(p);
}

int hp_stage_unified(hp_copy_t *c, uintptr_t d, uintptr_t s, size_t n,
		     hp_cudaStream_t st, int ptsz, int how)
{
	/* A small copy is planned too when it touches a block of hostpin's
	 * (c->n): it may cross the end of one of the block's registrations
	 * or of the registered part of a block being registered, which the
	 * driver must not get whole (issue 39 item 6).  Its direction is
	 * asked of the driver only then. */
	if (((n < hp_opt[HP_OPT_STAGE_MIN] || !hp_stage_on()) && c->n == 0 &&
	     !c->overflow) ||
	    !hp_stage_pieces_on() || !hp_cuda_stage_fns())
		return HP_COPY_PASSED;
	const void *dp = (const void *)d, *sp = (const void *)s;
	unsigned dt = hp_cuda_mem_type(dp), stp = hp_cuda_mem_type(sp);
	hp_cudaStream_t ps = hp_program_stream(st, ptsz);
	if (dt == HP_CU_MEMORYTYPE_DEVICE && unified_host(sp, stp))
		return copy_1d(c, d, (char *)(uintptr_t)s, n, ps, 1, how);
	if (stp == HP_CU_MEMORYTYPE_DEVICE && unified_host(dp, dt))
		return copy_1d(c, s, (char *)(uintptr_t)d, n, ps, 0, how);
	return HP_COPY_PASSED;
}
