/* The node-wide ledger (ledger.h), its file: attaching (finding or making
 * the file, mapping and checking it, taking a slot), the forked child's own
 * slot, detaching, and the SIGBUS guard for a file truncated under us.
 * Claiming and reaping slots, and the sums over them: ledger_slots.c.
 * Attaching runs in initialisation and the fork handler: raw syscalls, no
 * stdio, no allocation. */
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <time.h>

#include "../base/outfile.h"
#include "ledger.h"
#include "ledger_int.h"
struct hp_ledger *hp_led;
struct hp_lslot *hp_led_self;
uint32_t hp_led_self_w; /* our slot's state word once LIVE */
uint64_t hp_led_myns; /* our PID namespace; 0: unknown */
int hp_led_proc_ok;   /* /proc is our namespace's */
/* The descriptor a join maps the ledger file from and takes its slot's
 * lock through, open only while joining (attach, join again, the forked
 * child); -1 otherwise.  The lock lives on after it is closed: it belongs
 * to the open file description, which the mapping holds.  So no
 * descriptor of hostpin's stays in the program's table (a program that
 * lists /proc/self/fd, closes every descriptor or reuses their numbers
 * never meets one), and hostpin never acts on a number the program may
 * have reused: a check opens the file again by its path (hp_led_fd_get). */
int hp_led_lockfd = -1;
dev_t hp_led_lock_dev;
ino_t hp_led_lock_ino;
static char lock_path[340]; /* to open it again (a forked child, a check) */
/* What one slot may claim of a byte gauge: the machine's memory.  A slot
 * above it was written by something other than hostpin (a process of the
 * user's, through the file) and is not counted. */
uint64_t hp_led_slot_max = UINT64_MAX;
/* Set once the ledger file stopped backing our mapping (another process
 * of the user's truncated it): the mapping is private zeros from then on
 * and the process works as without a ledger.  Relaxed: each reader only
 * picks its way; the mapping it reads stays valid memory either way. */
static _Atomic int led_lost;
static struct sigaction bus_prev;

/* SIGBUS on the ledger: its file was truncated under our mapping (a
 * process of the user's in another container sharing /dev/shm).  The
 * counters are written (hp.h) and the slots summed (ledger_slots.c) with
 * pwrite and pread, never through the mapping; it is touched only right
 * after a check of the file (claiming a slot, the reaper, the exit), so
 * this guard covers only a truncation landing in those microseconds.  The
 * ledger's pages become private zero pages, so the faulting access,
 * repeated on return, succeeds; the process goes on without a ledger.
 * Any other SIGBUS is the program's: the disposition it had (the
 * default: installed only over SIG_DFL) is put back and the signal
 * happens again as if hostpin had never been there. */
static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	char *a = si->si_addr, *l = (char *)hp_led;
	int e = errno;
	if (si->si_code > 0 && l && a >= l && a < l + sizeof(struct hp_ledger) &&
	    mmap(l, sizeof(struct hp_ledger), PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != MAP_FAILED) {
		atomic_store_explicit(&led_lost, 1, memory_order_relaxed);
		/* this process's own counters go on as they were, no longer
		 * copied anywhere */
		atomic_store(&hp_ctr_pub, NULL);
		errno = e;
		return;
	}
	sigaction(SIGBUS, &bus_prev, NULL);
	if (si->si_code <= 0) /* sent (kill, raise): send it again */
		raise(sig);
	errno = e;
	/* a fault: the access is repeated on return and faults again */
}

/* The handler above, where the program has none (SIG_DFL): a program's
 * own handler is never replaced. */
static void sigbus_guard(void)
{
	static int once;
	struct sigaction sa;
	if (once++ || sigaction(SIGBUS, NULL, &bus_prev) ||
	    (bus_prev.sa_flags & SA_SIGINFO) || bus_prev.sa_handler != SIG_DFL)
		return;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sigbus;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, NULL);
}

/* The ledger file still backs the whole mapping (size, reserved pages,
 * header): checked where a fault is cheap to avoid (the reaper, once a
 * second); the handler above covers the moments in between. */
int hp_led_whole(void)
{
	struct stat st;
	if (atomic_load_explicit(&led_lost, memory_order_relaxed))
		return 0;
	int fd = hp_led_fd_get();
	if (fd < 0)
		return 1; /* nothing to ask; the handler guards */
	int whole = fstat(fd, &st) == 0 &&
		    st.st_size == (off_t)sizeof(struct hp_ledger) &&
		    (uint64_t)st.st_blocks * 512 >= sizeof(struct hp_ledger) &&
		    atomic_load_explicit(&hp_led->layout,
					 memory_order_relaxed) == HP_LEDGER_LAYOUT;
	hp_led_fd_put(fd);
	return whole;
}

/* Stop using a ledger that is no longer whole: the mapping becomes
 * private memory at the same place, our slot's contents kept where the
 * file still has its size (a truncation took them already: reading them
 * would fault). */
void hp_led_drop(void)
{
	static struct hp_lslot keep;
	struct stat st;
	if (atomic_exchange_explicit(&led_lost, 1, memory_order_relaxed))
		return;
	/* this process's own counters go on as they were (hp_own), no
	 * longer copied anywhere */
	hp_ctr_unpublish(0);
	int fd = hp_led_fd_get();
	if (hp_led_self && fd >= 0 && fstat(fd, &st) == 0 &&
	    st.st_size == (off_t)sizeof(struct hp_ledger))
		memcpy(&keep, hp_led_self, sizeof(keep));
	hp_led_fd_put(fd);
	if (mmap(hp_led, sizeof(struct hp_ledger), PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != MAP_FAILED &&
	    hp_led_self)
		memcpy(hp_led_self, &keep, sizeof(keep));
	hp_log(HP_LOG_WARN, "ledger %s was truncated or replaced by another "
	       "process: this process goes on without it (node-wide caps do "
	       "not apply to it) until a ledger can be joined at that path "
	       "again", lock_path);
}

/* fd is the ledger file in use (device, inode). */
static int same_file(int fd)
{
	struct stat st;
	return fstat(fd, &st) == 0 && st.st_dev == hp_led_lock_dev &&
	       st.st_ino == hp_led_lock_ino;
}

/* The ledger file opened again by its path (a new description: it holds
 * no lock), if that is still the file in use; -1 if not. */
static int reopen(void)
{
	if (!lock_path[0])
		return -1;
	int fd = open(lock_path, O_RDWR | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK |
				     O_CLOEXEC);
	if (fd >= 0 && !same_file(fd)) {
		close(fd);
		fd = -1;
	}
	return fd;
}

int hp_led_fd_get(void)
{
	if (hp_led_lockfd >= 0 && same_file(hp_led_lockfd))
		return hp_led_lockfd;
	return reopen();
}

void hp_led_fd_put(int fd)
{
	if (fd >= 0 && fd != hp_led_lockfd)
		close(fd);
}

/* Take (F_WRLCK) or drop (F_UNLCK) the lock of slot i on fd: 0, or -1
 * with errno (EAGAIN/EACCES: another process holds it). */
int hp_led_slot_lock(int fd, uint32_t i, short type)
{
	struct flock fl = hp_slot_flock(i, type);
	return fcntl(fd, F_OFD_SETLK, &fl);
}

int hp_ledger_on(void)
{
	return hp_led_self != NULL &&
	       !atomic_load_explicit(&led_lost, memory_order_relaxed);
}

/* Map the ledger file open on fd (checked by hp_ledger_open_checked) if
 * it has hostpin's header; NULL, with a warning, if not. */
struct hp_ledger *hp_led_map(int fd, const char *path)
{
	void *m = mmap(NULL, sizeof(struct hp_ledger), PROT_READ | PROT_WRITE,
		       MAP_SHARED, fd, 0);
	if (m == MAP_FAILED) {
		int err = errno;
		hp_log(HP_LOG_WARN, "no ledger: cannot map %s: %s (errno %d); "
		       "node-wide caps do not apply", path, hp_strerror(err),
		       err);
		return NULL;
	}
	struct hp_ledger *l = m;
	/* acquire: the header was written before the file had its name */
	if (atomic_load_explicit(&l->layout, memory_order_acquire) !=
		HP_LEDGER_LAYOUT ||
	    l->version != HP_LEDGER_VERSION ||
	    l->size != sizeof(struct hp_ledger)) {
		hp_log(HP_LOG_WARN, "%s has no header of this hostpin version "
		       "(not made by hostpin, or by another version); left "
		       "alone, node-wide caps do not apply", path);
		munmap(m, sizeof(struct hp_ledger));
		return NULL;
	}
	return l;
}

/* Make the ledger file name (in dirfd): a new file under a temporary name
 * (O_EXCL), its pages reserved, its header written, then linked to its
 * name, so that no process ever sees a ledger file that is not whole.
 * 0, or -1 after one warning (it cannot be reserved: no ledger), or 1 if
 * another process made it first. */
static int create(int dirfd, const char *name, const char *path)
{
	char tmp[340];
	int fd = -1;
	/* an unpredictable temporary name, another on a collision (a
	 * process of another PID namespace has our pid; a stale file) */
	for (int tries = 0; fd < 0 && tries < 8; tries++) {
		unsigned long long r = 0;
		if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r))
			r = hp_now_ns() * 0x9e3779b97f4a7c15ull + (unsigned)tries;
		hp_snprintf(tmp, sizeof(tmp), "%s.new-%d-%llx", name,
			    (int)getpid(), r);
		fd = openat(dirfd, tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW |
					    O_CLOEXEC, 0600);
		if (fd < 0 && errno != EEXIST)
			break;
	}
	if (fd < 0) {
		hp_log(HP_LOG_WARN, "no ledger: cannot create %s (%s); "
		       "node-wide caps do not apply, per-process caps do",
		       path, hp_strerror(errno));
		return -1;
	}
	/* the fallocate system call, never glibc's posix_fallocate, whose
	 * emulation writes into the pages it could not reserve */
	int err = 0;
	/* the header alone (the table is large for a stack) */
	unsigned char h[offsetof(struct hp_ledger, slot)];
	uint64_t layout = HP_LEDGER_LAYOUT, size = sizeof(struct hp_ledger);
	uint32_t version = HP_LEDGER_VERSION;
	memset(h, 0, sizeof(h));
	memcpy(h + offsetof(struct hp_ledger, layout), &layout, sizeof(layout));
	memcpy(h + offsetof(struct hp_ledger, version), &version,
	       sizeof(version));
	memcpy(h + offsetof(struct hp_ledger, size), &size, sizeof(size));
	size_t hl = sizeof(h);
	if (fchmod(fd, 0600) ||
	    syscall(SYS_fallocate, fd, 0, (off_t)0,
		    (off_t)sizeof(struct hp_ledger)))
		err = errno;
	else if (pwrite(fd, &h, hl, 0) != (ssize_t)hl)
		err = errno ? errno : EIO;
	else if (linkat(dirfd, tmp, dirfd, name, 0))
		err = errno;
	close(fd);
	unlinkat(dirfd, tmp, 0);
	if (err == EEXIST)
		return 1;
	if (err) {
		hp_log(HP_LOG_WARN, "no ledger: cannot reserve %zu KiB for %s "
		       "(%s; a full /dev/shm?): node-wide caps do not apply, "
		       "per-process caps do", sizeof(struct hp_ledger) >> 10,
		       path, hp_strerror(err));
		return -1;
	}
	return 0;
}

/* The ledger's path into path[cap] (HOSTPIN_LEDGER, or the default in a
 * directory of the user's, made if need be), the file found or made there
 * and opened read-write (hp_ledger_open_checked); its descriptor, or -1
 * (said at level, once: quiet repeats say nothing). */
int hp_led_find(char *path, size_t cap, int quiet)
{
	const char *p = hp_optstr[HP_OPT_LEDGER];
	char dir[300], leaf[256];
	int lw = quiet ? HP_LOG_DEBUG : HP_LOG_WARN;
	int dirfd = AT_FDCWD;
	const char *name = p;
	if (!p[0]) {
		long taken;
		dirfd = hp_ledger_dir(dir, sizeof(dir), 1, &taken);
		if (dirfd < 0 && errno == EEXIST) {
			/* another user's doing: said as a warning, since it
			 * leaves this user's processes without node-wide caps */
			hp_log(lw, "no ledger: /dev/shm/hostpin-%u.d "
			       "and the %d other names hostpin tries for it are "
			       "taken by other users, and there is no runtime "
			       "directory of this user's (/run/user/UID); "
			       "node-wide caps do not apply, per-process caps do",
			       (unsigned)geteuid(), HP_LEDGER_DIR_ALT);
			return -1;
		}
		if (dirfd < 0) {
			hp_log(lw, "no ledger: cannot make a directory "
			       "of this user's in /dev/shm (%s); node-wide caps "
			       "do not apply, per-process caps do",
			       hp_strerror(errno));
			return -1;
		}
		if (taken && !quiet)
			hp_log(HP_LOG_INFO, "/dev/shm/hostpin-%u.d is not this "
			       "user's (owner uid %ld): the ledger is in %s",
			       (unsigned)geteuid(), taken, dir);
		hp_snprintf(path, cap, "%s/" HP_LEDGER_NAME_FMT, dir,
			 HP_LEDGER_VERSION, sizeof(struct hp_lslot));
		name = path + strlen(dir) + 1;
	} else {
		/* HOSTPIN_LEDGER made absolute once, at start-up: a join
		 * after the program's chdir finds the same file */
		static char abs[340];
		if (!abs[0] && p[0] != '/') {
			char cwd[300];
			if (getcwd(cwd, sizeof(cwd)))
				hp_snprintf(abs, sizeof(abs), "%s/%s", cwd, p);
		}
		if (!abs[0])
			hp_snprintf(abs, sizeof(abs), "%s", p);
		hp_snprintf(path, cap, "%s", abs);
		/* walked as the log and stats files are (outfile.h): no
		 * link of another user's followed, no directory of another
		 * user's (who could rename the ledger away) or one others
		 * may change without the sticky bit written into */
		char why[300];
		dirfd = hp_out_walk(abs, why, sizeof(why), leaf, sizeof(leaf));
		if (dirfd < 0) {
			int err = errno;
			hp_log(lw, "no ledger: HOSTPIN_LEDGER=%s: %s; node-wide "
			       "caps do not apply, per-process caps do", path,
			       why[0] ? why : hp_strerror(err));
			return -1;
		}
		name = leaf;
	}
	int fd = -1, err = 0;
	for (int tries = 0; fd < 0 && tries < 2; tries++) {
		fd = hp_ledger_open_checked(dirfd, name, 1);
		err = errno;
		if (fd >= 0 || err != ENOENT)
			break;
		if (create(dirfd, name, path) < 0) {
			err = 0; /* said so, in one line */
			break;
		}
	}
	close(dirfd);
	if (fd < 0 && err == EEXIST)
		hp_log(lw, "%s is not a ledger of this user's made by hostpin "
		       "(owner, mode 0600, size, reserved pages); left alone, "
		       "node-wide caps do not apply", path);
	else if (fd < 0 && err)
		hp_log(quiet ? HP_LOG_DEBUG : HP_LOG_INFO, "no ledger: cannot "
		       "open %s (%s); node-wide caps do not apply", path,
		       hp_strerror(err));
	return fd;
}

/* Use ledger l, mapped from fd (found at path): fd is the joining
 * descriptor (hp_led_lockfd) until hp_led_joined closes it; what the file
 * is (device, inode) is noted, to find it again by its path.  The old
 * mapping, if any, is the caller's to retire. */
void hp_led_use(struct hp_ledger *l, int fd, const char *path)
{
	struct stat st;
	hp_led = l;
	if (fstat(fd, &st) == 0) {
		hp_led_lock_dev = st.st_dev;
		hp_led_lock_ino = st.st_ino;
		hp_led_lockfd = fd;
		hp_snprintf(lock_path, sizeof(lock_path), "%s", path);
	} else {
		close(fd);
		hp_led_lockfd = -1;
	}
	atomic_store_explicit(&led_lost, 0, memory_order_relaxed);
	sigbus_guard();
}

/* A join is over: the joining descriptor closed (the slot's lock stays,
 * held by the description the mapping keeps). */
void hp_led_joined(void)
{
	if (hp_led_lockfd >= 0)
		close(hp_led_lockfd);
	hp_led_lockfd = -1;
}

/* Retire mapping l of a ledger no longer used (removed, replaced,
 * truncated): it becomes private zeros in place (a thread still holding a
 * pointer into it writes into nothing shared), which also lets the old
 * file's description, and the slot lock it held, go. */
void hp_led_retire(struct hp_ledger *l)
{
	if (l)
		mmap(l, sizeof(struct hp_ledger), PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
}

/* The file at the ledger's path is no longer the one mapped (removed:
 * no link left; or another file under the name), or the mapping was
 * lost: 1.  Checked by hp_ledger_check. */
int hp_led_moved(void)
{
	struct stat at;
	if (atomic_load_explicit(&led_lost, memory_order_relaxed))
		return 1;
	if (!lock_path[0])
		return 0;
	if (stat(lock_path, &at))
		return errno == ENOENT || errno == ENOTDIR;
	return at.st_dev != hp_led_lock_dev || at.st_ino != hp_led_lock_ino;
}

void hp_ledger_fork_child(void)
{
	/* the parent's slot is the parent's: never written from here */
	hp_ctr_unpublish(1);
	if (!hp_ledger_on())
		return;
	if (!hp_led_whole()) { /* truncated: its slot not read */
		hp_led_self = NULL;
		return;
	}
	/* The child is single-threaded here.  Its counters start from the
	 * parent's gauges (it inherited the blocks, cache and mappings, and
	 * will free them), but what the parent did is not the child's. */
	struct hp_counters *c = &hp_own;
	static const size_t did[] = {
		offsetof(struct hp_counters, blocks_peak),
		offsetof(struct hp_counters, bytes_peak),
		offsetof(struct hp_counters, pinned_bytes_peak),
		offsetof(struct hp_counters, pin_ns),
		offsetof(struct hp_counters, over_cap),
		offsetof(struct hp_counters, pin_calls),
		offsetof(struct hp_counters, unpin_calls),
		offsetof(struct hp_counters, leaked_blocks),
		offsetof(struct hp_counters, adopted_blocks),
		offsetof(struct hp_counters, foreign_ranges),
		offsetof(struct hp_counters, copies_seen),
		offsetof(struct hp_counters, copies_registered),
		offsetof(struct hp_counters, copy_bytes_registered),
		offsetof(struct hp_counters, copy_waits),
		offsetof(struct hp_counters, cache_hits),
		offsetof(struct hp_counters, cache_evictions),
		offsetof(struct hp_counters, imports_dropped),
		offsetof(struct hp_counters, fail_count),
		offsetof(struct hp_counters, large_blocks),
	};
	for (size_t i = 0; i < sizeof(did) / sizeof(did[0]); i++)
		memset((char *)c + did[i], 0, sizeof(uint64_t));
	char cmd[HP_LEDGER_CMD];
	memcpy(cmd, hp_led_self->cmd, sizeof(cmd));
	hp_led_self = NULL;
	/* unshare(CLONE_NEWPID) puts the children in another namespace */
	hp_led_myns = hp_pidns(&hp_led_proc_ok);
	/* The inherited mapping holds the parent's description, and so its
	 * lock: the ledger mapped again, in place, from a description of
	 * our own (opened by the path), through which the child claims its
	 * slot.  If that fails the parent's slot counts as live as long as
	 * we live, and ours holds no lock. */
	int nfd = reopen();
	if (nfd >= 0 &&
	    mmap(hp_led, sizeof(struct hp_ledger), PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_FIXED, nfd, 0) == MAP_FAILED) {
		hp_log(HP_LOG_INFO, "ledger: cannot map it again in the "
		       "child (%s); the parent's slot counts as long as this "
		       "process lives", hp_strerror(errno));
		close(nfd);
		nfd = -1;
	}
	hp_led_lockfd = nfd;
	uint32_t w;
	int lk;
	struct hp_lslot *s = hp_led_claim(&w, &lk);
	hp_led_joined();
	if (!s)
		return;
	hp_led_fill(s, w, lk, c, cmd);
	hp_led_self = s;
	hp_led_publish_to(s);
}

/* The path of the file in use (ledger_join.c's counter targets). */
const char *hp_led_path_in_use(void)
{
	return lock_path;
}
