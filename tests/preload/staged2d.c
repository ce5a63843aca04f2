/* Staged 2D copies over the fake driver and runtime, run under hostpin.
 *   staged2d MODE   (see main)
 * Each mode copies a rectangle between pitched host memory hostpin has not
 * registered (below HOSTPIN_THRESHOLD) and the fake device, at offsets on
 * both sides, and checks every byte of both buffers (the rectangle, and
 * the bytes around it untouched) and the semantics of pageable memory: an
 * async H2D's source overwritten right after the call changes nothing; a
 * D2H's data is there on return; a synchronous H2D's data is on the device
 * on return.  Whether hostpin staged the copy or passed it through is the
 * case file's check, on the fake's log (FAKE_CUDA_NO_PAGEABLE). */
#include "staged_common.h"

CUresult cuMemcpy2DAsync_v2(const M2D *, CUstream);
CUresult cuMemcpy2DAsync_v2_ptsz(const M2D *, CUstream);
CUresult cuMemcpy2D_v2(const M2D *);
CUresult cuMemcpy2D_v2_ptds(const M2D *);
CUresult cuMemcpy2DUnaligned_v2(const M2D *);
CUresult cuMemcpy3DAsync_v2(const M3D *, CUstream);
CUresult cuMemcpy3DAsync_v2_ptsz(const M3D *, CUstream);
CUresult cuMemcpy3D_v2(const M3D *);
CUresult cuMemcpy3D_v2_ptds(const M3D *);
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr, const void *, size_t, CUstream);
CUresult cuArrayCreate_v2(void **, const void *);
CUresult cuArray3DCreate_v2(void **, const void *);
cudaError_t cudaMemcpy2D(void *, size_t, const void *, size_t, size_t, size_t,
			 int);
cudaError_t cudaMemcpy2DAsync(void *, size_t, const void *, size_t, size_t,
			      size_t, int, CUstream);
cudaError_t cudaMemcpy3D(const struct parms3d *);
cudaError_t cudaMemcpy3DAsync(const struct parms3d *, CUstream);
cudaError_t cudaMemcpy3DAsync_ptsz(const struct parms3d *, CUstream);
cudaError_t cudaMemcpy3D_ptds(const struct parms3d *);

static unsigned char pat(unsigned seed, size_t y, size_t x)
{
	uint32_t h = (uint32_t)y * 0x9E3779B1u ^ (uint32_t)x * 0x85EBCA77u ^
		     seed * 0xC2B2AE3Du;
	h ^= h >> 15;
	return (unsigned char)(h * 0x2C1B3C6Du >> 24);
}

/* n bytes of plain() host memory, or of device memory, every byte bg. */
static unsigned char *hostbuf(size_t n, int bg)
{
	unsigned char *p = plain(n);
	memset(p, bg, n);
	return p;
}
static unsigned char *devbuf(size_t n, int bg)
{
	unsigned char *p = D(dev(n));
	memset(p, bg, n); /* the fake's device memory */
	return p;
}

/* A rectangle w x H at (x, y) of a buffer of pitch p. */
struct rect {
	size_t w, H;
	size_t hp, hx, hy; /* host side */
	size_t dp, dx, dy; /* device side */
};
static void put(unsigned char *b, size_t p, size_t x, size_t y,
		const struct rect *r, unsigned seed)
{
	for (size_t i = 0; i < r->H; i++)
		for (size_t j = 0; j < r->w; j++)
			b[(y + i) * p + x + j] = pat(seed, i, j);
}
/* Every byte of b: the rectangle's pattern inside, bg outside. */
static int holds(const unsigned char *b, size_t len, size_t p, size_t x,
		 size_t y, const struct rect *r, unsigned seed, int bg)
{
	for (size_t k = 0; k < len; k++) {
		size_t i = k / p, j = k % p;
		int in = i >= y && i < y + r->H && j >= x && j < x + r->w;
		int want = in ? pat(seed, i - y, j - x) : bg;
		if (b[k] != (unsigned char)want) {
			fprintf(stderr, "byte %zu (row %zu col %zu) is %d, "
				"not %d\n", k, i, j, b[k], want);
			return 0;
		}
	}
	return 1;
}

enum api { DRV, DRV_PTSZ, DRV_SYNC, DRV_PTDS, DRV_UNIFIED, DRV_UNALIGNED,
	   RT, RT_SYNC };
static int synchronous(enum api a)
{
	return a == DRV_SYNC || a == DRV_PTDS || a == DRV_UNALIGNED ||
	       a == RT_SYNC;
}

static CUresult issue(enum api a, int dir, const struct rect *r,
		      unsigned char *h, unsigned char *d, CUstream s)
{
	M2D m;
	memset(&m, 0, sizeof(m));
	int ht = a == DRV_UNIFIED ? UNIFIED : HOST;
	int dt = a == DRV_UNIFIED ? UNIFIED : DEVICE;
	m.WidthInBytes = r->w, m.Height = r->H;
	if (dir == H2D) {
		m.srcMemoryType = ht, m.srcHost = h;
		m.srcDevice = (CUdeviceptr)(uintptr_t)h;
		m.srcPitch = r->hp, m.srcXInBytes = r->hx, m.srcY = r->hy;
		m.dstMemoryType = dt, m.dstDevice = (CUdeviceptr)(uintptr_t)d;
		m.dstPitch = r->dp, m.dstXInBytes = r->dx, m.dstY = r->dy;
		if (a == DRV_UNIFIED)
			m.srcHost = NULL;
	} else {
		m.srcMemoryType = dt, m.srcDevice = (CUdeviceptr)(uintptr_t)d;
		m.srcPitch = r->dp, m.srcXInBytes = r->dx, m.srcY = r->dy;
		m.dstMemoryType = ht, m.dstHost = h;
		m.dstDevice = (CUdeviceptr)(uintptr_t)h;
		m.dstPitch = r->hp, m.dstXInBytes = r->hx, m.dstY = r->hy;
		if (a == DRV_UNIFIED)
			m.dstHost = NULL;
	}
	unsigned char *hr = h + r->hy * r->hp + r->hx;
	unsigned char *dr = d + r->dy * r->dp + r->dx;
	switch (a) {
	case DRV:
	case DRV_UNIFIED: return cuMemcpy2DAsync_v2(&m, s);
	case DRV_PTSZ: return cuMemcpy2DAsync_v2_ptsz(&m, s);
	case DRV_SYNC: return cuMemcpy2D_v2(&m);
	case DRV_PTDS: return cuMemcpy2D_v2_ptds(&m);
	case DRV_UNALIGNED: return cuMemcpy2DUnaligned_v2(&m);
	case RT:
		return dir == H2D ? cudaMemcpy2DAsync(dr, r->dp, hr, r->hp,
						      r->w, r->H, H2D, s)
				  : cudaMemcpy2DAsync(hr, r->hp, dr, r->dp,
						      r->w, r->H, D2H, s);
	case RT_SYNC:
		return dir == H2D ? cudaMemcpy2D(dr, r->dp, hr, r->hp, r->w,
						 r->H, H2D)
				  : cudaMemcpy2D(hr, r->hp, dr, r->dp, r->w,
						 r->H, D2H);
	}
	return -1;
}

/* One H2D then one D2H of rectangle r through api a on stream s. */
static void both(enum api a, const struct rect *r, CUstream s, unsigned seed)
{
	CUstream ws = a == DRV_PTSZ && !s ? (CUstream)0x2 : s;
	size_t hl = (r->hy + r->H) * r->hp, dl = (r->dy + r->H) * r->dp;
	/* H2D */
	unsigned char *h = hostbuf(hl, 0x11), *d = devbuf(dl, 0x5a);
	put(h, r->hp, r->hx, r->hy, r, seed);
	CHECK(issue(a, H2D, r, h, d, s) == 0);
	if (synchronous(a)) /* complete on return */
		CHECK(holds(d, dl, r->dp, r->dx, r->dy, r, seed, 0x5a));
	memset(h, 0xee, hl); /* the source was staged: this changes nothing */
	CHECK(cuStreamSynchronize(ws) == 0);
	CHECK(cuCtxSynchronize() == 0);
	CHECK(holds(d, dl, r->dp, r->dx, r->dy, r, seed, 0x5a));
	munmap(h, hl);
	/* D2H: there on return, the bytes around the rectangle untouched */
	h = hostbuf(hl, 0x33), d = devbuf(dl, 0x44);
	put(d, r->dp, r->dx, r->dy, r, seed + 1);
	CHECK(issue(a, D2H, r, h, d, s) == 0);
	CHECK(holds(h, hl, r->hp, r->hx, r->hy, r, seed + 1, 0x33));
	CHECK(cuStreamSynchronize(ws) == 0);
	munmap(h, hl);
}

/* 4000 x 2000 (8 MB) at offsets, pitches wider than the rows */
static const struct rect R = {4000, 2000, 4160, 80, 3, 4352, 64, 5};

static int mode_async(void)
{
	CUstream s;
	CHECK(cuStreamCreate(&s, 0) == 0);
	both(DRV, &R, s, 1);
	both(DRV, &R, NULL, 2); /* legacy default stream */
	both(DRV_PTSZ, &R, NULL, 3); /* per-thread default stream */
	both(RT, &R, s, 4);
	return 0;
}

static int mode_sync(void)
{
	both(DRV_SYNC, &R, NULL, 5);
	both(DRV_PTDS, &R, NULL, 6);
	both(RT_SYNC, &R, NULL, 7);
	return 0;
}

/* A width not a multiple of 4, odd offsets, rows packed (pitch == width)
 * on the host side */
static int mode_odd(void)
{
	CUstream s;
	CHECK(cuStreamCreate(&s, 0) == 0);
	struct rect r = {4097, 1500, 4097 + 3, 1, 1, 4099 + 8, 3, 7};
	both(DRV, &r, s, 8);
	struct rect packed = {3001, 2000, 3001, 0, 0, 3011, 5, 1};
	both(DRV, &packed, s, 9);
	both(RT_SYNC, &packed, NULL, 10);
	return 0;
}

/* Larger than the ring: 3001 x 30000 (90 MB) through a 64 MiB ring, or
 * far more slots with a small one; slots reused only after their events
 * (the fake runs a DMA only when the program synchronises). */
static int mode_big(void)
{
	CUstream s;
	CHECK(cuStreamCreate(&s, 0) == 0);
	struct rect r = {3001, 30000, 3077, 7, 2, 3200, 11, 3};
	both(DRV, &r, s, 11);
	both(DRV_SYNC, &r, NULL, 12);
	return 0;
}

/* Unified addressing on both sides: a host pointer the driver does not
 * know, and device memory. */
static int mode_unified(void)
{
	CUstream s;
	CHECK(cuStreamCreate(&s, 0) == 0);
	both(DRV_UNIFIED, &R, s, 13);
	return 0;
}

/* Passed through: rows wider than a slot (the case sets a 1 MiB ring: 256
 * KiB slots).  cuMemcpy2DUnaligned: staged as cuMemcpy2D. */
static int mode_wide(void)
{
	CUstream s;
	CHECK(cuStreamCreate(&s, 0) == 0);
	struct rect r = {300 * 1024, 20, 300 * 1024 + 64, 8, 1, 301 * 1024, 0, 2};
	both(DRV, &r, s, 14);
	return 0;
}
static int mode_unaligned(void)
{
	both(DRV_UNALIGNED, &R, NULL, 15);
	return 0;
}

/* ---- 3D copies: Depth slices of H rows of w bytes ---- */
struct box {
	size_t w, H, D;
	size_t hp, hh, hx, hy, hz; /* host side: pitch, slice height, position */
	size_t dp, dh, dx, dy, dz; /* device side */
};
static size_t box_len(size_t p, size_t h, size_t z, const struct box *b)
{
	return (z + b->D) * h * p;
}
static unsigned char pat3(unsigned seed, size_t z, size_t y, size_t x,
			  const struct box *b)
{
	return pat(seed, z * b->H + y, x);
}
static void put3(unsigned char *m, size_t p, size_t h, size_t x, size_t y,
		 size_t z, const struct box *b, unsigned seed)
{
	for (size_t k = 0; k < b->D; k++)
		for (size_t i = 0; i < b->H; i++)
			for (size_t j = 0; j < b->w; j++)
				m[((z + k) * h + y + i) * p + x + j] =
				    pat3(seed, k, i, j, b);
}
/* Every byte of m: the box's pattern inside, bg outside. */
static int holds3(const unsigned char *m, size_t len, size_t p, size_t h,
		  size_t x, size_t y, size_t z, const struct box *b,
		  unsigned seed, int bg)
{
	for (size_t k = 0; k < len; k++) {
		size_t sl = k / (p * h), i = k / p % h, j = k % p;
		int in = sl >= z && sl < z + b->D && i >= y && i < y + b->H &&
			 j >= x && j < x + b->w;
		int want = in ? pat3(seed, sl - z, i - y, j - x, b) : bg;
		if (m[k] != (unsigned char)want) {
			fprintf(stderr, "byte %zu (slice %zu row %zu col %zu) "
				"is %d, not %d\n", k, sl, i, j, m[k], want);
			return 0;
		}
	}
	return 1;
}

enum api3 { D3, D3_PTSZ, D3_SYNC, D3_PTDS, R3, R3_SYNC, R3_PTSZ, R3_PTDS };
static size_t lod3; /* the driver forms' srcLOD and dstLOD */
static int synchronous3(enum api3 a)
{
	return a == D3_SYNC || a == D3_PTDS || a == R3_SYNC || a == R3_PTDS;
}
static CUresult issue3(enum api3 a, int dir, const struct box *b,
		       unsigned char *h, unsigned char *d, CUstream s)
{
	if (a >= R3) {
		struct parms3d q;
		memset(&q, 0, sizeof(q));
		struct pitched hs = {h, b->hp, b->w, b->hh};
		struct pitched ds = {d, b->dp, b->w, b->dh};
		size_t hpos[3] = {b->hx, b->hy, b->hz};
		size_t dpos[3] = {b->dx, b->dy, b->dz};
		q.src = dir == H2D ? hs : ds, q.dst = dir == H2D ? ds : hs;
		memcpy(q.spos, dir == H2D ? hpos : dpos, sizeof(hpos));
		memcpy(q.dpos, dir == H2D ? dpos : hpos, sizeof(hpos));
		q.ext[0] = b->w, q.ext[1] = b->H, q.ext[2] = b->D;
		q.kind = dir;
		switch (a) {
		case R3: return cudaMemcpy3DAsync(&q, s);
		case R3_PTSZ: return cudaMemcpy3DAsync_ptsz(&q, s);
		case R3_PTDS: return cudaMemcpy3D_ptds(&q);
		default: return cudaMemcpy3D(&q);
		}
	}
	M3D m;
	memset(&m, 0, sizeof(m));
	m.WidthInBytes = b->w, m.Height = b->H, m.Depth = b->D;
	m.srcLOD = m.dstLOD = lod3;
	if (dir == H2D) {
		m.srcMemoryType = HOST, m.srcHost = h;
		m.srcPitch = b->hp, m.srcHeight = b->hh;
		m.srcXInBytes = b->hx, m.srcY = b->hy, m.srcZ = b->hz;
		m.dstMemoryType = DEVICE, m.dstDevice = (CUdeviceptr)(uintptr_t)d;
		m.dstPitch = b->dp, m.dstHeight = b->dh;
		m.dstXInBytes = b->dx, m.dstY = b->dy, m.dstZ = b->dz;
	} else {
		m.srcMemoryType = DEVICE, m.srcDevice = (CUdeviceptr)(uintptr_t)d;
		m.srcPitch = b->dp, m.srcHeight = b->dh;
		m.srcXInBytes = b->dx, m.srcY = b->dy, m.srcZ = b->dz;
		m.dstMemoryType = HOST, m.dstHost = h;
		m.dstPitch = b->hp, m.dstHeight = b->hh;
		m.dstXInBytes = b->hx, m.dstY = b->hy, m.dstZ = b->hz;
	}
	switch (a) {
	case D3: return cuMemcpy3DAsync_v2(&m, s);
	case D3_PTSZ: return cuMemcpy3DAsync_v2_ptsz(&m, s);
	case D3_SYNC: return cuMemcpy3D_v2(&m);
	case D3_PTDS: return cuMemcpy3D_v2_ptds(&m);
	default: return -1;
	}
}

/* One H2D then one D2H of box b through api a on stream s: the H2D's
 * source overwritten right after the call, the D2H's data there on
 * return, every byte of both buffers checked. */
static void both3(enum api3 a, const struct box *b, CUstream s, unsigned seed)
{
	CUstream ws = (a == D3_PTSZ || a == R3_PTSZ) && !s ? (CUstream)0x2 : s;
	size_t hl = box_len(b->hp, b->hh, b->hz, b);
	size_t dl = box_len(b->dp, b->dh, b->dz, b);
	unsigned char *h = hostbuf(hl, 0x11), *d = devbuf(dl, 0x5a);
	put3(h, b->hp, b->hh, b->hx, b->hy, b->hz, b, seed);
	CHECK(issue3(a, H2D, b, h, d, s) == 0);
	if (synchronous3(a)) /* complete on return */
		CHECK(holds3(d, dl, b->dp, b->dh, b->dx, b->dy, b->dz, b, seed,
			     0x5a));
	memset(h, 0xee, hl); /* the source was staged: this changes nothing */
	CHECK(cuStreamSynchronize(ws) == 0);
	CHECK(cuCtxSynchronize() == 0);
	CHECK(holds3(d, dl, b->dp, b->dh, b->dx, b->dy, b->dz, b, seed, 0x5a));
	munmap(h, hl);
	h = hostbuf(hl, 0x33), d = devbuf(dl, 0x44);
	put3(d, b->dp, b->dh, b->dx, b->dy, b->dz, b, seed + 1);
	CHECK(issue3(a, D2H, b, h, d, s) == 0);
	CHECK(holds3(h, hl, b->hp, b->hh, b->hx, b->hy, b->hz, b, seed + 1,
		     0x33)); /* there on return */
	CHECK(cuStreamSynchronize(ws) == 0);
	munmap(h, hl);
}

/* 12 slices of 700 rows of 1000 bytes (8.4 MB), a subregion on both sides:
 * nonzero X, Y and Z, pitches wider than the rows, slice heights taller
 * than the box. */
static const struct box B3 = {1000, 700, 12, 1040, 705, 8, 3, 1,
			      1024, 702, 16, 1, 2};

static int mode_3d_async(void)
{
	CUstream s;
	CHECK(cuStreamCreate(&s, 0) == 0);
	both3(D3, &B3, s, 30);
	both3(D3, &B3, NULL, 31); /* legacy default stream */
	both3(D3_PTSZ, &B3, NULL, 32); /* per-thread default stream */
	both3(R3, &B3, s, 33);
	both3(R3_PTSZ, &B3, NULL, 39); /* runtime, per-thread default stream */
	return 0;
}

static int mode_3d_sync(void)
{
	both3(D3_SYNC, &B3, NULL, 34);
	both3(D3_PTDS, &B3, NULL, 35);
	both3(R3_SYNC, &B3, NULL, 36);
	both3(R3_PTDS, &B3, NULL, 40);
	return 0;
}

/* Device slices as tall as the box (hostpin's chunks then span slices):
 * a width not a multiple of 4 with packed host rows and slices; and host
 * slices taller than the box at X/Y/Z offsets. */
static int mode_3d_odd(void)
{
	CUstream s;
	CHECK(cuStreamCreate(&s, 0) == 0);
	struct box b = {1001, 333, 13, 1001, 333, 0, 0, 0, 1009, 333, 3, 0, 1};
	both3(D3, &b, s, 37);
	both3(R3_SYNC, &b, NULL, 38);
	struct box c = {1000, 700, 12, 1040, 705, 8, 3, 1, 1024, 700, 16, 0, 1};
	both3(D3, &c, s, 41);
	both3(D3_SYNC, &c, NULL, 42);
	return 0;
}

/* Passed through: a LOD not 0 (the fake ignores it). */
static int mode_3d_lod(void)
{
	lod3 = 1;
	both3(D3, &B3, NULL, 43);
	return 0;
}

/* Order on one stream: a small (unstaged) H2D before the staged 3D H2D
 * and one after, then a small D2H (which returns after its stream ran)
 * sees the three in that order. */
static int mode_3d_order(void)
{
	CUstream s;
	CHECK(cuStreamCreate(&s, 0) == 0);
	/* device side packed: the box is the buffer's first w*H*D bytes */
	struct box b = {1000, 700, 12, 1024, 700, 0, 0, 0, 1000, 700, 0, 0, 0};
	size_t n = b.w * b.H * b.D, k = 4096, hl = box_len(b.hp, b.hh, 0, &b);
	unsigned char *h = hostbuf(hl, 0), *d = devbuf(n, 0x5a);
	unsigned char *before = hostbuf(2 * k, 1), *after = hostbuf(k, 3),
		      *back = hostbuf(MB, 0);
	put3(h, b.hp, b.hh, 0, 0, 0, &b, 39);
	CHECK(cuMemcpyHtoDAsync_v2((CUdeviceptr)(uintptr_t)d, before, 2 * k,
				   s) == 0);
	CHECK(issue3(D3, H2D, &b, h, d, s) == 0);
	memset(h, 0xee, hl);
	CHECK(cuMemcpyHtoDAsync_v2((CUdeviceptr)(uintptr_t)d, after, k, s) == 0);
	CHECK(cuMemcpyDtoHAsync_v2(back, (CUdeviceptr)(uintptr_t)d, MB, s) == 0);
	for (size_t i = 0; i < MB; i++)
		CHECK(back[i] == (i < k ? 3 : pat(39, i / b.w, i % b.w)));
	CHECK(cuStreamSynchronize(s) == 0);
	return 0;
}

/* An enqueue error mid-pipeline (the case makes the third
 * cuMemcpy2DAsync_v2 fail, then the eighth: the fifth of the D2H, four
 * slices in flight): each call's result. */
static int mode_3d_error(void)
{
	CUstream s;
	CHECK(cuStreamCreate(&s, 0) == 0);
	size_t hl = box_len(B3.hp, B3.hh, B3.hz, &B3);
	size_t dl = box_len(B3.dp, B3.dh, B3.dz, &B3);
	unsigned char *h = hostbuf(hl, 1), *d = devbuf(dl, 2);
	printf("htod %d\n", issue3(D3, H2D, &B3, h, d, s));
	cuStreamSynchronize(s);
	printf("dtoh %d\n", issue3(D3, D2H, &B3, h, d, s));
	cuStreamSynchronize(s);
	return 0;
}

/* A 3D copy into a 3D array and back out of it (the fake's array: its
 * memory first in the handle, rows of Width * 4 bytes, FLOAT), data right
 * both ways: planned as any 3D copy (the array's layers one 3D DMA
 * each), staged. */
static int mode_3d_array(void)
{
	struct box b = {1000, 700, 12, 1040, 705, 8, 3, 1, 1000, 700, 0, 0, 0};
	struct { size_t w, h, d; int fmt; unsigned ch, fl; } desc = {
	    250, 700, 12, 0x20 /* FLOAT */, 1, 0};
	void *arr = NULL;
	CHECK(cuArray3DCreate_v2(&arr, &desc) == 0);
	unsigned char *mem = *(unsigned char **)arr;
	size_t hl = box_len(b.hp, b.hh, b.hz, &b);
	unsigned char *h = hostbuf(hl, 0x11);
	put3(h, b.hp, b.hh, b.hx, b.hy, b.hz, &b, 40);
	M3D m;
	memset(&m, 0, sizeof(m));
	m.srcMemoryType = HOST, m.srcHost = h, m.srcPitch = b.hp;
	m.srcHeight = b.hh, m.srcXInBytes = b.hx, m.srcY = b.hy, m.srcZ = b.hz;
	m.dstMemoryType = ARRAY, m.dstArray = arr;
	m.WidthInBytes = b.w, m.Height = b.H, m.Depth = b.D;
	CHECK(cuMemcpy3DAsync_v2(&m, NULL) == 0);
	memset(h, 0xee, hl);
	CHECK(cuStreamSynchronize(NULL) == 0);
	CHECK(holds3(mem, b.w * b.H * b.D, b.w, b.H, 0, 0, 0, &b, 40, 0));
	/* and back out of it: there on return */
	memset(&m, 0, sizeof(m));
	m.srcMemoryType = ARRAY, m.srcArray = arr;
	m.dstMemoryType = HOST, m.dstHost = h, m.dstPitch = b.hp;
	m.dstHeight = b.hh, m.dstXInBytes = b.hx, m.dstY = b.hy, m.dstZ = b.hz;
	m.WidthInBytes = b.w, m.Height = b.H, m.Depth = b.D;
	CHECK(cuMemcpy3DAsync_v2(&m, NULL) == 0);
	CHECK(holds3(h, hl, b.hp, b.hh, b.hx, b.hy, b.hz, &b, 40, 0xee));
	return 0;
}

/* Order on one stream: a staged 2D H2D, then a small (unstaged) D2H of
 * its rows on the same stream sees them: the staged DMAs went on the
 * program's stream (the fake runs a pageable D2H's stream, and only it,
 * before returning). */
static int mode_order(void)
{
	CUstream s;
	CHECK(cuStreamCreate(&s, 0) == 0);
	struct rect r = {4000, 2000, 4096, 0, 0, 4000, 0, 0};
	size_t n = r.w * r.H;
	unsigned char *h = hostbuf(n + 4096 * 2000, 0),
		      *d = devbuf(n, 0x5a), *back = hostbuf(n, 0);
	put(h, r.hp, 0, 0, &r, 17);
	CHECK(issue(DRV, H2D, &r, h, d, s) == 0);
	CHECK(cuMemcpyDtoHAsync_v2(back, (CUdeviceptr)(uintptr_t)d, MB,
				   s) == 0);
	for (size_t k = 0; k < MB; k++)
		CHECK(back[k] == pat(17, k / r.w, k % r.w));
	CHECK(cuStreamSynchronize(s) == 0);
	return 0;
}

/* An enqueue error mid-pipeline (the case makes the third
 * cuMemcpy2DAsync_v2 fail, then the eighth: the fifth of the D2H, after
 * four in flight): each call's result. */
static int mode_error(void)
{
	CUstream s;
	CHECK(cuStreamCreate(&s, 0) == 0);
	struct rect r = {3001, 30000, 3077, 7, 2, 3200, 11, 3};
	size_t hl = (r.hy + r.H) * r.hp, dl = (r.dy + r.H) * r.dp;
	unsigned char *h = hostbuf(hl, 1), *d = devbuf(dl, 2);
	printf("htod %d\n", issue(DRV, H2D, &r, h, d, s));
	cuStreamSynchronize(s);
	printf("dtoh %d\n", issue(DRV, D2H, &r, h, d, s));
	cuStreamSynchronize(s);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct staged_mode modes[] = {
	    {"async", mode_async}, {"sync", mode_sync},
	    {"odd", mode_odd},     {"big", mode_big},
	    {"unified", mode_unified}, {"wide", mode_wide},
	    {"unaligned", mode_unaligned},
	    {"order", mode_order}, {"error", mode_error},
	    {"3d_async", mode_3d_async}, {"3d_sync", mode_3d_sync},
	    {"3d_odd", mode_3d_odd}, {"3d_order", mode_3d_order},
	    {"3d_error", mode_3d_error}, {"3d_array", mode_3d_array},
	    {"3d_lod", mode_3d_lod},
	};
	return staged_main("staged2d", argc, argv, modes);
}
