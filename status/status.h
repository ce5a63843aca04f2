/* What hostpin-status.c (the table, the merged report, main) and
 * prometheus.c (--prometheus) share. */
#ifndef HP_STATUS_H
#define HP_STATUS_H
#include <stdint.h>
#include <stdio.h>

#include "../preload/node/ledger.h"

/* A counter f of slot s; a size as people read it (ledger.h's units). */
#define C(s, f) atomic_load_explicit(&(s)->ctr.f, memory_order_relaxed)
#define human(b, buf) hp_human((b), (buf))

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
 * launcher's --stats), to stderr; returns 0. */
int status_report(struct hp_ledger *l, int job);

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
