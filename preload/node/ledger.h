/* The node-wide ledger: one shared-memory file per user and node (default
 * /dev/shm/hostpin-<uid>) holding a fixed table of per-process slots.  Each
 * hostpin process keeps a copy of its statistics counters (struct
 * hp_counters; its own are in its own memory, hp_own) in its own slot,
 * written with pwrite (hp.h: hp_ctr_publish) and summed by the others with
 * pread (ledger_slots.c), never through the mapping, so
 * that other processes see its pinned and cached bytes (for the node-wide
 * cap and cache budget) and `hostpin status` and the launcher's merged
 * report see everything it did, even after it was killed.
 * A slot's process holds, for its whole life, an open-file-description
 * write lock (F_OFD_SETLK) on the first byte of its slot in the file,
 * taken through the descriptor it mapped the file from and then closed:
 * the mapping holds the description, and so the lock, and no descriptor
 * of hostpin's stays in the program's table (a forked child opens the
 * file again, and maps the ledger again from it, before it claims a slot
 * of its own, since the inherited mapping keeps the parent's lock).  A
 * file removed or replaced under a process: ledger_join.c.  The kernel
 * drops the lock when
 * the process dies, whatever its PID namespace, so a reaper that finds the
 * byte unlocked (F_OFD_GETLK) knows the slot's process is gone: a process
 * SIGKILLed in another PID namespace (a container sharing IPC) stops
 * counting against node caps.  Where the lock could not be taken (no
 * descriptor, a file system without such locks) the slot says so and its
 * process is known by pid, start time (/proc/PID/stat field 22) and PID
 * namespace (the inode of /proc/self/ns/pid) alone: a slot whose process
 * cannot be seen from here (another PID namespace, /proc unreadable)
 * then counts as live.
 *
 * Where it lives (hp_ledger_dir): /dev/shm/hostpin-UID.d/ledger-vV-S, in a
 * directory mode 0700 of the user's.  /dev/shm is writable by every user,
 * so another user can take that name first; then the ledger lives in
 * /dev/shm/hostpin-UID.d-N (N = 1..8), the first of those names that is a
 * directory of the user's (made if none): a fixed, short list of names
 * looked at, never a listing of /dev/shm (no other user can make a start-up
 * slow).
 * The file is made whole before it gets its name: created O_EXCL under a
 * temporary name, its pages reserved (fallocate; a full /dev/shm means no
 * ledger, never a SIGBUS later), its header written, then linked to its
 * name.  So a file of that name without hostpin's header, or owned by
 * another user, or not 0600, or not fully backed, is never written into.
 * Included by the library and by the status program. */

#ifndef HP_LEDGER_H
#define HP_LEDGER_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../hp.h"

#define HP_LEDGER_SLOTS 1024
/* The high half of the header's layout word: "plgu" (the value ledgers of
 * this version have always carried; a wider constant once had its top
 * byte shifted out of the word). */
#define HP_LEDGER_MAGIC 0x706c6775u
/* raise with every change of layout or meaning: 4, the slot lock (a
 * process of version 3 holds none, and would be reaped as dead) */
#define HP_LEDGER_VERSION 4
/* the file in the directory, named by version and slot size: hostpin
 * versions of other layouts on one node use ledgers of their own, without
 * a word */
#define HP_LEDGER_NAME_FMT "ledger-v%d-%zu"
#define HP_LEDGER_CMD 96

/* Slot states, the low 8 bits of the state word; the upper 24 bits are
 * a generation, advanced by every claim, so a compare-and-swap from a
 * state seen before cannot act on a slot reclaimed meanwhile.  A slot
 * goes FREE -> CLAIM (its claimer fills it) -> LIVE, then DEAD once its
 * process is seen gone (the counters stay, for the job's report), then
 * FREE again when the report has read it or the slot is needed.  SUM: a
 * running launcher job's summary (ledger_slots.c): when no slot is free,
 * a claimer folds the DEAD slots kept for that job's report into one slot
 * (their counters summed, how many processes in HP_SUM_DID)
 * and takes the slots so freed, so a long job never fills the table and
 * its report still counts every process. */
enum { HP_LS_FREE, HP_LS_CLAIM, HP_LS_LIVE, HP_LS_DEAD, HP_LS_SUM };
/* A SUM slot's count of the processes folded into it (its rank field;
 * its pid is 0). */
#define HP_SUM_DID(s) ((s)->rank)
#define HP_LS_ST(w) ((w) & 0xffu)
#define HP_LS_GEN(w) ((w) >> 8)
#define HP_LS_MK(st, gen) ((uint32_t)(gen) << 8 | (uint32_t)(st))
/* the same generation, another state */
#define HP_LS_TO(w, st) (((w) & ~0xffu) | (uint32_t)(st))

struct hp_lslot {
	_Atomic uint32_t state;	  /* HP_LS_MK(state, generation) */
	int32_t pid;
	uint64_t start;	  /* start time of pid, clock ticks since boot;
			     HP_START_UNKNOWN if it could not be read */
	uint64_t pidns;	  /* inode of the PID namespace of pid; 0: unknown */
	int32_t rank, local_rank; /* -1: unset */
	int32_t job_pid;	  /* HOSTPIN_JOB: the launcher's pid, or 0 */
	int32_t ppid;
	uint32_t locked;	  /* 1: its process holds the slot's lock */
	uint32_t execd;	  /* 1: the image its process had before an
			     exec (the next image marked it dead) */
	uint64_t job_start;	  /* start time of job_pid */
	uint64_t born;		  /* CLOCK_REALTIME seconds at attach */
	uint64_t ended;		  /* CLOCK_REALTIME seconds at exit(), or 0 */
	char cmd[HP_LEDGER_CMD]; /* command line, arguments space-separated */
	struct hp_counters ctr;	  /* the process's live counters */
};

struct hp_ledger {
	/* HP_LEDGER_LAYOUT (the magic, the slot size), and
	 * HP_LEDGER_VERSION: written once, by the creator, before the file
	 * has its name; a file without them is never written into. */
	_Atomic uint64_t layout;
	uint32_t version;
	_Atomic uint32_t hiwater; /* slots above this were never used */
	uint64_t size;		  /* sizeof(struct hp_ledger) */
	char pad[40];
	struct hp_lslot slot[HP_LEDGER_SLOTS];
};

/* The layout word: HP_LEDGER_MAGIC in the high 32 bits, the slot size in
 * the low 32. */
#define HP_LEDGER_LAYOUT                                                      \
	((uint64_t)HP_LEDGER_MAGIC << 32 | (uint64_t)sizeof(struct hp_lslot))
_Static_assert(HP_LEDGER_MAGIC <= 0xffffffffu &&
		   sizeof(struct hp_lslot) <= 0xffffffffu,
	       "the magic and the slot size each fill one half of the word");

/* ---- the library's side (ledger.c) ---- */
/* Attach at initialisation: claim a slot, move the counters into it. */
HP_HIDDEN void hp_ledger_attach(void);
/* In a forked child: a slot of its own (the parent's counters stay the
 * parent's). */
HP_HIDDEN void hp_ledger_fork_child(void);
HP_HIDDEN int hp_ledger_on(void);
/* At exit(): the slot is DEAD at once (it no longer counts against the
 * node-wide caps, even for processes that cannot see ours: another PID
 * namespace); the counters go on in private memory. */
HP_HIDDEN void hp_ledger_detach(void);
/* Sum of one counter (an offset into struct hp_counters) over the live
 * slots, this process's included; this process's own value when no ledger
 * is attached. */
HP_HIDDEN uint64_t hp_ledger_sum(size_t off);
/* How many live slots hold a nonzero counter (an offset as above), this
 * process's included (its own alone when no ledger is attached): the
 * processes doing a thing on this node (speed.c: staging). */
HP_HIDDEN unsigned hp_ledger_live(size_t off);
/* Mark the slots of processes that are gone DEAD (at most once a second);
 * 1 if any was. */
HP_HIDDEN int hp_ledger_reap(void);
/* At most once a second: if the ledger file was removed, replaced or
 * truncated, join the file now at its path (ledger_join.c); 1 if it
 * tried. */
HP_HIDDEN int hp_ledger_check(void);
/* Once this process has pinned something: a thread of hostpin's that runs
 * hp_ledger_check once a second. */
HP_HIDDEN void hp_ledger_watch(void);
#define HP_LEDGER_SUM(c) hp_ledger_sum(offsetof(struct hp_counters, c))

/* ---- shared with the status program ---- */
#define HP_START_UNKNOWN UINT64_MAX
/* The start time of pid (field 22 of /proc/PID/stat); 0 if it is gone or a
 * zombie (its memory is released already); HP_START_UNKNOWN if that cannot
 * be told (/proc unreadable, no descriptor left: EMFILE).  Raw open/read,
 * no allocation. */
static inline uint64_t hp_proc_start(int pid) /* 0: this process */
{
	char path[48], buf[1024];
	if (pid)
		hp_snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	else
		hp_snprintf(path, sizeof(path), "/proc/self/stat");
	ssize_t n = hp_read_small(path, buf, sizeof(buf));
	if (n < 0 && (errno == ENOENT || errno == ESRCH))
		return 0;
	if (n <= 0)
		return HP_START_UNKNOWN;
	/* the command (field 2) may hold spaces and parentheses: fields are
	 * counted from the last ')' */
	char *p = strrchr(buf, ')');
	if (!p || p[1] != ' ')
		return HP_START_UNKNOWN;
	p += 2;
	if (*p == 'Z' || *p == 'X')
		return 0;
	for (int field = 3; field < 22 && *p; p++)
		if (*p == ' ')
			field++;
	uint64_t v = 0;
	for (int i = 0; *p >= '0' && *p <= '9' && i < 19; p++, i++)
		v = v * 10 + (uint64_t)(*p - '0');
	return v && v != HP_START_UNKNOWN ? v : 1;
}

/* This process's PID namespace (the inode of /proc/self/ns/pid); 0 if it
 * cannot be read.  *proc_ok: /proc shows this namespace's processes (its
 * "self" is our pid), so /proc/PID/stat may be read for liveness. */
static inline uint64_t hp_pidns(int *proc_ok)
{
	struct stat st;
	char self[24], want[24];
	ssize_t n = readlink("/proc/self", self, sizeof(self) - 1);
	hp_snprintf(want, sizeof(want), "%d", (int)getpid());
	*proc_ok = n > 0 && (self[n] = '\0', strcmp(self, want) == 0);
	return stat("/proc/self/ns/pid", &st) == 0 ? (uint64_t)st.st_ino : 0;
}

/* The byte of slot i, which its process keeps write-locked. */
#define HP_SLOT_LOCK_OFF(i)                                                   \
	((off_t)(offsetof(struct hp_ledger, slot) +                           \
		 (size_t)(i) * sizeof(struct hp_lslot)))

/* The one-byte lock range of slot i, of type (F_WRLCK, F_UNLCK). */
static inline struct flock hp_slot_flock(uint32_t i, short type)
{
	struct flock fl;
	memset(&fl, 0, sizeof(fl));
	fl.l_type = type;
	fl.l_whence = SEEK_SET;
	fl.l_start = HP_SLOT_LOCK_OFF(i);
	fl.l_len = 1;
	return fl;
}

/* Slot i's lock as seen through fd (a description of the ledger file
 * that does not hold it: a lock of fd's own description never
 * conflicts): 1 held (its process lives), 0 free, -1 unknown (no
 * descriptor, no OFD locks here).  No allocation. */
static inline int hp_slot_locked(int fd, uint32_t i)
{
	struct flock fl = hp_slot_flock(i, F_WRLCK);
	if (fd < 0 || fcntl(fd, F_OFD_GETLK, &fl))
		return -1;
	return fl.l_type != F_UNLCK;
}

/* 1 only if the process of a slot (pid, start time, PID namespace; lk:
 * its lock, hp_slot_locked, or -1 for a slot whose process holds none)
 * is surely gone as seen from PID namespace myns.  A held lock: alive.  A
 * free lock: gone, whatever the namespace (the process died, or its image
 * was replaced by an exec, which unmaps and closes what held the lock:
 * nothing of that image stays pinned).  No lock to go by: a slot of
 * another (or an unknown) namespace, or whose process cannot be looked
 * at, is not gone.  fast: kill(pid, 0) only, no /proc read. */
static inline int hp_slot_gone(int pid, uint64_t start, uint64_t ns,
			       uint64_t myns, int fast, int lk)
{
	if (lk >= 0)
		return !lk;
	if (!ns || ns != myns)
		return 0;
	if (pid <= 0)
		return 1;
	if (kill(pid, 0) != 0 && errno == ESRCH)
		return 1;
	if (fast)
		return 0;
	uint64_t now = hp_proc_start(pid);
	if (now == HP_START_UNKNOWN)
		return 0;
	if (now == 0)
		return 1;
	return start != HP_START_UNKNOWN && now != start;
}


/* With the mlock backend, once something was locked: what that buys (a
 * process's counters, or a job's merged); NULL otherwise. */
static inline const char *hp_mlock_note(const struct hp_counters *c)
{
	if ((atomic_load_explicit(&c->backend, memory_order_relaxed) & 15) !=
		HP_BK_MLOCK ||
	    !atomic_load_explicit(&c->pinned_bytes_peak, memory_order_relaxed))
		return NULL;
	return "backend mlock: pages locked in RAM, nothing registered with a "
	       "GPU: nothing to gain without one (copies run at DMA speed only "
	       "from memory a GPU driver registered)";
}

/* Why nothing was pinned, in one line (without a trailing newline) into
 * buf[cap], from a process's counters (or a job's, merged: counts summed,
 * backend flags or'ed); NULL if something was pinned. */
static inline const char *hp_idle_reason(const struct hp_counters *c,
					 char *buf, size_t cap)
{
#define HP_IR(f) atomic_load_explicit(&c->f, memory_order_relaxed)
	if (HP_IR(pinned_bytes_peak))
		return NULL;
	uint64_t bk = HP_IR(backend), n = HP_IR(large_blocks);
	unsigned id = (unsigned)(bk & 15), chose = (unsigned)(bk >> 4 & 15);
	char of[64], t[24];
	hp_snprintf(of, sizeof(of), " (0 of %llu large block%s pinned)",
		    (unsigned long long)n, n == 1 ? "" : "s");
	const char *p = "nothing pinned: ";
	if (id == HP_BK_NONE)
		hp_snprintf(buf, cap, "%sthe backend is none (HOSTPIN_BACKEND="
			    "none, or HOSTPIN_REGISTER_DEVICE=0)%s", p, of);
	else if (n == 0)
		hp_snprintf(buf, cap, "%sno block of HOSTPIN_THRESHOLD (%s) or "
			    "more was allocated", p,
			    hp_human(HP_IR(threshold), t));
	else if (!(bk & HP_BK_DRIVER) && id >= HP_BK_CUDA)
		hp_snprintf(buf, cap, "%sno %s was loaded%s", p,
			    id == HP_BK_CUDA ? "CUDA driver"
			    : id == HP_BK_LEVEL_ZERO
				? "Level Zero loader"
				: "CUDA or Level Zero driver",
			    of);
	else if (!(bk & HP_BK_READY))
		hp_snprintf(buf, cap, "%s%s%s", p,
			    id == HP_BK_CUDA ? "the CUDA driver was loaded, but "
					       "no CUDA context was ever current"
			    : id == HP_BK_LEVEL_ZERO
				? "the Level Zero loader was loaded, but "
				  "zeInit never succeeded"
				: "a device driver was loaded, but the device "
				  "was never ready (no CUDA context current, "
				  "no successful zeInit)",
			    of);
	else if (HP_IR(pin_after) && HP_IR(fail_count) == 0 &&
		 HP_IR(over_cap) == 0 &&
		 (id == HP_BK_CUDA ||
		  (id == HP_BK_AUTO && chose == HP_BK_CUDA)))
		hp_snprintf(buf, cap, "%sno block reached HOSTPIN_PIN_AFTER="
			    "%llu device copies (%llu copies seen)%s", p,
			    (unsigned long long)HP_IR(pin_after),
			    (unsigned long long)HP_IR(copies_seen), of);
	else if (HP_IR(over_cap))
		hp_snprintf(buf, cap, "%sHOSTPIN_MAX_PINNED or "
			    "HOSTPIN_NODE_MAX_PINNED was reached%s", p, of);
	else if (HP_IR(fail_count))
		hp_snprintf(buf, cap, "%severy registration failed (%llu "
			    "failures)%s", p,
			    (unsigned long long)HP_IR(fail_count), of);
	else
		hp_snprintf(buf, cap, "nothing pinned%s", of);
#undef HP_IR
	return buf;
}

/* A directory that is the user's own: opened without following a link, a
 * directory, owned by the effective user, no access for group or others.
 * Its descriptor, or -1. */
static inline int hp_own_dir(const char *path)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (fd >= 0 && (fstat(fd, &st) || !S_ISDIR(st.st_mode) ||
			st.st_uid != geteuid() || (st.st_mode & 077))) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* A ledger file of the user's, open (rw or read-only): a regular file
 * reached without a link, owned by the effective user, mode 0600 (no
 * access for others), exactly a ledger's size and fully backed (every
 * page reserved: writing it cannot fail with SIGBUS).  The header is
 * checked once it is mapped.  Its descriptor, or -1 with errno (EEXIST:
 * a file there that is not a ledger of ours). */
static inline int hp_ledger_open_checked(int dirfd, const char *name, int rw)
{
	int fd = openat(dirfd, name, (rw ? O_RDWR : O_RDONLY) | O_NOFOLLOW |
					 O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return errno == ELOOP ? (errno = EEXIST, -1) : -1;
	struct stat st;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & 077) ||
	    st.st_size != (off_t)sizeof(struct hp_ledger) ||
	    (uint64_t)st.st_blocks * 512 < sizeof(struct hp_ledger)) {
		close(fd);
		errno = EEXIST;
		return -1;
	}
	return fd;
}

/* Other names tried for the ledger's directory when /dev/shm/hostpin-UID.d
 * is not the user's: hostpin-UID.d-1 .. -HP_LEDGER_DIR_ALT. */
#define HP_LEDGER_DIR_ALT 8

/* The default ledger's directory for the effective user, into path[cap]
 * (see the top of this file); its descriptor, or -1.  create: make it if
 * there is none (the library); *taken: set to the owner of a
 * /dev/shm/hostpin-UID.d that is not the user's (or -1 for a link or
 * other file of the user's), for a message.  At most 1 + HP_LEDGER_DIR_ALT
 * names are looked at, never a listing of /dev/shm: another user who
 * fills /dev/shm with names costs nobody's start-up anything.  When
 * another user took all of them, a last name no other user can take:
 * /run/hostpin-0.d for root (/run is root's), /run/user/UID/hostpin.d for
 * others (the user's runtime directory, where logind made one); without
 * one of those the user has no ledger (per-process caps still apply),
 * which filling /dev/shm does as well. */
static inline int hp_ledger_dir(char *path, size_t cap, int create,
				long *taken)
{
	unsigned uid = (unsigned)geteuid();
	*taken = 0;
	for (int k = 0; k <= HP_LEDGER_DIR_ALT + 1; k++) {
		if (k == HP_LEDGER_DIR_ALT + 1 && uid == 0)
			hp_snprintf(path, cap, "/run/hostpin-0.d");
		else if (k == HP_LEDGER_DIR_ALT + 1)
			hp_snprintf(path, cap, "/run/user/%u/hostpin.d", uid);
		else if (k)
			hp_snprintf(path, cap, "/dev/shm/hostpin-%u.d-%d", uid, k);
		else
			hp_snprintf(path, cap, "/dev/shm/hostpin-%u.d", uid);
		/* the first free name is made; a name taken meanwhile by
		 * another process of the user's is just as good */
		if (create && mkdir(path, 0700) && errno != EEXIST &&
		    k <= HP_LEDGER_DIR_ALT)
			return -1;
		int fd = hp_own_dir(path);
		if (fd >= 0)
			return fd;
		struct stat st;
		if (k > HP_LEDGER_DIR_ALT)
			break;
		if (lstat(path, &st)) {
			if (errno != ENOENT)
				return -1; /* /dev/shm unusable */
			continue; /* not made (not creating): the next */
		}
		if (!k)
			*taken = st.st_uid != uid ? (long)st.st_uid : -1;
	}
	errno = EEXIST;
	return -1;
}

#endif
