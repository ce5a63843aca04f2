/* CUDA runtime hooks: the driver lookups (cudaGetDriverEntryPoint and
 * ByVersion), and the table of lookups on a runtime's handle (hooks_dlsym.c:
 * hp_cudart_wrap), built from each family's part.  How the runtime hooks
 * are put together: cudart.h. */
#define HP_CUDART_lookup(name) HP_CUDART_EMIT(name)
#include "cudart.h"

#define HP_CUDART_EMIT HP_CUDART_SLOTS
#include "hooks_cudart.def"
#undef HP_CUDART_EMIT

/* Driver entry points handed out by the runtime: wrapped where hostpin
 * wraps them (cudrv_lookup.c), asked at the runtime's own version where the
 * call names none. */
static void *entry_wrap(const char *sym, void *fn, unsigned version,
			unsigned long long flags)
{
	if (fn == NULL || sym == NULL || hp_in_child ||
	    atomic_load_explicit(&hp_state, memory_order_acquire) !=
		HP_ST_READY)
		return fn;
	return hp_cudrv_wrap(sym, fn, (int)version, flags);
}
HP_BODY hp_cudaError_t entry_point(void *f, const void *ra, const char *sym,
				  void **fp, unsigned long long flags,
				  hp_cudaDriverEntryPointQueryResult *st)
{
	hp_cudaGetDriverEntryPoint_t fn = (hp_cudaGetDriverEntryPoint_t)f;
	if (fn == NULL)
		return HP_CUDA_ERROR_NOT_FOUND;
	hp_cudaError_t e = fn(sym, fp, flags, st);
	if (e == 0 && fp)
		*fp = entry_wrap(sym, *fp, (unsigned)rt_version(ra), flags);
	return e;
}
static hp_cudaError_t
entry_point_by_version(void *f, const char *sym, void **fp, unsigned v,
		       unsigned long long flags,
		       hp_cudaDriverEntryPointQueryResult *st)
{
	hp_cudaGetDriverEntryPointByVersion_t fn =
	    (hp_cudaGetDriverEntryPointByVersion_t)f;
	if (fn == NULL)
		return HP_CUDA_ERROR_NOT_FOUND;
	hp_cudaError_t e = fn(sym, fp, v, flags, st);
	if (e == 0 && fp)
		*fp = entry_wrap(sym, *fp, v, flags);
	return e;
}

/* ---- driver lookups ---- */
HP_EXPORT hp_cudaError_t cudaGetDriverEntryPoint(
    const char *sym, void **fp, unsigned long long flags,
    hp_cudaDriverEntryPointQueryResult *st)
{
	return entry_point(NEXT(cudaGetDriverEntryPoint),
			   __builtin_return_address(0), sym, fp, flags, st);
}

HP_EXPORT hp_cudaError_t cudaGetDriverEntryPoint_ptsz(
    const char *sym, void **fp, unsigned long long flags,
    hp_cudaDriverEntryPointQueryResult *st)
{
	return entry_point(NEXT(cudaGetDriverEntryPoint_ptsz),
			   __builtin_return_address(0), sym, fp, flags, st);
}

HP_EXPORT hp_cudaError_t cudaGetDriverEntryPointByVersion(
    const char *sym, void **fp, unsigned v, unsigned long long flags,
    hp_cudaDriverEntryPointQueryResult *st)
{
	return entry_point_by_version(NEXT(cudaGetDriverEntryPointByVersion),
				      sym, fp, v, flags, st);
}

HP_EXPORT hp_cudaError_t cudaGetDriverEntryPointByVersion_ptsz(
    const char *sym, void **fp, unsigned v, unsigned long long flags,
    hp_cudaDriverEntryPointQueryResult *st)
{
	return entry_point_by_version(
	    NEXT(cudaGetDriverEntryPointByVersion_ptsz), sym, fp, v, flags, st);
}

/* This family's part of the table. */
const struct hp_cudart_name hp_cudart_lookup[] = {
#define HP_CUDART_EMIT HP_CUDART_ENTRY
#include "hooks_cudart.def"
#undef HP_CUDART_EMIT
	{0}};

/* ---- the table, from every family's part ---- */
static const struct hp_cudart_name *const families[] = {
	hp_cudart_copy_async,
	hp_cudart_copy_sync,
	hp_cudart_memory,
	hp_cudart_capture,
	hp_cudart_lookup,
};
#define NFAMILIES (sizeof(families) / sizeof(families[0]))
/* for each entry e of the table */
#define EACH_NAME(e)                                                          \
	for (size_t f_ = 0; f_ < NFAMILIES; f_++)                             \
		for (const struct hp_cudart_name *e = families[f_]; e->name; e++)

int hp_cudart_wrapped_name(const char *name)
{
	EACH_NAME(e)
		if (strcmp(e->name, name) == 0)
			return 1;
	return 0;
}

void *hp_cudart_wrap(const char *symbol, void *fn, const void *ra)
{
	EACH_NAME(e) {
		if (strcmp(e->name, symbol) != 0)
			continue;
		/* Only the runtime hostpin's exported wrapper forwards to
		 * from the looking-up object: another runtime (another
		 * version, in another scope) keeps its own function, and its
		 * copies are guarded where it calls the driver. */
		void *next = hp_fwd(e->next, ra);
		return next == fn ? e->wrapper : fn;
	}
	return fn;
}
