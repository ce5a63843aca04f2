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
#include <time.h>

#include "ledger.h"

static struct hp_ledger *led;
static struct hp_lslot *self;

int hp_ledger_on(void) { return self != NULL; }

static int env_int(const char *a, const char *b)
{
	const char *v = getenv(a);
	if (!v || !*v)
		v = b ? getenv(b) : NULL;
	if (!v || *v < '0' || *v > '9')
		return -1;
	long n = strtol(v, NULL, 10);
	return n >= 0 && n < (1L << 30) ? (int)n : -1;
}

static void read_cmd(char *out, size_t cap)
{
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, out, cap - 1) : -1;
	if (fd >= 0)
		close(fd);
	if (n < 0)
		n = 0;
	while (n > 0 && out[n - 1] == '\0')
		n--;
	for (ssize_t i = 0; i < n; i++)
		if (out[i] == '\0' || out[i] == '\n' || out[i] == '\t')
			out[i] = ' ';
	out[n] = '\0';
}

/* Surely gone (cheap: no /proc read), or gone by pid and start time. */
static int gone_fast(int pid)
{
	return pid <= 0 || (kill(pid, 0) != 0 && errno == ESRCH);
}
static int gone(int pid, uint64_t start)
{
	return gone_fast(pid) || hp_proc_start(pid) != start;
}

/* A DEAD slot may be reused unless a running launcher will report it. */
static int reusable(struct hp_lslot *s)
{
	/* relaxed: statistics */
	int did = atomic_load_explicit(&s->ctr.pin_calls, memory_order_relaxed) ||
		  atomic_load_explicit(&s->ctr.copies_seen, memory_order_relaxed) ||
		  atomic_load_explicit(&s->ctr.bytes_peak, memory_order_relaxed) ||
		  atomic_load_explicit(&s->ctr.fail_count, memory_order_relaxed);
	return !s->job_pid || !did || gone(s->job_pid, s->job_start);
}

static int try_claim(struct hp_lslot *s, uint32_t st, uint32_t i)
{
	/* acq_rel: the claim orders our writes to the slot after the
	 * previous owner's */
	if (!atomic_compare_exchange_strong_explicit(&s->state, &st, HP_LS_CLAIM,
						     memory_order_acq_rel,
						     memory_order_acquire))
		return 0;
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
 * process is gone by pid and start time.  NULL if the table is full. */
static struct hp_lslot *claim(void)
{
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
			uint32_t st = atomic_load_explicit(&s->state,
							   memory_order_acquire);
			if (pass == 0 || pass == 2) {
				if (st == HP_LS_FREE && try_claim(s, st, i))
					return s;
				continue;
			}
			if (st == HP_LS_LIVE &&
			    (pass == 1 ? gone_fast(s->pid)
				       : gone(s->pid, s->start)) &&
			    atomic_compare_exchange_strong_explicit(
				&s->state, &st, HP_LS_DEAD,
				memory_order_acq_rel, memory_order_acquire))
				st = HP_LS_DEAD;
			if (st == HP_LS_DEAD && reusable(s) && try_claim(s, st, i))
				return s;
		}
	}
	return NULL;
}

/* Fill the claimed slot s for this process and make it LIVE, with the
 * counters copied from *from. */
static void fill(struct hp_lslot *s, const struct hp_counters *from,
		 const char *cmd)
{
	memset((char *)s + sizeof(s->state), 0, sizeof(*s) - sizeof(s->state));
	s->pid = (int32_t)getpid();
	s->ppid = (int32_t)getppid();
	s->start = hp_proc_start(s->pid);
	s->rank = env_int("RANK", "OMPI_COMM_WORLD_RANK");
	s->local_rank = env_int("LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK");
	const char *job = hp_optstr[HP_OPT_JOB];
	if (job[0] >= '1' && job[0] <= '9') {
		s->job_pid = (int32_t)strtol(job, NULL, 10);
		s->job_start = hp_proc_start(s->job_pid);
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
	atomic_store_explicit(&s->state, HP_LS_LIVE, memory_order_release);
}

void hp_ledger_attach(void)
{
	const char *p = hp_optstr[HP_OPT_LEDGER];
	char path[300];
	/* in secure-execution processes hostpin writes no files */
	if (strcmp(p, "off") == 0 || getauxval(AT_SECURE))
		return;
	if (!p[0])
		hp_snprintf(path, sizeof(path), "/dev/shm/hostpin-%u",
			    (unsigned)geteuid());
	else
		hp_snprintf(path, sizeof(path), "%s", p);
	int fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		hp_log(HP_LOG_INFO, "no ledger: cannot open %s (errno %d); "
		       "node-wide caps do not apply", path, errno);
		return;
	}
	struct stat st;
	/* only a new (empty) file is sized: a wrong HOSTPIN_LEDGER never
	 * grows a file of the user's */
	if (fstat(fd, &st) || st.st_uid != geteuid() || !S_ISREG(st.st_mode) ||
	    (st.st_size == 0 &&
	     ftruncate(fd, (off_t)sizeof(struct hp_ledger))) ||
	    (st.st_size != 0 && st.st_size < (off_t)sizeof(struct hp_ledger))) {
		hp_log(HP_LOG_WARN, "ledger %s: not a file of ours or cannot "
		       "size it; node-wide caps do not apply", path);
		close(fd);
		return;
	}
	void *m = mmap(NULL, sizeof(struct hp_ledger), PROT_READ | PROT_WRITE,
		       MAP_SHARED, fd, 0);
	int err = errno;
	close(fd);
	if (m == MAP_FAILED) {
		hp_log(HP_LOG_WARN, "no ledger: cannot map %s: %s (errno %d); "
		       "node-wide caps do not apply", path, hp_strerror(err),
		       err);
		return;
	}
	struct hp_ledger *l = m;
	uint64_t want = HP_LEDGER_LAYOUT, cur = 0;
	/* acq_rel: the layout word is the only header field written once */
	if (!atomic_compare_exchange_strong_explicit(&l->layout, &cur, want,
						     memory_order_acq_rel,
						     memory_order_acquire) &&
	    cur != want) {
		hp_log(HP_LOG_WARN, "ledger %s has another layout (another "
		       "hostpin version); node-wide caps do not apply", path);
		munmap(m, sizeof(struct hp_ledger));
		return;
	}
	led = l;
	/* A LIVE slot with our pid is our own image before an exec (same pid
	 * and start time), or a process long gone whose pid we got: either
	 * way no process of ours uses it any more. */
	int pid = (int)getpid();
	uint32_t hw = atomic_load_explicit(&led->hiwater, memory_order_relaxed);
	for (uint32_t i = 0; i < hw && i < HP_LEDGER_SLOTS; i++) {
		struct hp_lslot *s = &led->slot[i];
		uint32_t live = HP_LS_LIVE;
		if (s->pid == pid)
			atomic_compare_exchange_strong_explicit(
			    &s->state, &live, HP_LS_DEAD, memory_order_acq_rel,
			    memory_order_relaxed);
	}
	struct hp_lslot *s = claim();
	if (!s) {
		hp_log(HP_LOG_WARN, "ledger %s is full (%d processes); this "
		       "process is not counted node-wide", path, HP_LEDGER_SLOTS);
		return;
	}
	fill(s, hp_ctrp, NULL);
	self = s;
	hp_ctrp = &s->ctr;
	hp_log(HP_LOG_INFO, "ledger %s, slot %d", path, (int)(s - led->slot));
}

void hp_ledger_fork_child(void)
{
	if (!self)
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
	};
	for (size_t i = 0; i < sizeof(did) / sizeof(did[0]); i++)
		memset((char *)&c + did[i], 0, sizeof(uint64_t));
	static struct hp_counters orphan;
	char cmd[HP_LEDGER_CMD];
	memcpy(cmd, self->cmd, sizeof(cmd));
	self = NULL;
	struct hp_lslot *s = claim();
	if (!s) {
		memcpy(&orphan, &c, sizeof(c));
		hp_ctrp = &orphan;
		return;
	}
	fill(s, &c, cmd);
	self = s;
	hp_ctrp = &s->ctr;
}

uint64_t hp_ledger_sum(size_t off)
{
	if (!self)
		return atomic_load_explicit(
		    (_Atomic uint64_t *)((char *)hp_ctrp + off),
		    memory_order_relaxed);
	uint64_t t = 0;
	uint32_t hw = atomic_load_explicit(&led->hiwater, memory_order_relaxed);
	for (uint32_t i = 0; i < hw && i < HP_LEDGER_SLOTS; i++) {
		struct hp_lslot *s = &led->slot[i];
		/* relaxed: a sum of statistics, each read on its own */
		if (atomic_load_explicit(&s->state, memory_order_relaxed) ==
		    HP_LS_LIVE)
			t += atomic_load_explicit(
			    (_Atomic uint64_t *)((char *)&s->ctr + off),
			    memory_order_relaxed);
	}
	return t;
}

int hp_ledger_reap(void)
{
	static _Atomic uint64_t last;
	if (!self)
		return 0;
	uint64_t now = hp_now_ns(),
		 prev = atomic_load_explicit(&last, memory_order_relaxed);
	/* relaxed: only rate-limits the /proc reads */
	if (now - prev < 1000000000u ||
	    !atomic_compare_exchange_strong_explicit(&last, &prev, now,
						     memory_order_relaxed,
						     memory_order_relaxed))
		return 0;
	int any = 0;
	uint32_t hw = atomic_load_explicit(&led->hiwater, memory_order_relaxed);
	for (uint32_t i = 0; i < hw && i < HP_LEDGER_SLOTS; i++) {
		struct hp_lslot *s = &led->slot[i];
		uint32_t st = atomic_load_explicit(&s->state,
						   memory_order_acquire);
		if (st == HP_LS_LIVE && s != self && gone(s->pid, s->start) &&
		    atomic_compare_exchange_strong_explicit(
			&s->state, &st, HP_LS_DEAD, memory_order_acq_rel,
			memory_order_relaxed))
			any = 1;
	}
	return any;
}
