/* engine_fuzz: the copy engine's differential, randomized concurrency
 * tester (issue 39).  One program: `gen SEED [--ops LIST] [--no LIST]`
 * writes a random program (a text op list) and `run FILE` interprets one
 * over the fake CUDA driver's late-DMA mode.  The program's output is
 * deterministic without hostpin, whatever the threads' interleaving (each
 * thread owns its buffers and streams, or a disjoint piece of a shared
 * block; section ops run while the other threads wait at a barrier), so
 * any difference under hostpin is hostpin's.  fuzz.sh runs each program
 * twice and compares. */
#ifndef FZ_H
#define FZ_H
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#define FZ_MAXT 4       /* program threads */
#define FZ_MAXB 64      /* host buffers, device buffers, streams: each */
#define FZ_MAXTOK 16

/* One op of the program: its thread (-1: setup, before the threads), its
 * line number, its words. */
struct fz_op {
	int th, line;
	int ntok;
	char *tok[FZ_MAXTOK];
	char *text;
};

/* The interpreter's state per program thread. */
struct fz_thread {
	int id;
	struct fz_op **ops;
	int nops;
	volatile int cur; /* index of the op running (the watchdog's) */
	volatile long long since; /* when it began (ms, CLOCK_MONOTONIC) */
	char *out;        /* its output, printed at the end in thread order */
	size_t outn, outcap;
};

/* gen.c */
int fz_gen(int argc, char **argv);

/* run.c */
void fz_printf(struct fz_thread *t, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
extern int fz_relaxed; /* the program reads host memory only after syncs */
extern int fz_nthreads;
uint64_t fz_sum(const void *p, size_t n);
void fz_fill(void *p, size_t n, unsigned seed);
long long fz_num(const char *s);

/* ops.c / mem.c: one op, run on thread t; returns 0, or -1 when the op
 * is unknown */
int fz_op_mem(struct fz_thread *t, struct fz_op *o);
int fz_op_copy(struct fz_thread *t, struct fz_op *o);
int fz_op_ctl(struct fz_thread *t, struct fz_op *o);
void fz_init_driver(void);
void fz_thread_start(struct fz_thread *t);
void fz_final(int inflight);
void fz_sync_mine(struct fz_thread *t);
int fz_reg_near(int b, size_t e0, size_t e1);
void fz_reg_static(int b, size_t off, size_t n);
extern __thread int fz_fallible;

/* Buffers: host (shared among threads only in disjoint pieces), device;
 * streams.  Slot numbers come from the program ("b3", "d1", "s2"). */
struct fz_buf {
	char *p;
	size_t n;
	int kind; /* 0 none, 1 malloc, 2 calloc, 3 memalign, 4 mmap */
	int regs; /* program registrations live on it */
	size_t mapped; /* mmap: bytes mapped from p when more than n (a
			* partial munmap refused), else 0 */
};
/* The bytes to unmap to give an mmap block back. */
static inline size_t fz_mapped(const struct fz_buf *b)
{
	return b->mapped ? b->mapped : b->n;
}
extern struct fz_buf fz_host[FZ_MAXB];
extern struct fz_buf fz_dev[FZ_MAXB];
#endif
