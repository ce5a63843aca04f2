/* Allocation sites (HOSTPIN_BACKTRACE=N): the first N return addresses of
 * each large allocation, taken with libunwind (dlopen'd only when asked),
 * and the pinned bytes each site owns now and at peak.  The report lists
 * the sites that owned the most. */
#include <dlfcn.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "../hp.h"

#define SITES 1024 /* site 0 means "none" */
#define MAXF 16

static struct site {
	uint64_t hash;
	int nframes;
	void *frames[MAXF];
	uint64_t blocks, now, peak;
} sites[SITES];
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int (*unw_bt)(void **, int);
static int unw_state; /* 0 untried, 1 ok, -1 unavailable */

unsigned hp_site_capture(void)
{
	int depth = (int)hp_opt[HP_OPT_BACKTRACE];
	if (depth == 0 || hp_in_child)
		return 0;
	if (unw_state == 0) {
		void *h = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
		*(void **)&unw_bt = h ? dlsym(h, "unw_backtrace") : NULL;
		unw_state = unw_bt ? 1 : -1;
		if (!unw_bt)
			hp_log(HP_LOG_WARN, "HOSTPIN_BACKTRACE: cannot load "
			       "libunwind.so.8 (Debian libunwind8); no sites");
	}
	if (unw_state < 0)
		return 0;
	void *f[MAXF + 8];
	int n = unw_bt(f, depth + 8 < MAXF + 8 ? depth + 8 : MAXF + 8);
	/* Skip hostpin's own frames (how many depends on the path taken):
	 * the site is the first caller outside libhostpin.so. */
	static void *self;
	Dl_info di;
	if (self == NULL && dladdr((void *)hp_site_capture, &di))
		self = di.dli_fbase;
	int skip = 0;
	while (skip < n && dladdr(f[skip], &di) && di.dli_fbase == self)
		skip++;
	n -= skip;
	if (n > depth)
		n = depth;
	uint64_t h = 1469598103934665603ull;
	for (int i = 0; i < n; i++)
		h = (h ^ (uintptr_t)f[skip + i]) * 1099511628211ull;
	pthread_mutex_lock(&mu);
	unsigned idx = (unsigned)(h % (SITES - 1)) + 1;
	for (int probe = 0; probe < SITES - 1; probe++) {
		struct site *s = &sites[idx];
		if (s->hash == h || s->nframes == 0) {
			if (s->nframes == 0) {
				s->hash = h;
				s->nframes = n ? n : 1;
				memcpy(s->frames, &f[skip],
				       sizeof(void *) * (size_t)n);
			}
			pthread_mutex_unlock(&mu);
			return idx;
		}
		idx = idx % (SITES - 1) + 1;
	}
	pthread_mutex_unlock(&mu);
	return 0; /* table full */
}

void hp_site_account(unsigned idx, size_t len, int add)
{
	if (idx == 0 || idx >= SITES)
		return;
	pthread_mutex_lock(&mu);
	struct site *s = &sites[idx];
	if (add) {
		s->blocks++;
		s->now += len;
		if (s->now > s->peak)
			s->peak = s->now;
	} else if (s->now >= len) {
		s->now -= len;
	}
	pthread_mutex_unlock(&mu);
}

void hp_sites_report(int fd)
{
	if (hp_opt[HP_OPT_BACKTRACE] == 0)
		return;
	int pid = (int)getpid();
	char line[512];
	for (int rank = 0; rank < 10; rank++) {
		int best = 0;
		for (int i = 1; i < SITES; i++)
			if (sites[i].nframes && sites[i].peak &&
			    (!best || sites[i].peak > sites[best].peak))
				best = i;
		if (!best)
			break;
		struct site *s = &sites[best];
		char h1[24], h2[24];
		int n = hp_snprintf(line, sizeof(line),
				    "hostpin[%d]:   site %d: %s pinned at "
				    "peak, %s now, %llu blocks\n",
				    pid, rank + 1, hp_human(s->peak, h1),
				    hp_human(s->now, h2),
				    (unsigned long long)s->blocks);
		hp_write_all(fd, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
		for (int k = 0; k < s->nframes && s->frames[k]; k++) {
			Dl_info di;
			const char *obj = "?", *sym = "?";
			uintptr_t off = (uintptr_t)s->frames[k];
			if (dladdr(s->frames[k], &di)) {
				obj = di.dli_fname ? di.dli_fname : "?";
				if (di.dli_sname) {
					sym = di.dli_sname;
					off -= (uintptr_t)di.dli_saddr;
				} else {
					off -= (uintptr_t)di.dli_fbase;
				}
			}
			n = hp_snprintf(line, sizeof(line),
					"hostpin[%d]:     #%d %s+0x%llx (%s)\n", pid,
					k, sym, (unsigned long long)off, obj);
			hp_write_all(fd, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
		}
		s->peak = 0; /* taken: the next rank finds the next */
	}
}
