// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Unit tests of user/cpython/py_linetable.c. The main check replays real tables from
 * CPython 3.8 to 3.13 (linetable_vectors.h, made by gen_linetable_vectors.py)
 * against each interpreter's own answer for every code unit; the rest pins
 * down the formats' corner cases with hand-made tables and feeds broken ones.
 *
 * gcc -Wall -Wextra -O1 -g -Iinclude -Iuser/{base,cpython,model,output,diff,record,live,cli} tests/unit/test_linetable.c \
 *     user/cpython/py_linetable.c -lcmocka -o build/test_linetable
 */
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <cmocka.h>

#include "py_linetable.h"
#include "linetable_vectors.h"

#define N_VECTORS (sizeof(lt_vectors) / sizeof(lt_vectors[0]))

static int line_of(const struct lt_vector *v, size_t len, uint32_t off)
{
	return py_linetable_line_for_offset(v->fmt, v->table, len, v->firstlineno,
					    off);
}

/* Fails naming the vector and offset, which cmocka's asserts cannot. */
static void expect_line(const struct lt_vector *v, size_t len, uint32_t off,
			int want)
{
	int got = line_of(v, len, off);

	if (got != want)
		fail_msg("%s (table %zu/%zu bytes) offset %u: line %d, want %d",
			 v->name, len, v->table_len, off, got, want);
}

/* ---- real tables ---- */

static void test_real_every_code_unit(void **state)
{
	size_t i, u;

	(void)state;
	for (i = 0; i < N_VECTORS; i++) {
		const struct lt_vector *v = &lt_vectors[i];

		for (u = 0; u < v->n_units; u++) {
			/* Both bytes of a unit belong to its instruction. */
			expect_line(v, v->table_len, u * 2, v->lines[u]);
			expect_line(v, v->table_len, u * 2 + 1, v->lines[u]);
		}
	}
}

/* Bytes a prefix of a 3.8/3.10 table spans: the sum of its even bytes. */
static uint64_t pairs_span(const uint8_t *t, size_t len)
{
	uint64_t span = 0;
	size_t i;

	for (i = 0; i + 1 < len; i += 2)
		span += t[i];
	return span;
}

/* 3.10+ tables cover exactly the bytecode: nothing lies beyond. */
static void test_real_past_end(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < N_VECTORS; i++) {
		const struct lt_vector *v = &lt_vectors[i];
		uint32_t end = v->n_units * 2;

		if (v->fmt == PY_LINETABLE_LNOTAB)
			continue;
		expect_line(v, v->table_len, end, -1);
		expect_line(v, v->table_len, end + 1, -1);
		expect_line(v, v->table_len, UINT32_MAX, -1);
	}
}

/*
 * co_lnotab does not know where the code ends: past its last pair every
 * offset has the line its pairs add up to, which is the last unit's line
 * unless a pair points exactly at the end of the code.
 */
static void test_real_lnotab_past_end(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < N_VECTORS; i++) {
		const struct lt_vector *v = &lt_vectors[i];
		int last = line_of(v, v->table_len, UINT32_MAX);

		if (v->fmt != PY_LINETABLE_LNOTAB)
			continue;
		assert_true(last >= 0);
		expect_line(v, v->table_len, v->n_units * 2 + 100, last);
		if (pairs_span(v->table, v->table_len) < v->n_units * 2)
			expect_line(v, v->table_len, v->n_units * 2,
				    v->lines[v->n_units - 1]);
	}
}

/* Bytes covered by the entries of a location table wholly inside len. */
static uint64_t locations_span(const uint8_t *t, size_t full, size_t len)
{
	uint64_t span = 0;
	size_t i, next;

	for (i = 0; i < len; i = next) {
		for (next = i + 1; next < full && !(t[next] & 0x80); next++)
			;
		if (next > len)
			break;
		span += ((t[i] & 7) + 1) * 2;
	}
	return span;
}

/*
 * Every prefix of every real table, as a read cut short would give: the
 * offsets it still covers keep their line, the others have none (or, for
 * co_lnotab, the last line the prefix reaches).
 */
static void check_prefix(const struct lt_vector *v, size_t len)
{
	uint64_t span;
	size_t u;

	if (v->fmt == PY_LINETABLE_LOCATIONS)
		span = locations_span(v->table, v->table_len, len);
	else
		span = len % 2 ? 0 : pairs_span(v->table, len);
	for (u = 0; u < v->n_units; u++) {
		uint32_t off = u * 2;
		int got = line_of(v, len, off);

		if (off < span)
			expect_line(v, len, off, v->lines[u]);
		else if (v->fmt != PY_LINETABLE_LNOTAB || len % 2)
			expect_line(v, len, off, -1);
		else if (got < -1)
			fail_msg("%s: prefix %zu: line %d", v->name, len, got);
	}
}

static void test_real_truncated(void **state)
{
	size_t i, len;

	(void)state;
	for (i = 0; i < N_VECTORS; i++)
		for (len = 0; len <= lt_vectors[i].table_len; len++)
			check_prefix(&lt_vectors[i], len);
}

/* Decodes one signed varint, enough to classify real entries. */
static int64_t svarint_at(const uint8_t *t, size_t len, size_t *i)
{
	uint64_t val = 0;
	unsigned int shift = 0;
	uint8_t b;

	do {
		assert_true(*i < len);
		b = t[(*i)++];
		val |= (uint64_t)(b & 0x3f) << shift;
		shift += 6;
	} while (b & 0x40);
	return (val & 1) ? -(int64_t)(val >> 1) : (int64_t)(val >> 1);
}

struct coverage {
	int formats[3];
	int lnotab_neg, lnotab_127, lnotab_m128, lnotab_255;
	int t310_none, t310_254, t310_neg;
	int loc_codes[16];
	int loc_big_up, loc_big_down;
	int no_line, line_zero, big_code;
};

static void cover_pairs(const struct lt_vector *v, struct coverage *c)
{
	size_t i;

	for (i = 0; i + 1 < v->table_len; i += 2) {
		int8_t d = (int8_t)v->table[i + 1];

		if (v->fmt == PY_LINETABLE_LNOTAB) {
			c->lnotab_neg += d < 0;
			c->lnotab_127 += d == 127;
			c->lnotab_m128 += d == -128;
			c->lnotab_255 += v->table[i] == 255;
		} else {
			c->t310_none += d == -128;
			c->t310_254 += v->table[i] == 254;
			c->t310_neg += d < 0 && d != -128;
		}
	}
}

static void cover_locations(const struct lt_vector *v, struct coverage *c)
{
	size_t i = 0;

	while (i < v->table_len) {
		unsigned int code = (v->table[i++] >> 3) & 15;

		c->loc_codes[code]++;
		if (code == 13 || code == 14) {
			int64_t d = svarint_at(v->table, v->table_len, &i);

			c->loc_big_up += d > 127;
			c->loc_big_down += d < -127;
		}
		while (i < v->table_len && !(v->table[i] & 0x80))
			i++;
	}
}

/* The vectors really exercise what they are there for. */
static void test_real_coverage(void **state)
{
	struct coverage c;
	size_t i, u;

	(void)state;
	memset(&c, 0, sizeof(c));
	for (i = 0; i < N_VECTORS; i++) {
		const struct lt_vector *v = &lt_vectors[i];

		c.formats[v->fmt]++;
		c.big_code += v->n_units * 2 > 255;
		for (u = 0; u < v->n_units; u++) {
			c.no_line += v->lines[u] < 0;
			c.line_zero += v->lines[u] == 0;
		}
		if (v->fmt == PY_LINETABLE_LOCATIONS)
			cover_locations(v, &c);
		else
			cover_pairs(v, &c);
	}
	for (i = 0; i < 3; i++)
		assert_true(c.formats[i] > 0);
	assert_true(c.lnotab_neg && c.lnotab_127 && c.lnotab_m128 &&
		    c.lnotab_255);
	assert_true(c.t310_none && c.t310_254 && c.t310_neg);
	for (i = 0; i < 16; i++)
		if (!c.loc_codes[i])
			fail_msg("no location entry of code %zu", i);
	assert_true(c.loc_big_up && c.loc_big_down);
	assert_true(c.no_line && c.line_zero && c.big_code >= 3);
}

/* ---- co_lnotab (3.8, 3.9) by hand ---- */

static int lnotab(const uint8_t *t, size_t len, int first, uint32_t off)
{
	return py_linetable_line_for_offset(PY_LINETABLE_LNOTAB, t, len, first, off);
}

static void test_lnotab_basic(void **state)
{
	/* +127 +5 at 0 (a big jump is split), then -10 at 6. */
	static const uint8_t t[] = { 0, 127, 0, 5, 6, 0xf6 };

	(void)state;
	assert_int_equal(lnotab(t, sizeof(t), 10, 0), 142);
	assert_int_equal(lnotab(t, sizeof(t), 10, 5), 142);
	assert_int_equal(lnotab(t, sizeof(t), 10, 6), 132);
	assert_int_equal(lnotab(t, sizeof(t), 10, 1000), 132);
}

/* In co_lnotab -128 is a decrement like any other, not "no line". */
static void test_lnotab_minus_128(void **state)
{
	static const uint8_t t[] = { 4, 0x80, 4, 1 };

	(void)state;
	assert_int_equal(lnotab(t, sizeof(t), 300, 3), 300);
	assert_int_equal(lnotab(t, sizeof(t), 300, 4), 172);
	assert_int_equal(lnotab(t, sizeof(t), 300, 8), 173);
}

/* Byte increments are unsigned: 255 is not -1. */
static void test_lnotab_big_increment(void **state)
{
	static const uint8_t t[] = { 255, 0, 45, 1 };

	(void)state;
	assert_int_equal(lnotab(t, sizeof(t), 1, 299), 1);
	assert_int_equal(lnotab(t, sizeof(t), 1, 300), 2);
}

static void test_lnotab_empty(void **state)
{
	(void)state;
	/* A one-line lambda has an empty co_lnotab. */
	assert_int_equal(lnotab((const uint8_t *)"", 0, 7, 0), 7);
	assert_int_equal(lnotab(NULL, 0, 7, 40), 7);
	assert_int_equal(lnotab(NULL, 0, 0, 0), 0);
	assert_int_equal(lnotab(NULL, 0, -1, 0), -1);
}

static void test_lnotab_malformed(void **state)
{
	static const uint8_t odd[] = { 2, 1, 2 };
	static const uint8_t down[] = { 0, 0x80, 0, 0x80 };
	static const uint8_t up[] = { 0, 127 };

	(void)state;
	assert_int_equal(lnotab(odd, sizeof(odd), 1, 0), -1);
	assert_int_equal(lnotab(down, sizeof(down), 100, 0), -1);
	assert_int_equal(lnotab(up, sizeof(up), INT_MAX - 126, 0), -1);
	assert_int_equal(lnotab(up, sizeof(up), INT_MAX - 127, 0), INT_MAX);
	assert_int_equal(lnotab(down, 2, INT_MIN, 0), -1);
}

/* ---- co_linetable (3.10) by hand ---- */

static int t310(const uint8_t *t, size_t len, int first, uint32_t off)
{
	return py_linetable_line_for_offset(PY_LINETABLE_310, t, len, first, off);
}

static void test_310_basic(void **state)
{
	/* [0,4) +1, [4,4) +3 (empty: only moves the line), [4,10) -2. */
	static const uint8_t t[] = { 4, 1, 0, 3, 6, 0xfe };

	(void)state;
	assert_int_equal(t310(t, sizeof(t), 20, 0), 21);
	assert_int_equal(t310(t, sizeof(t), 20, 3), 21);
	assert_int_equal(t310(t, sizeof(t), 20, 4), 22);
	assert_int_equal(t310(t, sizeof(t), 20, 9), 22);
	assert_int_equal(t310(t, sizeof(t), 20, 10), -1);
}

/* -128: a range with no line, which leaves the running line alone. */
static void test_310_no_line(void **state)
{
	static const uint8_t t[] = { 2, 1, 254, 0x80, 2, 0x80, 2, 1 };

	(void)state;
	assert_int_equal(t310(t, sizeof(t), 5, 0), 6);
	assert_int_equal(t310(t, sizeof(t), 5, 2), -1);
	assert_int_equal(t310(t, sizeof(t), 5, 257), -1);
	assert_int_equal(t310(t, sizeof(t), 5, 258), 7);
	assert_int_equal(t310(t, sizeof(t), 5, 259), 7);
	assert_int_equal(t310(t, sizeof(t), 5, 260), -1);
}

static void test_310_malformed(void **state)
{
	static const uint8_t odd[] = { 2, 1, 2 };
	static const uint8_t neg[] = { 2, 0xf0 };
	static const uint8_t up[] = { 2, 127 };

	(void)state;
	assert_int_equal(t310(NULL, 0, 1, 0), -1);
	assert_int_equal(t310((const uint8_t *)"", 0, 1, 0), -1);
	assert_int_equal(t310(odd, sizeof(odd), 1, 0), -1);
	assert_int_equal(t310(neg, sizeof(neg), 3, 0), -1);
	assert_int_equal(t310(up, sizeof(up), INT_MAX, 0), -1);
}

/* ---- location table (3.11+) by hand ---- */

static int loc(const uint8_t *t, size_t len, int first, uint32_t off)
{
	return py_linetable_line_for_offset(PY_LINETABLE_LOCATIONS, t, len, first,
					    off);
}

#define ENTRY(code, units) (0x80 | (code) << 3 | ((units) - 1))

static void test_locations_each_form(void **state)
{
	static const uint8_t t[] = {
		ENTRY(15, 1),			/* [0,2) none */
		ENTRY(0, 2), 0x05,		/* [2,6) +0 short */
		ENTRY(12, 1), 4, 9,		/* [6,8) +2 one-line */
		ENTRY(13, 8), 0x48, 0x03,	/* [8,24) +100 (200) */
		ENTRY(14, 1), 0x07, 1, 5, 9,	/* [24,26) -3 long */
		ENTRY(15, 3),			/* [26,32) none */
		ENTRY(9, 1), 0x12,		/* [32,34) +0 short */
		ENTRY(10, 1), 0, 0,		/* [34,36) +0 one-line */
	};
	static const int want[] = {
		-1, 10, 10, 12, 112, 112, 112, 112, 112, 112, 112, 112,
		109, -1, -1, -1, 109, 109,
	};
	size_t u;

	(void)state;
	for (u = 0; u < sizeof(want) / sizeof(want[0]); u++) {
		assert_int_equal(loc(t, sizeof(t), 10, u * 2), want[u]);
		assert_int_equal(loc(t, sizeof(t), 10, u * 2 + 1), want[u]);
	}
	assert_int_equal(loc(t, sizeof(t), 10, 36), -1);
}

/* Varints of several chunks; the largest line an int holds. */
static void test_locations_varints(void **state)
{
	/* svarint (INT_MAX - 1) << 1: 0x7ffffffc in 6-bit chunks. */
	static const uint8_t big[] = { ENTRY(13, 1), 0x7c, 0x7f, 0x7f, 0x7f,
				       0x7f, 0x03 };
	static const uint8_t over[] = { ENTRY(13, 1), 0x7e, 0x7f, 0x7f, 0x7f,
					0x7f, 0x03 };

	(void)state;
	assert_int_equal(loc(big, sizeof(big), 1, 0), INT_MAX);
	assert_int_equal(loc(over, sizeof(over), 2, 0), -1);
}

static void test_locations_malformed(void **state)
{
	static const uint8_t no_high[] = { 0x05, ENTRY(0, 1), 0 };
	static const uint8_t short_cut[] = { ENTRY(0, 1) };
	static const uint8_t short_run[] = { ENTRY(0, 1), ENTRY(0, 1), 0 };
	static const uint8_t one_cut[] = { ENTRY(11, 1), 3 };
	static const uint8_t var_cut[] = { ENTRY(13, 1), 0x41 };
	static const uint8_t var_high[] = { ENTRY(13, 1), 0x41, 0x81 };
	static const uint8_t var_long[] = { ENTRY(13, 1), 0x40, 0x40, 0x40,
					    0x40, 0x40, 0x40, 0x01 };
	static const uint8_t long_cut[] = { ENTRY(14, 1), 0x02, 0, 1 };
	static const uint8_t negative[] = { ENTRY(13, 1), 0x0b };

	(void)state;
	assert_int_equal(loc(NULL, 0, 1, 0), -1);
	assert_int_equal(loc((const uint8_t *)"", 0, 1, 0), -1);
	assert_int_equal(loc(no_high, sizeof(no_high), 1, 0), -1);
	assert_int_equal(loc(short_cut, sizeof(short_cut), 1, 0), -1);
	assert_int_equal(loc(short_run, sizeof(short_run), 1, 0), -1);
	assert_int_equal(loc(one_cut, sizeof(one_cut), 1, 0), -1);
	assert_int_equal(loc(var_cut, sizeof(var_cut), 1, 0), -1);
	assert_int_equal(loc(var_high, sizeof(var_high), 1, 0), -1);
	assert_int_equal(loc(var_long, sizeof(var_long), 1, 0), -1);
	assert_int_equal(loc(long_cut, sizeof(long_cut), 1, 0), -1);
	assert_int_equal(loc(negative, sizeof(negative), 4, 0), -1);
	assert_int_equal(loc(negative, sizeof(negative), 5, 0), 0);
}

/* An offset beyond a broken entry is never reached: earlier ones still do. */
static void test_locations_broken_tail(void **state)
{
	static const uint8_t t[] = { ENTRY(11, 2), 1, 2, ENTRY(13, 1), 0x41 };

	(void)state;
	assert_int_equal(loc(t, sizeof(t), 1, 3), 2);
	assert_int_equal(loc(t, sizeof(t), 1, 4), -1);
}

/* ---- all formats ---- */

static void test_bad_format(void **state)
{
	static const uint8_t t[] = { 2, 1 };

	(void)state;
	assert_int_equal(py_linetable_line_for_offset((enum py_linetable_format)3, t,
						      sizeof(t), 1, 0), -1);
	assert_int_equal(py_linetable_line_for_offset((enum py_linetable_format)-1, t,
						      sizeof(t), 1, 0), -1);
}

/* A NULL table is an empty one whatever length comes with it. */
static void test_null_table(void **state)
{
	(void)state;
	assert_int_equal(lnotab(NULL, 16, 3, 0), 3);
	assert_int_equal(t310(NULL, 16, 3, 0), -1);
	assert_int_equal(loc(NULL, 16, 3, 0), -1);
}

/*
 * Tables of millions of entries, covering nothing or all with a line:
 * the decoders walk them to the end and stop.
 */
static void test_huge_tables(void **state)
{
	size_t len = 1 << 22;
	uint8_t *t = malloc(len);
	size_t i;

	(void)state;
	assert_non_null(t);
	memset(t, 0, len);
	assert_int_equal(t310(t, len, 1, 0), -1);
	assert_int_equal(lnotab(t, len, 1, UINT32_MAX), 1);
	for (i = 0; i < len; i += 2) {
		t[i] = 255;
		t[i + 1] = 127;
	}
	assert_int_equal(lnotab(t, len, 1, UINT32_MAX), 1 + 127 * (len / 2));
	assert_int_equal(t310(t, len, 1, UINT32_MAX), -1);
	assert_int_equal(t310(t, len, 1, 255 * (len / 2) - 1),
			 1 + 127 * (len / 2));
	memset(t, ENTRY(15, 8), len);
	assert_int_equal(loc(t, len, 1, UINT32_MAX), -1);
	assert_int_equal(loc(t, len, 1, len * 16 - 1), -1);
	free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_real_every_code_unit),
		cmocka_unit_test(test_real_past_end),
		cmocka_unit_test(test_real_lnotab_past_end),
		cmocka_unit_test(test_real_truncated),
		cmocka_unit_test(test_real_coverage),
		cmocka_unit_test(test_lnotab_basic),
		cmocka_unit_test(test_lnotab_minus_128),
		cmocka_unit_test(test_lnotab_big_increment),
		cmocka_unit_test(test_lnotab_empty),
		cmocka_unit_test(test_lnotab_malformed),
		cmocka_unit_test(test_310_basic),
		cmocka_unit_test(test_310_no_line),
		cmocka_unit_test(test_310_malformed),
		cmocka_unit_test(test_locations_each_form),
		cmocka_unit_test(test_locations_varints),
		cmocka_unit_test(test_locations_malformed),
		cmocka_unit_test(test_locations_broken_tail),
		cmocka_unit_test(test_bad_format),
		cmocka_unit_test(test_null_table),
		cmocka_unit_test(test_huge_tables),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
