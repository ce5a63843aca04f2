/* The query API of hostpin.h: what hostpin knows about an address, and
 * which backend is active.  (hostpin_stats lives with the counters.) */
#include "../record.h"

HP_EXPORT int hostpin_query(const void *p, struct hostpin_range *out)
{
	hp_snap_t s;
	hp_rec_t *r = hp_registry_lookup(&hp_reg, (uintptr_t)p, &s);
	/* freed blocks (cached, or leaked after a failed unpin) are nobody's */
	if (r == NULL || hp_word_state(s.word) == HP_REC_LEAKED ||
	    hp_word_state(s.word) == HP_REC_CACHED)
		return 0;
	if (out) {
		out->base = (void *)s.base;
		out->len = s.len;
		/* a block waiting for its Nth copy is pending too */
		out->flags = (hp_rflags(r) & ~(unsigned)HP_F_LAZY) |
			     (hp_rflags(r) & HP_F_LAZY ? HOSTPIN_PENDING : 0u);
	}
	return 1;
}

HP_EXPORT const char *hostpin_backend(void)
{
	/* acquire: pairs with init's release; the backend is set */
	if (atomic_load_explicit(&hp_state, memory_order_acquire) != HP_ST_READY)
		return "disabled";
	if (hp_backend == &hp_backend_auto && hp_backend_auto_chosen())
		return hp_backend_auto_chosen()->name;
	return hp_backend->name;
}
