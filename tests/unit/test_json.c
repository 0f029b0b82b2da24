// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * JSON string escaping: every input, valid UTF-8 or not, must come out as a
 * valid JSON string.
 *
 * gcc -Wall -Wextra -g -Iinclude -Iuser/{base,cpython,model,output,diff,record,live,cli} tests/unit/test_json.c user/base/json.c \
 *     user/model/profile.c user/writer*.c -lz -lcmocka -o build/test_json
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "json.h"

#define FFFD "\xef\xbf\xbd"

/* json_write_string's output for s, as a malloc'd string. */
static char *written(const char *s)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(json_write_string(f, s), 0);
	assert_int_equal(fclose(f), 0);
	return buf;
}

/* Checks both entry points give `want` for s. */
static void check(const char *s, const char *want)
{
	char *got = written(s);
	char buf[4096];

	assert_string_equal(got, want);
	assert_int_equal(json_escape(s, buf, sizeof(buf)), strlen(want));
	assert_string_equal(buf, want);
	free(got);
}

static void test_plain(void **state)
{
	(void)state;
	check("", "\"\"");
	check(NULL, "\"\"");
	check("hello world", "\"hello world\"");
	check("a/b'c", "\"a/b'c\"");
}

static void test_quote_backslash(void **state)
{
	(void)state;
	check("a\"b", "\"a\\\"b\"");
	check("a\\b", "\"a\\\\b\"");
	check("\"\\\"", "\"\\\"\\\\\\\"\"");
}

static void test_control_chars(void **state)
{
	static const char *const named[32] = {
		['\b'] = "\\b", ['\f'] = "\\f", ['\n'] = "\\n",
		['\r'] = "\\r", ['\t'] = "\\t",
	};
	char in[2] = { 0, 0 }, want[16];
	int c;

	(void)state;
	for (c = 1; c < 0x20; c++) {
		in[0] = (char)c;
		if (named[c])
			snprintf(want, sizeof(want), "\"%s\"", named[c]);
		else
			snprintf(want, sizeof(want), "\"\\u%04x\"", c);
		check(in, want);
	}
	/* DEL and C1 are valid JSON raw, but escaped: a file read on a
	 * terminal must not carry a CSI (U+009B) the target chose */
	check("\x7f", "\"\\u007f\"");
	check("\xc2\x9b" "2J", "\"\\u009b2J\"");
	check("\xc2\x9f", "\"\\u009f\"");
	check("\xc2\xa0", "\"\xc2\xa0\"");		/* U+00A0 is text */
}

static void test_utf8_passthrough(void **state)
{
	(void)state;
	check("caf\xc3\xa9", "\"caf\xc3\xa9\"");			/* é */
	check("\xe2\x82\xac", "\"\xe2\x82\xac\"");			/* € */
	check("\xe8\xae\xa1\xe7\xae\x97", "\"\xe8\xae\xa1\xe7\xae\x97\"");	/* 计算 */
	check("\xf0\x9f\x98\x80", "\"\xf0\x9f\x98\x80\"");		/* 😀 */
	check("\xef\xbf\xbf", "\"\xef\xbf\xbf\"");			/* U+FFFF */
	check("\xf4\x8f\xbf\xbf", "\"\xf4\x8f\xbf\xbf\"");		/* U+10FFFF */
	check("\xc2\x80", "\"\\u0080\"");				/* U+0080, C1 */
}

static void test_invalid_utf8(void **state)
{
	(void)state;
	check("\xff", "\"" FFFD "\"");
	check("a\xfe" "b", "\"a" FFFD "b\"");
	check("\x80", "\"" FFFD "\"");				/* lone continuation */
	check("\xc0\xaf", "\"" FFFD FFFD "\"");			/* overlong '/' */
	check("\xc1\xbf", "\"" FFFD FFFD "\"");			/* overlong */
	check("\xe0\x80\xaf", "\"" FFFD FFFD FFFD "\"");	/* overlong, 3 bytes */
	check("\xf0\x80\x80\xaf", "\"" FFFD FFFD FFFD FFFD "\"");	/* overlong, 4 */
	check("\xed\xa0\x80", "\"" FFFD FFFD FFFD "\"");	/* surrogate D800 */
	check("\xf4\x90\x80\x80", "\"" FFFD FFFD FFFD FFFD "\"");	/* > U+10FFFF */
	check("\xf5\x80\x80\x80", "\"" FFFD FFFD FFFD FFFD "\"");
	/* A truncated sequence is one maximal subpart: one replacement. */
	check("\xe2\x82", "\"" FFFD "\"");
	check("\xe2\x82x", "\"" FFFD "x\"");
	check("\xf0\x9f\x98", "\"" FFFD "\"");
	check("\xf0\x9f\x98\"", "\"" FFFD "\\\"\"");
	check("\xc3", "\"" FFFD "\"");
	check("\xc3\xc3\xa9", "\"" FFFD "\xc3\xa9\"");
}

/* Is s valid UTF-8 with no raw control character, as JSON text must be? */
static int valid_json_text(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	int n;

	while (*p) {
		if (*p < 0x20)
			return 0;
		if (*p < 0x80) {
			p++;
			continue;
		}
		n = (*p >= 0xf0) ? 4 : (*p >= 0xe0) ? 3 : (*p >= 0xc2) ? 2 : 0;
		if (!n || *p > 0xf4)
			return 0;
		while (--n)
			if ((*++p & 0xc0) != 0x80)
				return 0;
		p++;
	}
	return 1;
}

static void test_random_bytes_stay_valid(void **state)
{
	char in[64], *out;
	unsigned seed = 12345;
	int i, j;

	(void)state;
	for (i = 0; i < 2000; i++) {
		for (j = 0; j < 63; j++) {
			seed = seed * 1103515245 + 12345;
			in[j] = (char)((seed >> 16) | 1);	/* never NUL */
		}
		in[63] = '\0';
		out = written(in);
		assert_true(valid_json_text(out));
		free(out);
	}
}

static void test_long_string(void **state)
{
	char in[3001], *out;
	size_t i;

	(void)state;
	/* Longer than the writer's internal buffer, with escapes across it. */
	for (i = 0; i < 3000; i++)
		in[i] = (i % 7 == 0) ? '\n' : 'x';
	in[3000] = '\0';
	out = written(in);
	assert_int_equal(strlen(out), 2 + 3000 + 3000 / 7 + 1);
	free(out);
}

/*
 * Issue 9 item 3: a \u00XX escape that ends exactly where the writer's
 * 512-byte buffer ends left no room for the closing quote (one byte written
 * past the buffer; ASan: stack-buffer-overflow in make check-asan). Every
 * length around the buffer's size, for every escape width.
 */
static void test_escape_at_buffer_end(void **state)
{
	static const char *const tails[] = { "\x01", "\n", "\xc3\xa9", FFFD, "\xff" };
	char in[1100], want[8000];
	size_t n, t;

	(void)state;
	for (t = 0; t < sizeof(tails) / sizeof(tails[0]); t++) {
		for (n = 490; n < 1040; n++) {
			char *got, esc[16];

			memset(in, 'a', n);
			strcpy(in + n, tails[t]);
			json_escape(tails[t], esc, sizeof(esc));
			/* "aaa...<escaped tail>" */
			want[0] = '"';
			memset(want + 1, 'a', n);
			strcpy(want + 1 + n, esc + 1);
			got = written(in);
			assert_string_equal(got, want);
			free(got);
		}
	}
}

/*
 * Every buffer size: the result is the longest prefix that fits whole
 * characters and escapes, still quoted and NUL-terminated.
 */
static void test_escape_truncation(void **state)
{
	const char *in = "a\"\xc3\xa9\x01\xf0\x9f\x98\x80z\xff";
	char *full = written(in), buf[64];
	size_t full_len = strlen(full), size, len;

	(void)state;
	assert_int_equal(json_escape(in, buf, 0), 0);
	for (size = 1; size <= full_len + 2; size++) {
		memset(buf, 'Z', sizeof(buf));
		len = json_escape(in, buf, size);
		assert_int_equal(len, strlen(buf));
		assert_true(len < size);
		if (size < 3) {
			assert_int_equal(len, 0);
			continue;
		}
		assert_true(len >= 2);
		assert_int_equal(buf[0], '"');
		assert_int_equal(buf[len - 1], '"');
		/* A prefix of the full escape, cut only between pieces. */
		assert_memory_equal(buf, full, len - 1);
		assert_true(valid_json_text(buf));
		if (size > full_len)
			assert_string_equal(buf, full);
	}
	/* Exact cut points: after "a and after the escaped quote. */
	assert_int_equal(json_escape(in, buf, 4), 3);
	assert_string_equal(buf, "\"a\"");
	assert_int_equal(json_escape(in, buf, 6), 5);
	assert_string_equal(buf, "\"a\\\"\"");
	/* é needs two more bytes: 6 + 1 is not enough, 6 + 2 is. */
	assert_int_equal(json_escape(in, buf, 7), 5);
	assert_int_equal(json_escape(in, buf, 8), 7);
	free(full);
}

static void test_write_error(void **state)
{
	FILE *f = fopen("/dev/null", "r");

	(void)state;
	assert_non_null(f);
	assert_int_equal(json_write_string(f, "x"), -1);
	fclose(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plain),
		cmocka_unit_test(test_quote_backslash),
		cmocka_unit_test(test_control_chars),
		cmocka_unit_test(test_utf8_passthrough),
		cmocka_unit_test(test_invalid_utf8),
		cmocka_unit_test(test_random_bytes_stay_valid),
		cmocka_unit_test(test_long_string),
		cmocka_unit_test(test_escape_at_buffer_end),
		cmocka_unit_test(test_escape_truncation),
		cmocka_unit_test(test_write_error),
	};

	return cmocka_run_group_tests_name("json", tests, NULL, NULL);
}
