/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What each thread did with its time: GC pauses (exact, from the probes) and
 * off-CPU intervals with their reasons (exact, from sched_switch), joined to
 * tell a GIL wait behind a collecting holder ("waiting for GC") from a plain
 * GIL wait, and to total each thread's time per state.
 */
#ifndef EP_ANALYSIS_H
#define EP_ANALYSIS_H
#include <stdint.h>
#include "profile.h"

struct interval {
	int pid, tid;
	uint64_t start_ns, end_ns;	/* since the session start */
	int state;			/* enum sample_state (GC for pauses) */
	int generation;			/* GC: its generation, -1 unknown */
	int64_t collected;		/* GC: objects collected, -1 unknown */
	uint32_t *frames;		/* stack at the start, root first */
	uint32_t nframes;
};

struct interval_list {
	struct interval *v;
	size_t n, cap;
};

struct analysis {
	struct interval_list gcs;	/* garbage collections */
	struct interval_list waits;	/* off-CPU intervals */
	int exact_gc_pids[64];		/* processes whose collections are probed */
	int nexact;
};

struct thread_states {
	int pid, tid;
	uint64_t ns[STATE_MAX];		/* indexed by enum sample_state */
	uint64_t observed_ns;		/* from first to last sign of life */
};

void analysis_init(struct analysis *a);
void analysis_free(struct analysis *a);
int analysis_add(struct interval_list *l, const struct interval *iv);
void analysis_set_exact_gc(struct analysis *a, int pid);
int analysis_gc_is_exact(const struct analysis *a, int pid);

/* Splits the GIL waits that overlap a collection in another thread of the
 * same process into waiting-for-GC and plain GIL-wait pieces. */
void analysis_split_gc_waits(struct analysis *a);
/* Totals per thread over samples and intervals; *out is malloc'ed. */
size_t analysis_thread_states(const struct analysis *a, const struct profile *p,
			      struct thread_states **out);
/*
 * With the off-CPU intervals known exactly, the time between them is exactly
 * the time on CPU: each such slice is shared among the on-CPU samples taken
 * in it (a slice no sample fell in gets the stack the thread left the CPU
 * with). Without this a 1/rate-long sample would overlap the next interval
 * and be cut, and on-CPU time would nearly vanish from --idle timelines.
 * Call before analysis_add_idle_samples, with samples sorted by start.
 */
void analysis_fit_on_cpu_samples(const struct analysis *a, struct profile *p);
/* Adds every off-CPU interval to the profile as a sample weighted by its
 * duration, its stack topped by a frame naming the reason ([GIL wait]...). */
int analysis_add_idle_samples(const struct analysis *a, struct profile *p);
const char *state_marker(int state);

#endif
