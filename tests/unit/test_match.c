// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * --match and --pid lists: command lines as the target wrote them (any
 * bytes) become one matchable line; pid lists are strict.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include "match.h"
#include "multi.h"

static void cmdline_joins_arguments(void **state)
{
	char buf[64];

	(void)state;
	memcpy(buf, "python3\0-m\0distributed.cli.dask_worker\0", 39);
	assert_int_equal(cmdline_to_line(buf, 39), 38);
	assert_string_equal(buf, "python3 -m distributed.cli.dask_worker");
}

static void cmdline_hostile_bytes(void **state)
{
	char buf[16] = "a\nb\x1b[\0\0\0";

	(void)state;
	/* control bytes cannot forge a second line in a message */
	assert_int_equal(cmdline_to_line(buf, 8), 5);
	assert_string_equal(buf, "a?b?[");
	/* unterminated (truncated at the buffer's end) */
	memcpy(buf, "xyz", 3);
	assert_int_equal(cmdline_to_line(buf, 3), 3);
	assert_string_equal(buf, "xyz");
	/* only NULs: empty */
	memset(buf, 0, 4);
	assert_int_equal(cmdline_to_line(buf, 4), 0);
}

static void own_cmdline_matches(void **state)
{
	struct proc_matcher m;
	char line[MATCH_CMDLINE_MAX], err[256];

	(void)state;
	assert_int_equal(procfs_cmdline(getpid(), line, sizeof(line)), 0);
	assert_non_null(strstr(line, "test_match"));
	assert_int_equal(matcher_init(&m, "test_ma+tch$|^nothing", err, sizeof(err)), 0);
	assert_true(matcher_matches(&m, line));
	assert_false(matcher_matches(&m, "python3 app.py"));
	matcher_free(&m);
	assert_int_equal(procfs_cmdline(0x7ffffff0, line, sizeof(line)), -1);
}

static void bad_regex_is_named(void **state)
{
	struct proc_matcher m;
	char err[256];

	(void)state;
	assert_int_equal(matcher_init(&m, "worker(", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "invalid --match regular expression 'worker('"));
}

static void pid_lists(void **state)
{
	static const char *bad[] = { "", ",", "1,", ",1", "1,,2", "0", "-1", "+1", " 1",
				     "1 ", "1,x", "3,3", "99999999999", "1;2" };
	pid_t *v;
	size_t n;

	(void)state;
	assert_int_equal(parse_pid_list("42", &v, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(v[0], 42);
	free(v);
	assert_int_equal(parse_pid_list("1,22,333", &v, &n), 0);
	assert_int_equal(n, 3);
	assert_int_equal(v[2], 333);
	free(v);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(parse_pid_list(bad[i], &v, &n), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(cmdline_joins_arguments),
		cmocka_unit_test(cmdline_hostile_bytes),
		cmocka_unit_test(own_cmdline_matches),
		cmocka_unit_test(bad_regex_is_named),
		cmocka_unit_test(pid_lists),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
