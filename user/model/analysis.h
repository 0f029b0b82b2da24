/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What each thread did with its time: GC pauses (exact, from the probes),
 * the kernel's exact per-thread totals of off-CPU time by reason (a GIL wait
 * already split there into plain GIL wait and waiting-for-GC), and the
 * off-CPU intervals long enough to be shown one by one.
 */
#ifndef EP_ANALYSIS_H
#define EP_ANALYSIS_H
#include <stdint.h>
#include "gil_blame.h"
#include "hash_index.h"
#include "interval.h"
#include "labels.h"
#include "profile.h"

struct thread_states {
	int pid, tid;
	uint64_t ns[STATE_MAX];		/* indexed by enum sample_state */
	uint64_t observed_ns;		/* sum of the above */
};

/* Off-CPU time of one thread as the kernel summed it. */
struct thread_totals {
	int pid, tid;
	uint64_t ns[STATE_MAX];		/* time not inside the thread's own collection */
	uint64_t own_gc_ns;		/* off the CPU while itself collecting */
};

struct analysis {
	struct interval_list gcs;	/* every garbage collection */
	struct interval_list waits;	/* off-CPU intervals over the threshold */
	struct thread_totals *totals;	/* per thread, indexed by totals_index */
	size_t ntotals, totals_cap;
	struct hash_index totals_index;	/* by (pid, tid) */
	int *exact_gc_pids;		/* processes whose collections are probed */
	size_t nexact, exact_cap;
	uint64_t intervals;		/* off-CPU intervals summed by the kernel */
	struct gil_blame blame;		/* who held the GIL during each thread's waits */
	struct label_table labels;	/* --label: time per label value */
};

void analysis_init(struct analysis *a);
void analysis_free(struct analysis *a);
/* --rotate: forgets the period's collections, waits and totals; keeps what
 * is known of the processes (which have probed collections). */
void analysis_next_period(struct analysis *a);
int analysis_add(struct interval_list *l, const struct interval *iv);
int analysis_set_exact_gc(struct analysis *a, int pid);
int analysis_gc_is_exact(const struct analysis *a, int pid);
/* The sample state of a kernel off-CPU reason (enum ep_offcpu_reason). */
int analysis_reason_state(int reason);
/* Adds count intervals and ns of one thread in one state (own_gc: while it
 * was itself collecting). 0 or -1. */
int analysis_add_totals(struct analysis *a, int pid, int tid, int state, int own_gc,
			uint64_t count, uint64_t ns);

/* 1 if the kernel's totals have mentioned thread (pid, tid) this period. */
int analysis_has_thread(const struct analysis *a, int pid, int tid);
/* Totals per thread over samples, collections and the kernel's off-CPU
 * totals; *out is malloc'ed. */
size_t analysis_thread_states(const struct analysis *a, const struct profile *p,
			      struct thread_states **out);
/*
 * Lays each thread's --idle timeline out without overlaps, keeping every
 * sample's weight: samples marked exact (intervals measured whole) keep
 * their place; the others (on-CPU samples, sampled short waits) start at
 * their time or right after the previous one, cut in pieces around exact
 * ones in their way. Without this the writers would cut a 1/rate-long
 * sample where the next begins, and the flame graph would lose its time.
 * Sorts. 0 or -1 (out of memory).
 */
int analysis_fit_timeline(struct profile *p);
/* Adds every off-CPU interval to the profile as an exact sample weighted by
 * its duration, its stack topped by a frame naming the reason ([GIL wait]...). */
int analysis_add_idle_samples(const struct analysis *a, struct profile *p);
/* Appends [GC gen N] (gen >= 0) and the state's marker to ids[n...]; returns n. */
uint32_t analysis_idle_markers(struct profile *p, uint32_t *ids, uint32_t n, int state, int gen);
const char *state_marker(int state);

#endif
