/* A copy into memory the CPU does not read again (a staging slot, read by
 * the DMA only): non-temporal stores on x86-64, no read of the
 * destination's lines before they are written (issue 43: faster than
 * memcpy into the ring on the machines measured, tests/bench/copy_bench.c,
 * which includes this file to measure this very loop), then a store fence
 * (the bytes are visible before the copy is counted done).  Blocks of
 * 16 KiB go four 4 KiB streams at once (HP_NT_BLOCK, below).  Where the
 * CPU and the OS have AVX-512 (asked once, at run time), 64-byte stores,
 * one per line: with the four streams, a core's fill ran at 10.5 GB/s
 * against 9.4 with the 16-byte SSE2 stores (issue 43 item 2; glibc's
 * memcpy and rep movsb into a slot: 6.3).
 * Elsewhere SSE2; built with HP_NO_NT, or not on x86-64, memcpy.
 * Header-only: pool.c, speed.c and copy_bench.c. */
#ifndef HP_NTCOPY_H
#define HP_NTCOPY_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#if defined(__x86_64__) && !defined(HP_NO_NT)
#include <immintrin.h>
#define HP_NT_X86 1
#endif

#ifdef HP_NT_X86
/* Four 4 KiB quarters of a block of HP_NT_BLOCK bytes are copied at once,
 * a line (or two) of each in turn, as glibc's memcpy does for copies past
 * its non-temporal threshold: a core's sequential stream within one page
 * at a time ran at 8 GB/s, four streams in four pages at 10.5 (issue 43
 * item 2: 2 copy threads, 1 MiB parts, a malloc'd source; the hardware
 * prefetcher follows one page at a time and starts over at each page). */
#define HP_NT_BLOCK ((size_t)16 << 10)
#define HP_NT_Q ((size_t)4 << 10)

/* one line, 16 bytes a store */
static inline void hp_nt_line16(char *d, const char *s)
{
	__m128i *o = (__m128i *)(void *)d;
	const __m128i *i = (const __m128i *)(const void *)s;
	__m128i a = _mm_loadu_si128(i), b = _mm_loadu_si128(i + 1),
		c = _mm_loadu_si128(i + 2), e = _mm_loadu_si128(i + 3);
	_mm_stream_si128(o, a);
	_mm_stream_si128(o + 1, b);
	_mm_stream_si128(o + 2, c);
	_mm_stream_si128(o + 3, e);
}

/* len bytes, d 64-byte aligned, len a multiple of 64 */
static inline void hp_nt_sse2(char *d, const char *s, size_t len)
{
	size_t k = 0;
	for (; k + HP_NT_BLOCK <= len; k += HP_NT_BLOCK)
		for (size_t j = 0; j < HP_NT_Q; j += 64)
			for (size_t q = 0; q < HP_NT_BLOCK; q += HP_NT_Q)
				hp_nt_line16(d + k + q + j, s + k + q + j);
	for (; k < len; k += 64)
		hp_nt_line16(d + k, s + k);
}

/* len bytes, d 64-byte aligned, len a multiple of 64: 64 bytes a store,
 * two lines of each quarter in turn */
__attribute__((target("avx512f"))) static inline void
hp_nt_avx512(char *d, const char *s, size_t len)
{
	size_t k = 0;
	for (; k + HP_NT_BLOCK <= len; k += HP_NT_BLOCK)
		for (size_t j = 0; j < HP_NT_Q; j += 128) {
			const char *i = s + k + j;
			char *o = d + k + j;
			__m512i a0 = _mm512_loadu_si512(i),
				a1 = _mm512_loadu_si512(i + HP_NT_Q),
				a2 = _mm512_loadu_si512(i + 2 * HP_NT_Q),
				a3 = _mm512_loadu_si512(i + 3 * HP_NT_Q),
				b0 = _mm512_loadu_si512(i + 64),
				b1 = _mm512_loadu_si512(i + HP_NT_Q + 64),
				b2 = _mm512_loadu_si512(i + 2 * HP_NT_Q + 64),
				b3 = _mm512_loadu_si512(i + 3 * HP_NT_Q + 64);
			_mm512_stream_si512((void *)o, a0);
			_mm512_stream_si512((void *)(o + HP_NT_Q), a1);
			_mm512_stream_si512((void *)(o + 2 * HP_NT_Q), a2);
			_mm512_stream_si512((void *)(o + 3 * HP_NT_Q), a3);
			_mm512_stream_si512((void *)(o + 64), b0);
			_mm512_stream_si512((void *)(o + HP_NT_Q + 64), b1);
			_mm512_stream_si512((void *)(o + 2 * HP_NT_Q + 64), b2);
			_mm512_stream_si512((void *)(o + 3 * HP_NT_Q + 64), b3);
		}
	for (; k < len; k += 64)
		_mm512_stream_si512((void *)(d + k),
				    _mm512_loadu_si512(s + k));
}

/* AVX-512 usable (the CPU's flag and the OS's saving of its registers:
 * __builtin_cpu_supports asks both), asked once per file that includes
 * this one; relaxed: every thread that asks finds the same answer */
static inline int hp_nt_wide(void)
{
	static int wide = -1; /* __atomic: no data race */
	int w = __atomic_load_n(&wide, __ATOMIC_RELAXED);
	if (w < 0) {
		__builtin_cpu_init();
		w = __builtin_cpu_supports("avx512f") ? 1 : 0;
		__atomic_store_n(&wide, w, __ATOMIC_RELAXED);
	}
	return w;
}
#endif

/* the stores only, with 64-byte stores if wide (AVX-512: hp_nt_wide), else
 * 16-byte ones (tests/unit/check_speed.c tries both where it can) */
static inline void hp_nt_stream_as(char *d, const char *s, size_t len,
				   int wide)
{
#ifdef HP_NT_X86
	size_t head = (64 - ((uintptr_t)d & 63)) & 63;
	if (head > len)
		head = len;
	memcpy(d, s, head);
	d += head, s += head, len -= head;
	size_t tail = len & 63;
	memcpy(d + len - tail, s + len - tail, tail);
	if (wide)
		hp_nt_avx512(d, s, len - tail);
	else
		hp_nt_sse2(d, s, len - tail);
#else
	(void)wide;
	memcpy(d, s, len);
#endif
}

/* the stores only: hp_nt_fence after the last (rows: one fence a part) */
static inline void hp_nt_stream(char *d, const char *s, size_t len)
{
#ifdef HP_NT_X86
	hp_nt_stream_as(d, s, len, hp_nt_wide());
#else
	memcpy(d, s, len);
#endif
}

static inline void hp_nt_fence(void)
{
#ifdef HP_NT_X86
	_mm_sfence();
#endif
}

static inline void hp_nt_copy(char *d, const char *s, size_t len)
{
	hp_nt_stream(d, s, len);
	hp_nt_fence();
}

#endif
