/* The 1D array copies (cuMemcpyHtoA, cuMemcpyAtoH and their async forms):
 * planned as a 1D copy no ring carries (plan.c, HP_STAGE_DIRECT), so that
 * one across the end of a registration, or of the registered part of a
 * block being registered, never reaches the driver whole (a range only
 * partly registered): it goes as one call of the program's own kind per
 * part, cut where pieces.c cuts a 1D copy, the array's offset advanced by
 * the bytes before.  The driver copies a 1D array's bytes in order, so the
 * parts are the copy, exactly. */
#include "../backend/backend.h"
#include "../record.h"
#include "stage.h"

/* Whether [off, off+n) lies inside a 1D array a (its geometry known): a
 * copy the driver would refuse whole goes to it as it is, nothing moved
 * (never its first parts accepted, then the rest refused). */
static int fits_1d(hp_CUarray a, size_t off, size_t n)
{
	struct hp_cuda_array g;
	size_t bytes;
	if (a == NULL || hp_cuda_array_geom(a, &g) != 0 || g.h || g.d ||
	    __builtin_mul_overflow(g.w, g.es, &bytes))
		return 0;
	return off <= bytes && n <= bytes - off;
}

int hp_stage_array_1d(hp_copy_t *c, hp_CUarray a, size_t off, char *h,
		      size_t n, hp_cudaStream_t s, int ptsz, int htod, int how)
{
	/* only a copy through a block of hostpin's may need cutting */
	if ((c->n == 0 && !c->overflow) || h == NULL || n == 0 ||
	    hp_in_child || !hp_stage_pieces_on() || !hp_cuda_stage_fns() ||
	    !hp_cuda_array_1d_fns() || !fits_1d(a, off, n))
		return HP_COPY_PASSED;
	struct hp_plan P;
	hp_copy_plan(&P, c, h, n, 0, hp_program_stream(s, ptsz), htod, 0,
		     how | HP_STAGE_DIRECT);
	int r = HP_COPY_PASSED;
	if (P.kind == HP_PLAN_PIECES || P.kind == HP_PLAN_PREFIX) {
		uintptr_t x = (uintptr_t)h;
		r = 0;
		for (size_t o = 0; o < n && r == 0;) {
			size_t l = hp_piece_end(P.base, P.len, x + o, x + n) -
				   (x + o);
			if (l > n - o)
				l = n - o;
			r = hp_cuda_array_1d_async(htod, a, off + o, h + o, l,
						   P.s);
			P.queued |= r == 0;
			o += l;
		}
	}
	/* the waits (a synchronous form's, the prefix's, an error's fence)
	 * and the end: the plan's (plan.c) */
	return hp_copy_plan_end(&P, n, r);
}
