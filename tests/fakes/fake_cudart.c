/* A fake CUDA runtime (libcudart.so.12) over the fake driver.  Copies run
 * later on a worker thread per stream, after FAKE_CUDA_DELAY_US, with the
 * real runtime's host-side semantics: on pageable memory an async H2D
 * returns after staging the source and an async D2H returns after the copy
 * completed; on registered memory both return at once. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

typedef int cudaError_t;
typedef int CUresult;
struct CUctx_st;
typedef struct CUctx_st *CUcontext;
enum { H2H = 0, H2D = 1, D2H = 2, D2D = 3, DEFAULT = 4 };

CUresult cuInit(unsigned);
CUresult cuDevicePrimaryCtxRetain(CUcontext *, int);
CUresult cuCtxSetCurrent(CUcontext);
CUresult cuCtxGetCurrent(CUcontext *);
CUresult cuMemHostRegister_v2(void *, size_t, unsigned);
CUresult cuMemHostUnregister(void *);
int fake_cuda_is_registered(const void *, size_t);

struct op {
	struct op *next;
	void *dst;
	const void *src;
	size_t n;
	void *staging; /* freed after the copy */
	struct event *ev;
};

struct event {
	int done;
};

typedef struct CUstream_st {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct op *head, *tail;
	int busy;
	pthread_t th;
	int started;
	int capturing; /* between cudaStreamBeginCapture and EndCapture */
} stream_t;

/* Set when a stream was synchronised while capturing: the real runtime
 * then invalidates the capture. */
static int capture_broken;
int fake_cudart_capture_broken(void) { return capture_broken; }

static stream_t default_stream = {PTHREAD_MUTEX_INITIALIZER,
				  PTHREAD_COND_INITIALIZER, 0, 0, 0, 0, 0, 0};
static pthread_mutex_t init_mu = PTHREAD_MUTEX_INITIALIZER;
static int cur_dev = -1;
static CUcontext dev_ctx;

/* Memory the fake runtime uses for itself: straight from the kernel, so
 * hostpin never sees it. */
static void *raw(size_t n)
{
	return (void *)syscall(SYS_mmap, NULL, n, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
}
static void unraw(void *p, size_t n) { syscall(SYS_munmap, p, n); }

static void *worker(void *arg)
{
	stream_t *s = arg;
	long delay = getenv("FAKE_CUDA_DELAY_US")
			 ? atol(getenv("FAKE_CUDA_DELAY_US"))
			 : 20000;
	pthread_mutex_lock(&s->mu);
	for (;;) {
		while (!s->head)
			pthread_cond_wait(&s->cv, &s->mu);
		struct op *o = s->head;
		s->busy = 1;
		pthread_mutex_unlock(&s->mu);
		usleep((useconds_t)delay);
		if (o->n)
			memcpy(o->dst, o->staging ? o->staging : o->src, o->n);
		if (o->staging)
			unraw(o->staging, o->n);
		if (o->ev)
			__atomic_store_n(&o->ev->done, 1, __ATOMIC_RELEASE);
		pthread_mutex_lock(&s->mu);
		s->head = o->next;
		if (!s->head)
			s->tail = NULL;
		s->busy = 0;
		unraw(o, sizeof(*o));
		pthread_cond_broadcast(&s->cv);
	}
	return NULL;
}

static stream_t *S(stream_t *s) { return s ? s : &default_stream; }

static void enqueue(stream_t *s, struct op *o)
{
	s = S(s);
	pthread_mutex_lock(&s->mu);
	if (!s->started) {
		s->started = 1;
		pthread_create(&s->th, NULL, worker, s);
	}
	o->next = NULL;
	if (s->tail)
		s->tail->next = o;
	else
		s->head = o;
	s->tail = o;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
}

static void drain(stream_t *s)
{
	s = S(s);
	pthread_mutex_lock(&s->mu);
	while (s->head || s->busy)
		pthread_cond_wait(&s->cv, &s->mu);
	pthread_mutex_unlock(&s->mu);
}

/* Does any queued copy touch [p, p+n)?  Read by the fake driver. */
int fake_cudart_inflight(const void *p, size_t n)
{
	stream_t *s = &default_stream;
	int hit = 0;
	pthread_mutex_lock(&s->mu);
	for (struct op *o = s->head; o; o = o->next) {
		const char *a = o->dst, *b = o->src;
		if ((a < (const char *)p + n && a + o->n > (const char *)p) ||
		    (b && b < (const char *)p + n && b + o->n > (const char *)p))
			hit = 1;
	}
	pthread_mutex_unlock(&s->mu);
	return hit;
}

static void ctx(void)
{
	CUcontext c = NULL;
	cuCtxGetCurrent(&c);
	if (c == NULL && dev_ctx)
		cuCtxSetCurrent(dev_ctx);
}

cudaError_t cudaSetDevice(int d)
{
	pthread_mutex_lock(&init_mu);
	if (cur_dev != d) {
		cuInit(0);
		cuDevicePrimaryCtxRetain(&dev_ctx, d);
		cur_dev = d;
	}
	pthread_mutex_unlock(&init_mu);
	return cuCtxSetCurrent(dev_ctx);
}

cudaError_t cudaMalloc(void **p, size_t n)
{
	ctx();
	*p = raw(n);
	return *p == MAP_FAILED ? 2 : 0;
}

cudaError_t cudaFree(void *p)
{
	(void)p; /* device memory of the fake: leaked, tests are short */
	return 0;
}

cudaError_t cudaStreamCreate(stream_t **s)
{
	*s = raw(sizeof(stream_t));
	memset(*s, 0, sizeof(stream_t));
	pthread_mutex_init(&(*s)->mu, NULL);
	pthread_cond_init(&(*s)->cv, NULL);
	return 0;
}

cudaError_t cudaStreamSynchronize(stream_t *s)
{
	if (S(s)->capturing) {
		capture_broken = 1;
		return 900; /* cudaErrorStreamCaptureUnsupported */
	}
	drain(s);
	return 0;
}

cudaError_t cudaStreamBeginCapture(stream_t *s, int mode)
{
	(void)mode;
	S(s)->capturing = 1;
	return 0;
}

cudaError_t cudaStreamEndCapture(stream_t *s, void **graph)
{
	S(s)->capturing = 0;
	*graph = NULL;
	return capture_broken ? 901 /* cudaErrorStreamCaptureInvalidated */ : 0;
}

cudaError_t cudaStreamIsCapturing(stream_t *s, int *status)
{
	*status = S(s)->capturing; /* 1: cudaStreamCaptureStatusActive */
	return 0;
}

cudaError_t cudaDeviceSynchronize(void)
{
	drain(NULL);
	return 0;
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n, int kind,
			    stream_t *s)
{
	ctx();
	struct op *o = raw(sizeof(*o));
	memset(o, 0, sizeof(*o));
	o->dst = dst, o->src = src, o->n = n;
	const void *host = kind == H2D ? src : kind == D2H ? dst : NULL;
	int pinned = host && fake_cuda_is_registered(host, n);
	if (kind == H2D && !pinned) {
		o->staging = raw(n); /* staged now: the source may change */
		memcpy(o->staging, src, n);
	}
	enqueue(s, o);
	if (kind == D2H && !pinned)
		drain(s); /* pageable D2H returns after the copy */
	return 0;
}

cudaError_t cudaMemcpyAsync_ptsz(void *dst, const void *src, size_t n,
				 int kind, stream_t *s)
{
	return cudaMemcpyAsync(dst, src, n, kind, s);
}

cudaError_t cudaMemcpy2DAsync(void *dst, size_t dp, const void *src,
			      size_t sp, size_t w, size_t h, int kind,
			      stream_t *s)
{
	for (size_t r = 0; r < h; r++)
		cudaMemcpyAsync((char *)dst + r * dp, (const char *)src + r * sp,
				w, kind, s);
	return 0;
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t n, int kind)
{
	cudaMemcpyAsync(dst, src, n, kind, NULL);
	drain(NULL);
	return 0;
}

cudaError_t cudaEventCreateWithFlags(struct event **e, unsigned flags)
{
	(void)flags;
	*e = raw(sizeof(**e));
	(*e)->done = 1;
	return 0;
}

cudaError_t cudaEventRecord(struct event *e, stream_t *s)
{
	struct op *o = raw(sizeof(*o));
	memset(o, 0, sizeof(*o));
	__atomic_store_n(&e->done, 0, __ATOMIC_RELEASE);
	o->ev = e;
	enqueue(s, o);
	return 0;
}

cudaError_t cudaEventQuery(struct event *e)
{
	return __atomic_load_n(&e->done, __ATOMIC_ACQUIRE) ? 0 : 600;
}

cudaError_t cudaEventSynchronize(struct event *e)
{
	while (!__atomic_load_n(&e->done, __ATOMIC_ACQUIRE))
		usleep(200);
	return 0;
}

cudaError_t cudaEventDestroy(struct event *e)
{
	(void)e; /* may still be queued: leaked, tests are short */
	return 0;
}

cudaError_t cudaHostRegister(void *p, size_t n, unsigned flags)
{
	ctx();
	return cuMemHostRegister_v2(p, n, flags);
}

cudaError_t cudaHostUnregister(void *p)
{
	ctx();
	return cuMemHostUnregister(p);
}

cudaError_t cudaHostAlloc(void **p, size_t n, unsigned flags)
{
	ctx();
	/* Like the real driver: its own mapping (through libc's mmap, which
	 * hostpin sees and must leave alone), then registered. */
	*p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		  -1, 0);
	if (*p == MAP_FAILED)
		return 2;
	return cuMemHostRegister_v2(*p, n, flags | 1);
}

cudaError_t cudaFreeHost(void *p)
{
	return cuMemHostUnregister(p);
}
