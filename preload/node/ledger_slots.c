/* The node-wide ledger's slots (ledger.h): claiming one for this process
 * (a free slot, or one whose process is gone), filling it, the sums over
 * the live slots, and reaping the slots of processes that are gone.  The
 * file itself, attaching and the fork child: ledger.c.  Raw syscalls, no
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
#include "ledger_int.h"
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
static int gone_slot(struct hp_lslot *s, int fast, int fd)
{
	int lk = s->locked ? hp_slot_locked(fd, (uint32_t)(s - hp_led->slot))
			   : -1;
	return hp_slot_gone(s->pid, s->start, s->pidns, hp_led_myns,
			    fast || !hp_led_proc_ok, lk);
}
int hp_led_gone(int pid, uint64_t start, uint64_t ns, int fast)
{
	return hp_slot_gone(pid, start, ns, hp_led_myns, fast || !hp_led_proc_ok, -1);
}

/* What a DEAD slot (or a SUM slot) may become: 0, reused (its process did
 * nothing, or no running launcher will report it); 1, kept for a running
 * launcher's report (folded into the job's SUM slot when the table is
 * full); 2, left be (its process left it at exit() while its other
 * threads may still be counting: not before 2 s, unless it is gone); 3,
 * kept though its process did nothing: the command's own (the launcher's
 * child) as it ended, which the report names (reused when the table is
 * full). */
static int slot_did(struct hp_lslot *s)
{
	/* relaxed: statistics */
	return atomic_load_explicit(&s->ctr.pin_calls, memory_order_relaxed) ||
	       atomic_load_explicit(&s->ctr.copies_seen, memory_order_relaxed) ||
	       atomic_load_explicit(&s->ctr.bytes_peak, memory_order_relaxed) ||
	       atomic_load_explicit(&s->ctr.fail_count, memory_order_relaxed);
}
static int dead_use(struct hp_lslot *s, int fd)
{
	int did = slot_did(s);
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	if (s->ended && (uint64_t)ts.tv_sec < s->ended + 2 &&
	    !gone_slot(s, 0, fd))
		return 2;
	if (!s->job_pid || (!did && (s->execd || s->ppid != s->job_pid)) ||
	    hp_led_gone(s->job_pid, s->job_start, s->pidns, 0))
		return 0;
	return did ? 1 : 3;
}
static int reusable(struct hp_lslot *s, int fd)
{
	return dead_use(s, fd) == 0;
}

/* Fold slot s (claimed by us, its contents still its dead process's) into
 * SUM slot t of the same job: its counters added (the backend's flags
 * or'ed; the settings are the first process's), the process counted. */
static void sum_add(struct hp_lslot *t, struct hp_lslot *s)
{
	_Atomic uint64_t *to = (_Atomic uint64_t *)(void *)&t->ctr;
	_Atomic uint64_t *from = (_Atomic uint64_t *)(void *)&s->ctr;
	size_t bk = offsetof(struct hp_counters, backend) / sizeof(uint64_t),
	       th = offsetof(struct hp_counters, threshold) / sizeof(uint64_t),
	       pa = offsetof(struct hp_counters, pin_after) / sizeof(uint64_t);
	for (size_t k = 0; k < sizeof(s->ctr) / sizeof(uint64_t); k++) {
		uint64_t v = atomic_load_explicit(&from[k], memory_order_relaxed);
		if (k == bk)
			atomic_fetch_or_explicit(&to[k], v & ~(uint64_t)15,
						 memory_order_relaxed);
		else if (k != th && k != pa)
			atomic_fetch_add_explicit(&to[k], v, memory_order_relaxed);
	}
	__atomic_fetch_add(&HP_SUM_DID(t), 1, __ATOMIC_RELAXED);
}

/* The SUM slot of s's job, or NULL. */
static struct hp_lslot *sum_of(struct hp_lslot *s, uint32_t hw)
{
	for (uint32_t i = 0; i < hw && i < HP_LEDGER_SLOTS; i++) {
		struct hp_lslot *t = &hp_led->slot[i];
		if (t != s &&
		    HP_LS_ST(atomic_load_explicit(&t->state,
						  memory_order_acquire)) ==
			HP_LS_SUM &&
		    t->job_pid == s->job_pid && t->job_start == s->job_start &&
		    t->pidns == s->pidns)
			return t;
	}
	return NULL;
}

static int try_claim(struct hp_lslot *s, uint32_t *w, uint32_t i, int fd,
		     int *lk);

/* The table is full: fold the DEAD slots kept for running launchers'
 * reports into one SUM slot per job (the first such slot of a job
 * without one becomes it) until one is freed for us; that one, claimed
 * (state word in *w, its lock in *lk), or NULL. */
static struct hp_lslot *fold(uint32_t *cw, int *lk, int fd, int lfd)
{
	for (uint32_t i = 0; i < HP_LEDGER_SLOTS; i++) {
		struct hp_lslot *s = &hp_led->slot[i];
		uint32_t w = atomic_load_explicit(&s->state,
						  memory_order_acquire);
		int u = HP_LS_ST(w) == HP_LS_DEAD ? dead_use(s, fd) : 0;
		if ((u != 1 && u != 3) || !try_claim(s, &w, i, lfd, lk))
			continue;
		if (u == 3) { /* nothing to fold: the report loses a name */
			*cw = w;
			return s;
		}
		struct hp_lslot *t = sum_of(s, HP_LEDGER_SLOTS);
		if (t) {
			sum_add(t, s);
			*cw = w;
			return s;
		}
		/* the job's summary from now on: not a process's, so no
		 * lock; one process counted in it */
		if (*lk)
			hp_led_slot_lock(lfd, i, F_UNLCK);
		*lk = 0;
		s->pid = s->ppid = 0;
		s->start = 0;
		s->locked = 0;
		s->ended = 0;
		HP_SUM_DID(s) = 1;
		s->local_rank = -1;
		hp_snprintf(s->cmd, sizeof(s->cmd), "(processes folded)");
		/* release: the readers see the summary whole */
		atomic_store_explicit(&s->state, HP_LS_TO(w, HP_LS_SUM),
				      memory_order_release);
	}
	return NULL;
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
static int mark_dead(struct hp_lslot *s, uint32_t w, int fast, int fd)
{
	if (!gone_slot(s, fast, fd))
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
		if (hp_led_slot_lock(fd, i, F_WRLCK) == 0)
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
			hp_led_slot_lock(fd, i, F_UNLCK);
		*lk = 0;
		return 0;
	}
	*w = want;
	uint32_t hw = atomic_load_explicit(&hp_led->hiwater, memory_order_relaxed);
	/* relaxed: hiwater only bounds scans; a scan that misses a slot just
	 * claimed misses nothing LIVE yet (LIVE is published later) */
	while (hw < i + 1 && !atomic_compare_exchange_weak_explicit(
				 &hp_led->hiwater, &hw, i + 1, memory_order_relaxed,
				 memory_order_relaxed))
		;
	return 1;
}

/* Claim a slot, keeping the used part of the table (what sums scan)
 * short: a free one among those used before; a dead one (seen with
 * kill(pid, 0), no /proc read); a never used one; then any whose
 * process is gone by pid and start time; at last one freed by folding
 * the slots kept for running launchers' reports.  NULL if the table is
 * full of live processes; the
 * claimed state word in *cw, whether we hold its lock in *lk. */
struct hp_lslot *hp_led_claim(uint32_t *cw, int *lk)
{
	/* locks are tested through any description of the file; a slot's
	 * lock is taken only through the joining one, which the mapping
	 * holds (a lock taken through another would go with it) */
	int fd = hp_led_fd_get();
	int lfd = fd >= 0 && fd == hp_led_lockfd ? fd : -1;
	struct hp_lslot *got = NULL;
	uint32_t hw = atomic_load_explicit(&hp_led->hiwater, memory_order_relaxed);
	if (hw > HP_LEDGER_SLOTS)
		hw = HP_LEDGER_SLOTS;
	for (int pass = 0; pass < 4; pass++) {
		uint32_t from = pass == 2 ? hw : 0;
		uint32_t to = pass == 0 || pass == 1 ? hw : HP_LEDGER_SLOTS;
		for (uint32_t i = from; i < to; i++) {
			struct hp_lslot *s = &hp_led->slot[i];
			/* acquire: pairs with the release that published the
			 * slot's contents */
			uint32_t w = atomic_load_explicit(&s->state,
							  memory_order_acquire);
			if (pass == 0 || pass == 2) {
				if (HP_LS_ST(w) == HP_LS_FREE &&
				    try_claim(s, &w, i, lfd, lk)) {
					*cw = w, got = s;
					goto out;
				}
				continue;
			}
			/* the generation in w: if the slot was reclaimed
			 * since, the pid read was another's and the CAS
			 * fails */
			if (HP_LS_ST(w) == HP_LS_LIVE &&
			    mark_dead(s, w, pass == 1, fd))
				w = HP_LS_TO(w, HP_LS_DEAD);
			if ((HP_LS_ST(w) == HP_LS_DEAD ||
			     HP_LS_ST(w) == HP_LS_SUM) &&
			    reusable(s, fd) &&
			    try_claim(s, &w, i, lfd, lk)) {
				*cw = w, got = s;
				goto out;
			}
		}
	}
	got = fold(cw, lk, fd, lfd);
out:
	hp_led_fd_put(fd);
	return got;
}

/* Claim pre, the DEAD slot of this process's image before an exec, if
 * that image did nothing (one process, one slot: the report names what
 * it ended as); else any, as hp_led_claim. */
struct hp_lslot *hp_led_claim_pre(struct hp_lslot *pre, uint32_t *cw, int *lk)
{
	if (pre) {
		int fd = hp_led_fd_get();
		int lfd = fd >= 0 && fd == hp_led_lockfd ? fd : -1;
		uint32_t w = atomic_load_explicit(&pre->state,
						  memory_order_acquire);
		int got = HP_LS_ST(w) == HP_LS_DEAD &&
			  pre->pid == (int32_t)getpid() && !slot_did(pre) &&
			  try_claim(pre, &w, (uint32_t)(pre - hp_led->slot),
				    lfd, lk);
		hp_led_fd_put(fd);
		if (got) {
			*cw = w;
			return pre;
		}
	}
	return hp_led_claim(cw, lk);
}

/* Fill the claimed slot s for this process and make it LIVE, with the
 * counters copied from *from. */
void hp_led_fill(struct hp_lslot *s, uint32_t w, int lk,
		 const struct hp_counters *from, const char *cmd)
{
	memset((char *)s + sizeof(s->state), 0, sizeof(*s) - sizeof(s->state));
	s->pid = (int32_t)getpid();
	s->ppid = (int32_t)getppid();
	s->start = hp_proc_start(0);
	s->pidns = hp_led_myns;
	s->locked = (uint32_t)lk;
	s->rank = env_int("RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID");
	s->local_rank = env_int("LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK",
				"SLURM_LOCALID");
	const char *job = hp_optstr[HP_OPT_JOB];
	if (job[0] >= '1' && job[0] <= '9') {
		s->job_pid = (int32_t)strtol(job, NULL, 10);
		s->job_start = hp_led_proc_ok ? hp_proc_start(s->job_pid)
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
	hp_led_self_w = HP_LS_TO(w, HP_LS_LIVE);
	atomic_store_explicit(&s->state, hp_led_self_w, memory_order_release);
}

/* Over the live slots, a counter (an offset into struct hp_counters): its
 * sum (count 0) or how many hold it nonzero (count 1), this process's own
 * share from its own memory.  The file is read with pread, never through
 * the mapping: a file truncated by another process raises no SIGBUS here
 * (what can be read is counted).  A file removed or replaced (no
 * descriptor of it to be had): this process alone, until it joins the file
 * at the path (hp_ledger_check, within a second). */
static uint64_t scan(size_t off, int count)
{
	uint64_t own = atomic_load_explicit(
	    (_Atomic uint64_t *)((char *)&hp_own + off), memory_order_relaxed);
	if (count)
		own = own != 0;
	struct hp_lslot *me = hp_led_self;
	if (!me || !hp_ledger_on())
		return own;
	int fd = hp_led_fd_get();
	uint32_t hw;
	if (fd < 0 || pread(fd, &hw, sizeof(hw),
			    offsetof(struct hp_ledger, hiwater)) !=
			  (ssize_t)sizeof(hw)) {
		hp_led_fd_put(fd);
		return own;
	}
	uint32_t self = (uint32_t)(me - hp_led->slot);
	uint64_t t = 0;
	int seen = 0;
	struct hp_lslot b[8];
	for (uint32_t i = 0; i < hw && i < HP_LEDGER_SLOTS; i += 8) {
		uint32_t n = hw - i < 8 ? hw - i : 8;
		if (n > HP_LEDGER_SLOTS - i)
			n = HP_LEDGER_SLOTS - i;
		ssize_t r = pread(fd, b, n * sizeof(b[0]), HP_SLOT_LOCK_OFF(i));
		if (r < (ssize_t)sizeof(b[0]))
			break;
		n = (uint32_t)((size_t)r / sizeof(b[0]));
		for (uint32_t j = 0; j < n; j++) {
			struct hp_lslot *s = &b[j];
			if (HP_LS_ST(atomic_load_explicit(
				&s->state, memory_order_relaxed)) != HP_LS_LIVE)
				continue;
			/* our own share from our own memory: what the file
			 * says of it may have been changed by another
			 * process */
			if (i + j == self) {
				seen = 1;
				t = hp_sat_add(t, own);
				continue;
			}
			uint64_t v = atomic_load_explicit(
			    (_Atomic uint64_t *)((char *)&s->ctr + off),
			    memory_order_relaxed);
			/* a slot claiming more than the machine has is not
			 * hostpin's word; nor one no process can ever reap:
			 * no lock to test and not of our PID namespace (a
			 * process of the user's could write such a slot and
			 * block pinning for as long as the file exists;
			 * hostpin's own processes hold their lock); and no
			 * sum wraps */
			if (count)
				t += v != 0;
			else if (v <= hp_led_slot_max &&
				 (s->locked || (s->pidns && s->pidns == hp_led_myns)))
				t = hp_sat_add(t, v);
		}
		if (n < 8 && i + n < hw)
			break; /* a short read: the file was cut */
	}
	hp_led_fd_put(fd);
	return seen ? t : hp_sat_add(t, own);
}

uint64_t hp_ledger_sum(size_t off)
{
	return scan(off, 0);
}

unsigned hp_ledger_live(size_t off)
{
	uint64_t n = scan(off, 1);
	return n > 0xffffffffu ? 0xffffffffu : (unsigned)n;
}

int hp_led_second_passed(_Atomic uint64_t *last)
{
	uint64_t now = hp_now_ns(),
		 prev = atomic_load_explicit(last, memory_order_relaxed);
	/* relaxed: only rate-limits (the checks, the /proc reads) */
	return now - prev >= 1000000000u &&
	       atomic_compare_exchange_strong_explicit(last, &prev, now,
						       memory_order_relaxed,
						       memory_order_relaxed);
}

int hp_ledger_reap(void)
{
	static _Atomic uint64_t last;
	if (!hp_ledger_on())
		return 0;
	if (!hp_led_second_passed(&last))
		return 0;
	if (!hp_led_whole()) {
		hp_led_drop();
		return 0;
	}
	int any = 0, fd = hp_led_fd_get();
	uint32_t hw = atomic_load_explicit(&hp_led->hiwater, memory_order_relaxed);
	for (uint32_t i = 0; i < hw && i < HP_LEDGER_SLOTS; i++) {
		struct hp_lslot *s = &hp_led->slot[i];
		uint32_t w = atomic_load_explicit(&s->state,
						  memory_order_acquire);
		if (HP_LS_ST(w) == HP_LS_LIVE && s != hp_led_self &&
		    mark_dead(s, w, 0, fd))
			any = 1;
	}
	hp_led_fd_put(fd);
	return any;
}

#ifdef HP_EMBEDDED_TEST
/* The unit tests' handles (tests/unit/check_ledger.c): ledger l, mapped
 * from the file open on fd, as this process's; a reaper's step; a claim
 * filled for this process. */
void hp_ledger_test_use(struct hp_ledger *l, int fd)
{
	struct stat st;
	hp_led = l;
	hp_led_self = NULL;
	hp_led_lockfd = fd;
	if (fd >= 0 && fstat(fd, &st) == 0)
		hp_led_lock_dev = st.st_dev, hp_led_lock_ino = st.st_ino;
	hp_led_myns = hp_pidns(&hp_led_proc_ok);
}
int hp_ledger_test_mark_dead(struct hp_lslot *s, uint32_t w)
{
	int fd = hp_led_fd_get();
	int r = mark_dead(s, w, 0, fd);
	hp_led_fd_put(fd);
	return r;
}
struct hp_lslot *hp_ledger_test_claim(void)
{
	uint32_t w;
	int lk;
	struct hp_lslot *s = hp_led_claim(&w, &lk);
	if (s)
		hp_led_fill(s, w, lk, &hp_own, (const char[HP_LEDGER_CMD]){"test"});
	return s;
}
#endif
