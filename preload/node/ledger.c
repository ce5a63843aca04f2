/* The node-wide ledger (ledger.h): attaching, the forked child's own slot,
 * sums over the live slots, reaping the slots of processes that are gone.
 * Attaching runs in initialisation and the fork handler: raw syscalls, no
 * stdio, no allocation. */
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <time.h>

#include "ledger.h"

static struct hp_ledger *led;
static struct hp_lslot *self;
static uint32_t self_w; /* our slot's state word once LIVE */
static uint64_t myns; /* our PID namespace; 0: unknown */
static int proc_ok;   /* /proc is our namespace's */
/* Our description of the ledger file (ledger.h), close-on-exec at a high
 * number: it holds our slot's lock and tests the others'.  -1: none. */
static int lockfd = -1;
static dev_t lock_dev;
static ino_t lock_ino;
static char lock_path[340]; /* to open it again in a forked child */
/* What one slot may claim of a byte gauge: the machine's memory.  A slot
 * above it was written by something other than hostpin (a process of the
 * user's, through the file) and is not counted. */
static uint64_t slot_max = UINT64_MAX;
/* Set once the ledger file stopped backing our mapping (another process
 * of the user's truncated it): the mapping is private zeros from then on
 * and the process works as without a ledger.  Relaxed: each reader only
 * picks its way; the mapping it reads stays valid memory either way. */
static _Atomic int led_lost;
static struct sigaction bus_prev;

/* SIGBUS on the ledger: its file was truncated under our mapping (a
 * process of the user's in another container sharing /dev/shm).  The
 * ledger's pages become private zero pages, so the faulting access,
 * repeated on return, succeeds; the process goes on without a ledger.
 * Any other SIGBUS is the program's: the disposition it had (the
 * default: installed only over SIG_DFL) is put back and the signal
 * happens again as if hostpin had never been there. */
static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	char *a = si->si_addr, *l = (char *)led;
	int e = errno;
	if (si->si_code > 0 && l && a >= l && a < l + sizeof(struct hp_ledger) &&
	    mmap(l, sizeof(struct hp_ledger), PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != MAP_FAILED) {
		atomic_store_explicit(&led_lost, 1, memory_order_relaxed);
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
	struct sigaction sa;
	if (sigaction(SIGBUS, NULL, &bus_prev) ||
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
static int lock_fd(void);
static int led_whole(void)
{
	struct stat st;
	int fd = lock_fd();
	if (atomic_load_explicit(&led_lost, memory_order_relaxed))
		return 0;
	if (fd < 0)
		return 1; /* nothing to ask; the handler guards */
	return fstat(fd, &st) == 0 &&
	       st.st_size == (off_t)sizeof(struct hp_ledger) &&
	       (uint64_t)st.st_blocks * 512 >= sizeof(struct hp_ledger) &&
	       atomic_load_explicit(&led->layout, memory_order_relaxed) ==
		   HP_LEDGER_LAYOUT;
}

/* Stop using a ledger that is no longer whole: the mapping becomes
 * private memory at the same place, our slot's contents kept where the
 * file still has its size (a truncation took them already: reading them
 * would fault). */
static void led_drop(void)
{
	static struct hp_lslot keep;
	struct stat st;
	int fd = lock_fd();
	if (atomic_exchange_explicit(&led_lost, 1, memory_order_relaxed))
		return;
	if (self && fd >= 0 && fstat(fd, &st) == 0 &&
	    st.st_size == (off_t)sizeof(struct hp_ledger))
		memcpy(&keep, self, sizeof(keep));
	if (mmap(led, sizeof(struct hp_ledger), PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != MAP_FAILED &&
	    self)
		memcpy(self, &keep, sizeof(keep));
	hp_log(HP_LOG_WARN, "ledger %s was truncated or replaced by another "
	       "process: this process goes on without it (node-wide caps do "
	       "not apply to it)", lock_path);
}

/* lockfd if it is still the ledger file (a program may have closed it and
 * opened something else under its number); -1 if not. */
static int lock_fd(void)
{
	struct stat st;
	if (lockfd < 0 || fstat(lockfd, &st) || st.st_dev != lock_dev ||
	    st.st_ino != lock_ino)
		return -1;
	return lockfd;
}

/* Take (F_WRLCK) or drop (F_UNLCK) the lock of slot i on fd: 0, or -1
 * with errno (EAGAIN/EACCES: another process holds it). */
static int slot_lock(int fd, uint32_t i, short type)
{
	struct flock fl = hp_slot_flock(i, type);
	return fcntl(fd, F_OFD_SETLK, &fl);
}

int hp_ledger_on(void)
{
	return self != NULL &&
	       !atomic_load_explicit(&led_lost, memory_order_relaxed);
}

/* The first of names a, b, c that is set (b, c may be NULL), as a
 * number; -1 if none is a whole number. */
static int env_int(const char *a, const char *b, const char *c)
{
	const char *v = getenv(a);
	if (!v || !*v)
		v = b ? getenv(b) : NULL;
	if (!v || !*v)
		v = c ? getenv(c) : NULL;
	if (!v || *v < '0' || *v > '9')
		return -1;
	long n = strtol(v, NULL, 10);
	return n >= 0 && n < (1L << 30) ? (int)n : -1;
}

static void read_cmd(char *out, size_t cap)
{
	ssize_t n = hp_read_small("/proc/self/cmdline", out, cap);
	if (n < 0)
		n = 0;
	while (n > 0 && out[n - 1] == '\0')
		n--;
	for (ssize_t i = 0; i < n; i++)
		if (out[i] == '\0' || out[i] == '\n' || out[i] == '\t')
			out[i] = ' ';
	out[n] = '\0';
}

/* The process of a slot is surely gone (ledger.h: its lock is free; or,
 * without a lock to go by, by pid, start time and namespace); fast:
 * kill(pid, 0) only, no /proc read. */
static int gone_slot(struct hp_lslot *s, int fast)
{
	int lk = s->locked ? hp_slot_locked(lock_fd(), (uint32_t)(s - led->slot))
			   : -1;
	return hp_slot_gone(s->pid, s->start, s->pidns, myns,
			    fast || !proc_ok, lk);
}
static int gone(int pid, uint64_t start, uint64_t ns, int fast)
{
	return hp_slot_gone(pid, start, ns, myns, fast || !proc_ok, -1);
}

/* A DEAD slot may be reused unless a running launcher will report it. */
static int reusable(struct hp_lslot *s)
{
	/* relaxed: statistics */
	int did = atomic_load_explicit(&s->ctr.pin_calls, memory_order_relaxed) ||
		  atomic_load_explicit(&s->ctr.copies_seen, memory_order_relaxed) ||
		  atomic_load_explicit(&s->ctr.bytes_peak, memory_order_relaxed) ||
		  atomic_load_explicit(&s->ctr.fail_count, memory_order_relaxed);
	/* a slot its process left at exit() while its other threads may
	 * still be counting: not before 2 s, unless the process is gone */
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	if (s->ended && (uint64_t)ts.tv_sec < s->ended + 2 &&
	    !gone_slot(s, 0))
		return 0;
	return !s->job_pid || !did ||
	       gone(s->job_pid, s->job_start, s->pidns, 0);
}

#ifdef HP_EMBEDDED_TEST
/* the unit tests' hook: runs between a reaper's verdict and its
 * compare-and-swap (another process reclaiming the slot meanwhile) */
void (*hp_ledger_test_between)(struct hp_lslot *s);
#endif

/* A reaper's step: the LIVE slot s, seen in state word w, becomes DEAD if
 * its process is gone.  The generation in w: if the slot was reclaimed
 * since w was read, the verdict was about its previous process and the
 * compare-and-swap fails.  1 if it was marked. */
static int mark_dead(struct hp_lslot *s, uint32_t w, int fast)
{
	if (!gone_slot(s, fast))
		return 0;
#ifdef HP_EMBEDDED_TEST
	if (hp_ledger_test_between)
		hp_ledger_test_between(s);
#endif
	return atomic_compare_exchange_strong_explicit(
	    &s->state, &w, HP_LS_TO(w, HP_LS_DEAD), memory_order_acq_rel,
	    memory_order_relaxed);
}

/* Claim slot i seen in state word w (FREE or DEAD): its lock first (on
 * fd; a lock another process holds means its process still lives: the
 * slot is left be), then CLAIM, the next generation.  The claimed word in
 * *w, whether we hold the lock in *lk. */
static int try_claim(struct hp_lslot *s, uint32_t *w, uint32_t i, int fd,
		     int *lk)
{
	*lk = 0;
	if (fd >= 0) {
		if (slot_lock(fd, i, F_WRLCK) == 0)
			*lk = 1;
		else if (errno == EAGAIN || errno == EACCES)
			return 0;
	}
	uint32_t seen = *w, want = HP_LS_MK(HP_LS_CLAIM, HP_LS_GEN(seen) + 1);
	/* acq_rel: the claim orders our writes to the slot after the
	 * previous owner's */
	if (!atomic_compare_exchange_strong_explicit(&s->state, &seen, want,
						     memory_order_acq_rel,
						     memory_order_acquire)) {
		if (*lk)
			slot_lock(fd, i, F_UNLCK);
		*lk = 0;
		return 0;
	}
	*w = want;
	uint32_t hw = atomic_load_explicit(&led->hiwater, memory_order_relaxed);
	/* relaxed: hiwater only bounds scans; a scan that misses a slot just
	 * claimed misses nothing LIVE yet (LIVE is published later) */
	while (hw < i + 1 && !atomic_compare_exchange_weak_explicit(
				 &led->hiwater, &hw, i + 1, memory_order_relaxed,
				 memory_order_relaxed))
		;
	return 1;
}

/* Claim a slot, keeping the used part of the table (what sums scan)
 * short: a free one among those used before; a dead one (seen with
 * kill(pid, 0), no /proc read); a never used one; at last any whose
 * process is gone by pid and start time.  NULL if the table is full; the
 * claimed state word in *cw, whether we hold its lock in *lk. */
static struct hp_lslot *claim(uint32_t *cw, int *lk)
{
	int fd = lock_fd();
	uint32_t hw = atomic_load_explicit(&led->hiwater, memory_order_relaxed);
	if (hw > HP_LEDGER_SLOTS)
		hw = HP_LEDGER_SLOTS;
	for (int pass = 0; pass < 4; pass++) {
		uint32_t from = pass == 2 ? hw : 0;
		uint32_t to = pass == 0 || pass == 1 ? hw : HP_LEDGER_SLOTS;
		for (uint32_t i = from; i < to; i++) {
			struct hp_lslot *s = &led->slot[i];
			/* acquire: pairs with the release that published the
			 * slot's contents */
			uint32_t w = atomic_load_explicit(&s->state,
							  memory_order_acquire);
			if (pass == 0 || pass == 2) {
				if (HP_LS_ST(w) == HP_LS_FREE &&
				    try_claim(s, &w, i, fd, lk))
					return *cw = w, s;
				continue;
			}
			/* the generation in w: if the slot was reclaimed
			 * since, the pid read was another's and the CAS
			 * fails */
			if (HP_LS_ST(w) == HP_LS_LIVE && mark_dead(s, w, pass == 1))
				w = HP_LS_TO(w, HP_LS_DEAD);
			if (HP_LS_ST(w) == HP_LS_DEAD && reusable(s) &&
			    try_claim(s, &w, i, fd, lk))
				return *cw = w, s;
		}
	}
	return NULL;
}

/* Fill the claimed slot s for this process and make it LIVE, with the
 * counters copied from *from. */
static void fill(struct hp_lslot *s, uint32_t w, int lk,
		 const struct hp_counters *from, const char *cmd)
{
	memset((char *)s + sizeof(s->state), 0, sizeof(*s) - sizeof(s->state));
	s->pid = (int32_t)getpid();
	s->ppid = (int32_t)getppid();
	s->start = hp_proc_start(0);
	s->pidns = myns;
	s->locked = (uint32_t)lk;
	s->rank = env_int("RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID");
	s->local_rank = env_int("LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK",
				"SLURM_LOCALID");
	const char *job = hp_optstr[HP_OPT_JOB];
	if (job[0] >= '1' && job[0] <= '9') {
		s->job_pid = (int32_t)strtol(job, NULL, 10);
		s->job_start = proc_ok ? hp_proc_start(s->job_pid)
				       : HP_START_UNKNOWN;
	}
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	s->born = (uint64_t)ts.tv_sec;
	if (cmd)
		memcpy(s->cmd, cmd, sizeof(s->cmd));
	else
		read_cmd(s->cmd, sizeof(s->cmd));
	memcpy(&s->ctr, from, sizeof(s->ctr));
	/* release: pairs with the readers' acquire of state */
	self_w = HP_LS_TO(w, HP_LS_LIVE);
	atomic_store_explicit(&s->state, self_w, memory_order_release);
}

void hp_ledger_detach(void)
{
	static struct hp_counters last;
	struct hp_lslot *s = self;
	if (!s)
		return;
	memcpy(&last, &s->ctr, sizeof(last));
	hp_ctrp = &last;
	self = NULL;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	s->ended = (uint64_t)ts.tv_sec;
	uint32_t w = self_w;
	/* release: the counters and ended before DEAD; the generation in w:
	 * a slot taken from us meanwhile is left be */
	atomic_compare_exchange_strong_explicit(&s->state, &w,
						HP_LS_TO(w, HP_LS_DEAD),
						memory_order_release,
						memory_order_relaxed);
}

/* Map the ledger file open on fd (checked by hp_ledger_open_checked) if
 * it has hostpin's header; NULL, with a warning, if not. */
static struct hp_ledger *map_checked(int fd, const char *path)
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
	hp_snprintf(tmp, sizeof(tmp), "%s.new-%d", name, (int)getpid());
	int fd = openat(dirfd, tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW |
					O_CLOEXEC, 0600);
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

void hp_ledger_attach(void)
{
	const char *p = hp_optstr[HP_OPT_LEDGER];
	char path[340], dir[300];
	/* in secure-execution processes hostpin writes no files */
	if (strcmp(p, "off") == 0 || getauxval(AT_SECURE))
		return;
	myns = hp_pidns(&proc_ok);
	int dirfd = AT_FDCWD;
	const char *name = p;
	if (!p[0]) {
		long taken;
		dirfd = hp_ledger_dir(dir, sizeof(dir), 1, &taken);
		if (dirfd < 0 && errno == EEXIST) {
			/* another user's doing: every process of this user
			 * would say it; info, as one it may cause at will */
			hp_log(HP_LOG_INFO, "no ledger: /dev/shm/hostpin-%u.d "
			       "and the %d other names hostpin tries for it are "
			       "taken by other users; node-wide caps do not "
			       "apply, per-process caps do", (unsigned)geteuid(),
			       HP_LEDGER_DIR_ALT);
			return;
		}
		if (dirfd < 0) {
			hp_log(HP_LOG_WARN, "no ledger: cannot make a directory "
			       "of this user's in /dev/shm (%s); node-wide caps "
			       "do not apply, per-process caps do",
			       hp_strerror(errno));
			return;
		}
		if (taken)
			hp_log(HP_LOG_INFO, "/dev/shm/hostpin-%u.d is not this "
			       "user's (owner uid %ld): the ledger is in %s",
			       (unsigned)geteuid(), taken, dir);
		hp_snprintf(path, sizeof(path), "%s/" HP_LEDGER_NAME_FMT, dir,
			 HP_LEDGER_VERSION, sizeof(struct hp_lslot));
		name = path + strlen(dir) + 1;
	} else
		hp_snprintf(path, sizeof(path), "%s", p);
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
	if (dirfd != AT_FDCWD)
		close(dirfd);
	if (fd < 0) {
		if (err == EEXIST)
			hp_log(HP_LOG_WARN, "%s is not a ledger of this user's "
			       "made by hostpin (owner, mode 0600, size, "
			       "reserved pages); left alone, node-wide caps do "
			       "not apply", path);
		else if (err)
			hp_log(HP_LOG_INFO, "no ledger: cannot open %s (%s); "
			       "node-wide caps do not apply", path,
			       hp_strerror(err));
		return;
	}
	struct hp_ledger *l = map_checked(fd, path);
	if (!l) {
		close(fd);
		return;
	}
	led = l;
	sigbus_guard();
	struct sysinfo si;
	if (sysinfo(&si) == 0 && si.totalram)
		slot_max = (uint64_t)si.totalram * (si.mem_unit ? si.mem_unit : 1);
	/* kept, for the slot locks: at a high number, as the log's, out of
	 * the way of programs that reuse low descriptors */
	struct stat st;
	int h = fcntl(fd, F_DUPFD_CLOEXEC, 1000);
	if (h >= 0) {
		close(fd);
		fd = h;
	}
	if (fstat(fd, &st) == 0) {
		lockfd = fd;
		lock_dev = st.st_dev;
		lock_ino = st.st_ino;
		hp_snprintf(lock_path, sizeof(lock_path), "%s", path);
	} else
		close(fd);
	/* A LIVE slot with our pid in our PID namespace is our own image
	 * before an exec (same pid and start time), or a process long gone
	 * whose pid we got: either way no process of ours uses it any
	 * more. */
	int pid = (int)getpid();
	uint32_t hw = atomic_load_explicit(&led->hiwater, memory_order_relaxed);
	for (uint32_t i = 0; myns && i < hw && i < HP_LEDGER_SLOTS; i++) {
		struct hp_lslot *s = &led->slot[i];
		uint32_t w = atomic_load_explicit(&s->state,
						  memory_order_acquire);
		if (HP_LS_ST(w) == HP_LS_LIVE && s->pid == pid &&
		    s->pidns == myns)
			atomic_compare_exchange_strong_explicit(
			    &s->state, &w, HP_LS_TO(w, HP_LS_DEAD),
			    memory_order_acq_rel, memory_order_relaxed);
	}
	uint32_t w;
	int lk;
	struct hp_lslot *s = claim(&w, &lk);
	if (!s) {
		hp_log(HP_LOG_WARN, "ledger %s is full (%d processes); this "
		       "process is not counted node-wide", path, HP_LEDGER_SLOTS);
		return;
	}
	fill(s, w, lk, hp_ctrp, NULL);
	self = s;
	hp_ctrp = &s->ctr;
	hp_log(HP_LOG_INFO, "ledger %s, slot %d", path, (int)(s - led->slot));
}

/* The ledger file opened again (a new description: no locks), by its
 * path if that is still it, else through /proc; -1 if neither. */
static int reopen(void)
{
	char p[48];
	struct stat st;
	int fd = open(lock_path, O_RDWR | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
	if (fd >= 0 && (fstat(fd, &st) || st.st_dev != lock_dev ||
			st.st_ino != lock_ino)) {
		close(fd);
		fd = -1;
	}
	if (fd < 0) {
		hp_snprintf(p, sizeof(p), "/proc/self/fd/%d", lockfd);
		fd = open(p, O_RDWR | O_NOCTTY | O_CLOEXEC);
		if (fd >= 0 && (fstat(fd, &st) || st.st_dev != lock_dev ||
				st.st_ino != lock_ino)) {
			close(fd);
			fd = -1;
		}
	}
	return fd;
}

void hp_ledger_fork_child(void)
{
	if (!hp_ledger_on())
		return;
	/* The child is single-threaded here.  Its counters start from the
	 * parent's gauges (it inherited the blocks, cache and mappings, and
	 * will free them), but what the parent did is not the child's. */
	struct hp_counters c;
	memcpy(&c, &self->ctr, sizeof(c));
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
		memset((char *)&c + did[i], 0, sizeof(uint64_t));
	static struct hp_counters orphan;
	char cmd[HP_LEDGER_CMD];
	memcpy(cmd, self->cmd, sizeof(cmd));
	self = NULL;
	/* unshare(CLONE_NEWPID) puts the children in another namespace */
	myns = hp_pidns(&proc_ok);
	/* The inherited descriptor shares the parent's description, and so
	 * its lock: a description of our own under the same number, or none
	 * (the parent's lock must not live on in us). */
	if (lockfd >= 0) {
		int nfd = reopen();
		if (nfd < 0 || dup3(nfd, lockfd, O_CLOEXEC) < 0) {
			close(lockfd);
			lockfd = -1;
		}
		if (nfd >= 0)
			close(nfd);
		/* The mapping holds the parent's description too (a lock
		 * lives as long as its description): the ledger mapped again,
		 * in place, from ours.  If that fails the parent's slot counts
		 * as live as long as we live. */
		if (lockfd >= 0 &&
		    mmap(led, sizeof(struct hp_ledger), PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_FIXED, lockfd, 0) == MAP_FAILED)
			hp_log(HP_LOG_INFO, "ledger: cannot map it again in the "
			       "child (%s); the parent's slot counts as long "
			       "as this process lives", hp_strerror(errno));
	}
	uint32_t w;
	int lk;
	struct hp_lslot *s = claim(&w, &lk);
	if (!s) {
		memcpy(&orphan, &c, sizeof(c));
		hp_ctrp = &orphan;
		return;
	}
	fill(s, w, lk, &c, cmd);
	self = s;
	hp_ctrp = &s->ctr;
}

uint64_t hp_ledger_sum(size_t off)
{
	if (!hp_ledger_on())
		return atomic_load_explicit(
		    (_Atomic uint64_t *)((char *)hp_ctrp + off),
		    memory_order_relaxed);
	uint64_t t = 0;
	uint32_t hw = atomic_load_explicit(&led->hiwater, memory_order_relaxed);
	for (uint32_t i = 0; i < hw && i < HP_LEDGER_SLOTS; i++) {
		struct hp_lslot *s = &led->slot[i];
		/* relaxed: a sum of statistics, each read on its own */
		if (HP_LS_ST(atomic_load_explicit(&s->state,
						  memory_order_relaxed)) !=
		    HP_LS_LIVE)
			continue;
		uint64_t v = atomic_load_explicit(
		    (_Atomic uint64_t *)((char *)&s->ctr + off),
		    memory_order_relaxed);
		/* a slot claiming more than the machine has is not hostpin's
		 * word; and no sum wraps */
		if (s != self && v > slot_max)
			continue;
		t = hp_sat_add(t, v);
	}
	return t;
}

int hp_ledger_reap(void)
{
	static _Atomic uint64_t last;
	if (!hp_ledger_on())
		return 0;
	uint64_t now = hp_now_ns(),
		 prev = atomic_load_explicit(&last, memory_order_relaxed);
	/* relaxed: only rate-limits the /proc reads */
	if (now - prev < 1000000000u ||
	    !atomic_compare_exchange_strong_explicit(&last, &prev, now,
						     memory_order_relaxed,
						     memory_order_relaxed))
		return 0;
	if (!led_whole()) {
		led_drop();
		return 0;
	}
	int any = 0;
	uint32_t hw = atomic_load_explicit(&led->hiwater, memory_order_relaxed);
	for (uint32_t i = 0; i < hw && i < HP_LEDGER_SLOTS; i++) {
		struct hp_lslot *s = &led->slot[i];
		uint32_t w = atomic_load_explicit(&s->state,
						  memory_order_acquire);
		if (HP_LS_ST(w) == HP_LS_LIVE && s != self && mark_dead(s, w, 0))
			any = 1;
	}
	return any;
}

#ifdef HP_EMBEDDED_TEST
/* The unit tests' handles (tests/unit/check_ledger.c): ledger l, mapped
 * from the file open on fd, as this process's; a reaper's step; a claim
 * filled for this process. */
void hp_ledger_test_use(struct hp_ledger *l, int fd)
{
	struct stat st;
	led = l;
	self = NULL;
	lockfd = fd;
	if (fd >= 0 && fstat(fd, &st) == 0)
		lock_dev = st.st_dev, lock_ino = st.st_ino;
	myns = hp_pidns(&proc_ok);
}
int hp_ledger_test_mark_dead(struct hp_lslot *s, uint32_t w)
{
	return mark_dead(s, w, 0);
}
struct hp_lslot *hp_ledger_test_claim(void)
{
	uint32_t w;
	int lk;
	struct hp_lslot *s = claim(&w, &lk);
	if (s)
		fill(s, w, lk, hp_ctrp, "test");
	return s;
}
#endif
