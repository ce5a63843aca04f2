/* The copying threads of a staged copy kept on CPUs of their own (issue
 * 43).  A thread that copies into or out of the ring (a calling thread for
 * its copy's length, a copy thread for each part) notes the CPU it runs
 * on; one that finds another of the process's copying threads noted on
 * its CPU, while a CPU it may use has none, moves there: its affinity set
 * to that CPU alone, then back to the mask it had (a move within the
 * thread's own mask, which is left as it was; the kernel's placement from
 * then on).  Two copying threads on one CPU take turns at the copy while
 * another CPU idles: on a 2-CPU virtual machine whose scheduler packs
 * threads onto a busy vCPU, two program threads copying on two streams
 * shared one vCPU for 30 ms of a 32 ms copy while the other idled
 * (scripts/bench-link's two-stream row, 1 run in 6 under 0.85 of the
 * CPUs' ceiling).  A thread that may use one CPU, a failed affinity call
 * (a seccomp filter), or no free CPU: it stays where it is.  The notes
 * are per process and approximate (a thread the kernel moves is noted
 * where it was until its next look): a move costs two system calls, and
 * only a collision asks for one.  The CPU moved to is claimed first (its
 * note taken from none to this thread's): two threads that meet on a CPU
 * look at once, and each picked the same free CPU, where they met again
 * while the CPU they left idled (a 64 MiB first copy at 10.8 GB/s against
 * 19 on this machine, the caller and its copy thread both moved); the one
 * whose claim fails stays, alone once the other's note has left. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#include "stage.h"

#define NCPU CPU_SETSIZE
static _Atomic unsigned short on_cpu[NCPU]; /* copying threads noted */
static HP_TLS int mine = -1; /* this thread's note: its CPU, or -1 */
static _Atomic unsigned long moves;

static void note(int c)
{
	if (mine >= 0)
		atomic_fetch_sub_explicit(&on_cpu[mine], 1,
					  memory_order_relaxed);
	mine = c;
	if (c >= 0)
		atomic_fetch_add_explicit(&on_cpu[c], 1, memory_order_relaxed);
}

int hp_spread_pick(int c, const cpu_set_t *m, const unsigned short *noted)
{
	if (c < 0 || c >= NCPU || noted[c] < 2 || CPU_COUNT(m) < 2)
		return -1;
	for (int k = 0; k < NCPU; k++)
		if (k != c && CPU_ISSET(k, m) && noted[k] == 0)
			return k;
	return -1;
}

#ifdef HP_EMBEDDED_TEST
int (*hp_spread_cpu)(void) = sched_getcpu; /* check_spread.c's CPU */
void (*hp_spread_between)(int to); /* check_spread.c: after the pick */
#define cpu_now() hp_spread_cpu()
#define between(to) (hp_spread_between ? hp_spread_between(to) : (void)0)
#else
#define cpu_now() sched_getcpu()
#define between(to) ((void)0)
#endif

void hp_spread(void)
{
	int c = cpu_now();
	if (c < 0 || c >= NCPU) {
		note(-1);
		return;
	}
	if (c != mine)
		note(c);
	if (atomic_load_explicit(&on_cpu[c], memory_order_relaxed) < 2)
		return;
	cpu_set_t m, one;
	if (pthread_getaffinity_np(pthread_self(), sizeof(m), &m) != 0)
		return;
	unsigned short noted[NCPU]; /* a snapshot (2 KiB of stack) */
	for (int k = 0; k < NCPU; k++)
		noted[k] = (unsigned short)atomic_load_explicit(
			&on_cpu[k], memory_order_relaxed);
	int to = hp_spread_pick(c, &m, noted);
	if (to < 0)
		return;
	between(to);
	/* claimed, or another thread took it since the snapshot: stay */
	unsigned short none = 0;
	if (!atomic_compare_exchange_strong_explicit(&on_cpu[to], &none, 1,
						     memory_order_relaxed,
						     memory_order_relaxed))
		return;
	atomic_fetch_sub_explicit(&on_cpu[c], 1, memory_order_relaxed);
	mine = to;
	CPU_ZERO(&one);
	CPU_SET(to, &one);
	if (pthread_setaffinity_np(pthread_self(), sizeof(one), &one) != 0) {
		note(c); /* not moved: noted where it is */
		return;
	}
	/* the mask back as it was: the thread stays where it was moved (a
	 * program that sets this thread's mask from another thread at this
	 * very moment loses that setting: the window is two system calls) */
	if (pthread_setaffinity_np(pthread_self(), sizeof(m), &m) != 0)
		HP_LOG_ONCE(HP_LOG_WARN, "staging: a copying thread moved to "
			    "CPU %d could not be given its CPUs back (its "
			    "affinity stays that one CPU)", to);
	atomic_fetch_add_explicit(&moves, 1, memory_order_relaxed);
	c = cpu_now();
	if (c != to)
		note(c >= 0 && c < NCPU ? c : -1);
}

unsigned hp_spread_noted(int c)
{
	return c >= 0 && c < NCPU ? atomic_load_explicit(&on_cpu[c],
							 memory_order_relaxed)
				  : 0;
}

void hp_spread_more(void)
{
	if (mine >= 0)
		hp_spread();
}

void hp_spread_leave(void)
{
	if (mine >= 0)
		note(-1);
}

unsigned long hp_spread_moves(void)
{
	return atomic_load_explicit(&moves, memory_order_relaxed);
}
