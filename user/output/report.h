/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* What the user reads at the end: the per-thread state table and the
 * longest GC pauses; and the --gc-log file of pauses and long waits. */
#ifndef EP_REPORT_H
#define EP_REPORT_H
#include <stdint.h>
#include <stdio.h>
#include "analysis.h"
#include "profile.h"
#include "writer.h"

/* Per-thread seconds and share of the recording in each state. */
void report_thread_table(FILE *f, const struct analysis *a, const struct profile *p);
/* --label: per label, a row per value like the thread table's (the 20
 * longest), shares of the time all its values hold. */
void report_label_tables(FILE *f, const struct analysis *a);
/* The `max` longest collections with the stack that triggered each. */
/* A sampled figure's loss smaller than this share (percent) gets no loss
 * line in the default summary: it is within the profile's own sampling
 * spread (a few hundred samples: several percent); -v shows any. */
#define LOSS_SHOWN_PERCENT	1.0
/* Waits for the GIL shorter than this in total are not listed by holder. */
#define GIL_BLAME_SHOWN_NS	10000000ull
/* Each thread's GIL waits (and waits for GC) by holder, with what the
 * holder ran. */
void report_gil_blame(FILE *f, const struct analysis *a, const struct profile *p);
void report_longest_gc(FILE *f, const struct analysis *a, const struct profile *p, size_t max);
/* What the end-of-recording summary tells, besides the losses. */
struct recording_summary {
	const struct recording_info *info;	/* samples, lost, Python, GC timing, why it stopped */
	const struct profile *profile;
	const struct analysis *analysis;
	long children;		/* child processes followed; -1 when not following */
	int gc_needs_sys_admin;	/* GC probes possible, refused for lack of CAP_SYS_ADMIN */
	const char *gc_log;	/* NULL without --gc-log */
	double wait_threshold_ms;	/* the --gc-log's shortest wait */
	const char *format;	/* the profile's --format */
	const char *path;	/* and its file */
	/* prints what the kernel and userspace lost (nothing when all is well) */
	void (*print_losses)(FILE *f, void *ctx);
	void *ctx;
};

/* The summary printed when a recording ends: what was recorded, what was
 * lost, the thread table, the longest collections and the files written. */
void report_summary(FILE *f, const struct recording_summary *s);
/* JSON lines: every collection, and every wait of at least min_wait_ns.
 * Written atomically. 0, or -1 with errno set. */
int report_gc_log(const char *path, const struct analysis *a, const struct profile *p,
		  uint64_t min_wait_ns);

#endif
