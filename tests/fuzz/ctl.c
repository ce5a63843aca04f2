/* engine_fuzz: streams, synchronisation, the program's registrations,
 * capture, contexts.
 *   stream sN DEV          a stream made in device DEV's primary context
 *   sync S | query S | event S | ctxsync | syncall
 *   reg bN OFF LEN FLAGS | unreg bN OFF  (OFF from bN's first page boundary)
 *   capbegin S MODE | capend S
 *   reset DEV | ctxrelease DEV | destroy DEV   (the program's registrations
 *                          given back first; the context retained again)
 *   cur DEV                the current context: device DEV's primary
 *   hold S K | release K   S held until some thread releases K (late mode)
 *   probe bN               hostpin calls bN registered: is it, with the driver?
 * (run.c: fail FN N CODE, barrier, nap MS, fork K) */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dlfcn.h>
#include <sys/mman.h>

#include "../../preload/hostpin.h"

#include "fz.h"

typedef int CUresult;
typedef void *CUstream;
typedef void *CUcontext;
typedef void *CUevent;
CUresult cuInit(unsigned);
CUresult cuDevicePrimaryCtxRetain(CUcontext *, int);
CUresult cuDevicePrimaryCtxReset_v2(int);
CUresult cuDevicePrimaryCtxRelease_v2(int);
CUresult cuCtxDestroy_v2(CUcontext);
CUresult cuCtxSetCurrent(CUcontext);
CUresult cuCtxPushCurrent_v2(CUcontext);
CUresult cuCtxPopCurrent_v2(CUcontext *);
CUresult cuCtxSynchronize(void);
CUresult cuStreamCreate(CUstream *, unsigned);
CUresult cuStreamSynchronize(CUstream);
CUresult cuStreamQuery(CUstream);
CUresult cuStreamBeginCapture_v2(CUstream, int);
CUresult cuStreamEndCapture(CUstream, void **);
CUresult cuEventCreate(CUevent *, unsigned);
CUresult cuEventRecord(CUevent, CUstream);
CUresult cuEventSynchronize(CUevent);
CUresult cuEventQuery(CUevent);
CUresult cuEventDestroy_v2(CUevent);
CUresult cuMemHostRegister_v2(void *, size_t, unsigned);
CUresult cuMemHostUnregister(void *);
void fake_cuda_fail_exempt(int on);
size_t fake_cuda_registered_bytes(const void *p, size_t n);
void *fake_cuda_stream_self(CUstream s);
int fake_cuda_stream_hold(CUstream s);
void fake_cuda_stream_release(CUstream s);
static CUstream held[8];

static CUcontext ctx[2];
static CUstream streams[FZ_MAXB];
static int owner[FZ_MAXB], capturing[FZ_MAXB];
static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static struct { char *p; int b; size_t off, n; } regs[256];
static int nregs;

/* Whether host bytes [e0, e1) of buffer b (offsets from its start) may
 * cross an end of one of the program's registrations of b in one
 * allocator's layout and not in the other's: a registration's offsets
 * count from b's first page boundary (fz_op_ctl), 0 to 4095 bytes past
 * its start.  With a driver refusing ranges partly registered
 * (FAKE_CUDA_REFUSE_PARTIAL=1) such a copy's return code depends on the
 * layout, not on hostpin (found/reg-trimmed-partial-96527192.prog). */
/* Every reg op of the program, whichever thread makes it (parse, run.c):
 * whether a copy comes near an end of one must not depend on whether
 * another thread's registration happened yet (the runs with and without
 * hostpin interleave differently: a copy skipped in one and made in the
 * other was a finding of the tester's own, regress-diff-c-96518885) */
static struct { int b; size_t off, n; } sregs[1024];
static int nsregs;

void fz_reg_static(int b, size_t off, size_t n)
{
	if (nsregs < 1024)
		sregs[nsregs].b = b, sregs[nsregs].off = off,
		sregs[nsregs++].n = n;
}

/* [e0, e1) (offsets from the buffer's start) within a page of an end of
 * one of the program's registrations of buffer b (its offsets count from
 * the first page boundary, its length cut at the buffer's last page:
 * both ends, as made or as cut, count) */
int fz_reg_near(int b, size_t e0, size_t e1)
{
	size_t use = fz_host[b].n > 4096 ? fz_host[b].n - 4096 : 0;
	for (int i = 0; i < nsregs; i++) {
		if (sregs[i].b != b)
			continue;
		size_t a = sregs[i].off, z = a + sregs[i].n;
		size_t ends[3] = {a, z, use};
		for (int k = 0; k < 3; k++)
			if (e0 < ends[k] + 4096 && e1 > ends[k])
				return 1;
	}
	return 0;
}

CUstream fz_stream(const char *name)
{
	if (!name || name[0] == 'L')
		return NULL;
	if (name[0] == 'P')
		return (CUstream)2;
	return streams[atoi(name + 1) % FZ_MAXB];
}

void fz_init_driver(void)
{
	cuInit(0);
	cuDevicePrimaryCtxRetain(&ctx[0], 0);
	cuDevicePrimaryCtxRetain(&ctx[1], 1);
}

void fz_thread_start(struct fz_thread *t)
{
	(void)t;
	fake_cuda_fail_exempt(1);
	cuCtxSetCurrent(ctx[0]);
}

/* Every stream this thread may have used, synchronised (but one it is
 * capturing on). */
void fz_sync_mine(struct fz_thread *t)
{
	cuStreamSynchronize(NULL);
	cuStreamSynchronize((CUstream)2);
	for (int i = 0; i < FZ_MAXB; i++)
		if (streams[i] && owner[i] == t->id && !capturing[i])
			cuStreamSynchronize(streams[i]);
}

void fz_final(int inflight)
{
	if (inflight)
		return;
	cuCtxSetCurrent(ctx[0]);
	cuCtxSynchronize();
	for (int i = 0; i < nregs; i++)
		cuMemHostUnregister(regs[i].p);
	nregs = 0;
	for (int i = 0; i < FZ_MAXB; i++) { /* every block given back */
		struct fz_buf *b = &fz_host[i];
		if (b->p && b->kind == 4)
			munmap(b->p, fz_mapped(b));
		else if (b->p)
			free(b->p);
		b->p = NULL;
	}
}

static void forget_regs(void)
{
	pthread_mutex_lock(&reg_mu);
	for (int i = 0; i < nregs; i++)
		fz_host[regs[i].b].regs = 0;
	nregs = 0;
	pthread_mutex_unlock(&reg_mu);
}

int fz_op_ctl(struct fz_thread *t, struct fz_op *o)
{
	const char *op = o->tok[0];
	int ln = o->line;
	const char *a1 = o->tok[1] ? o->tok[1] : "L";
	CUresult r = 0;
	if (!strcmp(op, "stream")) {
		int i = atoi(a1 + 1) % FZ_MAXB, dev = (int)fz_num(o->tok[2]) & 1;
		CUcontext c;
		cuCtxPushCurrent_v2(ctx[dev]);
		r = cuStreamCreate(&streams[i], 0);
		cuCtxPopCurrent_v2(&c);
		owner[i] = t->id;
	} else if (!strcmp(op, "sync"))
		r = cuStreamSynchronize(fz_stream(a1));
	else if (!strcmp(op, "query")) {
		for (int i = 0; i < 1000000; i++)
			if ((r = cuStreamQuery(fz_stream(a1))) != 600)
				break;
	} else if (!strcmp(op, "event")) {
		CUevent e = NULL;
		r = cuEventCreate(&e, 0);
		CUresult r2 = r ? r : cuEventRecord(e, fz_stream(a1));
		CUresult r3 = r2;
		if (!r2 && fz_num(o->tok[2]))
			for (int i = 0; i < 1000000; i++)
				if ((r3 = cuEventQuery(e)) != 600)
					break;
		if (!r2 && !fz_num(o->tok[2]))
			r3 = cuEventSynchronize(e);
		if (e)
			cuEventDestroy_v2(e);
		fz_printf(t, "%d event %d %d %d\n", ln, r, r2, r3);
		return 0;
	} else if (!strcmp(op, "ctxsync"))
		r = cuCtxSynchronize();
	else if (!strcmp(op, "syncall"))
		fz_sync_mine(t);
	else if (!strcmp(op, "reg") || !strcmp(op, "unreg")) {
		int b = atoi(a1 + 1) % FZ_MAXB;
		struct fz_buf *h = &fz_host[b];
		/* OFF counts from the buffer's first page boundary, and the
		 * last page is left out: the driver registers whole pages, so
		 * pieces that share a page in one allocator's layout (glibc's
		 * 16-byte chunk header) share one in the other's (hostpin's
		 * page-aligned blocks) too: the same pieces collide, the
		 * same return codes */
		size_t off = (size_t)fz_num(o->tok[2]);
		char *base = h->p ? (char *)(((uintptr_t)h->p + 4095) &
					      ~(uintptr_t)4095) : NULL;
		size_t use = h->p && h->n > 4096 ? h->n - 4096 : 0;
		if (!h->p || off >= use)
			return fz_printf(t, "%d %s skip\n", ln, op), 0;
		char *p = base + off;
		if (op[0] == 'r') {
			size_t n = (size_t)fz_num(o->tok[3]);
			if (n > use - off)
				n = use - off;
			r = cuMemHostRegister_v2(p, n, (unsigned)fz_num(o->tok[4]));
			if (!r) {
				pthread_mutex_lock(&reg_mu);
				if (nregs < 256)
					regs[nregs].p = p, regs[nregs].off = off,
					regs[nregs].n = n, regs[nregs++].b = b;
				__atomic_add_fetch(&h->regs, 1, __ATOMIC_SEQ_CST);
				pthread_mutex_unlock(&reg_mu);
			}
		} else {
			fz_sync_mine(t); /* none of its copies in flight */
			r = cuMemHostUnregister(p);
			pthread_mutex_lock(&reg_mu);
			for (int i = 0; i < nregs; i++)
				if (regs[i].p == p) {
					regs[i] = regs[--nregs];
					__atomic_sub_fetch(&h->regs, 1, __ATOMIC_SEQ_CST);
					break;
				}
			pthread_mutex_unlock(&reg_mu);
		}
	} else if (!strcmp(op, "capbegin")) {
		r = cuStreamBeginCapture_v2(fz_stream(a1), (int)fz_num(o->tok[2]));
		if (!r && a1[0] == 's')
			capturing[atoi(a1 + 1) % FZ_MAXB] = 1;
	} else if (!strcmp(op, "capend")) {
		void *g = NULL;
		r = cuStreamEndCapture(fz_stream(a1), &g);
		if (a1[0] == 's')
			capturing[atoi(a1 + 1) % FZ_MAXB] = 0;
	} else if (!strcmp(op, "reset") || !strcmp(op, "ctxrelease") ||
		   !strcmp(op, "destroy")) {
		int dev = (int)fz_num(a1) & 1;
		/* the program's registrations, given back first (whichever
		 * context made them) */
		cuCtxSynchronize();
		pthread_mutex_lock(&reg_mu);
		for (int i = 0; i < nregs; i++)
			cuMemHostUnregister(regs[i].p);
		pthread_mutex_unlock(&reg_mu);
		forget_regs();
		r = op[0] == 'r' ? cuDevicePrimaryCtxReset_v2(dev)
		    : op[0] == 'c' ? cuDevicePrimaryCtxRelease_v2(dev)
				   : cuCtxDestroy_v2(ctx[dev]);
		CUcontext c;
		cuDevicePrimaryCtxRetain(&c, dev);
	} else if (!strcmp(op, "hold")) {
		/* hold S K: work queued on this thread's S after now waits
		 * until some thread's "release K" (a host function the
		 * program satisfies later) */
		int k = (int)fz_num(o->tok[2]) & 7;
		held[k] = fake_cuda_stream_self(fz_stream(a1));
		r = fake_cuda_stream_hold(fz_stream(a1));
	} else if (!strcmp(op, "release")) {
		int k = (int)fz_num(a1) & 7;
		if (held[k])
			fake_cuda_stream_release(held[k]);
		held[k] = NULL;
	} else if (!strcmp(op, "probe")) {
		/* a block hostpin calls registered must be registered with
		 * the driver, after its copies (no answer without hostpin) */
		struct fz_buf *h = &fz_host[atoi(a1 + 1) % FZ_MAXB];
		int (*q)(const void *, struct hostpin_range *) =
			(int (*)(const void *, struct hostpin_range *))dlsym(RTLD_DEFAULT, "hostpin_query");
		struct hostpin_range hr;
		if (!h->p)
			return fz_printf(t, "%d probe skip\n", ln), 0;
		fz_sync_mine(t);
		/* the record holding the buffer's start, within the buffer (a
		 * mapfix or partial munmap leaves it in several records) */
		int stale = 0;
		if (q && q(h->p, &hr) && (hr.flags & HOSTPIN_REGISTERED)) {
			char *e = (char *)hr.base + hr.len;
			size_t in = (size_t)((e < h->p + h->n ? e : h->p + h->n) - h->p);
			stale = fake_cuda_registered_bytes(h->p, in) < in;
		}
		fz_printf(t, "%d probe %s %s\n", ln, a1, stale ? "STALE-REGISTERED" : "ok");
		return 0;
	} else if (!strcmp(op, "cur"))
		r = cuCtxSetCurrent(ctx[(int)fz_num(a1) & 1]);
	else
		return -1;
	fz_printf(t, "%d %s %s rc=%d\n", ln, op, a1, r);
	return 0;
}
