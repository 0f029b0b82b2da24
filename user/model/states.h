/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The states a thread's time is split into, and every spelling of each that
 * an output uses (issue 19). Every output reads these rows; none keeps its
 * own list. A new state is one enum entry here and one row in states.c, plus
 * its classification: the BPF off-CPU reason (enum ep_offcpu_reason in
 * include/ebpfprof.h and bpf/offcpu.bpf.c) that the row's .reason names.
 */
#ifndef EP_STATES_H
#define EP_STATES_H

/* What a thread was doing during a sample. The order is the summary's
 * column order and the order of states_s in a recording. */
enum sample_state {
	STATE_ON_CPU = 0,
	STATE_GC,		/* on CPU, collecting garbage */
	STATE_GIL_WAIT,
	STATE_GIL_WAIT_GC,	/* waiting for the GIL while its holder collects */
	STATE_LOCK_WAIT,
	STATE_IO,
	STATE_SLEEP,
	STATE_PREEMPTED,
	STATE_OTHER,		/* off CPU for another reason */
	STATE_IDLE,		/* not observed: a gap in the thread's timeline */
	STATE_MAX,
};

#define STATE_NO_REASON	(-1)	/* .reason of a state no off-CPU reason means */
/* The states a thread's time is split into (a recording's states_s): all but
 * idle, which is a gap. */
#define STATE_RECORDED	STATE_IDLE

/*
 * The version of the "ebpfprof" object a speedscope recording carries, read
 * back by ebpfprof diff and the Dask package (python/ebpfprof_dask).
 *   1  up to 9092b2a
 *   2  "states": the names of the states its states_s are drawn from, in the
 *      table's order, so a reader knows the vocabulary without a list of its own
 *   3  "labels" (with --label, --dask): time per state, samples and collections
 *      per label value
 *   4  "start_unix_s" (the session's wall-clock start); per label value with a
 *      series (labels.h) its "series" of time per state over "label_bin_s"
 *      bins and its top "functions"; a derived value's "sources" (the
 *      dask_key values under a dask_prefix)
 *   5  profiles named "[asyncio tasks] <process> (pid N)" (record --tasks):
 *      suspended tasks' task-seconds, not a thread's time; a reader before 5
 *      would take them for threads
 */
#define RECORDING_FORMAT_VERSION	5

/* One state's spellings; NULL where that output never shows the state. */
struct state_spelling {
	const char *name;	/* key and label: "waiting-for-gc" (a recording's
				 * states_s, pprof's state label, --gc-log's reason,
				 * diff's JSON) */
	const char *title;	/* diff's text: "waiting for GC" */
	const char *column;	/* record's summary column, 12 wide: "wait GC" */
	const char *short_label; /* top's share column, 7 wide: "waitGC" */
	int top_col;		/* its place among top's columns, from 1; 0: none */
	const char *marker;	/* the frame its idle samples end in: "[waiting for GC]" */
	const char *dump_name;	/* dump's state: "gc_wait" */
	int reason;		/* the off-CPU reason (ep_offcpu_reason) classified
				 * as this state, or STATE_NO_REASON */
	double run_noise;	/* diff: the relative run-to-run deviation assumed of
				 * this state's time when the machine's load, not the
				 * program, moves it; 0: diff's --noise */
};

extern const struct state_spelling state_table[STATE_MAX];

/* The row of state; STATE_OTHER's when state is out of range. */
const struct state_spelling *state_spelling(int state);
/* The state an off-CPU reason is shown as: STATE_OTHER if none claims it. */
int state_of_reason(int reason);
/* The states top shows, in its column order, into out; returns how many. */
int state_top_columns(int out[STATE_MAX]);

const char *sample_state_name(enum sample_state s);
/* The recorded state named name (a recording's key), or -1. */
int state_by_name(const char *name);
/* The marker frame of a collection into buf: "[GC gen 2]", or "[GC]" when
 * its generation is unknown (gen < 0). */
const char *state_gc_marker(int gen, char *buf, size_t len);

#endif
