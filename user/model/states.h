/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The states a thread's time is split into, and every spelling of each that
 * an output uses (issue 19). Every output reads these rows; none keeps its
 * own list. The rows are made from the one list, include/ep_states.h
 * (issue 45): a new state is a row there and its classification.
 */
#ifndef EP_STATES_TABLE_H
#define EP_STATES_TABLE_H

#include <stddef.h>
#include "ep_states.h"

/* What a thread was doing during a sample: ep_states.h's rows, then idle.
 * The order is the summary's column order and the order of states_s in a
 * recording. */
#define STATE_ENUM(id, ...)	STATE_##id,
enum sample_state {
	EP_STATES(STATE_ENUM)
	STATE_IDLE,		/* not observed: a gap in the thread's timeline */
	STATE_MAX,
};
#undef STATE_ENUM

/* The Dask report's columns (ep_states.h's EP_STATE_GROUPS), in order. */
#define STATE_GROUP_ENUM(id, ...)	STATE_GROUP_##id,
enum state_group {
	EP_STATE_GROUPS(STATE_GROUP_ENUM)
	STATE_GROUP_MAX,
};
#undef STATE_GROUP_ENUM

struct state_group_row {
	const char *key;	/* the report's JSON key, less "_s": "gil_wait" */
	const char *title;	/* its column: "GIL wait" */
	int on_cpu;		/* 1: time on a CPU */
};

extern const struct state_group_row state_groups[STATE_GROUP_MAX];

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
 *      would take them for threads; with labels (issue 45, added within 5: a
 *      reader checks for it) "state_groups", the Dask report's columns from
 *      include/ep_states.h: [{"key", "title", "on_cpu", "states": [...]}]
 */
#define RECORDING_FORMAT_VERSION	5

/* One state's spellings (see ep_states.h for each); NULL where that output
 * never shows the state. */
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
	int group;		/* enum state_group; -1: none (idle) */
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
