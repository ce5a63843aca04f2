/* The live counters and the clock every layer counts with.  hp_own is this
 * process's, in its own memory, always; hp_ctr_publish copies it into the
 * process's slot of the node's ledger (hp.h: by pwrite, never through a
 * mapping) once node/ledger.c gives the process a slot (hp_ctr_pub), so
 * counting never waits for the ledger, no other process can change what
 * this one counts, and a ledger file truncated by another process raises
 * no SIGBUS in this one.
 * Depends on nothing above the base: the ledger, the backends and the
 * policy all count here. */
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../hp.h"

struct hp_counters hp_own;
const struct hp_ctr_target *_Atomic hp_ctr_pub;
/* one copy at a time (pub_busy); a copy asked for meanwhile (pub_again)
 * is made by the thread copying; when the last one was made */
static _Atomic int pub_busy, pub_again;
static _Atomic uint64_t pub_last;

/* hp_own into the slot t names, if the file at its path is still that
 * file, whole: raw open, fstat, pwrite, close (no allocation; the open
 * description is a new one: the slot's lock, held by another, stays). */
void hp_ctr_copy_to(const struct hp_ctr_target *t)
{
	int fd = open(t->path, O_WRONLY | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK |
				       O_CLOEXEC);
	if (fd < 0)
		return;
	struct stat st;
	struct rlimit fl;
	uint64_t v[sizeof(struct hp_counters) / sizeof(uint64_t)];
	/* a write past RLIMIT_FSIZE would raise SIGXFSZ (mapped memory never
	 * did): under so low a limit (ulimit -f) the copy is not made */
	if (fstat(fd, &st) == 0 && st.st_dev == t->dev && st.st_ino == t->ino &&
	    st.st_size == t->size && getrlimit(RLIMIT_FSIZE, &fl) == 0 &&
	    (fl.rlim_cur == RLIM_INFINITY ||
	     fl.rlim_cur >= (rlim_t)t->off + sizeof(v))) {
		_Atomic uint64_t *c = (_Atomic uint64_t *)(void *)&hp_own;
		for (size_t k = 0; k < sizeof(v) / sizeof(v[0]); k++)
			v[k] = atomic_load_explicit(&c[k], memory_order_relaxed);
		if (pwrite(fd, v, sizeof(v), t->off) != (ssize_t)sizeof(v)) {
			/* a file truncated meanwhile: the next check of the
			 * ledger (ledger_join.c) finds it out */
		}
	}
	close(fd);
}

void hp_ctr_publish(int now)
{
	if (!now && hp_now_ns() - atomic_load(&pub_last) < 1000000000u)
		return;
	atomic_store(&pub_again, 1);
	for (;;) {
		if (atomic_exchange(&pub_busy, 1))
			return; /* the thread copying makes another */
		while (atomic_exchange(&pub_again, 0)) {
			/* loaded again under pub_busy: hp_ctr_unpublish
			 * cleared it, or waits for us */
			const struct hp_ctr_target *t = atomic_load(&hp_ctr_pub);
			if (t)
				hp_ctr_copy_to(t);
			atomic_store(&pub_last, hp_now_ns());
		}
		atomic_store(&pub_busy, 0);
		if (!atomic_load(&pub_again))
			return;
	}
}

void hp_ctr_unpublish(int child)
{
	atomic_store(&hp_ctr_pub, NULL);
	if (child) { /* the parent's thread that was copying is not ours */
		atomic_store(&pub_busy, 0);
		atomic_store(&pub_again, 0);
		return;
	}
	while (atomic_load(&pub_busy))
		;
}

uint64_t hp_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void hp_stat_add_peak(_Atomic uint64_t *now, _Atomic uint64_t *peak,
		      uint64_t n)
{
	/* relaxed: statistics only; nothing is ordered by them. */
	uint64_t v = atomic_fetch_add_explicit(now, n, memory_order_relaxed) + n;
	uint64_t p = atomic_load_explicit(peak, memory_order_relaxed);
	while (v > p && !atomic_compare_exchange_weak_explicit(
			    peak, &p, v, memory_order_relaxed,
			    memory_order_relaxed))
		;
}
