/* Inside the staging rings (stage.h: struct hp_ring and what copies call):
 * what ring.c (the table of rings, their making, slot hand-out) and
 * ring_grow.c (segments: made, installed, undone; the growth thread) share. */
#ifndef HP_RING_H
#define HP_RING_H

#include "stage.h"

/* ring.c: the rings of each context that staged, [i][0] H2D, [i][1] D2H */
#define HP_RING_CTXS 8
HP_HIDDEN extern struct hp_ring hp_rings[HP_RING_CTXS][2];

/* ring_grow.c.  A segment of slots being made: its bytes and events. */
struct hp_seg {
	char *base;
	size_t slot, len;
	void *ev[HP_RING_SLOTS];
};
/* Make a segment of slots for a ring of direction dir (g: its segments
 * now, for the log) through its context ctx at generation gen, current on
 * this thread: 0 if done; 1 if not now, for a moment; 2 if ctx ended
 * before or while it was made; -1 if refused (nothing of it left but 0). */
HP_HIDDEN int hp_seg_make(int dir, int g, struct hp_seg *S, uintptr_t ctx,
			  uint64_t gen);
/* A segment made but not installed: released. */
HP_HIDDEN void hp_seg_undo(struct hp_seg *S);
/* Under R->mu: the making of R's first segment S for context ctx at
 * generation gen ended (e: hp_seg_make's answer, 2: ctx ended meanwhile;
 * gone: ctx ended first);
 * 1 if S is R's now, else the caller undoes S if it was made. */
HP_HIDDEN int hp_ring_first_made(struct hp_ring *R, int e, int gone,
				 const struct hp_seg *S, uintptr_t ctx,
				 uint64_t gen);
/* Under R->mu: ask the growth thread for R's first segment (state 2) or a
 * segment more; 1 if it will make it. */
HP_HIDDEN int hp_ring_grow_ask(struct hp_ring *R);
/* Under R->mu, no slot claimed, R's context ended: R released, to be made
 * again. */
HP_HIDDEN void hp_ring_unmake(struct hp_ring *R);
/* At exit: no growth begun from now on, the one in flight waited for. */
HP_HIDDEN void hp_ring_grow_stop(void);

#endif
