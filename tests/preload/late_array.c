/* Copies between a CUDA array and host memory of hostpin's (issue 39, the
 * batches: their host side's rows depend on the array's element size)
 * over the fake driver's late mode (FAKE_CUDA_LATE_DMA=1, fake_late.h),
 * run under hostpin.
 *   late_array MODE   (see main)
 * The block is being registered in the background (late_common.h's
 * half_registered: its first 8 MiB registered, the rest held at the
 * fake's gate) and the driver refuses a host range only partly registered
 * (the case's FAKE_CUDA_REFUSE_PARTIAL=1).  Each copy's host rows run
 * across the end of the registered part, one row straddling it; each must
 * succeed with the bytes right both ways (an H2D's source overwritten at
 * return changes nothing, a D2H's data there at return). */
#include "late_common.h"

/* CUDA_MEMCPY3D_BATCH_OP (cuda.h's layout) */
typedef struct {
	int type; /* 1: pointer, 2: array */
	union {
		struct {
			CUdeviceptr ptr;
			size_t rowLength, layerHeight;
			int loc[2];
		} ptr;
		struct {
			void *array;
			size_t x, y, z;
		} array;
	} op;
} OPND;
typedef struct {
	OPND src, dst;
	size_t w, h, d;
	int order;
	unsigned flags;
} BOP;
struct desc3 {
	size_t w, h, d;
	int fmt;
	unsigned ch, fl;
};
CUresult cuArray3DCreate_v2(void **, const struct desc3 *);
CUresult cuMemcpy3DBatchAsync_v2(size_t, BOP *, unsigned long long, CUstream);
CUresult cuMemcpy3DWithAttributesAsync(BOP *, unsigned long long, CUstream);
CUresult cuMemcpy3DAsync_v2(const M3D *, CUstream);
CUresult cuMemcpy2DAsync_v2(const M2D *, CUstream);
cudaError_t cudaMemcpy3DBatchAsync(size_t, BOP *, size_t *,
				   unsigned long long, CUstream);

/* The array: FLOAT, 2 channels (8 bytes an element), W x AH x AD; the
 * copy: w elements of h rows of d layers at (X, 0, 0) of it; the host
 * side: rows RL elements apart, layers h rows apart, from blk + OFF: row
 * 128 (layer 2, row 0) straddles the block's 8 MiB (the registered
 * part's end). */
#define ES 8
#define W 2048
#define AH 64
#define AD 4
#define X 16
#define RL 4096
static const size_t w = 2000, h = 64, d = 4;
#define OFF (8 * MB - 128 * RL * ES - 8192)

static void *array_of(void)
{
	struct desc3 a = {W, AH, AD, 0x20 /* FLOAT */, 2, 0};
	void *arr = NULL;
	CHECK(cuArray3DCreate_v2(&arr, &a) == 0);
	return arr;
}
/* Row y of layer z of the array's memory (the fake's: first in the
 * handle), at the copy's X. */
static char *arow(void *arr, size_t y, size_t z)
{
	return *(char **)arr + ((z * AH + y) * W + X) * ES;
}
static char *hrow(char *h0, size_t y, size_t z)
{
	return h0 + (z * h + y) * RL * ES;
}
/* Every row of the copy equal on both sides (seed: their pattern) */
static int rows_same(void *arr, char *h0, unsigned seed)
{
	for (size_t z = 0; z < d; z++)
		for (size_t y = 0; y < h; y++)
			if (!same(arow(arr, y, z), w * ES, seed + (unsigned)(z * h + y)) ||
			    !same(hrow(h0, y, z), w * ES, seed + (unsigned)(z * h + y)))
				return 0;
	return 1;
}
static void fill_rows(char *base, int host, void *arr, unsigned seed)
{
	for (size_t z = 0; z < d; z++)
		for (size_t y = 0; y < h; y++)
			fill(host ? hrow(base, y, z) : arow(arr, y, z), w * ES,
			     seed + (unsigned)(z * h + y));
}
static void zero_rows(char *base, int host, void *arr)
{
	for (size_t z = 0; z < d; z++)
		for (size_t y = 0; y < h; y++)
			memset(host ? hrow(base, y, z) : arow(arr, y, z), 0, w * ES);
}
static BOP op(int htod, void *arr, char *h0)
{
	BOP o;
	memset(&o, 0, sizeof(o));
	OPND *a = htod ? &o.dst : &o.src, *p = htod ? &o.src : &o.dst;
	a->type = 2, a->op.array.array = arr, a->op.array.x = X;
	p->type = 1, p->op.ptr.ptr = (CUdeviceptr)(uintptr_t)h0;
	p->op.ptr.rowLength = RL;
	o.w = w, o.h = h, o.d = d;
	o.order = 1; /* CU_MEMCPY_SRC_ACCESS_ORDER_STREAM */
	return o;
}

/* form 0: cuMemcpy3DBatchAsync_v2 (two ops: an H2D, then a D2H of
 * another array); 1: cuMemcpy3DWithAttributesAsync; 2: the runtime's
 * cudaMemcpy3DBatchAsync (CUDA 12.8's form) */
static CUresult issue(int form, BOP *o, CUstream s)
{
	size_t fail = 0;
	switch (form) {
	case 0:
		return cuMemcpy3DBatchAsync_v2(1, o, 0, s);
	case 1:
		return cuMemcpy3DWithAttributesAsync(o, 0, s);
	default:
		return (CUresult)cudaMemcpy3DBatchAsync(1, o, &fail, 0, s);
	}
}
static const char *form_name[] = {"cuMemcpy3DBatchAsync_v2",
				  "cuMemcpy3DWithAttributesAsync",
				  "cudaMemcpy3DBatchAsync"};

/* The 3D batch forms, each an H2D into the array and a D2H out of it. */
static int mode_batch(void)
{
	alarm(30);
	CUdeviceptr dv;
	CUstream s;
	char *blk = half_registered(20, &dv, &s), *h0 = blk + OFF;
	void *arr = array_of();
	for (int form = 0; form < 3; form++) {
		unsigned seed = 1000u * (unsigned)(form + 1);
		fill_rows(h0, 1, NULL, seed);
		BOP o = op(1, arr, h0);
		CUresult r = issue(form, &o, s);
		printf("%s H2D from rows across the registered part's end: %d\n",
		       form_name[form], r);
		CHECK(r == 0);
		zero_rows(h0, 1, NULL); /* after the call: changes nothing */
		CHECK(cuStreamSynchronize(s) == 0);
		fill_rows(h0, 1, NULL, seed);
		CHECK(rows_same(arr, h0, seed));
		fill_rows(NULL, 0, arr, seed + 500);
		zero_rows(h0, 1, NULL);
		o = op(0, arr, h0);
		r = issue(form, &o, s);
		printf("%s D2H into rows across the registered part's end: %d\n",
		       form_name[form], r);
		CHECK(r == 0);
		CHECK(rows_same(arr, h0, seed + 500)); /* there on return */
		CHECK(cuStreamSynchronize(s) == 0);
	}
	fake_cuda_open_gate();
	wait_for(is_reg, blk, "the block registered");
	free(blk);
	return 0;
}

/* The single forms with an array side: cuMemcpy3DAsync_v2 with the 3D
 * array, cuMemcpy2DAsync_v2 with layer 0 of a 2D array (its rows across
 * the same end), both ways. */
CUresult cuArrayCreate_v2(void **, const void *);
static int mode_single(void)
{
	alarm(30);
	CUdeviceptr dv;
	CUstream s;
	char *blk = half_registered(21, &dv, &s), *h0 = blk + OFF;
	void *arr = array_of();
	M3D m;
	memset(&m, 0, sizeof(m));
	m.srcMemoryType = HOST, m.srcHost = h0, m.srcPitch = RL * ES;
	m.srcHeight = h;
	m.dstMemoryType = ARRAY, m.dstArray = arr, m.dstXInBytes = X * ES;
	m.WidthInBytes = w * ES, m.Height = h, m.Depth = d;
	fill_rows(h0, 1, NULL, 3000);
	CUresult r = cuMemcpy3DAsync_v2(&m, s);
	printf("cuMemcpy3DAsync_v2 H2D into a 3D array across the end: %d\n", r);
	CHECK(r == 0);
	zero_rows(h0, 1, NULL);
	CHECK(cuStreamSynchronize(s) == 0);
	fill_rows(h0, 1, NULL, 3000);
	CHECK(rows_same(arr, h0, 3000));
	memset(&m, 0, sizeof(m));
	m.dstMemoryType = HOST, m.dstHost = h0, m.dstPitch = RL * ES;
	m.dstHeight = h;
	m.srcMemoryType = ARRAY, m.srcArray = arr, m.srcXInBytes = X * ES;
	m.WidthInBytes = w * ES, m.Height = h, m.Depth = d;
	fill_rows(NULL, 0, arr, 3500);
	zero_rows(h0, 1, NULL);
	r = cuMemcpy3DAsync_v2(&m, s);
	printf("cuMemcpy3DAsync_v2 D2H out of a 3D array across the end: %d\n", r);
	CHECK(r == 0);
	CHECK(rows_same(arr, h0, 3500));
	/* 2D: a 2D array of AH * AD rows, the rows of layers 0-3 as one
	 * rectangle (the same host rows, the same array memory) */
	struct { size_t w, h; int fmt; unsigned ch; } a2 = {W, AH * AD, 0x20, 2};
	void *arr2 = NULL;
	CHECK(cuArrayCreate_v2(&arr2, &a2) == 0);
	M2D q;
	memset(&q, 0, sizeof(q));
	q.srcMemoryType = HOST, q.srcHost = h0, q.srcPitch = RL * ES;
	q.dstMemoryType = ARRAY, q.dstArray = arr2, q.dstXInBytes = X * ES;
	q.WidthInBytes = w * ES, q.Height = h * d;
	fill_rows(h0, 1, NULL, 4000);
	r = cuMemcpy2DAsync_v2(&q, s);
	printf("cuMemcpy2DAsync_v2 H2D into a 2D array across the end: %d\n", r);
	CHECK(r == 0);
	zero_rows(h0, 1, NULL);
	CHECK(cuStreamSynchronize(s) == 0);
	fill_rows(h0, 1, NULL, 4000);
	CHECK(rows_same(arr2, h0, 4000));
	memset(&q, 0, sizeof(q));
	q.dstMemoryType = HOST, q.dstHost = h0, q.dstPitch = RL * ES;
	q.srcMemoryType = ARRAY, q.srcArray = arr2, q.srcXInBytes = X * ES;
	q.WidthInBytes = w * ES, q.Height = h * d;
	fill_rows(NULL, 0, arr2, 4500);
	zero_rows(h0, 1, NULL);
	r = cuMemcpy2DAsync_v2(&q, s);
	printf("cuMemcpy2DAsync_v2 D2H out of a 2D array across the end: %d\n", r);
	CHECK(r == 0);
	CHECK(rows_same(arr2, h0, 4500));
	CHECK(cuStreamSynchronize(s) == 0);
	fake_cuda_open_gate();
	wait_for(is_reg, blk, "the block registered");
	free(blk);
	return 0;
}

/* The runtime's cudaMemcpy3DAsync and cudaMemcpy3D with the 3D array on
 * the device side (cudaMemcpy3DParms: the extent's width and the array's
 * position in its elements; the host position in bytes). */
cudaError_t cudaMemcpy3DAsync(const struct parms3d *, CUstream);
cudaError_t cudaMemcpy3D(const struct parms3d *);
static int mode_runtime(void)
{
	alarm(30);
	CUdeviceptr dv;
	CUstream s;
	char *blk = half_registered(22, &dv, &s), *h0 = blk + OFF;
	void *arr = array_of();
	for (int sync = 0; sync < 2; sync++) {
		unsigned seed = 5000u + 1000u * (unsigned)sync;
		struct parms3d p;
		memset(&p, 0, sizeof(p));
		p.src.ptr = h0, p.src.pitch = RL * ES, p.src.ysize = h;
		p.dstArray = arr, p.dpos[0] = X;
		p.ext[0] = w, p.ext[1] = h, p.ext[2] = d;
		p.kind = H2D;
		fill_rows(h0, 1, NULL, seed);
		cudaError_t e = sync ? cudaMemcpy3D(&p) : cudaMemcpy3DAsync(&p, s);
		printf("cudaMemcpy3D%s H2D into a 3D array across the end: %d\n",
		       sync ? "" : "Async", e);
		CHECK(e == 0);
		zero_rows(h0, 1, NULL);
		CHECK(cuStreamSynchronize(s) == 0);
		fill_rows(h0, 1, NULL, seed);
		CHECK(rows_same(arr, h0, seed));
		memset(&p, 0, sizeof(p));
		p.dst.ptr = h0, p.dst.pitch = RL * ES, p.dst.ysize = h;
		p.srcArray = arr, p.spos[0] = X;
		p.ext[0] = w, p.ext[1] = h, p.ext[2] = d;
		p.kind = D2H;
		fill_rows(NULL, 0, arr, seed + 500);
		zero_rows(h0, 1, NULL);
		e = sync ? cudaMemcpy3D(&p) : cudaMemcpy3DAsync(&p, s);
		printf("cudaMemcpy3D%s D2H out of a 3D array across the end: %d\n",
		       sync ? "" : "Async", e);
		CHECK(e == 0);
		CHECK(rows_same(arr, h0, seed + 500));
		CHECK(cuStreamSynchronize(s) == 0);
	}
	fake_cuda_open_gate();
	wait_for(is_reg, blk, "the block registered");
	free(blk);
	return 0;
}

/* An array of a format whose element size hostpin does not know (NV12:
 * the fake moves its bytes as one-byte elements): its ops go to the
 * driver as they are (the case sees the note, once); here two of them
 * inside the registered part, the bytes right. */
static int mode_unknown(void)
{
	alarm(30);
	CUdeviceptr dv;
	CUstream s;
	char *blk = half_registered(23, &dv, &s), *h0 = blk + MB;
	struct desc3 a = {W, AH, AD, 0xb0 /* NV12 */, 1, 0};
	void *arr = NULL;
	CHECK(cuArray3DCreate_v2(&arr, &a) == 0);
	for (int k = 0; k < 2; k++) {
		BOP o;
		memset(&o, 0, sizeof(o));
		o.dst.type = 2, o.dst.op.array.array = arr;
		o.src.type = 1, o.src.op.ptr.ptr = (CUdeviceptr)(uintptr_t)h0;
		o.w = W, o.h = AH, o.d = 1;
		fill(h0, W * AH, 6000u + (unsigned)k);
		CHECK(cuMemcpy3DBatchAsync_v2(1, &o, 0, s) == 0);
		CHECK(cuStreamSynchronize(s) == 0);
		CHECK(same(*(char **)arr, W * AH, 6000u + (unsigned)k));
	}
	fake_cuda_open_gate();
	wait_for(is_reg, blk, "the block registered");
	free(blk);
	return 0;
}

/* A batch of two ops, the first between the array and rows across the
 * registered part's end, the second past its array's end (layer AD):
 * the driver refuses the batch, and nothing of the first op lands in the
 * array (hostpin hands such a batch to the driver whole, for it to refuse
 * before any op moves). */
static int mode_refused(void)
{
	alarm(30);
	CUdeviceptr dv;
	CUstream s;
	char *blk = half_registered(24, &dv, &s), *h0 = blk + OFF;
	void *arr = array_of();
	zero_rows(NULL, 0, arr);
	fill_rows(h0, 1, NULL, 7000);
	BOP o[2] = {op(1, arr, h0), op(1, arr, h0)};
	o[1].dst.op.array.z = 1; /* layers 1-4 of 4 */
	CUresult r = cuMemcpy3DBatchAsync_v2(2, o, 0, s);
	printf("a batch with an op past its array's end: %d\n", r);
	CHECK(r != 0);
	CHECK(cuStreamSynchronize(s) == 0);
	for (size_t z = 0; z < d; z++)
		for (size_t y = 0; y < h; y++)
			for (size_t k = 0; k < w * ES; k++)
				CHECK(arow(arr, y, z)[k] == 0);
	fake_cuda_open_gate();
	wait_for(is_reg, blk, "the block registered");
	free(blk);
	return 0;
}

/* The 1D array copies (cuMemcpyHtoA_v2, cuMemcpyHtoAAsync_v2; htoa) and
 * (cuMemcpyAtoH_v2, cuMemcpyAtoHAsync_v2; atoh) of 256 KiB between a 1D
 * array (FLOAT, 2 channels, 64 Ki elements) at byte offset AO and host
 * memory across the end of the block's registered part (its 8 MiB): each
 * went to the driver whole and was refused. */
CUresult cuMemcpyHtoA_v2(void *, size_t, const void *, size_t);
CUresult cuMemcpyHtoAAsync_v2(void *, size_t, const void *, size_t, CUstream);
CUresult cuMemcpyAtoH_v2(void *, void *, size_t, size_t);
CUresult cuMemcpyAtoHAsync_v2(void *, void *, size_t, size_t, CUstream);
#define AN1 (256 * 1024)
#define AO 40960
static int array_1d(int htod)
{
	alarm(30);
	CUdeviceptr dv;
	CUstream s;
	char *blk = half_registered(25, &dv, &s), *h0 = blk + 8 * MB - 96 * 1024;
	struct { size_t w, h; int fmt; unsigned ch; } a1 = {64 * 1024, 0, 0x20, 2};
	void *arr = NULL;
	CHECK(cuArrayCreate_v2(&arr, &a1) == 0);
	char *am = *(char **)arr + AO;
	for (int async = 0; async < 2; async++) {
		unsigned seed = 8000u + 100u * (unsigned)async;
		CUresult r;
		if (htod) {
			fill(h0, AN1, seed);
			memset(am, 0, AN1);
			r = async ? cuMemcpyHtoAAsync_v2(arr, AO, h0, AN1, s)
				  : cuMemcpyHtoA_v2(arr, AO, h0, AN1);
			printf("cuMemcpyHtoA%s_v2 across the registered part's end: %d\n",
			       async ? "Async" : "", r);
			CHECK(r == 0);
			memset(h0, 0, AN1); /* after the call: changes nothing */
			CHECK(cuStreamSynchronize(s) == 0);
			CHECK(same(am, AN1, seed));
		} else {
			fill(am, AN1, seed);
			memset(h0, 0, AN1);
			r = async ? cuMemcpyAtoHAsync_v2(h0, arr, AO, AN1, s)
				  : cuMemcpyAtoH_v2(h0, arr, AO, AN1);
			printf("cuMemcpyAtoH%s_v2 across the registered part's end: %d\n",
			       async ? "Async" : "", r);
			CHECK(r == 0);
			CHECK(same(h0, AN1, seed)); /* there on return */
			CHECK(cuStreamSynchronize(s) == 0);
		}
	}
	fake_cuda_open_gate();
	wait_for(is_reg, blk, "the block registered");
	free(blk);
	return 0;
}
static int mode_htoa(void) { return array_1d(1); }
static int mode_atoh(void) { return array_1d(0); }

int main(int argc, char **argv)
{
	static const struct staged_mode modes[] = {
	    {"batch", mode_batch}, {"single", mode_single},
	    {"runtime", mode_runtime}, {"unknown", mode_unknown},
	    {"refused", mode_refused}, {"htoa", mode_htoa},
	    {"atoh", mode_atoh}};
	return staged_main("late_array", argc, argv, modes);
}
