/* The node-wide ledger: one shared-memory file per user and node (default
 * /dev/shm/hostpin-<uid>) holding a fixed table of per-process slots.  Each
 * hostpin process keeps its statistics counters (struct hp_counters) in its
 * own slot, so that other processes see its pinned and cached bytes (for
 * the node-wide cap and cache budget) and `hostpin status` and the
 * launcher's merged report see everything it did, even after it was killed.
 * A slot names its process by pid and start time (/proc/PID/stat field 22),
 * so a slot whose process died without a word (SIGKILL, crash) is
 * recognised and reclaimed.  Included by the library and by the status
 * program. */
#ifndef HP_LEDGER_H
#define HP_LEDGER_H

#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "hp.h"

#define HP_LEDGER_SLOTS 1024
#define HP_LEDGER_MAGIC 0x68706c6775ull /* "hplgu" */
#define HP_LEDGER_CMD 96

/* Slot states.  A slot goes FREE -> CLAIM (its claimer fills it) -> LIVE,
 * then DEAD once its process is seen gone (the counters stay, for the
 * job's report), then FREE again when the report has read it or the slot
 * is needed. */
enum { HP_LS_FREE, HP_LS_CLAIM, HP_LS_LIVE, HP_LS_DEAD };

struct hp_lslot {
	_Atomic uint32_t state;
	int32_t pid;
	uint64_t start;	  /* start time of pid, clock ticks since boot */
	int32_t rank, local_rank; /* -1: unset */
	int32_t job_pid;	  /* HOSTPIN_JOB: the launcher's pid, or 0 */
	int32_t ppid;
	uint64_t job_start;	  /* start time of job_pid */
	uint64_t born;		  /* CLOCK_REALTIME seconds at attach */
	char cmd[HP_LEDGER_CMD]; /* command line, arguments space-separated */
	struct hp_counters ctr;	  /* the process's live counters */
};

struct hp_ledger {
	/* HP_LEDGER_MAGIC << 32 | sizeof(struct hp_lslot): set once by the
	 * creator; a file of another layout is left alone. */
	_Atomic uint64_t layout;
	_Atomic uint32_t hiwater; /* slots above this were never used */
	uint32_t pad_;
	char pad[48];
	struct hp_lslot slot[HP_LEDGER_SLOTS];
};

#define HP_LEDGER_LAYOUT (HP_LEDGER_MAGIC << 32 | sizeof(struct hp_lslot))

/* ---- the library's side (ledger.c) ---- */
/* Attach at initialisation: claim a slot, move the counters into it. */
HP_HIDDEN void hp_ledger_attach(void);
/* In a forked child: a slot of its own (the parent's counters stay the
 * parent's). */
HP_HIDDEN void hp_ledger_fork_child(void);
HP_HIDDEN int hp_ledger_on(void);
/* Sum of one counter (an offset into struct hp_counters) over the live
 * slots, this process's included; this process's own value when no ledger
 * is attached. */
HP_HIDDEN uint64_t hp_ledger_sum(size_t off);
/* Mark the slots of processes that are gone DEAD (at most once a second);
 * 1 if any was. */
HP_HIDDEN int hp_ledger_reap(void);
#define HP_LEDGER_SUM(c) hp_ledger_sum(offsetof(struct hp_counters, c))

/* ---- shared with the status program ---- */
/* The start time of pid (field 22 of /proc/PID/stat); 0 if it is gone or a
 * zombie (its memory is released already).  Raw open/read, no allocation. */
static inline uint64_t hp_proc_start(int pid)
{
	char path[48], buf[1024];
	hp_snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	/* the command (field 2) may hold spaces and parentheses: fields are
	 * counted from the last ')' */
	char *p = strrchr(buf, ')');
	if (!p || p[1] != ' ')
		return 0;
	p += 2;
	if (*p == 'Z' || *p == 'X')
		return 0;
	for (int field = 3; field < 22 && *p; p++)
		if (*p == ' ')
			field++;
	uint64_t v = 0;
	for (; *p >= '0' && *p <= '9'; p++)
		v = v * 10 + (uint64_t)(*p - '0');
	return v ? v : 1;
}

#endif
