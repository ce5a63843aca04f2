/* The launcher's --stats (scripts/hostpin): run the job as a child, pass on
 * the signals a supervisor sends to the one pid it started, and stay to
 * print the merged report.  In C, not in the launcher's shell: a shell runs
 * a trap only after its foreground command ends, and starts a background
 * command with SIGINT and SIGQUIT ignored, for good. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "run.h"

/* The job's pid while it runs; 0 once it has ended (never a pid the
 * kernel may have given to another process). */
static volatile sig_atomic_t job;

/* docker stop and Kubernetes (the container's pid 1), Slurm (scancel, a
 * batch script's --signal=B:...), systemd and a shell's `kill %1` signal
 * the launcher only; a terminal signals the whole foreground group. */
static const int passed[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};
#define NPASSED (int)(sizeof(passed) / sizeof(passed[0]))

static void pass_on(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	int e = errno;
	pid_t p = (pid_t)job;
	/* From the terminal (Ctrl-C, a hangup): the kernel signalled the
	 * foreground process group, and the job with it unless it left it. */
	if (p > 0 && !(si->si_code == SI_KERNEL && getpgid(p) == getpgrp()))
		kill(p, sig);
	errno = e;
}

int hp_run_job(const char *preload, char **argv, int *wstatus, int *child)
{
	*wstatus = -1;
	*child = 0;
	sigset_t all, old;
	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, &old);
	struct sigaction sa, was[NPASSED];
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = pass_on;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigfillset(&sa.sa_mask);
	for (int i = 0; i < NPASSED; i++) {
		sigaction(passed[i], NULL, &was[i]);
		/* ignored when the launcher started (nohup, a background job
		 * of a script): the job inherits that, as before */
		if (was[i].sa_handler != SIG_IGN)
			sigaction(passed[i], &sa, NULL);
	}
	pid_t pid = fork();
	if (pid == 0) {
		/* no signal may be lost between here and exec */
		for (int i = 0; i < NPASSED; i++)
			sigaction(passed[i], &was[i], NULL);
		sigprocmask(SIG_SETMASK, &old, NULL);
		if (setenv("LD_PRELOAD", preload, 1) == 0)
			execvp(argv[0], argv);
		int e = errno;
		fprintf(stderr, "hostpin: %s: %s\n", argv[0], strerror(e));
		_exit(e == ENOENT ? 127 : 126);
	}
	if (pid < 0) {
		int e = errno;
		sigprocmask(SIG_SETMASK, &old, NULL);
		fprintf(stderr, "hostpin: cannot start %s: %s\n", argv[0],
			strerror(e));
		return 126;
	}
	job = pid;
	*child = pid;
	sigprocmask(SIG_SETMASK, &old, NULL);
	for (;;) {
		/* WNOWAIT: the job stays a zombie, its pid unusable by another
		 * process, until job is cleared with signals blocked */
		siginfo_t si;
		memset(&si, 0, sizeof(si));
		if (waitid(P_ALL, 0, &si, WEXITED | WNOWAIT) < 0) {
			if (errno == EINTR)
				continue;
			return 127; /* ECHILD: cannot happen */
		}
		if (si.si_pid != pid) {
			/* an orphan of the job's, reparented to the launcher
			 * when it is a container's pid 1: reap it */
			waitpid(si.si_pid, NULL, 0);
			continue;
		}
		sigprocmask(SIG_BLOCK, &all, NULL);
		job = 0;
		sigprocmask(SIG_SETMASK, &old, NULL);
		int st;
		while (waitpid(pid, &st, 0) < 0)
			if (errno != EINTR)
				return 127;
		*wstatus = st;
		return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	}
}
