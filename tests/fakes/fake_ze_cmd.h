/* The fake Level Zero driver's memory and copies (included by fake_ze.c):
 * USM allocations, command queues and command lists.
 *
 * zeMemAllocHost and zeMemAllocShared allocate with posix_memalign inside
 * the call (FAKE_ZE_USM=new: operator new), as Intel's driver allocates
 * host memory for USM itself and registers it with the device: the memory
 * is the driver's, and an import of it by anyone else is a VIOLATION
 * (import-usm, in x_import).  zeMemAllocDevice's "device memory" is host
 * memory too, kept in the same table.
 *
 * Copies appended to a regular command list run when the queue it was
 * executed on is synchronised (zeCommandQueueSynchronize); copies appended
 * to an immediate list run at zeCommandListHostSynchronize (reached through
 * zeDriverGetExtensionFunctionAddress on loaders older than 1.6) or
 * zeCommandListDestroy, or at a wait for its signal event (the copies
 * appended up to it); a fence runs its queue: never on a timer.  At each
 * append the fake notes whether the host side was imported; when it runs,
 * a side that was imported at append and is no longer (released, or
 * unmapped) is a VIOLATION copy-after-release: the driver would have
 * DMA'd into pages it no longer holds (invariant 1).  Each copy is logged
 * "COPY src dst n". */
#include <stdint.h>

#define MAXUSM 256
static struct {
	void *p;
	size_t n;
	int kind; /* 0 free slot, 1 host, 2 shared, 3 device */
} usm[MAXUSM];

/* under mu */
static int usm_find(const void *p)
{
	for (int i = 0; i < MAXUSM; i++)
		if (usm[i].kind && (uintptr_t)p - (uintptr_t)usm[i].p < usm[i].n)
			return i;
	return -1;
}

/* under mu: does [p, p+n) overlap a USM allocation of this driver? */
static int usm_overlaps(const void *p, size_t n)
{
	for (int i = 0; i < MAXUSM; i++)
		if (usm[i].kind && (uintptr_t)p < (uintptr_t)usm[i].p + usm[i].n &&
		    (uintptr_t)usm[i].p < (uintptr_t)p + n)
			return 1;
	return 0;
}

static ze_result_t usm_alloc(int kind, size_t n, size_t align, void **out)
{
	void *p = NULL;
	/* allocated inside the call, as the driver does under its lock: a
	 * call back into the driver from the allocation is a VIOLATION */
	in_call = 1;
	if (getenv("FAKE_ZE_USM") && !strcmp(getenv("FAKE_ZE_USM"), "new") &&
	    _Znwm)
		p = _Znwm(n);
	else if (posix_memalign(&p, align < 64 ? 64 : align, n))
		p = NULL;
	in_call = 0;
	pthread_mutex_lock(&mu);
	int i = 0;
	while (i < MAXUSM && usm[i].kind)
		i++;
	if (!p || i == MAXUSM) {
		pthread_mutex_unlock(&mu);
		free(p);
		return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
	}
	usm[i].p = p, usm[i].n = n, usm[i].kind = kind;
	logf_("USM %d %p %zu", kind, p, n);
	pthread_mutex_unlock(&mu);
	*out = p;
	return ZE_RESULT_SUCCESS;
}

static ze_result_t f_alloc_host(ze_context_handle_t c,
				const ze_host_mem_alloc_desc_t *d, size_t n,
				size_t align, void **out)
{
	(void)c, (void)d;
	{
		ZENTRY("zeMemAllocHost");
		NEED_INIT;
		pthread_mutex_unlock(&mu);
	}
	return usm_alloc(1, n, align, out);
}

static ze_result_t f_alloc_shared(ze_context_handle_t c,
				  const ze_device_mem_alloc_desc_t *dd,
				  const ze_host_mem_alloc_desc_t *hd, size_t n,
				  size_t align, ze_device_handle_t dev,
				  void **out)
{
	(void)c, (void)dd, (void)hd, (void)dev;
	{
		ZENTRY("zeMemAllocShared");
		NEED_INIT;
		pthread_mutex_unlock(&mu);
	}
	return usm_alloc(2, n, align, out);
}

static ze_result_t f_alloc_device(ze_context_handle_t c,
				  const ze_device_mem_alloc_desc_t *dd,
				  size_t n, size_t align,
				  ze_device_handle_t dev, void **out)
{
	(void)c, (void)dd, (void)dev;
	{
		ZENTRY("zeMemAllocDevice");
		NEED_INIT;
		pthread_mutex_unlock(&mu);
	}
	return usm_alloc(3, n, align, out);
}

static ze_result_t f_mem_free(ze_context_handle_t c, void *p)
{
	(void)c;
	ZENTRY("zeMemFree");
	NEED_INIT;
	int i = usm_find(p);
	if (i < 0 || usm[i].p != p)
		RETURN(ZE_RESULT_ERROR_INVALID_ARGUMENT);
	usm[i].kind = 0;
	pthread_mutex_unlock(&mu);
	in_call = 1;
	if (getenv("FAKE_ZE_USM") && !strcmp(getenv("FAKE_ZE_USM"), "new"))
		free(p); /* operator delete is free underneath */
	else
		free(p);
	in_call = 0;
	return ZE_RESULT_SUCCESS;
}

/* Host pointers: UNKNOWN, as Intel's driver answers (imported or not). */
static ze_result_t f_mem_props(ze_context_handle_t c, const void *p,
			       ze_memory_allocation_properties_t *pr,
			       ze_device_handle_t *dev)
{
	(void)c;
	ZENTRY("zeMemGetAllocProperties");
	NEED_INIT;
	int i = usm_find(p);
	static const ze_memory_type_t t[] = {
	    ZE_MEMORY_TYPE_UNKNOWN, ZE_MEMORY_TYPE_HOST, ZE_MEMORY_TYPE_SHARED,
	    ZE_MEMORY_TYPE_DEVICE};
	pr->type = i < 0 ? ZE_MEMORY_TYPE_UNKNOWN : t[usm[i].kind];
	pr->id = i < 0 ? 0 : (uint64_t)i + 1;
	pr->pageSize = 4096;
	if (dev)
		*dev = i >= 0 && usm[i].kind != 1 ? &gpu : NULL;
	RETURN(ZE_RESULT_SUCCESS);
}

/* ---- queues, lists, copies ---- */
#define MAXOPS 1024
struct _ze_command_queue_handle_t {
	int magic;
};
struct _ze_command_list_handle_t {
	int magic, immediate, closed;
};
struct _ze_event_handle_t {
	int magic, signalled;
};
#define MAXLISTS 64
static struct _ze_command_list_handle_t lists[MAXLISTS];
static struct _ze_command_queue_handle_t queues[8];
static struct op {
	ze_command_list_handle_t list;
	ze_command_queue_handle_t queue; /* executed on; NULL: not yet */
	void *dst;
	const void *src;
	size_t n;
	int dst_imp, src_imp; /* imported when appended */
	int live;
	ze_event_handle_t ev; /* signalled when it ran */
	unsigned long seq;
	int kind; /* OP_COPY, or fake_ze_event.h's OP_SIGNAL, OP_RESET, OP_FILL */
} ops[MAXOPS];
#define OP_COPY 0
static int run_other(struct op *o);
static void fence_arm(ze_fence_handle_t f);
static int append_waits(ze_command_list_handle_t l, uint32_t n,
			ze_event_handle_t *w);
static unsigned long seq;

/* under mu: run the copies of list l (NULL: any) on queue q (NULL: not
 * submitted, immediate), appended up to upto, in the order appended; an
 * appended wait whose events its run cannot signal holds the rest of its
 * list (fake_ze_event.h) */
static void run_upto(ze_command_list_handle_t l, ze_command_queue_handle_t q,
		     unsigned long upto)
{
	ze_command_list_handle_t held_lists[MAXLISTS];
	int nheld_lists = 0;
	for (;;) {
		struct op *o = NULL;
		for (int i = 0; i < MAXOPS; i++) {
			struct op *c = &ops[i];
			if (!c->live || (l && c->list != l) || (q && c->queue != q) ||
			    (!q && !c->list->immediate && !c->queue) || c->seq > upto ||
			    (o && o->seq < c->seq))
				continue;
			int h = 0;
			for (int k = 0; k < nheld_lists && !h; k++)
				h = held_lists[k] == c->list;
			if (!h)
				o = c;
		}
		if (!o)
			break;
		if (o->kind != OP_COPY) {
			if (!run_other(o) && nheld_lists < MAXLISTS)
				held_lists[nheld_lists++] = o->list;
			continue;
		}
		int bad = 0;
		if ((o->src_imp && find(o->src, o->n, 0) < 0) ||
		    (o->dst_imp && find(o->dst, o->n, 0) < 0)) {
			logf_("VIOLATION copy-after-release %p %p %zu", o->src,
			      o->dst, o->n);
			bad = 1;
		}
		if (!mapped(o->src, o->n) || !mapped(o->dst, o->n)) {
			logf_("VIOLATION copy-unmapped %p %p %zu", o->src,
			      o->dst, o->n);
			bad = 1;
		}
		if (!bad)
			memcpy(o->dst, o->src, o->n);
		logf_("COPY %p %p %zu", o->src, o->dst, o->n);
		o->live = 0;
		if (o->ev)
			o->ev->signalled = 1;
	}
}

static void run_ops(ze_command_list_handle_t l, ze_command_queue_handle_t q)
{
	run_upto(l, q, ~0ul);
}

static ze_result_t append(ze_command_list_handle_t l, void *dst,
			  const void *src, size_t n, ze_event_handle_t ev)
{
	int i = 0;
	while (i < MAXOPS && ops[i].live)
		i++;
	if (i == MAXOPS)
		return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
	struct op *o = &ops[i];
	o->list = l, o->queue = NULL, o->dst = dst, o->src = src, o->n = n;
	o->dst_imp = find(dst, n, 0) >= 0, o->src_imp = find(src, n, 0) >= 0;
	o->live = 1;
	o->ev = ev, o->seq = ++seq, o->kind = OP_COPY;
	logf_("APPEND %p %p %zu imported=%d", src, dst, n,
	      o->src_imp || o->dst_imp);
	return ZE_RESULT_SUCCESS;
}

#define OWN_LIST(l)                                                           \
	if ((l) < lists || (l) >= lists + MAXLISTS || !(l)->magic)            \
	RETURN(ZE_RESULT_ERROR_INVALID_NULL_HANDLE)

static ze_command_list_handle_t new_list(int immediate)
{
	for (int i = 0; i < MAXLISTS; i++)
		if (!lists[i].magic) {
			lists[i].magic = 0x4c4c, lists[i].immediate = immediate;
			lists[i].closed = 0;
			return &lists[i];
		}
	return NULL;
}

static ze_result_t f_list_create(ze_context_handle_t c, ze_device_handle_t d,
				 const ze_command_list_desc_t *desc,
				 ze_command_list_handle_t *out)
{
	(void)c, (void)d, (void)desc;
	ZENTRY("zeCommandListCreate");
	NEED_INIT;
	*out = new_list(0);
	RETURN(*out ? ZE_RESULT_SUCCESS : ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY);
}

static ze_result_t f_list_create_imm(ze_context_handle_t c,
				     ze_device_handle_t d,
				     const ze_command_queue_desc_t *desc,
				     ze_command_list_handle_t *out)
{
	(void)c, (void)d, (void)desc;
	ZENTRY("zeCommandListCreateImmediate");
	NEED_INIT;
	*out = new_list(1);
	RETURN(*out ? ZE_RESULT_SUCCESS : ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY);
}

static ze_result_t f_list_close(ze_command_list_handle_t l)
{
	ZENTRY("zeCommandListClose");
	OWN_LIST(l);
	l->closed = 1;
	RETURN(ZE_RESULT_SUCCESS);
}

/* Reset and destroy drop the copies not submitted; submitted ones still
 * run at their queue's synchronisation. */
static void drop_unsubmitted(ze_command_list_handle_t l)
{
	for (int i = 0; i < MAXOPS; i++)
		if (ops[i].live && ops[i].list == l && !ops[i].queue &&
		    !l->immediate)
			ops[i].live = 0;
}

static ze_result_t f_list_reset(ze_command_list_handle_t l)
{
	ZENTRY("zeCommandListReset");
	OWN_LIST(l);
	drop_unsubmitted(l);
	l->closed = 0;
	RETURN(ZE_RESULT_SUCCESS);
}

static ze_result_t f_list_destroy(ze_command_list_handle_t l)
{
	ZENTRY("zeCommandListDestroy");
	OWN_LIST(l);
	if (l->immediate)
		run_ops(l, NULL); /* destroy waits for an immediate list */
	drop_unsubmitted(l);
	l->magic = 0;
	RETURN(ZE_RESULT_SUCCESS);
}

static ze_result_t f_list_host_sync(ze_command_list_handle_t l, uint64_t t)
{
	(void)t;
	ZENTRY("zeCommandListHostSynchronize");
	OWN_LIST(l);
	run_ops(l, NULL);
	RETURN(ZE_RESULT_SUCCESS);
}

static ze_result_t f_copy(ze_command_list_handle_t l, void *dst,
			  const void *src, size_t n, ze_event_handle_t ev,
			  uint32_t nw, ze_event_handle_t *w)
{
	ZENTRY("zeCommandListAppendMemoryCopy");
	OWN_LIST(l);
	if (append_waits(l, nw, w))
		RETURN(ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY);
	RETURN(append(l, dst, src, n, ev));
}

/* A region copy: appended as the rows it covers, each a copy of its own
 * (2D regions of equal pitch; enough for the tests). */
static ze_result_t f_copy_region(ze_command_list_handle_t l, void *dst,
				 const ze_copy_region_t *dr, uint32_t dpitch,
				 uint32_t dspitch, const void *src,
				 const ze_copy_region_t *sr, uint32_t spitch,
				 uint32_t sspitch, ze_event_handle_t ev,
				 uint32_t nw, ze_event_handle_t *w)
{
	(void)dspitch, (void)sspitch;
	ZENTRY("zeCommandListAppendMemoryCopyRegion");
	OWN_LIST(l);
	ze_result_t r = append_waits(l, nw, w) ? ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY
					       : ZE_RESULT_SUCCESS;
	for (uint32_t y = 0; y < sr->height && !r; y++)
		r = append(l, (char *)dst + (size_t)(dr->originY + y) * dpitch + dr->originX,
			   (const char *)src + (size_t)(sr->originY + y) * spitch + sr->originX,
			   sr->width, y + 1 == sr->height ? ev : NULL);
	RETURN(r);
}

static ze_result_t f_copy_ctx(ze_command_list_handle_t l, void *dst,
			      ze_context_handle_t c, const void *src, size_t n,
			      ze_event_handle_t ev, uint32_t nw,
			      ze_event_handle_t *w)
{
	(void)c;
	ZENTRY("zeCommandListAppendMemoryCopyFromContext");
	OWN_LIST(l);
	if (append_waits(l, nw, w))
		RETURN(ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY);
	RETURN(append(l, dst, src, n, ev));
}

static ze_result_t f_queue_create(ze_context_handle_t c, ze_device_handle_t d,
				  const ze_command_queue_desc_t *desc,
				  ze_command_queue_handle_t *out)
{
	(void)c, (void)d, (void)desc;
	ZENTRY("zeCommandQueueCreate");
	NEED_INIT;
	*out = NULL;
	for (int i = 0; i < 8 && !*out; i++)
		if (!queues[i].magic)
			queues[i].magic = 0x5151, *out = &queues[i];
	RETURN(*out ? ZE_RESULT_SUCCESS : ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY);
}

static ze_result_t f_queue_destroy(ze_command_queue_handle_t q)
{
	ZENTRY("zeCommandQueueDestroy");
	run_ops(NULL, q); /* destroy waits for the queue */
	q->magic = 0;
	RETURN(ZE_RESULT_SUCCESS);
}

static ze_result_t f_queue_exec(ze_command_queue_handle_t q, uint32_t n,
				ze_command_list_handle_t *l, ze_fence_handle_t f)
{
	ZENTRY("zeCommandQueueExecuteCommandLists");
	if (f)
		fence_arm(f);
	for (uint32_t k = 0; k < n; k++)
		for (int i = 0; i < MAXOPS; i++)
			if (ops[i].live && ops[i].list == l[k])
				ops[i].queue = q;
	RETURN(ZE_RESULT_SUCCESS);
}

static ze_result_t f_queue_sync(ze_command_queue_handle_t q, uint64_t t)
{
	(void)t;
	ZENTRY("zeCommandQueueSynchronize");
	run_ops(NULL, q);
	RETURN(ZE_RESULT_SUCCESS);
}

#include "fake_ze_event.h"
