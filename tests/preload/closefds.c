/* A program that closes every descriptor it did not open (3..1023), then
 * writes a checkpoint file of its own while making large allocations, and
 * checks that the file holds exactly what it wrote.
 *   closefds FILE low    the checkpoint takes the lowest free number (what
 *                        hostpin's log descriptor had, unfixed)
 *   closefds FILE fill   /dev/null fills 3..999, the checkpoint takes 1000
 *                        (the number of hostpin's high descriptors) and is
 *                        left open for exit to close
 * Exit 0: the checkpoint is exactly the program's data. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char part[] = "checkpoint data, step 000000\n";

static int wr(int fd, const char *s)
{
	return write(fd, s, strlen(s)) == (ssize_t)strlen(s) ? 0 : -1;
}

int main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	int fill = strcmp(argv[2], "fill") == 0;
	for (int fd = 3; fd < 1024; fd++)
		close(fd);
	if (fill)
		for (int fd = 3; fd < 1000; fd++)
			if (open("/dev/null", O_RDONLY) != fd)
				return fprintf(stderr, "closefds: /dev/null not at %d\n", fd), 2;
	int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return perror("closefds: open"), 2;
	printf("checkpoint fd %d\n", fd);
	fflush(stdout);
	/* large blocks while the checkpoint is being written: each may make
	 * hostpin log (HOSTPIN_LOG=debug, a cap reached) */
	for (int i = 0; i < 6; i++) {
		if (wr(fd, part))
			return perror("closefds: write"), 2;
		char *p = malloc((size_t)8 << 20);
		if (!p)
			return 2;
		memset(p, i, (size_t)8 << 20);
		free(p);
	}
	if (fill)
		return 0; /* exit closes it, after hostpin's report */
	close(fd);
	char buf[4096];
	fd = open(argv[1], O_RDONLY);
	ssize_t n = read(fd, buf, sizeof(buf));
	if (n != 6 * (ssize_t)strlen(part)) {
		fprintf(stderr, "closefds: the checkpoint holds %zd bytes, not %zu\n",
			n, 6 * strlen(part));
		return 1;
	}
	for (int i = 0; i < 6; i++)
		if (memcmp(buf + i * strlen(part), part, strlen(part)))
			return fprintf(stderr, "closefds: the checkpoint differs\n"), 1;
	return 0;
}
