/* zeInitDrivers for a Level Zero loader older than 1.10 (Debian 12 ships
 * 1.8, which lacks it): the loader-side path that current oneAPI runtimes
 * take.  It initialises through the loader's own zeInit, read from the
 * loader's symbol table so that no call reaches hostpin's zeInit hook:
 * hostpin must see the initialisation through zeInitDrivers alone. */
#include <dlfcn.h>
#include <link.h>
#include <stdint.h>
#include <string.h>

static void *raw(const char *name)
{
	void *h = dlopen("libze_loader.so.1", RTLD_NOW | RTLD_NOLOAD);
	struct link_map *lm = NULL;
	if (h == NULL || dlinfo(h, RTLD_DI_LINKMAP, &lm) != 0)
		return NULL;
	const ElfW(Sym) *sym = NULL;
	const char *str = NULL;
	for (const ElfW(Dyn) *d = lm->l_ld; d->d_tag != DT_NULL; d++) {
		if (d->d_tag == DT_SYMTAB)
			sym = (const ElfW(Sym) *)d->d_un.d_ptr;
		if (d->d_tag == DT_STRTAB)
			str = (const char *)d->d_un.d_ptr;
	}
	void *f = NULL;
	/* .dynsym precedes .dynstr in what ld writes */
	for (const ElfW(Sym) *s = sym + 1; sym && (const char *)s < str; s++)
		if (s->st_shndx != SHN_UNDEF && !strcmp(str + s->st_name, name))
			f = (void *)(lm->l_addr + s->st_value);
	dlclose(h);
	return f;
}

int zeInitDrivers(uint32_t *count, void **drivers, void *desc)
{
	(void)desc;
	int (*init)(unsigned) = (int (*)(unsigned))raw("zeInit");
	int (*get)(uint32_t *, void **) =
	    (int (*)(uint32_t *, void **))raw("zeDriverGet");
	if (!init || !get)
		return 0x78000001; /* ZE_RESULT_ERROR_UNINITIALIZED */
	int r = init(0);
	return r ? r : get(count, drivers);
}
