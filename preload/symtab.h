/* Reading a loaded object's dynamic symbol table (symtab.c), for glibc's own
 * dlsym and the coverage check. */
#ifndef HP_SYMTAB_H
#define HP_SYMTAB_H

#include <link.h>

#include "hp.h"

/* The address of the defined dynamic symbol name in the object at base
 * (as dl_iterate_phdr reports it), or NULL. */
HP_HIDDEN void *hp_elf_lookup(ElfW(Addr) base, const ElfW(Phdr) *phdr,
			      int phnum, const char *name);
/* Call fn for each defined function symbol of the object at base (as
 * dl_iterate_phdr reports it), until fn returns non-zero. */
HP_HIDDEN int hp_elf_each_func(ElfW(Addr) base, const ElfW(Phdr) *phdr,
			       int phnum, int (*fn)(const char *, void *),
			       void *arg);

#endif
