/* The registration thread and its queue (split from register.c): the
 * blocks hp_register_later queued, in order, the thread that takes them
 * one at a time (started at the first: invariant 9) and hands each to
 * hp_register_run (register.c: the job, its prefix, its cancels), its exit
 * (the registration in progress cancelled after its piece in flight, no
 * other begun) and a forked child's reset.  What the design is, see
 * register.c's header. */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "../record.h"
#include "../copy/stage.h"

#define QUEUE 256

static struct {
	pthread_mutex_t mu;
	pthread_cond_t cv; /* work queued, or the thread went idle */
	int on; /* the thread runs */
	_Atomic int stop; /* exit (or a forked child): begin nothing more */
	_Atomic int exiting; /* the exit: cancel what is left */
	int busy; /* a registration in progress */
	int head, n;
	struct job {
		hp_rec_t *r;
		uintptr_t base;
		size_t len;
	} q[QUEUE];
} bg = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

/* The registration thread itself (it never waits for its own block). */
HP_TLS int hp_registrar;

static void pause_ms(long ms)
{
	struct timespec ts = {0, ms * 1000000L};
	nanosleep(&ts, NULL);
}

static void *registrar_main(void *arg)
{
	(void)arg;
	hp_in_hook = 1; /* nothing this thread does is the program's */
	hp_registrar = 1;
	pthread_mutex_lock(&bg.mu);
	for (;;) {
		if (bg.stop || bg.n == 0) {
			bg.busy = 0;
			pthread_cond_broadcast(&bg.cv);
			pthread_cond_wait(&bg.cv, &bg.mu);
			continue;
		}
		struct job j = bg.q[bg.head];
		bg.head = (bg.head + 1) % QUEUE;
		bg.n--;
		bg.busy = 1;
		pthread_mutex_unlock(&bg.mu);
		/* A capture that prohibits other threads' registrations:
		 * sleep until it ends (the block is only staged meanwhile). */
		hp_register_capture_sleep();
		/* held by another thread (a free, a purge, a copy's claim):
		 * tried again once it lets go */
		while (hp_register_run(j.r, j.base, j.len) && !bg.stop)
			pause_ms(1);
		pthread_mutex_lock(&bg.mu);
	}
	return NULL;
}

/* Registered with atexit when the thread starts, so that it runs before
 * any library's destructor (the driver's): cancel the registration in
 * progress after its piece in flight (the pieces made are undone, so that
 * the exit waits for one piece, not the block) and begin no other; queued
 * blocks stay unregistered. */
static void registrar_exit(void)
{
	if (hp_in_child)
		return;
	pthread_mutex_lock(&bg.mu);
	bg.stop = 1;
	bg.exiting = 1;
	hp_register_wake();
	pthread_cond_broadcast(&bg.cv);
	while (bg.on && bg.busy)
		pthread_cond_wait(&bg.cv, &bg.mu);
	pthread_mutex_unlock(&bg.mu);
}

/* Under bg.mu: start the thread once. */
static int registrar_start(void)
{
	if (bg.on)
		return 1;
	static int failed;
	if (failed)
		return 0;
	if (hp_thread_start(registrar_main, NULL, 0) == 0) {
		bg.on = 1;
		static int exit_hook;
		if (!exit_hook)
			exit_hook = atexit(registrar_exit) == 0;
	} else {
		failed = 1;
		hp_log(HP_LOG_WARN, "cannot start the registration thread: "
		       "blocks are registered inside the copy that earns it");
	}
	return bg.on;
}

int hp_register_later(hp_rec_t *r, const hp_snap_t *s)
{
	if (!hp_opt[HP_OPT_REGISTER_BACKGROUND] || hp_in_child ||
	    s->len < hp_opt[HP_OPT_STAGE_MIN] || !hp_stage_on())
		return 0;
	pthread_mutex_lock(&bg.mu);
	int ok = !bg.stop && bg.n < QUEUE && registrar_start();
	if (ok) {
		bg.q[(bg.head + bg.n) % QUEUE] =
		    (struct job){.r = r, .base = s->base, .len = s->len};
		bg.n++;
		hp_set_rflags(r, hp_rflags(r) | HP_F_QUEUED);
		pthread_cond_broadcast(&bg.cv);
	}
	pthread_mutex_unlock(&bg.mu);
	return ok;
}

int hp_register_exiting(void) { return bg.exiting; }

int hp_register_stopped(void) { return bg.stop; }

void hp_register_queue_fork_child(void)
{
	/* the thread is the parent's; its lock may have been held */
	pthread_mutex_init(&bg.mu, NULL);
	pthread_cond_init(&bg.cv, NULL);
	bg.on = bg.busy = 0;
	bg.head = bg.n = 0;
	bg.stop = 1; /* a child registers nothing in the background */
}
