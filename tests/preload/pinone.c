/* One short process that pins one block and exits: allocates a block of
 * argv[1] KiB (default 256), touches it, frees it.  For the cases that run
 * many processes (a job of 1,100 of them, 194-faults_ledger4). */
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
	size_t n = (size_t)(argc > 1 ? atol(argv[1]) : 256) << 10;
	char *p = malloc(n);
	if (!p)
		return 1;
	memset(p, 1, n);
	free(p);
	return 0;
}
