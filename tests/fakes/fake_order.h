/* The legacy default stream's implicit synchronisation (included by
 * fake_copy.h before enqueue; every mode: the default, the late and the
 * timed ones).  On a GPU, work queued on the legacy stream (stream 0 of
 * an entry point without _ptsz/_ptds) waits for all the work queued
 * before it on the blocking streams (those made without
 * CU_STREAM_NON_BLOCKING, and every per-thread default stream), and work
 * queued on a blocking stream waits for the legacy work queued before it.
 * Streams run their own queues here, so without this a program that
 * mixes the legacy stream with another would see its copies land in an
 * order no GPU gives (the engine tester's legacy-ptds-order-56100197, an
 * oracle that was wrong).  At enqueue an op notes, for each stream it
 * must follow and that still has work to run, that stream's count of ops
 * queued (struct dep); before the op runs, by run_upto or by its stream's
 * worker, those streams are run that far and waited for, with the op's
 * stream unlocked: a dependency is always on earlier work, so waits never
 * form a cycle, and a stream held by the program (fake_cuda_stream_hold)
 * holds the legacy work behind it, as on a GPU.  The notes are made under
 * one lock (order_mu), so two threads' ops never each wait for the
 * other's; a program that has not used both the legacy stream and a
 * blocking one takes neither the lock nor any other stream's (the timed
 * mode's single-stream benchmarks cost what they did).  A capturing
 * stream's work is captured, not ordered.  In a forked child the work
 * its streams inherited orders nothing (its parent's holds are never
 * released there, and on a GPU a child shares no stream with its
 * parent).  Contexts are not told apart
 * (the fake has one legacy stream for all of them): more order than a
 * GPU gives, never less. */

static pthread_mutex_t order_mu = PTHREAD_MUTEX_INITIALIZER;
static int order_used[3]; /* [1] the legacy stream, [2] a blocking one */

/* 1 the legacy stream, 2 a blocking one, 0 neither. */
static int order_kind(stream_t *s)
{
	if (s == &legacy)
		return 1;
	return s->nonblock || s->capturing ? 0 : 2;
}

/* Under order_mu: o follows t's ops queued so far, if one is still to
 * run (its end too, in the timed mode's clock). */
static void order_add(struct dep *d, int *n, double *until, stream_t *t)
{
	pthread_mutex_lock(&t->mu);
	if (t->enq > t->ran && t->enq > t->at_fork) {
		d[*n].s = t, d[*n].qn = t->enq, ++*n;
		if (t->until > *until)
			*until = t->until;
	}
	pthread_mutex_unlock(&t->mu);
}

/* At enqueue on s (resolved), before o is numbered: note what o must
 * follow.  1: order_mu is held, for the caller to let go once o is
 * queued (so no op queued meanwhile is missed or waits for o). */
static int order_deps(stream_t *s, struct op *o)
{
	int kind = order_kind(s);
	if (!kind)
		return 0;
	if (!__atomic_load_n(&order_used[kind], __ATOMIC_RELAXED))
		__atomic_store_n(&order_used[kind], 1, __ATOMIC_SEQ_CST);
	if (!__atomic_load_n(&order_used[3 - kind], __ATOMIC_SEQ_CST))
		return 0;
	pthread_mutex_lock(&order_mu);
	struct dep d[NSTREAMS + NPTDS];
	int n = 0;
	double until = 0;
	if (kind == 2)
		order_add(d, &n, &until, &legacy);
	for (int k = 1; kind == 1 && k < nstreams && k < NSTREAMS; k++)
		if (order_kind(streams[k]) == 2)
			order_add(d, &n, &until, streams[k]);
	for (int k = 0; kind == 1 && k < nptds_made(); k++) {
		stream_t *t = ptds_at(k);
		if (t != NULL && order_kind(t) == 2)
			order_add(d, &n, &until, t);
	}
	o->due = until; /* the timed mode: it starts no sooner */
	if (n == 1)
		o->dep1 = d[0], o->deps = &o->dep1;
	else if (n > 1) {
		o->deps = raw((size_t)n * sizeof(struct dep));
		memcpy(o->deps, d, (size_t)n * sizeof(struct dep));
	}
	o->ndeps = n;
	return 1;
}

/* Under o's stream's lock: the first of o's dependencies not run yet
 * (NULL: none). */
static const struct dep *order_pending(const struct op *o)
{
	for (int i = 0; i < o->ndeps; i++)
		if (__atomic_load_n(&o->deps[i].s->ran, __ATOMIC_ACQUIRE) <
			    o->deps[i].qn &&
		    o->deps[i].qn > o->deps[i].s->at_fork)
			return &o->deps[i];
	return NULL;
}

/* With no stream locked: run t up to its op number qn and wait for it. */
static void run_upto(stream_t *s, const struct op *last,
		     unsigned long long upto);
static void order_wait(stream_t *t, unsigned long long qn)
{
	if (late_on())
		late_run(t, qn, 1);
	else
		run_upto(t, NULL, qn);
}
