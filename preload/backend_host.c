/* The host-only backends: none (pins nothing) and mlock (page-locks only: no
 * DMA benefit, but real memory-lock semantics for demos and tests). */
#include <errno.h>
#include <sys/mman.h>

#include "hostpin.h"
#include "hp.h"

static int always(void) { return 0; }
static int yes(void) { return 1; }
static void nothing(void) {}

static int none_pin(void *b, size_t l, const char **why)
{
	(void)b, (void)l, (void)why;
	return 0;
}

const hp_backend_t hp_backend_none = {
	.name = "none", .probe = always, .ready = yes, .pin = none_pin,
	.unpin = none_pin, .fork_child = nothing, .pin_flags = 0,
};

static int mlock_pin(void *b, size_t l, const char **why)
{
	if (mlock(b, l) == 0)
		return 0;
	*why = errno == ENOMEM || errno == EPERM || errno == EAGAIN
		   ? "mlock: RLIMIT_MEMLOCK or out of memory"
		   : "mlock: other error";
	return errno ? errno : EIO;
}

static int mlock_unpin(void *b, size_t l, const char **why)
{
	if (munlock(b, l) == 0)
		return 0;
	*why = "munlock failed";
	return errno ? errno : EIO;
}

const hp_backend_t hp_backend_mlock = {
	.name = "mlock", .probe = always, .ready = yes, .pin = mlock_pin,
	.unpin = mlock_unpin, .fork_child = nothing,
	.pin_flags = HOSTPIN_LOCKED,
};
