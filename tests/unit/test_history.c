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
#include <sqlite3.h>
#include <unistd.h>
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

/* A cluster run: prefix churn with gc seconds of GC in 2 task-seconds of
 * its own, preempted and waiting for the GIL as the machine's load has it
 * (any), prefix steady with 1 s on-CPU, as ebpfprof-dask stores them. */
static void cluster_run(struct hist_run *run, long long id, double gc)
{
	double preempted = (double)(id % 4) * 0.7, gil = (double)(id % 3) * 0.4;

	memset(run, 0, sizeof(*run));
	run->id = id;
	run->duration_s = 10;
	assert_int_equal(hist_run_add(run, "prefix", "workers", "", "churn", "tasks", 100), 0);
	assert_int_equal(hist_run_add(run, "prefix", "workers", "", "churn", "time_s",
				      2 + preempted + gil), 0);
	assert_int_equal(hist_run_add(run, "prefix_state", "workers", "", "churn", "preempted",
				      preempted), 0);
	assert_int_equal(hist_run_add(run, "prefix_state", "workers", "", "churn", "gil-wait",
				      gil), 0);
	assert_int_equal(hist_run_add(run, "prefix_state", "workers", "", "churn", "on-cpu", 2 - gc), 0);
	assert_int_equal(hist_run_add(run, "prefix_state", "workers", "", "churn", "gc", gc), 0);
	assert_int_equal(hist_run_add(run, "prefix_fn", "workers", "churn", "make (x.py)", "self_s", 1), 0);
	assert_int_equal(hist_run_add(run, "prefix", "workers", "", "steady", "time_s", 1), 0);
	assert_int_equal(hist_run_add(run, "prefix_state", "workers", "", "steady", "on-cpu", 1), 0);
}

static char *check_text(struct hist_series *s)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	assert_non_null(f);
	hist_check_report(f, s, &coiled, "s");
	fclose(f);
	return text;
}

/* A prefix's states are judged per second of its own task time (less the
 * preemption and GIL waits the machine's load moves, from 0 to 1.4 s and
 * to 0.8 s here); its GC doubling
 * is named with its state and figures, and its on-CPU share, fallen only
 * for the GC's growth, is not an improvement. */
static void a_prefix_is_named_with_its_state(void **state)
{
	struct hist_run runs[13];
	struct hist_series s;
	size_t i, regressed = 0, improved = 0;
	char *text;

	(void)state;
	for (i = 0; i < 13; i++)
		cluster_run(&runs[i], (long long)i + 1, i < 10 ? (i % 2 ? 0.43 : 0.41) : 1.04);
	assert_int_equal(hist_series_build(&s, runs, 13), 0);
	hist_series_judge(&s, &coiled);
	for (i = 0; i < s.nmetrics; i++) {
		regressed += s.metrics[i].verdict == HIST_REGRESSED;
		improved += s.metrics[i].verdict == HIST_IMPROVED;
	}
	assert_int_equal(regressed, 1);
	assert_int_equal(improved, 0);
	text = check_text(&s);
	assert_string_equal(text,
		"series s: runs #11-#13 against the 10 before (#1-#10); 3 sigmas, floor 1% (of "
		"on-CPU time for functions, of a task-second for task prefixes' states, of a second "
		"per second for the rest)\n"
		"regressed (1):\n"
		"  prefix churn: GC 0.21 -> 0.52 s per task-second\n"
		"    was 0.21 (sd 0.0053), now 0.52 0.52 0.52 (bar 0.016)\n");
	free(text);
	hist_series_free(&s);
	/* the same 13 unchanged: nothing, and the prefixes' times not judged */
	for (i = 10; i < 13; i++) {
		hist_run_free(&runs[i]);
		cluster_run(&runs[i], (long long)i + 1, 0.42);
	}
	assert_int_equal(hist_series_build(&s, runs, 13), 0);
	hist_series_judge(&s, &coiled);
	text = check_text(&s);
	assert_non_null(strstr(text, "no change beyond the bar in 4 metrics\n"));
	free(text);
	hist_series_free(&s);
	for (i = 0; i < 13; i++)
		hist_run_free(&runs[i]);
}

static const char *const figures_doc =
	"{\"format\":1,\"kind\":\"dask-cluster\",\"at\":1700000000,\"host\":\"h\",\"kernel\":\"k\","
	"\"python\":\"3.11\",\"command\":\"dask\",\"source\":\"out\",\"duration_s\":2.5,"
	"\"figures\":[[\"prefix_state\",\"workers\",\"\",\"churn\",\"gc\",0.5],"
	"[\"state\",\"scheduler\",\"\",\"\",\"on-cpu\",1]]}";

static void a_run_is_read_from_json(void **state)
{
	const char *tags[] = { "distributed=2022.12.1" };
	struct hist_add a = { "t::x", "-", 0, tags, 1 };
	struct hist_run run;
	char err[256];

	(void)state;
	assert_int_equal(hist_run_from_json(&run, &a, figures_doc, strlen(figures_doc), err,
					    sizeof(err)), 0);
	assert_string_equal(run.kind, "dask-cluster");
	assert_string_equal(run.series, "t::x");
	assert_int_equal(run.at, 1700000000);
	assert_int_equal(run.nm, 2);
	assert_string_equal(run.m[0].name, "churn");
	assert_float_equal(run.m[0].value, 0.5, 0);
	assert_int_equal(run.ntags, 1);
	hist_run_free(&run);
}

static void bad_json_runs_are_one_line(void **state)
{
	static const struct { const char *doc, *why; } bad[] = {
		{ "[]", "not a run's figures (not a JSON object)" },
		{ "{\"figures\":[]}", "not a run's figures (no \"format\")" },
		{ "{\"format\":2,\"figures\":[]}", "format 2 is newer than this ebpfprof's (1): use a newer ebpfprof" },
		{ "{\"format\":1,\"kind\":\"c\",\"at\":1,\"duration_s\":1,\"figures\":[[\"x\",\"\",\"\",\"\",\"\",1]]}",
		  "figure 0: unknown kind (state, gc, fn, holder, prefix, prefix_state, prefix_fn)" },
		{ "{\"format\":1,\"kind\":\"c\",\"at\":1,\"duration_s\":1,\"figures\":[[\"gc\",\"\",\"\",\"\",\"\",-1]]}",
		  "figure 0: the value is not a number from 0 to 1e+15" },
		{ "{\"format\":1,\"kind\":\"c\",\"at\":1,\"duration_s\":1,\"figures\":[[\"gc\",\"\",\"\",\"\",1]]}",
		  "figure 0 is not [kind, process, thread, name, field, value]" },
		{ "{\"format\":1,\"kind\":\"c\",\"at\":1,\"duration_s\":-1,\"figures\":[]}",
		  "\"duration_s\" is not a number from 0 to 1e+09" },
		{ "{\"format\":1,\"kind\":\"\",\"at\":1,\"duration_s\":1,\"figures\":[]}", "\"kind\" is empty" },
		{ "{\"format\":1,\"kind\":\"c\",\"at\":1,\"duration_s\":1,\"figures\":[[\"gc\",\"a\\u001fb\",\"\",\"\",\"\",1]]}",
		  "figure 0: item 1 is not a string of at most 4096 bytes without control characters" },
	};
	struct hist_add a = { "s", "-", 0, NULL, 0 };
	struct hist_run run;
	char err[256];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(hist_run_from_json(&run, &a, bad[i].doc, strlen(bad[i].doc), err,
						    sizeof(err)), -1);
		assert_string_equal(err, bad[i].why);
	}
}

/* A database of schema 1 (before runs had a kind) is brought to this
 * schema on open; its runs read as recordings, and a cluster run joins. */
static void a_schema_1_database_migrates(void **state)
{
	char path[] = "/tmp/ebpfprof-test-history-XXXXXX", side[64], err[512];
	const char *tags[] = { "a=b" };
	struct hist_add a = { "s", "-", 0, tags, 1 };
	struct hist_run *runs, run;
	struct hist_db *db;
	sqlite3_stmt *st;
	sqlite3 *raw;
	size_t n;
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(sqlite3_open(path, &raw), SQLITE_OK);
	assert_int_equal(sqlite3_exec(raw,
		"CREATE TABLE runs(id INTEGER PRIMARY KEY AUTOINCREMENT, series TEXT NOT NULL,"
		" at INTEGER NOT NULL, host TEXT NOT NULL, kernel TEXT NOT NULL,"
		" python TEXT NOT NULL, command TEXT NOT NULL, source TEXT NOT NULL,"
		" duration_s REAL NOT NULL, nmetrics INTEGER NOT NULL);"
		"CREATE INDEX runs_by_series ON runs(series, id);"
		"CREATE TABLE tags(run INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
		" key TEXT NOT NULL, value TEXT NOT NULL);"
		"CREATE INDEX tags_by_run ON tags(run);"
		"CREATE TABLE metrics(run INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
		" kind TEXT NOT NULL, process TEXT NOT NULL, thread TEXT NOT NULL,"
		" name TEXT NOT NULL, field TEXT NOT NULL, value REAL NOT NULL);"
		"CREATE INDEX metrics_by_run ON metrics(run);"
		"INSERT INTO runs VALUES (1, 's', 1, 'h', 'k', '3.11', 'python3 x.py', 'x.json', 2, 1);"
		"INSERT INTO metrics VALUES (1, 'state', 'python3', '', 'on-cpu', 'seconds', 1.5);"
		"PRAGMA application_id = 1700950118; PRAGMA user_version = 1;", NULL, NULL, NULL),
		SQLITE_OK);
	sqlite3_close(raw);
	assert_int_equal(hist_db_open(&db, path, 0, err, sizeof(err)), 0);
	assert_int_equal(hist_run_from_json(&run, &a, figures_doc, strlen(figures_doc), err,
					    sizeof(err)), 0);
	assert_int_equal(hist_db_add(db, &run, err, sizeof(err)), 0);
	assert_int_equal(run.id, 2);
	hist_run_free(&run);
	assert_int_equal(hist_db_runs(db, "s", 0, 1, &runs, &n, err, sizeof(err)), 0);
	assert_int_equal(n, 2);
	assert_string_equal(runs[0].kind, "recording");
	assert_string_equal(runs[0].m[0].name, "on-cpu");
	assert_string_equal(runs[1].kind, "dask-cluster");
	assert_int_equal(runs[1].nm, 2);
	hist_runs_free(runs, n);
	hist_db_close(db);
	assert_int_equal(sqlite3_open(path, &raw), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(raw, "PRAGMA user_version", -1, &st, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	assert_int_equal(sqlite3_column_int(st, 0), HIST_SCHEMA_VERSION);
	sqlite3_finalize(st);
	sqlite3_close(raw);
	unlink(path);
	snprintf(side, sizeof(side), "%s-wal", path);
	unlink(side);
	snprintf(side, sizeof(side), "%s-shm", path);
	unlink(side);
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
		cmocka_unit_test(a_prefix_is_named_with_its_state),
		cmocka_unit_test(a_run_is_read_from_json),
		cmocka_unit_test(bad_json_runs_are_one_line),
		cmocka_unit_test(a_schema_1_database_migrates),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
