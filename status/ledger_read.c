/* hostpin-status, the ledger as it reads it (ledger.h): finding and
 * opening it as the library checks it, whether its file is still whole, the
 * SIGBUS guard while it is read, each slot's state (LIVE slots whose process
 * is gone become DEAD), a slot's text made printable, and whether --stats
 * can use it at all.  The table, the options and main: hostpin-status.c. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "../preload/base/outfile.h"
#include "../preload/node/ledger.h"
#include "status.h"

/* ledger.h's helper formats with the library's hp_snprintf. */
int hp_snprintf(char *buf, size_t cap, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, cap, fmt, ap);
	va_end(ap);
	return n;
}

static uint64_t myns; /* our PID namespace; 0: unknown */
static int proc_ok;   /* /proc is our namespace's */
/* our description of the ledger, kept to test the slots' locks (ours
 * holds none, so every process's lock shows); -1: none */
static int ledfd = -1;
static struct hp_ledger *ledmap;
/* where it was found: a watcher moves to the file now there (removed by
 * an epilog, replaced) */
static char ledpath[340];

/* s with control characters escaped (\n, \xHH), into a static buffer of
 * two (for a message's user-given names and paths). */
const char *status_esc(const char *s)
{
	static char buf[2][1024];
	static int k;
	char *o = buf[k ^= 1];
	size_t at = 0;
	for (; *s && at + 5 < sizeof(buf[0]); s++) {
		unsigned char c = (unsigned char)*s;
		if (c < 0x20 || c == 0x7f)
			at += (size_t)snprintf(o + at, 5, c == '\n' ? "\\n"
						: c == '\t' ? "\\t" : "\\x%02x", c);
		else
			o[at++] = (char)c;
	}
	o[at] = '\0';
	return o;
}

/* The ledger's file truncated by another process while we read it: a
 * SIGBUS in the mapping jumps back to the loop (bus_jb, armed), which
 * drops the ledger and opens it again next time.  Any other SIGBUS gets
 * the default action. */
sigjmp_buf status_bus_jb;
volatile sig_atomic_t status_bus_armed;
static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	char *a = si->si_addr, *m = (char *)ledmap;
	if (status_bus_armed && si->si_code > 0 && m && a >= m &&
	    a < m + sizeof(struct hp_ledger))
		siglongjmp(status_bus_jb, 1);
	signal(sig, SIG_DFL);
	if (si->si_code <= 0)
		raise(sig);
}

void status_catch_sigbus(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sigbus;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, NULL);
}

/* Forget the ledger (its file is not whole any more); status_drop_ledger
 * with a message. */
static void drop_quiet(void)
{
	if (ledmap)
		munmap(ledmap, sizeof(struct hp_ledger));
	if (ledfd >= 0)
		close(ledfd);
	ledmap = NULL;
	ledfd = -1;
}
void status_drop_ledger(void)
{
	drop_quiet();
	fprintf(stderr, "hostpin status: the ledger was truncated or replaced "
		"by another process while it was read; not read\n");
}

/* l, if its file still backs the whole mapping and is the file at the
 * ledger's path; else NULL (dropped: a file removed or replaced quietly,
 * the caller opens the one at the path). */
struct hp_ledger *status_whole(struct hp_ledger *l)
{
	struct stat st, at;
	if (!l || ledfd < 0)
		return l;
	if (fstat(ledfd, &st) == 0 &&
	    (st.st_nlink == 0 || stat(ledpath, &at) != 0 ||
	     at.st_dev != st.st_dev || at.st_ino != st.st_ino)) {
		drop_quiet();
		return NULL;
	}
	if (fstat(ledfd, &st) == 0 &&
	    st.st_size == (off_t)sizeof(struct hp_ledger) &&
	    (uint64_t)st.st_blocks * 512 >= sizeof(struct hp_ledger))
		return l;
	status_drop_ledger();
	return NULL;
}

/* The ledger, checked as the library checks it (ledger.h): the default
 * one in a directory of ours, or HOSTPIN_LEDGER; a file of ours, mode
 * 0600, whole, with hostpin's header.  Nothing is ever created. */
struct hp_ledger *status_open_ledger(int rw)
{
	char path[340], dir[300], leaf[256];
	const char *p = getenv("HOSTPIN_LEDGER");
	if (p && strcmp(p, "off") == 0)
		return NULL;
	myns = hp_pidns(&proc_ok);
	int dirfd = AT_FDCWD;
	const char *name = p;
	if (!p || !*p) {
		long taken;
		dirfd = hp_ledger_dir(dir, sizeof(dir), 0, &taken);
		if (dirfd < 0)
			return NULL; /* no hostpin process ever ran */
		snprintf(path, sizeof(path), "%s/" HP_LEDGER_NAME_FMT, dir,
			 HP_LEDGER_VERSION, sizeof(struct hp_lslot));
		name = path + strlen(dir) + 1;
	} else {
		/* walked as the library walks it (outfile.h) */
		char why[300];
		snprintf(path, sizeof(path), "%s", p);
		dirfd = hp_out_walk(p, why, sizeof(why), leaf, sizeof(leaf));
		if (dirfd < 0) {
			if (why[0])
				fprintf(stderr, "hostpin status: HOSTPIN_LEDGER="
					"%s: %s; not read\n", status_esc(path),
					status_esc(why));
			return NULL;
		}
		name = leaf;
	}
	int fd = hp_ledger_open_checked(dirfd, name, rw);
	if (fd < 0 && rw && errno == EACCES)
		fd = hp_ledger_open_checked(dirfd, name, 0), rw = 0;
	int err = errno;
	if (dirfd != AT_FDCWD)
		close(dirfd);
	if (fd < 0) {
		if (err == EEXIST)
			fprintf(stderr, "hostpin status: %s is not a ledger of "
				"this user's made by hostpin (owner, mode 0600, "
				"size); not read\n", status_esc(path));
		return NULL; /* no hostpin process ever ran: nothing to show */
	}
	void *m = mmap(NULL, sizeof(struct hp_ledger),
		       PROT_READ | (rw ? PROT_WRITE : 0), MAP_SHARED, fd, 0);
	if (m == MAP_FAILED) {
		close(fd);
		return NULL;
	}
	if (ledfd >= 0)
		close(ledfd);
	ledfd = fd;
	ledmap = m;
	snprintf(ledpath, sizeof(ledpath), "%s", path);
	struct hp_ledger *l = m;
	if (atomic_load(&l->layout) != HP_LEDGER_LAYOUT ||
	    l->version != HP_LEDGER_VERSION ||
	    l->size != sizeof(struct hp_ledger)) {
		fprintf(stderr, "hostpin status: %s has another layout (another "
			"hostpin version)\n", status_esc(path));
		exit(1);
	}
	return l;
}

/* The command line of a slot, printable: every byte outside printable
 * ASCII (escape sequences, control characters, the rest) as \xHH, and a
 * backslash as \\, so nothing in the file reaches a terminal raw. */
const char *status_printable(const struct hp_lslot *s, char *out, size_t cap)
{
	size_t o = 0;
	for (size_t i = 0; i < HP_LEDGER_CMD && s->cmd[i] && o + 5 < cap; i++) {
		unsigned char c = (unsigned char)s->cmd[i];
		if (c == '\\')
			out[o++] = '\\', out[o++] = '\\';
		else if (c >= 0x20 && c < 0x7f)
			out[o++] = (char)c;
		else
			o += (size_t)snprintf(out + o, cap - o, "\\x%02x", c);
	}
	out[o] = '\0';
	return out;
}

int status_did_something(struct hp_lslot *s)
{
	return C(s, pin_calls) || C(s, copies_seen) || C(s, bytes_peak) ||
	       C(s, fail_count) || C(s, over_cap) || C(s, mmap_ranges_now);
}

/* LIVE slots whose process is surely gone become DEAD (when we may
 * write): its lock is free, whatever its PID namespace; without a lock to
 * go by, a slot of another PID namespace, or whose process cannot be
 * looked at, stays LIVE (ledger.h).  The state, and the state word in
 * *wp for a later change (its generation: a slot reclaimed since is left
 * be). */
uint32_t status_state_word(struct hp_lslot *s, int rw, uint32_t *wp)
{
	uint32_t w = atomic_load_explicit(&s->state, memory_order_acquire);
	int lk = -1;
	if (HP_LS_ST(w) == HP_LS_LIVE && s->locked && ledmap &&
	    s >= ledmap->slot && s < ledmap->slot + HP_LEDGER_SLOTS)
		lk = hp_slot_locked(ledfd, (uint32_t)(s - ledmap->slot));
	if (HP_LS_ST(w) == HP_LS_LIVE &&
	    hp_slot_gone(s->pid, s->start, s->pidns, myns, !proc_ok, lk)) {
		uint32_t d = HP_LS_TO(w, HP_LS_DEAD);
		if (rw && !atomic_compare_exchange_strong(&s->state, &w, d))
			return *wp = w, HP_LS_ST(w);
		w = d;
	}
	*wp = w;
	return HP_LS_ST(w);
}
uint32_t status_state_of(struct hp_lslot *s, int rw)
{
	uint32_t w;
	return status_state_word(s, rw, &w);
}

/* --stats needs the ledger: with HOSTPIN_LEDGER=off, or a ledger that
 * cannot be made or written, say so and ask every process for its own
 * report (HOSTPIN_STATS=1) instead.  0 if the ledger is usable. */
int status_ledger_unusable(char *why, size_t cap)
{
	const char *p = getenv("HOSTPIN_LEDGER");
	if (p && !strcmp(p, "off")) {
		snprintf(why, cap, "HOSTPIN_LEDGER=off");
		return 1;
	}
	char path[340], dir[300], leaf[256];
	int dirfd = AT_FDCWD;
	const char *name = p;
	if (!p || !*p) {
		long taken;
		/* made as the library would make it (mode 0700, the
		 * user's): nothing else is created */
		dirfd = hp_ledger_dir(dir, sizeof(dir), 1, &taken);
		if (dirfd < 0) {
			snprintf(why, cap, "no directory of this user's can be "
				 "made in /dev/shm for the ledger (%s)",
				 strerror(errno));
			return 1;
		}
		snprintf(path, sizeof(path), "%s/" HP_LEDGER_NAME_FMT, dir,
			 HP_LEDGER_VERSION, sizeof(struct hp_lslot));
		name = path + strlen(dir) + 1;
	} else {
		/* walked as the library walks it (outfile.h) */
		char wy[300];
		snprintf(path, sizeof(path), "%s", p);
		dirfd = hp_out_walk(p, wy, sizeof(wy), leaf, sizeof(leaf));
		if (dirfd < 0 && wy[0]) {
			snprintf(why, cap, "HOSTPIN_LEDGER=%s: %s",
				 status_esc(path), wy);
			return 1;
		}
		name = leaf;
	}
	/* a directory on the way missing: said below as the file's */
	int fd = dirfd < 0 && dirfd != AT_FDCWD
		     ? -1
		     : hp_ledger_open_checked(dirfd, name, 1),
	    err = errno;
	if (fd >= 0) {
		close(fd);
	} else if (err == ENOENT && (dirfd >= 0 || dirfd == AT_FDCWD)) {
		/* not made yet: can a file be made beside it? */
		char tmp[400];
		/* an unpredictable name, another if it is taken: a squat
		 * costs nothing */
		for (int tries = 0; tries < 8; tries++) {
			unsigned long long r = 0;
			if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r))
				r = (unsigned long long)time(NULL) * 0x9e3779b97f4a7c15ull + (unsigned)tries;
			snprintf(tmp, sizeof(tmp), ".hostpin-probe-%d-%llx",
				 (int)getpid(), r);
			fd = openat(dirfd, tmp, O_RDWR | O_CREAT | O_EXCL |
						    O_NOFOLLOW | O_CLOEXEC, 0600);
			err = errno;
			if (fd >= 0 || err != EEXIST)
				break;
		}
		if (fd >= 0) {
			/* room for a whole ledger, as the library reserves it:
			 * a /dev/shm too small (a container's 64 MiB, filled)
			 * means no ledger, and so no merged report */
			if (syscall(SYS_fallocate, fd, 0, (off_t)0,
				    (off_t)sizeof(struct hp_ledger))) {
				err = errno;
				close(fd);
				fd = -1;
			} else
				close(fd);
			unlinkat(dirfd, tmp, 0);
		}
	}
	if (dirfd >= 0)
		close(dirfd);
	if (fd >= 0)
		return 0;
	if (err == EEXIST)
		snprintf(why, cap, "%s is not a ledger of this user's made by "
			 "hostpin", status_esc(path));
	else if (err == ENOSPC)
		snprintf(why, cap, "the ledger %s cannot be made: no room for "
			 "its %zu KiB (%s; a /dev/shm too small or full)",
			 status_esc(path), sizeof(struct hp_ledger) >> 10,
			 strerror(err));
	else
		snprintf(why, cap, "the ledger %s cannot be %s (%s)", status_esc(path),
			 err == ENOENT || err == EROFS || err == EACCES
			     ? "made or written" : "opened",
			 strerror(err));
	return 1;
}
