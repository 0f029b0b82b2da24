// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* stack_table: stacks by (pid, id); a deleted one leaves every other found
 * (linear probing without tombstones: the entries after it move back). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>
#include "stack_table.h"

static void deletes_keep_the_others(void **state)
{
	enum { N = 5000 };
	struct stack_table t = { 0 };
	uint32_t frames[2];
	const struct stack_entry *e;
	uint64_t id;

	(void)state;
	for (id = 1; id <= N; id++) {
		frames[0] = (uint32_t)id;
		frames[1] = (uint32_t)(id * 7);
		/* ids of a few slots apart, so runs of probing form */
		assert_int_equal(stack_table_put(&t, (int)(id % 3), id * 4096, frames, 2), 0);
	}
	for (id = 1; id <= N; id += 2)
		stack_table_delete(&t, (int)(id % 3), id * 4096);
	stack_table_delete(&t, 1, 12345);	/* not kept: nothing happens */
	assert_int_equal(t.n, N / 2);
	for (id = 1; id <= N; id++) {
		e = stack_table_get(&t, (int)(id % 3), id * 4096);
		if (id % 2) {
			assert_null(e);
			continue;
		}
		assert_non_null(e);
		assert_int_equal(e->frames[0], (uint32_t)id);
		assert_int_equal(e->frames[1], (uint32_t)(id * 7));
	}
	stack_table_free(&t);
}

/* A process's stacks all go at once; those of others stay; a stack put
 * again replaces its frames. */
static void dropping_a_pid_keeps_the_others(void **state)
{
	struct stack_table t = { 0 };
	uint32_t frames[1];
	const struct stack_entry *e;
	uint64_t id;

	(void)state;
	for (id = 1; id <= 3000; id++) {
		frames[0] = (uint32_t)id;
		assert_int_equal(stack_table_put(&t, (int)(id % 3), id, frames, 1), 0);
	}
	frames[0] = 7;
	assert_int_equal(stack_table_put(&t, 2, 2, frames, 1), 0);
	stack_table_drop_pid(&t, 1);
	assert_int_equal(t.n, 2000);
	for (id = 1; id <= 3000; id++) {
		e = stack_table_get(&t, (int)(id % 3), id);
		if (id % 3 == 1) {
			assert_null(e);
			continue;
		}
		assert_non_null(e);
		assert_int_equal(e->frames[0], id == 2 ? 7 : (uint32_t)id);
	}
	stack_table_free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(deletes_keep_the_others),
		cmocka_unit_test(dropping_a_pid_keeps_the_others),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
