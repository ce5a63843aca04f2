/* Shared by the late-mode programs (late.c, late_more.c, late_pass.c,
 * late_multi.c, late_past.c, late_reg.c, late_fix.c, late_array.c, late_cap.c,
 * claim_race.c, aside.c, hold_leak.c, reset_bg.c, copy_freed.c, ring_bg.c,
 * batch_join.c; the fake
 * driver's late mode: FAKE_CUDA_LATE_DMA=1, fake_late.h): the fake's controls
 * they call, one staged round trip, a block half registered in the background, a block
 * registered whole, two copies at the driver's door, what a thread's system
 * call and status say, a call on a watched thread (the program's own
 * registration).  On top of staged_common.h. */
#ifndef LATE_COMMON_H
#define LATE_COMMON_H

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include "staged_common.h"

CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr, const void *, size_t, CUstream);
CUresult cuMemHostRegister_v2(void *, size_t, unsigned);
int fake_cuda_is_registered(const void *, size_t);
size_t fake_cuda_registered_bytes(const void *, size_t);
void fake_cuda_release_registration(void);
void fake_cuda_open_gate(void);
void fake_cuda_open_gate_once(void);
int fake_cuda_stream_hold(CUstream);
void fake_cuda_stream_release(CUstream);
int fake_cuda_stream_asked_past_hold(CUstream);

/* One round trip of n bytes through h and d on s (seed): every call
 * succeeds, the data arrives both ways. */
static inline void round_trip(char *h, CUdeviceptr d, size_t n, CUstream s,
			      unsigned seed)
{
	fill(h, n, seed);
	CHECK(cuMemcpyHtoDAsync_v2(d, h, n, s) == 0);
	memset(h, 0, n); /* after the call: changes nothing */
	CHECK(cuStreamSynchronize(s) == 0);
	CHECK(same(D(d), n, seed));
	fill(D(d), n, seed + 100);
	CHECK(cuMemcpyDtoHAsync_v2(h, d, n, s) == 0);
	CHECK(same(h, n, seed + 100)); /* there on return */
}

/* Background registration with HOSTPIN_REGISTER_CHUNK=8M and
 * FAKE_CUDA_REGISTER_GATE=8M: the block's first 8 MiB piece registered,
 * the second held at the fake's gate. */
static inline int first_piece(void *p)
{
	return fake_cuda_is_registered(p, 8 * MB) &&
	       fake_cuda_gate_waiters() == 1;
}

/* A 32 MiB block (8 MiB aligned) that earned registration by two staged
 * copies on a stream of its own, registered in the background: its first
 * 8 MiB piece registered, the second held at the fake's gate (first_piece).
 * *d: its device buffer; *s: the stream. */
static inline char *half_registered(int seed, CUdeviceptr *d, CUstream *s)
{
	size_t m = 32 * MB;
	void *p = NULL;
	CHECK(posix_memalign(&p, 8 * MB, m) == 0);
	char *blk = p;
	CHECK(tp_flags(blk) != 0 && !is_reg(blk));
	*d = dev(m);
	CHECK(cuStreamCreate(s, 0) == 0);
	fill(blk, m, seed);
	CHECK(cuMemcpyHtoDAsync_v2(*d, blk, m, *s) == 0); /* staged */
	CHECK(cuMemcpyHtoDAsync_v2(*d, blk, m, *s) == 0); /* earns; staged */
	wait_for(gate_held, NULL, "the first piece reached the driver");
	fake_cuda_open_gate_once();
	wait_for(first_piece, blk, "the first piece registered, the second held");
	return blk;
}

CUresult cuMemcpyHtoD_v2(CUdeviceptr, const void *, size_t);
CUresult cuMemcpyDtoH_v2(void *, CUdeviceptr, size_t);
/* A copy of n bytes on s, async or not, checked: H2D from h (zeroed at
 * return: consumed) to d, which must then hold seed's bytes; or D2H from
 * d into h, which must hold seed + 1's at return.  The driver's answer,
 * or -1 for wrong bytes. */
static inline CUresult copy_checked(int htod, int async, CUdeviceptr d,
				    char *h, size_t n, CUstream s,
				    unsigned seed)
{
	CUresult r;
	if (htod) {
		r = async ? cuMemcpyHtoDAsync_v2(d, h, n, s)
			  : cuMemcpyHtoD_v2(d, h, n);
		memset(h, 0, n);
		if (r == 0)
			r = cuStreamSynchronize(s);
		if (r == 0 && !same(D(d), n, seed))
			r = (CUresult)-1;
	} else {
		r = async ? cuMemcpyDtoHAsync_v2(h, d, n, s)
			  : cuMemcpyDtoH_v2(h, d, n);
		if (r == 0 && !same(h, n, seed + 1))
			r = (CUresult)-1;
	}
	return r;
}

/* hostpin's log (HOSTPIN_LOG_FILE, HOSTPIN_LOG=debug) has a line with
 * what in it */
static inline int log_says(const char *what)
{
	const char *f = getenv("HOSTPIN_LOG_FILE");
	FILE *fp = f ? fopen(f, "r") : NULL;
	char line[512];
	int yes = 0;
	while (fp && !yes && fgets(line, sizeof line, fp))
		yes = strstr(line, what) != NULL;
	if (fp)
		fclose(fp);
	return yes;
}

/* A 32 MiB block (8 MiB aligned) registered whole: each of its four 8 MiB
 * pieces (HOSTPIN_REGISTER_CHUNK=8M) in the fake's table (whole); that,
 * and flagged registered by hostpin (reg_whole); the fake's registered
 * bytes covering its 32 MiB, however made (whole32). */
static inline int whole(void *p)
{
	for (int i = 0; i < 4; i++)
		if (!fake_cuda_is_registered((char *)p + (size_t)i * 8 * MB,
					     8 * MB))
			return 0;
	return 1;
}
static inline int reg_whole(void *p)
{
	return is_reg(p) && whole(p);
}
static inline int whole32(void *p)
{
	return fake_cuda_registered_bytes(p, 32 * MB) == 32 * MB;
}

/* Copies of blk's m bytes onto d (the null stream; seeds seed, seed + 1
 * ...), each synchronised and its data checked, until blk is registered
 * whole (reg_whole), tries at the most. */
static inline void copy_until_whole(char *blk, CUdeviceptr d, size_t m,
				    unsigned seed, unsigned tries)
{
	for (unsigned i = 0; i < tries && !reg_whole(blk); i++) {
		fill(blk, m, seed + i);
		CHECK(cuMemcpyHtoDAsync_v2(d, blk, m, NULL) == 0);
		CHECK(cuStreamSynchronize(NULL) == 0);
		CHECK(same(D(d), m, seed + i));
	}
}

/* Two threads' copies through one block: A's (a) held at the driver's door
 * (the fake's gate), then B's (b) started until there(NULL) says what B
 * waits for (what); the door opened, A joined, the registration held in
 * the driver let go, B joined. */
static inline void door_then(void *(*a)(void *), void *(*b)(void *),
			     int (*there)(void *), const char *what)
{
	pthread_t ta, tb;
	CHECK(pthread_create(&ta, NULL, a, NULL) == 0);
	wait_for(gate_held, NULL, "A's copy at the driver's door");
	CHECK(pthread_create(&tb, NULL, b, NULL) == 0);
	wait_for(there, NULL, what);
	fake_cuda_open_gate();
	CHECK(pthread_join(ta, NULL) == 0);
	fake_cuda_release_registration();
	CHECK(pthread_join(tb, NULL) == 0);
}

/* A pinned-memory cap full for a moment (the case's HOSTPIN_MAX_PINNED=64M):
 * a 48 MiB block registered at its first copy (onto *d, 48 MiB of device
 * memory, seed) leaves no room for the H2D ring: n bytes of plain memory
 * (returned; seed + 1) then pass through, with their data; then the block
 * is freed. */
static inline char *cap_full_once(size_t n, unsigned seed, CUdeviceptr *d)
{
	size_t m = 48 * MB;
	*d = dev(m);
	char *blk = malloc(m), *h = plain(n);
	CHECK(blk != NULL && tp_flags(blk) != 0);
	fill(blk, m, seed);
	CHECK(cuMemcpyHtoDAsync_v2(*d, blk, m, NULL) == 0); /* registers it */
	CHECK(cuStreamSynchronize(NULL) == 0);
	CHECK(is_reg(blk));
	fill(h, n, seed + 1);
	CHECK(cuMemcpyHtoDAsync_v2(*d, h, n, NULL) == 0); /* no ring: passes */
	CHECK(cuStreamSynchronize(NULL) == 0);
	CHECK(same(D(*d), n, seed + 1));
	free(blk);
	return h;
}

/* The number of the system call thread t of this process is in, -1 when
 * it cannot be read (/proc/self/task/T/syscall; "running": 0). */
static inline long task_syscall(pid_t t)
{
	char path[64], buf[64] = "";
	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", (int)t);
	FILE *f = fopen(path, "r");
	if (f == NULL)
		return -1;
	int ok = fgets(buf, sizeof(buf), f) != NULL;
	fclose(f);
	return ok ? atoi(buf) : -1;
}

/* The number on line KEY ("KEY: N") of /proc/self/task/T/status, -1 when
 * it cannot be read. */
static inline long task_status(pid_t t, const char *key)
{
	char path[64], line[128];
	size_t k = strlen(key);
	long v = -1;
	snprintf(path, sizeof(path), "/proc/self/task/%d/status", (int)t);
	FILE *f = fopen(path, "r");
	for (int found = 0; f && !found && fgets(line, sizeof(line), f);)
		if ((found = strncmp(line, key, k) == 0 && line[k] == ':'))
			v = strtol(line + k + 1, NULL, 10);
	if (f)
		fclose(f);
	return v;
}

/* A call of the program's (fn) on a thread of its own that the main
 * thread polls: the thread's id and whether the call returned (done).
 * pthread_create(&t, NULL, watched_thread, &w). */
struct watched {
	void (*fn)(struct watched *);
	_Atomic int tid, done;
};
static inline void *watched_thread(void *arg)
{
	struct watched *w = arg;
	w->tid = (int)syscall(SYS_gettid);
	w->fn(w);
	w->done = 1;
	return NULL;
}
/* w's thread asleep: in nanosleep (hostpin's looks between waits), or with
 * futex too in a lock's wait */
static inline int watch_asleep(struct watched *w, int futex)
{
	long nr = w->tid ? task_syscall(w->tid) : -1;
	return nr == SYS_nanosleep || nr == SYS_clock_nanosleep ||
	       (futex && nr == SYS_futex);
}
/* wait_for's: w's call returned, or its thread asleep in nanosleep
 * (watch_slept), or in nanosleep or futex (watch_locked) */
static inline int watch_slept(void *w)
{
	return ((struct watched *)w)->done || watch_asleep(w, 0);
}
static inline int watch_locked(void *w)
{
	return ((struct watched *)w)->done || watch_asleep(w, 1);
}

/* The program's own cuMemHostRegister(at, n) in the primary context, on a
 * watched thread (REG_CALL: its w.fn; rc -1 until it returned). */
struct reg_call {
	struct watched w; /* first */
	char *at;
	size_t n;
	_Atomic int rc;
};
static inline void reg_call_fn(struct watched *w)
{
	struct reg_call *r = (struct reg_call *)w;
	CHECK(cuCtxSetCurrent(ctx) == 0);
	r->rc = cuMemHostRegister_v2(r->at, r->n, 0);
}
#define REG_CALL {.w.fn = reg_call_fn, .rc = -1}


/* main of a program whose modes are one run(h2d, async) each (late_pass.c,
 * late_multi.c): h2d_async, h2d_sync, d2h_async, d2h_sync. */
typedef int (*late_dir_run)(int h2d, int async);
static inline late_dir_run *late_dir_fn(void)
{
	static late_dir_run run;
	return &run;
}
static inline int late_h2d_async(void) { return (*late_dir_fn())(1, 1); }
static inline int late_h2d_sync(void) { return (*late_dir_fn())(1, 0); }
static inline int late_d2h_async(void) { return (*late_dir_fn())(0, 1); }
static inline int late_d2h_sync(void) { return (*late_dir_fn())(0, 0); }
static inline int late_dir_main(const char *prog, int argc, char **argv,
				late_dir_run run)
{
	static const struct staged_mode modes[] = {
	    {"h2d_async", late_h2d_async},
	    {"h2d_sync", late_h2d_sync},
	    {"d2h_async", late_d2h_async},
	    {"d2h_sync", late_d2h_sync},
	};
	*late_dir_fn() = run;
	return staged_main(prog, argc, argv, modes);
}

#endif
