// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ebpfprof diff's model on small made-up recordings: the noise verdicts with
 * one and several runs per side, per-second normalization, functions' self
 * and total time (a recursive call counted once), and reading a recording
 * back from a file, bad ones included.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include "diff.h"

#define SEC 1000000000ull

static const struct diff_opts opts = { .z = 3.0, .run_noise = 0.04, .min_abs = 0.010,
				       .min_rel = 0.10, .top = 10 };

/* A one-thread recording: GC and on-CPU seconds, and `fn` on CPU for fn_s
 * seconds (stack main;fn, or main;fn;fn when recursive). */
static void make_run(struct recording *r, double wall, double gc_s, double cpu_s,
		     const char *fn, double fn_s, int recursive)
{
	struct thread_profile *t;
	uint32_t ids[3];
	struct sample s = { .frames = ids };

	memset(r, 0, sizeof(*r));
	r->path = "made-up";
	profile_init(&r->prof);
	r->wall_s = wall;
	r->rate_hz = 100;
	r->has_states = 1;
	r->threads = calloc(1, sizeof(*r->threads));
	r->threads[0].name = strdup("MainThread");
	r->threads[0].process = strdup("python3");
	r->threads[0].states_s[STATE_GC] = gc_s;
	r->threads[0].states_s[STATE_ON_CPU] = cpu_s;
	r->threads[0].states_s[STATE_SLEEP] = wall - gc_s - cpu_s;
	r->nthreads = 1;
	ids[0] = profile_frame(&r->prof, "main", "app.py", 1, FRAME_PYTHON);
	ids[1] = profile_frame(&r->prof, fn, "app.py", 10, FRAME_PYTHON);
	ids[2] = ids[1];
	s.nframes = recursive ? 3 : 2;
	s.weight_ns = (uint64_t)(fn_s * SEC);
	t = profile_thread(&r->prof, 0, 0);
	t->name = strdup("MainThread");
	assert_int_equal(profile_add_sample(&r->prof, t, &s), 0);
}

static void run_diff(struct diff *d, struct recording *base, size_t nbase,
		     struct recording *new, size_t nnew)
{
	memset(d, 0, sizeof(*d));
	d->runs[0] = base;
	d->runs[1] = new;
	d->nruns[0] = nbase;
	d->nruns[1] = nnew;
	d->o = opts;
	assert_int_equal(diff_build(d), 0);
}

static void free_runs(struct recording *r, size_t n)
{
	for (size_t i = 0; i < n; i++)
		recording_free(&r[i]);
}

static const struct diff_line *find(const struct diff *d, int kind, int state,
				    const char *thread, const char *fn)
{
	for (size_t i = 0; i < d->nlines; i++) {
		const struct diff_line *l = &d->lines[i];

		if (l->kind != kind)
			continue;
		if (kind == LINE_STATE && (l->state != state ||
					   (thread ? !l->thread || strcmp(l->thread, thread) : !!l->thread)))
			continue;
		if (fn && (!l->function || strcmp(l->function, fn)))
			continue;
		return l;
	}
	fail_msg("no such line");
	return NULL;
}

static void test_gc_gone_is_a_change_and_same_is_noise(void **state)
{
	(void)state;
	struct recording a, b;
	struct diff d;
	const struct diff_line *gc, *cpu;

	(void)state;

	make_run(&a, 10, 2.0, 4.0, "work", 4.0, 0);
	make_run(&b, 10, 0.0, 4.1, "work", 4.1, 0);
	run_diff(&d, &a, 1, &b, 1);
	gc = find(&d, LINE_STATE, STATE_GC, NULL, NULL);
	assert_int_equal(gc->verdict, VERDICT_SHRANK);
	assert_true(fabs(gc->rel + 1) < 1e-9 && fabs(gc->score - 1) < 1e-9);
	assert_true(fabs(gc->rate[0] - 0.2) < 1e-9);
	cpu = find(&d, LINE_STATE, STATE_ON_CPU, "MainThread", NULL);
	assert_int_equal(cpu->verdict, VERDICT_NOISE);	/* +2.5% */
	assert_int_equal(find(&d, LINE_SELF, 0, NULL, "work")->verdict, VERDICT_NOISE);
	diff_free(&d);
	free_runs(&a, 1);
	free_runs(&b, 1);
}

static void test_per_second_compares_runs_of_different_lengths(void **state)
{
	(void)state;
	struct recording a, b;
	struct diff d;

	(void)state;

	/* twice as long, twice the time: the same per second */
	make_run(&a, 5, 1.0, 2.0, "work", 2.0, 0);
	make_run(&b, 10, 2.0, 4.0, "work", 4.0, 0);
	run_diff(&d, &a, 1, &b, 1);
	assert_int_equal(find(&d, LINE_STATE, STATE_GC, NULL, NULL)->verdict, VERDICT_NOISE);
	assert_true(fabs(find(&d, LINE_SELF, 0, NULL, "work")->rel) < 1e-9);
	diff_free(&d);
	free_runs(&a, 1);
	free_runs(&b, 1);
}

static void test_twice_slower_function(void **state)
{
	(void)state;
	struct recording a, b;
	struct diff d;
	const struct diff_line *self, *total;

	(void)state;

	make_run(&a, 10, 0, 2.0, "slow", 1.0, 0);
	make_run(&b, 10, 0, 3.0, "slow", 2.0, 1);
	run_diff(&d, &a, 1, &b, 1);
	self = find(&d, LINE_SELF, 0, NULL, "slow");
	total = find(&d, LINE_TOTAL, 0, NULL, "slow");
	assert_int_equal(self->verdict, VERDICT_GREW);
	assert_true(fabs(self->rel - 1.0) < 1e-9);
	/* main;slow;slow: the recursive call's time counts once in its total */
	assert_true(fabs(total->rate[1] - 0.2) < 1e-9);
	diff_free(&d);
	free_runs(&a, 1);
	free_runs(&b, 1);
}

static void test_small_changes_need_to_matter(void **state)
{
	(void)state;
	struct recording a, b;
	struct diff d;

	(void)state;

	/* 5 ms per second more: sure, but under the 10 ms/s floor */
	make_run(&a, 100, 0.5, 1.0, "work", 1.0, 0);
	make_run(&b, 100, 1.0, 1.0, "work", 1.0, 0);
	run_diff(&d, &a, 1, &b, 1);
	assert_int_equal(find(&d, LINE_STATE, STATE_GC, NULL, NULL)->verdict, VERDICT_NOISE);
	diff_free(&d);
	free_runs(&a, 1);
	free_runs(&b, 1);
}

static void test_several_runs_use_their_spread(void **state)
{
	(void)state;
	struct recording a[3], b[3], c[3];
	struct diff d;

	(void)state;

	/* +20% with runs spread by +-30%: within noise */
	make_run(&a[0], 10, 1.0, 3, "w", 3, 0);
	make_run(&a[1], 10, 1.6, 3, "w", 3, 0);
	make_run(&a[2], 10, 0.4, 3, "w", 3, 0);
	make_run(&b[0], 10, 1.2, 3, "w", 3, 0);
	make_run(&b[1], 10, 1.9, 3, "w", 3, 0);
	make_run(&b[2], 10, 0.5, 3, "w", 3, 0);
	run_diff(&d, a, 3, b, 3);
	assert_int_equal(find(&d, LINE_STATE, STATE_GC, NULL, NULL)->verdict, VERDICT_NOISE);
	diff_free(&d);
	/* +50% with tight runs: a change */
	make_run(&c[0], 10, 1.50, 3, "w", 3, 0);
	make_run(&c[1], 10, 1.52, 3, "w", 3, 0);
	make_run(&c[2], 10, 1.48, 3, "w", 3, 0);
	free_runs(b, 3);
	make_run(&b[0], 10, 1.00, 3, "w", 3, 0);
	make_run(&b[1], 10, 1.01, 3, "w", 3, 0);
	make_run(&b[2], 10, 0.99, 3, "w", 3, 0);
	run_diff(&d, b, 3, c, 3);
	assert_int_equal(find(&d, LINE_STATE, STATE_GC, NULL, NULL)->verdict, VERDICT_GREW);
	diff_free(&d);
	free_runs(a, 3);
	free_runs(b, 3);
	free_runs(c, 3);
}

/* Issue 23: one function 1.65x costlier, runs spread by a few %: flagged
 * with one run per side, so with two and three (a t test at 2 degrees of
 * freedom once called it noise at 4.6 sigma). */
static void test_more_runs_never_less_sensitive(void **state)
{
	static const double spread[3] = { 1.00, 1.03, 0.97 };
	struct recording a[3], b[3];
	struct diff d;
	double last_stat = 0;
	size_t k, i;

	(void)state;
	for (i = 0; i < 3; i++) {
		make_run(&a[i], 10, 0, 4, "hot", 2.0 * spread[i], 0);
		make_run(&b[i], 10, 0, 4, "hot", 3.3 * spread[(i + 1) % 3], 0);
		a[i].rate_hz = b[i].rate_hz = 1000;
	}
	for (k = 1; k <= 3; k++) {
		const struct diff_line *l;

		run_diff(&d, a, k, b, k);
		l = find(&d, LINE_SELF, 0, NULL, "hot");
		assert_int_equal(l->verdict, VERDICT_GREW);
		assert_true(l->stat > last_stat);	/* more evidence with each run */
		assert_true(l->df > 10);
		last_stat = l->stat;
		diff_free(&d);
	}
	free_runs(a, 3);
	free_runs(b, 3);
}

/* Runs that really differ more than assumed still widen the noise. */
static void test_measured_spread_counts(void **state)
{
	struct recording a[3], b[3];
	struct diff d;
	size_t i;

	(void)state;
	for (i = 0; i < 3; i++) {
		make_run(&a[i], 10, 0, 4, "hot", 2.0 * (i == 1 ? 0.5 : i == 2 ? 1.5 : 1.0), 0);
		make_run(&b[i], 10, 0, 4, "hot", 2.5 * (i == 2 ? 0.5 : i == 0 ? 1.5 : 1.0), 0);
		a[i].rate_hz = b[i].rate_hz = 1000;
	}
	run_diff(&d, a, 3, b, 3);	/* +25%, runs spread by +-50% */
	assert_int_equal(find(&d, LINE_SELF, 0, NULL, "hot")->verdict, VERDICT_NOISE);
	diff_free(&d);
	run_diff(&d, a, 1, b, 1);	/* +25% between two single runs: 4% assumed */
	assert_int_equal(find(&d, LINE_SELF, 0, NULL, "hot")->verdict, VERDICT_GREW);
	diff_free(&d);
	free_runs(a, 3);
	free_runs(b, 3);
}

static void test_t_critical(void **state)
{
	(void)state;
	/* the 99% two-sided t of the tables, from z = 2.5758 (99% normal) */
	assert_true(fabs(diff_t_critical(2.5758293, 2) - 9.925) < 0.001);
	assert_true(fabs(diff_t_critical(2.5758293, 10) - 3.169) < 0.001);
	assert_true(fabs(diff_t_critical(2.5758293, 30) - 2.750) < 0.001);
	assert_true(fabs(diff_t_critical(3, 1e9) - 3) < 1e-9);
	assert_true(diff_t_critical(3, 20) > diff_t_critical(3, 22));
}

/* An exact time (the scheduler's, the collector's probes) has no sampling
 * noise: the same change stands out more than if it were sampled. */
static void test_exact_times_have_no_sampling_noise(void **state)
{
	struct recording a[2], b[2];
	struct diff d;
	double stat[2];
	int exact;

	(void)state;
	for (exact = 0; exact < 2; exact++) {
		make_run(&a[exact], 10, 0.5, 4, "w", 4, 0);
		make_run(&b[exact], 10, 0.6, 4, "w", 4, 0);
		a[exact].gc_exact = b[exact].gc_exact = exact;
		run_diff(&d, &a[exact], 1, &b[exact], 1);
		stat[exact] = find(&d, LINE_STATE, STATE_GC, NULL, NULL)->stat;
		diff_free(&d);
	}
	assert_true(stat[1] > 1.5 * stat[0]);
	free_runs(a, 2);
	free_runs(b, 2);
}

/* Time is per second whatever the rate: 100 Hz against 400 Hz is no change. */
static void test_different_rates_compare_without_bias(void **state)
{
	struct recording a, b;
	struct diff d;
	const struct diff_line *l;

	(void)state;
	make_run(&a, 10, 0.5, 4, "w", 4, 0);
	make_run(&b, 10, 0.5, 4, "w", 4, 0);
	b.rate_hz = 400;
	run_diff(&d, &a, 1, &b, 1);
	l = find(&d, LINE_SELF, 0, NULL, "w");
	assert_true(fabs(l->rel) < 1e-9 && l->verdict == VERDICT_NOISE);
	diff_free(&d);
	free_runs(&a, 1);
	free_runs(&b, 1);
}

static void test_idle_or_gil_against_plain_is_refused(void **state)
{
	struct recording a = { .path = "a.json", .idle = 1, .gil_only = 0 };
	struct recording b = { .path = "b.json", .idle = 0, .gil_only = 0 };
	char err[256];

	(void)state;
	assert_int_equal(recordings_comparable(&a, &b, err, sizeof(err)), -1);
	assert_string_equal(err, "a.json was recorded with --idle and b.json without: they "
			    "cannot be compared (record both with or both without it)");
	a.idle = 0;
	b.gil_only = 1;
	assert_int_equal(recordings_comparable(&a, &b, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "b.json was recorded with --gil and a.json without"));
	b.gil_only = -1;	/* an older recording that does not say */
	assert_int_equal(recordings_comparable(&a, &b, err, sizeof(err)), 0);
}

static char *write_tmp(const char *text)
{
	char *path = strdup("/tmp/ebpfprof-test-diff-XXXXXX");
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	return path;
}

static void test_read_a_recording(void **state)
{
	(void)state;
	char *path = write_tmp(
		"{\"shared\":{\"frames\":[{\"name\":\"main\",\"file\":\"a.py\",\"line\":1},"
		"{\"name\":\"[GC gen 2]\"},{\"name\":\"main\",\"file\":\"a.py\",\"line\":1}]},"
		"\"profiles\":[{\"type\":\"sampled\",\"name\":\"Thread 7 \\\"worker\\\"\","
		"\"samples\":[[0,1],[],[2]],\"weights\":[10,5,20]}],"
		"\"ebpfprof\":{\"duration_s\":2,\"rate_hz\":100,\"samples\":3,"
		"\"threads\":[{\"pid\":7,\"tid\":7,\"name\":\"worker\",\"process\":\"py\","
		"\"states_s\":{\"on-cpu\":1,\"gc\":0.5,\"gil-wait\":0,\"waiting-for-gc\":0,"
		"\"lock-wait\":0,\"io\":0,\"sleep\":0.5,\"preempted\":0,\"other\":0}}],"
		"\"gc\":[{\"pid\":7,\"generation\":2,\"count\":3,\"total_s\":0.5,\"p50_s\":0.1,"
		"\"p99_s\":0.3,\"max_s\":0.3}]}}");
	struct recording r;
	struct sample *samples;
	char err[256];

	assert_int_equal(recording_read(&r, path, err, sizeof(err)), 0);
	assert_true(r.wall_s == 2 && r.rate_hz == 100 && r.has_states);
	assert_int_equal(r.prof.nframes, 2);	/* equal frames are one */
	assert_int_equal(r.prof.nthreads, 1);
	assert_string_equal(r.prof.threads[0].name, "worker");
	assert_int_equal(r.prof.threads[0].nsamples, 2);	/* the gap is not a sample */
	samples = profile_thread_samples(&r.prof, &r.prof.threads[0]);
	assert_non_null(samples);
	assert_int_equal(samples[1].frames[0], 0);
	free(samples);
	assert_string_equal(r.gcs[0].process, "py");
	assert_true(r.gcs[0].count == 3 && r.threads[0].states_s[STATE_GC] == 0.5);
	recording_free(&r);
	unlink(path);
	free(path);
}

static void test_bad_recordings_are_refused(void **state)
{
	(void)state;
	static const char *const bad[] = {
		"[]",
		"{\"ebpfprof\":{\"duration_s\":1,\"rate_hz\":100},\"shared\":{\"frames\":[]},"
		"\"profiles\":[{\"type\":\"sampled\",\"samples\":[[0]],\"weights\":[1]}]}",
		"{\"ebpfprof\":{\"duration_s\":1,\"rate_hz\":100},\"shared\":{\"frames\":[{\"name\":\"a\"}]},"
		"\"profiles\":[{\"type\":\"sampled\",\"samples\":[[0]],\"weights\":[-1]}]}",
		"{\"ebpfprof\":{\"duration_s\":1,\"rate_hz\":100},\"shared\":{\"frames\":[{\"name\":\"a\"}]},"
		"\"profiles\":[{\"type\":\"sampled\",\"samples\":[[0],[0]],\"weights\":[1]}]}",
		"{\"ebpfprof\":{\"duration_s\":-1,\"rate_hz\":100}}",
		"{\"ebpfprof\":{\"duration_s\":1,\"rate_hz\":100,\"threads\":[{\"states_s\":[]}],\"gc\":[]},"
		"\"shared\":{\"frames\":[]},\"profiles\":[]}",
		"{\"ebpfprof\":{\"version\":0,\"duration_s\":1,\"rate_hz\":100}}",
		"{\"ebpfprof\":{\"version\":\"2\",\"duration_s\":1,\"rate_hz\":100}}",
	};
	struct recording r;
	char err[256];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *path = write_tmp(bad[i]);

		err[0] = 0;
		assert_int_equal(recording_read(&r, path, err, sizeof(err)), -1);
		assert_non_null(strstr(err, path));
		assert_null(strchr(err, '\n'));
		recording_free(&r);
		unlink(path);
		free(path);
	}
}

/* A recording of another version compares: a state this binary does not
 * know is left out, one it knows and the file lacks is read as 0, a newer
 * format is read as far as it is known; each is said in one line. */
static void test_other_versions_are_read_and_said(void **state)
{
	static const char rec[] =
		"{\"ebpfprof\":{\"version\":9,\"duration_s\":1,\"rate_hz\":100,\"threads\":["
		"{\"states_s\":{\"on-cpu\":0.5,\"spin\":0.25,\"io\":0.25,\"spin\\u001b\":1}},"
		"{\"states_s\":{\"on-cpu\":1,\"spin\":0.5}}],\"gc\":[]},"
		"\"shared\":{\"frames\":[]},\"profiles\":[]}";
	char *path = write_tmp(rec), note[512], missing[256] = "read as 0: ";
	struct recording r;
	char err[256];
	int s;

	(void)state;
	for (s = STATE_ON_CPU + 1; s < DIFF_NSTATES; s++)	/* every state but on-CPU */
		snprintf(missing + strlen(missing), sizeof(missing) - strlen(missing), "%s%s",
			 s > STATE_ON_CPU + 1 ? ", " : "", sample_state_name(s));
	assert_int_equal(recording_read(&r, path, err, sizeof(err)), 0);
	assert_int_equal(r.version, 9);
	assert_true(r.threads[0].states_s[STATE_ON_CPU] == 0.5 &&
		    r.threads[0].states_s[STATE_IO] == 0.25 && r.threads[1].states_s[STATE_IO] == 0);
	assert_int_equal(r.missing_states, ((1u << DIFF_NSTATES) - 1) & ~(1u << STATE_ON_CPU));
	assert_int_equal(recording_note(&r, note, sizeof(note)), 1);
	assert_null(strchr(note, '\n'));
	assert_non_null(strstr(note, "format 9 by a newer ebpfprof"));
	/* each unknown name once, in the order met */
	assert_non_null(strstr(note, "does not know, left out: spin, spin\x1b;"));
	assert_non_null(strstr(note, missing));
	assert_non_null(strstr(note, "read as 0: gc, gil-wait, waiting-for-gc, lock-wait, io, "));
	recording_free(&r);
	unlink(path);
	free(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gc_gone_is_a_change_and_same_is_noise),
		cmocka_unit_test(test_per_second_compares_runs_of_different_lengths),
		cmocka_unit_test(test_twice_slower_function),
		cmocka_unit_test(test_small_changes_need_to_matter),
		cmocka_unit_test(test_several_runs_use_their_spread),
		cmocka_unit_test(test_more_runs_never_less_sensitive),
		cmocka_unit_test(test_measured_spread_counts),
		cmocka_unit_test(test_t_critical),
		cmocka_unit_test(test_exact_times_have_no_sampling_noise),
		cmocka_unit_test(test_different_rates_compare_without_bias),
		cmocka_unit_test(test_idle_or_gil_against_plain_is_refused),
		cmocka_unit_test(test_read_a_recording),
		cmocka_unit_test(test_bad_recordings_are_refused),
		cmocka_unit_test(test_other_versions_are_read_and_said),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
