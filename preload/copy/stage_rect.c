/* Staged 2D and 3D copies (stage.h: hp_stage_2d, hp_stage_3d): pitched
 * host memory to or from device memory, staged whole rows at a time
 * through the rings (ring.c).  What makes a rectangle stageable (its
 * sides, its geometry) is checked here, then the copy plan decides as for
 * any copy (plan.c: staged or passed through, never by pieces), and a
 * staged one runs stage.c's chunk loops on its chunks of rows. */
#include <string.h>

#include "../backend/backend.h"
#include "../hooks.h"
#include "../record.h"
#include "stage.h"

/* ---- 2D and 3D copies ----
 * A side of a CUDA_MEMCPY2D (or of a 3D copy's slice): host memory the
 * driver does not know (HOST, or UNIFIED pointing at such memory or at a
 * block of hostpin's, which the driver may know in part: its
 * registrations, copy_dir.c), or memory a DMA from the ring can reach
 * (DEVICE, or other UNIFIED memory the driver knows). */
static int unified_host(hp_CUmemorytype m, hp_CUdeviceptr dev)
{
	const void *p = (const void *)(uintptr_t)dev;
	return m == HP_CU_MEMORYTYPE_UNIFIED && dev &&
	       (!hp_cuda_host_known(p) || hp_foreign_hides(p));
}
static char *side_host(hp_CUmemorytype m, const void *host, hp_CUdeviceptr dev)
{
	if (m == HP_CU_MEMORYTYPE_HOST)
		return (char *)(uintptr_t)host;
	return unified_host(m, dev) ? (char *)(uintptr_t)dev : NULL;
}
static int side_device(hp_CUmemorytype m, hp_CUdeviceptr dev)
{
	return m == HP_CU_MEMORYTYPE_DEVICE ||
	       (m == HP_CU_MEMORYTYPE_UNIFIED && dev && !unified_host(m, dev));
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
	struct hp_ring *R;
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
	return hp_cuda_2d_async(&q, j->s);
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
	return hp_cuda_2d_async(&q, j->s);
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
	return hp_cuda_2d_async(&q, j->s);
}

/* The end of the registration of the block [base, base+len) that holds
 * host byte x (the block's start before it; none after it or with no
 * block: len 0). */
static uintptr_t reg_end(uintptr_t base, size_t len, uintptr_t x)
{
	if (len == 0 || x >= base + len)
		return UINTPTR_MAX;
	return x < base ? base : hp_cells_piece_end(base, len, x);
}

/* Chunk i direct between the program's memory and the device, as the
 * program's own 2D calls (one per host slice it spans), cut at the
 * registrations of the block [base, base+len) (len 0: none): each call's
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
		uintptr_t e = reg_end(base, len, h);
		if (e < h + j->w) { /* this row across: cut */
			for (size_t x = 0, l; x < j->w && r == 0; x += l) {
				e = reg_end(base, len, h + x);
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
static int stage_rect(hp_copy_t *c, const hp_CUDA_MEMCPY2D *p,
		      size_t depth, size_t sh, size_t dh, hp_cudaStream_t s,
		      int ptsz, int how)
{
	size_t w = p->WidthInBytes, H = p->Height, n = mul_add(w, H, 0);
	n = mul_add(n, depth, 0);
	/* (under HOSTPIN_STAGE_MIN too: the plan decides, issue 39 item 6) */
	if (w == 0 || H == 0 || depth == 0 || n == SIZE_MAX || hp_in_child ||
	    !hp_stage_pieces_on() || !hp_cuda_stage_fns() || !hp_cuda_2d_fn())
		return HP_COPY_PASSED;
	char *sho = side_host(p->srcMemoryType, p->srcHost, p->srcDevice);
	char *dho = side_host(p->dstMemoryType, p->dstHost, p->dstDevice);
	int htod;
	if (sho && !dho && side_device(p->dstMemoryType, p->dstDevice))
		htod = 1;
	else if (dho && !sho && side_device(p->srcMemoryType, p->srcDevice))
		htod = 0;
	else
		return HP_COPY_PASSED; /* an array, host to host, device to device */
	size_t pitch = htod ? p->srcPitch : p->dstPitch;
	size_t x = htod ? p->srcXInBytes : p->dstXInBytes;
	size_t y = htod ? p->srcY : p->dstY;
	size_t hh = htod ? sh : dh, dvh = htod ? dh : sh;
	size_t dy = htod ? p->dstY : p->srcY;
	if (pitch < w)
		return HP_COPY_PASSED; /* the driver's to refuse */
	if (depth > 1 && (hh < H || dvh < H))
		return HP_COPY_PASSED; /* slices overlap: the driver's to refuse */
	/* the last host byte and the last device row within reach */
	size_t hl = mul_add(depth - 1, hh, y + H - 1);
	if (y > SIZE_MAX - H || hl == SIZE_MAX ||
	    mul_add(hl, pitch, x + w) == SIZE_MAX ||
	    mul_add(depth - 1, dvh, dy + H) == SIZE_MAX)
		return HP_COPY_PASSED;
	/* staged in chunks of rows: a copy the driver would refuse whole
	 * (its device rows past the end of their allocation) goes to it as
	 * it is, nothing written (issue 32 item 12) */
	hp_CUdeviceptr dv = htod ? p->dstDevice : p->srcDevice;
	size_t dp = htod ? p->dstPitch : p->srcPitch;
	size_t dx = htod ? p->dstXInBytes : p->srcXInBytes;
	size_t dl = mul_add(depth - 1, dvh, dy + H - 1); /* its last row */
	size_t d0 = mul_add(dy, dp, dx), d1 = mul_add(dl, dp, dx + w);
	if (d0 == SIZE_MAX || d1 == SIZE_MAX || d1 < d0 ||
	    !hp_cuda_dev_fits(dv + d0, d1 - d0))
		return HP_COPY_PASSED;
	char *h = (htod ? sho : dho) + y * pitch + x; /* the first host byte */
	struct hp_plan P; /* the host side's extent: its first to last byte */
	hp_copy_plan(&P, c, h, (hl - y) * pitch + w, 0,
		     hp_program_stream(s, ptsz), htod, w, how);
	if (P.kind == HP_PLAN_PASS)
		return HP_COPY_PASSED;
	struct hp_ring *R = P.R;
	s = P.s;
	struct rect j = {.R = R, .p = p, .h = h, .pitch = pitch,
			 .hs = hh * pitch, .dh = dvh, .w = w, .H = H,
			 .depth = depth, .per = R ? R->slot / w : H,
			 .across = depth == 1 || dvh == H, .s = s};
	j.cps = (H + j.per - 1) / j.per;
	size_t m = j.across ? (H * depth + j.per - 1) / j.per : j.cps * depth;
	if (P.kind != HP_PLAN_STAGED) { /* unstaged, cut at registrations */
		int r = 0;
		for (size_t i = 0; i < m && r == 0; i++)
			r = rect_direct(&j, i, htod, P.base, P.len);
		/* a synchronous form, an error, a block being registered:
		 * waited for (as hp_pieces_run) */
		if (r != 0 || (how & HP_STAGE_SYNC) ||
		    P.kind == HP_PLAN_PREFIX) {
			int w = hp_stage_wait_stream(s);
			if (r == 0)
				r = w;
		}
		return hp_copy_plan_end(&P, n, r);
	}
	/* as hp_stage_htod / hp_stage_dtoh, in chunks of rows */
	size_t done = 0;
	int r = htod ? hp_stage_run_htod(&P, m, rect_in, rect_htod, &j, &done)
		     : hp_stage_run_dtoh(&P, m, rect_dtoh, rect_out, &j, &done);
	/* nothing done: passed (unless across a registered block's
	 * registrations: cut at them below) */
	if (r == HP_STAGE_REST && done == 0 && P.len == 0)
		return hp_copy_plan_end(&P, n, HP_COPY_PASSED);
	if (r == HP_STAGE_REST) { /* the rest as the program's own calls */
		r = 0;
		for (size_t i = done; i < m && r == 0; i++)
			r = rect_direct(&j, i, htod, P.base, P.len);
	}
	/* an error: what was queued is waited for first (as hp_stage_lin) */
	if ((r == 0 && (how & HP_STAGE_SYNC) && htod) || r != 0) {
		int w = hp_stage_wait_stream(s);
		if (r == 0)
			r = w;
	}
	return hp_copy_plan_end(&P, n, r);
}

int hp_stage_2d(hp_copy_t *c, const hp_CUDA_MEMCPY2D *p, hp_cudaStream_t s,
		int ptsz, int how)
{
	return p ? stage_rect(c, p, 1, 0, 0, s, ptsz, how) : HP_COPY_PASSED;
}

int hp_stage_3d(hp_copy_t *c, const hp_CUDA_MEMCPY3D *p, hp_cudaStream_t s,
		int ptsz, int how)
{
	if (p == NULL || p->srcLOD || p->dstLOD || p->reserved0 ||
	    p->reserved1 || p->Depth == 0)
		return HP_COPY_PASSED;
	/* a slice height of 0 (allowed with a depth of 1): no Z with it */
	if ((p->srcZ && p->srcHeight == 0) || (p->dstZ && p->dstHeight == 0))
		return HP_COPY_PASSED;
	size_t sy = mul_add(p->srcZ, p->srcHeight, p->srcY);
	size_t dy = mul_add(p->dstZ, p->dstHeight, p->dstY);
	if (sy == SIZE_MAX || dy == SIZE_MAX)
		return HP_COPY_PASSED;
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
			  how);
}
