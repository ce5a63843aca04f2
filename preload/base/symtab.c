/* Dynamic symbol tables of loaded objects, read in place: no allocation,
 * no loader call. */
#include <elf.h>

#include "symtab.h"

/* No libc string function: this runs before a sanitizer's interceptors
 * (which replace strcmp and memset) are set up. */
static int same(const char *a, const char *b)
{
	while (*a && *a == *b)
		a++, b++;
	return *a == *b;
}

static uintptr_t dyn_ptr(ElfW(Addr) base, ElfW(Addr) v)
{
	/* ld.so relocates these entries in place on most targets, not on
	 * all: an unrelocated one is an offset below the load address. */
	return v < base ? base + v : v;
}

struct tabs {
	const ElfW(Sym) *sym;
	const char *str;
	const uint32_t *gnu;
	const uint32_t *sysv;
	const ElfW(Half) *versym;  /* NULL: no symbol versions */
	const ElfW(Verneed) *verneed;
};

static int tables(ElfW(Addr) base, const ElfW(Dyn) *d, struct tabs *t)
{
	*t = (struct tabs){0};
	for (; d && d->d_tag != DT_NULL; d++) {
		if (d->d_tag == DT_SYMTAB)
			t->sym = (const ElfW(Sym) *)dyn_ptr(base, d->d_un.d_ptr);
		else if (d->d_tag == DT_STRTAB)
			t->str = (const char *)dyn_ptr(base, d->d_un.d_ptr);
		else if (d->d_tag == DT_GNU_HASH)
			t->gnu = (const uint32_t *)dyn_ptr(base, d->d_un.d_ptr);
		else if (d->d_tag == DT_HASH)
			t->sysv = (const uint32_t *)dyn_ptr(base, d->d_un.d_ptr);
		else if (d->d_tag == DT_VERSYM)
			t->versym = (const ElfW(Half) *)dyn_ptr(base, d->d_un.d_ptr);
		else if (d->d_tag == DT_VERNEED)
			t->verneed =
			    (const ElfW(Verneed) *)dyn_ptr(base, d->d_un.d_ptr);
	}
	return t->sym && t->str && (t->gnu || t->sysv);
}

static const uint32_t *gnu_chain(const uint32_t *gnu, uint32_t *nb,
				 const uint32_t **buckets)
{
	*nb = gnu[0];
	*buckets = gnu + 4 + gnu[2] * (sizeof(ElfW(Addr)) / 4);
	return *buckets + *nb;
}

static const ElfW(Dyn) *dynamic(ElfW(Addr) base, const ElfW(Phdr) *phdr,
			       int phnum)
{
	for (int i = 0; i < phnum; i++)
		if (phdr[i].p_type == PT_DYNAMIC)
			return (const ElfW(Dyn) *)(base + phdr[i].p_vaddr);
	return NULL;
}

/* A definition an unversioned reference binds to: defined, and not an old
 * (hidden) version of the name, such as libc's dlsym@GLIBC_2.2.5. */
static int defines(const struct tabs *t, uint32_t i)
{
	return t->sym[i].st_shndx != SHN_UNDEF &&
	       !(t->versym && (t->versym[i] & 0x8000));
}

void *hp_elf_lookup(ElfW(Addr) base, const ElfW(Phdr) *phdr, int phnum,
		    const char *name)
{
	struct tabs t;
	if (!tables(base, dynamic(base, phdr, phnum), &t))
		return NULL;
	if (!t.gnu) { /* DT_HASH only: every symbol in turn */
		for (uint32_t i = 1; i < t.sysv[1]; i++) {
			const ElfW(Sym) *s = &t.sym[i];
			if (defines(&t, i) && same(t.str + s->st_name, name))
				return (void *)(base + s->st_value);
		}
		return NULL;
	}
	uint32_t h = 5381;
	for (const unsigned char *c = (const unsigned char *)name; *c; c++)
		h = h * 33 + *c;
	uint32_t nb, symoffset = t.gnu[1];
	const uint32_t *buckets, *chain = gnu_chain(t.gnu, &nb, &buckets);
	uint32_t i = buckets[h % nb];
	if (i < symoffset)
		return NULL;
	for (;; i++) {
		uint32_t ch = chain[i - symoffset];
		const ElfW(Sym) *s = &t.sym[i];
		if ((ch | 1) == (h | 1) && defines(&t, i) &&
		    same(t.str + s->st_name, name))
			return (void *)(base + s->st_value);
		if (ch & 1)
			return NULL;
	}
}

/* Number of dynamic symbols: DT_HASH says it; with only DT_GNU_HASH, one
 * past the end of the longest chain. */
static uint32_t nsyms(const struct tabs *t)
{
	if (t->sysv)
		return t->sysv[1];
	uint32_t nb, symoffset = t->gnu[1], max = 0;
	const uint32_t *buckets, *chain = gnu_chain(t->gnu, &nb, &buckets);
	for (uint32_t b = 0; b < nb; b++)
		if (buckets[b] > max)
			max = buckets[b];
	if (max < symoffset)
		return symoffset;
	while (!(chain[max - symoffset] & 1))
		max++;
	return max + 1;
}

/* Defined function symbols (undef 0), or references (undef 1: functions,
 * or untyped as some linkers leave them). */
static int each_sym(ElfW(Addr) base, const ElfW(Phdr) *phdr, int phnum,
		    int undef, int (*fn)(const char *, void *), void *arg)
{
	struct tabs t;
	if (!tables(base, dynamic(base, phdr, phnum), &t))
		return 0;
	uint32_t n = nsyms(&t);
	for (uint32_t i = 1; i < n; i++) {
		const ElfW(Sym) *s = &t.sym[i];
		int type = ELF64_ST_TYPE(s->st_info);
		if (undef ? s->st_shndx != SHN_UNDEF ||
				(type != STT_FUNC && type != STT_NOTYPE)
			  : s->st_shndx == SHN_UNDEF || type != STT_FUNC)
			continue;
		int r = fn(t.str + s->st_name, arg);
		if (r)
			return r;
	}
	return 0;
}

int hp_elf_each_func(ElfW(Addr) base, const ElfW(Phdr) *phdr, int phnum,
		     int (*fn)(const char *, void *), void *arg)
{
	return each_sym(base, phdr, phnum, 0, fn, arg);
}

int hp_elf_each_ref(ElfW(Addr) base, const ElfW(Phdr) *phdr, int phnum,
		    int (*fn)(const char *, void *), void *arg)
{
	return each_sym(base, phdr, phnum, 1, fn, arg);
}

const char *hp_elf_ref_version(ElfW(Addr) base, const ElfW(Phdr) *phdr,
			       int phnum, const char *name)
{
	struct tabs t;
	if (!tables(base, dynamic(base, phdr, phnum), &t) || !t.versym ||
	    !t.verneed)
		return NULL;
	/* References are not in the hash table: every symbol in turn (once
	 * per caller object and hook, on the slow path). */
	uint32_t n = nsyms(&t), idx = 0;
	for (uint32_t i = 1; i < n && !idx; i++)
		if (t.sym[i].st_shndx == SHN_UNDEF &&
		    same(t.str + t.sym[i].st_name, name))
			idx = t.versym[i] & 0x7fff;
	if (idx < 2)
		return NULL; /* unversioned reference */
	const ElfW(Verneed) *vn = t.verneed;
	for (;;) {
		const ElfW(Vernaux) *a =
		    (const ElfW(Vernaux) *)((const char *)vn + vn->vn_aux);
		for (unsigned k = 0; k < vn->vn_cnt; k++) {
			if (a->vna_other == idx)
				return t.str + a->vna_name;
			a = (const ElfW(Vernaux) *)((const char *)a + a->vna_next);
		}
		if (!vn->vn_next)
			return NULL;
		vn = (const ElfW(Verneed) *)((const char *)vn + vn->vn_next);
	}
}

struct find {
	const char *name, *prefix;
	hp_obj_t *out;
};

static int find_one(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	struct find *f = arg;
	const char *n = info->dlpi_name, *b = n;
	if (n == NULL || !*n)
		return 0;
	for (const char *c = n; *c; c++)
		if (*c == '/')
			b = c + 1;
	int hit = same(b, f->name) || same(n, f->name);
	if (!hit && f->prefix) {
		const char *p = f->prefix, *q = b;
		while (*p && *p == *q)
			p++, q++;
		hit = *p == 0;
	}
	if (!hit)
		return 0;
	hp_obj_fill(info, f->out);
	return 1;
}

int hp_obj_find(const char *name, const char *prefix, hp_obj_t *out)
{
	const char *b = name;
	for (const char *c = name; *c; c++)
		if (*c == '/')
			b = c + 1;
	struct find f = {b, prefix, out};
	return dl_iterate_phdr(find_one, &f);
}

void *hp_obj_sym(const hp_obj_t *o, const char *name)
{
	return hp_elf_lookup(o->base, o->phdr, o->phnum, name);
}
