/* A supervisor's signal pattern: allocate a large block (hostpin pins it and
 * starts its pre-fault helpers), then block SIGTERM, SIGUSR1 and SIGCHLD,
 * send them to the process and collect them synchronously.
 *   sigprog signalfd|sigtimedwait|sigwaitinfo
 * With HP_FAKE_CUDA set to the fake libcuda.so.1, the program first makes
 * the primary context of device 0 current, so that a device backend pins.
 * Exits 0 when every signal was collected by the program, as without
 * hostpin; a helper that takes one kills the process (SIGTERM, SIGUSR1) or
 * swallows it (SIGCHLD: sigwaitinfo never returns; the runner's timeout). */
#include <errno.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <time.h>

#include "cuda_up.h"

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "signalfd";
	tp_cuda_maybe();
	size_t n = (size_t)16 << 20;
	char *p = malloc(n);
	CHECK(p);
	tp_fill(p, n, 7);
	/* Under hostpin with a pinning backend the block must really be
	 * pinned, else no helper ran and the test proves nothing. */
	if (getenv("HP_EXPECT_PINNED"))
		CHECK(tp_flags(p) & (HOSTPIN_LOCKED | HOSTPIN_REGISTERED));

	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGCHLD);
	CHECK(sigprocmask(SIG_BLOCK, &set, NULL) == 0);
	int fd = -1;
	if (!strcmp(mode, "signalfd"))
		CHECK((fd = signalfd(-1, &set, SFD_CLOEXEC)) >= 0);
	const int sent[3] = {SIGUSR1, SIGCHLD, SIGTERM};
	for (int i = 0; i < 3; i++)
		CHECK(kill(getpid(), sent[i]) == 0);
	int got = 0; /* bit per signal collected */
	while (got != 7) {
		int sig;
		if (fd >= 0) {
			struct signalfd_siginfo si;
			CHECK(read(fd, &si, sizeof(si)) == sizeof(si));
			sig = (int)si.ssi_signo;
		} else if (!strcmp(mode, "sigtimedwait")) {
			/* A generous bound: the signals are already pending,
			 * so a timeout means one was taken elsewhere. */
			struct timespec ts = {30, 0};
			siginfo_t si;
			sig = sigtimedwait(&set, &si, &ts);
			if (sig < 0 && errno == EAGAIN) {
				fprintf(stderr, "sigtimedwait: signals lost "
						"(collected mask %d)\n", got);
				return 3;
			}
		} else {
			siginfo_t si;
			sig = sigwaitinfo(&set, &si);
		}
		CHECK(sig > 0);
		for (int i = 0; i < 3; i++)
			if (sig == sent[i])
				got |= 1 << i;
	}
	CHECK(tp_verify(p, n, 7));
	free(p);
	printf("sigprog %s: ok\n", mode);
	return 0;
}
