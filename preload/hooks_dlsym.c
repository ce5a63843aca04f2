/* dlsym and dlvsym.  A framework that dlopens libcuda or libcudart and looks
 * up a copy entry point on that handle (ctypes, XLA's stream executor, a
 * static runtime finding cuGetProcAddress) would get the driver's function
 * and bypass every hook; for the names hostpin wraps, such a lookup gets
 * the wrapper instead.  Every other lookup behaves exactly as before: the
 * exported names are assembly stubs that ask hp_dlsym_hook and otherwise
 * jump to glibc's function with the caller's own return address, so
 * RTLD_NEXT and RTLD_DEFAULT still resolve relative to the caller, not to
 * hostpin. */
#include <dlfcn.h>
#include <string.h>

#include "hooks.h"

#define FORWARD ((void *)-1)

HP_HIDDEN void *hp_dlsym_hook(void *h, const char *name, const char *ver);

/* On entry the return address at (%rsp) is the caller's; the stubs keep it
 * there for glibc, which reads it to find the caller's object.  (Not in a
 * test program that compiles hostpin in under ThreadSanitizer, whose
 * runtime looks symbols up before it can run instrumented code.) */
#ifndef HP_EMBEDDED_TEST
__asm__(".text\n"
	".globl dlsym\n"
	".type dlsym, @function\n"
	"dlsym:\n"
	".cfi_startproc\n"
	"	endbr64\n"
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
	"1:	jmpq *hp_dlsym_next(%rip)\n"
	".cfi_endproc\n"
	".size dlsym, .-dlsym\n"
	".globl dlvsym\n"
	".type dlvsym, @function\n"
	"dlvsym:\n"
	".cfi_startproc\n"
	"	endbr64\n"
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
	"1:	jmpq *hp_dlvsym_next(%rip)\n"
	".cfi_endproc\n"
	".size dlvsym, .-dlvsym\n");
#endif

static int is_runtime(const void *fn)
{
	Dl_info di;
	if (!dladdr(fn, &di) || di.dli_fname == NULL)
		return 0;
	const char *b = strrchr(di.dli_fname, '/');
	b = b ? b + 1 : di.dli_fname;
	return strncmp(b, "libcudart.so", 12) == 0;
}

/* FORWARD: let glibc answer.  Anything else: the answer. */
void *hp_dlsym_hook(void *h, const char *name, const char *ver)
{
	hp_dl_resolve();
	/* Only names starting "cu" can be hostpin's; everything else is
	 * answered by glibc as if hostpin were not there. */
	if (name == NULL || name[0] != 'c' || name[1] != 'u' ||
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
	/* Every wrapped name starts cuMem, cuGetProcAddress, cudaMemcpy,
	 * cudaHost or cudaGetDriverEntryPoint, or ends a context
	 * (cuDevicePrimaryCtx*, cuCtxDestroy*, cudaDeviceReset,
	 * cudaThreadExit): a cheap test before the tables. */
	if (strncmp(name, "cuMem", 5) && strncmp(name, "cuGetProcAddress", 16) &&
	    strncmp(name, "cudaMemcpy", 10) && strncmp(name, "cudaHost", 8) &&
	    strncmp(name, "cudaGetDriverEntryPoint", 23) &&
	    strncmp(name, "cuDevicePrimaryCtx", 18) &&
	    strncmp(name, "cuCtxDestroy", 12) &&
	    strcmp(name, "cudaDeviceReset") && strcmp(name, "cudaThreadExit"))
		return FORWARD;
	int drv = hp_cudrv_wrapped_name(name);
	if (!drv && !hp_cudart_wrapped_name(name))
		return FORWARD;
	void *fn;
	if (h == RTLD_DEFAULT) {
		/* glibc finds hostpin's export; where no driver or runtime
		 * defines the name, the answer must stay "no such symbol". */
		HP_GUARDED(fn = hp_dlsym(RTLD_NEXT, name);
			   if (fn == NULL && drv) fn = hp_cuda_sym(name));
		return fn ? FORWARD : NULL;
	}
	HP_GUARDED(fn = ver ? hp_dlvsym_next(h, name, ver)
			    : hp_dlsym_next(h, name));
	if (fn == NULL)
		return NULL; /* glibc's error stands */
	void *w = fn;
	HP_GUARDED(if (drv && hp_cuda_in_driver(fn))
			   w = hp_cudrv_wrap(name, fn, 0, 0);
		   else if (!drv && is_runtime(fn))
			   w = hp_cudart_wrap(name, fn));
	return w;
}
