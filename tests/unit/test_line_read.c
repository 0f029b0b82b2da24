// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* line_read: /proc's lines whole or not at all (issue 28 item 3). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include "line_read.h"

/* The lines line_read gives of text (n bytes) with a buffer of size, joined by '|'. */
static unsigned long lines_of(const char *text, size_t n, size_t size, char *joined, size_t jlen)
{
	FILE *f = fmemopen((void *)text, n, "r");
	unsigned long skipped = 0;
	char buf[64];

	assert_non_null(f);
	assert_true(size <= sizeof(buf));
	joined[0] = 0;
	while (line_read(f, buf, size, &skipped) >= 0) {
		strncat(joined, buf, jlen - strlen(joined) - 2);
		strcat(joined, "|");
	}
	fclose(f);
	return skipped;
}

static void lines_that_fit_are_given_without_their_newline(void **state)
{
	static const char text[] = "a\n\nbcd\nlast";
	char got[128];

	(void)state;
	assert_int_equal(lines_of(text, sizeof(text) - 1, 8, got, sizeof(got)), 0);
	assert_string_equal(got, "a||bcd|last|");
	/* size - 1 bytes fit exactly, also as the last line */
	assert_int_equal(lines_of("1234567\n89", 10, 8, got, sizeof(got)), 0);
	assert_string_equal(got, "1234567|89|");
	assert_int_equal(lines_of("1234567", 7, 8, got, sizeof(got)), 0);
	assert_string_equal(got, "1234567|");
}

static void a_longer_line_is_skipped_whole_never_split(void **state)
{
	/* fgets(8) would have given "12345 /" then "etc/x" as a line of its own */
	static const char text[] = "ok\n12345678 /etc/x\nnext\n0123456789abcdef";
	char got[128];

	(void)state;
	assert_int_equal(lines_of(text, sizeof(text) - 1, 8, got, sizeof(got)), 2);
	assert_string_equal(got, "ok|next|");
}

static void a_line_holding_a_nul_is_skipped(void **state)
{
	static const char text[] = "a\0/etc/x\nb\n";
	char got[128];

	(void)state;
	assert_int_equal(lines_of(text, sizeof(text) - 1, 32, got, sizeof(got)), 1);
	assert_string_equal(got, "b|");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(lines_that_fit_are_given_without_their_newline),
		cmocka_unit_test(a_longer_line_is_skipped_whole_never_split),
		cmocka_unit_test(a_line_holding_a_nul_is_skipped),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
