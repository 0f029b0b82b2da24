/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* What the user reads at the end: the per-thread state table and the
 * longest GC pauses; and the --gc-log file of pauses and long waits. */
#ifndef EP_REPORT_H
#define EP_REPORT_H
#include <stdint.h>
#include <stdio.h>
#include "analysis.h"
#include "profile.h"

/* Per-thread seconds and share of the recording in each state. */
void report_thread_table(FILE *f, const struct analysis *a, const struct profile *p);
/* The `max` longest collections with the stack that triggered each. */
void report_longest_gc(FILE *f, const struct analysis *a, const struct profile *p, size_t max);
/* JSON lines: every collection, and every wait of at least min_wait_ns.
 * Written atomically. 0, or -1 with errno set. */
int report_gc_log(const char *path, const struct analysis *a, const struct profile *p,
		  uint64_t min_wait_ns);

#endif
