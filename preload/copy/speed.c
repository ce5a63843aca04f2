/* How many copy threads stage (HOSTPIN_STAGE_THREADS=0: auto), and whether
 * staging pays at all (issue 43).  A staged copy costs one memcpy per byte
 * on the host; the link's DMA costs it nothing.  Where the link is faster
 * than one core's memcpy (an H200's PCIe 5.0 x16 host: about five times),
 * staging needs several copy threads to keep it busy, and where the
 * threads together copy slower than the driver's own pageable path, it
 * loses.  So:
 *   link    HOSTPIN_STAGE_LINK GB/s (host to device).  Nothing on the
 *           host says how fast the link is, so the default assumes a fast
 *           one (55: PCIe 5.0 x16, what an H200 host moves pinned); a
 *           slower link only gets more threads than it needs.  0: not
 *           sized by speed (min(2, CPUs) threads, never passed through).
 *   memcpy  one core's, as a copy thread fills a slot (the ring's
 *           non-temporal copy, in a copy thread's parts, between warm
 *           buffers: hp_speed_memcpy), measured once, in the background
 *           from the first copy that asks (hp_pool_early).
 *   threads ceil(link / memcpy), at most the CPUs the process may use
 *           (affinity, cgroup) and its share of the node's CPUs among the
 *           processes staging on it (the ledger's live slots with a ring).
 *   pays    staging's rate a quarter above the driver's pageable rate
 *           (MARGIN: the staged path's own costs), the pageable rate
 *           assumed to be the H200's ratio to the link (7.2 of 54 GB/s
 *           host to device, 12.5 of 54 device to host).  Staging's rate,
 *           per direction: at first threads x memcpy, the threads at most
 *           the CPUs and their share of the node's CPUs among the threads
 *           busy then (/proc/loadavg: the runnable now, the last minute's
 *           load: a busy CPU), then the staged rounds' (stage.c: 64 MiB
 *           H2D, 128 MiB D2H, with the default ring): a round slower than
 *           the rate so far counts whole, a faster one half, and one that
 *           does not pay closes the gate only as the second in a row
 *           (hp_speed_next), so a CPU that turns busy while the process
 *           runs passes the round after next through; a D2H round
 *           into a destination not resident is not counted, and is
 *           staged whatever the gate says (the driver's pageable path
 *           faults it in slower than one copy thread: issue 43's H100
 *           host).  Below, copies that way, and the rest of a copy being
 *           staged, pass through for a second; then the rate is estimated
 *           again from the node's load (still busy: another second), and
 *           staging tries again where it pays: a process whose threads
 *           cannot beat the pageable path stages next to nothing.
 * HOSTPIN_STAGE_THREADS=N overrides the count (not bounded by the CPUs:
 * then the copy threads never spin); the gate holds for it too. */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../node/ledger.h"
#include "../record.h"
#include "ntcopy.h"
#include "stage.h"

#define MEASURE ((size_t)32 << 20) /* a pass of the memcpy measured */
#define SLOT ((size_t)8 << 20) /* HOSTPIN_STAGE_BUFFER's default slot */
#define PART ((size_t)1 << 20) /* pool.c's PART_MIN: a copy thread's part */
#define PASSES 3
#define PAUSE_NS 1000000000ull
/* staging must beat pageable by this much (%): a staged copy's own costs
 * (the hand-off, a round at a rate it only learns by staging it) */
#define MARGIN 125
#define ROUND_MIN ((size_t)32 << 20) /* rounds measured: this or more */
static const unsigned pageable_pct[2] = {13, 23}; /* H2D, D2H: of the link */

static pthread_once_t once = PTHREAD_ONCE_INIT;
static _Atomic int picked; /* pick() made (read without the once) */
static int pays(int d);
static unsigned link_mbs, mc_mbs, n_threads, peers, cpus, need, busy;
static long online;
/* the busy-CPU gate, per direction (H2D, D2H) */
static _Atomic uint64_t avg_mbs[2], pause_until[2];
static _Atomic unsigned slow_run[2]; /* rounds in a row that did not pay */
/* the rounds staged now per direction, and the most at once since a
 * round began alone (hp_pool_round) */
static _Atomic unsigned rounds[2], most[2];

/* One core's rate at what a copy thread does (issue 43): a staged H2D's
 * fill, parts of PART bytes copied with the ring's own routine (pool.c:
 * hp_nt_copy, non-temporal stores) from a warm source into a warm slot of
 * SLOT bytes, MEASURE bytes a pass, the best of PASSES; MB/s, 0 if it
 * cannot tell.  Before: two 16 MiB memcpys, whose cached stores (glibc's
 * below its non-temporal threshold) read 4.6 GB/s a core on a machine
 * whose 256 MiB memcpy, and the ring's fill, ran at 10: too few threads
 * for the link.  hp_speed_memcpy: the same with copy as the routine. */
static void fill(char *d, const char *s, size_t n)
{
	hp_nt_copy(d, s, n);
}

unsigned hp_speed_memcpy(void (*copy)(char *d, const char *s, size_t n))
{
	size_t len = MEASURE + SLOT;
	char *b = hp_real.mmap(NULL, len, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (b == MAP_FAILED)
		return 0;
	memset(b, 1, len);
	uint64_t best = 0;
	for (int i = 0; i < PASSES; i++) {
		uint64_t t0 = hp_now_ns();
		for (size_t o = 0; o < MEASURE; o += PART)
			copy(b + MEASURE + o % SLOT, b + o, PART);
		uint64_t dt = hp_now_ns() - t0;
		uint64_t r = dt ? (uint64_t)MEASURE * 1000 / dt : 0;
		best = r > best ? r : best;
	}
	hp_real.munmap(b, len);
	return (unsigned)(best > 1000000 ? 1000000 : best);
}

static unsigned measure(void)
{
	return hp_speed_memcpy(fill);
}

/* The threads busy on the node besides this one (/proc/loadavg: its
 * runnable count now and its last minute's load, hp_speed_busy); 0 if it
 * cannot tell. */
static unsigned busy_now(void)
{
	char b[128];
	ssize_t n = hp_read_small("/proc/loadavg", b, sizeof(b) - 1);
	if (n <= 0)
		return 0;
	b[n] = '\0';
	return hp_speed_busy(b);
}

/* ---- the decisions, on the numbers measured (unit-tested: check_speed.c)
 * ---- MB/s throughout; a rate x100 where it counts cores. */

/* The threads busy besides this one, from /proc/loadavg's text ("1.92
 * 0.80 0.31 3/179 4242"): the runnable count now (the fourth field's
 * first number: a spinning process is always there) and the last minute's
 * load rounded (other jobs that come and go), the larger, this thread not
 * counted. */
unsigned hp_speed_busy(const char *t)
{
	unsigned load = 0, frac = 0, run = 0;
	const char *p = t;
	while (*p >= '0' && *p <= '9')
		load = load * 10 + (unsigned)(*p++ - '0');
	if (*p == '.' && p[1] >= '0' && p[1] <= '9')
		frac = (unsigned)(p[1] - '0');
	load += frac >= 5;
	for (int f = 0; f < 3 && p; f++) {
		p = strchr(p, ' ');
		p = p ? p + 1 : NULL;
	}
	while (p && *p >= '0' && *p <= '9')
		run = run * 10 + (unsigned)(*p++ - '0');
	unsigned m = run > load ? run : load;
	return m > 1 ? m - 1 : 0;
}

/* The threads for the link: ceil(link / memcpy), at most cap (the CPUs
 * and the node's share), asked instead when set; *need: the link's. */
unsigned hp_speed_threads(unsigned link, unsigned mc, unsigned cap,
			  unsigned asked, unsigned *need)
{
	*need = mc ? (link + mc - 1) / mc : cap;
	unsigned n = asked ? asked : *need < cap ? *need : cap;
	return n ? n : 1;
}

/* The threads' rate: as many cores as they get, the CPUs they may use
 * shared with the threads runnable besides them (busy) on online CPUs. */
uint64_t hp_speed_rate(unsigned n, unsigned cpus, long online, unsigned busy,
		       unsigned mc)
{
	unsigned run = n < cpus ? n : cpus;
	uint64_t cores = (uint64_t)run * 100;
	if (online > 0 && busy + n > (unsigned long)online) {
		uint64_t got = (uint64_t)online * 100 * n / (busy + n);
		cores = got < cores ? got : cores;
	}
	uint64_t r = cores * mc / 100;
	return r || !mc ? r : 1; /* 0 is "not known" (hp_speed_pays) */
}

/* Staging at rate beats the pageable path of direction d (0 H2D, 1 D2H)
 * on a link of link MB/s; 0: not known yet (a round measures it). */
int hp_speed_pays(uint64_t rate, unsigned link, int d)
{
	return rate == 0 || rate * 100 >
				    (uint64_t)link * pageable_pct[d] * MARGIN / 100;
}

/* The least rate that beats the pageable path of direction d by MARGIN. */
static uint64_t pay_least(unsigned link, int d)
{
	return (uint64_t)link * pageable_pct[d] * MARGIN / 10000 + 1;
}

/* The rate after a staged round at r (issue 43: the gate), *slow: the
 * rounds in a row that did not pay, this one counted.  A round that pays:
 * a slower one counts whole, a faster one half.  A round that does not
 * pay (slow) closes the gate only as the second in a row (the rate then
 * r): one alone weighs half and leaves the rate no lower than the least
 * that pays.  One slow round is noise as often as not (a copy thread
 * preempted, a page-fault burst, the DMA behind another process's: an
 * H100 run's staged 64 MiB copies ran at the pageable path's rate for the
 * second the gate stayed closed after one); two in a row are a CPU that
 * turned busy, and cost one round more than closing at the first.  After
 * a pause the gate reopens with *slow at 1 (hp_pool_worth): its first
 * round is a probe, and closes it again alone. */
uint64_t hp_speed_next(uint64_t avg, uint64_t r, unsigned link, int d,
		       unsigned *slow)
{
	if (hp_speed_pays(r, link, d)) {
		*slow = 0;
		return avg == 0 || r < avg ? r : (avg + r) / 2;
	}
	if (++*slow >= 2)
		return r;
	uint64_t h = (avg + r) / 2, least = pay_least(link, d);
	return h > least ? h : least;
}

int hp_speed_resident(const void *p, size_t n)
{
	if (n == 0)
		return 1;
	uintptr_t a = (uintptr_t)p, at[3] = {a, a + n / 2, a + n - 1};
	for (int i = 0; i < 3; i++) {
		unsigned char v = 0;
		void *pg = (void *)(at[i] & ~(uintptr_t)(HP_PAGE_SIZE - 1));
		if (mincore(pg, HP_PAGE_SIZE, &v) != 0 || !(v & 1))
			return 0;
	}
	return 1;
}

uint64_t hp_speed_round(size_t bytes, uint64_t ns, unsigned copies)
{
	return ns ? (uint64_t)bytes * 1000 / ns * (copies ? copies : 1) : 0;
}

static void pick(void)
{
	unsigned asked = (unsigned)hp_opt[HP_OPT_STAGE_THREADS];
	link_mbs = (unsigned)hp_opt[HP_OPT_STAGE_LINK] * 1000;
	cpus = hp_cpu_limit();
	online = sysconf(_SC_NPROCESSORS_ONLN);
	busy = busy_now();
	if (link_mbs == 0) { /* not sized by speed */
		n_threads = asked ? asked : cpus < 2 ? 1 : 2;
		return;
	}
	mc_mbs = measure();
	/* the processes staging on this node, this one counted */
	peers = (unsigned)hp_ledger_live(offsetof(struct hp_counters,
						  ring_bytes)) +
		(atomic_load_explicit(&hp_ctr.ring_bytes,
				      memory_order_relaxed) == 0);
	if (peers == 0)
		peers = 1;
	unsigned share = online > 0 ? (unsigned)online / peers : cpus;
	unsigned cap = cpus < share ? cpus : share ? share : 1;
	n_threads = hp_speed_threads(link_mbs, mc_mbs, cap, asked, &need);
	uint64_t r = hp_speed_rate(n_threads, cpus, online, busy, mc_mbs);
	for (int d = 0; d < 2; d++)
		atomic_store_explicit(&avg_mbs[d], r, memory_order_relaxed);
	/* release: the choice above before a reader sees it made */
	atomic_store_explicit(&picked, 1, memory_order_release);
}

/* ---- the first copy's set-up, off its path (issue 43) ----
 * The pick (the memcpy measured: tens of ms) and the copy threads' start
 * are made by a thread of their own, started by the first copy that asks
 * the gate (a copy of HOSTPIN_STAGE_MIN or more from memory the driver
 * does not know: a process that never copies starts nothing) or the first
 * ring asked for.  Until the pick is made the gate answers "not known" as
 * for a rate not measured: the copy asks for its ring and passes through
 * (the ring is not made yet either); the growth thread makes a ring's
 * first segment only once the pick is made (hp_pool_can waits for it, in
 * the background), and only for a direction that can be staged, so no
 * copy is staged, nor a ring registered, before the gate knows. */
static _Atomic int early;
/* a D2H into a fresh destination asked (hp_pool_worth_at): its ring is
 * made, the gate shut or not */
static _Atomic int fresh_seen;

static void *early_main(void *arg)
{
	(void)arg;
	hp_in_hook = 1; /* nothing this thread does is the program's */
	hp_pool_start();
	return NULL;
}

void hp_pool_early(void)
{
	/* relaxed: a flag, once */
	if (atomic_exchange_explicit(&early, 1, memory_order_relaxed))
		return;
	if (hp_thread_start(early_main, NULL, 0) != 0)
		hp_pool_start(); /* no thread: here, as before */
}

int hp_pool_can(int htod)
{
	hp_pool_start(); /* the pick and the copy threads, waited for */
	/* relaxed: a flag */
	return hp_opt[HP_OPT_STAGE_LINK] == 0 || pays(!htod) ||
	       (!htod &&
		atomic_load_explicit(&fresh_seen, memory_order_relaxed));
}

/* Do the copy threads beat the pageable path of direction d now? */
static int pays(int d)
{
	/* relaxed: a rate, read on its own */
	return hp_speed_pays(atomic_load_explicit(&avg_mbs[d],
						  memory_order_relaxed),
			     link_mbs, d);
}

unsigned hp_pool_threads(void)
{
	pthread_once(&once, pick);
	return n_threads;
}

int hp_pool_spare(void)
{
	/* acquire: pairs with pick's release */
	return atomic_load_explicit(&picked, memory_order_acquire) &&
	       n_threads < cpus;
}

int hp_pool_quiet(void)
{
	pthread_once(&once, pick);
	return n_threads <= cpus &&
	       (online <= 0 || busy + n_threads <= (unsigned long)online);
}

int hp_pool_worth(int htod)
{
	if (hp_opt[HP_OPT_STAGE_LINK] == 0)
		return 1;
	/* acquire: pairs with pick's release */
	if (!atomic_load_explicit(&picked, memory_order_acquire)) {
		hp_pool_early(); /* not known yet: the ring asked for */
		return 1;
	}
	int d = !htod;
	if (pays(d))
		return 1;
	/* relaxed: a time, read on its own */
	uint64_t now = hp_now_ns(),
		 u = atomic_load_explicit(&pause_until[d], memory_order_relaxed);
	if (u == 0) { /* just fell below: pass through for a while */
		atomic_store_explicit(&pause_until[d], now + PAUSE_NS,
				      memory_order_relaxed);
		return 0;
	}
	if (now < u)
		return 0;
	/* try again: estimated from the node's load now (a CPU still busy
	 * passes through another while, no round staged to learn it), then
	 * the next staged round measures */
	uint64_t r = hp_speed_rate(n_threads, cpus, online, busy_now(), mc_mbs);
	atomic_store_explicit(&avg_mbs[d], r, memory_order_relaxed);
	if (!hp_speed_pays(r, link_mbs, d)) {
		atomic_store_explicit(&pause_until[d], now + PAUSE_NS,
				      memory_order_relaxed);
		return 0;
	}
	atomic_store_explicit(&pause_until[d], 0, memory_order_relaxed);
	/* reopened: its next round a probe (a slow one closes it alone) */
	atomic_store_explicit(&slow_run[d], 1, memory_order_relaxed);
	return 1;
}

int hp_pool_worth_at(int htod, const void *h, size_t n)
{
	/* acquire: pairs with pick's release (n_threads) */
	int known = hp_opt[HP_OPT_STAGE_LINK] == 0 ||
		    atomic_load_explicit(&picked, memory_order_acquire);
	if (known && hp_pool_worth(htod))
		return 1;
	/* the driver's pageable path faults a fresh destination in far
	 * slower than a copy thread's copy into it does (issue 43's H100
	 * host: 1.2 GB/s against 3.2 with one copy thread, 3.3 with two),
	 * whatever the link: staged with any number of copy threads; not
	 * known yet: its ring is made for it (hp_pool_can) */
	int fresh = !htod && h != NULL && !hp_speed_resident(h, n);
	if (fresh) /* relaxed: a flag */
		atomic_store_explicit(&fresh_seen, 1, memory_order_relaxed);
	return known ? fresh : hp_pool_worth(htod);
}

void hp_pool_seen(int htod, size_t bytes, uint64_t ns)
{
	if (ns == 0 || bytes < ROUND_MIN)
		return; /* a small copy's first touches weigh too much */
	int d = !htod;
	/* relaxed: a count, read on its own */
	uint64_t r = hp_speed_round(bytes, ns, atomic_load_explicit(
				    &most[d], memory_order_relaxed));
	uint64_t a = atomic_load_explicit(&avg_mbs[d], memory_order_relaxed);
	unsigned sl = atomic_load_explicit(&slow_run[d], memory_order_relaxed);
	a = hp_speed_next(a, r, link_mbs, d, &sl);
	atomic_store_explicit(&slow_run[d], sl, memory_order_relaxed);
	atomic_store_explicit(&avg_mbs[d], a, memory_order_relaxed);
}

void hp_pool_round(int htod, int delta)
{
	int d = !htod;
	/* relaxed: counts, read on their own (a rate's estimate) */
	unsigned n = atomic_fetch_add_explicit(&rounds[d], (unsigned)delta,
					       memory_order_relaxed) +
		     (unsigned)delta;
	unsigned m = atomic_load_explicit(&most[d], memory_order_relaxed);
	if (delta > 0 && (n == 1 || n > m)) /* alone: counted from 1 again */
		atomic_store_explicit(&most[d], n, memory_order_relaxed);
}

const char *hp_pool_note(void)
{
	static char note[320];
	pthread_once(&once, pick);
	unsigned asked = (unsigned)hp_opt[HP_OPT_STAGE_THREADS];
	if (link_mbs == 0)
		hp_snprintf(note, sizeof(note), "%s%u here; not sized by the "
			    "link's speed: HOSTPIN_STAGE_LINK=0",
			    asked ? "" : "auto: ", n_threads);
	else
		hp_snprintf(note, sizeof(note),
			    "%s (%u here): link %u GB/s (HOSTPIN_STAGE_LINK), "
			    "memcpy %u.%u GB/s a core, so %u for the link; CPUs "
			    "%u, processes staging on this node %u, threads "
			    "busy %u%s%s",
			    asked ? "asked" : "auto", n_threads, link_mbs / 1000,
			    mc_mbs / 1000, mc_mbs % 1000 / 100, need, cpus,
			    peers, busy, pays(0) ? "" : "; H2D passes through now "
			    "(slower than pageable)", pays(1) ? "" : "; D2H "
			    "passes through now (slower than pageable)");
	return note;
}
