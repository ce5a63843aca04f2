/* The host-only backends: none (pins nothing) and mlock (page-locks only: no
 * DMA benefit, but real memory-lock semantics for demos and tests). */
#include <errno.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../hostpin.h"
#include "../hp.h"

static int yes(void) { return 1; }
static void nothing(void) {}

static int none_pin(void *b, size_t l, const char **why)
{
	(void)b, (void)l, (void)why;
	return 0;
}

const hp_backend_t hp_backend_none = {
	.name = "none", .probe = yes, .ready = yes, .pin = none_pin,
	.unpin = none_pin, .fork_child = nothing, .pin_flags = 0,
};

/* Lock pages as the program faults them (Linux 4.4): a block it never
 * fills stays uncommitted, and pages keep the size (huge or not) their
 * first touch gives them.  mlock (which faults every page) where the kernel
 * lacks it.  RLIMIT_MEMLOCK is checked against the whole range either way. */
#ifndef MLOCK_ONFAULT
#define MLOCK_ONFAULT 0x01
#endif
static int mlock_pin(void *b, size_t l, const char **why)
{
	if (syscall(SYS_mlock2, b, l, MLOCK_ONFAULT) == 0)
		return 0;
	if ((errno == ENOSYS || errno == EINVAL) && mlock(b, l) == 0)
		return 0;
	*why = errno == ENOMEM || errno == EPERM || errno == EAGAIN
		   ? "mlock: RLIMIT_MEMLOCK or out of memory"
		   : "mlock: other error";
	return errno ? errno : EIO;
}

/* munlock by system call, as mlock2 above: a sanitizer's munlock
 * interceptor does nothing (sanitizers ignore mlock), so the pages that
 * mlock2 really locked would stay locked and a discard of them fail. */
static int mlock_unpin(void *b, size_t l, const char **why)
{
	if (syscall(SYS_munlock, b, l) == 0)
		return 0;
	*why = "munlock failed";
	return errno ? errno : EIO;
}

const hp_backend_t hp_backend_mlock = {
	.name = "mlock", .probe = yes, .ready = yes, .pin = mlock_pin,
	.unpin = mlock_unpin, .fork_child = nothing,
	.pin_flags = HOSTPIN_LOCKED,
};
