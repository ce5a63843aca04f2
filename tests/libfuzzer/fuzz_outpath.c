/* libFuzzer target: the output-path walk (preload/base/outfile.h:
 * hp_out_open, as the log, the JSON report and the Prometheus file are
 * opened) over paths from the input, inside a sandbox made once: plain
 * directories, one others may write without the sticky bit, a sticky one,
 * links (to a directory, to a file, dangling, a loop), a FIFO, a file with
 * two links.  Inputs with a ".." component or a leading '/' are dropped:
 * the walk stays in the sandbox, whose links all point into it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../../preload/base/outfile.h"

static char box[64];

static void mk(const char *fmt, const char *what)
{
	char p[160], q[160];
	snprintf(p, sizeof(p), fmt, box);
	if (!strcmp(what, "dir"))
		mkdir(p, 0700);
	else if (!strcmp(what, "open"))
		mkdir(p, 0777), chmod(p, 0777);
	else if (!strcmp(what, "sticky"))
		mkdir(p, 01777), chmod(p, 01777);
	else if (!strcmp(what, "fifo"))
		mkfifo(p, 0600);
	else if (!strcmp(what, "file"))
		close(open(p, O_CREAT | O_WRONLY, 0600));
	else if (!strcmp(what, "link2"))
		snprintf(q, sizeof(q), "%s/f", box), link(q, p);
	else
		symlink(what, p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!box[0]) {
		/* a directory of a name no other user can take first
		 * (scripts/fuzz-run's TMPDIR, removed after the run) */
		const char *t = getenv("TMPDIR");
		snprintf(box, sizeof(box), "%s/hostpin-fuzz-out.XXXXXX",
			 t && *t && strlen(t) < 32 ? t : "/tmp");
		if (!mkdtemp(box))
			abort();
		mk("%s/d", "dir");
		mk("%s/d/e", "dir");
		mk("%s/o", "open");
		mk("%s/s", "sticky");
		mk("%s/p", "fifo");
		mk("%s/f", "file");
		mk("%s/h", "link2");
		mk("%s/ld", "d");
		mk("%s/lf", "f");
		mk("%s/ln", "nowhere");
		mk("%s/l1", "l2");
		mk("%s/l2", "l1");
		mk("%s/d/up", "..");
	}
	char rel[300], path[400], why[320];
	if (size < 1 || size >= sizeof(rel))
		return 0;
	memcpy(rel, data + 1, size - 1);
	rel[size - 1] = '\0';
	if (rel[0] == '/' || strstr(rel, ".."))
		return 0;
	snprintf(path, sizeof(path), "%s/%s", box, rel);
	why[0] = '\0';
	int fd = hp_out_open(path, data[0] & 1, 0600, why, sizeof(why));
	if (fd >= 0)
		close(fd);
	return 0;
}
