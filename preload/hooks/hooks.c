/* The step-aside sequence for registrations and imports the program makes
 * itself (invariant 8), shared by the CUDA and Level Zero hooks.  (The guard
 * every device hook goes through, hp_hook_enter, is base/boot.c's, beside
 * the other guards: the copy engine's stubs enter it too.) */
#include "../hooks.h"

int hp_step_aside(void *p, size_t n)
{
	int e;
	HP_GUARDED(e = hp_foreign_begin(p, n));
	return e;
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
