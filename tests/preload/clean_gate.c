/* For 175-first_hour: preloaded into `hostpin status --clean`, it holds
 * the clean at its first call that takes a ledger's name away (an unlink
 * or a rename of a name "ledger-..."), so that a case can start a process
 * that attaches to the ledger at that very moment, never by timing: it
 * writes a line to the fifo $CLEAN_GATE_OUT, reads the fifo
 * $CLEAN_GATE_IN until end of file, then makes the call. */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void gate(const char *name)
{
	static int once;
	const char *b = strrchr(name, '/');
	const char *o = getenv("CLEAN_GATE_OUT"), *in = getenv("CLEAN_GATE_IN");
	b = b ? b + 1 : name;
	if (once || !o || !in || strncmp(b, "ledger-", 7) != 0)
		return;
	once = 1;
	int fd = open(o, O_WRONLY);
	if (fd >= 0) {
		if (write(fd, "gate\n", 5) != 5)
			abort();
		close(fd);
	}
	char c;
	fd = open(in, O_RDONLY);
	while (fd >= 0 && read(fd, &c, 1) > 0)
		;
	if (fd >= 0)
		close(fd);
}

/* the next definition of name (libc's) */
static void *next(const char *name)
{
	return dlsym(RTLD_NEXT, name);
}

typedef int (*unlinkat_f)(int, const char *, int);
typedef int (*unlink_f)(const char *);
typedef int (*renameat_f)(int, const char *, int, const char *);
typedef int (*renameat2_f)(int, const char *, int, const char *, unsigned);
typedef int (*rename_f)(const char *, const char *);

int unlinkat(int dir, const char *name, int flags)
{
	gate(name);
	return ((unlinkat_f)next("unlinkat"))(dir, name, flags);
}

int unlink(const char *name)
{
	gate(name);
	return ((unlink_f)next("unlink"))(name);
}

int renameat(int od, const char *on, int nd, const char *nn)
{
	gate(on);
	return ((renameat_f)next("renameat"))(od, on, nd, nn);
}

int renameat2(int od, const char *on, int nd, const char *nn, unsigned fl)
{
	gate(on);
	return ((renameat2_f)next("renameat2"))(od, on, nd, nn, fl);
}

int rename(const char *on, const char *nn)
{
	gate(on);
	return ((rename_f)next("rename"))(on, nn);
}
