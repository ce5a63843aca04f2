/* CUDA driver hooks: the lookups (cuGetProcAddress and _v2), and the table
 * every lookup of a driver entry point searches: cuGetProcAddress,
 * cudaGetDriverEntryPoint, dlsym on the driver's handle (hp_cudrv_wrap),
 * built from each family's part.  How the driver hooks are put together:
 * cudrv.h. */
#define HP_CUDRV_lookup(base, since, stream, name) HP_CUDRV_EMIT(base, since, stream, name)
#include "cudrv.h"

#define HP_CUDRV_EMIT HP_CUDRV_SLOTS
#include "hooks_cudrv.def"
#undef HP_CUDRV_EMIT

/* Lookups: what the driver found is handed out wrapped where hostpin wraps
 * it (hp_cudrv_wrap, below). */
static void *wrap_found(const char *symbol, void *fn, int version,
			unsigned long long flags)
{
	if (fn == NULL || symbol == NULL ||
	    atomic_load_explicit(&hp_state, memory_order_acquire) !=
		HP_ST_READY ||
	    hp_in_child)
		return fn;
	return hp_cudrv_wrap(symbol, fn, version, flags);
}
HP_BODY hp_CUresult gpa(void *f, const char *symbol, void **pfn, int ver,
		       hp_cuuint64_t flags)
{
	hp_cuGetProcAddress_t fn = (hp_cuGetProcAddress_t)f;
	if (fn == NULL)
		return HP_CUDA_ERROR_NOT_FOUND;
	hp_CUresult e = fn(symbol, pfn, ver, flags);
	if (e == HP_CUDA_SUCCESS && pfn != NULL)
		*pfn = wrap_found(symbol, *pfn, ver, flags);
	return e;
}
HP_BODY hp_CUresult gpa_v2(void *f, const char *symbol, void **pfn, int ver,
			  hp_cuuint64_t flags, int *status)
{
	hp_cuGetProcAddress_v2_t fn = (hp_cuGetProcAddress_v2_t)f;
	if (fn == NULL)
		return HP_CUDA_ERROR_NOT_FOUND;
	hp_CUresult e = fn(symbol, pfn, ver, flags, status);
	if (e == HP_CUDA_SUCCESS && pfn != NULL)
		*pfn = wrap_found(symbol, *pfn, ver, flags);
	return e;
}

/* ---- lookups ---- */
HP_EXPORT hp_CUresult cuGetProcAddress(const char *symbol, void **pfn, int ver,
				       hp_cuuint64_t flags)
{
	return gpa(NEXT(cuGetProcAddress), symbol, pfn, ver, flags);
}

static hp_CUresult lk_cuGetProcAddress(const char *symbol, void **pfn, int ver,
				       hp_cuuint64_t flags)
{
	return gpa(LOOKED_UP(cuGetProcAddress), symbol, pfn, ver, flags);
}

HP_EXPORT hp_CUresult cuGetProcAddress_v2(const char *symbol, void **pfn,
					  int ver, hp_cuuint64_t flags,
					  int *status)
{
	return gpa_v2(NEXT(cuGetProcAddress_v2), symbol, pfn, ver, flags,
		      status);
}

static hp_CUresult lk_cuGetProcAddress_v2(const char *symbol, void **pfn,
					  int ver, hp_cuuint64_t flags,
					  int *status)
{
	return gpa_v2(LOOKED_UP(cuGetProcAddress_v2), symbol, pfn, ver, flags,
		      status);
}

/* This family's part of the table. */
const struct hp_cudrv_variant hp_cudrv_lookup[] = {
#define HP_CUDRV_EMIT HP_CUDRV_ENTRY
#include "hooks_cudrv.def"
#undef HP_CUDRV_EMIT
	{0}};

/* ---- the lookup table, from every family's part ---- */
static const struct hp_cudrv_variant *const families[] = {
	hp_cudrv_copy_async,
	hp_cudrv_copy_batch,
	hp_cudrv_copy_sync,
	hp_cudrv_memory,
	hp_cudrv_capture,
	hp_cudrv_lookup,
};
#define NFAMILIES (sizeof(families) / sizeof(families[0]))
/* for each entry v of the table */
#define EACH_VARIANT(v)                                                       \
	for (size_t f_ = 0; f_ < NFAMILIES; f_++)                             \
		for (const struct hp_cudrv_variant *v = families[f_]; v->name; v++)

int hp_cudrv_wrapped_name(const char *name)
{
	EACH_VARIANT(v)
		if (strcmp(v->name, name) == 0)
			return 1;
	return 0;
}

/* Which form of `symbol` the driver hands out for (version, flags): the
 * newest one at or below version, in the stream form the flags ask. */
static const struct hp_cudrv_variant *pick(const char *symbol, int version,
				  unsigned long long flags)
{
	int stream = (flags & HP_CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)
			 ? PER_THREAD
			 : LEGACY;
	const struct hp_cudrv_variant *best = NULL;
	EACH_VARIANT(v) {
		if ((v->stream == stream || v->stream == ANY) &&
		    v->since <= version && strcmp(v->base, symbol) == 0 &&
		    (best == NULL || v->since > best->since))
			best = v;
	}
	return best;
}

static int is_driver_base(const char *symbol)
{
	EACH_VARIANT(v)
		if (strcmp(v->base, symbol) == 0)
			return 1;
	return 0;
}

/* Learn fn as the looked-up form's next; 0 if the slot holds another
 * that is still loaded (one whose driver was unloaded is replaced: the
 * driver loaded again). */
static int learn(_Atomic(void *) *slot, void *fn)
{
	void *cur = NULL;
	hp_obj_t o;
	/* release: pairs with the acquire in lk_next */
	while (!atomic_compare_exchange_strong_explicit(
	    slot, &cur, fn, memory_order_release, memory_order_acquire)) {
		if (cur == fn)
			return 1;
		if (hp_obj_of(cur, &o))
			return 0;
	}
	return 1;
}

void *hp_cudrv_wrap(const char *symbol, void *fn, int version,
		    unsigned long long flags)
{
	const struct hp_cudrv_variant *v = NULL;
	if (hp_is_self(fn))
		return fn; /* already one of hostpin's */
	if (version == 0) {
		EACH_VARIANT(w)
			if (!v && strcmp(w->name, symbol) == 0)
				v = w;
	} else {
		v = pick(symbol, version, flags);
		if (v == NULL && is_driver_base(symbol) &&
		    strstr(symbol, "Memcpy") && strstr(symbol, "Async"))
			/* a form older than any hostpin hooks (CUDA < 3.2
			 * 32-bit copies): followed as an unknown one */
			return hp_unknown_wrap(symbol, fn);
	}
	/* A copy entry point hostpin has no hook for (a newer CUDA): its
	 * calls keep pageable semantics (unknown.c); registration stays on. */
	if (v == NULL && hp_coverage_unguarded(symbol))
		return hp_unknown_wrap(symbol, fn);
	if (v == NULL)
		return fn;
	if (!learn(v->slot, fn)) {
		/* a second driver, or a layer that returns its own: leave
		 * its function alone rather than call the wrong one */
		HP_LOG_ONCE(HP_LOG_WARN, "%s: two different definitions seen; "
			    "the second is not guarded", v->name);
		return fn;
	}
	return v->wrapper;
}
