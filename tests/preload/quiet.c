/* A process that never allocates anything large: no thread, no device
 * library, nothing tracked. */
#include <dirent.h>

#include "tp.h"

int main(void)
{
	for (int i = 0; i < 100000; i++)
		free(malloc((size_t)(i % 5000) + 1));
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
	if (tp_stats(&s) == 0)
		CHECK(s.blocks_peak == 0 && s.pinned_bytes_peak == 0 &&
		      s.mmap_ranges_now == 0);
	puts("quiet: ok");
	return 0;
}
