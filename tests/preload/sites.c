/* Two allocation sites for HOSTPIN_BACKTRACE: the report must name
 * load_weights as the site owning the most pinned memory. */
#include <stdlib.h>
#include <string.h>

__attribute__((noinline)) char *load_weights(size_t n)
{
	char *p = malloc(n);
	memset(p, 1, n);
	return p;
}

__attribute__((noinline)) char *make_batch(size_t n)
{
	char *p = malloc(n);
	memset(p, 2, n);
	return p;
}

int main(void)
{
	char *w = load_weights((size_t)64 << 20);
	for (int i = 0; i < 5; i++)
		free(make_batch((size_t)8 << 20));
	free(w);
	return 0;
}
