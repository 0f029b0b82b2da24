// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The one table of thread states and their spellings (see states.h). */
#include <stddef.h>
#include "ebpfprof.h"
#include <stdio.h>
#include <string.h>

#include "states.h"

const struct state_spelling state_table[STATE_MAX] = {
	[STATE_ON_CPU] = {
		.name = "on-cpu", .title = "on-CPU", .column = "on-CPU",
		.short_label = "on-CPU", .top_col = 1,
		.marker = NULL,		/* on-CPU samples have their own stacks */
		.dump_name = "running", .reason = EP_TOTAL_ON_CPU,	/* the scheduler's exact runs */
	},
	[STATE_GC] = {
		.name = "gc", .title = "GC", .column = "GC",
		.short_label = "GC", .top_col = 3,
		.marker = "[GC]",
		.dump_name = NULL,	/* dump reads reasons: a collector is running */
		.reason = STATE_NO_REASON,
	},
	[STATE_GIL_WAIT] = {
		.name = "gil-wait", .title = "GIL wait", .column = "GIL wait",
		.short_label = "GIL", .top_col = 2,
		.marker = "[GIL wait]", .dump_name = "gil_wait", .reason = EP_OFF_GIL,
	},
	[STATE_GIL_WAIT_GC] = {
		.name = "waiting-for-gc", .title = "waiting for GC", .column = "wait GC",
		.short_label = "waitGC", .top_col = 4,
		.marker = "[waiting for GC]", .dump_name = "gc_wait", .reason = EP_OFF_GIL_GC,
	},
	[STATE_LOCK_WAIT] = {
		.name = "lock-wait", .title = "lock wait", .column = "lock wait",
		.short_label = "lock", .top_col = 5,
		.marker = "[lock wait]", .dump_name = "lock_wait", .reason = EP_OFF_LOCK,
	},
	[STATE_IO] = {
		.name = "io", .title = "I/O", .column = "I/O",
		.short_label = "I/O", .top_col = 6,
		.marker = "[I/O wait]", .dump_name = "io", .reason = EP_OFF_IO,
	},
	[STATE_SLEEP] = {
		.name = "sleep", .title = "sleep", .column = "sleep",
		.short_label = "sleep", .top_col = 7,
		.marker = "[sleep]", .dump_name = "sleep", .reason = EP_OFF_SLEEP,
	},
	[STATE_PREEMPTED] = {
		.name = "preempted", .title = "preempted", .column = "preempted",
		.short_label = "preempt", .top_col = 8,
		.marker = "[preempted]", .dump_name = "preempted", .reason = EP_OFF_PREEMPTED,
		.run_noise = 0.5,	/* the machine's load, not the program */
	},
	[STATE_OTHER] = {
		.name = "other", .title = "other", .column = "other",
		.short_label = "other", .top_col = 9,
		.marker = "[off-CPU]", .dump_name = "other", .reason = EP_OFF_OTHER,
	},
	[STATE_IDLE] = {
		/* a gap, not a state a thread is in: only the recording names it */
		.name = "idle", .reason = STATE_NO_REASON,
	},
};

const struct state_spelling *state_spelling(int state)
{
	if (state < 0 || state >= STATE_MAX)
		state = STATE_OTHER;
	return &state_table[state];
}

int state_of_reason(int reason)
{
	int s;

	for (s = 0; reason != STATE_NO_REASON && s < STATE_MAX; s++)
		if (state_table[s].reason == reason)
			return s;
	return STATE_OTHER;
}

int state_top_columns(int out[STATE_MAX])
{
	int n = 0, col, s;

	for (col = 1; col <= STATE_MAX; col++)
		for (s = 0; s < STATE_MAX; s++)
			if (state_table[s].top_col == col && state_table[s].short_label)
				out[n++] = s;
	return n;
}

const char *sample_state_name(enum sample_state s)
{
	return state_spelling(s)->name;
}

int state_by_name(const char *name)
{
	int s;

	for (s = 0; s < STATE_RECORDED; s++)
		if (!strcmp(state_table[s].name, name))
			return s;
	return -1;
}

const char *state_gc_marker(int gen, char *buf, size_t len)
{
	if (gen < 0)
		snprintf(buf, len, "%s", state_table[STATE_GC].marker);
	else
		snprintf(buf, len, "[GC gen %d]", gen);
	return buf;
}
