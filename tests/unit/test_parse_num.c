// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* parse_num: the command line's number parsers (record, top, diff). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>
#include "parse_num.h"

static void reals_are_finite_decimal_and_bounded(void **state)
{
	static const char *const bad[] = { "", " 1", "1 ", "1s", "inf", "-inf", "nan", "NAN",
					   "0x10", "1p3", "1e999", "-1", "0", "101", "infinity" };
	double v;
	size_t i;

	(void)state;
	assert_int_equal(parse_real("2.5", 0, 1, 100, &v), 0);
	assert_true(v == 2.5);
	assert_int_equal(parse_real("1e2", 0, 1, 100, &v), 0);
	assert_true(v == 100);
	assert_int_equal(parse_real("0", 0, 0, 100, &v), 0);	/* min included */
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(parse_real(bad[i], 0, 1, 100, &v), -1);
}

static void integers_are_digits_only(void **state)
{
	static const char *const bad[] = { "", "+5", "-5", " 5", "5 ", "0x5", "5.0", "0",
					   "10001", "99999999999999999999999" };
	unsigned long v;
	size_t i;

	(void)state;
	assert_int_equal(parse_ulong("10000", 1, 10000, &v), 0);
	assert_int_equal(v, 10000);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(parse_ulong(bad[i], 1, 10000, &v), -1);
}

static void a_number_then_more_text(void **state)
{
	const char *end;
	unsigned long v;

	(void)state;
	assert_int_equal(parse_ulong_at("12,34", 1, 100, &end, &v), 0);
	assert_int_equal(v, 12);
	assert_string_equal(end, ",34");
	assert_int_equal(parse_ulong_at(",34", 1, 100, &end, &v), -1);
	assert_int_equal(parse_ulong_at("-3,4", 1, 100, &end, &v), -1);
}

static void pids_are_positive_ints(void **state)
{
	char big[32];
	pid_t pid;

	(void)state;
	assert_int_equal(parse_pid("4242", &pid), 0);
	assert_int_equal(pid, 4242);
	snprintf(big, sizeof(big), "%d", INT_MAX);
	assert_int_equal(parse_pid(big, &pid), 0);
	assert_int_equal(pid, INT_MAX);
	snprintf(big, sizeof(big), "%lld", (long long)INT_MAX + 1);
	assert_int_equal(parse_pid(big, &pid), -1);
	assert_int_equal(parse_pid("0", &pid), -1);
	assert_int_equal(parse_pid("-1", &pid), -1);
	assert_int_equal(parse_pid("1,2", &pid), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(reals_are_finite_decimal_and_bounded),
		cmocka_unit_test(integers_are_digits_only),
		cmocka_unit_test(a_number_then_more_text),
		cmocka_unit_test(pids_are_positive_ints),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
