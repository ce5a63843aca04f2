/* Reaches the GPU stack only through a plug-in, as a Python extension
 * module or an ONNX Runtime provider does.
 *   plughost PLUGIN local|global MODE [unload]
 * Opens PLUGIN and calls its plug_main with MODE.  With "unload": the
 * plug-in keeps two blocks (mode keep), is closed (its runtime, driver or
 * loader with it), one block is freed and more blocks come and go, then it
 * is opened again and the other block must be registered again. */
#include <sys/mman.h>

#include "tp.h"

#define MB ((size_t)1 << 20)

#ifdef LINK_RT
/* a runtime in the global scope too (two runtimes side by side) */
int cudaRuntimeGetVersion(int *);
#endif

typedef int (*plug_main_t)(int, char **);

static void *open_plug(const char *path, int flags, plug_main_t *pm)
{
	void *h = dlopen(path, RTLD_NOW | flags);
	if (h == NULL)
		fprintf(stderr, "plughost: %s\n", dlerror());
	CHECK(h != NULL);
	*(void **)pm = dlsym(h, "plug_main");
	CHECK(*pm != NULL);
	return h;
}

int main(int argc, char **argv)
{
	CHECK(argc >= 4);
#ifdef LINK_RT
	int v = 0;
	CHECK(cudaRuntimeGetVersion(&v) == 0 && v > 0);
#endif
	int flags = strcmp(argv[2], "global") ? RTLD_LOCAL : RTLD_GLOBAL;
	plug_main_t pm;
	void *h = open_plug(argv[1], flags, &pm);
	char *av[] = {"plug", argv[3], NULL};
	if (argc < 5 || strcmp(argv[4], "unload")) {
		CHECK(pm(2, av) == 0);
		puts("plughost: ok");
		return 0;
	}
	av[1] = "keep";
	CHECK(pm(2, av) == 0);
	void **kept = dlsym(h, "plug_kept");
	CHECK(kept != NULL);
	char *k0 = kept[0], *k1 = kept[1];
	CHECK(dlclose(h) == 0);
	const char *lib = getenv("PLUG_UNLOADS");
	if (lib)
		CHECK(dlopen(lib, RTLD_NOW | RTLD_NOLOAD) == NULL);
	/* Blocks registered with, or imported into, what was unloaded: no
	 * call into it, memory still usable. */
	CHECK(tp_verify(k0, 4 * MB, 0));
	free(k0);
	char *more = malloc(8 * MB);
	memset(more, 7, 8 * MB);
	more = realloc(more, 16 * MB);
	free(more);
	char *m = mmap(NULL, 4 * MB, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(m != MAP_FAILED);
	memset(m, 1, 4 * MB);
	CHECK(munmap(m, 4 * MB) == 0);
	CHECK(!(tp_flags(k1) & HOSTPIN_REGISTERED));
	CHECK(tp_verify(k1, 4 * MB, 1));
	/* opened again: the device is ready again, k1 registered again */
	h = open_plug(argv[1], flags, &pm);
	kept = dlsym(h, "plug_kept");
	CHECK(kept != NULL);
	kept[1] = k1;
	av[1] = "readopt";
	CHECK(pm(2, av) == 0);
	free(k1);
	puts("plughost: ok");
	return 0;
}
