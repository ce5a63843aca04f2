/* Initialisation: staged and lazy (the first allocation may come before our
 * constructor), options to backend choice, fork handlers, the at-exit
 * report. */
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "../copy/stage.h"
#include "../node/ledger.h"

/* The settings list says how many copy threads staging starts here (it
 * measures the memcpy rate: only when the list is printed). */
static void stage_note(void)
{
	if (hp_stage_on())
		hp_opt_note(HP_OPT_STAGE_THREADS, hp_pool_note());
}

/* HOSTPIN_SHOW=1 (the launcher's --show): print the settings this process
 * got to stdout, then end it (status 0) before it does anything else. */
static void show_and_exit(const char *state)
{
	char line[PATH_MAX + 256], h[24];
	int n = hp_snprintf(line, sizeof(line),
			    "hostpin %s: %s; memory base %s (%s); CPUs %u\n",
			    HP_VERSION, state, hp_human(hp_mem_base(), h),
			    hp_mem_base_why(), hp_cpu_limit());
	hp_write_all(1, line, (size_t)n < sizeof(line) ? (size_t)n
						       : sizeof(line) - 1);
	stage_note();
	hp_options_show(1);
	_exit(0);
}

/* ---- fork ---- */
static void fork_prepare(void)
{
	hp_cache_lock();
	hp_registry_lock(&hp_reg);
}
static void fork_parent(void)
{
	hp_registry_unlock(&hp_reg);
	hp_cache_unlock();
}
static void fork_child(void)
{
	hp_registry_unlock(&hp_reg);
	hp_cache_unlock();
	hp_cache_fork_child();
	hp_cuda_fence_fork_child();
	hp_in_child = 1;
	hp_ledger_fork_child();
	HP_GUARDED(hp_backend->fork_child(); hp_pin_fork_child();
		   hp_register_fork_child());
}

void hp_init_slow(void)
{
	if (hp_in_hook)
		return; /* recursion from inside init: caller uses the arena */
	int expect = HP_ST_UNINIT;
	/* acquire: pairs with the release that ends init (on failure, the
	 * waiter then reads what init wrote) */
	if (!atomic_compare_exchange_strong_explicit(&hp_state, &expect, HP_ST_BUSY,
						     memory_order_acquire,
						     memory_order_acquire)) {
		/* Another thread is initialising: wait for it. */
		while (atomic_load_explicit(&hp_state, memory_order_acquire) ==
		       HP_ST_BUSY)
			sched_yield();
		return;
	}
	hp_in_hook++;
	/* The bootstrap arena counts as inside the registry's bounds, so that
	 * free()'s one bounds test also sends arena pointers to its slow path,
	 * before the first of them exists. */
	hp_registry_reserve_bounds(&hp_reg, (uintptr_t)hp_arena,
				   (uintptr_t)hp_arena + HP_ARENA_SIZE);
	hp_resolve_next();
	int bad = hp_options_load(); /* also sets the level, opens the log */
	if (hp_opt[HP_OPT_STATS] && hp_log_fd == 2) {
		/* Programs such as coreutils close stderr in an atexit
		 * handler, before our report: keep a private duplicate, high
		 * and close-on-exec, out of the program's way. */
		int fd = fcntl(2, F_DUPFD_CLOEXEC, 1000);
		if (fd >= 0)
			hp_log_use(fd);
	}
	int st = HP_ST_READY;
	const char *show = secure_getenv("HOSTPIN_SHOW");
	show = show && strcmp(show, "1") == 0 ? show : NULL;
	if (bad && hp_opt[HP_OPT_STRICT]) {
		/* Not abort(): a typo is no crash (no core, no "Aborted").
		 * Shown whatever HOSTPIN_LOG says; the program never ran. */
		hp_log_level = HP_LOG_ERROR;
		hp_log(HP_LOG_ERROR, "HOSTPIN_STRICT=1 and %d invalid or "
		       "unknown HOSTPIN_* variable(s): exiting with status "
		       "%d before the program starts", bad, HP_STRICT_EXIT);
		_exit(HP_STRICT_EXIT);
	}
	/* otherwise each invalid knob kept its default: carry on */
	if (hp_opt[HP_OPT_DISABLE] || hp_foreign_allocator())
		st = HP_ST_PASSTHROUGH;
	if (st == HP_ST_READY) {
		hp_backend = hp_backend_select();
		if (!hp_backend->probe()) {
			hp_log(HP_LOG_WARN, "backend %s unavailable; pinning "
			       "nothing", hp_backend->name);
			hp_backend = &hp_backend_none;
		}
		if (show) {
			char state[64];
			hp_snprintf(state, sizeof(state), "backend %s",
				    hp_backend->name);
			show_and_exit(state);
		}
		pthread_atfork(fork_prepare, fork_parent, fork_child);
		atomic_store_explicit(&hp_threshold,
				      (size_t)hp_opt[HP_OPT_THRESHOLD],
				      memory_order_relaxed);
		hp_log(HP_LOG_INFO, "ready: backend %s (hostpin %s)",
		       hp_backend->name, HP_VERSION);
		hp_backend_note_set();
		hp_limits_log();
#ifndef HP_EMBEDDED_TEST /* unit tests keep their counters private */
		hp_ledger_attach();
#endif
		if (hp_log_level >= HP_LOG_INFO) {
			stage_note();
			hp_options_show(-1);
		}
	} else {
		if (show)
			show_and_exit(hp_opt[HP_OPT_DISABLE]
					  ? "pass-through (HOSTPIN_DISABLE=1)"
					  : "pass-through (another allocator "
					    "is preloaded)");
		atomic_store_explicit(&hp_threshold, SIZE_MAX,
				      memory_order_relaxed);
		hp_log(HP_LOG_INFO, "pass-through");
	}
	hp_publish_next();
	hp_in_hook--;
	/* release: pairs with the acquire in the waiting loop above and in
	 * boot.c's stand-ins, so they see the symbols and options. */
	atomic_store_explicit(&hp_state, st, memory_order_release);
}

__attribute__((constructor)) static void hp_ctor(void)
{
	if (atomic_load_explicit(&hp_state, memory_order_acquire) == HP_ST_UNINIT)
		hp_init_slow();
}

__attribute__((destructor)) static void hp_dtor(void)
{
	if (atomic_load_explicit(&hp_state, memory_order_acquire) == HP_ST_READY) {
		hp_backend_note_exit();
		hp_stats_report();
#ifndef HP_EMBEDDED_TEST
		hp_ledger_detach();
#endif
	}
}
