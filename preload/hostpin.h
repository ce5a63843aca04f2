/* hostpin public query API.  Programs (and ctypes) find these with
 * dlsym(RTLD_DEFAULT, "hostpin_query"); they exist only while libhostpin.so
 * is loaded. */
#ifndef HOSTPIN_H
#define HOSTPIN_H

#include <stddef.h>
#include <stdint.h>

/* hostpin_range.flags */
#define HOSTPIN_KIND_MALLOC 0x1u   /* a block hostpin allocated for malloc & co */
#define HOSTPIN_KIND_MMAP 0x2u     /* an application mmap hostpin tracks */
#define HOSTPIN_LOCKED 0x10u       /* pages locked (mlock) */
#define HOSTPIN_REGISTERED 0x20u   /* registered with a device driver */
#define HOSTPIN_PENDING 0x40u      /* waiting for the device runtime, or for its Nth copy */

struct hostpin_range {
	void *base;
	size_t len;
	unsigned flags;
};

/* 1 and *out filled if p lies in a range hostpin tracks, else 0. */
int hostpin_query(const void *p, struct hostpin_range *out);

struct hostpin_stats {
	uint64_t blocks_now, bytes_now;       /* malloc-family blocks owned */
	uint64_t blocks_peak, bytes_peak;
	uint64_t pinned_blocks_now, pinned_bytes_now, pinned_bytes_peak;
	uint64_t pin_failures;                /* all reasons */
	uint64_t pending_blocks;
	uint64_t mmap_ranges_now, mmap_bytes_now;
	uint64_t pin_ns;                      /* time spent pinning */
	uint64_t over_cap;                    /* served unpinned: HOSTPIN_MAX_PINNED */
	uint64_t pin_calls, unpin_calls;      /* registrations / unregistrations */
	uint64_t adopted_blocks;              /* pending blocks registered later */
	uint64_t foreign_ranges;              /* blocks the program registered itself */
	uint64_t copies_seen;                 /* copy hooks that touched a block */
	uint64_t copies_registered, copy_bytes_registered; /* ...of registered ones */
	uint64_t copy_waits;                  /* HOSTPIN_COPY waits (stream or event) */
	uint64_t leaked_blocks;               /* unpin refused: never reused */
	uint64_t cached_blocks, cached_bytes; /* freed blocks kept for reuse */
	uint64_t cache_hits, cache_evictions;
	uint64_t imports_dropped;             /* registrations/imports of hostpin's the program released */
};

/* Fill *out (size bytes of it, for forward compatibility); 0 on success. */
int hostpin_stats(struct hostpin_stats *out, size_t size);

/* Name of the active backend ("none", "mlock"), or "disabled". */
const char *hostpin_backend(void);

#endif
