/* dlsym and dlvsym.  A framework that dlopens libcuda or libcudart and looks
 * up a copy entry point on that handle (ctypes, XLA's stream executor, a
 * static runtime finding cuGetProcAddress) would get the driver's function
 * and bypass every hook; for the names hostpin wraps, such a lookup gets
 * the wrapper instead (the Level Zero loader's zeInit, zeInitDrivers and
 * extension lookup alike).  Every other lookup behaves exactly as before:
 * the exported names are assembly stubs that ask hp_dlsym_hook and
 * otherwise jump to the next dlsym in load order (another interposer's, or
 * the C library's) with the caller's own return address, so RTLD_NEXT and
 * RTLD_DEFAULT still resolve relative to the caller, not to hostpin. */
#include <dlfcn.h>
#include <string.h>

#include "../hooks.h"
#include "../base/resolve.h"

#define FORWARD ((void *)-1)

HP_HIDDEN void *hp_dlsym_hook(void *h, const char *name, const char *ver,
			      const void *ra);
/* The next dlsym and dlvsym in load order after hostpin: another
 * interposer's if one follows, else the C library's.  What the stubs jump
 * to for every lookup hostpin does not answer. */
HP_HIDDEN void *(*hp_dlsym_chain)(void *, const char *);
HP_HIDDEN void *(*hp_dlvsym_chain)(void *, const char *, const char *);

/* On entry the return address at (%rsp) is the caller's; the stubs pass
 * it to the hook and keep it there for the next dlsym, which reads it to
 * find the caller's object.  Each stub is exported under the C library's
 * version names too (exports.map), so that a layer preloaded before
 * hostpin that asks for the next dlsym by version, as
 * dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5"), finds hostpin's.  (Not in a
 * test program that compiles hostpin in under ThreadSanitizer, whose
 * runtime looks symbols up before it can run instrumented code.) */
#ifndef HP_EMBEDDED_TEST
__asm__(".text\n"
	".globl hp_dlsym_stub\n"
	".type hp_dlsym_stub, @function\n"
	"hp_dlsym_stub:\n"
	".cfi_startproc\n"
	"	endbr64\n"
	"	movq (%rsp), %rcx\n"
	"	pushq %rdi\n"
	".cfi_adjust_cfa_offset 8\n"
	"	pushq %rsi\n"
	".cfi_adjust_cfa_offset 8\n"
	"	subq $8, %rsp\n" /* 16-byte alignment for the call */
	".cfi_adjust_cfa_offset 8\n"
	"	xorl %edx, %edx\n"
	"	call hp_dlsym_hook\n"
	"	addq $8, %rsp\n"
	".cfi_adjust_cfa_offset -8\n"
	"	popq %rsi\n"
	".cfi_adjust_cfa_offset -8\n"
	"	popq %rdi\n"
	".cfi_adjust_cfa_offset -8\n"
	"	cmpq $-1, %rax\n"
	"	je 1f\n"
	"	ret\n"
	"1:	jmpq *hp_dlsym_chain(%rip)\n"
	".cfi_endproc\n"
	".size hp_dlsym_stub, .-hp_dlsym_stub\n"
	".globl hp_dlvsym_stub\n"
	".type hp_dlvsym_stub, @function\n"
	"hp_dlvsym_stub:\n"
	".cfi_startproc\n"
	"	endbr64\n"
	"	movq (%rsp), %rcx\n"
	"	pushq %rdi\n"
	".cfi_adjust_cfa_offset 8\n"
	"	pushq %rsi\n"
	".cfi_adjust_cfa_offset 8\n"
	"	pushq %rdx\n"
	".cfi_adjust_cfa_offset 8\n"
	"	call hp_dlsym_hook\n"
	"	popq %rdx\n"
	".cfi_adjust_cfa_offset -8\n"
	"	popq %rsi\n"
	".cfi_adjust_cfa_offset -8\n"
	"	popq %rdi\n"
	".cfi_adjust_cfa_offset -8\n"
	"	cmpq $-1, %rax\n"
	"	je 1f\n"
	"	ret\n"
	"1:	jmpq *hp_dlvsym_chain(%rip)\n"
	".cfi_endproc\n"
	".size hp_dlvsym_stub, .-hp_dlvsym_stub\n"
	".symver hp_dlsym_stub, dlsym@@GLIBC_2.34\n"
	".symver hp_dlsym_stub, dlsym@GLIBC_2.2.5, remove\n"
	".symver hp_dlvsym_stub, dlvsym@@GLIBC_2.34\n"
	".symver hp_dlvsym_stub, dlvsym@GLIBC_2.2.5, remove\n");
#endif

/* Find the next dlsym and dlvsym, again after an unload (an interposer
 * that followed hostpin may be gone). */
static void chain_resolve(void)
{
	static _Atomic unsigned long at = ~0ul;
	unsigned long ep = hp_dl_epoch_now();
	/* acquire: pairs with the release below */
	if (atomic_load_explicit(&at, memory_order_acquire) == ep)
		return;
	void *s, *v;
	/* looked up from here: the first definitions after hostpin */
	HP_GUARDED(s = hp_dlsym_next(RTLD_NEXT, "dlsym");
		   v = hp_dlsym_next(RTLD_NEXT, "dlvsym"));
	if (s == NULL || hp_is_self(s))
		s = (void *)hp_dlsym_next;
	if (v == NULL || hp_is_self(v))
		v = (void *)hp_dlvsym_next;
	*(void **)&hp_dlsym_chain = s; /* racing threads store the same */
	*(void **)&hp_dlvsym_chain = v;
	atomic_store_explicit(&at, ep, memory_order_release);
}

/* The object defining fn also defines mark. */
static int obj_has(const void *fn, const char *mark)
{
	hp_obj_t o;
	return hp_obj_of(fn, &o) && hp_obj_sym(&o, mark) != NULL;
}

/* FORWARD: let the next dlsym answer.  Anything else: the answer. */
void *hp_dlsym_hook(void *h, const char *name, const char *ver,
		    const void *ra)
{
	hp_dl_resolve();
	chain_resolve();
	/* Only names starting "cu" or "ze" can be hostpin's; everything else
	 * is answered as if hostpin were not there. */
	if (name == NULL || !((name[0] == 'c' && name[1] == 'u') ||
			      (name[0] == 'z' && name[1] == 'e')) ||
	    h == RTLD_NEXT || hp_in_hook || hp_in_child)
		return FORWARD;
	/* A constructor may look up the driver before any allocation has
	 * initialised hostpin: initialise now, or its lookups go unguarded. */
	int st = atomic_load_explicit(&hp_state, memory_order_acquire);
	if (st == HP_ST_UNINIT || st == HP_ST_BUSY) {
		hp_init_slow();
		st = atomic_load_explicit(&hp_state, memory_order_acquire);
	}
	if (st != HP_ST_READY)
		return FORWARD;
	int drv = 0, rt = 0, ze = 0, unk = 0;
	if (name[0] == 'z') {
		ze = hp_ze_wrapped_name(name);
	} else if (!strncmp(name, "cuMem", 5) ||
		   !strncmp(name, "cuPointerGetAttribute", 21) ||
		   !strncmp(name, "cuGetProcAddress", 16) ||
		   !strncmp(name, "cudaMemcpy", 10) ||
		   !strncmp(name, "cudaHost", 8) ||
		   !strncmp(name, "cudaGetDriverEntryPoint", 23) ||
		   !strncmp(name, "cuDevicePrimaryCtx", 18) ||
		   !strncmp(name, "cuCtxDestroy", 12) ||
		   !strncmp(name, "cuStream", 8) ||
		   !strncmp(name, "cudaStream", 10) ||
		   !strcmp(name, "cudaDeviceReset") ||
		   !strcmp(name, "cudaThreadExit")) {
		/* Every wrapped CUDA name starts so (copies, registrations,
		 * lookups, the entry points that end a context, graph
		 * capture's begin and end): a cheap test before the
		 * tables. */
		drv = hp_cudrv_wrapped_name(name);
		unk = !drv && hp_coverage_unguarded(name);
		rt = !drv && !unk && hp_cudart_wrapped_name(name);
	}
	if (!drv && !rt && !ze && !unk)
		return FORWARD;
	void *fn;
	if (unk) {
		/* a driver copy entry point hostpin has no hook for (a newer
		 * CUDA): the driver's own, followed (unknown.c) */
		HP_GUARDED(fn = ver ? hp_dlvsym_chain(h, name, ver)
				    : hp_dlsym_chain(h, name);
			   if (fn && !hp_is_self(fn) && hp_cuda_in_driver(fn))
				   fn = hp_unknown_wrap(name, fn));
		return fn;
	}
	if (h == RTLD_DEFAULT) {
		/* The next dlsym finds hostpin's export, whose calls go on to
		 * what this caller's scope holds; where it holds nothing, the
		 * answer must stay "no such symbol". */
		HP_GUARDED(fn = hp_resolve_for(ra, name);
			   if (fn == NULL && drv) fn = hp_cuda_sym(name);
			   hp_backend_events_act());
		if (fn)
			return FORWARD;
		HP_GUARDED(fn = ver ? hp_dlvsym_chain(h, name, ver)
				    : hp_dlsym_chain(h, name));
		return fn && hp_is_self(fn) ? NULL : fn;
	}
	/* A handle: the next dlsym answers (another interposer sees the
	 * lookup too), and hostpin hands out its wrapper for a driver's,
	 * runtime's or loader's function. */
	HP_GUARDED(fn = ver ? hp_dlvsym_chain(h, name, ver)
			    : hp_dlsym_chain(h, name));
	if (fn == NULL || hp_is_self(fn))
		return fn; /* an error, or a scope where hostpin is first */
	void *w = fn;
	HP_GUARDED(if (drv && hp_cuda_in_driver(fn))
			   w = hp_cudrv_wrap(name, fn, 0, 0);
		   else if (rt && obj_has(fn, "cudaGetDriverEntryPoint"))
			   w = hp_cudart_wrap(name, fn, ra);
		   else if (ze) w = hp_ze_wrap(name, fn));
	return w;
}
