/* For 192-faults_ledger3: a process that pins two blocks, one after the
 * other, with the ledger changed in between.
 *   twoblocks MB1 MB2   allocate MB1 MiB (pinned at allocation under
 *                       HOSTPIN_PIN_AFTER=0), print "one", wait for a
 *                       line on stdin, allocate MB2 MiB, print
 *                       "locked KB" (VmLck of /proc/self/status: what the
 *                       kernel holds locked) and hostpin's own
 *                       "pinned BYTES" (hostpin_stats), then "two", wait
 *                       for EOF, free both, exit
 * The blocks' contents are checked before they are freed. */
#include <dlfcn.h>
#include <stdio.h>

#include "../../preload/hostpin.h"
#include "tp.h"

static long vmlck(void)
{
	char line[256];
	long kb = -1;
	FILE *f = fopen("/proc/self/status", "r");
	CHECK(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmLck: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

int main(int argc, char **argv)
{
	CHECK(argc == 3);
	size_t n1 = (size_t)atoi(argv[1]) << 20, n2 = (size_t)atoi(argv[2]) << 20;
	char *a = malloc(n1);
	CHECK(a);
	memset(a, 7, n1);
	puts("one");
	fflush(stdout);
	char line[64];
	CHECK(fgets(line, sizeof(line), stdin));
	char *b = malloc(n2);
	CHECK(b);
	memset(b, 8, n2);
	int (*st)(struct hostpin_stats *, size_t) =
	    (int (*)(struct hostpin_stats *, size_t))dlsym(RTLD_DEFAULT, "hostpin_stats");
	struct hostpin_stats s;
	memset(&s, 0, sizeof(s));
	if (st)
		st(&s, sizeof(s));
	printf("locked %ld\npinned %llu\ntwo\n", vmlck(),
	       (unsigned long long)s.pinned_bytes_now);
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin))
		;
	CHECK(a[0] == 7 && a[n1 - 1] == 7 && b[0] == 8 && b[n2 - 1] == 8);
	free(a);
	free(b);
	return 0;
}
