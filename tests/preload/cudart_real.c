/* Every host<->device copy entry point of the real CUDA 13.2 runtime
 * (PyPI's nvidia-cuda-runtime: libcudart.so.13, or libcudart_static.a
 * linked in), over the fake driver.  Each copies a 16 MiB pageable buffer
 * to the device and back and checks pageable-memory semantics: an async
 * H2D's source is overwritten right after the call and must not change what
 * arrives; an async D2H's data must be there when the call returns.  Round
 * 0 gives every entry point fresh buffers (copied once: not registered by
 * hostpin); round 1 reuses one pair (copied again and again: registered
 * after HOSTPIN_PIN_AFTER copies).  Prints "ok NAME" per entry point and
 * "skip NAME: why" where the fake driver lacks what the runtime calls;
 * exit 0 when every check held. */
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* the per-thread forms: declared by the headers only under
 * CUDA_API_PER_THREAD_DEFAULT_STREAM, exported all the same */
#define PT(ret, name, params) extern ret CUDARTAPI name params;
PT(cudaError_t, cudaMemcpy_ptds, (void *, const void *, size_t, enum cudaMemcpyKind))
PT(cudaError_t, cudaMemcpyAsync_ptsz, (void *, const void *, size_t, enum cudaMemcpyKind, cudaStream_t))
PT(cudaError_t, cudaMemcpy2D_ptds, (void *, size_t, const void *, size_t, size_t, size_t, enum cudaMemcpyKind))
PT(cudaError_t, cudaMemcpy2DAsync_ptsz, (void *, size_t, const void *, size_t, size_t, size_t, enum cudaMemcpyKind, cudaStream_t))
PT(cudaError_t, cudaMemcpy3D_ptds, (const struct cudaMemcpy3DParms *))
PT(cudaError_t, cudaMemcpy3DAsync_ptsz, (const struct cudaMemcpy3DParms *, cudaStream_t))
PT(cudaError_t, cudaMemcpy3DPeer_ptds, (const struct cudaMemcpy3DPeerParms *))
PT(cudaError_t, cudaMemcpy3DPeerAsync_ptsz, (const struct cudaMemcpy3DPeerParms *, cudaStream_t))
PT(cudaError_t, cudaMemcpyBatchAsync_ptsz, (void *const *, const void *const *, const size_t *, size_t, struct cudaMemcpyAttributes *, size_t *, size_t, cudaStream_t))
PT(cudaError_t, cudaMemcpy3DBatchAsync_ptsz, (size_t, struct cudaMemcpy3DBatchOp *, unsigned long long, cudaStream_t))
PT(cudaError_t, cudaMemcpyWithAttributesAsync_ptsz, (void *, const void *, size_t, struct cudaMemcpyAttributes *, cudaStream_t))
PT(cudaError_t, cudaMemcpy3DWithAttributesAsync_ptsz, (struct cudaMemcpy3DBatchOp *, unsigned long long, cudaStream_t))
PT(cudaError_t, cudaMemcpyToSymbol_ptds, (const void *, const void *, size_t, size_t, enum cudaMemcpyKind))
PT(cudaError_t, cudaMemcpyFromSymbol_ptds, (void *, const void *, size_t, size_t, enum cudaMemcpyKind))
PT(cudaError_t, cudaMemcpyToSymbolAsync_ptsz, (const void *, const void *, size_t, size_t, enum cudaMemcpyKind, cudaStream_t))
PT(cudaError_t, cudaMemcpyFromSymbolAsync_ptsz, (void *, const void *, size_t, size_t, enum cudaMemcpyKind, cudaStream_t))

/* (driver_functions.h's helpers, which C11 cannot include) */
static struct cudaPitchedPtr pitched(void *p, size_t pitch, size_t x, size_t y)
{
	struct cudaPitchedPtr r = {p, pitch, x, y};
	return r;
}
static struct cudaExtent extent(size_t w, size_t h, size_t d)
{
	struct cudaExtent r = {w, h, d};
	return r;
}

#define N ((size_t)16 << 20)
#define W ((size_t)4096) /* row width of the 2D/3D copies */
static int failed;
static cudaStream_t st;
#define H2D cudaMemcpyHostToDevice
#define D2H cudaMemcpyDeviceToHost

static void fill(unsigned char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i += 512)
		p[i] = (unsigned char)(seed + i / 512);
	p[n - 1] = (unsigned char)seed;
}
static int same(const unsigned char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i += 512)
		if (p[i] != (unsigned char)(seed + i / 512))
			return 0;
	return p[n - 1] == (unsigned char)seed;
}

/* One entry point's H2D and D2H.  `async`: overwrite the source right
 * after the H2D returns, and check the D2H's data before any wait. */
typedef cudaError_t (*copy_fn)(void *dst, const void *src, size_t n,
			       enum cudaMemcpyKind k, cudaStream_t s);
static void check(const char *name, copy_fn f, int async, unsigned char *h,
		  unsigned char *g, void *d, unsigned seed)
{
	fill(h, N, seed);
	memset(g, 0, N);
	cudaError_t e = f(d, h, N, H2D, st);
	if (async)
		memset(h, 0xee, N); /* the copy must have taken the old data */
	if (e == cudaSuccess && async)
		e = cudaStreamSynchronize(st);
	if (e == cudaSuccess)
		e = f(g, d, N, D2H, st);
	if (e != cudaSuccess) {
		printf("FAIL %s: %s\n", name, cudaGetErrorString(e));
		failed = 1;
		return;
	}
	/* before any wait: a D2H into pageable memory has completed */
	if (!same(g, N, seed)) {
		printf("FAIL %s: %s\n", name,
		       async ? "the source changed what arrived, or the D2H "
			       "was not complete at return"
			     : "data differs");
		failed = 1;
		cudaStreamSynchronize(st);
		return;
	}
	cudaStreamSynchronize(st);
	printf("ok %s\n", name);
}

/* ---- the entry points, in one shape ---- */
static cudaError_t c_memcpy(void *d, const void *s, size_t n,
			    enum cudaMemcpyKind k, cudaStream_t st_)
{
	(void)st_;
	return cudaMemcpy(d, s, n, k);
}
static cudaError_t c_memcpy_ptds(void *d, const void *s, size_t n,
				 enum cudaMemcpyKind k, cudaStream_t st_)
{
	(void)st_;
	return cudaMemcpy_ptds(d, s, n, k);
}
static cudaError_t c_async(void *d, const void *s, size_t n,
			   enum cudaMemcpyKind k, cudaStream_t st_)
{
	return cudaMemcpyAsync(d, s, n, k, st_);
}
static cudaError_t c_async_ptsz(void *d, const void *s, size_t n,
				enum cudaMemcpyKind k, cudaStream_t st_)
{
	(void)st_; /* the per-thread default stream */
	cudaError_t e = cudaMemcpyAsync_ptsz(d, s, n, k, 0);
	return e;
}
static cudaError_t c_2d(void *d, const void *s, size_t n,
			enum cudaMemcpyKind k, cudaStream_t st_)
{
	(void)st_;
	return cudaMemcpy2D(d, W, s, W, W, n / W, k);
}
static cudaError_t c_2d_ptds(void *d, const void *s, size_t n,
			     enum cudaMemcpyKind k, cudaStream_t st_)
{
	(void)st_;
	return cudaMemcpy2D_ptds(d, W, s, W, W, n / W, k);
}
static cudaError_t c_2da(void *d, const void *s, size_t n,
			 enum cudaMemcpyKind k, cudaStream_t st_)
{
	return cudaMemcpy2DAsync(d, W, s, W, W, n / W, k, st_);
}
static cudaError_t c_2da_ptsz(void *d, const void *s, size_t n,
			      enum cudaMemcpyKind k, cudaStream_t st_)
{
	(void)st_;
	return cudaMemcpy2DAsync_ptsz(d, W, s, W, W, n / W, k, 0);
}
static struct cudaMemcpy3DParms p3(void *d, const void *s, size_t n,
				   enum cudaMemcpyKind k)
{
	struct cudaMemcpy3DParms p;
	memset(&p, 0, sizeof(p));
	p.srcPtr = pitched((void *)s, W, W, 64);
	p.dstPtr = pitched(d, W, W, 64);
	p.extent = extent(W, 64, n / W / 64);
	p.kind = k;
	return p;
}
static struct cudaMemcpy3DPeerParms p3peer(void *d, const void *s, size_t n)
{
	struct cudaMemcpy3DPeerParms p;
	memset(&p, 0, sizeof(p));
	p.srcPtr = pitched((void *)s, W, W, 64);
	p.dstPtr = pitched(d, W, W, 64);
	p.extent = extent(W, 64, n / W / 64);
	return p;
}
static cudaError_t c_3d(void *d, const void *s, size_t n,
			enum cudaMemcpyKind k, cudaStream_t st_)
{
	(void)st_;
	struct cudaMemcpy3DParms p = p3(d, s, n, k);
	return cudaMemcpy3D(&p);
}
static cudaError_t c_3d_ptds(void *d, const void *s, size_t n,
			     enum cudaMemcpyKind k, cudaStream_t st_)
{
	(void)st_;
	struct cudaMemcpy3DParms p = p3(d, s, n, k);
	return cudaMemcpy3D_ptds(&p);
}
static cudaError_t c_3da(void *d, const void *s, size_t n,
			 enum cudaMemcpyKind k, cudaStream_t st_)
{
	struct cudaMemcpy3DParms p = p3(d, s, n, k);
	return cudaMemcpy3DAsync(&p, st_);
}
static cudaError_t c_3da_ptsz(void *d, const void *s, size_t n,
			      enum cudaMemcpyKind k, cudaStream_t st_)
{
	(void)st_;
	struct cudaMemcpy3DParms p = p3(d, s, n, k);
	return cudaMemcpy3DAsync_ptsz(&p, 0);
}
static cudaError_t c_3dpeer(void *d, const void *s, size_t n,
			    enum cudaMemcpyKind k, cudaStream_t st_)
{
	(void)st_, (void)k;
	struct cudaMemcpy3DPeerParms p = p3peer(d, s, n);
	return cudaMemcpy3DPeer(&p);
}
static cudaError_t c_3dpeer_ptds(void *d, const void *s, size_t n,
				 enum cudaMemcpyKind k, cudaStream_t st_)
{
	(void)st_, (void)k;
	struct cudaMemcpy3DPeerParms p = p3peer(d, s, n);
	return cudaMemcpy3DPeer_ptds(&p);
}
static cudaError_t c_3dpeera(void *d, const void *s, size_t n,
			     enum cudaMemcpyKind k, cudaStream_t st_)
{
	(void)k;
	struct cudaMemcpy3DPeerParms p = p3peer(d, s, n);
	return cudaMemcpy3DPeerAsync(&p, st_);
}
static cudaError_t c_3dpeera_ptsz(void *d, const void *s, size_t n,
				  enum cudaMemcpyKind k, cudaStream_t st_)
{
	(void)st_, (void)k;
	struct cudaMemcpy3DPeerParms p = p3peer(d, s, n);
	return cudaMemcpy3DPeerAsync_ptsz(&p, 0);
}
static struct cudaMemcpyAttributes attrs(void)
{
	struct cudaMemcpyAttributes a;
	memset(&a, 0, sizeof(a));
	a.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
	return a;
}
static cudaError_t c_batch(void *d, const void *s, size_t n,
			   enum cudaMemcpyKind k, cudaStream_t st_)
{
	(void)k;
	void *ds[2] = {d, (char *)d + n / 2};
	const void *ss[2] = {s, (const char *)s + n / 2};
	size_t ns[2] = {n / 2, n / 2}, idx = 0;
	struct cudaMemcpyAttributes a = attrs();
	return cudaMemcpyBatchAsync(ds, ss, ns, 2, &a, &idx, 1, st_);
}
static cudaError_t c_batch_ptsz(void *d, const void *s, size_t n,
				enum cudaMemcpyKind k, cudaStream_t st_)
{
	(void)k, (void)st_;
	void *ds[2] = {d, (char *)d + n / 2};
	const void *ss[2] = {s, (const char *)s + n / 2};
	size_t ns[2] = {n / 2, n / 2}, idx = 0;
	struct cudaMemcpyAttributes a = attrs();
	return cudaMemcpyBatchAsync_ptsz(ds, ss, ns, 2, &a, &idx, 1, 0);
}
static struct cudaMemcpy3DBatchOp op3(void *d, const void *s, size_t n)
{
	struct cudaMemcpy3DBatchOp o;
	memset(&o, 0, sizeof(o));
	o.src.type = o.dst.type = cudaMemcpyOperandTypePointer;
	o.src.op.ptr.ptr = (void *)s, o.dst.op.ptr.ptr = d;
	o.src.op.ptr.rowLength = o.dst.op.ptr.rowLength = W;
	o.src.op.ptr.layerHeight = o.dst.op.ptr.layerHeight = 64;
	o.extent = extent(W, 64, n / W / 64);
	o.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
	return o;
}
static cudaError_t c_3dbatch(void *d, const void *s, size_t n,
			     enum cudaMemcpyKind k, cudaStream_t st_)
{
	(void)k;
	struct cudaMemcpy3DBatchOp o = op3(d, s, n);
	return cudaMemcpy3DBatchAsync(1, &o, 0, st_);
}
static cudaError_t c_3dbatch_ptsz(void *d, const void *s, size_t n,
				  enum cudaMemcpyKind k, cudaStream_t st_)
{
	(void)k, (void)st_;
	struct cudaMemcpy3DBatchOp o = op3(d, s, n);
	return cudaMemcpy3DBatchAsync_ptsz(1, &o, 0, 0);
}
static cudaError_t c_attr(void *d, const void *s, size_t n,
			  enum cudaMemcpyKind k, cudaStream_t st_)
{
	(void)k;
	struct cudaMemcpyAttributes a = attrs();
	return cudaMemcpyWithAttributesAsync(d, s, n, &a, st_);
}
static cudaError_t c_attr_ptsz(void *d, const void *s, size_t n,
			       enum cudaMemcpyKind k, cudaStream_t st_)
{
	(void)k, (void)st_;
	struct cudaMemcpyAttributes a = attrs();
	return cudaMemcpyWithAttributesAsync_ptsz(d, s, n, &a, 0);
}
static cudaError_t c_3dattr(void *d, const void *s, size_t n,
			    enum cudaMemcpyKind k, cudaStream_t st_)
{
	(void)k;
	struct cudaMemcpy3DBatchOp o = op3(d, s, n);
	return cudaMemcpy3DWithAttributesAsync(&o, 0, st_);
}
static cudaError_t c_3dattr_ptsz(void *d, const void *s, size_t n,
				 enum cudaMemcpyKind k, cudaStream_t st_)
{
	(void)k, (void)st_;
	struct cudaMemcpy3DBatchOp o = op3(d, s, n);
	return cudaMemcpy3DWithAttributesAsync_ptsz(&o, 0, 0);
}

/* ---- __device__ variables: what nvcc's generated code registers ---- */
extern void **__cudaRegisterFatBinary(void *);
extern void __cudaRegisterFatBinaryEnd(void **);
extern void __cudaRegisterVar(void **, char *, char *, const char *, int,
			      size_t, int, int);
static char sym[N]; /* the host shadow of a __device__ char sym[16 MiB] */
static int symbols_registered(void)
{
	/* a fatbin with no code: the fake driver loads anything */
	static const unsigned long long fatbin[2] = {0x00000010ba55ed50ULL, 0};
	static struct {
		unsigned magic, version;
		const void *data, *unused;
	} wrapper = {0x466243b1, 1, fatbin, NULL};
	void **h = __cudaRegisterFatBinary(&wrapper);
	if (!h)
		return 0;
	__cudaRegisterVar(h, sym, (char *)"sym", "sym", 0, N, 0, 0);
	__cudaRegisterFatBinaryEnd(h);
	return 1;
}
static cudaError_t c_sym(void *d, const void *s, size_t n,
			 enum cudaMemcpyKind k, cudaStream_t st_)
{
	(void)st_;
	return k == H2D ? cudaMemcpyToSymbol(sym, s, n, 0, k)
			: cudaMemcpyFromSymbol(d, sym, n, 0, k);
}
static cudaError_t c_sym_ptds(void *d, const void *s, size_t n,
			      enum cudaMemcpyKind k, cudaStream_t st_)
{
	(void)st_;
	return k == H2D ? cudaMemcpyToSymbol_ptds(sym, s, n, 0, k)
			: cudaMemcpyFromSymbol_ptds(d, sym, n, 0, k);
}
static cudaError_t c_syma(void *d, const void *s, size_t n,
			  enum cudaMemcpyKind k, cudaStream_t st_)
{
	return k == H2D ? cudaMemcpyToSymbolAsync(sym, s, n, 0, k, st_)
			: cudaMemcpyFromSymbolAsync(d, sym, n, 0, k, st_);
}
static cudaError_t c_syma_ptsz(void *d, const void *s, size_t n,
			       enum cudaMemcpyKind k, cudaStream_t st_)
{
	(void)st_;
	return k == H2D ? cudaMemcpyToSymbolAsync_ptsz(sym, s, n, 0, k, 0)
			: cudaMemcpyFromSymbolAsync_ptsz(d, sym, n, 0, k, 0);
}

static const struct entry {
	const char *name;
	copy_fn f;
	int async;
	const char *needs; /* a driver entry point the fake may lack */
} entries[] = {
	{"cudaMemcpy", c_memcpy, 0, NULL},
	{"cudaMemcpy_ptds", c_memcpy_ptds, 0, NULL},
	{"cudaMemcpyAsync", c_async, 1, NULL},
	{"cudaMemcpyAsync_ptsz", c_async_ptsz, 1, NULL},
	{"cudaMemcpy2D", c_2d, 0, NULL},
	{"cudaMemcpy2D_ptds", c_2d_ptds, 0, NULL},
	{"cudaMemcpy2DAsync", c_2da, 1, NULL},
	{"cudaMemcpy2DAsync_ptsz", c_2da_ptsz, 1, NULL},
	{"cudaMemcpy3D", c_3d, 0, NULL},
	{"cudaMemcpy3D_ptds", c_3d_ptds, 0, NULL},
	{"cudaMemcpy3DAsync", c_3da, 1, NULL},
	{"cudaMemcpy3DAsync_ptsz", c_3da_ptsz, 1, NULL},
	{"cudaMemcpy3DPeer", c_3dpeer, 0, NULL},
	{"cudaMemcpy3DPeer_ptds", c_3dpeer_ptds, 0, NULL},
	{"cudaMemcpy3DPeerAsync", c_3dpeera, 1, NULL},
	{"cudaMemcpy3DPeerAsync_ptsz", c_3dpeera_ptsz, 1, NULL},
	{"cudaMemcpyBatchAsync", c_batch, 1, NULL},
	{"cudaMemcpyBatchAsync_ptsz", c_batch_ptsz, 1, NULL},
	{"cudaMemcpy3DBatchAsync", c_3dbatch, 1, NULL},
	{"cudaMemcpy3DBatchAsync_ptsz", c_3dbatch_ptsz, 1, NULL},
	{"cudaMemcpyWithAttributesAsync", c_attr, 1, "cuMemcpyWithAttributesAsync"},
	{"cudaMemcpyWithAttributesAsync_ptsz", c_attr_ptsz, 1, "cuMemcpyWithAttributesAsync_ptsz"},
	{"cudaMemcpy3DWithAttributesAsync", c_3dattr, 1, "cuMemcpy3DWithAttributesAsync"},
	{"cudaMemcpy3DWithAttributesAsync_ptsz", c_3dattr_ptsz, 1, "cuMemcpy3DWithAttributesAsync_ptsz"},
	{"cudaMemcpyToSymbol/FromSymbol", c_sym, 0, "symbols"},
	{"cudaMemcpyToSymbol/FromSymbol_ptds", c_sym_ptds, 0, "symbols"},
	{"cudaMemcpyToSymbolAsync/FromSymbolAsync", c_syma, 1, "symbols"},
	{"cudaMemcpyToSymbolAsync/FromSymbolAsync_ptsz", c_syma_ptsz, 1, "symbols"},
};

int main(void)
{
	int have_symbols = symbols_registered();
	int n = 0;
	cudaError_t e = cudaGetDeviceCount(&n);
	void *d = NULL;
	if (e == cudaSuccess)
		e = cudaMalloc(&d, N);
	if (e == cudaSuccess)
		e = cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking);
	if (e != cudaSuccess) {
		printf("FAIL runtime start: %s\n", cudaGetErrorString(e));
		return 1;
	}
	int rt = 0;
	cudaRuntimeGetVersion(&rt);
	printf("runtime %d, %d devices\n", rt, n);
	void *drv = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	unsigned char *h1 = malloc(N), *g1 = malloc(N);
	unsigned seed = 1;
	for (int round = 0; round < 2; round++)
		for (size_t i = 0; i < sizeof(entries) / sizeof(entries[0]);
		     i++) {
			const struct entry *x = &entries[i];
			if (x->needs && strcmp(x->needs, "symbols") == 0 &&
			    !have_symbols) {
				printf("skip %s: no variable registered\n", x->name);
				continue;
			}
			if (x->needs && strcmp(x->needs, "symbols") &&
			    !(drv && dlsym(drv, x->needs))) {
				printf("skip %s: the driver lacks %s\n", x->name,
				       x->needs);
				continue;
			}
			unsigned char *h = round ? h1 : malloc(N);
			unsigned char *g = round ? g1 : malloc(N);
			check(x->name, x->f, x->async, h, g, d, seed++);
			/* nothing of theirs may still be queued when they are
			 * freed: a copy hostpin left running would write into
			 * memory reused since */
			cudaDeviceSynchronize();
			if (!round)
				free(h), free(g);
		}
	free(h1), free(g1);
	cudaFree(d);
	return failed;
}
