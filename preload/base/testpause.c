/* Test hooks: pause points for the preload cases, inert unless
 * HOSTPIN_TEST_PAUSE names a directory (tests only; not a knob, never
 * reported).  A window that holds no driver call (no fake driver's gate
 * can hold a thread there) gets a named point, hp_test_pause("name"):
 * when DIR/name.arm exists, the first thread to reach the point removes
 * it, creates DIR/name.paused and sleeps until DIR/name.go exists.  The
 * program under test arms, watches and opens the points itself; nothing
 * is timed.  Raw system calls: no allocation, no hook of hostpin's. */
#include <fcntl.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "../hp.h"

static char dir[200]; /* empty: no pause anywhere */

void hp_test_pause_load(void)
{
	const char *d = secure_getenv("HOSTPIN_TEST_PAUSE");
	if (d && *d && hp_snprintf(dir, sizeof(dir), "%s", d) >= (int)sizeof(dir))
		dir[0] = '\0';
}

static int path(char *out, size_t cap, const char *name, const char *ext)
{
	int n = hp_snprintf(out, cap, "%s/%s.%s", dir, name, ext);
	return n > 0 && (size_t)n < cap;
}

void hp_test_pause(const char *name)
{
	char p[300];
	if (!dir[0] || !path(p, sizeof(p), name, "arm") ||
	    syscall(SYS_unlinkat, AT_FDCWD, p, 0) != 0)
		return; /* not armed, or another thread took it */
	if (!path(p, sizeof(p), name, "paused"))
		return;
	long fd = syscall(SYS_openat, AT_FDCWD, p,
			  O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	if (fd >= 0)
		syscall(SYS_close, fd);
	if (!path(p, sizeof(p), name, "go"))
		return;
	while (syscall(SYS_faccessat, AT_FDCWD, p, F_OK, 0) != 0) {
		struct timespec ts = {0, 1000000};
		nanosleep(&ts, NULL);
	}
}
