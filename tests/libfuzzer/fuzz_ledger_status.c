/* libFuzzer target: the ledger as `hostpin status` reads it: the table,
 * the totals, the job's merged report and the Prometheus exposition,
 * over a ledger file's contents from the input (first byte: header valid
 * or not, input at the slots or over the whole file).  Output goes to
 * /dev/null.  hostpin-status.c is included for its static functions, its
 * main renamed. */
#define main hostpin_status_main
#include "../../status/hostpin-status.c"
#undef main

static struct hp_ledger fled;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static FILE *null;
	if (!null) {
		null = fopen("/dev/null", "w");
		if (!null || !freopen("/dev/null", "w", stdout))
			abort();
	}
	if (size < 1)
		return 0;
	memset(&fled, 0, sizeof(fled));
	size_t at = data[0] & 1 ? offsetof(struct hp_ledger, slot) : 0;
	size_t n = size - 1 < sizeof(fled) - at ? size - 1 : sizeof(fled) - at;
	memcpy((char *)&fled + at, data + 1, n);
	if (data[0] & 2) {
		atomic_store(&fled.layout, HP_LEDGER_LAYOUT);
		fled.version = HP_LEDGER_VERSION;
		fled.size = sizeof(fled);
	}
	table(&fled, 0, data[0] & 4);
	(void)total(&fled, "pinned_bytes_now");
	status_prometheus(null, &fled, data[0] & 4);
	int job = 0;
	if (size > 5)
		memcpy(&job, data + 1, sizeof(job));
	/* the launcher's form too: its child (the job's pid) and argv0 */
	status_report(&fled, job, (data[0] & 8) ? job : 0,
		      (data[0] & 16) ? "prog" : NULL);
	return 0;
}
