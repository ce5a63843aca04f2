/* status/run.c: the launcher's --stats job runner. */
#ifndef HP_STATUS_RUN_H
#define HP_STATUS_RUN_H
/* Run argv with LD_PRELOAD=preload as a child, passing on SIGTERM, SIGINT,
 * SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 sent to this process; its exit
 * status, or 128 + the signal that ended it; *wstatus: its wait status
 * (waitpid's), or -1 if it never started; *child: its pid (0: none). */
int hp_run_job(const char *preload, char **argv, int *wstatus, int *child);
#endif
