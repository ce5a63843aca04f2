/* For 170-faults_ledger: a process that pins a block and holds it.
 *   ledger_holder MB           allocate MB MiB (pinned at allocation under
 *                              HOSTPIN_PIN_AFTER=0), print "held", wait
 *                              until stdin reaches EOF, free, exit
 *   ledger_holder MB fork      as the first, but after the allocation
 *                              fork a child that prints "child" and waits
 *                              for EOF as well (the parent waits for it)
 *   ledger_holder MB nofile    first use up every descriptor (EMFILE: no
 *                              /proc file can be opened), then allocate MB
 *                              MiB and exit at once
 * The block's contents are checked before it is freed. */
#include <errno.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tp.h"

int main(int argc, char **argv)
{
	CHECK(argc >= 2);
	size_t n = (size_t)atoi(argv[1]) << 20;
	int nofile = argc > 2 && !strcmp(argv[2], "nofile");
	if (nofile) {
		int k = 0;
		while (open("/dev/null", O_RDONLY) >= 0)
			k++;
		CHECK(errno == EMFILE && k > 0);
	}
	char *b = malloc(n);
	CHECK(b);
	memset(b, 7, n);
	if (nofile) {
		CHECK(b[n - 1] == 7);
		free(b);
		return 0;
	}
	pid_t kid = -1;
	if (argc > 2 && !strcmp(argv[2], "fork")) {
		fflush(stdout);
		kid = fork();
		CHECK(kid >= 0);
	}
	puts(kid == 0 ? "child" : "held");
	fflush(stdout);
	char c;
	while (read(0, &c, 1) > 0)
		;
	CHECK(b[0] == 7 && b[n - 1] == 7);
	if (kid > 0)
		CHECK(waitpid(kid, NULL, 0) == kid);
	free(b);
	return 0;
}
