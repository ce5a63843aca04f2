/* A copy into memory the CPU does not read again (a staging slot, read by
 * the DMA only): non-temporal stores on x86-64, no read of the
 * destination's lines before they are written (issue 43: faster than
 * memcpy into the ring on the machines measured, tests/bench/copy_bench.c,
 * which includes this file to measure this very loop), then a store fence
 * (the bytes are visible before the copy is counted done).  Elsewhere, or
 * built with HP_NO_NT, memcpy.  Header-only: pool.c and copy_bench.c. */
#ifndef HP_NTCOPY_H
#define HP_NTCOPY_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#if defined(__x86_64__) && !defined(HP_NO_NT)
#include <emmintrin.h>
#endif

/* the stores only: hp_nt_fence after the last (rows: one fence a part) */
static inline void hp_nt_stream(char *d, const char *s, size_t len)
{
#if defined(__x86_64__) && !defined(HP_NO_NT)
	size_t head = (16 - ((uintptr_t)d & 15)) & 15;
	if (head > len)
		head = len;
	memcpy(d, s, head);
	d += head, s += head, len -= head;
	size_t tail = len & 63;
	memcpy(d + len - tail, s + len - tail, tail);
	__m128i *o = (__m128i *)(void *)d;
	const __m128i *i = (const __m128i *)(const void *)s;
	for (size_t k = 0; k < (len - tail) / 16; k += 4) {
		__m128i a = _mm_loadu_si128(i + k),
			b = _mm_loadu_si128(i + k + 1),
			c = _mm_loadu_si128(i + k + 2),
			e = _mm_loadu_si128(i + k + 3);
		_mm_stream_si128(o + k, a);
		_mm_stream_si128(o + k + 1, b);
		_mm_stream_si128(o + k + 2, c);
		_mm_stream_si128(o + k + 3, e);
	}
#else
	memcpy(d, s, len);
#endif
}

static inline void hp_nt_fence(void)
{
#if defined(__x86_64__) && !defined(HP_NO_NT)
	_mm_sfence();
#endif
}

static inline void hp_nt_copy(char *d, const char *s, size_t len)
{
	hp_nt_stream(d, s, len);
	hp_nt_fence();
}

#endif
