// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* task_spans: record --tasks' spans summed per stack and process, named,
 * bounded, cleared per period. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "task_spans.h"

static long add(struct task_spans *ts, int pid, uint32_t track, const uint32_t *frames,
		uint32_t n, uint64_t start, uint64_t end)
{
	struct task_span s = { .pid = pid, .track = track, .task_frame = frames[0],
			       .start_ns = start, .end_ns = end, .frames = (uint32_t *)frames,
			       .nframes = n };

	return task_spans_add(ts, &s);
}

static void sums_per_stack_and_process(void **state)
{
	const uint32_t a[] = { 1, 2, 3 }, b[] = { 1, 2 }, c[] = { 4, 5 };
	struct task_spans ts = { 0 };
	struct task_stack *v;
	long n;

	(void)state;
	assert_int_equal(add(&ts, 10, 1, a, 3, 0, 1000), 0);
	assert_int_equal(add(&ts, 10, 2, a, 3, 500, 2500), 1);
	assert_int_equal(add(&ts, 10, 3, b, 2, 0, 7), 2);
	assert_int_equal(add(&ts, 20, 1, c, 2, 0, 50), 3);
	add(&ts, 10, 4, c, 2, 9, 9);	/* no time: no stack */
	n = task_spans_stacks(&ts, 10, &v);
	assert_int_equal(n, 2);
	/* a stack before the longer ones it starts */
	assert_int_equal(v[0].nframes, 2);
	assert_int_equal(v[0].ns, 7);
	assert_int_equal(v[1].nframes, 3);
	assert_int_equal(v[1].ns, 3000);
	free(v);
	n = task_spans_stacks(&ts, 30, &v);
	assert_int_equal(n, 0);
	free(v);
	task_spans_free(&ts);
}

static int note_pid(int pid, void *arg)
{
	int *seen = arg;

	seen[++seen[0]] = pid;
	return 0;
}

static void names_and_processes(void **state)
{
	const uint32_t a[] = { 1 };
	struct task_spans ts = { 0 };
	int seen[8] = { 0 };
	char *title;

	(void)state;
	add(&ts, 20, 1, a, 1, 0, 1);
	add(&ts, 10, 1, a, 1, 0, 1);
	add(&ts, 20, 2, a, 1, 0, 1);
	assert_int_equal(task_spans_each_pid(&ts, note_pid, seen), 0);
	assert_int_equal(seen[0], 2);
	assert_int_equal(seen[1], 20);
	assert_int_equal(seen[2], 10);
	title = task_spans_title(&ts, 20);
	assert_string_equal(title, "[asyncio tasks] python (pid 20)");
	free(title);
	assert_int_equal(task_spans_name_process(&ts, 20, "server"), 0);
	assert_int_equal(task_spans_name_process(&ts, 20, "server2"), 0);
	title = task_spans_title(&ts, 20);
	assert_string_equal(title, "[asyncio tasks] server2 (pid 20)");
	free(title);
	task_spans_clear(&ts);
	assert_int_equal(ts.n, 0);
	title = task_spans_title(&ts, 20);
	assert_string_equal(title, "[asyncio tasks] server2 (pid 20)");
	free(title);
	task_spans_free(&ts);
}

static void bounded(void **state)
{
	const uint32_t a[] = { 1, 2 };
	struct task_spans ts = { 0 };
	size_t i;

	(void)state;
	for (i = 0; i < TASK_SPANS_MAX; i++)
		assert_true(add(&ts, 1, 1, a, 2, 0, 1) >= 0);
	assert_int_equal(add(&ts, 1, 1, a, 2, 0, 1), -1);
	assert_int_equal(ts.dropped, 1);
	task_spans_free(&ts);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(sums_per_stack_and_process),
		cmocka_unit_test(names_and_processes),
		cmocka_unit_test(bounded),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
