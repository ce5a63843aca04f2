/* The guard every device hook goes through, and the step-aside sequence for
 * registrations and imports the program makes itself (invariant 8), shared
 * by the CUDA and Level Zero hooks. */
#include "../hooks.h"

/* Hooks entered on this thread: the runtime's hook calls into the driver,
 * whose hook must then leave everything to the outer one (one wait per
 * copy, one step-aside per registration). */
static HP_TLS int depth;

int hp_hook_enter(void)
{
	if (depth || !hp_hooks_active())
		return 0;
	depth++;
	return 1;
}

void hp_hook_leave(void) { depth--; }

void hp_step_aside(void *p, size_t n)
{
	HP_GUARDED(hp_foreign_begin(p, n));
}

void hp_step_aside_failed(void *p)
{
	HP_GUARDED(hp_foreign_end(p));
}

void hp_step_aside_released(void *p)
{
	/* First: did the program release hostpin's own registration?  Then:
	 * the end of its own registration over our blocks. */
	HP_GUARDED(hp_import_dropped(p); hp_foreign_end(p));
}
