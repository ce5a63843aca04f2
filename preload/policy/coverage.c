/* The coverage check (HOSTPIN_COVERAGE).  Registering a block changes what
 * an async copy from or into it means; hostpin restores the old meaning in
 * its copy hooks.  Every CUDA runtime, static or dynamic, reaches the
 * driver's copy entry points through driver lookups, which hostpin wraps:
 * a known entry point with its hook, one hostpin does not know (a newer
 * CUDA minor, a form older than any it hooks) with a stub that keeps
 * pageable semantics (unknown.c).  So a name a loaded object merely
 * exports changes nothing: a runtime's new copy functions reach the
 * driver through lookups like its old ones.  What no lookup sees is a
 * call linked straight to the driver by a name hostpin does not define:
 * an object that imports such a driver copy entry point.  While one is
 * loaded, hostpin registers nothing; when one is loaded while blocks are
 * registered, every registered block, cached ones included, is
 * unregistered once its copies completed, and stays so.  hostpin reads the
 * loaded objects' references again whenever objects were loaded or
 * unloaded, at each large allocation and after each guarded copy through
 * a registered block. */
#include <link.h>
#include <string.h>

#include "../hooks.h"
#include "../base/symtab.h"

/* Driver copy entry points that touch device memory only (no hook
 * needed), without their "_ptsz" suffix. */
static const char *const device_only[] = {
	"cuMemcpyDtoDAsync", "cuMemcpyDtoDAsync_v2", "cuMemcpyPeerAsync",
};

static size_t base_len(const char *s)
{
	size_t n = strlen(s);
	if (n > 5 && strcmp(s + n - 5, "_ptsz") == 0)
		n -= 5;
	return n;
}

int hp_coverage_unguarded(const char *s)
{
	/* an asynchronous driver copy (a synchronous one has completed when
	 * it returns, registered memory or not) */
	if (strncmp(s, "cuMemcpy", 8) != 0 || !strstr(s, "Async") ||
	    hp_cudrv_wrapped_name(s))
		return 0;
	size_t n = base_len(s);
	for (size_t i = 0; i < sizeof(device_only) / sizeof(device_only[0]);
	     i++)
		if (strlen(device_only[i]) == n &&
		    strncmp(device_only[i], s, n) == 0)
			return 0;
	return 1;
}

struct scan {
	uintptr_t self;          /* an address in hostpin's own object */
	const char *obj, *name;  /* the first unguarded reference found */
	char objbuf[256], namebuf[96];
};

static int check_ref(const char *name, void *arg)
{
	struct scan *sc = arg;
	if (!hp_coverage_unguarded(name))
		return 0;
	hp_snprintf(sc->namebuf, sizeof(sc->namebuf), "%s", name);
	sc->name = sc->namebuf;
	return 1;
}

static int each_obj(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct scan *sc = arg;
	(void)size;
	if (sc->name)
		return 0;
	/* hostpin's own references are its own business.  (No dladdr here:
	 * it takes the loader's lock, which a thread running constructors in
	 * dlopen holds while it may allocate and wait for cov_mu.) */
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && sc->self - lo < ph->p_memsz)
			return 0;
	}
	if (hp_elf_each_ref(info->dlpi_addr, info->dlpi_phdr,
			    info->dlpi_phnum, check_ref, sc)) {
		hp_snprintf(sc->objbuf, sizeof(sc->objbuf), "%s",
			    info->dlpi_name && info->dlpi_name[0]
				? info->dlpi_name
				: "the executable");
		sc->obj = sc->objbuf;
	}
	return 0;
}

static pthread_mutex_t cov_mu = PTHREAD_MUTEX_INITIALIZER;
static unsigned long long cov_gen = ~0ull; /* objects last scanned */
static int cov_bad;                          /* what that scan found */
static _Atomic int cov_bad_pub;              /* cov_bad, read without cov_mu */

int hp_coverage_refuses(const hp_backend_t *b, const char **why)
{
	if (b == &hp_backend_auto)
		b = hp_backend_auto_chosen();
	/* Only CUDA registration changes what a CUDA copy means. */
	if (b != &hp_backend_cuda || hp_opt[HP_OPT_COVERAGE] == 1)
		return 0;
	static struct scan sc; /* under cov_mu: too big for some stacks */
	int newly = 0;
	pthread_mutex_lock(&cov_mu);
	unsigned long long gen = hp_dl_generation();
	if (gen != cov_gen) {
		memset(&sc, 0, sizeof(sc));
		sc.self = (uintptr_t)hp_coverage_refuses;
		dl_iterate_phdr(each_obj, &sc);
		cov_gen = gen;
		if (sc.name && !cov_bad) {
			hp_log(HP_LOG_WARN,
			       "%s calls %s, a driver copy entry point hostpin "
			       "does not guard, by a linked reference: blocks "
			       "are not registered, and registered ones are "
			       "unregistered once their copies complete "
			       "(HOSTPIN_COVERAGE=ignore registers them anyway; "
			       "see \"Which copies are guarded\" in hostpin-reference(7))",
			       sc.obj, sc.name);
			newly = 1;
		}
		cov_bad = sc.name != NULL;
		/* release: pairs with the acquire in hp_coverage_bad */
		atomic_store_explicit(&cov_bad_pub, cov_bad,
				      memory_order_release);
	}
	int bad = cov_bad;
	pthread_mutex_unlock(&cov_mu);
	if (bad)
		*why = "unguarded copy entry point linked";
	else if (atomic_load_explicit(&hp_unknown_overflow,
				      memory_order_relaxed)) {
		bad = 1;
		*why = "too many unknown copy entry points";
	}
	/* Not under cov_mu: unregistering calls the driver. */
	if (newly)
		hp_pin_unregister_all();
	return bad;
}

void hp_coverage_poll(void)
{
	const char *why;
	if (atomic_load_explicit(&hp_ctr.pinned_blocks_now,
				 memory_order_relaxed) == 0 ||
	    hp_opt[HP_OPT_COVERAGE] == 1 || hp_in_child)
		return;
	HP_GUARDED(hp_coverage_refuses(hp_backend, &why));
}

int hp_coverage_bad(void)
{
	return atomic_load_explicit(&cov_bad_pub, memory_order_acquire);
}
