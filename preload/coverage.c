/* The coverage check (HOSTPIN_COVERAGE).  Registering a block changes what
 * an async copy from or into it means; hostpin restores the old meaning in
 * its copy hooks.  A loaded object that exports a copy entry point hostpin
 * does not know (a newer driver or runtime, a layer with copies of its own)
 * could copy through a registered block unguarded, so before registering
 * with a device hostpin reads every loaded object's dynamic symbols, again
 * whenever objects were loaded or unloaded, and registers nothing while any
 * unknown one is there.  When the check newly fails (such an object was
 * loaded while blocks were registered), every registered block, cached
 * ones included, is unregistered once its copies completed, and stays so;
 * hostpin looks at the loaded objects again at each large allocation and
 * after each guarded copy through a registered block. */
#include <link.h>
#include <string.h>

#include "hooks.h"
#include "symtab.h"

/* Copy entry points that touch host memory and that hostpin guards, that
 * touch device memory only, or that (runtime) reach the driver's guarded
 * ones; and the CUDA < 3.2 forms a current driver still exports for old
 * binaries.  Names without their "_ptsz" suffix. */
static const char *const known[] = {
	/* guarded: driver */
	"cuMemcpyHtoDAsync_v2", "cuMemcpyDtoHAsync_v2", "cuMemcpyAsync",
	"cuMemcpy2DAsync_v2", "cuMemcpy3DAsync_v2", "cuMemcpyHtoAAsync_v2",
	"cuMemcpyAtoHAsync_v2", "cuMemcpyBatchAsync", "cuMemcpyBatchAsync_v2",
	"cuMemcpy3DBatchAsync", "cuMemcpy3DBatchAsync_v2",
	"cuMemcpy3DPeerAsync",
	/* guarded: runtime */
	"cudaMemcpyAsync", "cudaMemcpy2DAsync", "cudaMemcpy3DAsync",
	"cudaMemcpy3DPeerAsync",
	"cudaMemcpyToSymbolAsync", "cudaMemcpyFromSymbolAsync",
	"cudaMemcpyBatchAsync", "cudaMemcpy3DBatchAsync",
	/* runtime copies that reach the driver's guarded ones */
	"cudaMemcpy2DToArrayAsync", "cudaMemcpy2DFromArrayAsync",
	"cudaMemcpyToArrayAsync", "cudaMemcpyFromArrayAsync",
	/* device to device only */
	"cuMemcpyDtoDAsync", "cuMemcpyDtoDAsync_v2", "cuMemcpyPeerAsync",
	"cudaMemcpyPeerAsync",
	/* CUDA < 3.2 forms (32-bit sizes), kept by the driver for old
	 * binaries; cuGetProcAddress hands them out only below version 3020,
	 * which hostpin reports */
	"cuMemcpyHtoDAsync", "cuMemcpyDtoHAsync", "cuMemcpy2DAsync",
	"cuMemcpy3DAsync", "cuMemcpyHtoAAsync", "cuMemcpyAtoHAsync",
};

static int is_copy_name(const char *s)
{
	return s[0] == 'c' && s[1] == 'u' && strstr(s, "Memcpy") &&
	       strstr(s, "Async");
}

static int is_known(const char *s)
{
	size_t n = strlen(s);
	if (n > 5 && strcmp(s + n - 5, "_ptsz") == 0)
		n -= 5;
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (strlen(known[i]) == n && strncmp(known[i], s, n) == 0)
			return 1;
	return 0;
}

struct scan {
	uintptr_t self;          /* an address in hostpin's own object */
	const char *obj, *name;  /* the first unknown entry point found */
	char objbuf[256], namebuf[96];
};

static int check_sym(const char *name, void *arg)
{
	struct scan *sc = arg;
	if (!is_copy_name(name) || is_known(name))
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
	/* hostpin's own exports are the guards themselves.  (No dladdr here:
	 * it takes the loader's lock, which a thread running constructors in
	 * dlopen holds while it may allocate and wait for cov_mu.) */
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && sc->self - lo < ph->p_memsz)
			return 0;
	}
	if (hp_elf_each_func(info->dlpi_addr, info->dlpi_phdr,
			     info->dlpi_phnum, check_sym, sc)) {
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
			       "%s exports %s, a copy entry point hostpin does "
			       "not guard: blocks are not registered, and "
			       "registered ones are unregistered once their "
			       "copies complete (HOSTPIN_COVERAGE=ignore "
			       "registers them anyway; see \"Which copies are "
			       "guarded\" in hostpin(7))",
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
		*why = "unguarded copy entry point loaded";
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
