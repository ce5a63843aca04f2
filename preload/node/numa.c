/* Where a block's pages live: its NUMA node and its page size.
 *
 * NUMA (HOSTPIN_NUMA=auto).  DMA from a buffer on the far socket crosses
 * the inter-socket link on every copy, so a block's pages go to the node
 * nearest the process's device when hostpin can know it (the CUDA driver's
 * HOST_NUMA_ID, or the PCI function's numa_node in sysfs), else to the node
 * of the thread allocating it.  hostpin's own mappings get the policy
 * (mbind(2), MPOL_PREFERRED: a full node spills over rather than failing)
 * before any page is faulted; a block placed before the device was known is
 * moved (MPOL_MF_MOVE) when it is registered.  The program's own mmaps keep
 * whatever policy the program gave them.  One node: nothing is done.  Raw
 * syscalls: no libnuma dependency.
 *
 * Huge pages.  Where the THP mode is always or madvise, a block of 2 MiB or
 * more is faulted as huge pages when hostpin pre-faults it (pin.c) and, for
 * malloc-family blocks the program fills, from its first touch (heap.c).
 *
 * HOSTPIN_SYSFS_ROOT (test only) reads /sys under another directory, so the
 * tests can inject a topology on a one-node machine. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../record.h"

#define HP_MPOL_PREFERRED 1
#define HP_MPOL_MF_MOVE (1u << 1)
#define MAX_NODES 1024

int hp_pci_numa_node(const char *bdf)
{
	char id[32], rel[96], path[160], buf[32];
	size_t i = 0;
	for (; bdf[i] && i + 1 < sizeof(id); i++) /* sysfs spells it lower case */
		id[i] = (bdf[i] >= 'A' && bdf[i] <= 'F') ? (char)(bdf[i] - 'A' + 'a')
							 : bdf[i];
	id[i] = '\0';
	hp_snprintf(rel, sizeof(rel), "/sys/bus/pci/devices/%s/numa_node", id);
	if (hp_sys_path(path, sizeof(path), rel) != 0 ||
	    hp_read_small(path, buf, sizeof(buf)) <= 0 || buf[0] < '0' ||
	    buf[0] > '9')
		return -1; /* absent, or "-1": no NUMA information */
	int v = 0;
	for (char *c = buf; *c >= '0' && *c <= '9' && v < 1 << 20; c++)
		v = v * 10 + (*c - '0');
	return v;
}

/* The highest node number in a sysfs list ("0", "0-1", "0,2-3"); -1. */
static int last_node(const char *s)
{
	int last = -1, v = -1;
	for (; *s; s++) {
		if (*s >= '0' && *s <= '9') {
			v = (v < 0 ? 0 : v * 10) + (*s - '0');
		} else {
			if (v > last)
				last = v;
			v = -1;
		}
	}
	return v > last ? v : last;
}

/* A sysfs read failed for want of a descriptor or memory (a process at
 * RLIMIT_NOFILE): ask again next time rather than keep the answer "no" for
 * the life of the process. */
static int passing(void)
{
	return errno == EMFILE || errno == ENFILE || errno == ENOMEM;
}

/* Nodes with memory: 1 on a one-node machine (nothing to place). */
static int nodes(void)
{
	static _Atomic int n; /* 0: not read yet; relaxed, the value is final */
	int v = atomic_load_explicit(&n, memory_order_relaxed);
	if (v)
		return v;
	char path[300], buf[256];
	v = 1;
	if (hp_sys_path(path, sizeof(path),
			"/sys/devices/system/node/has_memory") == 0) {
		if (hp_read_small(path, buf, sizeof(buf)) > 0)
			v = last_node(buf) + 1;
		else if (passing())
			return 1; /* not cached */
	}
	if (v < 1 || v > MAX_NODES)
		v = 1;
	atomic_store_explicit(&n, v, memory_order_relaxed);
	return v;
}

static int thread_node(void)
{
	unsigned cpu = 0, node = 0;
	if (syscall(SYS_getcpu, &cpu, &node, NULL) != 0)
		return -1;
	return (int)node;
}

/* The device's node, if the device backend in use can tell. */
static int device_node(void)
{
	return hp_backend->device_node ? hp_backend->device_node() : -1;
}

int hp_numa_want(void)
{
	if (hp_opt[HP_OPT_NUMA] != 0 || nodes() < 2)
		return -1;
	int n = device_node();
	return n >= 0 ? n : thread_node();
}

void hp_numa_place(hp_rec_t *r, uintptr_t base, size_t len, int node,
		   int move)
{
	if (node < 0 || node >= MAX_NODES || hp_rnode(r) == node ||
	    !(hp_rflags(r) & HOSTPIN_KIND_MALLOC))
		return;
	unsigned long mask[MAX_NODES / (8 * sizeof(unsigned long))] = {0};
	mask[node / (8 * sizeof(long))] |= 1ul << (node % (8 * sizeof(long)));
	long e = syscall(SYS_mbind, base, len, HP_MPOL_PREFERRED, mask,
			 (unsigned long)MAX_NODES + 1,
			 move ? HP_MPOL_MF_MOVE : 0u);
	hp_log(HP_LOG_DEBUG, "numa: block %p (%zu bytes) on node %d%s%s",
	       (void *)base, len, node, move ? " (moved)" : "",
	       e ? " (mbind refused)" : "");
	if (e)
		HP_LOG_ONCE(HP_LOG_INFO, "mbind to node %d failed (errno %d): "
			    "pages stay where the kernel puts them", node,
			    errno);
	/* The node asked for, even if the kernel refused: the cache matches
	 * requests by it, and a refusal would repeat. */
	uintptr_t w = atomic_load_explicit(&r->user[HP_U_NODE],
					   memory_order_relaxed);
	/* relaxed: keeps a concurrent hp_thp_advised's bit; orders nothing */
	while (!atomic_compare_exchange_weak_explicit(
	    &r->user[HP_U_NODE], &w, (w & HP_NODE_THP_ADVISED) | ((uintptr_t)node + 1),
	    memory_order_relaxed, memory_order_relaxed))
		;
}

static int advised_one(hp_rec_t *r, const hp_snap_t *s, void *arg)
{
	(void)s, (void)arg;
	/* relaxed: a hint read by the pre-fault of the same block */
	atomic_fetch_or_explicit(&r->user[HP_U_NODE], HP_NODE_THP_ADVISED,
				 memory_order_relaxed);
	return 0;
}

void hp_thp_advised(uintptr_t a, size_t len)
{
	uintptr_t b = a & ~(uintptr_t)(HP_PAGE_SIZE - 1);
	if (len && hp_registry_maybe(&hp_reg, b))
		hp_registry_each_overlap(&hp_reg, b, hp_page_up(a + len) - b,
					 advised_one, NULL);
}

