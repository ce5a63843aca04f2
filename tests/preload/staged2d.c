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
cudaError_t cudaMemcpy2D(void *, size_t, const void *, size_t, size_t, size_t,
			 int);
cudaError_t cudaMemcpy2DAsync(void *, size_t, const void *, size_t, size_t,
			      size_t, int, CUstream);

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
 * KiB slots), and cuMemcpy2DUnaligned. */
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

/* Passed through: a 3D copy from pitched host memory (2 x 2000 rows of
 * 4000 bytes). */
static int mode_3d(void)
{
	size_t w = 4000, H = 2000, D = 2, hp = 4096, hh = 2001, dp = 4224;
	size_t hl = hp * hh * D, dl = dp * H * D;
	unsigned char *h = hostbuf(hl, 0x11), *d = devbuf(dl, 0x5a);
	for (size_t z = 0; z < D; z++)
		for (size_t y = 0; y < H; y++)
			for (size_t x = 0; x < w; x++)
				h[(z * hh + y) * hp + x] = pat(16, z * H + y, x);
	M3D m;
	memset(&m, 0, sizeof(m));
	m.srcMemoryType = HOST, m.srcHost = h, m.srcPitch = hp;
	m.srcHeight = hh;
	m.dstMemoryType = DEVICE, m.dstDevice = (CUdeviceptr)(uintptr_t)d;
	m.dstPitch = dp, m.dstHeight = H;
	m.WidthInBytes = w, m.Height = H, m.Depth = D;
	CHECK(cuMemcpy3DAsync_v2(&m, NULL) == 0);
	memset(h, 0xee, hl);
	CHECK(cuStreamSynchronize(NULL) == 0);
	for (size_t z = 0; z < D; z++)
		for (size_t y = 0; y < H; y++)
			for (size_t x = 0; x < w; x++)
				CHECK(d[(z * H + y) * dp + x] ==
				      pat(16, z * H + y, x));
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
	    {"unaligned", mode_unaligned}, {"3d", mode_3d},
	    {"order", mode_order}, {"error", mode_error},
	};
	return staged_main("staged2d", argc, argv, modes);
}
