/* Run set-user-ID: says whether hostpin is loaded, then allocates and frees
 * large blocks (the runner checks that no file was written). */
#include "tp.h"

int main(void)
{
	printf("hostpin loaded: %s\n", tp_query() ? "yes" : "no");
	for (int i = 0; i < 4; i++) {
		char *p = malloc((size_t)8 << 20);
		CHECK(p);
		tp_fill(p, (size_t)8 << 20, (unsigned)i);
		CHECK(tp_verify(p, (size_t)8 << 20, (unsigned)i));
		free(p);
	}
	puts("suid: ok");
	return 0;
}
