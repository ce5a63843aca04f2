/* ze_copy.c's wrappers, one set per driver slot (included at its end):
 * each calls the shared body with slot S's own function.  Then the table
 * getters that patch a driver's tables, and the lookups that hand them out
 * (dlsym on a driver's handle, zeDriverGetExtensionFunctionAddress). */
#define CL(S, i, T) ((T)slots[S].fn[K_CL][i])
#define CQ(S, i, T) ((T)slots[S].fn[K_CQ][i])
#define EV(S, i, T) ((T)slots[S].fn[K_EV][i])
#define FE(S, i, T) ((T)slots[S].fn[K_FENCE][i])

#define ZE_SLOT(S)                                                            \
	static hp_ze_result_t copy_##S(hp_ze_h l, void *d, const void *s,     \
				       size_t n, hp_ze_h ev, uint32_t nw,     \
				       hp_ze_h *w)                            \
	{                                                                     \
		return copy_body(CL(S, HP_ZE_CL_COPY,                         \
				    hp_zeCommandListAppendMemoryCopy_t),      \
				 l, d, s, n, ev, nw, w);                      \
	}                                                                     \
	static hp_ze_result_t region_##S(                                     \
	    hp_ze_h l, void *d, const struct hp_ze_region *dr, uint32_t dp,   \
	    uint32_t ds, const void *s, const struct hp_ze_region *sr,        \
	    uint32_t sp, uint32_t ss, hp_ze_h ev, uint32_t nw, hp_ze_h *w)    \
	{                                                                     \
		return region_body(                                           \
		    CL(S, HP_ZE_CL_COPY_REGION,                               \
		       hp_zeCommandListAppendMemoryCopyRegion_t),             \
		    l, d, dr, dp, ds, s, sr, sp, ss, ev, nw, w);              \
	}                                                                     \
	static hp_ze_result_t ctx_##S(hp_ze_h l, void *d, hp_ze_h cx,         \
				      const void *s, size_t n, hp_ze_h ev,    \
				      uint32_t nw, hp_ze_h *w)                \
	{                                                                     \
		return ctx_body(CL(S, HP_ZE_CL_COPY_FROM_CONTEXT,             \
				   hp_zeCommandListAppendMemoryCopyFromContext_t), \
				l, d, cx, s, n, ev, nw, w);                   \
	}                                                                     \
	static hp_ze_result_t imgto_##S(hp_ze_h l, void *d, hp_ze_h img,      \
					const struct hp_ze_region *r,         \
					hp_ze_h ev, uint32_t nw, hp_ze_h *w)  \
	{                                                                     \
		return img_to_body(CL(S, HP_ZE_CL_IMAGE_TO_MEMORY,            \
				      hp_zeCommandListAppendImageCopyToMemoryExt_t), \
				   l, d, img, r, 0, 0, ev, nw, w, 0);         \
	}                                                                     \
	static hp_ze_result_t imgfrom_##S(hp_ze_h l, hp_ze_h img,             \
					  const void *s,                      \
					  const struct hp_ze_region *r,       \
					  hp_ze_h ev, uint32_t nw,            \
					  hp_ze_h *w)                         \
	{                                                                     \
		return img_from_body(                                         \
		    CL(S, HP_ZE_CL_IMAGE_FROM_MEMORY,                         \
		       hp_zeCommandListAppendImageCopyFromMemoryExt_t),       \
		    l, img, s, r, 0, 0, ev, nw, w, 0);                        \
	}                                                                     \
	static hp_ze_result_t imgtox_##S(hp_ze_h l, void *d, hp_ze_h img,     \
					 const struct hp_ze_region *r,        \
					 uint32_t p, uint32_t sl, hp_ze_h ev, \
					 uint32_t nw, hp_ze_h *w)             \
	{                                                                     \
		return img_to_body(CL(S, HP_ZE_CL_IMAGE_TO_MEMORY_EXT,        \
				      hp_zeCommandListAppendImageCopyToMemoryExt_t), \
				   l, d, img, r, p, sl, ev, nw, w, 1);        \
	}                                                                     \
	static hp_ze_result_t imgfromx_##S(                                   \
	    hp_ze_h l, hp_ze_h img, const void *s,                            \
	    const struct hp_ze_region *r, uint32_t p, uint32_t sl,            \
	    hp_ze_h ev, uint32_t nw, hp_ze_h *w)                              \
	{                                                                     \
		return img_from_body(                                         \
		    CL(S, HP_ZE_CL_IMAGE_FROM_MEMORY_EXT,                     \
		       hp_zeCommandListAppendImageCopyFromMemoryExt_t),       \
		    l, img, s, r, p, sl, ev, nw, w, 1);                       \
	}                                                                     \
	static hp_ze_result_t ldestroy_##S(hp_ze_h l)                         \
	{                                                                     \
		return list_one(CL(S, HP_ZE_CL_DESTROY, hp_ze_one_t), l, 1);  \
	}                                                                     \
	static hp_ze_result_t lreset_##S(hp_ze_h l)                           \
	{                                                                     \
		return list_one(CL(S, HP_ZE_CL_RESET, hp_ze_one_t), l, 0);    \
	}                                                                     \
	static hp_ze_result_t qdestroy_##S(hp_ze_h q)                         \
	{                                                                     \
		return queue_destroy(CQ(S, HP_ZE_CQ_DESTROY, hp_ze_one_t), q); \
	}                                                                     \
	static hp_ze_result_t qexec_##S(hp_ze_h q, uint32_t n, hp_ze_h *l,    \
					hp_ze_h f)                            \
	{                                                                     \
		return queue_exec(CQ(S, HP_ZE_CQ_EXECUTE,                     \
				     hp_zeCommandQueueExecuteCommandLists_t), \
				  q, n, l, f);                                \
	}                                                                     \
	static hp_ze_result_t qsync_##S(hp_ze_h q, uint64_t t)                \
	{                                                                     \
		return queue_sync(CQ(S, HP_ZE_CQ_SYNCHRONIZE, hp_ze_sync_t),  \
				  q, t);                                      \
	}                                                                     \
	static void *host_sync_fn_##S;                                        \
	static hp_ze_result_t lsync_##S(hp_ze_h l, uint64_t t)                \
	{                                                                     \
		return hp_ze_list_host_sync((hp_ze_sync_t)host_sync_fn_##S, l, t); \
	}                                                                     \
	static hp_ze_result_t limm_##S(hp_ze_h c, hp_ze_h d, const void *desc, \
				       hp_ze_h *l)                            \
	{                                                                     \
		return list_imm(CL(S, HP_ZE_CL_CREATE_IMMEDIATE,              \
				   hp_zeCommandListCreateImmediate_t),        \
				c, d, desc, l);                               \
	}                                                                     \
	static hp_ze_result_t evsync_##S(hp_ze_h e, uint64_t t)               \
	{                                                                     \
		return event_sync(EV(S, HP_ZE_EV_HOST_SYNCHRONIZE, hp_ze_sync_t), \
				  e, t);                                      \
	}                                                                     \
	static hp_ze_result_t evquery_##S(hp_ze_h e)                          \
	{                                                                     \
		return event_query(EV(S, HP_ZE_EV_QUERY_STATUS, hp_ze_one_t), e); \
	}                                                                     \
	static hp_ze_result_t fesync_##S(hp_ze_h f, uint64_t t)               \
	{                                                                     \
		return fence_sync(                                            \
		    FE(S, HP_ZE_FENCE_HOST_SYNCHRONIZE, hp_ze_sync_t), f, t); \
	}                                                                     \
	static hp_ze_result_t fequery_##S(hp_ze_h f)                          \
	{                                                                     \
		return fence_query(FE(S, HP_ZE_FENCE_QUERY_STATUS, hp_ze_one_t), \
				   f);                                        \
	}                                                                     \
	static hp_ze_result_t getcl_##S(uint32_t v, void **t)                 \
	{                                                                     \
		return get_table(S, K_CL, v, t);                              \
	}                                                                     \
	static hp_ze_result_t getcq_##S(uint32_t v, void **t)                 \
	{                                                                     \
		return get_table(S, K_CQ, v, t);                              \
	}                                                                     \
	static hp_ze_result_t getev_##S(uint32_t v, void **t)                 \
	{                                                                     \
		return get_table(S, K_EV, v, t);                              \
	}                                                                     \
	static hp_ze_result_t getfe_##S(uint32_t v, void **t)                 \
	{                                                                     \
		return get_table(S, K_FENCE, v, t);                           \
	}

static hp_ze_result_t get_table(int S, int k, uint32_t v, void **t);

ZE_SLOT(0)
ZE_SLOT(1)
ZE_SLOT(2)
ZE_SLOT(3)

/* index, wrapper per slot, the version that brought the entry */
struct patch {
	int i;
	void *w[NSLOT];
	uint32_t since;
};
#define W4(name) {name##_0, name##_1, name##_2, name##_3}
#define V(a, b) HP_ZE_API_VERSION(a, b)
static const struct patch cl_patch[] = {
	{HP_ZE_CL_CREATE_IMMEDIATE, W4((void *)limm), 0},
	{HP_ZE_CL_DESTROY, W4((void *)ldestroy), 0},
	{HP_ZE_CL_RESET, W4((void *)lreset), 0},
	{HP_ZE_CL_COPY, W4((void *)copy), 0},
	{HP_ZE_CL_COPY_REGION, W4((void *)region), 0},
	{HP_ZE_CL_COPY_FROM_CONTEXT, W4((void *)ctx), 0},
	{HP_ZE_CL_IMAGE_TO_MEMORY, W4((void *)imgto), 0},
	{HP_ZE_CL_IMAGE_FROM_MEMORY, W4((void *)imgfrom), 0},
	{HP_ZE_CL_IMAGE_TO_MEMORY_EXT, W4((void *)imgtox), V(1, 3)},
	{HP_ZE_CL_IMAGE_FROM_MEMORY_EXT, W4((void *)imgfromx), V(1, 3)},
	{0, {NULL}, 0},
};
static const struct patch cq_patch[] = {
	{HP_ZE_CQ_DESTROY, W4((void *)qdestroy), 0},
	{HP_ZE_CQ_EXECUTE, W4((void *)qexec), 0},
	{HP_ZE_CQ_SYNCHRONIZE, W4((void *)qsync), 0},
	{0, {NULL}, 0},
};
static const struct patch ev_patch[] = {
	{HP_ZE_EV_HOST_SYNCHRONIZE, W4((void *)evsync), 0},
	{HP_ZE_EV_QUERY_STATUS, W4((void *)evquery), 0},
	{0, {NULL}, 0},
};
static const struct patch fe_patch[] = {
	{HP_ZE_FENCE_HOST_SYNCHRONIZE, W4((void *)fesync), 0},
	{HP_ZE_FENCE_QUERY_STATUS, W4((void *)fequery), 0},
	{0, {NULL}, 0},
};
static const struct patch *const patches[NK] = {cl_patch, cq_patch, ev_patch,
						fe_patch};
static const char *const getter[NK] = {
	"zeGetCommandListProcAddrTable", "zeGetCommandQueueProcAddrTable",
	"zeGetEventProcAddrTable", "zeGetFenceProcAddrTable"};
static void patch(void **t, void **real, const struct patch *p, int S,
		  uint32_t v)
{
	for (; p->w[0]; p++) {
		if (v < p->since || t[p->i] == NULL || t[p->i] == p->w[S])
			continue;
		real[p->i] = t[p->i];
		t[p->i] = p->w[S];
	}
}

static hp_ze_result_t get_table(int S, int k, uint32_t v, void **t)
{
	hp_ze_result_t r = slots[S].get[k](v, t);
	if (r == HP_ZE_RESULT_SUCCESS && t)
		patch(t, slots[S].fn[k], patches[k], S, v);
	return r;
}

static void *const get_w[NK][NSLOT] = {W4((void *)getcl), W4((void *)getcq),
				       W4((void *)getev), W4((void *)getfe)};
static void *const lsync_w[NSLOT] = W4((void *)lsync);
static void **const host_sync_fn[NSLOT] = {&host_sync_fn_0, &host_sync_fn_1,
					   &host_sync_fn_2, &host_sync_fn_3};

/* The slot of the driver object holding fn (a new one if free); -1: the
 * loader's own (left alone), not an object, or no slot left. */
static int slot_of(void *fn)
{
	hp_obj_t o;
	if (!hp_obj_of(fn, &o) || hp_obj_sym(&o, "zeLoaderInit") ||
	    hp_obj_sym(&o, "zelLoaderGetVersions"))
		return -1;
	pthread_mutex_lock(&slot_mu);
	int s = -1;
	for (int i = 0; i < NSLOT && s < 0; i++) {
		/* relaxed: under slot_mu */
		uintptr_t lo = atomic_load_explicit(&slots[i].lo,
						    memory_order_relaxed);
		if (lo == o.lo || lo == 0) {
			s = i;
			atomic_store_explicit(&slots[i].lo, o.lo,
					      memory_order_relaxed);
		}
	}
	pthread_mutex_unlock(&slot_mu);
	if (s < 0)
		HP_LOG_ONCE(HP_LOG_WARN, "more than %d Level Zero drivers: the "
			    "copies of the others are not seen", NSLOT);
	return s;
}

static int kind_of(const char *name)
{
	for (int k = 0; k < NK; k++)
		if (!strcmp(name, getter[k]))
			return k;
	return -1;
}

int hp_ze_copy_wrapped_name(const char *name)
{
	return kind_of(name) >= 0;
}

void *hp_ze_copy_wrap(const char *name, void *fn)
{
	int k = kind_of(name), s = k < 0 ? -1 : slot_of(fn);
	if (s < 0)
		return fn;
	/* The loader calls the getter it got right away, on this thread;
	 * a second driver object takes another slot. */
	slots[s].get[k] = (hp_ze_get_table_t)fn;
	return get_w[k][s];
}

void *hp_ze_host_sync_wrap(void *fn)
{
	int s = slot_of(fn);
	if (s < 0)
		return fn;
	*host_sync_fn[s] = fn;
	return lsync_w[s];
}
