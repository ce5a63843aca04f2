/* Statistics stay consistent through cache reuse and evictions: 36 blocks
 * of 4-26 MiB, at most 6 live at once, then everything freed.  Afterwards
 * blocks_now and bytes_now are 0 and the peaks lie within what was live at
 * once (a cached block handed out may be up to 1/8 larger than asked).
 * Checks hostpin_stats() in-process; prints its bounds for the runner,
 * which checks the text report and the JSON the same way. */
#include "tp.h"

#define MB ((size_t)1 << 20)
#define LIVE 6

int main(void)
{
	char *p[LIVE] = {0};
	size_t n[LIVE] = {0};
	size_t live_blocks = 0, live_bytes = 0, max_blocks = 0, max_bytes = 0,
	       max_bound = 0, bound = 0;
	for (int i = 0; i < 36; i++) {
		int k = i % LIVE;
		if (p[k]) {
			free(p[k]);
			live_blocks--, live_bytes -= n[k];
			bound -= n[k] + n[k] / 8 + 4096;
		}
		n[k] = (4 + (size_t)(i * 7) % 23) * MB;
		p[k] = malloc(n[k]);
		CHECK(p[k]);
		memset(p[k], i, n[k]);
		live_blocks++, live_bytes += n[k];
		bound += n[k] + n[k] / 8 + 4096;
		if (live_blocks > max_blocks)
			max_blocks = live_blocks;
		if (live_bytes > max_bytes)
			max_bytes = live_bytes;
		if (bound > max_bound)
			max_bound = bound;
	}
	for (int k = 0; k < LIVE; k++)
		free(p[k]);
	struct hostpin_stats s;
	if (tp_stats(&s) == 0) {
		fprintf(stderr, "stats_mix: now %llu blocks %llu bytes; peak "
			"%llu blocks %llu bytes; evictions %llu\n",
			(unsigned long long)s.blocks_now,
			(unsigned long long)s.bytes_now,
			(unsigned long long)s.blocks_peak,
			(unsigned long long)s.bytes_peak,
			(unsigned long long)s.cache_evictions);
		CHECK(s.blocks_now == 0 && s.bytes_now == 0);
		CHECK(s.blocks_peak == max_blocks);
		CHECK(s.bytes_peak >= max_bytes && s.bytes_peak <= max_bound);
	}
	printf("bounds %zu %zu %zu\n", max_blocks, max_bytes, max_bound);
	return 0;
}
