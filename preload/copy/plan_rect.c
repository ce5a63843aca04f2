/* The plan of a 2D or 3D copy (hp_stage_2d, hp_stage_3d): its direction
 * and geometry checked once, its rectangle recorded in the plan, then
 * planned as any copy (plan.c: hp_copy_plan), executed (stage_rect.c:
 * staged, or by pieces with its rows cut at the registrations), ended
 * (hp_copy_plan_end).  Nothing after the plan checks the geometry again. */
#include <stdlib.h>

#include "../backend/backend.h"
#include "../record.h"
#include "stage.h"

/* A side of a CUDA_MEMCPY2D (or of a 3D copy's slice): host memory the
 * driver does not know (HOST, or UNIFIED pointing at such memory or at a
 * block of hostpin's, which the driver may know in part: its
 * registrations), or memory a DMA from the ring can reach (DEVICE, or
 * other UNIFIED memory the driver knows). */
static int side_unified_host(hp_CUmemorytype m, hp_CUdeviceptr dev)
{
	const void *p = (const void *)(uintptr_t)dev;
	return m == HP_CU_MEMORYTYPE_UNIFIED && dev &&
	       (!hp_cuda_host_known(p) || hp_foreign_hides(p));
}
static char *side_host(hp_CUmemorytype m, const void *host, hp_CUdeviceptr dev)
{
	if (m == HP_CU_MEMORYTYPE_HOST)
		return (char *)(uintptr_t)host;
	return side_unified_host(m, dev) ? (char *)(uintptr_t)dev : NULL;
}
static int side_device(hp_CUmemorytype m, hp_CUdeviceptr dev, hp_CUarray a)
{
	return m == HP_CU_MEMORYTYPE_DEVICE ||
	       (m == HP_CU_MEMORYTYPE_ARRAY && a) ||
	       (m == HP_CU_MEMORYTYPE_UNIFIED && dev && !side_unified_host(m, dev));
}

/* a*b+c, or SIZE_MAX if that overflows */
static size_t mul_add(size_t a, size_t b, size_t c)
{
	size_t r;
	if (__builtin_mul_overflow(a, b, &r) || __builtin_add_overflow(r, c, &r))
		return SIZE_MAX;
	return r;
}

/* A 3D peer copy's contexts (source, destination) are this thread's:
 * each NULL or the one current here.  Asked once the driver's functions
 * are resolved (a 3D peer copy may be the program's first: cases/
 * peer-first-copy-7017, peer3d-before-driver-learnt-7700096). */
static int peer_here(const uintptr_t *peer)
{
	uintptr_t cur = hp_cuda_ctx_current();
	return cur && (!peer[0] || peer[0] == cur) &&
	       (!peer[1] || peer[1] == cur);
}

/* Whether a CUDA array side's rows lie inside the array g (NULL: its
 * geometry not known): bytes [x, x+w) of H rows from row y, depth layers;
 * ah: the array's rows per layer, y counting the rows of the layers
 * before (a 3D copy's), or 0 (a 2D copy's: a 2D array's rows). */
static int array_fits(const struct hp_cuda_array *g, size_t ah, size_t x,
		      size_t y, size_t w, size_t H, size_t depth)
{
	if (g == NULL)
		return 0;
	size_t wb = mul_add(g->w, g->es, 0), gh = g->h ? g->h : 1,
	       gd = g->d ? g->d : 1;
	if (wb == SIZE_MAX || x > wb || w > wb - x)
		return 0;
	if (ah == 0)
		return g->d <= 1 && depth == 1 && y <= gh && H <= gh - y;
	size_t z = y / ah;
	y %= ah;
	return ah == gh && H <= ah - y && z <= gd && depth <= gd - z;
}

/* The plan of a 2D copy p, or of depth slices of it (a 3D copy: sh, dh the
 * source's and the destination's slice heights in rows, p's Y counting the
 * rows before the first slice), between pitched host memory and device
 * memory or a CUDA array (g: its geometry, NULL if not known; ah: its rows
 * per layer in a 3D copy, 0 in a 2D one): its direction and geometry
 * checked (what does not pass goes to
 * the driver as it is), its rectangle recorded (P->rect), then planned as
 * any copy (staged, passed through, or, where it must not go as it is and
 * cannot be staged, by pieces: its rows cut at the registrations).  peer:
 * a 3D peer copy's contexts (source, destination), or NULL: one is the 3D
 * copy it is only where both are this thread's (peer_here); another
 * context's copy goes to the driver as it is. */
static void plan_rect(struct hp_plan *P, hp_copy_t *c, const hp_CUDA_MEMCPY2D *p,
		      size_t depth, size_t sh, size_t dh,
		      const struct hp_cuda_array *g, size_t ah,
		      hp_cudaStream_t s, int how, const uintptr_t *peer)
{
	*P = (struct hp_plan){.kind = HP_PLAN_PASS, .how = how, .c = c, .s = s};
	size_t w = p->WidthInBytes, H = p->Height, n = mul_add(w, H, 0);
	n = mul_add(n, depth, 0);
	/* (under HOSTPIN_STAGE_MIN too: the plan decides, issue 39 item 6) */
	if (w == 0 || H == 0 || depth == 0 || n == SIZE_MAX || hp_in_child ||
	    !hp_stage_pieces_on() || !hp_cuda_stage_fns() || !hp_cuda_2d_fn() ||
	    (peer && !peer_here(peer)))
		return;
	char *sho = side_host(p->srcMemoryType, p->srcHost, p->srcDevice);
	char *dho = side_host(p->dstMemoryType, p->dstHost, p->dstDevice);
	int htod;
	if (sho && !dho &&
	    side_device(p->dstMemoryType, p->dstDevice, p->dstArray))
		htod = 1;
	else if (dho && !sho &&
		 side_device(p->srcMemoryType, p->srcDevice, p->srcArray))
		htod = 0;
	else
		return; /* host to host, device to device, array to array */
	int arr = (htod ? p->dstMemoryType : p->srcMemoryType) ==
		  HP_CU_MEMORYTYPE_ARRAY;
	if (arr && ah && !hp_cuda_3d_fn())
		return; /* a 3D array's layers need cuMemcpy3DAsync_v2 */
	size_t pitch = htod ? p->srcPitch : p->dstPitch;
	size_t x = htod ? p->srcXInBytes : p->dstXInBytes;
	size_t y = htod ? p->srcY : p->dstY;
	size_t hh = htod ? sh : dh, dvh = htod ? dh : sh;
	size_t dy = htod ? p->dstY : p->srcY;
	if (pitch < w)
		return; /* the driver's to refuse */
	if (depth > 1 && (hh < H || dvh < H))
		return; /* slices overlap: the driver's to refuse */
	/* the last host byte and the last device row within reach */
	size_t hl = mul_add(depth - 1, hh, y + H - 1);
	if (y > SIZE_MAX - H || hl == SIZE_MAX ||
	    mul_add(hl, pitch, x + w) == SIZE_MAX ||
	    mul_add(depth - 1, dvh, dy + H) == SIZE_MAX)
		return;
	/* staged in chunks of rows: a copy the driver would refuse whole
	 * (its device rows past the end of their allocation) goes to it as
	 * it is, nothing written (issue 32 item 12) */
	hp_CUdeviceptr dv = htod ? p->dstDevice : p->srcDevice;
	size_t dp = htod ? p->dstPitch : p->srcPitch;
	size_t dx = htod ? p->dstXInBytes : p->srcXInBytes;
	size_t dl = mul_add(depth - 1, dvh, dy + H - 1); /* its last row */
	size_t d0 = mul_add(dy, dp, dx), d1 = mul_add(dl, dp, dx + w);
	if (arr ? !array_fits(g, ah, dx, dy, w, H, depth)
		: d0 == SIZE_MAX || d1 == SIZE_MAX || d1 < d0 ||
		      !hp_cuda_dev_fits(dv + d0, d1 - d0))
		return;
	char *h = (htod ? sho : dho) + y * pitch + x; /* the first host byte */
	/* the host side's extent: its first to last byte */
	hp_copy_plan(P, c, h, (hl - y) * pitch + w, 0, s, htod, w, how);
	P->rect = (struct hp_plan_rect){.q = *p, .h = h, .pitch = pitch,
					.hs = hh * pitch, .dh = dvh, .w = w,
					.H = H, .depth = depth, .bytes = n,
					.ah = arr ? ah : 0};
}

/* A 2D or 3D copy: planned, executed (stage_rect.c), ended. */
static int copy_rect(hp_copy_t *c, const hp_CUDA_MEMCPY2D *p, size_t depth,
		     size_t sh, size_t dh, const struct hp_cuda_array *g,
		     size_t ah, hp_cudaStream_t s, int ptsz, int how,
		     const uintptr_t *peer)
{
	struct hp_plan P;
	plan_rect(&P, c, p, depth, sh, dh, g, ah, hp_program_stream(s, ptsz),
		  how, peer);
	int r = P.kind != HP_PLAN_PASS ? hp_stage_rect(&P) : HP_COPY_PASSED;
	return hp_copy_plan_end(&P, P.rect.bytes, r);
}

/* The geometry of a copy's CUDA array side (sm, dm: the sides' memory
 * types, sa, da: their arrays): *g NULL where neither side is an array,
 * else ga filled and *g = ga.  -1 where a side is an array but the copy
 * cannot be planned from it (both sides arrays, or a geometry the driver
 * does not say: hp_cuda_array_geom logs it once): it goes as it is. */
static int array_side(hp_CUmemorytype sm, hp_CUarray sa, hp_CUmemorytype dm,
		      hp_CUarray da, struct hp_cuda_array *ga,
		      const struct hp_cuda_array **g)
{
	int s = sm == HP_CU_MEMORYTYPE_ARRAY, d = dm == HP_CU_MEMORYTYPE_ARRAY;
	*g = NULL;
	if (!s && !d)
		return 0;
	if (s == d || !hp_cuda_stage_fns() ||
	    hp_cuda_array_geom(s ? sa : da, ga) != 0)
		return -1;
	*g = ga;
	return 0;
}

int hp_stage_2d(hp_copy_t *c, const hp_CUDA_MEMCPY2D *p, hp_cudaStream_t s,
		int ptsz, int how)
{
	if (p == NULL)
		return HP_COPY_PASSED;
	struct hp_cuda_array ga;
	const struct hp_cuda_array *g;
	if (array_side(p->srcMemoryType, p->srcArray, p->dstMemoryType,
		       p->dstArray, &ga, &g) != 0)
		return HP_COPY_PASSED;
	return copy_rect(c, p, 1, 0, 0, g, 0, s, ptsz, how, NULL);
}

static int copy_3d(hp_copy_t *c, const hp_CUDA_MEMCPY3D *p, hp_cudaStream_t s,
		   int ptsz, int how, const uintptr_t *peer)
{
	if (p == NULL || p->srcLOD || p->dstLOD || p->reserved0 ||
	    p->reserved1 || p->Depth == 0)
		return HP_COPY_PASSED;
	/* a CUDA array side: its layers are the array's (its rows per layer
	 * the array's height; the descriptor's srcHeight or dstHeight is not
	 * read), each moved by a 3D copy of one layer (stage_rect.c) */
	size_t sh = p->srcHeight, dh = p->dstHeight, ah = 0;
	struct hp_cuda_array ga;
	const struct hp_cuda_array *g;
	if (array_side(p->srcMemoryType, p->srcArray, p->dstMemoryType,
		       p->dstArray, &ga, &g) != 0)
		return HP_COPY_PASSED;
	if (g) {
		ah = g->h ? g->h : 1;
		if (p->srcMemoryType == HP_CU_MEMORYTYPE_ARRAY)
			sh = ah;
		else
			dh = ah;
	}
	/* a slice height of 0 (allowed with a depth of 1): no Z with it */
	if ((p->srcZ && sh == 0) || (p->dstZ && dh == 0))
		return HP_COPY_PASSED;
	size_t sy = mul_add(p->srcZ, sh, p->srcY);
	size_t dy = mul_add(p->dstZ, dh, p->dstY);
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
	return copy_rect(c, &q, p->Depth, sh, dh, g, ah, s, ptsz, how, peer);
}

int hp_stage_3d(hp_copy_t *c, const hp_CUDA_MEMCPY3D *p, hp_cudaStream_t s,
		int ptsz, int how)
{
	return copy_3d(c, p, s, ptsz, how, NULL);
}

int hp_stage_3d_peer(hp_copy_t *c, const hp_CUDA_MEMCPY3D_PEER *p,
		     hp_cudaStream_t s, int ptsz, int how)
{
	/* its host side in a block of hostpin's: the runtime hands
	 * cudaMemcpy3DPeer's pointers to the driver as device memory,
	 * whatever they are (hooks/cudrv.h: host_side) */
	if (p == NULL || (c->n == 0 && !c->overflow))
		return HP_COPY_PASSED;
	hp_CUDA_MEMCPY3D q = {
	    p->srcXInBytes, p->srcY, p->srcZ, p->srcLOD, p->srcMemoryType,
	    p->srcHost, p->srcDevice, p->srcArray, NULL, p->srcPitch,
	    p->srcHeight, p->dstXInBytes, p->dstY, p->dstZ, p->dstLOD,
	    p->dstMemoryType, p->dstHost, p->dstDevice, p->dstArray, NULL,
	    p->dstPitch, p->dstHeight, p->WidthInBytes, p->Height, p->Depth};
	const uintptr_t peer[2] = {(uintptr_t)p->srcContext,
				   (uintptr_t)p->dstContext};
	return copy_3d(c, &q, s, ptsz, how, peer);
}
