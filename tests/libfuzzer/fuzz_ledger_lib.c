/* libFuzzer target: the ledger as the library reads it.  The input is a
 * ledger file's contents (what any process of the user's may write):
 * copied over a zeroed ledger, with a valid header or not (the first
 * byte).  The library then sums every counter over the slots, reaps
 * (the pids in the input are only probed: signal 0, /proc reads), and
 * claims and fills a slot, as a new process does.  No descriptor: the
 * slots' locks are unknown, so liveness goes by pid and namespace. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "../../preload/node/ledger.h"

void hp_ledger_test_use(struct hp_ledger *l, int fd);
int hp_ledger_test_mark_dead(struct hp_lslot *s, uint32_t w);
struct hp_lslot *hp_ledger_test_claim(void);

static struct hp_ledger led;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	memset(&led, 0, sizeof(led));
	size_t n = size - 1 < sizeof(led) ? size - 1 : sizeof(led);
	/* the input lands at the slots (most bytes) or over the whole file */
	size_t at = data[0] & 1 ? offsetof(struct hp_ledger, slot) : 0;
	if (n > sizeof(led) - at)
		n = sizeof(led) - at;
	memcpy((char *)&led + at, data + 1, n);
	if (data[0] & 2) {
		atomic_store(&led.layout, HP_LEDGER_LAYOUT);
		led.version = HP_LEDGER_VERSION;
		led.size = sizeof(led);
	}
	hp_ledger_test_use(&led, -1);
	for (size_t off = 0; off < sizeof(struct hp_counters); off += 8)
		(void)hp_ledger_sum(off);
	uint32_t hw = atomic_load(&led.hiwater);
	for (uint32_t i = 0; i < hw && i < HP_LEDGER_SLOTS && i < 64; i++) {
		uint32_t w = atomic_load(&led.slot[i].state);
		if (HP_LS_ST(w) == HP_LS_LIVE)
			hp_ledger_test_mark_dead(&led.slot[i], w);
	}
	hp_ledger_test_claim();
	char buf[200];
	hp_idle_reason(&led.slot[0].ctr, buf, sizeof(buf));
	hp_mlock_note(&led.slot[0].ctr);
	return 0;
}
