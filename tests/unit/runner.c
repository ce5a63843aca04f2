/* One runner for every Check suite.  HP_REGISTRY_ONLY builds the variant that
 * the sanitizer runs use. */
#include <stdlib.h>

#include "unit.h"

int main(void)
{
	SRunner *sr = srunner_create(registry_suite());
#ifndef HP_REGISTRY_ONLY
	srunner_add_suite(sr, options_suite());
	srunner_add_suite(sr, log_suite());
	srunner_add_suite(sr, policy_suite());
	srunner_add_suite(sr, counts_suite());
	srunner_add_suite(sr, prefault_suite());
	srunner_add_suite(sr, ledger_suite());
	srunner_add_suite(sr, speed_suite());
	srunner_add_suite(sr, ring_suite());
	srunner_add_suite(sr, spread_suite());
#endif
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
