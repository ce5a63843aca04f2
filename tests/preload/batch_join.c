/* A batch whose entries touch more blocks of hostpin's than a copy records
 * (HP_COPY_RECS, 8), over the fake driver's late mode (FAKE_CUDA_LATE_DMA=1),
 * run under hostpin with HOSTPIN_TEST_PAUSE: the entries passed to the
 * driver are joined into one copy record that ends with the batch
 * (hp_copy_join, batch.c); a block past the record's eighth is counted as a
 * copy through every block (passing.c's ALL) until the batch's end.
 *   batch_join MODE   MODE: drv (cuMemcpyBatchAsync_v2), rt (the runtime's
 *                    cudaMemcpyBatchAsync, split by hostpin's runtime hook)
 * Ten registered blocks of 8 MiB (the case: HOSTPIN_THRESHOLD=4M,
 * HOSTPIN_PIN_AFTER=0, HOSTPIN_REGISTER_BACKGROUND=0, HOSTPIN_MMAP=off);
 * thread A's batch of 11 H2D entries on one stream, entry i from block i
 * (i < 10), entry 10 from block 0 again.  A is held before entry 10
 * (hostpin's pause point batch_next; the pause points batch_next and
 * copy_walked, alternately, step it there entry by entry): entries 0-9
 * passed to the driver, still queued (nothing synchronised), blocks 8 and
 * 9 the record's ninth and tenth.  Then B and C register a piece of block
 * 8 and of block 9 (the program's own registration: hostpin steps aside,
 * foreign.c, once no copy counted on the block is in flight): both must
 * still wait once asleep in the step aside (not returned), and register (0)
 * after the batch ended; the fake logs "VIOLATION unregister-with-copy-in-
 * flight" for an unregistration under a queued entry.  The batch returns
 * 0 and lands whole.  Outcomes never depend on timing: what the threads do
 * is polled for, the pause points decide the order. */
#include "late_common.h"

CUresult cuMemHostUnregister(void *);
CUresult cuMemcpyBatchAsync_v2(CUdeviceptr *, CUdeviceptr *, size_t *, size_t,
			       void *, size_t *, size_t, CUstream);
cudaError_t cudaMemcpyBatchAsync(void **, void **, size_t *, size_t, void *,
				 size_t *, size_t, size_t *, CUstream);

#define NB 10		     /* blocks */
#define NE (NB + 1)	     /* entries */
#define BS (8 * MB)	     /* a block */
#define ES ((size_t)64 << 10) /* an entry */

static CUstream s;
static char *blk[NB];
static CUdeviceptr d;
static int rt;
static _Atomic int batch_rc = -1;

static char *entry_src(int i)
{
	return i < NB ? blk[i] : blk[0] + ES;
}

static void *batcher(void *arg)
{
	(void)arg;
	CHECK(cuCtxSetCurrent(ctx) == 0);
	CUdeviceptr ds[NE], ss[NE];
	void *dp[NE], *sp[NE];
	size_t sz[NE], fail = 0;
	for (int i = 0; i < NE; i++) {
		ds[i] = d + (CUdeviceptr)i * ES;
		ss[i] = (CUdeviceptr)(uintptr_t)entry_src(i);
		dp[i] = D(ds[i]), sp[i] = entry_src(i), sz[i] = ES;
	}
	batch_rc = rt ? (int)cudaMemcpyBatchAsync(dp, sp, sz, NE, NULL, NULL,
						  0, &fail, s)
		      : cuMemcpyBatchAsync_v2(ds, ss, sz, NE, NULL, NULL, 0, s);
	return NULL;
}

/* A pause point's last use undone: its .paused and .go gone */
static void pt_clear(const char *name)
{
	char p[512];
	const char *dir = getenv("HOSTPIN_TEST_PAUSE");
	snprintf(p, sizeof(p), "%s/%s.paused", dir, name);
	unlink(p);
	snprintf(p, sizeof(p), "%s/%s.go", dir, name);
	unlink(p);
}

/* A, held before entry i (batch_next), on to before entry i + 1: held in
 * entry i's walk (copy_walked, past batch_next) while batch_next is
 * armed again */
static void step(void)
{
	pt_clear("copy_walked");
	pt_file("copy_walked", "arm");
	pt_file("batch_next", "go");
	wait_for(pt_paused, "copy_walked", "A in the next entry's walk");
	pt_clear("batch_next");
	pt_file("batch_next", "arm");
	pt_file("copy_walked", "go");
	wait_for(pt_paused, "batch_next", "A before its next entry");
}

/* B's and C's: in the step aside, asleep between looks, or returned */
static struct reg_call regs[2] = {REG_CALL, REG_CALL};
static int both_slept(void *arg)
{
	(void)arg;
	return watch_slept(&regs[0].w) && watch_slept(&regs[1].w);
}

static int run(void)
{
	pthread_t a, t[2];
	alarm(60);
	CHECK(getenv("HOSTPIN_TEST_PAUSE") != NULL);
	for (int i = 0; i < NB; i++) {
		blk[i] = malloc(BS);
		CHECK(blk[i] != NULL && tp_flags(blk[i]) != 0);
		fill(blk[i], 2 * ES, 80 + (unsigned)i);
		wait_for(is_reg, blk[i], "a block registered");
	}
	d = dev(NE * ES);
	CHECK(cuStreamCreate(&s, 0) == 0);
	pt_file("batch_next", "arm");
	CHECK(pthread_create(&a, NULL, batcher, NULL) == 0);
	wait_for(pt_paused, "batch_next", "A's first entry passed");
	for (int i = 1; i < NE - 1; i++)
		step(); /* A before entry i + 1 */
	/* entries 0-9 queued, not run (nothing synchronised) */
	for (int k = 0; k < 2; k++) {
		regs[k].at = blk[8 + k] + 4 * MB, regs[k].n = 2 * MB;
		CHECK(pthread_create(&t[k], NULL, watched_thread,
				     &regs[k].w) == 0);
	}
	wait_for(both_slept, NULL, "B and C wait, or returned");
	int early[2] = {regs[0].rc, regs[1].rc};
	pt_file("batch_next", "go");
	CHECK(pthread_join(a, NULL) == 0);
	for (int k = 0; k < 2; k++)
		CHECK(pthread_join(t[k], NULL) == 0);
	printf("registrations of blocks 8 and 9 while the batch's entries were "
	       "queued: %d %d (-1: still waiting), at its end %d %d; batch "
	       "%d\n", early[0], early[1], regs[0].rc, regs[1].rc, batch_rc);
	CHECK(batch_rc == 0);
	CHECK(cuStreamSynchronize(s) == 0);
	for (int i = 0; i < NE; i++)
		CHECK(memcmp(D(d + (CUdeviceptr)i * ES), entry_src(i), ES) == 0);
	int bad = 0;
	for (int k = 0; k < 2; k++) {
		if (early[k] != -1 || regs[k].rc != 0) {
			fprintf(stderr, "block %d: the program's registration "
				"returned %d before the batch's end (then %d): "
				"hostpin let go of the block's count while an "
				"entry from it was queued\n", 8 + k, early[k],
				regs[k].rc);
			bad = 1;
		}
		if (regs[k].rc == 0)
			CHECK(cuMemHostUnregister(regs[k].at) == 0);
	}
	for (int i = 0; i < NB; i++)
		free(blk[i]);
	return bad;
}

static int mode_drv(void) { return run(); }
static int mode_rt(void) { rt = 1; return run(); }

int main(int argc, char **argv)
{
	static const struct staged_mode modes[] = {{"drv", mode_drv},
						   {"rt", mode_rt}};
	return staged_main("batch_join", argc, argv, modes);
}
