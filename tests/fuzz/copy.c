/* engine_fuzz: copies between a host buffer and a device buffer.
 *   c h2d|d2h FORM STREAM bH HOFF dD DOFF W [H HPITCH DPITCH]
 * STREAM: L (legacy default), P (CU_STREAM_PER_THREAD) or sN (made by
 * ctl.c).  FORM names the entry point (table below).  Prints the return
 * code; under "mode strict" (pageable semantics: an H2D consumed its
 * source at return, a D2H is complete at return) a D2H's destination is
 * summed at return and an H2D's source overwritten at return.  After a
 * "fail" op the copy is fallible: its return code is not compared, a
 * destination that changes after an error return is "LATEWRITE" (the
 * thread's streams synchronised before the copy), and the destination is
 * written afresh.
 *   bogus K bH dD: an impossible copy (K picks which); its return code. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fz.h"

typedef int CUresult;
typedef unsigned long long dptr;
typedef void *CUstream;
typedef struct { size_t srcXInBytes, srcY; int srcMemoryType; const void *srcHost; dptr srcDevice; void *srcArray; size_t srcPitch; size_t dstXInBytes, dstY; int dstMemoryType; void *dstHost; dptr dstDevice; void *dstArray; size_t dstPitch; size_t WidthInBytes, Height; } M2D;
typedef struct { size_t srcXInBytes, srcY, srcZ, srcLOD; int srcMemoryType; const void *srcHost; dptr srcDevice; void *srcArray, *reserved0; size_t srcPitch, srcHeight; size_t dstXInBytes, dstY, dstZ, dstLOD; int dstMemoryType; void *dstHost; dptr dstDevice; void *dstArray, *reserved1; size_t dstPitch, dstHeight; size_t WidthInBytes, Height, Depth; } M3D;
typedef struct { int type; union { struct { dptr ptr; size_t rowLength, layerHeight; int loc[2]; } ptr; struct { void *array; size_t x, y, z; } array; } op; } OPND;
typedef struct { OPND src, dst; size_t w, h, d; int order; unsigned flags; } BOP;
typedef struct { int srcAccessOrder; int srcLocHint[2]; int dstLocHint[2]; unsigned flags; } ATTRS;

#define D2(n, args) CUresult n args; CUresult n##_ptds args;
#define A2(n, args) CUresult n args; CUresult n##_ptsz args;
D2(cuMemcpyHtoD_v2, (dptr, const void *, size_t))
D2(cuMemcpyDtoH_v2, (void *, dptr, size_t))
D2(cuMemcpy, (dptr, dptr, size_t))
D2(cuMemcpy2D_v2, (const M2D *))
D2(cuMemcpy2DUnaligned_v2, (const M2D *))
D2(cuMemcpy3D_v2, (const M3D *))
D2(cuMemcpy3DPeer, (const M3D *))
A2(cuMemcpyHtoDAsync_v2, (dptr, const void *, size_t, CUstream))
A2(cuMemcpyDtoHAsync_v2, (void *, dptr, size_t, CUstream))
A2(cuMemcpyAsync, (dptr, dptr, size_t, CUstream))
A2(cuMemcpy2DAsync_v2, (const M2D *, CUstream))
A2(cuMemcpy3DAsync_v2, (const M3D *, CUstream))
A2(cuMemcpy3DPeerAsync, (const M3D *, CUstream))
A2(cuMemcpyWithAttributesAsync, (dptr, dptr, size_t, ATTRS *, CUstream))
A2(cuMemcpy3DWithAttributesAsync, (BOP *, unsigned long long, CUstream))
A2(cuMemcpyBatchAsync_v2, (dptr *, dptr *, size_t *, size_t, ATTRS *, size_t *, size_t, CUstream))
A2(cuMemcpy3DBatchAsync_v2, (size_t, BOP *, unsigned long long, CUstream))
CUresult cuStreamSynchronize(CUstream);
CUstream fz_stream(const char *name);

#define U(p) ((dptr)(uintptr_t)(p))

static CUresult copy(const char *form, int h2d, CUstream s, char *h, char *d,
		     size_t w, size_t hh, size_t hp, size_t dp)
{
	size_t n = w;
	dptr dst = h2d ? U(d) : U(h), src = h2d ? U(h) : U(d);
#define F(name, call) if (!strcmp(form, name)) return call;
	F("sync", h2d ? cuMemcpyHtoD_v2(U(d), h, n) : cuMemcpyDtoH_v2(h, U(d), n))
	F("syncpt", h2d ? cuMemcpyHtoD_v2_ptds(U(d), h, n) : cuMemcpyDtoH_v2_ptds(h, U(d), n))
	F("async", h2d ? cuMemcpyHtoDAsync_v2(U(d), h, n, s) : cuMemcpyDtoHAsync_v2(h, U(d), n, s))
	F("asyncpt", h2d ? cuMemcpyHtoDAsync_v2_ptsz(U(d), h, n, s) : cuMemcpyDtoHAsync_v2_ptsz(h, U(d), n, s))
	F("uni", cuMemcpy(dst, src, n))
	F("unipt", cuMemcpy_ptds(dst, src, n))
	F("uniasync", cuMemcpyAsync(dst, src, n, s))
	F("uniasyncpt", cuMemcpyAsync_ptsz(dst, src, n, s))
	ATTRS at = {1, {0, 0}, {0, 0}, 0};
	F("attr", cuMemcpyWithAttributesAsync(dst, src, n, &at, s))
	F("attrpt", cuMemcpyWithAttributesAsync_ptsz(dst, src, n, &at, s))
	size_t half = n / 2 & ~(size_t)7;
	dptr bd[2] = {dst, dst + half}, bs[2] = {src, src + half};
	size_t bn[2] = {half, n - half}, ai = 0, fail = 0;
	(void)fail;
	F("batch", cuMemcpyBatchAsync_v2(bd, bs, bn, 2, &at, &ai, 1, s))
	F("batchpt", cuMemcpyBatchAsync_v2_ptsz(bd, bs, bn, 2, &at, &ai, 1, s))
	BOP op = {{1, {.ptr = {src, 0, 0, {0, 0}}}}, {1, {.ptr = {dst, 0, 0, {0, 0}}}}, n, 1, 1, 0, 0};
	F("attr3d", cuMemcpy3DWithAttributesAsync(&op, 0, s))
	F("attr3dpt", cuMemcpy3DWithAttributesAsync_ptsz(&op, 0, s))
	F("batch3d", cuMemcpy3DBatchAsync_v2(1, &op, 0, s))
	F("batch3dpt", cuMemcpy3DBatchAsync_v2_ptsz(1, &op, 0, s))
	/* rectangles: host side type 1 (or 4: unified, forms ending in u) */
	M2D m = {0};
	int uni = form[strlen(form) - 1] == 'u';
	m.WidthInBytes = w, m.Height = hh;
	if (h2d) {
		m.srcMemoryType = uni ? 4 : 1, m.srcHost = h, m.srcDevice = uni ? U(h) : 0, m.srcPitch = hp;
		m.dstMemoryType = 2, m.dstDevice = U(d), m.dstPitch = dp;
	} else {
		m.srcMemoryType = 2, m.srcDevice = U(d), m.srcPitch = dp;
		m.dstMemoryType = uni ? 4 : 1, m.dstHost = h, m.dstDevice = uni ? U(h) : 0, m.dstPitch = hp;
	}
	M3D q = {0, 0, 0, 0, m.srcMemoryType, m.srcHost, m.srcDevice, NULL, NULL, m.srcPitch, hh,
		 0, 0, 0, 0, m.dstMemoryType, m.dstHost, m.dstDevice, NULL, NULL, m.dstPitch, hh,
		 w, hh, 1};
	if (!strncmp(form, "m2d", 3)) {
		/* the form past "m2d" (F compared the whole form: no 2D
		 * form ever ran, each was a bad-form in both runs) */
		const char *f = form + 3;
#define F2(name, call) if (!strcmp(f, name)) return call;
		F2(uni ? "u" : "", cuMemcpy2D_v2(&m))
		F2(uni ? "ptu" : "pt", cuMemcpy2D_v2_ptds(&m))
		F2(uni ? "uau" : "ua", cuMemcpy2DUnaligned_v2(&m))
		F2(uni ? "asu" : "as", cuMemcpy2DAsync_v2(&m, s))
		F2(uni ? "asptu" : "aspt", cuMemcpy2DAsync_v2_ptsz(&m, s))
#undef F2
	}
	F("m3d", cuMemcpy3D_v2(&q))
	F("m3dpt", cuMemcpy3D_v2_ptds(&q))
	F("m3das", cuMemcpy3DAsync_v2(&q, s))
	F("m3daspt", cuMemcpy3DAsync_v2_ptsz(&q, s))
	F("p3d", cuMemcpy3DPeer(&q))
	F("p3das", cuMemcpy3DPeerAsync(&q, s))
	F("p3daspt", cuMemcpy3DPeerAsync_ptsz(&q, s))
#undef F
	return -1;
}

int fz_op_copy(struct fz_thread *t, struct fz_op *o)
{
	int ln = o->line;
	if (!strcmp(o->tok[0], "bogus")) {
		struct fz_buf *b = &fz_host[atoi(o->tok[2] + 1) % FZ_MAXB];
		struct fz_buf *d = &fz_dev[atoi(o->tok[3] + 1) % FZ_MAXB];
		if (!b->p || !d->p)
			return fz_printf(t, "%d bogus skip\n", ln), 0;
		CUresult r = -1;
		switch (fz_num(o->tok[1])) {
		case 0: r = cuMemcpyHtoD_v2(0, b->p, (size_t)-1); break;
		case 1: r = cuMemcpyHtoDAsync_v2(0, b->p, (size_t)-1, NULL); break;
		case 2: r = cuMemcpyDtoH_v2(b->p, 0, (size_t)-1); break;
		case 3: r = cuMemcpyHtoDAsync_v2(U(d->p), b->p, (size_t)-1 / 2, NULL); break;
		case 4: r = cuMemcpyDtoHAsync_v2(b->p, U(d->p), b->n + d->n + 4096, NULL); break;
		default: r = cuMemcpyHtoD_v2(U(d->p) + d->n - 8, b->p, b->n); break;
		}
		/* under "mode relaxed" an async copy into the buffer may still
		 * be running (HOSTPIN_COPY=async): its bytes are read only
		 * after a synchronisation, as for copies */
		if (fz_relaxed)
			return fz_printf(t, "%d bogus %s rc=%d\n", ln, o->tok[1],
					 r), 0;
		fz_printf(t, "%d bogus %s rc=%d sum %016llx\n", ln, o->tok[1], r,
			  (unsigned long long)fz_sum(b->p, b->n));
		return 0;
	}
	if (strcmp(o->tok[0], "c") || o->ntok < 9)
		return -1;
	int h2d = !strcmp(o->tok[1], "h2d");
	const char *form = o->tok[2];
	CUstream s = fz_stream(o->tok[3]);
	struct fz_buf *hb = &fz_host[atoi(o->tok[4] + 1) % FZ_MAXB];
	struct fz_buf *db = &fz_dev[atoi(o->tok[6] + 1) % FZ_MAXB];
	size_t hoff = (size_t)fz_num(o->tok[5]), doff = (size_t)fz_num(o->tok[7]);
	size_t w = (size_t)fz_num(o->tok[8]);
	size_t hh = o->tok[9] ? (size_t)fz_num(o->tok[9]) : 1;
	size_t hp = o->tok[10] ? (size_t)fz_num(o->tok[10]) : w;
	size_t dp = o->tok[11] ? (size_t)fz_num(o->tok[11]) : w;
	if (!hb->p || !db->p)
		return fz_printf(t, "%d c skip\n", ln), 0;
	size_t span = hh ? (hh - 1) * hp + w : 0;
	if (hoff > hb->n || span > hb->n - hoff) /* host side: never past it */
		return fz_printf(t, "%d c skip-host\n", ln), 0;
	/* near an end of the program's registration of the buffer, with a
	 * driver refusing ranges partly registered: which it crosses is the
	 * allocator's layout (ctl.c) */
	static int refuse = -1;
	if (refuse < 0) {
		const char *e = getenv("FAKE_CUDA_REFUSE_PARTIAL");
		refuse = e && *e == '1';
	}
	if (refuse &&
	    fz_reg_near(atoi(o->tok[4] + 1) % FZ_MAXB, hoff, hoff + span))
		return fz_printf(t, "%d c skip-reg\n", ln), 0;
	char *h = hb->p + hoff, *d = db->p + doff;
	size_t dspan = hh ? (hh - 1) * dp + w : 0;
	int dok = doff <= db->n && dspan <= db->n - doff;
	uint64_t before = 0;
	CUresult r;
	if (fz_fallible) {
		/* this thread's earlier copies done first: what changes the
		 * destination after the return is this copy's */
		fz_sync_mine(t);
		r = copy(form, h2d, s, h, d, w, hh, hp, dp);
		before = h2d ? (dok ? fz_sum(d, dspan) : 0) : fz_sum(h, span);
		fz_sync_mine(t);
		uint64_t after = h2d ? (dok ? fz_sum(d, dspan) : 0) : fz_sum(h, span);
		fz_printf(t, "%d c rc=*%s\n", ln,
			  r != 0 && after != before ? " LATEWRITE" : "");
		if (h2d && dok)
			fz_fill(d, dspan, (unsigned)ln);
		else if (!h2d)
			fz_fill(h, span, (unsigned)ln);
		return 0;
	}
	r = copy(form, h2d, s, h, d, w, hh, hp, dp);
	if (r == -1)
		return fz_printf(t, "%d c bad-form %s\n", ln, form), 0;
	if (fz_relaxed)
		return fz_printf(t, "%d c rc=%d\n", ln, r), 0;
	if (hb->regs) /* the program's own registration: it waits */
		cuStreamSynchronize(!s && strstr(form, "pt") ? (CUstream)2 : s);
	if (h2d) {
		fz_fill(h, span, (unsigned)ln * 7u);
		fz_printf(t, "%d c rc=%d\n", ln, r);
	} else
		fz_printf(t, "%d c rc=%d sum %016llx\n", ln, r,
			  (unsigned long long)fz_sum(h, span));
	return 0;
}
