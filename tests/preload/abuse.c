/* Misuse that glibc aborts on must abort with hostpin's blocks too, with a
 * clear message: `abuse double` or `abuse interior`. */
#include <string.h>

#include "tp.h"

int main(int argc, char **argv)
{
	CHECK(argc == 2);
	char *p = malloc(8 << 20);
	CHECK(p);
	memset(p, 1, 8 << 20);
	if (strcmp(argv[1], "double") == 0) {
		free(p);
		free(p);
	} else if (strcmp(argv[1], "interior") == 0) {
		free(p + 4096);
	} else if (strcmp(argv[1], "interior-odd") == 0) {
		free(p + 24);
	}
	puts("abuse: not aborted");
	return 0;
}
