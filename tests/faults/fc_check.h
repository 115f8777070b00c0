/* The checker: reads a run directory's records and says whether the case
 * held.  Used by the driver at the end of a run and by lw_faults_check. */
#ifndef LW_FAULTS_CHECK_H
#define LW_FAULTS_CHECK_H

#include <stdio.h>

/* Check the run in dir; print the report to out and, if results is not
 * NULL, append one JSON line to that file.  Returns 0 when the case's
 * expectation (driver.log's CASE line) is met, 1 when not, -1 when the
 * records cannot be read. */
int fc_check(const char *dir, FILE *out, const char *results);

/* The same, also giving the number of violations of each rule, in the
 * report's order: exclusion, order, stale, store, unfinished
 * (fc_rules_test.c). */
#define FC_NRULES 5
int fc_check_counts(const char *dir, FILE *out, const char *results,
                    long long counts[FC_NRULES]);

#endif
