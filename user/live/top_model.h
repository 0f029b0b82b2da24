/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What `ebpfprof top` shows, computed from a live recording: per function
 * its own and total time over the last refresh interval and since the
 * start; per thread its time in each state (the kernel's exact totals,
 * as a recording shows them); the GC pauses. Each refresh takes only what
 * the recorder added since the previous one.
 */
#ifndef EP_TOP_MODEL_H
#define EP_TOP_MODEL_H
#include <stddef.h>
#include <stdint.h>
#include "analysis.h"
#include "profile.h"

struct top_fn {
	uint32_t frame;			/* profile frame id */
	uint64_t own_ns, total_ns;	/* last interval */
	uint64_t own_all, total_all;	/* since the start */
};

struct top_thread {
	int pid, tid;
	uint64_t ns[STATE_MAX];		/* last interval */
	uint64_t all[STATE_MAX];	/* since the start */
};

/* Who held the GIL while a thread waited for it, and what it ran then. */
struct top_holder {
	int pid, waiter, holder;	/* holder: a tid, or GB_* (not attributed) */
	uint64_t ns, all;		/* the waiter's wait behind it: last interval, since the start */
	uint32_t frame;			/* the holder's heaviest innermost frame in the interval */
	int has_frame;
};

/* A value of the --by label in the last interval. */
struct top_value {
	uint32_t id;			/* its id in the recording's label table */
	uint64_t ns[STATE_MAX];		/* its time (all its threads') */
};

#define TOP_VALUES_MAX	16

enum top_sort { TOP_SORT_OWN, TOP_SORT_TOTAL, TOP_SORT_OWN_ALL, TOP_SORT_TOTAL_ALL, TOP_SORT_NAME };

struct top_model {
	struct top_fn *fns;		/* indexed by frame id */
	size_t nfns, fns_cap;
	uint64_t *stamp;		/* per frame id: last sample counted in */
	size_t stamp_cap;
	uint64_t serial;
	struct top_thread *threads;
	size_t nthreads, threads_cap;
	size_t *sample_cursor;		/* per profile thread: samples taken */
	size_t ncursors, cursors_cap;
	size_t gc_cursor;
	uint64_t window_start_ns, window_end_ns;	/* since the session start */
	struct top_holder *holders;	/* GIL blame (analysis.blame, taken and released) */
	size_t nholders, holders_cap;
	/* GC pauses */
	unsigned long gc_window, gc_all;
	uint64_t gc_longest_window, gc_longest_all;
	/* --by NAME: that label's values with the most time in the interval */
	int by_label;			/* its index in the label table, -1: none */
	struct top_value values[TOP_VALUES_MAX];
	size_t nvalues;
};

void top_model_init(struct top_model *m);
/* Shows label `label` (its index in the label table) per value. */
void top_model_by(struct top_model *m, int label);
void top_model_free(struct top_model *m);
/* Takes what p and a gained since the last call; the interval is
 * [previous end, end_ns), in ns since the session start, and a must hold
 * the kernel's totals up to end_ns. 0, or -1 (memory). */
int top_model_update(struct top_model *m, const struct profile *p, const struct analysis *a,
		     uint64_t end_ns);
/* Frees what the last update took from p and a (samples, collections,
 * waits, the kernel's totals): a live view runs for hours, and keeps only
 * its own sums, not every sample and wait. */
void top_model_release(struct top_model *m, struct profile *p, struct analysis *a);
/* The thread (pid, tid), added with no time if new; NULL if out of memory.
 * The pointer is valid until the next call that may add a thread. */
struct top_thread *top_model_thread(struct top_model *m, int pid, int tid);
/* The functions with time since the start, sorted; *out malloc'ed. */
size_t top_model_sorted(const struct top_model *m, const struct profile *p,
			enum top_sort sort, struct top_fn **out);

#endif
