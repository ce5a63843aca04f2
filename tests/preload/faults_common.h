/* Helpers shared by the fault programs faults_ranges.c, faults_growth.c
 * and the preloaded injector faults_growfail.c.  Define FAULTS_NAME (the
 * program's name, the prefix of CHECK's message) before including. */
#ifndef FAULTS_COMMON_H
#define FAULTS_COMMON_H
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "../../preload/hostpin.h"

#ifndef FAULTS_NAME
#error "define FAULTS_NAME before including faults_common.h"
#endif

#define MIB ((size_t)1 << 20)
#define CHECK(c)                                                              \
	do {                                                                  \
		if (!(c)) {                                                   \
			fprintf(stderr, FAULTS_NAME ": %s:%d: %s\n",          \
				__FILE__, __LINE__, #c);                      \
			exit(1);                                              \
		}                                                             \
	} while (0)

/* hostpin tracks p, with every flag of want set (want 0: tracked at all).
 * hostpin_query is looked up at the first call: NULL without hostpin. */
static inline int tracked(const void *p, unsigned want)
{
	static int (*query)(const void *, struct hostpin_range *);
	if (!query)
		*(void **)&query = dlsym(RTLD_DEFAULT, "hostpin_query");
	struct hostpin_range r;
	return query && query(p, &r) && (r.flags & want) == want;
}

/* Every page of [p, p + n) holds v at its first and last byte. */
static inline int part_is(const char *p, size_t n, int v)
{
	for (size_t i = 0; i < n; i += 4096)
		if (p[i] != (char)v || p[i + 4095] != (char)v)
			return 0;
	return 1;
}

/* The address space in use (/proc/self/statm's size), 0 if unknown: what
 * RLIMIT_AS is set to when no further mapping may grow it. */
static inline size_t vm_bytes(void)
{
	char buf[128] = {0};
	int fd = open("/proc/self/statm", O_RDONLY);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	return n > 0 ? strtoull(buf, NULL, 10) * (size_t)sysconf(_SC_PAGESIZE)
		     : 0;
}

/* The fake runtime's (linked by the programs that call them): cuda_up
 * makes a context current, so hostpin registers what it tracks. */
int cudaSetDevice(int dev);
int cudaFree(void *p);
static inline void cuda_up(void)
{
	CHECK(cudaSetDevice(0) == 0 && cudaFree(NULL) == 0);
}
#endif
