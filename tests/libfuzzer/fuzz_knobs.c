/* libFuzzer target: the knob parser (hp_opt_parse, every knob's kind:
 * sizes, percentages, booleans, choices, strings) and the unknown-name
 * matcher (hp_opt_known, hp_opt_closest), on any bytes.  The first byte
 * picks the knob; the rest is the value (NUL-terminated here, as
 * getenv gives it). */
#include <stdint.h>
#include <string.h>

#include "../../preload/hp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char s[512];
	if (size < 1)
		return 0;
	int i = data[0] % HP_OPT_COUNT;
	size_t n = size - 1 < sizeof(s) - 1 ? size - 1 : sizeof(s) - 1;
	memcpy(s, data + 1, n);
	s[n] = '\0';
	uint64_t out = 0;
	const char *expect = NULL;
	hp_opt_parse(i, s, &out, &expect);
	size_t len = strlen(s);
	hp_opt_known(s, len);
	const char *c = hp_opt_closest(s, len);
	if (c)
		(void)strlen(c);
	return 0;
}
