/* Resolution: the one view of the loaded objects (dl_iterate_phdr, never
 * dladdr, whose loader lock a dlopen running constructors holds), their
 * generation and unload epoch, and where each hook forwards to.  See
 * resolve.h. */
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>

#include "resolve.h"

_Atomic unsigned long hp_dl_epoch;
HP_TLS const void *hp_alloc_ra;

/* ---- the set of loaded objects ---- */
static int gen_of(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	*(unsigned long long *)arg =
	    info->dlpi_adds * 1000003ull + info->dlpi_subs;
	return 1; /* the counters are the same in every entry */
}

unsigned long long hp_dl_generation(void)
{
	unsigned long long g = 0;
	dl_iterate_phdr(gen_of, &g);
	return g;
}

void hp_obj_fill(const struct dl_phdr_info *info, hp_obj_t *o)
{
	*o = (hp_obj_t){info->dlpi_addr, info->dlpi_phdr, info->dlpi_phnum,
			UINTPTR_MAX, 0, NULL, hp_dl_epoch_now()};
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t a = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_DYNAMIC)
			o->dyn = (const void *)a;
		if (ph->p_type != PT_LOAD)
			continue;
		if (a < o->lo)
			o->lo = a;
		if (a + ph->p_memsz > o->hi)
			o->hi = a + ph->p_memsz;
	}
}

static int holds(const struct dl_phdr_info *info, uintptr_t a)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_LOAD &&
		    a - (info->dlpi_addr + ph->p_vaddr) < ph->p_memsz)
			return 1;
	}
	return 0;
}

struct of {
	uintptr_t a;
	hp_obj_t *o;
	struct link_map *lm; /* its handle, for a lookup in its scope */
};

static int of_one(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	struct of *q = arg;
	if (!holds(info, q->a))
		return 0;
	hp_obj_fill(info, q->o);
	/* dl_iterate_phdr holds the loader's list lock: the list is stable,
	 * and a link_map is the handle dlopen would return for it. */
	for (struct link_map *l = _r_debug.r_map; l; l = l->l_next)
		if ((const void *)l->l_ld == q->o->dyn)
			q->lm = l;
	return 1;
}

int hp_obj_of(const void *addr, hp_obj_t *o)
{
	struct of q = {(uintptr_t)addr, o, NULL};
	return dl_iterate_phdr(of_one, &q);
}

static int same_obj(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	const hp_obj_t *o = arg;
	return info->dlpi_addr == o->base && info->dlpi_phdr == o->phdr;
}

int hp_obj_alive(hp_obj_t *o)
{
	unsigned long ep = hp_dl_epoch_now();
	if (o->epoch == ep)
		return 1;
	if (!dl_iterate_phdr(same_obj, o))
		return 0;
	o->epoch = ep;
	return 1;
}

int hp_is_self(const void *addr)
{
	static _Atomic uintptr_t lo, hi;
	/* relaxed: both are written with the same values by any thread */
	uintptr_t l = atomic_load_explicit(&lo, memory_order_relaxed),
		  h = atomic_load_explicit(&hi, memory_order_relaxed);
	if (h == 0) {
		hp_obj_t o;
		if (!hp_obj_of((const void *)hp_is_self, &o))
			return 0;
		l = o.lo, h = o.hi;
		atomic_store_explicit(&lo, l, memory_order_relaxed);
		atomic_store_explicit(&hi, h, memory_order_relaxed);
	}
	return (uintptr_t)addr - l < h - l;
}

/* ---- resolution ---- */
static void *resolve(const void *ra, const char *name, hp_obj_t *o, int *have)
{
	hp_dl_resolve();
	struct of q = {(uintptr_t)ra, o, NULL};
	*have = ra && dl_iterate_phdr(of_one, &q);
	int self = *have && hp_is_self(ra);
	const char *ver = *have && !self ? hp_elf_ref_version(o->base, o->phdr,
							     o->phnum, name)
					 : NULL;
	void *fn;
	/* From here, RTLD_NEXT is the global scope after hostpin; then the
	 * caller's own scope (its searchlist: itself and what it needs),
	 * where a plug-in opened RTLD_LOCAL finds its runtime.  The version
	 * its reference asks for picks between two runtimes. */
	HP_GUARDED(fn = ver ? hp_dlvsym_next(RTLD_NEXT, name, ver)
			    : hp_dlsym_next(RTLD_NEXT, name);
		   if (fn == NULL && q.lm && !self) {
			   fn = ver ? hp_dlvsym_next(q.lm, name, ver)
				    : hp_dlsym_next(q.lm, name);
			   if (fn && hp_is_self(fn))
				   fn = NULL; /* the caller's scope is global */
		   }
		   /* no trace of hostpin's own misses in the program's
		    * dlerror() */
		   if (fn == NULL) dlerror());
	return fn;
}

void *hp_resolve_for(const void *ra, const char *name)
{
	hp_obj_t o;
	int have;
	return resolve(ra, name, &o, &have);
}

/* Write entry e in place; skipped if another writer holds it (the answer
 * is only a cache). */
static void fwd_write(hp_fwd_ent_t *e, const hp_fwd_val_t *v)
{
	unsigned s = atomic_load_explicit(&e->seq, memory_order_relaxed);
	if ((s & 1) || !atomic_compare_exchange_strong_explicit(
			   &e->seq, &s, s + 1, memory_order_relaxed,
			   memory_order_relaxed))
		return;
	/* release fence: the odd sequence is seen before any new field */
	atomic_thread_fence(memory_order_release);
	atomic_store_explicit(&e->lo, v->lo, memory_order_relaxed);
	atomic_store_explicit(&e->len, v->len, memory_order_relaxed);
	atomic_store_explicit(&e->epoch, v->epoch, memory_order_relaxed);
	atomic_store_explicit(&e->gen, v->gen, memory_order_relaxed);
	atomic_store_explicit(&e->fn, v->fn, memory_order_relaxed);
	/* release: pairs with the acquire in hp_fwd_read */
	atomic_store_explicit(&e->seq, s + 2, memory_order_release);
}

void *hp_fwd_slow(hp_fwd_t *f, const void *ra)
{
	unsigned long ep = hp_dl_epoch_now();
	unsigned long long gen = hp_dl_generation();
	uintptr_t a = (uintptr_t)ra;
	for (int i = 0; i < HP_FWD_WAYS; i++) {
		hp_fwd_val_t v;
		if (hp_fwd_read(&f->e[i], &v) && a - v.lo < v.len &&
		    v.epoch == ep && v.gen == gen)
			return v.fn; /* a miss, and nothing loaded since */
	}
	hp_obj_t o;
	int have;
	void *fn = resolve(ra, f->name, &o, &have);
	if (!have)
		o.lo = a, o.hi = a + 1; /* code outside any object: this site */
	if (fn == NULL)
		hp_log(HP_LOG_INFO, "%s: no definition after hostpin in its "
		       "caller's scope (%p)", f->name, ra);
	hp_log(HP_LOG_DEBUG, "%s: forwarding for callers in %p-%p resolved "
	       "(epoch %lu)", f->name, (void *)o.lo, (void *)o.hi, ep);
	/* The way to write: this object's old answer, else a stale one (made
	 * before an unload or load), else the next in turn. */
	unsigned w = HP_FWD_WAYS;
	for (int i = 0; i < HP_FWD_WAYS && w == HP_FWD_WAYS; i++) {
		hp_fwd_val_t v;
		if (hp_fwd_read(&f->e[i], &v) && v.len && v.lo == o.lo)
			w = (unsigned)i;
	}
	for (int i = 0; i < HP_FWD_WAYS && w == HP_FWD_WAYS; i++) {
		hp_fwd_val_t v;
		if (hp_fwd_read(&f->e[i], &v) &&
		    (v.len == 0 || v.epoch != ep || v.gen != gen))
			w = (unsigned)i;
	}
	if (w == HP_FWD_WAYS)
		w = atomic_fetch_add_explicit(&f->rr, 1, memory_order_relaxed) %
		    HP_FWD_WAYS;
	hp_fwd_val_t n = {o.lo, o.hi - o.lo, ep, gen, fn};
	fwd_write(&f->e[w], &n);
	return fn;
}

/* ---- device objects ---- */
#define MAX_DEV 32
struct devs {
	unsigned long long gen;
	int n;
	uintptr_t lo[MAX_DEV], hi[MAX_DEV];
};
static struct devs devs = {~0ull, 0, {0}, {0}}; /* under dev_mu */
static pthread_mutex_t dev_mu = PTHREAD_MUTEX_INITIALIZER;

static int dev_one(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	static const char *const marks[] = {
	    "cuGetProcAddress", "cudaGetDriverEntryPoint", "zeInit",
	    "zeGetDriverProcAddrTable"};
	struct devs *d = arg;
	if (d->n == MAX_DEV || holds(info, (uintptr_t)hp_is_self))
		return 0;
	for (unsigned i = 0; i < sizeof(marks) / sizeof(marks[0]); i++)
		if (hp_elf_lookup(info->dlpi_addr, info->dlpi_phdr,
				  info->dlpi_phnum, marks[i])) {
			hp_obj_t o;
			hp_obj_fill(info, &o);
			d->lo[d->n] = o.lo, d->hi[d->n] = o.hi, d->n++;
			break;
		}
	return 0;
}

int hp_in_device_obj(const void *addr)
{
	/* A forked child makes no device call, so whose the caller is does
	 * not matter there; and another thread of the parent may have held
	 * the loader's list lock at the fork (inside dl_iterate_phdr), which
	 * the child would wait for for ever (forked loader) */
	if (hp_in_child)
		return 0;
	unsigned long long gen = hp_dl_generation();
	uintptr_t a = (uintptr_t)addr;
	pthread_mutex_lock(&dev_mu);
	int fresh = devs.gen == gen;
	pthread_mutex_unlock(&dev_mu);
	if (!fresh) {
		/* scanned without dev_mu: dl_iterate_phdr holds the loader's
		 * list lock */
		struct devs d = {gen, 0, {0}, {0}};
		dl_iterate_phdr(dev_one, &d);
		pthread_mutex_lock(&dev_mu);
		devs = d;
		pthread_mutex_unlock(&dev_mu);
	}
	int in = 0;
	pthread_mutex_lock(&dev_mu);
	for (int i = 0; i < devs.n && !in; i++)
		in = a - devs.lo[i] < devs.hi[i] - devs.lo[i];
	pthread_mutex_unlock(&dev_mu);
	return in;
}

/* ---- who allocates through operator new ----
 * A C++ driver or runtime allocates with operator new, whose call into
 * malloc comes from the C++ library: then the frame above operator new
 * says who asked.  Walked with the C++ runtime's own unwinder (libgcc_s,
 * loaded in any process with C++ in it), read from its symbol table. */
struct _Unwind_Context;
typedef int (*trace_fn)(struct _Unwind_Context *, void *);
static int (*unwind_backtrace)(trace_fn, void *);
static uintptr_t (*unwind_ip)(struct _Unwind_Context *);

struct walk {
	uintptr_t lo, hi; /* the C++ library's span */
	int seen, n;
	uintptr_t caller;
};

static int walk_one(struct _Unwind_Context *c, void *arg)
{
	struct walk *w = arg;
	uintptr_t ip = unwind_ip(c);
	if (++w->n > 64)
		return 5; /* _URC_END_OF_STACK: stop */
	if (ip - w->lo < w->hi - w->lo) {
		w->seen = 1;
	} else if (w->seen) {
		w->caller = ip - 1; /* inside the call instruction */
		return 5;
	}
	return 0; /* _URC_NO_REASON: go on */
}

static const void *new_caller(const void *ra)
{
	hp_obj_t o, g;
	if (!hp_obj_of(ra, &o) || (!hp_obj_sym(&o, "_Znwm") &&
				   !hp_obj_sym(&o, "_ZnwmSt11align_val_t")))
		return NULL; /* not operator new's library */
	/* acquire: pairs with the release below; unwind_backtrace is set */
	if (!__atomic_load_n((void **)&unwind_ip, __ATOMIC_ACQUIRE)) {
		if (!hp_obj_find("libgcc_s.so.1", NULL, &g))
			return NULL;
		void *bt = hp_obj_sym(&g, "_Unwind_Backtrace"),
		     *ip = hp_obj_sym(&g, "_Unwind_GetIP");
		if (!bt || !ip)
			return NULL;
		/* racing threads store the same values */
		*(void **)&unwind_backtrace = bt;
		__atomic_store_n((void **)&unwind_ip, ip, __ATOMIC_RELEASE);
	}
	struct walk w = {o.lo, o.hi, 0, 0, 0};
	unwind_backtrace(walk_one, &w);
	return (const void *)w.caller;
}

int hp_alloc_from_device(void)
{
	const void *ra = hp_alloc_ra;
	if (ra == NULL || hp_in_child) /* the child: hp_in_device_obj's */
		return 0;
	if (hp_in_device_obj(ra))
		return 1;
	const void *up = new_caller(ra);
	return up && hp_in_device_obj(up);
}

/* ---- unloading ---- */
#ifndef HP_EMBEDDED_TEST
HP_EXPORT int dlclose(void *h)
{
	static int (*_Atomic next)(void *);
	/* acquire: pairs with the release below */
	int (*fn)(void *) = atomic_load_explicit(&next, memory_order_acquire);
	if (fn == NULL) {
		hp_dl_resolve();
		HP_GUARDED(*(void **)&fn = hp_dlsym_next(RTLD_NEXT, "dlclose"));
		if (fn == NULL)
			return -1;
		atomic_store_explicit(&next, fn, memory_order_release);
	}
	int r = fn(h);
	/* release: pairs with the acquire in hp_dl_epoch_now; whatever was
	 * unloaded is gone before anyone sees the new epoch. */
	atomic_fetch_add_explicit(&hp_dl_epoch, 1, memory_order_release);
	return r;
}
#endif
