// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The run history's rule (Coiled's): regressed when each of the last runs is
 * above the mean of the window before them by more than max(sigmas sd,
 * floor); improved when each is below by as much; shares renormalized. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "history.h"

static const struct hist_rule coiled = { .last = 3, .window = 10, .sigmas = 3, .floor = 1 };

/* 10 runs of mean 50, sd 1 (alternating 49, 51 and two 50s), then three. */
static void series_of(double *v, double a, double b, double c)
{
	static const double base[10] = { 49, 51, 49, 51, 50, 50, 49, 51, 49, 51 };

	memcpy(v, base, sizeof(base));
	v[10] = a;
	v[11] = b;
	v[12] = c;
}

static void mean_sd_and_bar(void **state)
{
	struct hist_stats st;
	double v[13];

	(void)state;
	series_of(v, 50, 50, 50);
	assert_int_equal(hist_judge(v, &coiled, &st), HIST_SAME);
	assert_float_equal(st.mean, 50, 1e-12);
	/* 8 values 1 away, 2 at the mean: variance 8/9 */
	assert_float_equal(st.sd, 0.9428090415820634, 1e-12);
	assert_float_equal(st.bar, 3 * 0.9428090415820634, 1e-12);
}

static void each_of_the_last_above_the_bar_regresses(void **state)
{
	struct hist_stats st;
	double v[13];

	(void)state;
	series_of(v, 53, 53.5, 60);
	assert_int_equal(hist_judge(v, &coiled, &st), HIST_REGRESSED);
	/* one of the three at the bar (not above it): not a regression */
	series_of(v, 53, 50 + 3 * 0.9428090415820634, 60);
	assert_int_equal(hist_judge(v, &coiled, &st), HIST_SAME);
	/* two of three: a blip, not a regression */
	series_of(v, 60, 49, 60);
	assert_int_equal(hist_judge(v, &coiled, &st), HIST_SAME);
}

static void below_is_an_improvement(void **state)
{
	struct hist_stats st;
	double v[13];

	(void)state;
	series_of(v, 40, 45, 46);
	assert_int_equal(hist_judge(v, &coiled, &st), HIST_IMPROVED);
	series_of(v, 0, 0, 0);	/* gone */
	assert_int_equal(hist_judge(v, &coiled, &st), HIST_IMPROVED);
}

static void the_floor_bounds_a_quiet_metric(void **state)
{
	struct hist_rule r = coiled;
	struct hist_stats st;
	double v[13] = { 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5.5, 5.5, 5.5 };

	(void)state;
	/* sd 0: without a floor any change is one */
	assert_int_equal(hist_judge(v, &r, &st), HIST_SAME);
	assert_float_equal(st.bar, 1, 0);
	r.floor = 0.25;
	assert_int_equal(hist_judge(v, &r, &st), HIST_REGRESSED);
	/* a metric that appeared over the floor */
	memset(v, 0, sizeof(v));
	v[10] = v[11] = v[12] = 2;
	assert_int_equal(hist_judge(v, &coiled, &st), HIST_REGRESSED);
}

static void add(struct hist_run *run, const char *name, double share)
{
	assert_int_equal(hist_run_add(run, "fn", "python3", "", name, "self_share", share), 0);
}

/* steady and changed share a process; changed does 1.5x: 50% -> 60%,
 * steady 50% -> 40%. steady's fall is changed's growth, not its own. */
static void a_share_that_fell_for_another_is_no_improvement(void **state)
{
	struct hist_run runs[13];
	struct hist_series s;
	size_t i, regressed = 0, improved = 0;

	(void)state;
	memset(runs, 0, sizeof(runs));
	for (i = 0; i < 13; i++) {
		double changed = i < 10 ? 0.50 + (i % 2 ? 0.005 : -0.005) : 0.60;

		runs[i].duration_s = 2;
		runs[i].id = (long long)i + 1;
		add(&runs[i], "changed (x.py)", changed);
		add(&runs[i], "steady (x.py)", 1 - changed);
	}
	assert_int_equal(hist_series_build(&s, runs, 13), 0);
	assert_int_equal(s.nmetrics, 2);
	hist_series_judge(&s, &coiled);
	for (i = 0; i < s.nmetrics; i++) {
		regressed += s.metrics[i].verdict == HIST_REGRESSED;
		improved += s.metrics[i].verdict == HIST_IMPROVED;
		if (s.metrics[i].verdict == HIST_REGRESSED)
			assert_non_null(strstr(s.metrics[i].label, "changed (x.py)"));
	}
	assert_int_equal(regressed, 1);
	assert_int_equal(improved, 0);
	hist_series_free(&s);
	for (i = 0; i < 13; i++)
		hist_run_free(&runs[i]);
}

static void states_are_judged_per_second(void **state)
{
	struct hist_run runs[2];
	struct hist_series s;

	(void)state;
	memset(runs, 0, sizeof(runs));
	runs[0].duration_s = 2;
	runs[1].duration_s = 4;
	assert_int_equal(hist_run_add(&runs[0], "state", "p", "", "gc", "seconds", 0.1), 0);
	assert_int_equal(hist_run_add(&runs[1], "state", "p", "", "gc", "seconds", 0.2), 0);
	/* per thread: kept, not judged */
	assert_int_equal(hist_run_add(&runs[1], "state", "p", "t", "gc", "seconds", 0.2), 0);
	assert_int_equal(hist_series_build(&s, runs, 2), 0);
	assert_int_equal(s.nmetrics, 1);
	/* 50 ms/s both: 5% of a second per second */
	assert_float_equal(s.metrics[0].values[0], 5, 1e-12);
	assert_float_equal(s.metrics[0].values[1], 5, 1e-12);
	hist_series_free(&s);
	hist_run_free(&runs[0]);
	hist_run_free(&runs[1]);
}

static void tags_are_checked(void **state)
{
	(void)state;
	assert_int_equal(hist_tag_valid("commit=abc123"), 0);
	assert_int_equal(hist_tag_valid("gc=off"), 0);
	assert_int_equal(hist_tag_valid("k="), 0);
	assert_int_equal(hist_tag_valid("=v"), -1);
	assert_int_equal(hist_tag_valid("novalue"), -1);
	assert_int_equal(hist_tag_valid("a b=c"), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(mean_sd_and_bar),
		cmocka_unit_test(each_of_the_last_above_the_bar_regresses),
		cmocka_unit_test(below_is_an_improvement),
		cmocka_unit_test(the_floor_bounds_a_quiet_metric),
		cmocka_unit_test(a_share_that_fell_for_another_is_no_improvement),
		cmocka_unit_test(states_are_judged_per_second),
		cmocka_unit_test(tags_are_checked),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
