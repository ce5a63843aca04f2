/* Staged 2D and 3D copies (the copy plan's HP_PLAN_STAGED for a
 * rectangle: hp_stage_2d, hp_stage_3d in plan.c, which decided its
 * direction and geometry, P->rect): pitched host memory to or from device
 * memory, staged whole rows at a time through the rings (ring.c), running
 * stage.c's chunk loops on its chunks of rows. */
#include <string.h>

#include "../backend/backend.h"
#include "../hooks.h"
#include "../record.h"
#include "stage.h"

/* A rectangle to stage: depth slices of H rows of w bytes, its rows
 * numbered slice after slice.  p: a 2D descriptor whose device side is the
 * program's, at slice 0 (its Y counts the rows before the first slice);
 * h, pitch: the first host byte, the host rows' pitch; hs: bytes from one
 * host slice to the next; dh: rows from one device slice to the next.
 * Its chunks: as many rows as fit a slot, one 2D DMA each; across slices
 * when the device side's slices follow each other (dh == H: its rows are
 * then evenly pitched), else per slice (cps chunks a slice). */
struct rect {
	struct hp_ring *R;
	const hp_CUDA_MEMCPY2D *p;
	char *h;
	size_t pitch, hs, dh, w, H, depth, per, cps, ah;
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

/* q, a 2D copy whose device side is the program's, to the driver: as it
 * is, or, where that side is a layer of a 3D CUDA array (j->ah: its rows
 * per layer, q's Y then layer * ah + row), as the 3D copy of that one
 * layer (cuMemcpy2DAsync_v2 reaches a 2D array's rows only). */
static int rect_dma(const struct rect *j, const hp_CUDA_MEMCPY2D *q)
{
	if (j->ah == 0)
		return hp_cuda_2d_async(q, j->s);
	int sa = q->srcMemoryType == HP_CU_MEMORYTYPE_ARRAY;
	size_t y = sa ? q->srcY : q->dstY;
	hp_CUDA_MEMCPY3D t = {
	    .srcXInBytes = q->srcXInBytes, .srcY = q->srcY,
	    .srcMemoryType = q->srcMemoryType, .srcHost = q->srcHost,
	    .srcDevice = q->srcDevice, .srcArray = q->srcArray,
	    .srcPitch = q->srcPitch, .srcHeight = q->Height,
	    .dstXInBytes = q->dstXInBytes, .dstY = q->dstY,
	    .dstMemoryType = q->dstMemoryType, .dstHost = q->dstHost,
	    .dstDevice = q->dstDevice, .dstArray = q->dstArray,
	    .dstPitch = q->dstPitch, .dstHeight = q->Height,
	    .WidthInBytes = q->WidthInBytes, .Height = q->Height, .Depth = 1};
	if (sa)
		t.srcZ = y / j->ah, t.srcY = y % j->ah, t.srcHeight = 0;
	else
		t.dstZ = y / j->ah, t.dstY = y % j->ah, t.dstHeight = 0;
	return hp_cuda_3d_async(&t, j->s);
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
			hp_pcopy_rows(sl, j->w, h, j->pitch, j->w, t);
		else
			hp_pcopy_rows(h, j->pitch, sl, j->w, j->w, t);
		sl += t * j->w, g += t, rows -= t;
	}
}

static void rect_in(size_t i, char *sl, void *arg)
{
	const struct rect *j = arg;
	size_t g, rows = rect_chunk(j, i, &g);
	rect_host(j, g, rows, sl, 1);
}

static int rect_htod(size_t i, char *sl, void *arg)
{
	const struct rect *j = arg;
	size_t g, rows = rect_chunk(j, i, &g);
	hp_CUDA_MEMCPY2D q = *j->p; /* the device side as the program's */
	q.srcXInBytes = 0, q.srcY = 0;
	q.srcMemoryType = HP_CU_MEMORYTYPE_HOST;
	q.srcHost = sl, q.srcDevice = 0, q.srcArray = NULL;
	q.srcPitch = j->w;
	q.dstY = j->p->dstY + rect_dev_row(j, g), q.Height = rows;
	return rect_dma(j, &q);
}

static int rect_dtoh(size_t i, char *sl, void *arg)
{
	const struct rect *j = arg;
	size_t g, rows = rect_chunk(j, i, &g);
	hp_CUDA_MEMCPY2D q = *j->p; /* the device side as the program's */
	q.dstXInBytes = 0, q.dstY = 0;
	q.dstMemoryType = HP_CU_MEMORYTYPE_HOST;
	q.dstHost = sl;
	q.dstDevice = 0, q.dstArray = NULL, q.dstPitch = j->w;
	q.srcY = j->p->srcY + rect_dev_row(j, g);
	q.Height = rows;
	return rect_dma(j, &q);
}

/* t rows from row g (one host slice), bytes [x, x+w) of each, direct
 * between the program's memory and the device, as one of the program's
 * own 2D calls. */
static int rect_rows(const struct rect *j, size_t g, size_t t, size_t x,
		     size_t w, int htod)
{
	char *h = j->h + g / j->H * j->hs + g % j->H * j->pitch + x;
	hp_CUDA_MEMCPY2D q = *j->p; /* the device side as the program's */
	if (htod) {
		q.srcXInBytes = 0, q.srcY = 0, q.srcPitch = j->pitch;
		q.srcMemoryType = HP_CU_MEMORYTYPE_HOST;
		q.srcHost = h, q.srcDevice = 0, q.srcArray = NULL;
		q.dstY = j->p->dstY + rect_dev_row(j, g);
		q.dstXInBytes += x;
	} else {
		q.dstXInBytes = 0, q.dstY = 0, q.dstPitch = j->pitch;
		q.dstMemoryType = HP_CU_MEMORYTYPE_HOST;
		q.dstHost = h, q.dstDevice = 0, q.dstArray = NULL;
		q.srcY = j->p->srcY + rect_dev_row(j, g);
		q.srcXInBytes += x;
	}
	q.WidthInBytes = w, q.Height = t;
	return rect_dma(j, &q);
}

/* The end of the registration of the block [base, base+len) that holds
 * host byte x (the block's start before it; none after it); len 0: of
 * whichever block of hostpin's holds x, else the next one's start in
 * [x, e) (a copy of several blocks, pieces.c). */
static uintptr_t reg_end(uintptr_t base, size_t len, uintptr_t x,
			 uintptr_t e)
{
	return hp_piece_end(base, len, x, e);
}

/* Chunk i direct between the program's memory and the device, as the
 * program's own 2D calls (one per host slice it spans), cut at the
 * registrations of the block [base, base+len) (len 0: of every block of
 * hostpin's it crosses, looked up): each call's
 * host side inside one registration or outside them all, a row across a
 * registration's end in one call per part (the driver never gets a range
 * only partly registered, issue 39 item 6).  The rest of a copy that can
 * no longer be staged (HP_STAGE_REST), or a registered block's copy that
 * cannot be staged (HP_PLAN_PIECES). */
static int rect_direct(const struct rect *j, size_t i, int htod,
		       uintptr_t base, size_t len)
{
	size_t g, rows = rect_chunk(j, i, &g);
	int r = 0;
	while (rows && r == 0) {
		size_t y = g % j->H, t = j->H - y < rows ? j->H - y : rows;
		uintptr_t h = (uintptr_t)(j->h + g / j->H * j->hs +
					  y * j->pitch);
		uintptr_t e = reg_end(base, len, h,
				      h + (t - 1) * j->pitch + j->w);
		if (e < h + j->w) { /* this row across: cut */
			for (size_t x = 0, l; x < j->w && r == 0; x += l) {
				e = reg_end(base, len, h + x, h + j->w);
				l = e - (h + x) < j->w - x ? e - (h + x)
							   : j->w - x;
				r = rect_rows(j, g, 1, x, l, htod);
			}
			t = 1;
		} else { /* the rows up to the first across */
			size_t k = 1;
			while (k < t && h + k * j->pitch + j->w <= e)
				k++;
			t = k;
			r = rect_rows(j, g, t, 0, j->w, htod);
		}
		g += t, rows -= t;
	}
	return r;
}

static void rect_out(size_t i, char *sl, void *arg)
{
	const struct rect *j = arg;
	size_t g, rows = rect_chunk(j, i, &g);
	rect_host(j, g, rows, sl, 0);
}

int hp_stage_rect(struct hp_plan *P)
{
	const struct hp_plan_rect *g = &P->rect;
	int htod = P->htod;
	struct rect j = {.R = P->R, .p = &g->q, .h = g->h, .pitch = g->pitch,
			 .hs = g->hs, .dh = g->dh, .w = g->w, .H = g->H,
			 .depth = g->depth,
			 .per = P->R ? P->R->slot / g->w : g->H, .ah = g->ah,
			 .across = g->depth == 1 || (g->dh == g->H && !g->ah),
			 .s = P->s};
	j.cps = (j.H + j.per - 1) / j.per;
	size_t m = j.across ? (j.H * j.depth + j.per - 1) / j.per
			    : j.cps * j.depth;
	if (P->kind != HP_PLAN_STAGED) { /* unstaged, cut at registrations */
		int r = 0;
		for (size_t i = 0; i < m && r == 0; i++)
			r = rect_direct(&j, i, htod, P->base, P->len);
		/* a synchronous form, an error, a block being registered:
		 * the plan's end waits (as after hp_pieces_run) */
		P->queued = 1;
		return r;
	}
	/* as hp_stage_lin, in chunks of rows */
	size_t done = 0;
	int r = htod ? hp_stage_run_htod(P, m, rect_in, rect_htod, &j, &done)
		     : hp_stage_run_dtoh(P, m, rect_dtoh, rect_out, &j, &done);
	/* nothing done: passed (unless across a registered block's
	 * registrations, or one the driver must not get as it is,
	 * hp_plan_rest: cut at them below) */
	if (r == HP_STAGE_REST && done == 0 && P->len == 0 &&
	    !hp_plan_rest(P))
		return HP_COPY_PASSED;
	P->passed = r == HP_STAGE_REST;
	if (r == HP_STAGE_REST) { /* the rest as the program's own calls */
		hp_plan_rest(P);
		P->cut = done == 0;
		r = 0;
		for (size_t i = done; i < m && r == 0; i++)
			r = rect_direct(&j, i, htod, P->base, P->len);
	}
	/* an error's fence, a synchronous form's wait: the plan's end's */
	return r;
}
