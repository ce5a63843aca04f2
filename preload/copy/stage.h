/* The copy engine: each copy's plan (plan.c: passed through, direct by
 * pieces, or staged), executed by pieces.c (direct by pieces), stage.c
 * and stage_rect.c (a large copy whose host side is not registered goes
 * through a ring of staging slots hostpin registered once, with the
 * semantics of pageable memory: CUDA's "API synchronization behavior"). */
#ifndef HP_STAGE_H
#define HP_STAGE_H

#include <pthread.h>

#include "../hooks.h"

/* For a copy hook that entered (hp_hook_enter) and handed its host side to
 * hp_copy_host (plan.c: the copy's plan, executed, ended): the copy's
 * driver result if hostpin made it, the copy then ended here as its plan
 * says (hp_copy_end or hp_copy_sync_end: the hook returns the result at
 * once): staged (HP_PLAN_STAGED), direct through the registered part of a
 * block being registered in the background and waited for
 * (HP_PLAN_PREFIX), or direct through a registered block in several DMAs,
 * one per registration it crosses (HP_PLAN_PIECES: HP_REG_PIECE_MAX,
 * HOSTPIN_REGISTER_CHUNK; ended as a copy through registered memory);
 * HP_COPY_PASSED if it must go to the driver as it is, the hook making
 * its own call (HP_PLAN_PASS: HOSTPIN_STAGE=0, small, registered memory,
 * another backend, a capture, a forked child, no context on this thread,
 * no ring or no slot).  s: the program's stream; ptsz: stream 0 means the
 * per-thread default stream; how: HP_STAGE_* below. */
enum { HP_COPY_PASSED = -1 };
#define HP_STAGE_SYNC 1 /* the synchronous form (returns once complete) */
#define HP_STAGE_RETRY 2 /* an error is not returned: the copy is passed,
			  * the caller's own call makes it whole again, in
			  * its own terms (the runtime's; queued after what
			  * was staged); unless the driver must not get the
			  * copy whole (plan.c: whole_no): then returned */
#define HP_STAGE_DIRECT 4 /* never staged (no ring carries it: a 1D
			   * array copy); cut where it must not go whole */
HP_HIDDEN int hp_stage_htod(hp_copy_t *c, uintptr_t d, const void *h,
			    size_t n, hp_cudaStream_t s, int ptsz, int how);
HP_HIDDEN int hp_stage_dtoh(hp_copy_t *c, void *h, uintptr_t d, size_t n,
			    hp_cudaStream_t s, int ptsz, int how);

/* A 1D copy between unified addresses (cuMemcpy, cuMemcpyAsync,
 * cuMemcpyWithAttributesAsync and the runtime's): its direction decided by
 * the plan (plan.c), then planned as hp_stage_htod or hp_stage_dtoh when
 * one side is host memory the driver does not know (or a block of
 * hostpin's) and the other device memory; HP_COPY_PASSED otherwise (both
 * host, both device, managed or the program's pinned memory on either
 * side). */
HP_HIDDEN int hp_stage_unified(hp_copy_t *c, uintptr_t d, uintptr_t s,
			       size_t n, hp_cudaStream_t st, int ptsz, int how);

/* A 1D array copy (cuMemcpyHtoA, cuMemcpyAtoH and their async forms):
 * n bytes between host memory h and the 1D CUDA array a from byte off
 * (array1d.c).  Planned as a 1D copy that is never staged
 * (HP_STAGE_DIRECT): where it must not reach the driver as it is (across
 * a registration's end, or the registered part's of a block being
 * registered), one driver call per part, the array's offset advanced by
 * the bytes before; as above, the result or HP_COPY_PASSED (and: an array
 * that is not 1D, its geometry unknown, or the copy past its end: the
 * driver's to refuse whole). */
HP_HIDDEN int hp_stage_array_1d(hp_copy_t *c, hp_CUarray a, size_t off,
				char *h, size_t n, hp_cudaStream_t s,
				int ptsz, int htod, int how);

/* A 2D copy (CUDA_MEMCPY2D) between pitched host memory and device memory
 * or a CUDA array (its geometry asked of the driver: hp_cuda_array_geom),
 * staged whole rows at a time: as many rows as fit in a slot, packed
 * there, then one 2D DMA per slot (its direction and geometry decided by
 * the plan, plan.c; executed by stage_rect.c).  As above: the result, or
 * HP_COPY_PASSED if it must go to the driver as it is (and: an array on
 * both sides, or one whose geometry the driver does not say, both sides
 * host or both device, rows wider than a slot, no cuMemcpy2DAsync_v2).
 * Arguments as above. */
HP_HIDDEN int hp_stage_2d(hp_copy_t *c, const hp_CUDA_MEMCPY2D *p,
			  hp_cudaStream_t s, int ptsz, int how);
/* A 3D copy (CUDA_MEMCPY3D) between pitched host memory and device memory
 * or a CUDA array: its Depth slices staged as 2D copies (an array's
 * layers: 3D copies of one layer, cuMemcpy3DAsync_v2) in one hold of the
 * ring, their chunks pipelined across slices (a chunk spans slices when
 * the device side's follow each other: dstHeight or srcHeight == Height;
 * never an array's layers).  Passed through
 * as a 2D copy is, and: a LOD or reserved field not 0, a depth of 0,
 * a slice height below Height with a depth over 1, or a Z with a slice
 * height of 0.  Arguments as above. */
HP_HIDDEN int hp_stage_3d(hp_copy_t *c, const hp_CUDA_MEMCPY3D *p,
			  hp_cudaStream_t s, int ptsz, int how);
/* A 3D peer copy (CUDA_MEMCPY3D_PEER) whose host side is in a block of
 * hostpin's: planned as the 3D copy it is (a synchronous cuMemcpy3DPeer's
 * as cuMemcpy3D's: how, HP_STAGE_SYNC) where its contexts are this
 * thread's, each NULL or the one current here (the plan decides:
 * plan_rect.c); HP_COPY_PASSED otherwise.  Arguments as above. */
HP_HIDDEN int hp_stage_3d_peer(hp_copy_t *c, const hp_CUDA_MEMCPY3D_PEER *p,
			       hp_cudaStream_t s, int ptsz, int how);

/* register.c: the block the registration thread is registering, piece by
 * piece.  For a copy through record r of [a, a+n): 0 if r is not that
 * block (nor queued for it); 1 if it is, the copy not wholly inside its
 * registered prefix, or r is queued (staged: the driver knows, or may know
 * before the copy reaches it, a part of it); 2 if wholly inside: the copy may
 * go direct (*base, *len: the block), and is counted as a reader of the
 * prefix until hp_register_prefix_leave, which it calls once the DMAs
 * completed (no piece is unregistered before). */
HP_HIDDEN int hp_register_prefix(const struct hp_rec *r, uintptr_t a,
				 size_t n, uintptr_t *base, size_t *len);
/* The same for a copy through r (its first host byte a) that must not go
 * as it is and cannot be staged, wherever it lies in the block: 1 if r is
 * that block or queued for it (a reader until hp_register_prefix_leave;
 * *base, *len: the block, whose registrations the copy is cut at), else
 * 0. */
HP_HIDDEN int hp_register_prefix_all(const struct hp_rec *r, uintptr_t a,
				     uintptr_t *base, size_t *len);
HP_HIDDEN void hp_register_prefix_leave(void);

/* Is staging on for this process's backend (HOSTPIN_STAGE, CUDA)?  And
 * are copies planned at all (hostpin's blocks registered through the CUDA
 * backend: a copy across a registered block's registrations goes by
 * pieces, HOSTPIN_STAGE=0 too)? */
HP_HIDDEN int hp_stage_on(void);
HP_HIDDEN int hp_stage_pieces_on(void);

/* ---- inside the copy engine ----
 * ring.c: the staging rings, one per direction.  Their slots are owned per
 * stream until the event recorded after their last DMA completes.
 * Rings belong to a context (a device): hp_ring_get: the ring of the
 * plan's context and direction (its context, generation and device as the
 * plan recorded them: never asked again), claimed (not made again while
 * claimed); or NULL: none ready (asked for, through that context if the
 * plan found it current here; made in the background, never on a copy's
 * path: the copy passes through meanwhile), or it could not be made;
 * hp_ring_put lets go of it.
 * hp_ring_take: a slot for a copy on s that holds held slots already (free,
 * or its last DMA completed or was on s; held 0: it may take the last
 * slot no copy holds, and if it finds none the ring grows in the
 * background; a copy holding slots takes no more than its share: all but
 * that last one alone on the ring, else its part of the slots among the
 * copies that claimed it, two at least), taken until hp_ring_release; -1
 * if none (never a wait, never a registration).  hp_ring_over: holding held slots, the
 * copy has more than its share now (another copy claimed the ring since:
 * it lets one go).  hp_ring_copies: the copies that claimed a ring now.
 * hp_ring_fence: after a DMA from or into slot k was enqueued on s, record
 * its event (if that fails, wait for s); id: s's identity (plan's sid),
 * what hp_ring_take is given.  hp_ring_slot: slot k's bytes. */
#define HP_RING_SLOTS 4 /* a segment's */
#define HP_RING_SEGS 8 /* at most: grown when every slot is another stream's */
#define HP_RING_MAX (HP_RING_SLOTS * HP_RING_SEGS)
struct hp_ring {
	pthread_mutex_t mu;
	pthread_cond_t made; /* its first segment's making ended (made or
			      * not): a copy that must be staged waits on it */
	int dir; /* 0: H2D, 1: D2H */
	int state; /* 0: not made yet; 2: its first segment being made (by
		    * the growth thread, ring.c); 1: ready; -1: could not be
		    * made (tried again after skip copies); -2: exit */
	int skip, backoff;
	char *base[HP_RING_SEGS];
	int nseg;
	size_t slot, seglen;
	uintptr_t ctx; /* the context it was made through */
	uint64_t gen; /* hp_cuda_ctx_gen(ctx) then: made again when it changes */
	int dev; /* ctx's device (the plan's), -1 if not known */
	int claims; /* copies using it */
	int grow; /* 1: a segment more asked for; 2: being made (ring.c) */
	void *ev[HP_RING_MAX];
	/* under mu: taken by a copy; the rest: by whoever took the slot */
	int taken[HP_RING_MAX];
	int used[HP_RING_MAX]; /* ev[i] recorded after slot i's last DMA */
	hp_cudaStream_t owner[HP_RING_MAX]; /* the stream of that DMA */
	uint64_t fseq[HP_RING_MAX]; /* when ev[i] was recorded (fnext's) */
	_Atomic uint64_t fnext;
};
struct hp_plan;
HP_HIDDEN struct hp_ring *hp_ring_get(const struct hp_plan *P, int must);
HP_HIDDEN void hp_ring_put(struct hp_ring *R);
HP_HIDDEN int hp_ring_take(struct hp_ring *R, hp_cudaStream_t s, int held);
HP_HIDDEN int hp_ring_over(struct hp_ring *R, int held);
HP_HIDDEN unsigned hp_ring_copies(void);
HP_HIDDEN int hp_ring_fence(struct hp_ring *R, int k, hp_cudaStream_t s,
			   hp_cudaStream_t id);
HP_HIDDEN void hp_ring_release(struct hp_ring *R, int k);
HP_HIDDEN char *hp_ring_slot(const struct hp_ring *R, int k);
HP_HIDDEN uint64_t hp_ring_bytes(void);

/* plan.c: what a copy is, decided once (hp_copy_plan), then executed by
 * the file of its kind and ended (hp_copy_plan_end). */
enum hp_plan_kind {
	HP_PLAN_PASS, /* to the driver as it is */
	HP_PLAN_PIECES, /* direct, one DMA per registration of a registered
			 * block it crosses (pieces.c) */
	HP_PLAN_PREFIX, /* the same inside the registered prefix of a block
			 * being registered, then a wait (pieces.c) */
	HP_PLAN_STAGED, /* through the ring R (stage.c, stage_rect.c) */
};
struct hp_plan {
	enum hp_plan_kind kind;
	int htod; /* 1: H2D, 0: D2H */
	int how; /* HP_STAGE_*: the form, and how the copy ends */
	hp_copy_t *c; /* the hook's copy, ended by hp_copy_plan_end */
	hp_cudaStream_t s; /* the program's stream (hp_program_stream) */
	uintptr_t sid; /* its identity (hp_stream_key: a per-thread default
			* stream is this thread's) */
	uintptr_t base; /* PIECES, PREFIX: the block [base, base+len) */
	size_t len;
	uintptr_t ctx; /* STAGED: the stream's context, whose ring R is (a
			* device's stream may be used with another current) */
	uint64_t gen; /* STAGED: ctx's generation (hp_cuda_ctx_gen) */
	int dev; /* STAGED: ctx's device, -1 if not known */
	int here; /* STAGED: ctx is current on this thread (a ring is made
		   * only through it) */
	struct hp_ring *R; /* STAGED: the ring, claimed */
	int queued; /* DMAs of the copy may be queued (STAGED: from the
		     * start; PIECES, PREFIX: set by pieces.c once one is):
		     * hp_copy_plan_end waits for them before an error */
	int passed; /* STAGED: the rest of the copy went to the driver as it
		     * is (stage.c, stage_rect.c); if its block's registration
		     * ended or was under way by then, the driver may have had
		     * it as registered memory, its DMA late: hp_copy_plan_end
		     * waits for it (found/diff-dsum-7700192) */
	int registering; /* the block queued or being registered (plan.c) */
	int must; /* STAGED: the driver must not get it as it is (plan.c):
		   * what cannot be staged goes direct, cut (hp_plan_rest) */
	int whole_no; /* the driver must not get the copy as it is (PIECES,
		       * PREFIX; STAGED: must, or registering): an error
		       * is returned, even with HP_STAGE_RETRY, never made
		       * again whole by the caller (the runtime's call would
		       * hand the driver the range across a registration's
		       * end, its count as one passing let go) */
	const hp_rec_t *reg; /* STAGED: the block queued or being registered
			      * it crosses, if any; rega: an address of it in
			      * the copy (hp_register_prefix_all) */
	uintptr_t rega;
	int reader; /* STAGED: a reader of reg's prefix since its rest went
		     * direct (hp_plan_rest): left at the plan's end */
	int cut; /* STAGED: no slot from its start, none of it staged: all
		  * of it went direct, cut at the registrations (stage.c,
		  * stage_rect.c): counted as cut, not staged (the plan's
		  * end, hp_stat_cut) */
	int captured; /* PIECES, PREFIX: on a stream capturing now (plan.c):
		       * its DMAs are graph nodes, never waited for */
	/* a 2D or 3D copy: its rectangle, decided by the plan (plan.c: its
	 * direction and geometry checked there, never again): depth slices
	 * of H rows of w bytes, its rows numbered slice after slice.  q: a 2D
	 * descriptor whose device side is the program's, at slice 0 (its Y
	 * counts the rows before the first slice); h, pitch: the first host
	 * byte, the host rows' pitch; hs: bytes from one host slice to the
	 * next; dh: rows from one device slice to the next; bytes: w*H*depth;
	 * ah: a CUDA array device side's rows per layer in a 3D copy (q's Y
	 * is then layer * ah + row: each DMA a 3D copy of one layer), else 0 */
	struct hp_plan_rect {
		hp_CUDA_MEMCPY2D q;
		char *h;
		size_t pitch, hs, dh, w, H, depth, bytes, ah;
	} rect;
};
/* hp_copy_plan: the plan of a copy of n bytes from or to host memory h
 * (device side d, 0: checked by the caller) through the records c, on
 * the program's stream s; rect: 0, or a 2D or 3D copy's row width (n:
 * its host side's extent, first byte to last; staged only where a slot
 * holds a row).  A copy the driver must not
 * get as it is (a 2D/3D copy across a registered block's registrations,
 * any copy across the end of the registered part of a block being
 * registered) is staged whatever its size; a 2D/3D one across a
 * registered block's registrations that cannot be staged (HOSTPIN_STAGE=0,
 * no ring) goes by pieces, its rows cut at the registrations
 * (stage_rect.c).  What
 * a plan other than PASS holds (the capture gate and s's entry, the
 * prefix's reader count, the ring's claim) is held until
 * hp_copy_plan_end, which lets go of it and ends the copy as the plan
 * says (how, kind): r, the executor's answer (the result, or
 * HP_COPY_PASSED: nothing was done, no slot could be taken), is what the
 * hook gets. */
HP_HIDDEN void hp_copy_plan(struct hp_plan *P, hp_copy_t *c, const void *h,
			    size_t n, uintptr_t d, hp_cudaStream_t s, int htod,
			    size_t rect, int how);
HP_HIDDEN int hp_copy_plan_end(struct hp_plan *P, size_t n, int r);
/* A staged copy whose rest (all of it: no slot could be taken) can no
 * longer be staged (stage.c, stage_rect.c): 0 if that rest may go to the
 * driver as it is; 1 if it must not (P->must), and so goes direct, cut at
 * registrations, as a reader of the prefix of the block being registered
 * (P->reg: what plan_several does for a copy that cannot be staged), so
 * that no piece is undone or finished under its DMAs; hp_copy_plan_end
 * waits for them and lets go. */
HP_HIDDEN int hp_plan_rest(struct hp_plan *P);
/* the stream a copy runs on (ptsz: stream 0 is the per-thread one) */
HP_HIDDEN hp_cudaStream_t hp_program_stream(hp_cudaStream_t s, int ptsz);

/* stage_rect.c: a STAGED 2D or 3D plan's chunks of rows (P->rect), as
 * hp_stage_lin: its result, or HP_COPY_PASSED if nothing was done. */
HP_HIDDEN int hp_stage_rect(struct hp_plan *P);

/* pieces.c: a PIECES or PREFIX plan's DMAs from or to [h, h+n) (P->queued
 * set once one is queued); the first error.  The waits that end them, an
 * error's fence included, are hp_copy_plan_end's. */
HP_HIDDEN int hp_pieces_run(struct hp_plan *P, uintptr_t d, char *h,
			    size_t n);
/* The end of the part of [x, e) the driver may get in one call: cut at
 * the block [base, base+len)'s ends and registrations; len 0: at those
 * of every block of hostpin's it crosses, looked up. */
HP_HIDDEN uintptr_t hp_piece_end(uintptr_t base, size_t len, uintptr_t x,
				 uintptr_t e);
/* The rest [h, h+n) of a STAGED plan's copy to the driver unstaged: one
 * call per registration of the plan's block it crosses where the plan
 * names one (P->len: a copy that must not go as it is), else one call;
 * the first error. */
HP_HIDDEN int hp_pieces_cut(const struct hp_plan *P, uintptr_t d, char *h,
			    size_t n);

/* stage.c: a STAGED plan's 1D copy of [h, h+n) through its ring
 * (hp_stage_lin: its result; HP_COPY_PASSED if nothing was done: the
 * copy passes through); the chunk loops every staged copy runs
 * (stage_rect.c's too), m chunks: fill or drain copies chunk i between
 * the program's memory and a slot, issue enqueues its DMA on P's stream
 * (no wait at the end: an error's fence and a synchronous form's wait are
 * hp_copy_plan_end's).
 * They return 0, the driver's error, or HP_STAGE_REST: *done chunks done
 * (H2D: enqueued; D2H: in the program's memory), the rest must go to the
 * driver as the program's own calls (no slot could be taken; or a capture
 * began that prohibits the waits a slot needs: issue 39 item 2). */
#define HP_STAGE_REST (-2)
HP_HIDDEN int hp_stage_lin(struct hp_plan *P, uintptr_t d, char *h,
			   size_t n);
HP_HIDDEN int hp_stage_run_htod(const struct hp_plan *P, size_t m,
		      void (*fill)(size_t i, char *sl, void *arg),
		      int (*issue)(size_t i, char *sl, void *arg), void *arg,
		      size_t *done);
HP_HIDDEN int hp_stage_run_dtoh(const struct hp_plan *P, size_t m,
		      int (*issue)(size_t i, char *sl, void *arg),
		      void (*drain)(size_t i, char *sl, void *arg), void *arg,
		      size_t *done);
/* A wait for stream s that a copy owes the program (a synchronous form,
 * or DMA that must not outlive the call): inside the capture gate, or, if
 * a capture prohibits it now, all the same (the program's own call would
 * wait too). */
HP_HIDDEN int hp_stage_wait_stream(hp_cudaStream_t s);

/* pool.c: the copy threads (HOSTPIN_STAGE_THREADS, the calling thread
 * counted), started once (hp_pool_start); a memcpy, and rows rows of w
 * bytes dp and sp bytes apart, by them together. */
HP_HIDDEN void hp_pool_start(void);
/* The same in the background, not waited for (speed.c: the first copy's
 * set-up off its path); hp_pool_can: once both are made (waited for),
 * can direction htod be staged at all (the gate open, or a D2H into fresh
 * memory: hp_pool_worth_at)?  The growth
 * thread asks before a ring's first segment. */
HP_HIDDEN void hp_pool_early(void);
HP_HIDDEN int hp_pool_can(int htod);
/* speed.c: the copy threads' count (HOSTPIN_STAGE_THREADS, 0: sized to
 * HOSTPIN_STAGE_LINK and the measured memcpy rate, bounded by the CPUs);
 * whether staging that way pays (htod: 1 H2D, 0 D2H: the threads beat the
 * pageable path, and the CPU is not so busy that they no longer do);
 * hp_pool_seen: a staged round of bytes that way took ns (stage.c);
 * hp_pool_note: the choice in words (hostpin --show, the report). */
HP_HIDDEN unsigned hp_pool_threads(void);
/* the copy threads fit the CPUs, and the node's runnable threads left
 * them room when they started (pool.c's threads then watch, not sleep) */
HP_HIDDEN int hp_pool_quiet(void);
/* the copy threads picked, and fewer than the CPUs the process may use (a
 * CPU to spare for work beside them: ring.c's growth ahead) */
HP_HIDDEN int hp_pool_spare(void);
HP_HIDDEN int hp_pool_worth(int htod);
/* the same for a copy of [h, h+n) (h NULL: not looked at): and a D2H into
 * a destination not resident is worth staging (hp_speed_resident: the
 * driver's pageable path faults it in slower than a copy thread) */
HP_HIDDEN int hp_pool_worth_at(int htod, const void *h, size_t n);
HP_HIDDEN void hp_pool_seen(int htod, size_t bytes, uint64_t ns);
/* a staged round that way begins (+1) or ends (-1): rounds staged at once
 * share the copy threads and the link, so each counts at their number
 * times its rate (two pageable copies share the link too) */
HP_HIDDEN void hp_pool_round(int htod, int delta);
HP_HIDDEN const char *hp_pool_note(void);
/* speed.c's decisions on the numbers it measured (MB/s), pure: the
 * threads for link (*need: ceil(link / mc)), at most cap unless asked;
 * their rate on cpus usable, online CPUs and busy other runnable threads;
 * whether staging at rate beats the pageable path (d: 0 H2D, 1 D2H); the
 * rate after a staged round at r (pays: by a quarter more than pageable;
 * *slow: the rounds in a row that did not, this one counted: a lone one
 * leaves the gate open, two close it). */
HP_HIDDEN unsigned hp_speed_threads(unsigned link, unsigned mc, unsigned cap,
				    unsigned asked, unsigned *need);
HP_HIDDEN uint64_t hp_speed_rate(unsigned n, unsigned cpus, long online,
				 unsigned busy, unsigned mc);
HP_HIDDEN int hp_speed_pays(uint64_t rate, unsigned link, int d);
HP_HIDDEN uint64_t hp_speed_next(uint64_t avg, uint64_t r, unsigned link,
				 int d, unsigned *slow);
/* a round's rate: bytes in ns, by the copies staging that way at once
 * (copies: the most seen during it, at least 1) */
HP_HIDDEN uint64_t hp_speed_round(size_t bytes, uint64_t ns, unsigned copies);
/* one core's rate (MB/s) at a copy thread's work: copy called on parts of
 * pool.c's part size, from a warm source into a warm slot-sized window
 * (speed.c passes the ring's own routine, hp_nt_copy) */
HP_HIDDEN unsigned hp_speed_memcpy(void (*copy)(char *d, const char *s,
						size_t n));
/* the threads busy besides this one, from /proc/loadavg's text */
HP_HIDDEN unsigned hp_speed_busy(const char *loadavg);
/* [p, p+n) resident: its first, middle and last pages in memory (mincore);
 * 0 where one is not (a fresh destination: the copy faults its pages in,
 * and so would the driver's pageable path, on one thread) or it cannot
 * tell */
HP_HIDDEN int hp_speed_resident(const void *p, size_t n);
HP_HIDDEN void hp_pcopy(void *dst, const void *src, size_t len);
/* the same into a staging slot the CPU does not read again (non-temporal
 * stores where the CPU has them) */
HP_HIDDEN void hp_pcopy_in(void *slot, const void *src, size_t len);
HP_HIDDEN void hp_pcopy_rows(char *dst, size_t dp, const char *src,
			     size_t sp, size_t w, size_t rows);
/* A staged H2D's fill or D2H's drain (stage.c): hp_pool_defer(1) (into
 * a slot: non-temporal stores) or hp_pool_defer(2) (out of one: plain
 * stores), and this thread's copies above are posted to the copy threads,
 * not waited for, until hp_pool_defer(0); hp_pool_mark then, and
 * hp_pool_wait(mark) returns once they are done (the copy threads' parts
 * taken meanwhile), hp_pool_done(mark) says whether they are (copied
 * inline: as many copies staging as copy threads, or more, each copies
 * its own).  hp_pool_help: one queued part copied, if any (a thread that
 * waits for a slot's DMA: 1 if it did). */
HP_HIDDEN void hp_pool_defer(int on);
HP_HIDDEN unsigned hp_pool_mark(void);
HP_HIDDEN void hp_pool_wait(unsigned mark);
HP_HIDDEN int hp_pool_done(unsigned mark);
HP_HIDDEN int hp_pool_help(void);
/* spread.c: a thread copying into or out of the ring notes its CPU, and
 * moves (within its own affinity mask) to a CPU where no other copying
 * thread of the process is noted if another is noted on its own; leave:
 * the note dropped (the copy done, the copy thread idle); moves: how many
 * so far */
HP_HIDDEN void hp_spread(void);
/* the same, for a thread noted already (one in a staged copy) */
HP_HIDDEN void hp_spread_more(void);
HP_HIDDEN void hp_spread_leave(void);
HP_HIDDEN unsigned long hp_spread_moves(void);
/* the CPUs' notes: how many copying threads are noted on CPU c */
HP_HIDDEN unsigned hp_spread_noted(int c);
/* pure: where a thread on CPU c, its mask m, moves given the notes (its
 * own counted): a CPU of m noted by none if c is noted twice or more and
 * m has two CPUs or more, else -1 */
HP_HIDDEN int hp_spread_pick(int c, const cpu_set_t *m,
			     const unsigned short *noted);
/* pool.c's give-way, pure: a calling thread just copied a part, the
 * helpers (helpers of them) having taken parts in all when it looked
 * (parts); *seen, *alone, *last: its own state.  1: give its CPU way now
 * (ALONE_PARTS parts in a row with none of theirs, and GIVE_WAY_NS since
 * it last did at now). */
struct hp_give_way {
	unsigned long seen;
	int alone;
	uint64_t last;
};
HP_HIDDEN int hp_pool_give_way(struct hp_give_way *g, int helpers,
			       unsigned long parts, uint64_t now);

#endif
