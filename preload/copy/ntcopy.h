/* A copy into memory the CPU does not read again (a staging slot, read by
 * the DMA only): non-temporal stores on x86-64, no read of the
 * destination's lines before they are written (issue 43: faster than
 * memcpy into the ring on the machines measured, tests/bench/copy_bench.c,
 * which includes this file to measure this very loop), then a store fence
 * (the bytes are visible before the copy is counted done).  Where the CPU
 * and the OS have AVX-512 (asked once, at run time), 64-byte stores, one
 * per line: a core's fill ran 5-10% faster than with the 16-byte SSE2
 * stores (issue 43 item 2: 2 copy threads, 1 MiB parts from a malloc'd
 * source 16 bytes past a line into a slot; AVX2's 32-byte stores were
 * slower than SSE2's there, glibc's memcpy and rep movsb slower still).
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
/* len bytes, d 16-byte aligned, len a multiple of 64 */
static inline void hp_nt_sse2(char *d, const char *s, size_t len)
{
	__m128i *o = (__m128i *)(void *)d;
	const __m128i *i = (const __m128i *)(const void *)s;
	for (size_t k = 0; k < len / 16; k += 4) {
		__m128i a = _mm_loadu_si128(i + k),
			b = _mm_loadu_si128(i + k + 1),
			c = _mm_loadu_si128(i + k + 2),
			e = _mm_loadu_si128(i + k + 3);
		_mm_stream_si128(o + k, a);
		_mm_stream_si128(o + k + 1, b);
		_mm_stream_si128(o + k + 2, c);
		_mm_stream_si128(o + k + 3, e);
	}
}

/* len bytes, d 64-byte aligned, len a multiple of 64: four lines a turn */
__attribute__((target("avx512f"))) static inline void
hp_nt_avx512(char *d, const char *s, size_t len)
{
	__m512i *o = (__m512i *)(void *)d;
	const char *i = s;
	size_t n = len / 64, k = 0;
	for (; k + 4 <= n; k += 4) {
		__m512i a = _mm512_loadu_si512(i + 64 * k),
			b = _mm512_loadu_si512(i + 64 * k + 64),
			c = _mm512_loadu_si512(i + 64 * k + 128),
			e = _mm512_loadu_si512(i + 64 * k + 192);
		_mm512_stream_si512(o + k, a);
		_mm512_stream_si512(o + k + 1, b);
		_mm512_stream_si512(o + k + 2, c);
		_mm512_stream_si512(o + k + 3, e);
	}
	for (; k < n; k++)
		_mm512_stream_si512(o + k, _mm512_loadu_si512(i + 64 * k));
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
	size_t al = wide ? 64 : 16;
	size_t head = (al - ((uintptr_t)d & (al - 1))) & (al - 1);
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
