// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* --label and --dask: the option's syntax, function names, the text of a
 * value the kernel read, the table of values, and the port of dask's
 * key_split (cases checked against dask 2022.12's own). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include "dask_key.h"
#include "labels.h"

static void key_split_follows_dask(void **state)
{
	static const char *const cases[][2] = {
		{ "x", "x" }, { "x-1", "x" }, { "x-1-2-3", "x" },
		{ "hello-world-1", "hello-world" },
		{ "ae05086432ca935f6eba409a8ecd4896", "data" },
		{ "<module.submodule.myclass object at 0xdaf372", "myclass" },
		{ "x-abcdefab", "x" }, { "_(x)", "x" },
		{ "inc-8f4e3bd4a7d84a5d9b4e1f8a2c3d4e5f", "inc" },
		{ "getitem-abcdefabc", "getitem-abcdefabc" },
		{ "read-parquet-0123", "read-parquet" }, { "x-abcdefgh", "x" },
		{ "('x-2', 1)", "x" }, { "", "Other" }, { "-x", "Other" }, { "_", "Other" },
		{ "<>", "Other" }, { "<  >", "Other" }, { "Xyz-Abc-def", "Xyz-Abc-def" },
		{ "a-b-c-1-d", "a-b-c" }, { "shuffle-transfer-6e1f0a3b", "shuffle-transfer" },
		{ "'x',y-z", "x-z" }, { "<a.b.C at 1>-q", "C" }, { "data-ABCDEFAB", "data-ABCDEFAB" },
		{ "x--y", "x" },
	};
	char out[64];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		dask_key_split(cases[i][0], out, sizeof(out));
		if (strcmp(out, cases[i][1]))
			fail_msg("key_split(%s) = %s, dask says %s", cases[i][0], out, cases[i][1]);
	}
	dask_key_split(NULL, out, sizeof(out));
	assert_string_equal(out, "Other");
}

static void a_long_key_is_cut_not_overrun(void **state)
{
	char key[1000], out[8];

	(void)state;
	memset(key, 'a', sizeof(key) - 1);
	key[sizeof(key) - 1] = 0;
	for (size_t i = 1; i < sizeof(key) - 1; i += 2)
		key[i] = '-';
	dask_key_split(key, out, sizeof(out));
	assert_int_equal(strlen(out), 7);
}

static void specs_parse(void **state)
{
	struct label_spec s;
	char err[256];

	(void)state;
	assert_int_equal(label_spec_parse("req=Server.handle:2", &s, err, sizeof(err)), 0);
	assert_string_equal(s.name, "req");
	assert_string_equal(s.function, "Server.handle");
	assert_int_equal(s.arg, 2);
	assert_int_equal(label_spec_parse("req=handle:2x", &s, err, sizeof(err)), -1);
	assert_string_equal(err, "invalid --label req=handle:2x: ARGUMENT must be an argument index, 0 to 31");
	assert_int_equal(label_spec_parse("req=handle:", &s, err, sizeof(err)), -1);
	assert_int_equal(label_spec_parse("req:handle=1", &s, err, sizeof(err)), -1);
}

static void function_names_match(void **state)
{
	(void)state;
	assert_true(label_function_matches("handle", "handle"));
	assert_true(label_function_matches("handle", "Server.handle"));
	assert_true(label_function_matches("Server.handle", "Server.handle"));
	assert_false(label_function_matches("Server.handle", "handle"));
	assert_false(label_function_matches("handle", "Server.handler"));
	assert_false(label_function_matches("handle", "rehandle"));
}

static void blob_str(struct ep_label_blob *b, int i, const char *s, int tag)
{
	__u8 *data = i ? b->rest[i - 1] : b->first;

	b->tag[i] = tag;
	b->len[i] = strlen(s);
	memcpy(data, s, strlen(s));
}

static void values_read_as_text(void **state)
{
	struct ep_label_blob b;
	char out[LABEL_TEXT_MAX], src[LABEL_TEXT_MAX];
	__s64 v = -42;

	(void)state;
	memset(&b, 0, sizeof(b));
	b.nitems = 1;
	blob_str(&b, 0, "inc-1\x1b", EP_LT_STR);
	label_format(&b, out, sizeof(out));
	assert_string_equal(out, "inc-1\\x1b");
	assert_string_equal(label_source(&b, src, sizeof(src)), "inc-1\\x1b");

	memset(&b, 0, sizeof(b));
	b.tuple = 1;
	b.nitems = 3;
	blob_str(&b, 0, "inc-abc", EP_LT_STR_CUT);
	b.tag[1] = EP_LT_INT;
	memcpy(b.rest[0], &v, sizeof(v));
	b.len[1] = 8;
	blob_str(&b, 2, "float", EP_LT_TYPE);
	b.more = 1;
	label_format(&b, out, sizeof(out));
	assert_string_equal(out, "('inc-abc...', -42, <float>, ...)");
	assert_string_equal(label_source(&b, src, sizeof(src)), "inc-abc");

	memset(&b, 0, sizeof(b));
	b.tuple = 1;
	b.nitems = 1;
	b.tag[0] = EP_LT_BIG_INT;
	label_format(&b, out, sizeof(out));
	assert_string_equal(out, "(<big int>,)");
	assert_null(label_source(&b, src, sizeof(src)));

	/* lengths past the room are the target's lie: cut to the room */
	memset(&b, 0, sizeof(b));
	b.nitems = 1;
	b.tag[0] = EP_LT_STR;
	b.len[0] = 255;
	memset(b.first, 'a', sizeof(b.first));
	label_format(&b, out, sizeof(out));
	assert_int_equal(strlen(out), EP_LABEL_FIRST_BYTES);
}

static void prefix(const char *key, char *out, size_t len)
{
	dask_key_split(key, out, len);
}

/* A table of --dask's labels: dask_key, and dask_prefix derived from it. */
static void dask_table(struct label_table *t, int *key, int *pre)
{
	label_table_init(t);
	*key = label_table_add_name(t, "dask_key");
	*pre = label_table_add_name(t, "dask_prefix");
	label_table_derive(t, *key, *pre, prefix);
}

static void table_derives_and_bounds(void **state)
{
	struct label_table t;
	char text[32];
	uint32_t a, b, id;
	int key, pre;

	(void)state;
	dask_table(&t, &key, &pre);
	a = label_intern(&t, key, "('inc-5c1d', 1)", "inc-5c1d");
	b = label_intern(&t, key, "('inc-5c1d', 2)", "inc-5c1d");
	assert_int_not_equal(a, b);
	assert_int_equal(t.v[a].derived, t.v[b].derived);
	assert_string_equal(t.v[t.v[a].derived].value, "inc");
	label_add_time(&t, a, STATE_ON_CPU, 0, 10, 1);
	label_add_time(&t, b, STATE_SLEEP, 0, 5, 0);
	label_add_gc(&t, b, 3);
	id = t.v[a].derived;
	assert_int_equal(t.v[id].ns[STATE_ON_CPU], 10);
	assert_int_equal(t.v[id].ns[STATE_SLEEP], 5);
	assert_int_equal(t.v[id].samples, 1);
	assert_int_equal(t.v[id].gc_count, 1);
	assert_int_equal(label_value_total(&t.v[id]), 15);
	label_add_time(&t, LABEL_NONE, STATE_ON_CPU, 0, 10, 1);	/* no label: nothing */
	for (int i = 0; i < LABEL_VALUES_MAX + 100; i++) {
		snprintf(text, sizeof(text), "k-%d", i);
		id = label_intern(&t, key, text, text);
		assert_int_not_equal(id, LABEL_NONE);
	}
	/* past the bound: one value per prefix ("k" for all of these) */
	assert_string_equal(t.v[id].value, "[other values: k]");
	assert_string_equal(t.v[t.v[id].derived].value, "k");
	assert_true(t.per_label[key] <= LABEL_VALUES_MAX + 1);
	for (int i = 0; i < LABEL_VALUES_MAX + 100; i++) {	/* prefixes are bounded too */
		snprintf(text, sizeof(text), "p%dq-1", i);
		id = label_intern(&t, key, text, text);
	}
	assert_true(t.per_label[pre] <= LABEL_VALUES_MAX + 1);
	assert_string_equal(t.v[id].value, "[other values: [other values]]");
	label_table_next_period(&t);
	assert_int_equal(label_value_total(&t.v[a]), 0);
	assert_int_equal(label_intern(&t, key, "('inc-5c1d', 1)", "inc-5c1d"), a);
	label_table_free(&t);
}

#define SEC	1000000000ull

/* The time of state in the series' bins [from, to). */
static uint64_t series_sum(const uint64_t *series, uint32_t from, uint32_t to, int state)
{
	uint64_t sum = 0;

	for (uint32_t b = from; b < to; b++)
		sum += label_series_at(series, b, state);
	return sum;
}

/*
 * A value's time over the recording: an interval is spread over the bins it
 * covers; a key (a source of dask_prefix) keeps no series, its prefix does;
 * a recording longer than LABEL_BINS bins widens every series' bins, and
 * keeps every nanosecond.
 */
static void series_over_time(void **state)
{
	struct label_table t;
	uint32_t a, pre_id;
	const uint64_t *s;
	int key, pre;

	(void)state;
	dask_table(&t, &key, &pre);
	a = label_intern(&t, key, "('inc-5c1d', 1)", "inc-5c1d");
	pre_id = t.v[a].derived;
	assert_null(t.v[a].series);
	assert_non_null(t.v[pre_id].series);
	s = t.v[pre_id].series;
	assert_int_equal(t.clock.bin_ns, LABEL_BIN_NS_FIRST);
	/* 250 ms of sleep from 0.95 s: 50 ms in bin 9, 100 in 10 and 11 */
	label_add_time(&t, a, STATE_SLEEP, 950000000ull, 250000000ull, 0);
	assert_int_equal(label_series_at(s, 9, STATE_SLEEP), 50000000ull);
	assert_int_equal(label_series_at(s, 10, STATE_SLEEP), 100000000ull);
	assert_int_equal(label_series_at(s, 11, STATE_SLEEP), 100000000ull);
	assert_int_equal(label_series_at(s, 12, STATE_SLEEP), 0);
	label_add_time(&t, a, STATE_ON_CPU, 3 * SEC, 1000, 1);
	assert_int_equal(label_series_at(s, 30, STATE_ON_CPU), 1000);
	/* at 100 s, past 512 bins of 100 ms: the bins are 200 ms wide */
	label_add_time(&t, a, STATE_ON_CPU, 100 * SEC, 7, 1);
	assert_int_equal(t.clock.bin_ns, 2 * LABEL_BIN_NS_FIRST);
	assert_int_equal(label_series_at(s, 4, STATE_SLEEP), 50000000ull);
	assert_int_equal(label_series_at(s, 5, STATE_SLEEP), 200000000ull);
	assert_int_equal(label_series_at(s, 15, STATE_ON_CPU), 1000);
	assert_int_equal(label_series_at(s, 500, STATE_ON_CPU), 7);
	assert_int_equal(series_sum(s, 0, LABEL_BINS, STATE_ON_CPU), 1007);
	assert_int_equal(label_clock_bins(&t.clock, 100 * SEC), 500);
	/* a time far past the end: the clock is bounded, the time kept */
	label_add_time(&t, a, STATE_IO, UINT64_MAX - 10, 5, 0);
	assert_int_equal(series_sum(s, 0, LABEL_BINS, STATE_IO), 5);
	assert_int_equal(series_sum(s, 0, LABEL_BINS, STATE_SLEEP), 250000000ull);
	assert_true(t.clock.bin_ns <= LABEL_BIN_NS_MAX);
	/* a period starts its series from 0 */
	label_table_next_period(&t);
	assert_int_equal(t.clock.bin_ns, LABEL_BIN_NS_FIRST);
	assert_int_equal(series_sum(s, 0, LABEL_BINS, STATE_IO), 0);
	label_table_free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(key_split_follows_dask),
		cmocka_unit_test(a_long_key_is_cut_not_overrun),
		cmocka_unit_test(specs_parse),
		cmocka_unit_test(function_names_match),
		cmocka_unit_test(values_read_as_text),
		cmocka_unit_test(table_derives_and_bounds),
		cmocka_unit_test(series_over_time),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
