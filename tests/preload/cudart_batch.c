/* The real CUDA runtime's batch copies (cudaMemcpyBatchAsync,
 * cudaMemcpy3DBatchAsync and their _ptsz forms) over blocks of hostpin's
 * registered in several pieces (HOSTPIN_REGISTER_CHUNK=8M,
 * HOSTPIN_PIN_AFTER=0): each entry crossing the end of a registration must
 * reach the driver split (FAKE_CUDA_REFUSE_PARTIAL=1 refuses a host range
 * only partly registered), with the bytes it copies.  Prints "ok NAME" or
 * "FAIL NAME: why"; "registered" once both blocks are; exit 0 when every
 * check held.  Entries: a 1D H2D of 16 MiB, a 1D D2H of two entries (the
 * first across the 8 MiB end), packed 3D ops, 3D ops whose host side
 * is pitched (rows 8 KiB apart) across the end, and 3D ops between a CUDA
 * array (8 bytes an element) and host rows across the end. */
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../preload/hostpin.h"

extern cudaError_t CUDARTAPI cudaMemcpyBatchAsync_ptsz(
    void *const *, const void *const *, const size_t *, size_t,
    struct cudaMemcpyAttributes *, size_t *, size_t, cudaStream_t);
extern cudaError_t CUDARTAPI cudaMemcpy3DBatchAsync_ptsz(
    size_t, struct cudaMemcpy3DBatchOp *, unsigned long long, cudaStream_t);

#define N ((size_t)16 << 20)
static int failed;
static cudaStream_t st;

static void fill(unsigned char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)(seed + i / 4093);
}
static void result(const char *name, cudaError_t e, int same)
{
	if (e != cudaSuccess)
		printf("FAIL %s: %s\n", name, cudaGetErrorString(e)), failed = 1;
	else if (!same)
		printf("FAIL %s: the bytes differ\n", name), failed = 1;
	else
		printf("ok %s\n", name);
}
static struct cudaMemcpy3DBatchOp op(void *d, size_t drow, const void *s,
				     size_t srow, size_t w, size_t h)
{
	struct cudaMemcpy3DBatchOp o;
	memset(&o, 0, sizeof(o));
	o.src.type = o.dst.type = cudaMemcpyOperandTypePointer;
	o.src.op.ptr.ptr = (void *)s, o.dst.op.ptr.ptr = d;
	o.src.op.ptr.rowLength = srow, o.dst.op.ptr.rowLength = drow;
	o.extent.width = w, o.extent.height = h, o.extent.depth = 1;
	o.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
	return o;
}
/* w bytes of h rows, host rows hp apart from h0, device rows packed */
static int rows_same(const unsigned char *a, size_t ap, const unsigned char *b,
		     size_t bp, size_t w, size_t h)
{
	for (size_t y = 0; y < h; y++)
		if (memcmp(a + y * ap, b + y * bp, w))
			return 0;
	return 1;
}

int main(int argc, char **argv)
{
	void *d = NULL;
	cudaError_t e = cudaMalloc(&d, N);
	if (e == cudaSuccess)
		e = cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking);
	if (e != cudaSuccess) {
		printf("FAIL runtime start: %s\n", cudaGetErrorString(e));
		return 1;
	}
	unsigned char *h = malloc(N), *g = malloc(N);
	int (*q)(const void *, struct hostpin_range *) =
	    (int (*)(const void *, struct hostpin_range *))dlsym(
		RTLD_DEFAULT, "hostpin_query");
	if (q) { /* registered at allocation, perhaps in the background */
		struct hostpin_range r1, r2;
		for (long i = 0; i < 200000; i++) {
			if (q(h, &r1) && q(g, &r2) &&
			    (r1.flags & r2.flags & HOSTPIN_REGISTERED))
				break;
			struct timespec ts = {0, 100000};
			nanosleep(&ts, NULL);
		}
		if (q(h, &r1) && q(g, &r2) &&
		    (r1.flags & r2.flags & HOSTPIN_REGISTERED))
			printf("registered\n");
	}
	size_t zero = 0;
	struct cudaMemcpyAttributes a;
	memset(&a, 0, sizeof(a));
	a.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
	if (argc > 1 && strncmp(argv[1], "waits", 5) == 0) {
		/* 8 entries of 128 KiB inside one registration of h (the
		 * MiB below the first end of an 8 MiB cell 1 MiB or more
		 * into it), then cudaStreamQuery: the case counts the waits
		 * in the fake's log between the batch and that query */
		uintptr_t c = (((uintptr_t)h + (1u << 20) + 4096) |
			       ((8u << 20) - 1)) + 1;
		void *wd[8];
		const void *ws[8];
		size_t wn[8];
		fill(h, N, 4);
		for (int k = 0; k < 8; k++) {
			wd[k] = (char *)d + k * ((size_t)128 << 10);
			ws[k] = (const char *)c - (1u << 20) + k * ((size_t)128 << 10);
			wn[k] = (size_t)128 << 10;
		}
		if (strcmp(argv[1], "waits-driver") == 0) {
			/* the driver's, as the runtime hands it out */
			typedef int (*drv_batch_t)(void *const *, const void *const *,
						   size_t *, size_t, void *,
						   size_t *, size_t, cudaStream_t);
			void *fp = NULL;
			enum cudaDriverEntryPointQueryResult qr;
			e = cudaGetDriverEntryPointByVersion(
			    "cuMemcpyBatchAsync", &fp, 13000, cudaEnableDefault,
			    &qr);
			if (e == cudaSuccess && fp)
				e = ((drv_batch_t)fp)(wd, ws, wn, 8, &a, &zero, 1, st)
					? cudaErrorInvalidValue : cudaSuccess;
			else if (e == cudaSuccess)
				e = cudaErrorSymbolNotFound;
		} else {
			e = cudaMemcpyBatchAsync(wd, ws, wn, 8, &a, &zero, 1, st);
		}
		cudaStreamQuery(st);
		cudaStreamSynchronize(st);
		result("cudaMemcpyBatchAsync of 8 entries in one registration", e, 1);
		free(h), free(g);
		cudaFree(d);
		return failed;
	}

	/* 1D: one H2D entry over all of h, then two D2H entries into g */
	fill(h, N, 1);
	void *ds[2] = {d, NULL};
	const void *ss[2] = {h, NULL};
	size_t ns[2] = {N, 0};
	e = cudaMemcpyBatchAsync(ds, ss, ns, 1, &a, &zero, 1, st);
	if (e == cudaSuccess)
		e = cudaStreamSynchronize(st);
	memset(g, 0, N);
	void *gd[2] = {g, g + (12u << 20)};
	const void *gs[2] = {d, (char *)d + (12u << 20)};
	size_t gn[2] = {12u << 20, 4u << 20};
	if (e == cudaSuccess)
		e = cudaMemcpyBatchAsync_ptsz(gd, gs, gn, 2, &a, &zero, 1, 0);
	if (e == cudaSuccess)
		e = cudaStreamSynchronize(cudaStreamPerThread);
	result("cudaMemcpyBatchAsync across registrations", e,
	       memcmp(h, g, N) == 0);

	/* 3D, packed: H2D from h at 4 KiB in, D2H back into g at 4 KiB */
	fill(h, N, 2);
	memset(g, 0, N);
	struct cudaMemcpy3DBatchOp o = op(d, 0, h + 4096, 0, 4096, 4000);
	e = cudaMemcpy3DBatchAsync(1, &o, 0, st);
	if (e == cudaSuccess)
		e = cudaStreamSynchronize(st);
	o = op(g + 4096, 0, d, 0, 4096, 4000);
	if (e == cudaSuccess)
		e = cudaMemcpy3DBatchAsync_ptsz(1, &o, 0, 0);
	if (e == cudaSuccess)
		e = cudaDeviceSynchronize();
	result("cudaMemcpy3DBatchAsync packed across registrations", e,
	       memcmp(h + 4096, g + 4096, 4096 * 4000) == 0);

	/* 3D, pitched host side: 900 rows of 4 KiB, 8 KiB apart, row 127
	 * across the first end of an 8 MiB cell (of the address space) 1 MiB
	 * or more into h; and back into g at the same offset */
	uintptr_t cell = (((uintptr_t)h + (1u << 20) + 4096) | ((8u << 20) - 1)) + 1;
	size_t off = cell - (uintptr_t)h - 2048 - 127 * 8192;
	fill(h, N, 3);
	o = op(d, 0, h + off, 8192, 4096, 900);
	e = cudaMemcpy3DBatchAsync(1, &o, 0, st);
	o = op(g + off, 8192, d, 0, 4096, 900);
	memset(g, 0, N);
	if (e == cudaSuccess)
		e = cudaMemcpy3DBatchAsync(1, &o, 0, st);
	if (e == cudaSuccess)
		e = cudaStreamSynchronize(st);
	result("cudaMemcpy3DBatchAsync pitched across registrations", e,
	       rows_same(h + off, 8192, g + off, 8192, 4096, 900));

	/* CUDA 13.2's 3D copy with attributes: a batch of one op, packed
	 * across the same end, pitched back */
	fill(h, N, 5);
	memset(g, 0, N);
	o = op(d, 0, h + off, 0, 4096, 900);
	e = cudaMemcpy3DWithAttributesAsync(&o, 0, st);
	o = op(g + off, 8192, d, 0, 4096, 900);
	if (e == cudaSuccess)
		e = cudaMemcpy3DWithAttributesAsync(&o, 0, st);
	if (e == cudaSuccess)
		e = cudaStreamSynchronize(st);
	result("cudaMemcpy3DWithAttributesAsync across registrations", e,
	       rows_same(h + off, 4096, g + off, 8192, 4096, 900));

	/* 3D, a CUDA array (float2: 8 bytes an element, asked of the driver
	 * by hostpin) and host rows of 16000 bytes 16 KiB apart (rowLength
	 * 2048 elements), 64 rows a layer, 4 layers, row 128 across an end
	 * of an 8 MiB cell: H2D into the array from h, D2H back into g */
	struct cudaChannelFormatDesc cf =
	    cudaCreateChannelDesc(32, 32, 0, 0, cudaChannelFormatKindFloat);
	cudaArray_t arr = NULL;
	struct cudaExtent ax = {2048, 64, 4};
	e = cudaMalloc3DArray(&arr, &cf, ax, 0);
	uintptr_t acell = cell - (uintptr_t)h >= (3u << 20) ? cell : cell + (8u << 20);
	size_t aoff = acell - (uintptr_t)h - 8192 - 128 * 16384;
	fill(h, N, 6);
	memset(g, 0, N);
	memset(&o, 0, sizeof(o));
	o.src.type = cudaMemcpyOperandTypePointer;
	o.src.op.ptr.ptr = h + aoff, o.src.op.ptr.rowLength = 2048;
	o.dst.type = cudaMemcpyOperandTypeArray;
	o.dst.op.array.array = arr, o.dst.op.array.offset.x = 16;
	o.extent.width = 2000, o.extent.height = 64, o.extent.depth = 4;
	o.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
	if (e == cudaSuccess)
		e = cudaMemcpy3DBatchAsync(1, &o, 0, st);
	struct cudaMemcpy3DBatchOp back = o;
	back.src = o.dst, back.dst = o.src;
	back.dst.op.ptr.ptr = g + aoff;
	if (e == cudaSuccess)
		e = cudaMemcpy3DBatchAsync(1, &back, 0, st);
	if (e == cudaSuccess)
		e = cudaStreamSynchronize(st);
	result("cudaMemcpy3DBatchAsync with a CUDA array across registrations",
	       e, rows_same(h + aoff, 16384, g + aoff, 16384, 16000, 256));
	if (arr)
		cudaFreeArray(arr);
	free(h), free(g);
	cudaFree(d);
	return failed;
}
