/* Reading a loaded object's dynamic symbol table (symtab.c), for glibc's own
 * dlsym and the coverage check. */
#ifndef HP_SYMTAB_H
#define HP_SYMTAB_H

#include <link.h>

#include "../hp.h"

/* The address of the defined dynamic symbol name in the object at base
 * (as dl_iterate_phdr reports it), or NULL. */
HP_HIDDEN void *hp_elf_lookup(ElfW(Addr) base, const ElfW(Phdr) *phdr,
			      int phnum, const char *name);
/* Call fn for each defined function symbol of the object at base (as
 * dl_iterate_phdr reports it), until fn returns non-zero. */
HP_HIDDEN int hp_elf_each_func(ElfW(Addr) base, const ElfW(Phdr) *phdr,
			       int phnum, int (*fn)(const char *, void *),
			       void *arg);
/* The same for each function the object at base references (imports). */
HP_HIDDEN int hp_elf_each_ref(ElfW(Addr) base, const ElfW(Phdr) *phdr,
			      int phnum, int (*fn)(const char *, void *),
			      void *arg);

/* The version the object at base requires for its reference to name
 * ("libcudart.so.13"), or NULL if its reference is unversioned or absent. */
HP_HIDDEN const char *hp_elf_ref_version(ElfW(Addr) base,
					 const ElfW(Phdr) *phdr, int phnum,
					 const char *name);

/* A loaded object, found without the loader's lock (resolve.c keeps the
 * one view of what is loaded). */
typedef struct hp_obj {
	ElfW(Addr) base;
	const ElfW(Phdr) *phdr;
	int phnum;
	uintptr_t lo, hi;      /* the span of its PT_LOAD segments */
	const void *dyn;       /* its PT_DYNAMIC: the same as l_ld */
	unsigned long epoch;   /* hp_dl_epoch when last seen loaded */
} hp_obj_t;
HP_HIDDEN void hp_obj_fill(const struct dl_phdr_info *info, hp_obj_t *o);
/* Find the loaded object whose file name ends in "/name" (or is name),
 * or, with prefix set, whose base name starts with prefix: 1 and *out
 * filled, or 0.  Uses dl_iterate_phdr, which unlike dlopen and dladdr
 * does not wait for a dlopen running constructors. */
HP_HIDDEN int hp_obj_find(const char *name, const char *prefix,
			  hp_obj_t *out);
HP_HIDDEN void *hp_obj_sym(const hp_obj_t *o, const char *name);

#endif
