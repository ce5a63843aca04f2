/* A library whose constructor allocates before the program's main, possibly
 * before hostpin's own constructor ran. */
#include <stdlib.h>
#include <string.h>

void *early_big, *early_small, *early_mid;

__attribute__((constructor(101))) static void early(void)
{
	early_big = malloc(6 << 20);
	early_small = malloc(40);
	early_mid = calloc(1, 300000);
	memset(early_big, 0x42, 6 << 20);
	memset(early_small, 0x43, 40);
}
