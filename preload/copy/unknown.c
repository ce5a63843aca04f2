/* Copy entry points hostpin does not know: a driver newer than hostpin (each
 * CUDA minor adds some), or a form older than any it hooks.  Registration
 * stays on for the process; what such a copy touches keeps pageable
 * semantics instead.  A driver lookup (cuGetProcAddress, dlsym on the
 * driver, cudaGetDriverEntryPoint: hooks/cudrv_lookup.c) of a copy entry point
 * that may touch host memory and that hostpin has no hook for hands out a
 * forwarding stub: it calls the driver's function with the caller's
 * arguments unchanged (whatever they are), then, if hostpin has registered
 * blocks, waits for the calling thread's context (the copy's stream is not
 * known), so that the copy has completed on return as it would have from
 * pageable memory.  The report says, in one line each, which were looked
 * up and called, and how often hostpin waited.
 *
 * The stub is a few instructions of assembly per slot: it saves the
 * argument registers, asks unknown_enter for the driver's function, calls
 * it with the registers restored and the caller's first eight stack
 * arguments copied (no copy entry point has more than fourteen arguments),
 * then calls unknown_leave with the result. */
#include <pthread.h>
#include <string.h>

#include "../backend/backend.h"
#include "../hooks.h"

#define NSLOTS 32
#define NAMELEN 64

static struct uslot {
	_Atomic(void *) fn;    /* the driver's function; NULL: slot free */
	char name[NAMELEN];
	_Atomic unsigned long long lookups, calls, waits;
} slots[NSLOTS];
static pthread_mutex_t slot_mu = PTHREAD_MUTEX_INITIALIZER;
_Atomic int hp_unknown_overflow;

/* Called by the stub: the function to call, and whether this is the
 * outermost hook (*entered; then unknown_leave ends it). */
HP_HIDDEN void *hp_unknown_enter(unsigned slot, int *entered);
HP_HIDDEN long hp_unknown_leave(unsigned slot, int entered, long result);

void *hp_unknown_enter(unsigned slot, int *entered)
{
	struct uslot *u = &slots[slot % NSLOTS];
	*entered = hp_hook_enter();
	if (*entered)
		atomic_fetch_add_explicit(&u->calls, 1, memory_order_relaxed);
	/* acquire: pairs with the release in hp_unknown_wrap */
	return atomic_load_explicit(&u->fn, memory_order_acquire);
}

long hp_unknown_leave(unsigned slot, int entered, long result)
{
	if (!entered)
		return result;
	struct uslot *u = &slots[slot % NSLOTS];
	if (atomic_load_explicit(&hp_ctr.pinned_blocks_now,
				 memory_order_relaxed) != 0 &&
	    !hp_in_child) {
		hp_in_hook++;
		if (hp_cuda_wait_context() == 0)
			atomic_fetch_add_explicit(&u->waits, 1,
						  memory_order_relaxed);
		hp_in_hook--;
	}
	hp_hook_leave();
	return result;
}

/* The stubs: hp_unknown_stub_N loads N and jumps to the common part. */
__asm__(
    ".text\n"
    ".p2align 4\n"
    ".type hp_unknown_common,@function\n"
    "hp_unknown_common:\n"
    "  push %rbp\n"
    "  mov %rsp, %rbp\n"
    "  sub $208, %rsp\n"           /* 16-aligned: rsp = rbp - 208 */
    "  mov %rdi, 0(%rsp)\n"
    "  mov %rsi, 8(%rsp)\n"
    "  mov %rdx, 16(%rsp)\n"
    "  mov %rcx, 24(%rsp)\n"
    "  mov %r8, 32(%rsp)\n"
    "  mov %r9, 40(%rsp)\n"
    "  mov %rax, 48(%rsp)\n"      /* al: vector registers of a varargs call */
    "  mov %r11, 56(%rsp)\n"      /* the slot */
    "  movdqu %xmm0, 64(%rsp)\n"
    "  movdqu %xmm1, 80(%rsp)\n"
    "  movdqu %xmm2, 96(%rsp)\n"
    "  movdqu %xmm3, 112(%rsp)\n"
    "  movdqu %xmm4, 128(%rsp)\n"
    "  movdqu %xmm5, 144(%rsp)\n"
    "  movdqu %xmm6, 160(%rsp)\n"
    "  movdqu %xmm7, 176(%rsp)\n"
    "  mov %r11d, %edi\n"
    "  lea 192(%rsp), %rsi\n"     /* int entered */
    "  call hp_unknown_enter\n"
    "  mov %rax, %r10\n"
    "  mov 0(%rsp), %rdi\n"
    "  mov 8(%rsp), %rsi\n"
    "  mov 16(%rsp), %rdx\n"
    "  mov 24(%rsp), %rcx\n"
    "  mov 32(%rsp), %r8\n"
    "  mov 40(%rsp), %r9\n"
    "  movdqu 64(%rsp), %xmm0\n"
    "  movdqu 80(%rsp), %xmm1\n"
    "  movdqu 96(%rsp), %xmm2\n"
    "  movdqu 112(%rsp), %xmm3\n"
    "  movdqu 128(%rsp), %xmm4\n"
    "  movdqu 144(%rsp), %xmm5\n"
    "  movdqu 160(%rsp), %xmm6\n"
    "  movdqu 176(%rsp), %xmm7\n"
    "  sub $64, %rsp\n"           /* the caller's stack arguments */
    "  mov 16(%rbp), %rax\n  mov %rax, 0(%rsp)\n"
    "  mov 24(%rbp), %rax\n  mov %rax, 8(%rsp)\n"
    "  mov 32(%rbp), %rax\n  mov %rax, 16(%rsp)\n"
    "  mov 40(%rbp), %rax\n  mov %rax, 24(%rsp)\n"
    "  mov 48(%rbp), %rax\n  mov %rax, 32(%rsp)\n"
    "  mov 56(%rbp), %rax\n  mov %rax, 40(%rsp)\n"
    "  mov 64(%rbp), %rax\n  mov %rax, 48(%rsp)\n"
    "  mov 72(%rbp), %rax\n  mov %rax, 56(%rsp)\n"
    "  mov 112(%rsp), %rax\n"     /* saved rax (48 + 64) */
    "  call *%r10\n"
    "  add $64, %rsp\n"
    "  mov 56(%rsp), %rdi\n"      /* the slot */
    "  mov 192(%rsp), %esi\n"     /* entered */
    "  mov %rax, %rdx\n"          /* the result */
    "  call hp_unknown_leave\n"
    "  leave\n"
    "  ret\n"
    ".size hp_unknown_common, .-hp_unknown_common\n"
    ".p2align 4\n"
    ".globl hp_unknown_stubs\n"
    ".hidden hp_unknown_stubs\n"
    "hp_unknown_stubs:\n"
    ".irp n,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31\n"
    "  .p2align 4\n"
    "  endbr64\n"
    "  mov $\\n, %r11d\n"
    "  jmp hp_unknown_common\n"
    ".endr\n");

extern char hp_unknown_stubs[] __attribute__((visibility("hidden")));

void *hp_unknown_wrap(const char *name, void *fn)
{
	if (fn == NULL)
		return fn;
	struct uslot *u = NULL;
	pthread_mutex_lock(&slot_mu);
	for (int i = 0; i < NSLOTS && !u; i++) {
		void *cur = atomic_load_explicit(&slots[i].fn,
						 memory_order_relaxed);
		if (cur == fn || cur == NULL)
			u = &slots[i];
	}
	if (u && atomic_load_explicit(&u->fn, memory_order_relaxed) == NULL) {
		hp_snprintf(u->name, sizeof(u->name), "%s", name);
		/* release: the name before the function, for the report */
		atomic_store_explicit(&u->fn, fn, memory_order_release);
		hp_log(HP_LOG_INFO, "%s: a copy entry point hostpin does not "
		       "know; each call is followed by a wait for the "
		       "context while blocks are registered", name);
	}
	pthread_mutex_unlock(&slot_mu);
	if (u == NULL) {
		HP_LOG_ONCE(HP_LOG_WARN, "%s: more unknown copy entry points "
			    "than hostpin can follow (%d): handed out as they "
			    "are; registration is refused from now on", name,
			    NSLOTS);
		hp_unknown_overflow = 1;
		return fn;
	}
	atomic_fetch_add_explicit(&u->lookups, 1, memory_order_relaxed);
	return hp_unknown_stubs + 16 * (u - slots);
}

int hp_unknown_is_stub(const void *p)
{
	return (const char *)p >= hp_unknown_stubs &&
	       (const char *)p < hp_unknown_stubs + 16 * NSLOTS;
}

void hp_unknown_report(void (*line)(const char *name, unsigned long long,
				    unsigned long long, unsigned long long))
{
	for (int i = 0; i < NSLOTS; i++) {
		struct uslot *u = &slots[i];
		/* acquire: pairs with the release in hp_unknown_wrap */
		if (atomic_load_explicit(&u->fn, memory_order_acquire))
			line(u->name,
			     atomic_load_explicit(&u->lookups,
						  memory_order_relaxed),
			     atomic_load_explicit(&u->calls,
						  memory_order_relaxed),
			     atomic_load_explicit(&u->waits,
						  memory_order_relaxed));
	}
}
