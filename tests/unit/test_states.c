// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Unit tests of user/model/states.c: the one table of thread states and their
 * spellings (issue 19), made from the one list include/ep_states.h (issue 45),
 * which this test reads too: a new state is checked without a copy here. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "analysis.h"
#include "diff.h"
#include "ebpfprof.h"
#include "ep_states.h"
#include "states.h"
#include "thread_dump.h"

/* Every spelling of every state, from the one list (include/ep_states.h),
 * in its order: the table states.c makes from it must hold each row where
 * the enum says, with every spelling and its reason. */
#define WANT_REASON_OFF(r)	EP_OFF_##r
#define WANT_REASON_ON_CPU	EP_TOTAL_ON_CPU
#define WANT_REASON_NONE	(-1)
#define WANT_ROW(id, reason_, group_, name_, title_, column_, short_, top_, marker_, dump_,	\
		 noise_)								\
	{ STATE_##id, name_, title_, column_, short_, marker_, dump_, top_,			\
	  WANT_REASON_##reason_, STATE_GROUP_##group_, noise_ },

static const struct {
	int state;
	const char *name, *title, *column, *short_label, *marker, *dump_name;
	int top_col, reason, group;
	double run_noise;
} want[STATE_MAX] = {
	EP_STATES(WANT_ROW)
	{ STATE_IDLE, "idle", "?", NULL, NULL, NULL, NULL, 0, -1, -1, 0 },
};

static void test_enum_order_and_spellings(void **state)
{
	int s;

	(void)state;
	for (s = 0; s < STATE_MAX; s++) {
		const struct state_spelling *row = &state_table[s];

		assert_int_equal(want[s].state, s);
		assert_string_equal(sample_state_name(s), want[s].name);
		assert_string_equal(diff_state_title(s), want[s].title);
		/* no marker of its own: a sample of it ends in other's */
		assert_string_equal(state_marker(s), want[s].marker ? want[s].marker : "[off-CPU]");
		if (want[s].column)
			assert_string_equal(row->column, want[s].column);
		else
			assert_null(row->column);
		if (want[s].short_label)
			assert_string_equal(row->short_label, want[s].short_label);
		else
			assert_null(row->short_label);
		if (want[s].dump_name)
			assert_string_equal(row->dump_name, want[s].dump_name);
		else
			assert_null(row->dump_name);
		assert_int_equal(row->top_col, want[s].top_col);
		assert_int_equal(row->reason, want[s].reason);
		assert_int_equal(row->group, want[s].group);
		assert_true(row->run_noise == want[s].run_noise);
	}
	/* idle is last: the states a recording splits time into are those before */
	assert_int_equal(STATE_RECORDED, STATE_MAX - 1);
	assert_int_equal(STATE_RECORDED, STATE_IDLE);
}

/* The words a recording, dump and diff used before the one list: old
 * recordings and their readers still read them (the 9092b2a fixture). */
static void test_old_names_kept(void **state)
{
	static const char *const names[] = { "on-cpu", "gc", "gil-wait", "waiting-for-gc",
					      "lock-wait", "io", "sleep", "preempted", "other" };
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		assert_true(state_by_name(names[i]) >= 0);
	assert_int_equal(state_by_name("idle"), -1);	/* not a recorded state */
	assert_int_equal(state_by_name("nonsense"), -1);
}

/* The Dask report's columns: every recorded state in exactly one, each
 * column with some state, on-CPU and GC the ones on a CPU. */
static void test_groups(void **state)
{
	int s, g, members[STATE_GROUP_MAX] = { 0 };

	(void)state;
	for (s = 0; s < STATE_RECORDED; s++) {
		assert_true(state_table[s].group >= 0 && state_table[s].group < STATE_GROUP_MAX);
		members[state_table[s].group]++;
	}
	assert_int_equal(state_table[STATE_IDLE].group, -1);
	for (g = 0; g < STATE_GROUP_MAX; g++) {
		assert_true(members[g] > 0);
		assert_non_null(state_groups[g].key);
		assert_non_null(state_groups[g].title);
	}
	assert_true(state_groups[state_table[STATE_ON_CPU].group].on_cpu);
	assert_true(state_groups[state_table[STATE_GC].group].on_cpu);
	for (s = 0; s < STATE_RECORDED; s++)
		if (state_table[s].reason != STATE_NO_REASON && s != STATE_ON_CPU)
			assert_false(state_groups[state_table[s].group].on_cpu);
	/* the report's keys and the test of it (tests/integration/test_dask.py) */
	assert_string_equal(state_groups[state_table[STATE_ON_CPU].group].key, "on_cpu");
	assert_string_equal(state_groups[state_table[STATE_GC].group].key, "gc");
	assert_string_equal(state_groups[state_table[STATE_SLEEP].group].key, "io_sleep");
}

/*
 * A new state has every spelling: only these gaps are meant (that output
 * never shows the state). on-CPU time has stacks, no marker; dump sees
 * reasons, and no reason means GC; idle is a gap in a timeline, named only
 * in a recording. (top showed no "other" once: a Nanny's thread in waitpid
 * read 0% in every column.)
 */
static int gap_meant(int s, const char *field)
{
	if (s == STATE_ON_CPU)
		return !strcmp(field, "marker");
	if (s == STATE_GC)
		return !strcmp(field, "dump_name");
	return s == STATE_IDLE && strcmp(field, "name");
}

static void check_spelling(int s, const char *field, const char *v)
{
	if (v)
		assert_true(v[0] != 0);
	else if (!gap_meant(s, field))
		fail_msg("state %d (%s) has no %s", s, state_table[s].name, field);
}

static void test_every_state_has_every_spelling(void **state)
{
	int s;

	(void)state;
	for (s = 0; s < STATE_MAX; s++) {
		const struct state_spelling *row = &state_table[s];

		check_spelling(s, "name", row->name);
		check_spelling(s, "title", row->title);
		check_spelling(s, "column", row->column);
		check_spelling(s, "short_label", row->short_label);
		check_spelling(s, "marker", row->marker);
		check_spelling(s, "dump_name", row->dump_name);
		/* top shows a state iff it has a place among its columns */
		assert_int_equal(!!row->short_label, row->top_col > 0);
		/* they line up: the summary's columns are 12 wide, top's 7 */
		if (row->column)
			assert_true(strlen(row->column) <= 12);
		if (row->short_label)
			assert_true(strlen(row->short_label) <= 7);
	}
}

static const char *field_of(const struct state_spelling *row, int f)
{
	switch (f) {
	case 0: return row->name;
	case 1: return row->title;
	case 2: return row->column;
	case 3: return row->short_label;
	case 4: return row->marker;
	default: return row->dump_name;
	}
}

/* Two states spelled alike would merge in a recording's JSON object, in
 * diff's reading of it, or on screen. */
static void test_spellings_unique(void **state)
{
	int f, a, b;

	(void)state;
	for (f = 0; f < 6; f++)
		for (a = 0; a < STATE_MAX; a++)
			for (b = a + 1; b < STATE_MAX; b++) {
				const char *x = field_of(&state_table[a], f);
				const char *y = field_of(&state_table[b], f);

				if (x && y && !strcmp(x, y))
					fail_msg("states %d and %d both spelled %s", a, b, x);
			}
	for (a = 0; a < STATE_MAX; a++)
		for (b = a + 1; b < STATE_MAX; b++)
			if (state_table[a].top_col)
				assert_int_not_equal(state_table[a].top_col, state_table[b].top_col);
}

/* Every reason the BPF classifier gives is claimed by exactly one state. */
static void test_reasons(void **state)
{
	int reason, s, claims;

	(void)state;
	for (reason = 0; reason < EP_OFF_REASONS; reason++) {
		for (claims = 0, s = 0; s < STATE_MAX; s++)
			claims += state_table[s].reason == reason;
		assert_int_equal(claims, 1);
		assert_int_equal(state_table[state_of_reason(reason)].reason, reason);
		assert_int_equal(analysis_reason_state(reason), state_of_reason(reason));
	}
	assert_int_equal(state_of_reason(EP_OFF_GIL_GC), STATE_GIL_WAIT_GC);
	assert_int_equal(state_of_reason(EP_TOTAL_ON_CPU), STATE_ON_CPU);
	assert_int_equal(state_of_reason(EP_TOTAL_KINDS), STATE_OTHER);
	assert_int_equal(state_of_reason(STATE_NO_REASON), STATE_OTHER);
	assert_int_equal(state_of_reason(-7), STATE_OTHER);
}

/* dump speaks the table's states, with the words it always used:
 * running/stopped/gone, then each state's dump_name. */
static void test_dump_names(void **state)
{
	int reason;

	(void)state;
	assert_string_equal(dump_state_name(STATE_ON_CPU), "running");
	assert_string_equal(dump_state_name(DUMP_STOPPED), "stopped");
	assert_string_equal(dump_state_name(DUMP_GONE), "gone");
	assert_string_equal(dump_state_name(STATE_PREEMPTED), "preempted");
	assert_string_equal(dump_state_name(STATE_GIL_WAIT), "gil_wait");
	assert_string_equal(dump_state_name(STATE_GIL_WAIT_GC), "gc_wait");
	assert_string_equal(dump_state_name(STATE_LOCK_WAIT), "lock_wait");
	assert_string_equal(dump_state_name(STATE_IO), "io");
	assert_string_equal(dump_state_name(STATE_SLEEP), "sleep");
	assert_string_equal(dump_state_name(STATE_OTHER), "other");
	assert_string_equal(dump_state_name(STATE_GC), "other");	/* dump never says it */
	assert_string_equal(dump_state_name(STATE_MAX + 5), "other");
	assert_string_equal(dump_state_name(-99), "other");
	/* every reason the classifier gives has a word, the one it had */
	for (reason = 0; reason < EP_OFF_REASONS; reason++)
		assert_non_null(state_table[state_of_reason(reason)].dump_name);
}

/* top's columns, in its order (not the enum's: GIL before GC); "other" too,
 * so that a thread in waitpid (a Nanny in Popen.wait) adds up to its time. */
static void test_top_columns(void **state)
{
	int cols[STATE_MAX], n = state_top_columns(cols), j, shown = 0, s;

	(void)state;
	for (s = 0; s < STATE_MAX; s++)
		shown += state_table[s].top_col > 0;
	assert_int_equal(n, shown);
	assert_int_equal(n, STATE_RECORDED);	/* every recorded state has a column */
	for (j = 0; j < n; j++)
		assert_int_equal(state_table[cols[j]].top_col, j + 1);
	assert_int_equal(cols[0], STATE_ON_CPU);
	assert_int_equal(cols[1], STATE_GIL_WAIT);
	assert_int_equal(cols[2], STATE_GC);
}

/* diff's noise model: preemption is the machine's load (two copies of one
 * program side by side differ 2x); every other state so far takes diff's
 * --noise. */
static void test_run_noise(void **state)
{
	(void)state;
	assert_true(state_table[STATE_PREEMPTED].run_noise == 0.5);
	assert_true(state_table[STATE_IO].run_noise == 0);
	assert_true(state_table[STATE_GIL_WAIT].run_noise == 0);
}

#define GIL_AT	0x7f0000001000ull	/* the interpreter's GIL mutex word */
#define GIL_END	(GIL_AT + 64)

/* The classifier the kernel runs at every switch-out and userspace runs on
 * threads blocked before the recording: each syscall to its reason. */
static void test_classify_blocked(void **state)
{
	static const struct {
		long nr;
		__u64 arg0;
		int d;
		int want;
	} cases[] = {
		{ EP_NR_futex, GIL_AT, 0, EP_OFF_GIL },
		{ EP_NR_futex, GIL_END - 1, 0, EP_OFF_GIL },
		{ EP_NR_futex, GIL_END, 0, EP_OFF_LOCK },	/* just past the GIL */
		{ EP_NR_futex, GIL_AT - 1, 0, EP_OFF_LOCK },
		{ EP_NR_futex_waitv, GIL_AT, 0, EP_OFF_LOCK },	/* its arg0 is no address */
		{ EP_NR_nanosleep, 0, 0, EP_OFF_SLEEP },
		{ EP_NR_clock_nanosleep, 1, 0, EP_OFF_SLEEP },
		{ EP_NR_select, 0, 0, EP_OFF_SLEEP },		/* no descriptors: a sleep */
		{ EP_NR_pselect6, 0, 0, EP_OFF_SLEEP },
		{ EP_NR_select, 5, 0, EP_OFF_IO },
		{ EP_NR_read, 3, 0, EP_OFF_IO },
		{ EP_NR_recvfrom, 3, 0, EP_OFF_IO },
		{ EP_NR_epoll_wait, 3, 0, EP_OFF_IO },
		{ EP_NR_io_uring_enter, 3, 0, EP_OFF_IO },
		{ EP_NR_wait4, 1234, 0, EP_OFF_OTHER },		/* Popen.wait */
		{ EP_NR_wait4, 1234, 1, EP_OFF_IO },		/* uninterruptible: disk */
		{ -1, 0, 0, EP_OFF_OTHER },			/* in no syscall */
		{ -1, 0, 1, EP_OFF_IO },			/* a page fault */
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int got = ep_classify_blocked(cases[i].nr, cases[i].arg0, cases[i].d, GIL_AT, GIL_END);

		if (got != cases[i].want)
			fail_msg("case %zu (syscall %ld): reason %d, want %d", i, cases[i].nr, got,
				 cases[i].want);
	}
	/* no GIL known (0, 0): every futex is a lock */
	assert_int_equal(ep_classify_blocked(EP_NR_futex, 0, 0, 0, 0), EP_OFF_LOCK);
}

static void test_out_of_range(void **state)
{
	(void)state;
	assert_ptr_equal(state_spelling(STATE_MAX), &state_table[STATE_OTHER]);
	assert_ptr_equal(state_spelling(-1), &state_table[STATE_OTHER]);
	assert_string_equal(sample_state_name(STATE_MAX), "other");
	assert_string_equal(state_marker(STATE_MAX), "[off-CPU]");
	assert_string_equal(state_marker(-1), "[off-CPU]");
	assert_string_equal(diff_state_title(-1), "?");
	assert_string_equal(diff_state_title(STATE_MAX), "?");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_enum_order_and_spellings),
		cmocka_unit_test(test_old_names_kept),
		cmocka_unit_test(test_groups),
		cmocka_unit_test(test_every_state_has_every_spelling),
		cmocka_unit_test(test_spellings_unique),
		cmocka_unit_test(test_reasons),
		cmocka_unit_test(test_dump_names),
		cmocka_unit_test(test_top_columns),
		cmocka_unit_test(test_run_noise),
		cmocka_unit_test(test_classify_blocked),
		cmocka_unit_test(test_out_of_range),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
