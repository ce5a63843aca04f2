/* For 190-security: another process of the user's writes into a ledger,
 * as only hostpin should.
 *   ledger_poke LEDGER BYTES   a LIVE slot of no process hostpin can check
 *                              (no lock, PID namespace unknown: it counts
 *                              as alive for ever) claiming BYTES pinned
 * Run without the preload. */
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "../../preload/node/ledger.h"

int hp_snprintf(char *buf, size_t cap, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, cap, fmt, ap);
	va_end(ap);
	return n;
}

int main(int argc, char **argv)
{
	if (argc != 3)
		return 2;
	int fd = open(argv[1], O_RDWR);
	struct hp_ledger *l = fd < 0 ? MAP_FAILED
				     : mmap(NULL, sizeof(*l), PROT_READ | PROT_WRITE,
					    MAP_SHARED, fd, 0);
	if (l == MAP_FAILED) {
		perror(argv[1]);
		return 1;
	}
	uint32_t hw = atomic_load(&l->hiwater);
	for (uint32_t i = 0; i < HP_LEDGER_SLOTS; i++) {
		struct hp_lslot *s = &l->slot[i];
		if (HP_LS_ST(atomic_load(&s->state)) != HP_LS_FREE)
			continue;
		s->pid = 0x3ffffff0;
		s->pidns = 0;
		s->locked = 0;
		s->start = HP_START_UNKNOWN;
		s->rank = s->local_rank = -1;
		atomic_store(&s->ctr.pinned_bytes_now, strtoull(argv[2], NULL, 0));
		atomic_store(&s->state, HP_LS_MK(HP_LS_LIVE, 1));
		if (hw < i + 1)
			atomic_store(&l->hiwater, i + 1);
		return 0;
	}
	return 1;
}
