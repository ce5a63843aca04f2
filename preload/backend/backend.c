/* Backend selection: HOSTPIN_BACKEND and HOSTPIN_REGISTER_DEVICE, and auto,
 * which is CUDA if the program uses it, else Level Zero if the program uses
 * that, chosen once, at the first moment one of them is ready. */
#include <errno.h>

#include "../hostpin.h"
#include "../hp.h"

/* The backend in use: none until initialisation chooses (hooks/init.c). */
const hp_backend_t *hp_backend = &hp_backend_none;

const hp_backend_t *hp_backend_select(void)
{
	int dev = hp_opt[HP_OPT_REGISTER_DEVICE] != 0;
	switch (hp_opt[HP_OPT_BACKEND]) {
	case HP_BACKEND_MLOCK:
		return &hp_backend_mlock;
	case HP_BACKEND_NONE:
		return &hp_backend_none;
	case HP_BACKEND_CUDA:
		return dev ? &hp_backend_cuda : &hp_backend_none;
	case HP_BACKEND_LEVEL_ZERO:
		return dev ? &hp_backend_level_zero : &hp_backend_none;
	default:
		/* blocks stay pending (and cost nothing) until one is ready */
		return dev ? &hp_backend_auto : &hp_backend_none;
	}
}

static _Atomic(const hp_backend_t *) chosen;

static unsigned bk_id(const hp_backend_t *b)
{
	return b == &hp_backend_none	     ? HP_BK_NONE
	       : b == &hp_backend_mlock	     ? HP_BK_MLOCK
	       : b == &hp_backend_cuda	     ? HP_BK_CUDA
	       : b == &hp_backend_level_zero ? HP_BK_LEVEL_ZERO
	       : b == &hp_backend_auto	     ? HP_BK_AUTO
					     : 0;
}

void hp_backend_note(const hp_backend_t *b, unsigned flags)
{
	/* relaxed: statistics */
	HP_CTR_OR(backend, flags | bk_id(b) << 4);
}

void hp_backend_note_set(void)
{
	unsigned id = bk_id(hp_backend);
	/* relaxed: statistics, written before the process has other
	 * threads in hostpin */
	HP_CTR_SET(backend, id | (id < HP_BK_CUDA ? HP_BK_READY : 0));
	HP_CTR_SET(threshold, hp_opt[HP_OPT_THRESHOLD]);
	HP_CTR_SET(pin_after, hp_opt[HP_OPT_PIN_AFTER]);
}

void hp_backend_note_exit(void)
{
	/* a forked child: no device of its own, and the loader's lock may be
	 * held by a thread the parent had (hp_cuda_loaded asks the loader;
	 * forked loader) */
	if (hp_in_child)
		return;
	unsigned id = (unsigned)atomic_load_explicit(&hp_ctr.backend,
						     memory_order_relaxed) & 15;
	if (((id == HP_BK_CUDA || id == HP_BK_AUTO) && hp_cuda_loaded()) ||
	    ((id == HP_BK_LEVEL_ZERO || id == HP_BK_AUTO) && hp_ze_loaded()))
		hp_backend_note(NULL, HP_BK_DRIVER);
}

const hp_backend_t *hp_backend_auto_chosen(void)
{
	/* acquire: pairs with the compare-exchange that published it */
	return atomic_load_explicit(&chosen, memory_order_acquire);
}

_Atomic unsigned hp_backend_events;

void hp_backend_report(unsigned ev)
{
	/* release: the backend's own state (driver forgotten) is visible to
	 * the policy that takes the event */
	atomic_fetch_or_explicit(&hp_backend_events, ev, memory_order_release);
}

static int auto_probe(void) { return 1; }

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
	if (!atomic_compare_exchange_strong_explicit(&chosen, &none, c,
						     memory_order_acq_rel,
						     memory_order_acquire))
		c = none;
	else
		hp_backend_note(c, 0);
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

static int auto_busy(const void *b, size_t l)
{
	const hp_backend_t *c = hp_backend_auto_chosen();
	return c && c->busy ? c->busy(b, l) : 0;
}

static uintptr_t auto_owner(void)
{
	const hp_backend_t *c = hp_backend_auto_chosen();
	return c && c->owner ? c->owner() : 0;
}

/* ready() makes auto choose */
static int auto_device_node(void)
{
	const hp_backend_t *c = auto_ready() ? hp_backend_auto_chosen() : NULL;
	return c && c->device_node ? c->device_node() : -1;
}

static void auto_fork_child(void)
{
	hp_backend_cuda.fork_child();
	hp_backend_level_zero.fork_child();
}

const hp_backend_t hp_backend_auto = {
	.name = "auto", .probe = auto_probe, .ready = auto_ready,
	.pin = auto_pin, .unpin = auto_unpin, .fork_child = auto_fork_child,
	.quiesce = hp_cuda_quiesce, .busy = auto_busy, .owner = auto_owner,
	.device_node = auto_device_node,
	.pin_flags = HOSTPIN_REGISTERED,
};
