/* hostpin stepping aside for the program's own registration (foreign.c)
 * while a copy through the block is in flight, over the fake driver's late
 * mode (FAKE_CUDA_LATE_DMA=1), run under hostpin.
 *   aside MODE
 * fork: thread A's H2D from a registered block of hostpin's waits
 *   (HOSTPIN_COPY=sync) for its stream, held (fake_cuda_stream_hold);
 *   thread B's cuMemHostRegister of a piece of the block steps aside from
 *   hostpin's registration and waits for A's copy (HP_F_ASIDE set).  The
 *   program forks then: the child, whose threads are gone, copies from the
 *   block and frees it; both must return (alarm: a spin for ever fails the
 *   child).  Then the stream is let go: A's copy lands whole, B's call
 *   returns (registered, or 712 after hostpin's bounded wait).
 * stall: the same copy and registration; then the whole process is
 *   stopped for 11 s (SIGSTOP from a child, SIGCONT after), as a machine
 *   under load may stall it: B's call must still be waiting after its next
 *   looks (the bound counts the waiting thread's looks, not only the
 *   clock), and once the stream is let go it registers (0).  It was
 *   refused 712 at B's first look after the stall (issue 39,
 *   regress-diff-c-96518885.prog, 1 full run in 27).
 * batch: thread A's batch of two H2D entries from the block, paused
 *   between them (hostpin's pause point batch_next: the first entry
 *   passed to the driver, counted in flight); B's registration of a piece
 *   of the block steps aside and waits for it; then A goes on: its second
 *   entry must not wait for the step aside while the first is counted (B
 *   waited 10 s for it and got 712: issue 39, seed 562614); B registers
 *   (0), the batch returns 0 and lands whole.
 * Outcomes never depend on timing: what the threads do is polled for. */
#include <signal.h>
#include <sys/wait.h>

#include "late_common.h"

CUresult cuMemHostUnregister(void *);
CUresult cuMemcpyHtoD_v2(CUdeviceptr, const void *, size_t);
CUresult cuMemcpyBatchAsync_v2(CUdeviceptr *, CUdeviceptr *, size_t *, size_t,
			       void *, size_t *, size_t, CUstream);

static CUstream s;
static char *blk;
static CUdeviceptr d;
static struct reg_call b_reg = REG_CALL; /* B's, of a piece of blk */

/* the fake's log has a line with what */
static int logged(void *what)
{
	const char *path = getenv("FAKE_CUDA_LOG");
	char line[256];
	int hit = 0;
	FILE *f = path ? fopen(path, "r") : NULL;
	while (f && !hit && fgets(line, sizeof(line), f))
		hit = strstr(line, what) != NULL;
	if (f)
		fclose(f);
	return hit;
}
static void *copier(void *arg)
{
	(void)arg;
	CHECK(cuCtxSetCurrent(ctx) == 0);
	CHECK(cuMemcpyHtoDAsync_v2(d, blk, 4 * MB, s) == 0);
	return NULL;
}
/* B waits in hostpin's step aside (sleeping between looks at the copies
 * in flight: it yields a thousand times first) */
static int b_waits(void *arg)
{
	(void)arg;
	return watch_asleep(&b_reg.w, 0);
}

/* What both modes start from: a registered block of 32 MiB filled with
 * v, A's H2D from it held on its stream, B waiting in hostpin's step aside
 * for A's copy with its registration of a piece of the block; then the
 * program forks (returned: fork's). */
static pid_t start_fork(int v, pthread_t *a, pthread_t *b)
{
	size_t m = 32 * MB;
	alarm(60);
	CHECK(getenv("FAKE_CUDA_LOG") != NULL);
	blk = malloc(m);
	CHECK(blk != NULL && tp_flags(blk) != 0);
	fill(blk, m, v);
	d = dev(m);
	CHECK(cuStreamCreate(&s, 0) == 0);
	wait_for(is_reg, blk, "the block registered");
	CHECK(fake_cuda_stream_hold(s) == 0);
	CHECK(pthread_create(a, NULL, copier, NULL) == 0);
	wait_for(logged, "CALL cuMemcpyHtoDAsync_v2", "A's copy reached the driver");
	b_reg.at = blk + 16 * MB, b_reg.n = 4 * MB;
	CHECK(pthread_create(b, NULL, watched_thread, &b_reg.w) == 0);
	wait_for(b_waits, NULL, "B waits for A's copy");
	pid_t pid = fork();
	CHECK(pid >= 0);
	return pid;
}

/* The stream let go: both threads return */
static void let_go(pthread_t a, pthread_t b)
{
	fake_cuda_stream_release(s);
	CHECK(pthread_join(a, NULL) == 0);
	CHECK(pthread_join(b, NULL) == 0);
}

/* A's copy landed whole (v); B's registration undone; the block freed */
static void finish(int v)
{
	CHECK(cuStreamSynchronize(s) == 0);
	CHECK(same(D(d), 4 * MB, v));
	if (b_reg.rc == 0)
		CHECK(cuMemHostUnregister(blk + 16 * MB) == 0);
	free(blk);
}

static int mode_fork(void)
{
	pthread_t a, b;
	pid_t pid = start_fork(70, &a, &b);
	if (pid == 0) {
		alarm(10);
		/* the child's own copy from the block, and its free */
		if (cuMemcpyHtoD_v2(d + 8 * MB, blk + 8 * MB, 4 * MB) != 0)
			_exit(3);
		free(blk);
		_exit(0);
	}
	int st = 0;
	CHECK(waitpid(pid, &st, 0) == pid);
	let_go(a, b);
	printf("register while a copy waits: %d\n", b_reg.rc);
	CHECK(b_reg.rc == 0 || b_reg.rc == 712);
	finish(70);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "child: status %#x (%s)\n", st,
			WIFSIGNALED(st) && WTERMSIG(st) == SIGALRM
			    ? "its copy or free never returned"
			    : "failed");
		return 1;
	}
	return 0;
}

/* B's voluntary context switches: one per look while it waits */
static long b_switches(void)
{
	return task_status(b_reg.w.tid, "voluntary_ctxt_switches");
}
static long b_from;
/* B's call returned, or B looked 5 times more since b_from */
static int b_looked(void *arg)
{
	(void)arg;
	return b_reg.rc != -1 || b_switches() >= b_from + 5;
}

static int mode_stall(void)
{
	pthread_t a, b;
	pid_t pid = start_fork(71, &a, &b);
	if (pid == 0) {
		/* the stall: every thread of the parent stopped for 11 s */
		pid_t pp = getppid();
		kill(pp, SIGSTOP);
		sleep(11);
		kill(pp, SIGCONT);
		_exit(0);
	}
	int st = 0;
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st));
	/* B's thread gone already: its call returned */
	b_from = b_switches();
	if (b_from < 0)
		CHECK(b_reg.rc != -1);
	else
		wait_for(b_looked, NULL, "B looks again after the stall");
	int early = b_reg.rc;
	let_go(a, b);
	printf("register across a stall of the process: %d (returned before "
	       "the copy ended: %s)\n", b_reg.rc, early != -1 ? "yes" : "no");
	finish(71);
	if (early != -1 || b_reg.rc != 0) {
		fprintf(stderr, "the program's registration was refused (%d) "
			"after a stall while it waited for a copy that could "
			"still end\n", b_reg.rc);
		return 1;
	}
	return 0;
}

static _Atomic int batch_rc = -1;
static void *batcher(void *arg)
{
	(void)arg;
	CHECK(cuCtxSetCurrent(ctx) == 0);
	CUdeviceptr ds[2] = {d, d + 4 * MB};
	CUdeviceptr ss[2] = {(CUdeviceptr)(uintptr_t)blk,
			     (CUdeviceptr)(uintptr_t)(blk + 4 * MB)};
	size_t sz[2] = {4 * MB, 4 * MB};
	batch_rc = cuMemcpyBatchAsync_v2(ds, ss, sz, 2, NULL, NULL, 0, s);
	return NULL;
}

static int mode_batch(void)
{
	size_t m = 32 * MB;
	pthread_t a, b;
	alarm(60);
	CHECK(getenv("HOSTPIN_TEST_PAUSE") != NULL);
	blk = malloc(m);
	CHECK(blk != NULL && tp_flags(blk) != 0);
	fill(blk, m, 72);
	d = dev(m);
	CHECK(cuStreamCreate(&s, 0) == 0);
	wait_for(is_reg, blk, "the block registered");
	pt_file("batch_next", "arm");
	CHECK(pthread_create(&a, NULL, batcher, NULL) == 0);
	wait_for(pt_paused, "batch_next", "A's first entry passed");
	b_reg.at = blk + 16 * MB, b_reg.n = 4 * MB;
	CHECK(pthread_create(&b, NULL, watched_thread, &b_reg.w) == 0);
	wait_for(b_waits, NULL, "B waits for A's first entry");
	pt_file("batch_next", "go");
	CHECK(pthread_join(a, NULL) == 0);
	CHECK(pthread_join(b, NULL) == 0);
	printf("register while a batch is between entries: %d (batch %d)\n",
	       b_reg.rc, batch_rc);
	CHECK(batch_rc == 0);
	CHECK(cuStreamSynchronize(s) == 0);
	CHECK(same(D(d), 8 * MB, 72));
	finish(72);
	if (b_reg.rc != 0) {
		fprintf(stderr, "the program's registration was refused (%d) "
			"while a batch's next entry waited for it\n", b_reg.rc);
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const struct staged_mode modes[] = {{"fork", mode_fork},
						   {"stall", mode_stall},
						   {"batch", mode_batch}};
	return staged_main("aside", argc, argv, modes);
}
