/* The fake Level Zero driver's events and fences (included by
 * fake_ze_cmd.h).  An event is signalled when the op that signals it has
 * run (a copy, a fill, a barrier or an appended signal), or by the host;
 * a wait or a query first runs what the event stands for (the ops appended
 * up to the last one signalling it, on an immediate list or a list
 * executed on a queue) and answers SUCCESS when it is signalled, else
 * ZE_RESULT_NOT_READY (an op in a list never executed: never on a timer).
 * A fence runs its queue.  Ops run in the order they were appended; an
 * appended wait (zeCommandListAppendWaitOnEvents, or the wait list of a
 * copy, fill or barrier) first runs what its events stand for, and when one
 * stays unsignalled (its op in a list not executed) holds the rest of its
 * list, as the device would. */
#define OP_SIGNAL 1 /* a barrier or an appended signal: ev only */
#define OP_RESET 2  /* an appended reset of ev */
#define OP_FILL 3   /* dst, n bytes of pat repeated */
#define OP_WAIT 4   /* n events of wait_ev */
#define MAXWAIT 32
struct _ze_event_pool_handle_t {
	int magic;
	uint32_t n;
	struct _ze_event_handle_t *ev;
};
struct _ze_fence_handle_t {
	ze_command_queue_handle_t q;
	int signalled; /* 0 reset, 1 signalled (or never reset), 2 armed */
};
static struct _ze_fence_handle_t fences[64];
static unsigned char fill_pat[MAXOPS][16];
static ze_event_handle_t wait_ev[MAXOPS][MAXWAIT];
static int wait_depth;

/* under mu: are the events of wait op o signalled, once what they stand
 * for has run? */
static int wait_ready(struct op *o)
{
	for (size_t k = 0; k < o->n; k++) {
		ze_event_handle_t e = wait_ev[o - ops][k];
		if (e->signalled)
			continue;
		unsigned long upto = 0;
		for (int i = 0; i < MAXOPS; i++)
			if (ops[i].live && ops[i].ev == e && ops[i].seq > upto &&
			    ops[i].seq < o->seq)
				upto = ops[i].seq;
		if (upto && wait_depth < 8) {
			wait_depth++;
			run_upto(NULL, NULL, upto);
			wait_depth--;
		}
		if (!e->signalled)
			return 0;
	}
	return 1;
}

/* under mu: run o; 0: a wait not ready, o stays */
static int run_other(struct op *o)
{
	if (o->kind == OP_WAIT) {
		if (!wait_ready(o))
			return 0;
		o->live = 0;
		return 1;
	}
	if (o->kind == OP_FILL && mapped(o->dst, o->n)) {
		size_t k = (size_t)o->src; /* the pattern's size */
		for (size_t i = 0; i < o->n; i += k)
			memcpy((char *)o->dst + i, fill_pat[o - ops],
			       o->n - i < k ? o->n - i : k);
		logf_("FILL %p %zu", o->dst, o->n);
	}
	if (o->ev)
		o->ev->signalled = o->kind != OP_RESET;
	o->live = 0;
	return 1;
}

static struct op *append_op(ze_command_list_handle_t l, int kind,
			    ze_event_handle_t ev)
{
	int i = 0;
	while (i < MAXOPS && ops[i].live)
		i++;
	if (i == MAXOPS)
		return NULL;
	struct op *o = &ops[i];
	memset(o, 0, sizeof(*o));
	o->list = l, o->kind = kind, o->ev = ev, o->live = 1, o->seq = ++seq;
	return o;
}

/* under mu: a wait op for n events (0: none needed); nonzero: no room */
static int append_waits(ze_command_list_handle_t l, uint32_t n,
			ze_event_handle_t *w)
{
	if (!n || !w)
		return 0;
	if (n > MAXWAIT) {
		logf_("VIOLATION fake-limit wait list of %u events", n);
		return 1;
	}
	struct op *o = append_op(l, OP_WAIT, NULL);
	if (!o)
		return 1;
	o->n = n;
	memcpy(wait_ev[o - ops], w, n * sizeof(*w));
	return 0;
}

static ze_result_t f_pool_create(ze_context_handle_t c,
				 const ze_event_pool_desc_t *d, uint32_t n,
				 ze_device_handle_t *devs,
				 ze_event_pool_handle_t *out)
{
	(void)c, (void)n, (void)devs;
	struct _ze_event_pool_handle_t *p = calloc(1, sizeof(*p));
	if (p)
		p->ev = calloc(d->count ? d->count : 1, sizeof(*p->ev));
	if (!p || !p->ev) {
		free(p);
		return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
	}
	p->magic = 0x5050, p->n = d->count;
	*out = p;
	return ZE_RESULT_SUCCESS;
}

static ze_result_t f_pool_destroy(ze_event_pool_handle_t p)
{
	free(p->ev);
	free(p);
	return ZE_RESULT_SUCCESS;
}

static ze_result_t f_event_create(ze_event_pool_handle_t p,
				  const ze_event_desc_t *d,
				  ze_event_handle_t *out)
{
	if (d->index >= p->n)
		return ZE_RESULT_ERROR_INVALID_ARGUMENT;
	pthread_mutex_lock(&mu);
	p->ev[d->index].magic = 0x4545, p->ev[d->index].signalled = 0;
	pthread_mutex_unlock(&mu);
	*out = &p->ev[d->index];
	return ZE_RESULT_SUCCESS;
}

static ze_result_t f_event_destroy(ze_event_handle_t e)
{
	pthread_mutex_lock(&mu);
	for (int i = 0; i < MAXOPS; i++)
		if (ops[i].live && ops[i].ev == e)
			ops[i].ev = NULL;
	e->signalled = 1; /* a wait still naming it does not hold */
	pthread_mutex_unlock(&mu);
	e->magic = 0;
	return ZE_RESULT_SUCCESS;
}

static ze_result_t f_event_sync(ze_event_handle_t e, uint64_t t)
{
	(void)t;
	ZENTRY("zeEventHostSynchronize");
	unsigned long upto = 0;
	for (int i = 0; i < MAXOPS; i++)
		if (ops[i].live && ops[i].ev == e && ops[i].seq > upto)
			upto = ops[i].seq;
	if (upto)
		run_upto(NULL, NULL, upto);
	for (int i = 0; i < MAXOPS; i++)
		if (ops[i].live && ops[i].ev == e)
			RETURN(ZE_RESULT_NOT_READY); /* in a list not executed */
	RETURN(e->signalled ? ZE_RESULT_SUCCESS : ZE_RESULT_NOT_READY);
}

static ze_result_t f_event_query(ze_event_handle_t e)
{
	return f_event_sync(e, 0);
}

static ze_result_t f_event_signal(ze_event_handle_t e)
{
	ZENTRY("zeEventHostSignal");
	e->signalled = 1;
	RETURN(ZE_RESULT_SUCCESS);
}

static ze_result_t f_event_reset(ze_event_handle_t e)
{
	ZENTRY("zeEventHostReset");
	e->signalled = 0;
	RETURN(ZE_RESULT_SUCCESS);
}

static ze_result_t f_event_ts(ze_event_handle_t e, ze_kernel_timestamp_result_t *r)
{
	(void)e;
	memset(r, 0, sizeof(*r));
	return ZE_RESULT_SUCCESS;
}

static ze_result_t f_fence_create(ze_command_queue_handle_t q,
				  const ze_fence_desc_t *d, ze_fence_handle_t *out)
{
	(void)d;
	pthread_mutex_lock(&mu);
	ze_result_t r = ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
	for (int i = 0; i < 64; i++)
		if (!fences[i].q) {
			fences[i].q = q, fences[i].signalled = 1;
			*out = &fences[i];
			r = ZE_RESULT_SUCCESS;
			break;
		}
	pthread_mutex_unlock(&mu);
	return r;
}

static void fence_arm(ze_fence_handle_t f)
{
	f->signalled = 2;
}

static ze_result_t f_fence_destroy(ze_fence_handle_t f)
{
	f->q = NULL;
	return ZE_RESULT_SUCCESS;
}

/* A fence reset is unsignalled until a list executed with it has run
 * (f_queue_exec arms it); a fence never reset answers for its queue. */
static ze_result_t f_fence_sync(ze_fence_handle_t f, uint64_t t)
{
	(void)t;
	ZENTRY("zeFenceHostSynchronize");
	run_ops(NULL, f->q);
	if (f->signalled == 2) /* armed: its lists ran with the queue */
		f->signalled = 1;
	RETURN(f->signalled ? ZE_RESULT_SUCCESS : ZE_RESULT_NOT_READY);
}

static ze_result_t f_fence_query(ze_fence_handle_t f)
{
	return f_fence_sync(f, 0);
}

static ze_result_t f_fence_reset(ze_fence_handle_t f)
{
	ZENTRY("zeFenceReset");
	f->signalled = 0;
	RETURN(ZE_RESULT_SUCCESS);
}

/* ---- appended events, barriers and fills ---- */
static ze_result_t f_signal_event(ze_command_list_handle_t l, ze_event_handle_t e)
{
	ZENTRY("zeCommandListAppendSignalEvent");
	OWN_LIST(l);
	RETURN(append_op(l, OP_SIGNAL, e) ? ZE_RESULT_SUCCESS
					  : ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY);
}

static ze_result_t f_event_reset_op(ze_command_list_handle_t l, ze_event_handle_t e)
{
	ZENTRY("zeCommandListAppendEventReset");
	OWN_LIST(l);
	RETURN(append_op(l, OP_RESET, e) ? ZE_RESULT_SUCCESS
					 : ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY);
}

static ze_result_t f_wait_events(ze_command_list_handle_t l, uint32_t n,
				 ze_event_handle_t *e)
{
	ZENTRY("zeCommandListAppendWaitOnEvents");
	OWN_LIST(l);
	RETURN(append_waits(l, n, e) ? ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY
				     : ZE_RESULT_SUCCESS);
}

static ze_result_t f_barrier(ze_command_list_handle_t l, ze_event_handle_t e,
			     uint32_t nw, ze_event_handle_t *w)
{
	ZENTRY("zeCommandListAppendBarrier");
	OWN_LIST(l);
	if (append_waits(l, nw, w))
		RETURN(ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY);
	RETURN(!e || append_op(l, OP_SIGNAL, e) ? ZE_RESULT_SUCCESS
						: ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY);
}

static ze_result_t f_fill(ze_command_list_handle_t l, void *dst, const void *pat,
			  size_t k, size_t n, ze_event_handle_t e, uint32_t nw,
			  ze_event_handle_t *w)
{
	ZENTRY("zeCommandListAppendMemoryFill");
	OWN_LIST(l);
	if (!k || k > sizeof(fill_pat[0]))
		RETURN(ZE_RESULT_ERROR_INVALID_SIZE);
	if (append_waits(l, nw, w))
		RETURN(ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY);
	struct op *o = append_op(l, OP_FILL, e);
	if (!o)
		RETURN(ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY);
	o->dst = dst, o->n = n, o->src = (const void *)k;
	memcpy(fill_pat[o - ops], pat, k);
	RETURN(ZE_RESULT_SUCCESS);
}

static void rt_event(ze_event_dditable_t *t)
{
	t->pfnHostSignal = f_event_signal;
	t->pfnHostReset = f_event_reset;
	t->pfnQueryKernelTimestamp = f_event_ts;
}

static void rt_list(ze_command_list_dditable_t *t)
{
	t->pfnAppendSignalEvent = f_signal_event;
	t->pfnAppendEventReset = f_event_reset_op;
	t->pfnAppendWaitOnEvents = f_wait_events;
	t->pfnAppendBarrier = f_barrier;
	t->pfnAppendMemoryFill = f_fill;
}
