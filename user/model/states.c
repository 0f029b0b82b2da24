// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The one table of thread states and their spellings, made from the rows of
 * include/ep_states.h (see states.h). */
#include <stddef.h>
#include "ebpfprof.h"
#include <stdio.h>
#include <string.h>

#include "states.h"

/* a row's .reason from its REASON (ep_states.h) */
#define REASON_OF_OFF(r)	EP_OFF_##r
#define REASON_OF_ON_CPU	EP_TOTAL_ON_CPU	/* the scheduler's exact runs */
#define REASON_OF_NONE		STATE_NO_REASON

#define STATE_ROW(id, reason_, group_, name_, title_, column_, short_, top_, marker_,	\
		  dump_, noise_)							\
	[STATE_##id] = {								\
		.name = name_, .title = title_, .column = column_,			\
		.short_label = short_, .top_col = top_, .marker = marker_,		\
		.dump_name = dump_, .reason = REASON_OF_##reason_,			\
		.run_noise = noise_, .group = STATE_GROUP_##group_,			\
	},

const struct state_spelling state_table[STATE_MAX] = {
	EP_STATES(STATE_ROW)
	[STATE_IDLE] = {
		/* a gap, not a state a thread is in: only the recording names it */
		.name = "idle", .reason = STATE_NO_REASON, .group = -1,
	},
};

#define GROUP_ROW(id, key_, title_, on_cpu_)	\
	[STATE_GROUP_##id] = { .key = key_, .title = title_, .on_cpu = on_cpu_ },

const struct state_group_row state_groups[STATE_GROUP_MAX] = {
	EP_STATE_GROUPS(GROUP_ROW)
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
