/* Direct copies by pieces (the copy plan's HP_PLAN_PIECES and
 * HP_PLAN_PREFIX, plan.c): a copy inside a block a device backend
 * registered as several registrations (a block over HP_REG_PIECE_MAX,
 * cells of HOSTPIN_REGISTER_CHUNK), or inside the registered prefix of a
 * block being registered in the background (register.c), goes direct as
 * one DMA per registration it crosses, in order on the program's stream:
 * the driver sees each part inside one registration. */
#include "../backend/backend.h"
#include "../record.h"
#include "stage.h"

static int first_rec(hp_rec_t *r, const hp_snap_t *sn, void *arg)
{
	(void)r;
	*(uintptr_t *)arg = sn->base;
	return 1;
}

/* The end of the part of [x, e) the driver may get in one call, for the
 * block [base, base+len): the registration of the block holding x;
 * before the block, the block's start; past its end, none (memory
 * hostpin does not track, the rest in one call).  len 0: for whichever
 * blocks of hostpin's [x, e) crosses (a copy of several blocks,
 * plan.c), looked up: the registration of the one holding x, else the
 * next one's start (cases/mapfix-two-blocks-96568487: a copy from a
 * registered block into the MAP_FIXED mapping next to it, registered as
 * it ran). */
uintptr_t hp_piece_end(uintptr_t base, size_t len, uintptr_t x, uintptr_t e)
{
	if (len == 0) {
		hp_snap_t b;
		uintptr_t nb = UINTPTR_MAX;
		if (hp_registry_lookup(&hp_reg, x, &b))
			return hp_cells_piece_end(b.base, b.len, x);
		if (hp_registry_each_overlap(&hp_reg, x, e - x, first_rec,
					     &nb) && nb > x)
			return nb;
		return UINTPTR_MAX;
	}
	if (x >= base + len)
		return UINTPTR_MAX;
	return x < base ? base : hp_cells_piece_end(base, len, x);
}

/* A copy [h, h+n) overlapping the block [base, base+len) (len 0: the
 * blocks it crosses, piece_end): one DMA per
 * registration it crosses (piece_end), and one for each part of it
 * before or after the block (a copy running past its block's end), in
 * order on s, up to the first error (returned); *queued: whether any was
 * enqueued. */
static int per_piece(uintptr_t base, size_t len, uintptr_t d, char *h,
		     size_t n, hp_cudaStream_t s, int htod, int *queued)
{
	uintptr_t a = (uintptr_t)h;
	int r = 0;
	*queued = 0;
	/* several calls: what the driver would refuse whole is refused
	 * before any byte moves (it goes to the driver as it is) */
	if (hp_piece_end(base, len, a, a + n) - a < n &&
	    !hp_cuda_dev_fits(d, n)) {
		r = htod ? hp_cuda_htod_async(d, h, n, s)
			 : hp_cuda_dtoh_async(h, d, n, s);
		*queued = r == 0;
		return r;
	}
	for (size_t off = 0; off < n && r == 0;) {
		size_t l = hp_piece_end(base, len, a + off, a + n) - (a + off);
		if (l > n - off)
			l = n - off;
		r = htod ? hp_cuda_htod_async(d + off, h + off, l, s)
			 : hp_cuda_dtoh_async(h + off, d + off, l, s);
		*queued |= r == 0;
		off += l;
	}
	return r;
}

/* The rest of a staged copy that can no longer be staged (stage.c),
 * cut at the registrations and ends of the plan's block (P->len 0: of
 * every block of hostpin's it crosses, piece_end). */
int hp_pieces_cut(const struct hp_plan *P, uintptr_t d, char *h, size_t n)
{
	int queued;
	return per_piece(P->base, P->len, d, h, n, P->s, P->htod, &queued);
}

int hp_pieces_run(struct hp_plan *P, uintptr_t d, char *h, size_t n)
{
	/* the waits that end the DMAs (a synchronous form's; the prefix's,
	 * whatever the form; an error's fence: issue 39 item 3) are the
	 * plan's end's (plan.c: plan_wait), which reads P->queued */
	return per_piece(P->base, P->len, d, h, n, P->s, P->htod, &P->queued);
}
