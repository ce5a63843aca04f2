/* 3D peer copies (cuMemcpy3DPeerAsync and _ptsz, cuMemcpy3DPeer and
 * _ptds) between blocks of hostpin's (the case sets HOSTPIN_THRESHOLD
 * low: a fresh block, pending, its first copy) and the fake device, run
 * under hostpin.
 *   peer3d MODE
 * here:  contexts NULL or the one current on this thread: the 3D copy it
 *        is (the case wants it staged);
 * other: contexts that are not this thread's: device 1's primary context
 *        named from a thread where device 0's is current; device 0's named
 *        from a thread where device 1's is current; contexts NULL from a
 *        thread with none current (the case wants each passed through).
 * Each mode checks every byte of both buffers and the semantics of
 * pageable memory (an async H2D's source overwritten at return changes
 * nothing, a D2H's data there at return) and prints "copies N": the copies
 * it made (the case counts the pageable ones the fake saw). */
#include <pthread.h>

#include "staged_common.h"

CUresult cuMemcpy3DPeerAsync(const M3D *, CUstream);
CUresult cuMemcpy3DPeerAsync_ptsz(const M3D *, CUstream);
CUresult cuMemcpy3DPeer(const M3D *);
CUresult cuMemcpy3DPeer_ptds(const M3D *);

/* 4 slices of 700 rows of 1600 bytes (4.5 MB), at X/Y/Z offsets on both
 * sides, pitches wider than the rows, slices taller than the box. */
enum { W = 1600, HR = 700, DZ = 4 };
enum { HP = 1664, HH = 705, HX = 8, HY = 3, HZ = 1 };
enum { DP = 1700, DH = 702, DX = 16, DY = 1, DZZ = 2 };
#define HLEN ((size_t)HP * HH * (HZ + DZ))
#define DLEN ((size_t)DP * DH * (DZZ + DZ))

static int copies;

static unsigned char pat(unsigned seed, size_t z, size_t y, size_t x)
{
	uint32_t h = (uint32_t)(z * HR + y) * 0x9E3779B1u ^
		     (uint32_t)x * 0x85EBCA77u ^ seed * 0xC2B2AE3Du;
	h ^= h >> 15;
	return (unsigned char)(h * 0x2C1B3C6Du >> 24);
}
static void put(unsigned char *b, size_t p, size_t sh, size_t x0, size_t y0,
		size_t z0, unsigned seed)
{
	for (size_t z = 0; z < DZ; z++)
		for (size_t y = 0; y < HR; y++)
			for (size_t x = 0; x < W; x++)
				b[((z0 + z) * sh + y0 + y) * p + x0 + x] =
				    pat(seed, z, y, x);
}
/* the box holds seed's pattern, every other byte of the n is bg */
static int holds(const unsigned char *b, size_t n, size_t p, size_t sh,
		 size_t x0, size_t y0, size_t z0, unsigned seed, int bg)
{
	for (size_t i = 0; i < n; i++) {
		size_t z = i / (p * sh), y = i / p % sh, x = i % p;
		int in = z >= z0 && z < z0 + DZ && y >= y0 && y < y0 + HR &&
			 x >= x0 && x < x0 + W;
		int want = in ? pat(seed, z - z0, y - y0, x - x0) : bg;
		if (b[i] != want) {
			fprintf(stderr, "byte %zu: %d, not %d\n", i, b[i], want);
			return 0;
		}
	}
	return 1;
}

enum form { ASYNC, PTSZ, SYNC, PTDS };
/* One peer copy of the box, H2D (h to d) or D2H, its contexts sc, dc. */
static CUresult peer(enum form f, int dir, unsigned char *h, unsigned char *d,
		     CUcontext sc, CUcontext dc, CUstream s)
{
	M3D m;
	memset(&m, 0, sizeof(m));
	m.WidthInBytes = W, m.Height = HR, m.Depth = DZ;
	m.reserved0 = sc, m.reserved1 = dc; /* srcContext, dstContext */
	if (dir == H2D) {
		m.srcMemoryType = HOST, m.srcHost = h;
		m.srcPitch = HP, m.srcHeight = HH;
		m.srcXInBytes = HX, m.srcY = HY, m.srcZ = HZ;
		m.dstMemoryType = DEVICE, m.dstDevice = (CUdeviceptr)(uintptr_t)d;
		m.dstPitch = DP, m.dstHeight = DH;
		m.dstXInBytes = DX, m.dstY = DY, m.dstZ = DZZ;
	} else {
		m.srcMemoryType = DEVICE, m.srcDevice = (CUdeviceptr)(uintptr_t)d;
		m.srcPitch = DP, m.srcHeight = DH;
		m.srcXInBytes = DX, m.srcY = DY, m.srcZ = DZZ;
		m.dstMemoryType = HOST, m.dstHost = h;
		m.dstPitch = HP, m.dstHeight = HH;
		m.dstXInBytes = HX, m.dstY = HY, m.dstZ = HZ;
	}
	copies++;
	switch (f) {
	case ASYNC: return cuMemcpy3DPeerAsync(&m, s);
	case PTSZ: return cuMemcpy3DPeerAsync_ptsz(&m, s);
	case SYNC: return cuMemcpy3DPeer(&m);
	default: return cuMemcpy3DPeer_ptds(&m);
	}
}

/* A fresh block of hostpin's (malloc above HOSTPIN_THRESHOLD), every byte
 * bg; device memory of the fake, every byte bg. */
static unsigned char *hostblk(int bg)
{
	unsigned char *p = malloc(HLEN);
	CHECK(p != NULL);
	memset(p, bg, HLEN);
	return p;
}
static unsigned char *devbuf(int bg)
{
	unsigned char *p = D(dev(DLEN));
	memset(p, bg, DLEN);
	return p;
}

/* One H2D then one D2H through form f with contexts sc, dc on stream s. */
static void both(enum form f, CUcontext sc, CUcontext dc, CUstream s,
		 unsigned seed)
{
	CUstream ws = f == PTSZ && !s ? (CUstream)0x2 : s;
	unsigned char *h = hostblk(0x11), *d = devbuf(0x5a);
	put(h, HP, HH, HX, HY, HZ, seed);
	CHECK(peer(f, H2D, h, d, sc, dc, s) == 0);
	memset(h, 0xee, HLEN); /* pageable semantics: this changes nothing */
	CHECK(cuStreamSynchronize(ws) == 0);
	CHECK(holds(d, DLEN, DP, DH, DX, DY, DZZ, seed, 0x5a));
	free(h);
	h = hostblk(0x33), d = devbuf(0x44);
	put(d, DP, DH, DX, DY, DZZ, seed + 1);
	CHECK(peer(f, D2H, h, d, sc, dc, s) == 0);
	CHECK(holds(h, HLEN, HP, HH, HX, HY, HZ, seed + 1, 0x33));
	CHECK(cuStreamSynchronize(ws) == 0);
	free(h);
}

static int mode_here(void)
{
	CUstream s;
	CHECK(cuStreamCreate(&s, 0) == 0);
	both(ASYNC, NULL, NULL, s, 1);
	both(ASYNC, ctx, NULL, NULL, 3);
	both(PTSZ, NULL, ctx, NULL, 5);
	both(SYNC, ctx, ctx, NULL, 7);
	both(PTDS, NULL, NULL, NULL, 9);
	printf("copies %d\n", copies);
	return 0;
}

/* ctx1: device 1's primary context, retained, current on no thread of
 * the program's but the one below. */
static CUcontext ctx1;
static void *other_thread(void *arg)
{
	(void)arg;
	CHECK(cuCtxSetCurrent(ctx1) == 0);
	both(ASYNC, ctx, NULL, NULL, 21); /* device 0's, from device 1's */
	both(SYNC, NULL, ctx, NULL, 23);
	return NULL;
}
static void *no_ctx_thread(void *arg)
{
	(void)arg;
	both(SYNC, NULL, NULL, NULL, 25);
	return NULL;
}
static int mode_other(void)
{
	CHECK(cuDevicePrimaryCtxRetain(&ctx1, 1) == 0);
	CUstream s;
	CHECK(cuStreamCreate(&s, 0) == 0);
	both(ASYNC, ctx1, NULL, s, 11);
	both(PTSZ, NULL, ctx1, NULL, 13);
	both(SYNC, ctx1, ctx1, NULL, 15);
	both(PTDS, ctx, ctx1, NULL, 17);
	pthread_t t;
	CHECK(pthread_create(&t, NULL, other_thread, NULL) == 0);
	CHECK(pthread_join(t, NULL) == 0);
	CHECK(pthread_create(&t, NULL, no_ctx_thread, NULL) == 0);
	CHECK(pthread_join(t, NULL) == 0);
	printf("copies %d\n", copies);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct staged_mode modes[] = {
	    {"here", mode_here}, {"other", mode_other}};
	return staged_main("peer3d", argc, argv, modes);
}
