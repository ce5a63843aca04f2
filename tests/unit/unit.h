/* The Check suites, one per module, combined by runner.c. */
#ifndef HP_UNIT_H
#define HP_UNIT_H
#include <check.h>
Suite *registry_suite(void);
#ifndef HP_REGISTRY_ONLY
Suite *options_suite(void);
Suite *log_suite(void);
Suite *policy_suite(void);
Suite *counts_suite(void);
Suite *prefault_suite(void);
Suite *ledger_suite(void);
Suite *speed_suite(void);
Suite *ring_suite(void);
Suite *spread_suite(void);
#endif
#endif
