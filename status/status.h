/* What hostpin-status.c (the table, the options, main), ledger_read.c (the
 * ledger as read), report.c (the merged report) and prometheus.c
 * (--prometheus) share. */
#ifndef HP_STATUS_H
#define HP_STATUS_H
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>

#include "../preload/node/ledger.h"

/* A counter f of slot s; a size as people read it (ledger.h's units). */
#define C(s, f) atomic_load_explicit(&(s)->ctr.f, memory_order_relaxed)
#define human(b, buf) hp_human((b), (buf))

/* ledger_read.c: the ledger (HOSTPIN_LEDGER or the default), checked as the
 * library checks it, mapped (rw: writable, else read-only), or NULL (none,
 * or not hostpin's: said); exits 1 on another layout.  l if its file still
 * backs the whole mapping, else NULL (dropped with a message); forgetting
 * it so.  status_ledger_unusable: 1 with why, if --stats cannot use the
 * ledger (off, not makeable or writable). */
struct hp_ledger *status_open_ledger(int rw);
struct hp_ledger *status_whole(struct hp_ledger *l);
void status_drop_ledger(void);
int status_ledger_unusable(char *why, size_t cap);
/* A SIGBUS in the ledger's mapping (its file truncated by another process)
 * while status_bus_armed jumps to status_bus_jb, which the reader set;
 * any other gets the default action.  status_catch_sigbus installs it. */
extern sigjmp_buf status_bus_jb;
extern volatile sig_atomic_t status_bus_armed;
void status_catch_sigbus(void);

/* s with its control characters escaped, for a message (a static buffer). */
const char *status_esc(const char *s);
/* 1 if slot s counted anything worth a line; slot s's state (HP_LS_*),
 * read (rw: under its lock where the ledger is writable). */
int status_did_something(struct hp_lslot *s);
uint32_t status_state_of(struct hp_lslot *s, int rw);
/* The same with its whole state word in *wp. */
uint32_t status_state_word(struct hp_lslot *s, int rw, uint32_t *wp);
/* Slot s's command line, printable, into out. */
const char *status_printable(const struct hp_lslot *s, char *out, size_t cap);
/* report.c: the merged report of the processes of launcher job (the
 * launcher's --stats), to stderr; returns 0.  child, argv0: the command's
 * own process and the name it was started by (0, NULL: unknown), to say
 * when it exec'd onward (a pyenv shim). */
int status_report(struct hp_ledger *l, int job, int child, const char *argv0);
/* report.c: the launcher's first line after the job: how the command ended
 * (its exit status, or the signal), from its wait status ws (-1: it never
 * started), to stderr. */
void status_job_end(int ws, const char *cmd);

/* clean.c: hostpin status --clean: this user's ledgers that no process
 * maps removed (and their directory, empty); what it did on stdout. */
int status_clean(void);

/* prometheus.c: the node in the text exposition format to o (every slot
 * with all, else those that did something); the same into the file path,
 * replaced whole (0, or 1 with a message); 1 if /proc hides other users'
 * processes (hidepid), when the command label is left out
 * (status_prom_nocmd). */
void status_prometheus(FILE *o, struct hp_ledger *l, int all);
int status_prometheus_file(const char *path, struct hp_ledger *l, int all);
int status_proc_hidepid(void);
extern int status_prom_nocmd;
#endif
