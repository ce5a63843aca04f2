/* The node-wide ledger (ledger.h), joining it: attaching at start-up,
 * detaching at exit(), and joining again the file at the ledger's path
 * when the one mapped was removed (an epilog's `rm -rf /dev/shm/...`,
 * logind's RemoveIPC), replaced (renamed over) or truncated by another
 * process of the user's.  Such a process would otherwise keep counting in
 * a file no other process sees, and the node-wide cap would split.  It is
 * checked at most once a second: by every cap check (hp_ledger_check from
 * the pin policy) and, once the process has pinned something (only then
 * does its share count node-wide), by a thread of hostpin's that wakes
 * once a second, so a process that pins nothing new still moves within a
 * few seconds.  The file, mapping and checks: ledger.c; slots:
 * ledger_slots.c.  Raw syscalls, no stdio, no allocation. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <sys/sysinfo.h>
#include <time.h>

#include "ledger.h"
#include "ledger_int.h"

/* Set at exit(): no more joining. */
static _Atomic int detached;
/* One thread joins at a time. */
static _Atomic int joining;

/* Claim a slot in the ledger in use and move this process's counters
 * into it (a copy of hp_own); say so (at level) when the table is full. */
static void claim_own(const char *path, int lw)
{
	/* A LIVE slot with our pid in our PID namespace is our own image
	 * before an exec (same pid and start time), or a process long gone
	 * whose pid we got: either way no process of ours uses it any
	 * more. */
	int pid = (int)getpid();
	uint64_t me = hp_proc_start(0);
	struct hp_lslot *pre = NULL;
	uint32_t hw = atomic_load_explicit(&hp_led->hiwater, memory_order_relaxed);
	for (uint32_t i = 0; hp_led_myns && i < hw && i < HP_LEDGER_SLOTS; i++) {
		struct hp_lslot *s = &hp_led->slot[i];
		uint32_t w = atomic_load_explicit(&s->state,
						  memory_order_acquire);
		if (s->pid != pid || s->pidns != hp_led_myns)
			continue;
		/* our image before the exec, not a gone process's (a
		 * reaper may have marked it DEAD already: its lock went
		 * with the exec) */
		int ours = s->start == me && me != HP_START_UNKNOWN;
		if (HP_LS_ST(w) == HP_LS_LIVE) {
			/* not the image the process ends as
			 * (status_report); written before DEAD, after
			 * which the slot may be another's */
			if (ours)
				s->execd = 1;
			if (atomic_compare_exchange_strong_explicit(
				&s->state, &w, HP_LS_TO(w, HP_LS_DEAD),
				memory_order_acq_rel, memory_order_relaxed))
				w = HP_LS_TO(w, HP_LS_DEAD);
		}
		if (ours && HP_LS_ST(w) == HP_LS_DEAD && !s->ended && !pre)
			pre = s;
	}
	uint32_t w;
	int lk;
	struct hp_lslot *s = hp_led_claim_pre(pre, &w, &lk);
	if (!s) {
		hp_log(lw, "ledger %s is full (%d processes); this process is "
		       "not counted node-wide", path, HP_LEDGER_SLOTS);
		return;
	}
	hp_led_fill(s, w, lk, &hp_own, NULL);
	hp_led_self = s;
	hp_led_publish_to(s);
	hp_log(HP_LOG_INFO, "ledger %s, slot %d", path, (int)(s - hp_led->slot));
}

void hp_ledger_attach(void)
{
	char path[340];
	/* in secure-execution processes hostpin writes no files */
	if (strcmp(hp_optstr[HP_OPT_LEDGER], "off") == 0 || getauxval(AT_SECURE))
		return;
	hp_led_myns = hp_pidns(&hp_led_proc_ok);
	int fd = hp_led_find(path, sizeof(path), 0);
	if (fd < 0)
		return;
	struct hp_ledger *l = hp_led_map(fd, path);
	if (!l) {
		close(fd);
		return;
	}
	struct sysinfo si;
	if (sysinfo(&si) == 0 && si.totalram)
		hp_led_slot_max = (uint64_t)si.totalram * (si.mem_unit ? si.mem_unit : 1);
	hp_led_use(l, fd, path);
	claim_own(path, HP_LOG_WARN);
	hp_led_joined();
}

void hp_ledger_detach(void)
{
	atomic_store_explicit(&detached, 1, memory_order_relaxed);
	/* a join in progress ends first: it may be making a slot LIVE */
	while (atomic_exchange_explicit(&joining, 1, memory_order_acquire))
		;
	struct hp_lslot *s = hp_led_self;
	/* no copy after this one: the slot may be another's once DEAD */
	hp_ctr_unpublish(0);
	hp_led_self = NULL;
	if (s && hp_led_whole()) {
		/* the last counters (pwrite: no SIGBUS), then ended, then
		 * DEAD (release) */
		struct hp_ctr_target t;
		hp_led_target(s, &t);
		hp_ctr_copy_to(&t);
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		s->ended = (uint64_t)ts.tv_sec;
		uint32_t w = hp_led_self_w;
		/* the generation in w: a slot taken from us meanwhile is
		 * left be */
		atomic_compare_exchange_strong_explicit(
		    &s->state, &w, HP_LS_TO(w, HP_LS_DEAD),
		    memory_order_release, memory_order_relaxed);
	}
	atomic_store_explicit(&joining, 0, memory_order_release);
}

/* Join the file now at the ledger's path: the old mapping and descriptor
 * retired (the old file is gone, or not ours to count in any more), a new
 * slot claimed, this process's counters (hp_own) copied in. */
static void rejoin(void)
{
	char path[340];
	/* from here until a slot is ours, this process counts alone */
	hp_ctr_unpublish(0);
	hp_led_self = NULL;
	hp_led_retire(hp_led);
	int fd = hp_led_find(path, sizeof(path), 1);
	struct hp_ledger *l = fd >= 0 ? hp_led_map(fd, path) : NULL;
	if (!l) {
		if (fd >= 0)
			close(fd);
		hp_log(HP_LOG_INFO, "ledger: the file was removed or replaced "
		       "and no ledger can be joined at its path now; tried "
		       "again in a second");
		return;
	}
	/* hp_led (the old address) now maps private zeros: readers holding
	 * it see no slot; the new mapping replaces it */
	hp_led_use(l, fd, path);
	claim_own(path, HP_LOG_INFO);
	hp_led_joined();
	if (hp_led_self)
		hp_log(HP_LOG_INFO, "ledger %s was removed, replaced or "
		       "truncated: this process joined the file now there, "
		       "with its counters", path);
}

int hp_ledger_check(void)
{
	static _Atomic uint64_t last;
	if (!hp_led)
		return 0; /* never had one: nothing to join again */
	if (!hp_led_second_passed(&last))
		return 0;
	if (atomic_load_explicit(&detached, memory_order_relaxed) || hp_in_child)
		return 0;
	if (hp_led_self && !hp_led_moved())
		return 0;
	if (!hp_led_self && !hp_led_moved())
		return 0; /* a full table, or none at the path now */
	if (atomic_exchange_explicit(&joining, 1, memory_order_acquire))
		return 0;
	if (!atomic_load_explicit(&detached, memory_order_relaxed))
		rejoin();
	atomic_store_explicit(&joining, 0, memory_order_release);
	return 1;
}

/* The thread that checks once a second (hp_ledger_watch). */
static void *watch(void *arg)
{
	(void)arg;
	const struct timespec sec = {1, 0};
	while (!atomic_load_explicit(&detached, memory_order_relaxed)) {
		nanosleep(&sec, NULL);
		hp_ledger_check();
	}
	return NULL;
}

void hp_ledger_watch(void)
{
	static _Atomic int started;
	if (!hp_led || hp_in_child ||
	    atomic_exchange_explicit(&started, 1, memory_order_relaxed))
		return;
	if (hp_thread_start(watch, NULL, 64 << 10))
		hp_log(HP_LOG_DEBUG, "ledger: no watching thread; the file is "
		       "checked at cap checks only");
}

/* Where this process's counters are copied (hp.h): slot s of the file in
 * use; two targets in turn, so a copy in progress never reads one being
 * rewritten (a join comes at most once a second).  Copied once now. */
void hp_led_target(struct hp_lslot *s, struct hp_ctr_target *t)
{
	hp_snprintf(t->path, sizeof(t->path), "%s", hp_led_path_in_use());
	t->dev = hp_led_lock_dev;
	t->ino = hp_led_lock_ino;
	t->size = (off_t)sizeof(struct hp_ledger);
	t->off = (off_t)((char *)&s->ctr - (char *)hp_led);
}
void hp_led_publish_to(struct hp_lslot *s)
{
	static struct hp_ctr_target tg[2];
	static int k;
	struct hp_ctr_target *t = &tg[k ^= 1];
	hp_led_target(s, t);
	atomic_store(&hp_ctr_pub, t);
	hp_ctr_publish(1);
}
