/* Which way a copy between unified addresses goes (CUDA 13.2's
 * cuMemcpyWithAttributesAsync and cudaMemcpyWithAttributesAsync name no
 * direction; nor does cuMemcpy): asked of the driver only for a copy large
 * enough to stage or touching a block of hostpin's, then planned as the
 * H2D or D2H it is (plan.c). */
#include "../backend/backend.h"
#include "../hooks.h"
#include "stage.h"

/* Host memory the driver does not know, or a block of hostpin's (which
 * the driver may know in part while it is being registered: the stager
 * splits such a copy at what is registered). */
static int host_side(const void *p, unsigned type)
{
	return type == 0 || hp_foreign_hides(p);
}

int hp_stage_unified(hp_copy_t *c, uintptr_t d, uintptr_t s, size_t n,
		     hp_cudaStream_t st, int ptsz, int how)
{
	/* A small copy is planned too when it touches a block of hostpin's
	 * (c->n): it may cross the end of one of the block's registrations
	 * or of the registered part of a block being registered, which the
	 * driver must not get whole (issue 39 item 6). */
	if (((n < hp_opt[HP_OPT_STAGE_MIN] || !hp_stage_on()) && c->n == 0 &&
	     !c->overflow) ||
	    !hp_stage_pieces_on() || !hp_cuda_stage_fns())
		return HP_COPY_PASSED;
	const void *dp = (const void *)d, *sp = (const void *)s;
	unsigned dt = hp_cuda_mem_type(dp), stp = hp_cuda_mem_type(sp);
	if (dt == HP_CU_MEMORYTYPE_DEVICE && host_side(sp, stp))
		return hp_stage_htod(c, d, sp, n, st, ptsz, how);
	if (stp == HP_CU_MEMORYTYPE_DEVICE && host_side(dp, dt))
		return hp_stage_dtoh(c, (void *)dp, s, n, st, ptsz, how);
	return HP_COPY_PASSED;
}
