/* Can an mlock of len more bytes succeed?  Asked before any pre-fault work
 * is done for a pin that is an mlock (the mlock backend, the HOSTPIN_MLOCK
 * fallback): a process without CAP_IPC_LOCK may lock only RLIMIT_MEMLOCK
 * bytes (64 KiB or 8 MiB in a default container), and populating a block's
 * pages for a lock the kernel then refuses is pure loss. */
#include <linux/capability.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../hp.h"

static int cap_ipc_lock(void)
{
	struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct d[2] = {{0, 0, 0}, {0, 0, 0}};
	if (syscall(SYS_capget, &h, d) != 0)
		return 0;
	return (d[CAP_IPC_LOCK / 32].effective >> (CAP_IPC_LOCK % 32)) & 1;
}

/* Read at every call, not once: the program or prlimit(1) may change the
 * limit, and a pin of at least HOSTPIN_THRESHOLD bytes dwarfs two system
 * calls.  locked: what hostpin holds locked now. */
int hp_memlock_fits(size_t len, size_t locked, const char **why)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_MEMLOCK, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
		return 1;
	if (locked + len <= rl.rlim_cur || cap_ipc_lock())
		return 1;
	*why = "RLIMIT_MEMLOCK too small (and no CAP_IPC_LOCK): nothing "
	       "pre-faulted or locked";
	return 0;
}
