/* A device job over the fake CUDA driver and runtime, for the node cases:
 *   job_prog peak            live peak of ~2.1 GiB in blocks of a size
 *                            that changes every step (a cache would grow)
 *   job_prog rank MB         allocate MB MiB in 64 MiB blocks, copy from
 *                            each, free them all, print "freed", then wait
 *                            (as at a barrier) until stdin reaches EOF
 *   job_prog work            a few copies through blocks, then exit
 * Every block's contents are checked before it is freed. */
#include <unistd.h>

#include "tp.h"

#define MB ((size_t)1 << 20)

typedef int cudaError_t;
cudaError_t cudaSetDevice(int);
cudaError_t cudaMalloc(void **, size_t);
cudaError_t cudaMemcpyAsync(void *, const void *, size_t, int, void *);
cudaError_t cudaDeviceSynchronize(void);
enum { H2D = 1 };

static void *dev;

static char *block(size_t n, int tag)
{
	char *b = malloc(n);
	CHECK(b);
	memset(b, tag, n);
	CHECK(cudaMemcpyAsync(dev, b, MB, H2D, NULL) == 0);
	return b;
}

static void drop(char *b, size_t n, int tag)
{
	CHECK(b[0] == (char)tag && b[n - 1] == (char)tag);
	free(b);
}

int main(int argc, char **argv)
{
	CHECK(argc >= 2);
	CHECK(cudaSetDevice(0) == 0);
	CHECK(cudaMalloc(&dev, MB) == 0);
	if (!strcmp(argv[1], "peak")) {
		/* one byte a page makes a block resident as memset would,
		 * at a fraction of the cost */
		enum { LIVE = 2150 }; /* MiB */
		static char *b[64];
		for (int step = 0; step < 2; step++) {
			size_t sz = (size_t)(40 + 9 * step) * MB;
			int n = (int)(LIVE * MB / sz);
			for (int i = 0; i < n; i++) {
				CHECK((b[i] = malloc(sz)));
				for (size_t o = 0; o < sz; o += 4096)
					b[i][o] = (char)(step + i);
				CHECK(cudaMemcpyAsync(dev, b[i], MB, H2D, NULL) == 0);
			}
			for (int i = 0; i < n; i++) {
				CHECK(b[i][sz - 4096] == (char)(step + i));
				free(b[i]);
			}
		}
	} else if (!strcmp(argv[1], "rank") && argc == 3) {
		int n = atoi(argv[2]) / 64;
		static char *b[256];
		CHECK(n > 0 && n <= 256);
		for (int i = 0; i < n; i++)
			b[i] = block(64 * MB, i + 1);
		for (int i = 0; i < n; i++)
			drop(b[i], 64 * MB, i + 1);
		puts("freed");
		fflush(stdout);
		char c;
		while (read(0, &c, 1) > 0)
			;
	} else if (!strcmp(argv[1], "work")) {
		for (int i = 0; i < 4; i++)
			drop(block(8 * MB, i + 1), 8 * MB, i + 1);
	} else {
		return 2;
	}
	CHECK(cudaDeviceSynchronize() == 0);
	printf("job_prog %s: ok\n", argv[1]);
	return 0;
}
