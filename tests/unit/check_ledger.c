/* Check suite for the node-wide ledger (preload/node/ledger.c), driven through
 * its unit-test handles: a reaper's verdict and its compare-and-swap with
 * a reclaim of the slot in between (the generation in the state word), and
 * liveness by the slot's lock whatever the PID namespace. */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../preload/node/ledger.h"
#include "unit.h"

void hp_ledger_test_use(struct hp_ledger *l, int fd);
int hp_ledger_test_mark_dead(struct hp_lslot *s, uint32_t w);
struct hp_lslot *hp_ledger_test_claim(void);
extern void (*hp_ledger_test_between)(struct hp_lslot *s);

static char path[64];

/* A ledger file of ours, mapped, with its descriptor in *fd. */
static struct hp_ledger *make(int *fd)
{
	strcpy(path, "/tmp/hostpin-unit-ledger-XXXXXX");
	*fd = mkstemp(path);
	ck_assert_int_ge(*fd, 0);
	unlink(path);
	ck_assert_int_eq(ftruncate(*fd, sizeof(struct hp_ledger)), 0);
	struct hp_ledger *l = mmap(NULL, sizeof(*l), PROT_READ | PROT_WRITE,
				   MAP_SHARED, *fd, 0);
	ck_assert_ptr_ne(l, MAP_FAILED);
	return l;
}

/* A pid that was a process's and is no more. */
static int dead_pid(void)
{
	pid_t p = fork();
	if (p == 0)
		_exit(0);
	ck_assert_int_gt(p, 0);
	ck_assert_int_eq(waitpid(p, NULL, 0), p);
	return (int)p;
}

/* Another process reclaims the slot: it is dead, so a claim takes it. */
static struct hp_lslot *reclaimed;
static void reclaim(struct hp_lslot *s)
{
	hp_ledger_test_between = NULL; /* the claim's own reaping step */
	reclaimed = hp_ledger_test_claim();
	ck_assert_ptr_eq(reclaimed, s);
}

/* Injected: a reaper reads a LIVE slot (generation 5) of a dead process
 * (its lock free, its pid gone) and judges it gone; before its
 * compare-and-swap, the slot is reclaimed (DEAD, then CLAIM and LIVE for a
 * live process: generation 6).  Must hold: the reaper's step does nothing,
 * the slot stays LIVE for its new process.  Without the generation (a
 * claim that kept it) the reaper would mark the new process's slot
 * DEAD. */
START_TEST(reaper_cannot_act_on_a_slot_reclaimed_meanwhile)
{
	int fd;
	struct hp_ledger *l = make(&fd);
	hp_ledger_test_use(l, fd);
	int myproc;
	struct hp_lslot *s = &l->slot[0];
	s->pid = dead_pid();
	s->start = HP_START_UNKNOWN;
	s->pidns = hp_pidns(&myproc);
	s->locked = 1;
	atomic_store(&s->state, HP_LS_MK(HP_LS_LIVE, 5));
	atomic_store(&l->hiwater, 1);
	uint32_t w = atomic_load(&s->state);
	reclaimed = NULL;
	hp_ledger_test_between = reclaim;
	int marked = hp_ledger_test_mark_dead(s, w);
	hp_ledger_test_between = NULL;
	ck_assert_ptr_eq(reclaimed, s);
	ck_assert_int_eq(s->pid, getpid());
	ck_assert_int_eq(marked, 0);
	uint32_t now = atomic_load(&s->state);
	ck_assert_uint_eq(HP_LS_ST(now), HP_LS_LIVE);
	ck_assert_uint_eq(HP_LS_GEN(now), 6);
	hp_ledger_test_use(NULL, -1);
	munmap(l, sizeof(*l));
	close(fd);
}
END_TEST

/* Injected: a LIVE slot of another PID namespace (an inode not ours),
 * whose lock is held by a description of the file other than the
 * reaper's, then released.  Must hold: live while locked, dead once the
 * lock is free (the pid says nothing across namespaces). */
START_TEST(slot_lock_decides_liveness_across_namespaces)
{
	int fd;
	struct hp_ledger *l = make(&fd);
	hp_ledger_test_use(l, fd);
	char p[48];
	snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
	int other = open(p, O_RDWR);
	ck_assert_int_ge(other, 0);
	struct hp_lslot *s = &l->slot[3];
	s->pid = 1;
	s->start = 12345;
	s->pidns = 1; /* no namespace of ours */
	s->locked = 1;
	atomic_store(&s->state, HP_LS_MK(HP_LS_LIVE, 1));
	atomic_store(&l->hiwater, 4);
	struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET,
			   .l_start = HP_SLOT_LOCK_OFF(3), .l_len = 1};
	ck_assert_int_eq(fcntl(other, F_OFD_SETLK, &fl), 0);
	ck_assert_int_eq(hp_slot_locked(fd, 3), 1);
	ck_assert_int_eq(hp_ledger_test_mark_dead(s, atomic_load(&s->state)), 0);
	fl.l_type = F_UNLCK;
	ck_assert_int_eq(fcntl(other, F_OFD_SETLK, &fl), 0);
	ck_assert_int_eq(hp_slot_locked(fd, 3), 0);
	ck_assert_int_eq(hp_ledger_test_mark_dead(s, atomic_load(&s->state)), 1);
	ck_assert_uint_eq(HP_LS_ST(atomic_load(&s->state)), HP_LS_DEAD);
	/* without a lock to go by, a slot of another namespace stays live */
	s->locked = 0;
	atomic_store(&s->state, HP_LS_MK(HP_LS_LIVE, 2));
	ck_assert_int_eq(hp_ledger_test_mark_dead(s, atomic_load(&s->state)), 0);
	close(other);
	hp_ledger_test_use(NULL, -1);
	munmap(l, sizeof(*l));
	close(fd);
}
END_TEST

/* An idle DEAD slot of a job whose launcher is this process (a live
 * one), its process gone and never locked. */
static void idle_slot(struct hp_lslot *s, int ppid, uint32_t execd)
{
	int myproc;
	memset((char *)s + sizeof(s->state), 0, sizeof(*s) - sizeof(s->state));
	s->pid = dead_pid();
	s->start = HP_START_UNKNOWN;
	s->pidns = hp_pidns(&myproc);
	s->job_pid = (int32_t)getpid();
	s->job_start = hp_proc_start(0);
	s->ppid = ppid;
	s->execd = execd;
	atomic_store(&s->state, HP_LS_MK(HP_LS_DEAD, 1));
}

/* Injected: the DEAD slots of a running launcher's job (this process's)
 * whose processes did nothing: slot 0, the command's own process (the
 * launcher's child) as it ended; slot 1, its image before an exec
 * (execd); slot 2, another process of the job; slot 3 never used.  Must
 * hold: claims take slots 1, 2, then 3, and leave slot 0 for the
 * launcher's report (it names what the command ended as: a busy node's
 * other processes took it before, and --stats said nothing of a shim's
 * exec); once the launcher is gone, slot 0 is taken too. */
START_TEST(claims_keep_the_commands_idle_slot_for_its_launcher)
{
	int fd;
	struct hp_ledger *l = make(&fd);
	hp_ledger_test_use(l, fd);
	idle_slot(&l->slot[0], (int)getpid(), 0);
	idle_slot(&l->slot[1], (int)getpid(), 1);
	idle_slot(&l->slot[2], 1, 0);
	atomic_store(&l->hiwater, 3);
	for (int k = 1; k <= 3; k++) {
		struct hp_lslot *c = hp_ledger_test_claim();
		ck_assert_ptr_eq(c, &l->slot[k]);
		/* live by pid: its lock, taken through the description
		 * the claims test it with, would say free */
		c->locked = 0;
	}
	ck_assert_uint_eq(HP_LS_ST(atomic_load(&l->slot[0].state)), HP_LS_DEAD);
	/* its launcher gone: no report will read it */
	l->slot[0].job_pid = dead_pid();
	ck_assert_ptr_eq(hp_ledger_test_claim(), &l->slot[0]);
	hp_ledger_test_use(NULL, -1);
	munmap(l, sizeof(*l));
	close(fd);
}
END_TEST

Suite *ledger_suite(void)
{
	Suite *s = suite_create("ledger");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, reaper_cannot_act_on_a_slot_reclaimed_meanwhile);
	tcase_add_test(tc, slot_lock_decides_liveness_across_namespaces);
	tcase_add_test(tc, claims_keep_the_commands_idle_slot_for_its_launcher);
	suite_add_tcase(s, tc);
	return s;
}
