/* The backend contract: what "pinning" a range means.  One file per backend;
 * the policy in block.c is the only caller. */
#ifndef HP_BACKEND_H
#define HP_BACKEND_H

#include <stddef.h>

typedef struct hp_backend {
	const char *name;
	/* 0 if this backend can work in this process (driver present...). */
	int (*probe)(void);
	/* 1 if a range can be pinned now; 0 means "mark it pending". */
	int (*ready)(void);
	/* Pin / unpin exactly [base, base+len).  0, or non-zero with *why set
	 * to a short static reason ("RLIMIT_MEMLOCK", a driver error name).
	 * EAGAIN from pin means "not now": the range is marked pending. */
	int (*pin)(void *base, size_t len, const char **why);
	int (*unpin)(void *base, size_t len, const char **why);
	/* In a forked child: forget device state, make no device call. */
	void (*fork_child)(void);
	/* HOSTPIN_* flags a pinned range gets (HOSTPIN_LOCKED...). */
	unsigned pin_flags;
} hp_backend_t;

extern const hp_backend_t hp_backend_none, hp_backend_mlock, hp_backend_cuda,
    hp_backend_level_zero, hp_backend_auto;
/* The device backend auto chose, or NULL while none is ready. */
const hp_backend_t *hp_backend_auto_chosen(void);

#endif
