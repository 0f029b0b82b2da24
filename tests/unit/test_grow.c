// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* grow_array: the growable array every userspace list uses. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>
#include "grow.h"

struct item {
	int a, b;
};

static void empty_array_gets_the_minimum(void **state)
{
	struct item *v = NULL;
	size_t cap = 0;

	(void)state;
	assert_int_equal(GROW_ARRAY(v, cap, 1), 0);
	assert_non_null(v);
	assert_int_equal(cap, GROW_MIN_ITEMS);
	v[cap - 1] = (struct item){ 1, 2 };	/* ASan: the whole capacity is there */
	free(v);
}

static void doubles_until_need_fits_and_keeps_items(void **state)
{
	int *v = NULL;
	size_t cap = 0, i;

	(void)state;
	for (i = 0; i < 1000; i++) {
		assert_int_equal(GROW_ARRAY(v, cap, i + 1), 0);
		assert_true(cap >= i + 1);
		v[i] = (int)i;
	}
	assert_int_equal(cap, 1024);
	for (i = 0; i < 1000; i++)
		assert_int_equal(v[i], (int)i);
	/* a jump: straight to the power of two above need */
	assert_int_equal(GROW_ARRAY(v, cap, 5000), 0);
	assert_int_equal(cap, 8192);
	assert_int_equal(v[999], 999);
	free(v);
}

static void enough_room_changes_nothing(void **state)
{
	int *v = malloc(4 * sizeof(*v)), *before = v;
	size_t cap = 4;

	(void)state;
	assert_non_null(v);
	assert_int_equal(GROW_ARRAY(v, cap, 4), 0);
	assert_ptr_equal(v, before);
	assert_int_equal(cap, 4);
	assert_int_equal(GROW_ARRAY(v, cap, 0), 0);
	assert_int_equal(cap, 4);
	free(v);
}

/* A size that overflows fails without touching the array. */
static void overflow_keeps_the_old_array(void **state)
{
	struct item *v = NULL, *before;
	size_t cap = 0;

	(void)state;
	assert_int_equal(GROW_ARRAY(v, cap, 3), 0);
	v[2] = (struct item){ 7, 8 };
	before = v;
	errno = 0;
	assert_int_equal(GROW_ARRAY(v, cap, SIZE_MAX / sizeof(*v) + 1), -1);
	assert_int_equal(errno, ENOMEM);
	errno = 0;
	assert_int_equal(GROW_ARRAY(v, cap, SIZE_MAX), -1);
	assert_int_equal(errno, ENOMEM);
	assert_ptr_equal(v, before);
	assert_int_equal(cap, GROW_MIN_ITEMS);
	assert_int_equal(v[2].a, 7);
	assert_int_equal(v[2].b, 8);
	free(v);
}

static void zero_item_size_is_refused(void **state)
{
	void *v = NULL;
	size_t cap = 0;

	(void)state;
	errno = 0;
	assert_int_equal(grow_array(&v, &cap, 1, 0), -1);
	assert_int_equal(errno, EINVAL);
	assert_null(v);
	assert_int_equal(cap, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(empty_array_gets_the_minimum),
		cmocka_unit_test(doubles_until_need_fits_and_keeps_items),
		cmocka_unit_test(enough_room_changes_nothing),
		cmocka_unit_test(overflow_keeps_the_old_array),
		cmocka_unit_test(zero_item_size_is_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
