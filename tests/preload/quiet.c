/* A process that uses no device: no thread, no device library.
 *   quiet         never allocates anything large: nothing tracked either
 *   quiet large   large blocks allocated, touched and freed (4-20 MiB) under
 *                 the defaults: still no thread and nothing pinned
 *                 (invariant 9) */
#include <dirent.h>

#include "tp.h"

int main(int argc, char **argv)
{
	int large = argc > 1 && strcmp(argv[1], "large") == 0;
	for (int i = 0; i < 100000; i++)
		free(malloc((size_t)(i % 5000) + 1));
	for (int i = 0; large && i < 40; i++) {
		size_t n = (size_t)(i % 5 + 1) << 22;
		char *p = malloc(n);
		CHECK(p != NULL);
		memset(p, i, n);
		CHECK(p[n - 1] == (char)i);
		free(p);
	}
	int tasks = 0;
	DIR *d = opendir("/proc/self/task");
	for (struct dirent *e; (e = readdir(d));)
		tasks += e->d_name[0] != '.';
	closedir(d);
	CHECK(tasks == 1);
	FILE *m = fopen("/proc/self/maps", "r");
	char line[512];
	while (fgets(line, sizeof(line), m))
		CHECK(!strstr(line, "libcuda") && !strstr(line, "libze_") &&
		      !strstr(line, "libOpenCL"));
	fclose(m);
	struct hostpin_stats s;
	if (tp_stats(&s) == 0 && large)
		CHECK(s.blocks_peak > 0 && s.pinned_bytes_peak == 0);
	else if (tp_stats(&s) == 0)
		CHECK(s.blocks_peak == 0 && s.pinned_bytes_peak == 0 &&
		      s.mmap_ranges_now == 0);
	puts("quiet: ok");
	return 0;
}
