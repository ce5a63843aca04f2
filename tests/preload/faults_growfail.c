/* Preloaded after hostpin (LD_PRELOAD="libhostpin.so libfaults_growfail.so"),
 * so that hostpin's next mremap is this one.  Armed by the test program
 * (growfail_arm(0): the next growing mremap; growfail_arm(1): the next one
 * that moves into a place given, MREMAP_FIXED), it fails with ENOMEM (the
 * place given left as it was), and before it
 * returns, hostpin's record pool is exhausted for real: RLIMIT_AS is set to
 * the address space in use (the pool's next chunk cannot be mapped), and a
 * thread maps tracked 2 MiB ranges over a reservation of its own
 * (MAP_FIXED, no growth of the address space) until hostpin can track no
 * more.  Whatever hostpin then needs to track comes from an empty pool.
 * growfail_disarm restores the limit and says whether the pool ran out. */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/resource.h>

#define FAULTS_NAME "faults_growfail"
#include "faults_common.h"

#define RES (4096 * MIB)

static int armed, fixed_only, exhausted;
static struct rlimit saved;
static char *res;

void growfail_arm(int fixed);
int growfail_disarm(void);

void growfail_arm(int fixed)
{
	armed = 1;
	fixed_only = fixed;
}

int growfail_disarm(void)
{
	setrlimit(RLIMIT_AS, &saved);
	if (res)
		munmap(res, RES + 2 * MIB);
	return exhausted;
}

static void *eat(void *arg)
{
	(void)arg;
	res = mmap(NULL, RES + 2 * MIB, PROT_NONE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (res == MAP_FAILED) {
		res = NULL;
		return NULL;
	}
	char *a = (char *)(((uintptr_t)res + 2 * MIB - 1) & ~(2 * MIB - 1));
	size_t n = RES / (2 * MIB);
	/* The registry's nodes over the reservation exist before the limit:
	 * from then on a tracked range needs only a record. */
	for (size_t i = 0; i < n; i += n - 1) {
		char *p = mmap(a + i * 2 * MIB, 2 * MIB, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
		if (p == MAP_FAILED || !tracked(p, 0))
			return NULL;
	}
	getrlimit(RLIMIT_AS, &saved);
	struct rlimit lim = {vm_bytes(), saved.rlim_max};
	if (setrlimit(RLIMIT_AS, &lim) != 0)
		return NULL;
	for (size_t i = 1; i < n - 1; i++) {
		char *p = mmap(a + i * 2 * MIB, 2 * MIB, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
		if (p == MAP_FAILED)
			return NULL;
		if (!tracked(p, 0)) {
			exhausted = 1;
			return NULL;
		}
	}
	return NULL;
}

void *mremap(void *old, size_t oldlen, size_t newlen, int flags, ...)
{
	void *na = NULL;
	if (flags & MREMAP_FIXED) {
		va_list ap;
		va_start(ap, flags);
		na = va_arg(ap, void *);
		va_end(ap);
	}
	void *(*next)(void *, size_t, size_t, int, ...);
	*(void **)&next = dlsym(RTLD_NEXT, "mremap");
	if (armed && newlen > oldlen && (!fixed_only || (flags & MREMAP_FIXED))) {
		armed = 0;
		pthread_t t;
		if (pthread_create(&t, NULL, eat, NULL) == 0)
			pthread_join(t, NULL);
		/* No room either for what the thread's stack and whatever the
		 * caller reserved for the move (up to newlen) give back: the
		 * address space stays full for the whole realloc. */
		struct rlimit lim;
		if (exhausted && getrlimit(RLIMIT_AS, &lim) == 0) {
			size_t vm = vm_bytes();
			lim.rlim_cur = vm > newlen ? vm - newlen : 0;
			setrlimit(RLIMIT_AS, &lim);
		}
		errno = ENOMEM;
		return MAP_FAILED;
	}
	return next(old, oldlen, newlen, flags, na);
}
