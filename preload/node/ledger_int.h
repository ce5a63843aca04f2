/* What the ledger's files share (ledger.c: the file; ledger_join.c:
 * attaching and joining again; ledger_slots.c: claiming, filling and
 * reaping slots).  Not for anyone
 * else: the rest of hostpin goes through ledger.h. */
#ifndef HP_LEDGER_INT_H
#define HP_LEDGER_INT_H
#include <sys/types.h>

#include "ledger.h"

HP_HIDDEN extern struct hp_ledger *hp_led;     /* the mapping; NULL: none */
HP_HIDDEN extern struct hp_lslot *hp_led_self; /* our slot once attached */
HP_HIDDEN extern uint32_t hp_led_self_w;       /* our slot's state word once LIVE */
HP_HIDDEN extern uint64_t hp_led_myns;         /* our PID namespace; 0: unknown */
HP_HIDDEN extern int hp_led_proc_ok;           /* /proc is our namespace's */
/* The descriptor a join maps the ledger from and locks its slot through,
 * open only while joining (ledger.c); -1 otherwise. */
HP_HIDDEN extern int hp_led_lockfd;
HP_HIDDEN extern dev_t hp_led_lock_dev;
HP_HIDDEN extern ino_t hp_led_lock_ino;
/* What one slot may claim of a byte gauge (the machine's memory). */
HP_HIDDEN extern uint64_t hp_led_slot_max;

/* ledger.c: 1 if the mapping still is the whole file; drop the mapping;
 * a slot's byte-range lock (F_OFD_SETLK of type on slot i). */
HP_HIDDEN int hp_led_whole(void);
HP_HIDDEN void hp_led_drop(void);
/* A descriptor of the ledger file for one use (the joining one, or the
 * file opened again by its path and checked to be it), -1 if none; given
 * back with hp_led_fd_put. */
HP_HIDDEN int hp_led_fd_get(void);
HP_HIDDEN void hp_led_fd_put(int fd);
HP_HIDDEN void hp_led_joined(void);
HP_HIDDEN int hp_led_slot_lock(int fd, uint32_t i, short type);
/* ledger.c: find or make the file at the ledger's path (its rw
 * descriptor, path in path[cap]; quiet: say nothing above debug); map and
 * check it; use it (the descriptor moved high, what it is noted); retire
 * a mapping and descriptor no longer used; 1 if the file at the path is
 * no longer the one mapped. */
HP_HIDDEN int hp_led_find(char *path, size_t cap, int quiet);
HP_HIDDEN struct hp_ledger *hp_led_map(int fd, const char *path);
HP_HIDDEN void hp_led_use(struct hp_ledger *l, int fd, const char *path);
HP_HIDDEN void hp_led_retire(struct hp_ledger *l);
HP_HIDDEN int hp_led_moved(void);
/* ledger.c: this process's counters copied into slot s from now on
 * (hp.h, hp_ctr_pub); the target of slot s into *t. */
HP_HIDDEN void hp_led_publish_to(struct hp_lslot *s);
HP_HIDDEN void hp_led_target(struct hp_lslot *s, struct hp_ctr_target *t);
HP_HIDDEN const char *hp_led_path_in_use(void);

/* ledger_slots.c: is the process (pid, start, ns) gone; claim a slot (its
 * state word in *cw, *lk: its lock taken); fill the claimed slot s for
 * this process and make it LIVE. */
HP_HIDDEN int hp_led_gone(int pid, uint64_t start, uint64_t ns, int fast);
HP_HIDDEN struct hp_lslot *hp_led_claim(uint32_t *cw, int *lk);
/* ledger_slots.c: claim pre (this process's slot before an exec, DEAD)
 * if it can be had, else as hp_led_claim. */
HP_HIDDEN struct hp_lslot *hp_led_claim_pre(struct hp_lslot *pre,
					    uint32_t *cw, int *lk);
HP_HIDDEN void hp_led_fill(struct hp_lslot *s, uint32_t w, int lk,
			   const struct hp_counters *from, const char *cmd);
/* ledger_slots.c: 1 at most once a second per *last (the caller's own
 * clock: hp_ledger_check's, hp_ledger_reap's), the first caller once it
 * passed; 0 otherwise. */
HP_HIDDEN int hp_led_second_passed(_Atomic uint64_t *last);
#endif
