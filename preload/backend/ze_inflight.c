/* Level Zero copies that may not have run yet (invariant 1).  A copy
 * appended to a command list runs when the list is executed on a queue,
 * some time before the queue is synchronised; one appended to an immediate
 * list runs some time before the list is synchronised.  Until then the
 * driver may DMA from or into the host range, so hostpin's import of it
 * must stay: ze_unpin asks hp_ze_inflight_busy and answers EAGAIN, and the
 * policy keeps the block mapped and imported until a later retry
 * (hp_retry_deferred, which the synchronisation hooks call).
 *
 * An entry lives as long as its list holds the copy (a regular list can be
 * executed again): appended (not yet run), queued (executed on a queue not
 * synchronised since), idle (ran; the list still holds it).  Appended and
 * queued are busy.  The table is small and guarded by one mutex, never held
 * across a driver call.  When it is full, every range counts as busy until
 * the lists that filled it are reset or destroyed: a later release, never
 * an early one. */
#include <pthread.h>
#include <stdint.h>

#include "ze_api.h"

#define MAXE 1024
enum { E_FREE, E_APPENDED, E_QUEUED, E_IDLE };
static struct ent {
	hp_ze_h list, queue, fence, ev;
	uintptr_t lo, hi;
	int st;
} ents[MAXE];
/* the immediate lists (created by zeCommandListCreateImmediate, not yet
 * destroyed); one not here counts as regular: its copies wait for a queue */
#define MAXIMM 64
static hp_ze_h imm[MAXIMM];
static int nused; /* entries not free (upper bound of the scan) */
static int overflow; /* copies that found the table full, not yet dropped */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

void hp_ze_inflight_add(hp_ze_h list, const void *p, size_t n, hp_ze_h ev)
{
	uintptr_t a = (uintptr_t)p;
	pthread_mutex_lock(&mu);
	int i = 0;
	while (i < nused && ents[i].st != E_FREE)
		i++;
	if (i == MAXE) {
		overflow++;
	} else {
		ents[i] = (struct ent){list, NULL, NULL, ev, a, a + (n ? n : 1),
				       E_APPENDED};
		if (i == nused)
			nused++;
	}
	pthread_mutex_unlock(&mu);
}

void hp_ze_inflight_exec(hp_ze_h q, uint32_t n, hp_ze_h *lists,
			 hp_ze_h fence)
{
	pthread_mutex_lock(&mu);
	for (uint32_t k = 0; lists && k < n; k++)
		for (int i = 0; i < nused; i++)
			if (ents[i].st != E_FREE && ents[i].list == lists[k]) {
				ents[i].st = E_QUEUED, ents[i].queue = q;
				ents[i].fence = fence;
			}
	pthread_mutex_unlock(&mu);
}

void hp_ze_inflight_immediate(hp_ze_h list)
{
	pthread_mutex_lock(&mu);
	for (int i = 0; i < MAXIMM; i++)
		if (imm[i] == NULL || imm[i] == list) {
			imm[i] = list;
			break;
		}
	pthread_mutex_unlock(&mu);
}

/* under mu */
static int immediate(hp_ze_h list)
{
	for (int i = 0; i < MAXIMM; i++)
		if (imm[i] == list)
			return 1;
	return 0;
}

static void trim(void)
{
	while (nused > 0 && ents[nused - 1].st == E_FREE)
		nused--;
	if (nused == 0)
		overflow = 0;
}

/* The copy's signal event was seen signalled: that copy ran (an immediate
 * list's is then gone; a regular list's stays, idle, for its next
 * execution). */
void hp_ze_inflight_event_done(hp_ze_h ev)
{
	pthread_mutex_lock(&mu);
	for (int i = 0; ev && i < nused; i++) {
		struct ent *e = &ents[i];
		if (e->ev != ev || e->st == E_FREE || e->st == E_IDLE)
			continue;
		if (e->st == E_QUEUED)
			e->st = E_IDLE;
		else if (immediate(e->list))
			e->st = E_FREE;
	}
	trim();
	pthread_mutex_unlock(&mu);
}

/* The fence given with an execution was seen signalled. */
void hp_ze_inflight_fence_done(hp_ze_h fence)
{
	pthread_mutex_lock(&mu);
	for (int i = 0; fence && i < nused; i++)
		if (ents[i].st == E_QUEUED && ents[i].fence == fence)
			ents[i].st = E_IDLE;
	pthread_mutex_unlock(&mu);
}

void hp_ze_inflight_queue_synced(hp_ze_h q)
{
	pthread_mutex_lock(&mu);
	for (int i = 0; i < nused; i++)
		if (ents[i].st == E_QUEUED && ents[i].queue == q)
			ents[i].st = E_IDLE;
	pthread_mutex_unlock(&mu);
}

/* An immediate list synchronised: its copies ran, and it keeps none. */
void hp_ze_inflight_list_synced(hp_ze_h list)
{
	pthread_mutex_lock(&mu);
	for (int i = 0; i < nused; i++)
		if (ents[i].st != E_FREE && ents[i].list == list &&
		    ents[i].st != E_QUEUED)
			ents[i].st = E_FREE;
	trim();
	pthread_mutex_unlock(&mu);
}

/* Reset or destroyed: the list holds no copy any more.  One still queued
 * (the program did not wait, against the specification) stays busy until
 * its queue is synchronised. */
void hp_ze_inflight_list_reset(hp_ze_h list, int destroyed)
{
	pthread_mutex_lock(&mu);
	for (int i = 0; i < nused; i++)
		if (ents[i].list == list && ents[i].st != E_QUEUED)
			ents[i].st = E_FREE;
	trim();
	for (int i = 0; destroyed && i < MAXIMM; i++)
		if (imm[i] == list)
			imm[i] = NULL;
	pthread_mutex_unlock(&mu);
}

int hp_ze_inflight_busy(const void *p, size_t n)
{
	uintptr_t a = (uintptr_t)p, b = a + n;
	pthread_mutex_lock(&mu);
	int busy = overflow > 0;
	for (int i = 0; i < nused && !busy; i++)
		busy = (ents[i].st == E_APPENDED || ents[i].st == E_QUEUED) &&
		       ents[i].lo < b && a < ents[i].hi;
	pthread_mutex_unlock(&mu);
	return busy;
}

void hp_ze_inflight_fork_child(void)
{
	/* the child has one thread and makes no device call: nothing of the
	 * parent's runs for it */
	pthread_mutex_init(&mu, NULL);
	nused = overflow = 0;
	for (int i = 0; i < MAXIMM; i++)
		imm[i] = NULL;
}
