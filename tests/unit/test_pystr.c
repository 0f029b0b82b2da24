// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Unit tests of user/cpython/py_str.c: PEP 393 state words (values read out of live
 * 3.8 to 3.13 interpreters) and the 1/2/4-byte kinds to UTF-8.
 *
 * gcc -Wall -Wextra -O1 -g -Iinclude -Iuser/{base,cpython,model,output,diff,record,live,cli} tests/unit/test_pystr.c \
 *     user/cpython/py_str.c -lcmocka -o build/test_pystr
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <cmocka.h>

#include "py_str.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* ---- state word ---- */

struct state_case {
	uint32_t state;
	unsigned int kind;
	int compact, ascii;
};

/*
 * Words read from str objects of the pyenv 3.8.18 to 3.13.0 builds (offset
 * 32 of the object). The high 24 bits are uninitialised padding in CPython,
 * hence the junk in some: it must not matter.
 */
static const struct state_case real_states[] = {
	{ 0x000000e5, 1, 1, 1 },	/* 3.8-3.11 'abc', interned, ready */
	{ 0x3a5322a4, 1, 1, 0 },	/* 3.8 'éx' */
	{ 0x000000a8, 2, 1, 0 },	/* 3.8-3.11 'α中' */
	{ 0x39e4f9b0, 4, 1, 0 },	/* 3.8 '😀' */
	{ 0x000000c4, 1, 0, 1 },	/* 3.8-3.11 str subclass 'abc' */
	{ 0x00000088, 2, 0, 0 },	/* 3.8-3.11 str subclass 'α' */
	{ 0x333075e5, 1, 1, 1 },	/* 3.8-3.11 sys.intern()ed */
	{ 0x000000e7, 1, 1, 1 },	/* 3.12 'abc', interned 3 */
	{ 0x00000024, 1, 1, 0 },	/* 3.12, 3.13 'éx' */
	{ 0x00000028, 2, 1, 0 },	/* 3.12, 3.13 'α中' */
	{ 0x33307530, 4, 1, 0 },	/* 3.12, 3.13 '😀' */
	{ 0x00000044, 1, 0, 1 },	/* 3.12, 3.13 str subclass 'abc' */
	{ 0x00000008, 2, 0, 0 },	/* 3.12, 3.13 str subclass 'α' */
	{ 0x00000066, 1, 1, 1 },	/* 3.13 'abc', interned 2 */
	{ 0x00000065, 1, 1, 1 },	/* 3.13 sys.intern()ed */
};

static void test_state_real(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(real_states); i++) {
		const struct state_case *c = &real_states[i];
		struct py_str_state st;

		assert_int_equal(py_str_parse_state(c->state, &st), 0);
		assert_int_equal(st.kind, c->kind);
		assert_int_equal(st.compact, c->compact);
		assert_int_equal(st.ascii, c->ascii);
	}
}

/* Every value of the 7 low bits, against the bitfield layout by hand. */
static void test_state_all_low_bits(void **state)
{
	uint32_t s;

	(void)state;
	for (s = 0; s < 0x100; s++) {
		unsigned int kind = (s >> 2) & 7;
		int ascii = (s >> 6) & 1;
		int valid = (kind == 1 || kind == 2 || kind == 4) &&
			    (!ascii || kind == 1);
		struct py_str_state st;

		assert_int_equal(py_str_parse_state(s | 0xabcdef00u, &st),
				 valid ? 0 : -1);
		if (!valid)
			continue;
		assert_int_equal(st.kind, kind);
		assert_int_equal(st.compact, (s >> 5) & 1);
		assert_int_equal(st.ascii, ascii);
	}
}

static void test_state_invalid(void **state)
{
	struct py_str_state st;

	(void)state;
	/* Kind 0: a legacy string not yet "ready" (3.11 and older). */
	assert_int_equal(py_str_parse_state(0x00000020, &st), -1);
	assert_int_equal(py_str_parse_state(0x00000000, &st), -1);
	assert_int_equal(py_str_parse_state(0x0000000c, &st), -1); /* 3 */
	assert_int_equal(py_str_parse_state(0x0000001c, &st), -1); /* 7 */
	/* ASCII but 2 bytes a character: not something CPython makes. */
	assert_int_equal(py_str_parse_state(0x00000068, &st), -1);
	/*
	 * Free-threaded 3.14 keeps interned in a byte of its own, moving kind
	 * to bit 8: such a word (here compact ASCII) must not pass for one.
	 */
	assert_int_equal(py_str_parse_state(0x00001900, &st), -1);
	assert_int_equal(py_str_parse_state(0x00001903, &st), -1);
}

/* ---- to UTF-8 ---- */

/*
 * Converts into a heap buffer of exactly out_size bytes, so that ASan sees
 * any write past it, and checks the returned count against strlen.
 */
static int convert(unsigned int kind, const void *data, size_t data_len,
		   size_t length, char *res, size_t out_size)
{
	char *out = malloc(out_size);
	int n;

	assert_non_null(out);
	memset(out, 0x5a, out_size);
	n = py_str_to_utf8(kind, data, data_len, length, out, out_size);
	assert_true(n < (int)out_size);
	if (n >= 0) {
		assert_int_equal(out[n], '\0');
		memcpy(res, out, n + 1);
	}
	free(out);
	return n;
}

static void expect_utf8(unsigned int kind, const void *data, size_t length,
			const char *want)
{
	char res[256];
	int n = convert(kind, data, length * kind, length, res, sizeof(res));

	assert_int_equal(n, strlen(want));
	assert_memory_equal(res, want, n + 1);
}

static void test_kind1(void **state)
{
	static const uint8_t ascii[] = "hello";
	static const uint8_t latin1[] = { 'c', 'a', 'f', 0xe9 };
	static const uint8_t edges[] = { 0x7f, 0x80, 0xff };

	(void)state;
	expect_utf8(1, ascii, 5, "hello");
	expect_utf8(1, latin1, 4, "caf\xc3\xa9");
	expect_utf8(1, edges, 3, "\x7f\xc2\x80\xc3\xbf");
	expect_utf8(1, ascii, 0, "");
}

static void test_kind2(void **state)
{
	static const uint16_t greek[] = { 0x3b1, 0x3b2, 0x3b3 };
	static const uint16_t cjk[] = { 'x', 0x4e2d, 0x6587 };
	static const uint16_t edges[] = { 0xe9, 0x7ff, 0x800, 0xd7ff, 0xe000,
					  0xfffd, 0xffff };

	(void)state;
	expect_utf8(2, greek, 3, "\xce\xb1\xce\xb2\xce\xb3");
	expect_utf8(2, cjk, 3, "x\xe4\xb8\xad\xe6\x96\x87");
	expect_utf8(2, edges, 7,
		    "\xc3\xa9\xdf\xbf\xe0\xa0\x80\xed\x9f\xbf\xee\x80\x80"
		    "\xef\xbf\xbd\xef\xbf\xbf");
}

static void test_kind4(void **state)
{
	static const uint32_t emoji[] = { 0x1f600 };
	static const uint32_t mixed[] = { 'a', 0xe9, 0x20ac, 0x1f600 };
	static const uint32_t edges[] = { 0xffff, 0x10000, 0x10ffff };

	(void)state;
	expect_utf8(4, emoji, 1, "\xf0\x9f\x98\x80");
	expect_utf8(4, mixed, 4, "a\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
	expect_utf8(4, edges, 3,
		    "\xef\xbf\xbf\xf0\x90\x80\x80\xf4\x8f\xbf\xbf");
}

#define FFFD "\xef\xbf\xbd"

/*
 * Surrogates, paired or not, are separate code points in a str and none
 * can be UTF-8; nor can anything past U+10FFFF, which only a torn read of
 * a kind 4 string would give.
 */
static void test_surrogates_and_range(void **state)
{
	static const uint16_t lone2[] = { 'a', 0xd800, 'b', 0xdfff };
	static const uint16_t pair2[] = { 0xd83d, 0xde00 };
	static const uint32_t lone4[] = { 0xd800, 0xdbff, 0xdc00, 0xdfff };
	static const uint32_t big4[] = { 0x110000, 0x7fffffff, 0xffffffff,
					 'z' };

	(void)state;
	expect_utf8(2, lone2, 4, "a" FFFD "b" FFFD);
	expect_utf8(2, pair2, 2, FFFD FFFD);
	expect_utf8(4, lone4, 4, FFFD FFFD FFFD FFFD);
	expect_utf8(4, big4, 4, FFFD FFFD FFFD "z");
}

/* U+0000 is a character like any other: the count tells it from the end. */
static void test_embedded_nul(void **state)
{
	static const uint8_t s[] = { 'a', 0, 'b' };
	char res[8];

	(void)state;
	assert_int_equal(convert(1, s, 3, 3, res, sizeof(res)), 3);
	assert_memory_equal(res, "a\0b", 4);
}

/* Output of "a" then one character of `bytes` UTF-8 bytes, cut to fit. */
static void check_cut(unsigned int kind, const void *data, size_t bytes,
		      const char *full)
{
	size_t out_size;
	char res[16];

	for (out_size = 1; out_size <= 2 + bytes + 1; out_size++) {
		size_t fit = out_size - 1;
		size_t want = fit >= 1 + bytes ? 1 + bytes : fit >= 1 ? 1 : 0;
		int n = convert(kind, data, 2 * kind, 2, res, out_size);

		assert_int_equal(n, want);
		assert_memory_equal(res, full, want);
		assert_int_equal(res[want], '\0');
	}
}

static void test_truncation_at_boundary(void **state)
{
	static const uint8_t two[] = { 'a', 0xe9 };
	static const uint16_t three[] = { 'a', 0x4e2d };
	static const uint16_t three_fffd[] = { 'a', 0xdc00 };
	static const uint32_t four[] = { 'a', 0x1f600 };

	(void)state;
	check_cut(1, two, 2, "a\xc3\xa9");
	check_cut(2, three, 3, "a\xe4\xb8\xad");
	check_cut(2, three_fffd, 3, "a" FFFD);
	check_cut(4, four, 4, "a\xf0\x9f\x98\x80");
}

/* Once a character does not fit, none after it goes in either. */
static void test_truncation_stops(void **state)
{
	static const uint16_t s[] = { 0x4e2d, 'b', 'c' };
	char res[8];

	(void)state;
	assert_int_equal(convert(2, s, sizeof(s), 3, res, 3), 0);
	assert_string_equal(res, "");
	assert_int_equal(convert(2, s, sizeof(s), 3, res, 4), 3);
	assert_int_equal(convert(2, s, sizeof(s), 3, res, 5), 4);
}

static void test_truncation_long(void **state)
{
	size_t n = 2000, i;
	uint32_t *s = malloc(n * 4);
	char *res = malloc(4096);

	(void)state;
	assert_non_null(s);
	assert_non_null(res);
	for (i = 0; i < n; i++)
		s[i] = 0x1f600;
	/* 1023 emoji are 4092 bytes; the 1024th needs 4 of the 3 left. */
	assert_int_equal(convert(4, s, n * 4, n, res, 4096), 4092);
	assert_memory_equal(res + 4088, "\xf0\x9f\x98\x80", 5);
	free(res);
	free(s);
}

static void test_out_size_one(void **state)
{
	static const uint8_t s[] = "abc";
	char res[1];

	(void)state;
	assert_int_equal(convert(1, s, 3, 3, res, 1), 0);
	assert_int_equal(res[0], '\0');
}

static void test_short_data(void **state)
{
	static const uint32_t s[] = { 'a', 'b', 'c' };
	char out[16];

	(void)state;
	memset(out, 0x5a, sizeof(out));
	assert_int_equal(py_str_to_utf8(2, s, 5, 3, out, sizeof(out)), -1);
	/* Whatever a caller does with it, out stays a string. */
	assert_int_equal(out[0], '\0');
	assert_int_equal(py_str_to_utf8(2, s, 6, 3, out, sizeof(out)), 3);
	assert_int_equal(py_str_to_utf8(4, s, 11, 3, out, sizeof(out)), -1);
	assert_int_equal(py_str_to_utf8(4, s, 12, 3, out, sizeof(out)), 3);
	assert_int_equal(py_str_to_utf8(1, s, 2, 3, out, sizeof(out)), -1);
	assert_int_equal(py_str_to_utf8(1, s, 0, 1, out, sizeof(out)), -1);
	/* length * kind would wrap: still too short, not a huge read. */
	assert_int_equal(py_str_to_utf8(4, s, 12, SIZE_MAX / 2, out,
					sizeof(out)), -1);
	assert_int_equal(py_str_to_utf8(4, s, 12, SIZE_MAX, out,
					sizeof(out)), -1);
}

static void test_empty_and_null(void **state)
{
	char out[4] = "zzz";

	(void)state;
	assert_int_equal(py_str_to_utf8(1, NULL, 0, 0, out, sizeof(out)), 0);
	assert_string_equal(out, "");
	assert_int_equal(py_str_to_utf8(4, NULL, 8, 2, out, sizeof(out)), -1);
}

static void test_bad_args(void **state)
{
	static const uint8_t s[8] = "abcdefg";
	char out[4] = "zzz";
	unsigned int kind;

	(void)state;
	for (kind = 0; kind < 9; kind++) {
		if (kind == 1 || kind == 2 || kind == 4)
			continue;
		assert_int_equal(py_str_to_utf8(kind, s, 8, 1, out, 4), -1);
	}
	/* No room even for the NUL: nothing is written. */
	memcpy(out, "zzz", 4);
	assert_int_equal(py_str_to_utf8(1, s, 8, 1, out, 0), -1);
	assert_string_equal(out, "zzz");
	assert_int_equal(py_str_to_utf8(1, s, 8, 1, NULL, 4), -1);
}

/* Target memory has no alignment promise: UBSan watches the reads. */
static void test_unaligned(void **state)
{
	uint8_t buf[1 + 8];
	static const uint32_t s[] = { 0x3b1, 0x1f600 };
	static const uint16_t s2[] = { 0x3b1, 'x' };

	(void)state;
	memcpy(buf + 1, s, sizeof(s));
	expect_utf8(4, buf + 1, 2, "\xce\xb1\xf0\x9f\x98\x80");
	memcpy(buf + 1, s2, sizeof(s2));
	expect_utf8(2, buf + 1, 2, "\xce\xb1x");
}

/* Decodes one UTF-8 sequence strictly; returns its length or 0. */
static size_t utf8_decode(const uint8_t *p, size_t n, uint32_t *c)
{
	static const uint32_t min[] = { 0, 0, 0x80, 0x800, 0x10000 };
	size_t len, i;

	if (p[0] < 0x80)
		len = 1, *c = p[0];
	else if ((p[0] & 0xe0) == 0xc0)
		len = 2, *c = p[0] & 0x1f;
	else if ((p[0] & 0xf0) == 0xe0)
		len = 3, *c = p[0] & 0x0f;
	else if ((p[0] & 0xf8) == 0xf0)
		len = 4, *c = p[0] & 0x07;
	else
		return 0;
	if (len > n)
		return 0;
	for (i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		*c = *c << 6 | (p[i] & 0x3f);
	}
	/* Overlong forms and surrogates are not UTF-8. */
	if (*c < min[len] || *c > 0x10ffff || (*c >= 0xd800 && *c <= 0xdfff))
		return 0;
	return len;
}

/* Every code point as kind 4 (and 2, 1 where it fits) round-trips. */
static void test_every_code_point(void **state)
{
	uint32_t c, back;
	char out[8];

	(void)state;
	for (c = 0; c <= 0x10ffff; c++) {
		uint16_t c2 = c;
		uint8_t c1 = c;
		int n = py_str_to_utf8(4, &c, 4, 1, out, sizeof(out));
		uint32_t want = c >= 0xd800 && c <= 0xdfff ? 0xfffd : c;

		assert_true(n >= 1 && n <= 4);
		assert_int_equal(utf8_decode((uint8_t *)out, n, &back), n);
		assert_int_equal(back, want);
		if (c <= 0xffff)
			assert_int_equal(py_str_to_utf8(2, &c2, 2, 1, out, 8),
					 n);
		if (c <= 0xff)
			assert_int_equal(py_str_to_utf8(1, &c1, 1, 1, out, 8),
					 n);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_state_real),
		cmocka_unit_test(test_state_all_low_bits),
		cmocka_unit_test(test_state_invalid),
		cmocka_unit_test(test_kind1),
		cmocka_unit_test(test_kind2),
		cmocka_unit_test(test_kind4),
		cmocka_unit_test(test_surrogates_and_range),
		cmocka_unit_test(test_embedded_nul),
		cmocka_unit_test(test_truncation_at_boundary),
		cmocka_unit_test(test_truncation_stops),
		cmocka_unit_test(test_truncation_long),
		cmocka_unit_test(test_out_size_one),
		cmocka_unit_test(test_short_data),
		cmocka_unit_test(test_empty_and_null),
		cmocka_unit_test(test_bad_args),
		cmocka_unit_test(test_unaligned),
		cmocka_unit_test(test_every_code_point),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
