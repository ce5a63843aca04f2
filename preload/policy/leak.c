/* Leaked ranges (invariant 1): a range whose unregistration the driver
 * refused stays in the registry as LEAKED and stays mapped for the life of
 * the process, whoever asks to unmap or replace it.  hp_unpin said so once
 * and the statistics count it (leaked_blocks).  Called from wrap_mmap.c
 * with hp_in_hook raised. */
#include <errno.h>
#include <sys/mman.h>

#include "../record.h"

static int any_leaked(hp_rec_t *r, const hp_snap_t *s, void *arg)
{
	(void)r, (void)arg;
	return hp_word_state(s->word) == HP_REC_LEAKED;
}

int hp_leaked_in(uintptr_t a, size_t len)
{
	return hp_registry_each_overlap(&hp_reg, a, len, any_leaked, NULL);
}

struct gaps {
	uintptr_t cur, end;
	int ret, err, leaked; /* leaked: one not just waiting (HP_F_DEFER) */
};

static void unmap_to(struct gaps *g, uintptr_t to)
{
	if (to > g->cur && hp_real.munmap((void *)g->cur, to - g->cur) &&
	    !g->ret)
		g->ret = -1, g->err = errno;
}

static int skip_leaked(hp_rec_t *r, const hp_snap_t *s, void *arg)
{
	struct gaps *g = arg;
	if (hp_word_state(s->word) != HP_REC_LEAKED)
		return 0;
	g->leaked |= !(hp_rflags(r) & HP_F_DEFER);
	/* Records come in address order (the registry walk). */
	unmap_to(g, s->base > g->cur ? s->base : g->cur);
	uintptr_t e = s->base + s->len;
	if (e > g->cur)
		g->cur = e < g->end ? e : g->end;
	return 0;
}

int hp_munmap_do(void *a, size_t len)
{
	uintptr_t p = (uintptr_t)a;
	/* what the kernel rejects, it rejects as before */
	if ((p & (HP_PAGE_SIZE - 1)) || len == 0 || len > UINTPTR_MAX - p ||
	    !hp_leaked_in(p, len))
		return hp_real.munmap(a, len);
	struct gaps g = {p, p + hp_page_up(len), 0, 0, 0};
	hp_registry_each_overlap(&hp_reg, g.cur, g.end - g.cur, skip_leaked, &g);
	unmap_to(&g, g.end);
	/* a deferred one is unmapped when its unregistration is made */
	if (g.leaked)
		HP_LOG_ONCE(HP_LOG_WARN, "munmap(%p, %zu) leaves a range "
			    "mapped whose device registration could not be "
			    "released (invariant 1; counted as leaked_blocks)",
			    a, len);
	if (g.ret)
		errno = g.err;
	return g.ret;
}
