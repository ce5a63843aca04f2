/* Shared by the late-mode programs (late.c, late_more.c, late_fix.c,
 * late_reg.c, late_cap.c; the fake driver's late mode: FAKE_CUDA_LATE_DMA=1,
 * fake_late.h): the fake's controls they call, one staged round trip, a
 * block half registered in the background, and the system call a thread
 * sleeps in.  On top of staged_common.h. */
#ifndef LATE_COMMON_H
#define LATE_COMMON_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "staged_common.h"

CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr, const void *, size_t, CUstream);
int fake_cuda_is_registered(const void *, size_t);
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

#endif
