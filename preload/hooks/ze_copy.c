/* Level Zero copies (issue 41): every way a program reaches a driver's
 * copy entry points ends in the driver's own tables, which the loader
 * fills by calling the driver's zeGetCommandListProcAddrTable and
 * zeGetCommandQueueProcAddrTable (and the event and fence tables), found
 * with dlsym on the driver's handle.
 * The loader's exported functions, the tables the loader hands out (its
 * own intercepts, or the driver's table itself when one driver is loaded)
 * and the Unified Runtime's statically linked loader library all call
 * through them.  So hostpin hands the loader, for those two names, a
 * wrapper that patches the table the driver filled: each copy entry point
 * (zeCommandListAppendMemoryCopy, ...MemoryCopyRegion,
 * ...MemoryCopyFromContext, ...ImageCopyToMemory, ...ImageCopyFromMemory,
 * and the Ext forms of 1.3) goes through the copy policy (copy.c: a block's
 * copies are counted, and it is imported before its HOSTPIN_PIN_AFTER-th
 * copy), and execution, synchronisation, reset and destruction of lists
 * and queues, and waits and queries of events and fences, tell
 * ze_inflight.c when an appended copy may have run
 * (invariant 1).  zeCommandListHostSynchronize (1.6; past loader 1.8 it is
 * reached through zeDriverGetExtensionFunctionAddress, hooks_ze.c) too.
 *
 * A table getter of the loader itself is left alone (its entries reach the
 * driver's patched ones).  One slot per driver object, four at most; the
 * wrappers of slot S call slot S's functions. */
#include <string.h>

#include "../hooks.h"
#include "../record.h"
#include "../base/resolve.h"
#include "../backend/ze_api.h"

#define NSLOT 4
#define NFN 28 /* the largest table index patched, plus one */
enum { K_CL, K_CQ, K_EV, K_FENCE, NK }; /* the tables patched */
static struct zslot {
	_Atomic uintptr_t lo; /* the driver object's span; 0: free */
	hp_ze_get_table_t get[NK];
	void *fn[NK][NFN];
} slots[NSLOT];
static pthread_mutex_t slot_mu = PTHREAD_MUTEX_INITIALIZER;

#define ZE_UNINIT 0x78000001 /* ZE_RESULT_ERROR_UNINITIALIZED */

/* The end of a copy hook: the counts, and the host ranges that lie in
 * imported blocks, busy until the copy ran. */
static void copy_end(hp_copy_t *c, hp_ze_h l, hp_ze_h ev, hp_ze_result_t r,
		     const void *p1, size_t n1, const void *p2, size_t n2)
{
	int imp = c->overflow;
	for (int i = 0; i < c->n; i++)
		imp |= (hp_rflags_live(c->r[i]) & HOSTPIN_REGISTERED) != 0;
	hp_copy_sync_end(c, r == HP_ZE_RESULT_SUCCESS);
	if (r != HP_ZE_RESULT_SUCCESS || !imp)
		return;
	if (p1)
		hp_ze_inflight_add(l, p1, n1, ev);
	if (p2)
		hp_ze_inflight_add(l, p2, n2, ev);
}

/* The bytes a pitched region spans from its first one. */
static size_t region_span(const struct hp_ze_region *r, uint32_t pitch,
			  uint32_t slice, size_t *off)
{
	if (r == NULL) {
		*off = 0;
		return 1;
	}
	*off = (size_t)r->originZ * slice + (size_t)r->originY * pitch +
	       r->originX;
	size_t n = r->width ? r->width : 1;
	if (r->height > 1)
		n += (size_t)(r->height - 1) * pitch;
	if (r->depth > 1)
		n += (size_t)(r->depth - 1) * slice;
	return n;
}

#define ENTER(call)                                                           \
	if (fn == NULL)                                                       \
		return ZE_UNINIT;                                             \
	if (!hp_hook_enter())                                                 \
		return call;                                                  \
	hp_copy_t c;                                                          \
	hp_copy_init(&c)

HP_BODY hp_ze_result_t copy_body(hp_zeCommandListAppendMemoryCopy_t fn,
				 hp_ze_h l, void *d, const void *s, size_t n,
				 hp_ze_h ev, uint32_t nw, hp_ze_h *w)
{
	ENTER(fn(l, d, s, n, ev, nw, w));
	hp_copy_host(&c, d, n);
	hp_copy_host(&c, s, n);
	hp_ze_result_t r = fn(l, d, s, n, ev, nw, w);
	copy_end(&c, l, ev, r, d, n, s, n);
	return r;
}

HP_BODY hp_ze_result_t region_body(hp_zeCommandListAppendMemoryCopyRegion_t fn,
				   hp_ze_h l, void *d,
				   const struct hp_ze_region *dr, uint32_t dp,
				   uint32_t ds, const void *s,
				   const struct hp_ze_region *sr, uint32_t sp,
				   uint32_t ss, hp_ze_h ev, uint32_t nw,
				   hp_ze_h *w)
{
	ENTER(fn(l, d, dr, dp, ds, s, sr, sp, ss, ev, nw, w));
	size_t doff, soff, dn = region_span(dr, dp, ds, &doff),
			     sn = region_span(sr, sp, ss, &soff);
	const char *dh = (const char *)d + doff, *sh = (const char *)s + soff;
	hp_copy_host(&c, dh, dn);
	hp_copy_host(&c, sh, sn);
	hp_ze_result_t r = fn(l, d, dr, dp, ds, s, sr, sp, ss, ev, nw, w);
	copy_end(&c, l, ev, r, dh, dn, sh, sn);
	return r;
}

HP_BODY hp_ze_result_t ctx_body(hp_zeCommandListAppendMemoryCopyFromContext_t fn,
				hp_ze_h l, void *d, hp_ze_h ctx, const void *s,
				size_t n, hp_ze_h ev, uint32_t nw, hp_ze_h *w)
{
	ENTER(fn(l, d, ctx, s, n, ev, nw, w));
	hp_copy_host(&c, d, n);
	hp_copy_host(&c, s, n);
	hp_ze_result_t r = fn(l, d, ctx, s, n, ev, nw, w);
	copy_end(&c, l, ev, r, d, n, s, n);
	return r;
}

/* An image copy's host side: its pitched extent where the call gives the
 * pitches (Ext forms), else the block holding its first byte (the pixel
 * size is the image's, which the call does not say). */
HP_BODY hp_ze_result_t img_to_body(hp_zeCommandListAppendImageCopyToMemoryExt_t fn,
				   hp_ze_h l, void *d, hp_ze_h img,
				   const struct hp_ze_region *rg, uint32_t p,
				   uint32_t sl, hp_ze_h ev, uint32_t nw,
				   hp_ze_h *w, int ext)
{
	hp_zeCommandListAppendImageCopyToMemory_t f0 =
	    (hp_zeCommandListAppendImageCopyToMemory_t)(void *)fn;
	ENTER(ext ? fn(l, d, img, rg, p, sl, ev, nw, w)
		  : f0(l, d, img, rg, ev, nw, w));
	size_t off, n = ext && p ? region_span(rg, p, sl, &off) : 1;
	hp_copy_host(&c, d, n);
	hp_ze_result_t r = ext ? fn(l, d, img, rg, p, sl, ev, nw, w)
			       : f0(l, d, img, rg, ev, nw, w);
	copy_end(&c, l, ev, r, d, n, NULL, 0);
	return r;
}

HP_BODY hp_ze_result_t img_from_body(
    hp_zeCommandListAppendImageCopyFromMemoryExt_t fn, hp_ze_h l, hp_ze_h img,
    const void *s, const struct hp_ze_region *rg, uint32_t p, uint32_t sl,
    hp_ze_h ev, uint32_t nw, hp_ze_h *w, int ext)
{
	hp_zeCommandListAppendImageCopyFromMemory_t f0 =
	    (hp_zeCommandListAppendImageCopyFromMemory_t)(void *)fn;
	ENTER(ext ? fn(l, img, s, rg, p, sl, ev, nw, w)
		  : f0(l, img, s, rg, ev, nw, w));
	size_t off, n = ext && p ? region_span(rg, p, sl, &off) : 1;
	hp_copy_host(&c, s, n);
	hp_ze_result_t r = ext ? fn(l, img, s, rg, p, sl, ev, nw, w)
			       : f0(l, img, s, rg, ev, nw, w);
	copy_end(&c, l, ev, r, s, n, NULL, 0);
	return r;
}

/* Copies that ran may let deferred releases go: outside every driver
 * call, in the outermost hook only. */
static void ran(void)
{
	if (hp_hook_enter()) {
		hp_retry_deferred();
		hp_hook_leave();
	}
}

static hp_ze_result_t list_one(hp_ze_one_t fn, hp_ze_h l, int destroy)
{
	if (fn == NULL)
		return ZE_UNINIT;
	hp_ze_result_t r = fn(l);
	if (r == HP_ZE_RESULT_SUCCESS) {
		hp_ze_inflight_list_reset(l, destroy);
		ran();
	}
	return r;
}

static hp_ze_result_t list_imm(hp_zeCommandListCreateImmediate_t fn,
			       hp_ze_h c, hp_ze_h d, const void *desc,
			       hp_ze_h *l)
{
	if (fn == NULL)
		return ZE_UNINIT;
	hp_ze_result_t r = fn(c, d, desc, l);
	if (r == HP_ZE_RESULT_SUCCESS && l)
		hp_ze_inflight_immediate(*l);
	return r;
}

/* An event's or fence's wait or query: success means signalled. */
static hp_ze_result_t event_sync(hp_ze_sync_t fn, hp_ze_h e, uint64_t t)
{
	if (fn == NULL)
		return ZE_UNINIT;
	hp_ze_result_t r = fn(e, t);
	if (r == HP_ZE_RESULT_SUCCESS) {
		hp_ze_inflight_event_done(e);
		ran();
	}
	return r;
}

static hp_ze_result_t event_query(hp_ze_one_t fn, hp_ze_h e)
{
	if (fn == NULL)
		return ZE_UNINIT;
	hp_ze_result_t r = fn(e);
	if (r == HP_ZE_RESULT_SUCCESS) {
		hp_ze_inflight_event_done(e);
		ran();
	}
	return r;
}

static hp_ze_result_t fence_sync(hp_ze_sync_t fn, hp_ze_h f, uint64_t t)
{
	if (fn == NULL)
		return ZE_UNINIT;
	hp_ze_result_t r = fn(f, t);
	if (r == HP_ZE_RESULT_SUCCESS) {
		hp_ze_inflight_fence_done(f);
		ran();
	}
	return r;
}

static hp_ze_result_t fence_query(hp_ze_one_t fn, hp_ze_h f)
{
	if (fn == NULL)
		return ZE_UNINIT;
	hp_ze_result_t r = fn(f);
	if (r == HP_ZE_RESULT_SUCCESS) {
		hp_ze_inflight_fence_done(f);
		ran();
	}
	return r;
}

static hp_ze_result_t queue_exec(hp_zeCommandQueueExecuteCommandLists_t fn,
				 hp_ze_h q, uint32_t n, hp_ze_h *l, hp_ze_h f)
{
	if (fn == NULL)
		return ZE_UNINIT;
	hp_ze_result_t r = fn(q, n, l, f);
	if (r == HP_ZE_RESULT_SUCCESS)
		hp_ze_inflight_exec(q, n, l, f);
	return r;
}

static hp_ze_result_t queue_sync(hp_ze_sync_t fn, hp_ze_h q, uint64_t t)
{
	if (fn == NULL)
		return ZE_UNINIT;
	hp_ze_result_t r = fn(q, t);
	if (r == HP_ZE_RESULT_SUCCESS) {
		hp_ze_inflight_queue_synced(q);
		ran();
	}
	return r;
}

static hp_ze_result_t queue_destroy(hp_ze_one_t fn, hp_ze_h q)
{
	if (fn == NULL)
		return ZE_UNINIT;
	hp_ze_result_t r = fn(q); /* waits for the queue's work */
	if (r == HP_ZE_RESULT_SUCCESS) {
		hp_ze_inflight_queue_synced(q);
		ran();
	}
	return r;
}

/* zeCommandListHostSynchronize, whichever driver's: hooks_ze.c hands this
 * out with the driver's function kept here per slot. */
static hp_ze_result_t hp_ze_list_host_sync(hp_ze_sync_t fn, hp_ze_h l, uint64_t t)
{
	if (fn == NULL)
		return ZE_UNINIT;
	hp_ze_result_t r = fn(l, t);
	if (r == HP_ZE_RESULT_SUCCESS) {
		hp_ze_inflight_list_synced(l);
		ran();
	}
	return r;
}

#include "ze_copy_slots.h"
