/* Where a staged copy's time goes (issue 43 item 2), in a debug build only:
 * `make CFLAGS+=-DHP_STAGE_PROF` (no knob; the default build compiles none
 * of it).  Each phase's nanoseconds and count, summed over the process's
 * threads, printed on stderr at exit (pool.c). */
#ifndef HP_STAGE_PROF_H
#define HP_STAGE_PROF_H

#include <stdint.h>

enum hp_prof {
	HP_PF_TAKE, /* stage.c: a slot taken (the ring's lock) */
	HP_PF_WAIT, /* stage.c: the slot's last DMA waited for */
	HP_PF_FILL, /* stage.c: the chunk's copies posted (pool.c) */
	HP_PF_ISSUE, /* stage.c: its DMA enqueued (after its copies) */
	HP_PF_FENCE, /* stage.c: its event recorded */
	HP_PF_CALLER_COPY, /* pool.c: the calling thread's memcpy of parts */
	HP_PF_CALLER_IDLE, /* pool.c: its wait for the helpers' last part */
	HP_PF_HELPER_COPY, /* pool.c: the helpers' memcpy of parts */
	HP_PF_HANDOFF, /* pool.c: a job posted to a helper's first look */
	HP_PF_COPY_CPU, /* pool.c: the parts' copies, CPU time (the thread's
			 * clock: beside the copies' wall time, what other
			 * threads took of the CPU meanwhile) */
	HP_PF_N
};
#ifdef HP_STAGE_PROF
HP_HIDDEN void hp_prof_add(enum hp_prof k, uint64_t t0);
HP_HIDDEN uint64_t hp_prof_cpu(void);
#define HP_PROF_NOW() hp_now_ns()
#define HP_PROF_CPU() hp_prof_cpu()
#else
#define hp_prof_add(k, t0) ((void)(k), (void)(t0))
#define HP_PROF_NOW() ((uint64_t)0)
#define HP_PROF_CPU() ((uint64_t)0)
#endif

#endif
