/* libFuzzer target: the cgroup and /proc parsers of the memory base and
 * CPU limit (preload/base/limits.c, included for its static functions;
 * the fuzz library leaves its own copy out): /proc/self/mountinfo,
 * /proc/self/cgroup and the cgroup files they lead to, all from the input,
 * in a tree under HOSTPIN_SYSFS_ROOT (as the tests inject hierarchies).
 * The input holds the files' contents separated by 0xff bytes: mountinfo,
 * cgroup, then one value written to every memory.max, memory.limit_in_bytes,
 * memory.stat and cpu.max found along the paths the first two name. */
#include "../../preload/base/limits.c"

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

static char root[64];

static void put(const char *rel, const uint8_t *p, size_t n)
{
	char path[PATH_CAP + 80];
	snprintf(path, sizeof(path), "%s%s", root, rel);
	FILE *f = fopen(path, "w");
	if (!f)
		return;
	fwrite(p, 1, n, f);
	fclose(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!root[0]) {
		/* a directory of a name no other user can take first
		 * (scripts/fuzz-run's TMPDIR, removed after the run) */
		const char *t = getenv("TMPDIR");
		snprintf(root, sizeof(root), "%s/hostpin-fuzz-cg.XXXXXX",
			 t && *t && strlen(t) < 32 ? t : "/tmp");
		if (!mkdtemp(root))
			abort();
		char p[128];
		snprintf(p, sizeof(p), "%s/proc", root), mkdir(p, 0700);
		snprintf(p, sizeof(p), "%s/proc/self", root), mkdir(p, 0700);
		snprintf(p, sizeof(p), "%s/sys", root), mkdir(p, 0700);
		snprintf(p, sizeof(p), "%s/sys/fs", root), mkdir(p, 0700);
		snprintf(p, sizeof(p), "%s/sys/fs/cgroup", root), mkdir(p, 0700);
		snprintf(p, sizeof(p), "%s/sys/fs/cgroup/job", root), mkdir(p, 0700);
		snprintf(hp_optstr[HP_OPT_SYSFS_ROOT],
			 sizeof(hp_optstr[HP_OPT_SYSFS_ROOT]), "%s", root);
	}
	const uint8_t *part[3] = {data, data, data};
	size_t len[3] = {0, 0, 0};
	int k = 0;
	size_t start = 0;
	for (size_t i = 0; i <= size && k < 3; i++)
		if (i == size || data[i] == 0xff) {
			part[k] = data + start, len[k] = i - start, k++;
			start = i + 1;
		}
	put("/proc/self/mountinfo", part[0], len[0]);
	put("/proc/self/cgroup", part[1], len[1]);
	static const char *files[] = {
		"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/job/memory.max",
		"/sys/fs/cgroup/memory.limit_in_bytes",
		"/sys/fs/cgroup/job/memory.limit_in_bytes",
		"/sys/fs/cgroup/memory.stat", "/sys/fs/cgroup/job/memory.stat",
		"/sys/fs/cgroup/cpu.max", "/sys/fs/cgroup/job/cpu.max"};
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
		put(files[i], part[2], len[2]);
	mem_why[0] = '\0';
	(void)hp_mem_base();
	(void)cpu_compute();
	return 0;
}
