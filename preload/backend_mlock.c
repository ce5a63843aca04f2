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

/* auto: CUDA if the program uses it, else Level Zero if the program uses
 * that; chosen once, at the first moment one of them is ready. */
static _Atomic(const hp_backend_t *) chosen;

const hp_backend_t *hp_backend_auto_chosen(void)
{
	return atomic_load_explicit(&chosen, memory_order_acquire);
}

static int auto_ready(void)
{
	const hp_backend_t *c = hp_backend_auto_chosen();
	if (c)
		return c->ready();
	if (hp_backend_cuda.ready())
		c = &hp_backend_cuda;
	else if (hp_backend_level_zero.ready())
		c = &hp_backend_level_zero;
	else
		return 0;
	const hp_backend_t *none = NULL;
	/* acq_rel: the first chooser wins; later ones use its choice */
	if (!atomic_compare_exchange_strong(&chosen, &none, c))
		c = none;
	return c->ready();
}

static int auto_pin(void *b, size_t l, const char **why)
{
	const hp_backend_t *c = hp_backend_auto_chosen();
	return c ? c->pin(b, l, why) : EAGAIN;
}

static int auto_unpin(void *b, size_t l, const char **why)
{
	const hp_backend_t *c = hp_backend_auto_chosen();
	return c ? c->unpin(b, l, why) : 0;
}

static void auto_fork_child(void)
{
	hp_backend_cuda.fork_child();
	hp_backend_level_zero.fork_child();
}

const hp_backend_t hp_backend_auto = {
	.name = "auto", .probe = always, .ready = auto_ready, .pin = auto_pin,
	.unpin = auto_unpin, .fork_child = auto_fork_child,
	.pin_flags = HOSTPIN_REGISTERED,
};
