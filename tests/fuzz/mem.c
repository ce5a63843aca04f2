/* engine_fuzz: host and device memory ops.
 *   alloc bN malloc|calloc|memalign|mmap SIZE SEED   free bN
 *   realloc bN SIZE   munmap bN KEEP (mmap: its tail)   mremap bN SIZE
 *   mapfix bN OFF LEN (mmap: a fresh mapping, MAP_FIXED, over whole pages)
 * Under a CUDA graph capture hostpin refuses an mremap, a partial munmap or
 * a MAP_FIXED of a mapping it holds registered (ENOMEM, hostpin(7) Graph
 * captures): the program then does what realloc and allocators do (a new
 * mapping and a copy; the tail kept mapped; the part zeroed), so that what
 * it reads agrees with the run without hostpin.  *   discard bN OFF LEN (MADV_DONTNEED, whole pages inside)
 *   fill bN SEED [OFF LEN]   check bN [OFF LEN]
 *   dalloc dN SIZE SEED   dsum dN [OFF LEN] (after this thread's syncs)
 * Under "mode relaxed" the thread synchronises its streams before it
 * touches host memory (as a program using registered memory must). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "fz.h"

typedef int CUresult;
CUresult cuMemAlloc_v2(unsigned long long *, size_t);

static struct fz_buf *slot(struct fz_buf *tab, const char *name)
{
	if (!name || (name[0] != 'b' && name[0] != 'd'))
		return NULL;
	int i = atoi(name + 1);
	return i >= 0 && i < FZ_MAXB ? &tab[i] : NULL;
}

/* [off, off+len) of b, clipped; whole buffer when not given */
static void range(struct fz_buf *b, struct fz_op *o, int at, size_t *off,
		  size_t *len)
{
	*off = 0, *len = b->n;
	if (o->tok[at] && o->tok[at + 1]) {
		size_t a = (size_t)fz_num(o->tok[at]), l = (size_t)fz_num(o->tok[at + 1]);
		if (a > b->n)
			a = b->n;
		if (l > b->n - a)
			l = b->n - a;
		*off = a, *len = l;
	}
}

#define PG 4096ul

int fz_op_mem(struct fz_thread *t, struct fz_op *o)
{
	const char *op = o->tok[0];
	int ln = o->line;
	int host = 1;
	if (!strcmp(op, "dalloc") || !strcmp(op, "dsum") || !strcmp(op, "dfill"))
		host = 0;
	else if (strcmp(op, "alloc") && strcmp(op, "free") && strcmp(op, "realloc") &&
		 strcmp(op, "munmap") && strcmp(op, "mremap") && strcmp(op, "mapfix") &&
		 strcmp(op, "discard") && strcmp(op, "fill") && strcmp(op, "check"))
		return -1;
	struct fz_buf *b = slot(host ? fz_host : fz_dev, o->tok[1]);
	if (!b) {
		fz_printf(t, "%d %s bad-slot\n", ln, op);
		return 0;
	}
	if (strcmp(op, "alloc") && strcmp(op, "dalloc") && !b->p) {
		fz_printf(t, "%d %s %s skip\n", ln, op, o->tok[1]);
		return 0;
	}
	if (fz_relaxed && host && strcmp(op, "alloc"))
		fz_sync_mine(t);
	size_t off, len;
	if (!strcmp(op, "alloc")) {
		if (b->p)
			return fz_printf(t, "%d alloc %s skip\n", ln, o->tok[1]), 0;
		size_t n = (size_t)fz_num(o->tok[3]);
		unsigned seed = (unsigned)fz_num(o->tok[4]);
		const char *k = o->tok[2] ? o->tok[2] : "malloc";
		void *p = NULL;
		int kind = 1;
		if (!strcmp(k, "calloc"))
			p = calloc(1, n), kind = 2;
		else if (!strcmp(k, "memalign")) {
			if (posix_memalign(&p, (size_t)1 << (12 + seed % 12), n))
				p = NULL;
			kind = 3;
		} else if (!strcmp(k, "mmap")) {
			p = mmap(NULL, n, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			if (p == MAP_FAILED)
				p = NULL;
			kind = 4;
		} else
			p = malloc(n);
		if (!p)
			return fz_printf(t, "%d alloc %s failed\n", ln, o->tok[1]), 0;
		b->p = p, b->n = n, b->kind = kind, b->regs = 0;
		if (kind == 2 || kind == 4)
			fz_printf(t, "%d alloc %s sum %016llx\n", ln, o->tok[1],
				  (unsigned long long)fz_sum(p, n));
		else
			fz_printf(t, "%d alloc %s\n", ln, o->tok[1]);
		fz_fill(p, n, seed);
	} else if (!strcmp(op, "free")) {
		if (b->kind == 4)
			munmap(b->p, fz_mapped(b));
		else
			free(b->p);
		b->p = NULL, b->n = 0, b->mapped = 0;
		fz_printf(t, "%d free %s\n", ln, o->tok[1]);
	} else if (!strcmp(op, "realloc")) {
		size_t n = (size_t)fz_num(o->tok[2]);
		if (b->kind == 4 || n == 0)
			return fz_printf(t, "%d realloc %s skip\n", ln, o->tok[1]), 0;
		char *p = realloc(b->p, n);
		if (!p)
			return fz_printf(t, "%d realloc %s failed\n", ln, o->tok[1]), 0;
		size_t keep = n < b->n ? n : b->n;
		fz_printf(t, "%d realloc %s sum %016llx\n", ln, o->tok[1],
			  (unsigned long long)fz_sum(p, keep));
		if (n > keep)
			fz_fill(p + keep, n - keep, (unsigned)ln);
		b->p = p, b->n = n, b->kind = 1;
	} else if (!strcmp(op, "munmap")) {
		size_t keep = ((size_t)fz_num(o->tok[2]) + PG - 1) & ~(PG - 1);
		size_t have = (b->n + PG - 1) & ~(PG - 1);
		if (b->kind != 4 || keep == 0 || keep >= have)
			return fz_printf(t, "%d munmap %s skip\n", ln, o->tok[1]), 0;
		int r = munmap(b->p + keep, have - keep);
		if (r && errno == ENOMEM) /* refused (a capture): kept mapped */
			r = 0, b->mapped = b->mapped ? b->mapped : have;
		b->n = keep;
		fz_printf(t, "%d munmap %s %d sum %016llx\n", ln, o->tok[1], r,
			  (unsigned long long)fz_sum(b->p, b->n));
	} else if (!strcmp(op, "mremap")) {
		size_t n = ((size_t)fz_num(o->tok[2]) + PG - 1) & ~(PG - 1);
		if (b->kind != 4 || n == 0)
			return fz_printf(t, "%d mremap %s skip\n", ln, o->tok[1]), 0;
		size_t have = (fz_mapped(b) + PG - 1) & ~(PG - 1);
		void *p = mremap(b->p, have, n, MREMAP_MAYMOVE);
		if (p == MAP_FAILED && errno == ENOMEM) {
			/* refused (a capture): a new mapping and a copy */
			p = mmap(NULL, n, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			if (p != MAP_FAILED) {
				memcpy(p, b->p, n < b->n ? n : b->n);
				munmap(b->p, have);
			}
		}
		if (p == MAP_FAILED)
			return fz_printf(t, "%d mremap %s failed\n", ln, o->tok[1]), 0;
		b->p = p, b->n = n, b->mapped = 0;
		fz_printf(t, "%d mremap %s sum %016llx\n", ln, o->tok[1],
			  (unsigned long long)fz_sum(b->p, b->n));
	} else if (!strcmp(op, "discard")) {
		range(b, o, 2, &off, &len);
		uintptr_t a = ((uintptr_t)b->p + off + PG - 1) & ~(PG - 1);
		uintptr_t e = ((uintptr_t)b->p + off + len) & ~(PG - 1);
		int r = 0, zero = 1;
		if (e > a)
			r = madvise((void *)a, e - a, MADV_DONTNEED);
		for (uintptr_t q = a; q < e; q += 8)
			if (*(uint64_t *)q)
				zero = 0;
		/* the pages discarded depend on where the buffer lies: the
		 * whole range is zeroed, so what follows does not */
		memset(b->p + off, 0, len);
		fz_printf(t, "%d discard %s %d zero %d sum %016llx\n", ln, o->tok[1],
			  r, zero, (unsigned long long)fz_sum(b->p, b->n));
	} else if (!strcmp(op, "mapfix")) {
		range(b, o, 2, &off, &len);
		uintptr_t a = ((uintptr_t)b->p + off + PG - 1) & ~(PG - 1);
		uintptr_t e = ((uintptr_t)b->p + off + len) & ~(PG - 1);
		int r = 0;
		if (b->kind != 4)
			return fz_printf(t, "%d mapfix %s skip\n", ln, o->tok[1]), 0;
		if (e > a && mmap((void *)a, e - a, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1,
				  0) == MAP_FAILED) {
			r = errno == ENOMEM ? 0 : -1; /* refused: zeroed */
			if (!r)
				memset((void *)a, 0, e - a);
		}
		fz_printf(t, "%d mapfix %s %d sum %016llx\n", ln, o->tok[1], r,
			  (unsigned long long)fz_sum(b->p, b->n));
	} else if (!strcmp(op, "fill")) {
		range(b, o, 3, &off, &len);
		fz_fill(b->p + off, len, (unsigned)fz_num(o->tok[2]));
	} else if (!strcmp(op, "check")) {
		range(b, o, 2, &off, &len);
		fz_printf(t, "%d check %s sum %016llx\n", ln, o->tok[1],
			  (unsigned long long)fz_sum(b->p + off, len));
	} else if (!strcmp(op, "dalloc")) {
		if (b->p)
			return fz_printf(t, "%d dalloc %s skip\n", ln, o->tok[1]), 0;
		unsigned long long d = 0;
		size_t n = (size_t)fz_num(o->tok[2]);
		CUresult r = cuMemAlloc_v2(&d, n);
		fz_printf(t, "%d dalloc %s %d\n", ln, o->tok[1], r);
		if (r == 0) {
			b->p = (char *)(uintptr_t)d, b->n = n;
			fz_fill(b->p, n, (unsigned)fz_num(o->tok[3]));
		}
	} else if (!strcmp(op, "dfill")) {
		fz_sync_mine(t);
		range(b, o, 3, &off, &len);
		fz_fill(b->p + off, len, (unsigned)fz_num(o->tok[2]));
	} else { /* dsum */
		fz_sync_mine(t);
		range(b, o, 2, &off, &len);
		fz_printf(t, "%d dsum %s sum %016llx\n", ln, o->tok[1],
			  (unsigned long long)fz_sum(b->p + off, len));
	}
	return 0;
}
