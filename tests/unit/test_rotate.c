// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* --rotate's file names and --keep's deletions. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include "rotate.h"

static void names_carry_the_start_time(void **state)
{
	char out[256];
	time_t t;
	struct tm tm = { .tm_year = 126, .tm_mon = 10, .tm_mday = 23, .tm_hour = 19, .tm_min = 30,
			 .tm_sec = 5 };

	(void)state;
	t = timegm(&tm);
	period_name(out, sizeof(out), "dir/app.speedscope.json", ".speedscope.json", t, 42, 1);
	assert_string_equal(out, "dir/app-20261123-193005.042Z-1.speedscope.json");
	period_name(out, sizeof(out), "gc.jsonl", ".jsonl", t, 999, 12);
	assert_string_equal(out, "gc-20261123-193005.999Z-12.jsonl");
	/* no known suffix: the time goes at the end */
	period_name(out, sizeof(out), "profile", ".speedscope.json", t, 0, 3);
	assert_string_equal(out, "profile-20261123-193005.000Z-3");
	/* the suffix alone is no base */
	period_name(out, sizeof(out), ".jsonl", ".jsonl", t, 1, 4);
	assert_string_equal(out, ".jsonl-20261123-193005.001Z-4");
}

/* Issue 18 item 8: at a DST fall-back local time repeats an hour; names in
 * local time did too, and a later period replaced an earlier one. */
static void names_differ_across_a_dst_fall_back(void **state)
{
	struct tm tm = { .tm_year = 126, .tm_mon = 9, .tm_mday = 25, .tm_min = 30 };
	char first[256], second[256];
	time_t t;

	(void)state;
	setenv("TZ", "Europe/Paris", 1);
	tzset();
	t = timegm(&tm);	/* 00:30 UTC: 02:30 CEST; an hour later 02:30 CET */
	period_name(first, sizeof(first), "app.json", ".json", t, 0, 1);
	period_name(second, sizeof(second), "app.json", ".json", t + 3600, 0, 2);
	assert_string_equal(first, "app-20261025-003000.000Z-1.json");
	assert_string_equal(second, "app-20261025-013000.000Z-2.json");
	/* the clock stepped back to the same instant: the number tells them apart */
	period_name(second, sizeof(second), "app.json", ".json", t, 0, 2);
	assert_string_not_equal(first, second);
	unsetenv("TZ");
	tzset();
}

static void keep_deletes_the_oldest_periods(void **state)
{
	char dir[] = "/tmp/ebpfprof-rotate-XXXXXX", a[6][300];
	struct rotation r = { .keep = 2 };

	(void)state;
	assert_non_null(mkdtemp(dir));
	for (int i = 0; i < 6; i++) {
		FILE *f;

		snprintf(a[i], sizeof(a[i]), "%s/f%d", dir, i);
		f = fopen(a[i], "w");
		assert_non_null(f);
		fclose(f);
	}
	for (int i = 0; i < 6; i += 2) {
		const char *paths[] = { a[i], a[i + 1], NULL };

		assert_int_equal(rotation_written(&r, paths), 0);
	}
	assert_int_equal(r.periods, 3);
	/* the first period's two files are gone, the newest two periods stay */
	assert_int_equal(access(a[0], F_OK), -1);
	assert_int_equal(access(a[1], F_OK), -1);
	for (int i = 2; i < 6; i++) {
		assert_int_equal(access(a[i], F_OK), 0);
		unlink(a[i]);
	}
	rotation_free(&r);
	rmdir(dir);
}

static void keep_zero_keeps_all(void **state)
{
	struct rotation r = { 0 };
	const char *paths[] = { "/nonexistent/x", NULL };

	(void)state;
	for (int i = 0; i < 5; i++)
		assert_int_equal(rotation_written(&r, paths), 0);
	assert_int_equal(r.nwritten, 0);
	assert_int_equal(r.periods, 5);
	rotation_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(names_carry_the_start_time),
		cmocka_unit_test(names_differ_across_a_dst_fall_back),
		cmocka_unit_test(keep_deletes_the_oldest_periods),
		cmocka_unit_test(keep_zero_keeps_all),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
