/* A second dlsym interposer, as GPU-sharing layers (HAMi-core's libvgpu)
 * are: it logs every lookup of a CUDA name to DLWRAP_LOG and finds the next
 * dlsym by version, as they do.  Preloaded before or after hostpin. */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void *dlsym(void *h, const char *name)
{
	static void *(*next)(void *, const char *);
	if (next == NULL)
		next = (void *(*)(void *, const char *))dlvsym(
		    RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
	if (name && name[0] == 'c' && name[1] == 'u' && getenv("DLWRAP_LOG")) {
		int fd = open(getenv("DLWRAP_LOG"),
			      O_WRONLY | O_CREAT | O_APPEND, 0644);
		if (fd >= 0) {
			(void)!write(fd, name, strlen(name));
			(void)!write(fd, "\n", 1);
			close(fd);
		}
	}
	return next(h, name);
}
