/* A buffer grown by realloc in small steps, as readers of pipes and string
 * builders grow theirs.
 *   grow MIB [STEP_KIB]   grow to MIB MiB in STEP_KIB (64) KiB steps
 * Every step's bytes are written and the whole buffer checked at the end
 * and at every MiB.  Under hostpin (hostpin_stats): one block owned while
 * it grows, the cache never fills with its discarded steps, and what stays
 * pinned is bounded by a small multiple of the buffer, during the growth
 * and after the free. */
#include "tp.h"

static unsigned char pat(size_t i) { return (unsigned char)(i * 131 + i / 65536); }

int main(int argc, char **argv)
{
	size_t mib = argc > 1 ? (size_t)atol(argv[1]) : 32;
	size_t step = (argc > 2 ? (size_t)atol(argv[2]) : 64) << 10;
	size_t want = mib << 20, have = 0;
	unsigned char *p = NULL;
	struct hostpin_stats s;
	int hp = tp_stats(&s) == 0;
	while (have < want) {
		size_t n = have + step;
		unsigned char *q = realloc(p, n);
		CHECK(q != NULL);
		p = q;
		for (size_t i = have; i < n; i++)
			p[i] = pat(i);
		have = n;
		if (have % (1 << 20))
			continue;
		for (size_t i = 0; i < have; i += 509)
			CHECK(p[i] == pat(i));
		if (hp && have >= (4u << 20)) {
			CHECK(tp_stats(&s) == 0);
			/* one growing buffer: one block, a bounded pinned
			 * footprint, and nothing of it in the cache */
			if (s.blocks_now != 1 || s.pinned_bytes_now > 2 * have ||
			    s.cached_bytes > have) {
				fprintf(stderr, "at %zu bytes: blocks %llu, pinned "
					"%llu, cached %llu\n", have,
					(unsigned long long)s.blocks_now,
					(unsigned long long)s.pinned_bytes_now,
					(unsigned long long)s.cached_bytes);
				return 1;
			}
		}
	}
	for (size_t i = 0; i < have; i++)
		CHECK(p[i] == pat(i));
	free(p);
	if (hp) {
		CHECK(tp_stats(&s) == 0);
		/* at most the last block stays, cached */
		CHECK(s.blocks_now == 0);
		CHECK(s.pinned_bytes_now <= 2 * want && s.cached_bytes <= 2 * want);
		printf("grow: pinned after free %llu, cached %llu, pin calls %llu\n",
		       (unsigned long long)s.pinned_bytes_now,
		       (unsigned long long)s.cached_bytes,
		       (unsigned long long)s.pin_calls);
	}
	printf("grow %zu MiB: ok\n", mib);
	return 0;
}
