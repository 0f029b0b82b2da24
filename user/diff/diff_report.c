// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ebpfprof diff's report: a summary line for the GC question first, then
 * the runs, the changes outside the noise ranked, the time per state side
 * by side, GC pauses per generation, and the functions that changed most.
 * The same in JSON for machines.
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "diff.h"
#include "json.h"
#include "printable.h"

/* Names come from the recordings, that is from the target: every one goes
 * through printable() before it reaches the text report. */
#define SHOWN_MAX 512

static const char *side_names[2] = { "base", "new" };

/* ---- text ---- */

static void print_runs(FILE *f, const struct diff *d)
{
	int side;
	size_t i;

	for (side = 0; side < 2; side++) {
		fprintf(f, "%-4s %zu run%s:\n", side_names[side], d->nruns[side],
			d->nruns[side] == 1 ? "" : "s");
		for (i = 0; i < d->nruns[side]; i++) {
			const struct recording *r = &d->runs[side][i];
			char path[SHOWN_MAX];

			fprintf(f, "  %s: wall %.2f s, %lu samples at %u Hz, %zu threads\n",
				printable(r->path, path, sizeof(path)), r->wall_s, r->samples, r->rate_hz,
				r->has_states ? r->nthreads : r->prof.nthreads);
		}
	}
}

static void line_label(char *out, size_t len, const struct diff_line *l)
{
	char proc[SHOWN_MAX], name[SHOWN_MAX], file[SHOWN_MAX];

	printable(l->process, proc, sizeof(proc));
	switch (l->kind) {
	case LINE_STATE:
		snprintf(out, len, "%s%s%s: %s", proc, l->thread ? " / " : "",
			 printable(l->thread, name, sizeof(name)), diff_state_title(l->state));
		break;
	case LINE_GC_COUNT:
		snprintf(out, len, "%s: gen %d collections", proc, l->generation);
		break;
	case LINE_GC_TOTAL:
		snprintf(out, len, "%s: gen %d GC time", proc, l->generation);
		break;
	case LINE_LABEL:
		snprintf(out, len, "%s=%s: %s", proc, printable(l->thread, name, sizeof(name)),
			 diff_state_title(l->state));
		break;
	case LINE_HOLDER:
		snprintf(out, len, "%s: behind %s%s%s%s", proc, printable(l->function, name, sizeof(name)),
			 l->file ? " (" : "", printable(l->file, file, sizeof(file)), l->file ? ")" : "");
		break;
	case LINE_TASK:
		snprintf(out, len, "%s: %s", proc, printable(l->function, name, sizeof(name)));
		break;
	default:
		snprintf(out, len, "%s%s%s%s", printable(l->function, name, sizeof(name)),
			 l->file ? " (" : "", printable(l->file, file, sizeof(file)), l->file ? ")" : "");
	}
}

static void print_change(FILE *f, const struct diff_line *l, int rank)
{
	char label[512], rel[32];
	int count = l->kind == LINE_GC_COUNT;

	line_label(label, sizeof(label), l);
	diff_fmt_rel(rel, sizeof(rel), l);
	fprintf(f, "  %2d. %-48s %8.3f %s -> %8.3f %s  %6s  (%+.3f %s per s)\n", rank, label,
		l->amount[0], count ? "" : "s", l->amount[1], count ? "" : "s", rel,
		l->delta, count ? "collections" : "s");
}

/* By score, in whole percent (99.9% gone ranks with 100% gone), then the
 * larger change. */
static int ranks_before(const struct diff_line *a, const struct diff_line *b)
{
	if (lround(100 * a->score) != lround(100 * b->score))
		return a->score > b->score;
	return fabs(a->delta) > fabs(b->delta);
}

/* The states' changes outside the noise per process, ranked: what vanished
 * or appeared first, then the largest. (GC per generation has its own table,
 * with its own verdicts: it details the GC state, it does not compete with it.) */
static size_t ranked_changes(const struct diff *d, const struct diff_line **all, size_t max)
{
	const struct diff_line **v, *t;
	size_t n = diff_sorted(d, LINE_STATE, 1, &v), i, k, nall = 0;

	for (i = 0; i < n && nall < max; i++)
		if (diff_is_change(v[i]))
			all[nall++] = v[i];
	free(v);
	for (i = 1; i < nall; i++)
		for (k = i; k > 0 && ranks_before(all[k], all[k - 1]); k--) {
			t = all[k];
			all[k] = all[k - 1];
			all[k - 1] = t;
		}
	return nall;
}

#define MAX_CHANGES 256

static void print_changes(FILE *f, const struct diff *d)
{
	const struct diff_line *all[MAX_CHANGES];
	size_t nall = ranked_changes(d, all, MAX_CHANGES), i;

	fprintf(f, "\nchanges outside the noise, per process, ranked (vanished or appeared first):\n");
	if (!nall)
		fprintf(f, "  none: every difference is within the noise\n");
	for (i = 0; i < nall; i++)
		print_change(f, all[i], (int)i + 1);
}

static void print_states(FILE *f, const struct diff *d)
{
	const struct diff_line **v;
	size_t n = diff_sorted(d, LINE_STATE, 0, &v), i;
	char label[512], rel[32];

	fprintf(f, "\ntime per state (seconds per run, share of the run's wall time):\n");
	fprintf(f, "  %-48s %16s %16s %7s  %s\n", "", "base", "new", "change", "verdict");
	for (i = 0; i < n; i++) {
		if (v[i]->verdict == VERDICT_SAME)
			continue;
		line_label(label, sizeof(label), v[i]);
		diff_fmt_rel(rel, sizeof(rel), v[i]);
		fprintf(f, "  %-48s %8.2f s %4.0f%% %8.2f s %4.0f%% %7s  %s\n", label,
			v[i]->amount[0], 100 * v[i]->rate[0], v[i]->amount[1],
			100 * v[i]->rate[1], rel, verdict_name(v[i]->verdict));
	}
	free(v);
}

/* The pause percentiles of one (process, generation) on one side: the
 * first run's, or with several runs their mean. */
static int gc_stats(const struct diff_line *l, int side, double out[3])
{
	size_t i, found = l->npauses[side];

	for (i = 0; i < 3; i++)
		out[i] = found ? l->pause_s[side][i] / found : 0;
	return found ? 0 : -1;
}

/* A GC count line's total line: the line after it (diff_model.c). */
static const struct diff_line *gc_total(const struct diff_line *count)
{
	return count + 1;
}

static void print_gc(FILE *f, const struct diff *d)
{
	const struct diff_line **v;
	size_t n = diff_sorted(d, LINE_GC_COUNT, 1, &v), i, j;
	double s[2][3];
	char proc[SHOWN_MAX];

	fprintf(f, "\nGC pauses per run (count, total time, pause percentiles):\n");
	if (!n)
		fprintf(f, "  no collections in either run\n");
	for (i = 0; i < n; i++) {
		const struct diff_line *total = gc_total(v[i]);

		gc_stats(v[i], 0, s[0]);
		gc_stats(v[i], 1, s[1]);
		fprintf(f, "  %s gen %d\n", printable(v[i]->process, proc, sizeof(proc)),
			v[i]->generation);
		for (j = 0; j < 2; j++) {
			fprintf(f, "    %-4s %8.0f  %8.3f s", side_names[j], v[i]->amount[j],
				total->amount[j]);
			if (v[i]->amount[j] > 0)
				fprintf(f, "  p50 %8.3f ms  p99 %8.3f ms  max %8.3f ms\n", 1e3 * s[j][0],
					1e3 * s[j][1], 1e3 * s[j][2]);
			else
				fputs("  (none)\n", f);
		}
		fprintf(f, "    count %s, total %s\n", verdict_name(v[i]->verdict),
			verdict_name(total->verdict));
	}
	free(v);
}

static void print_functions(FILE *f, const struct diff *d, int kind)
{
	const struct diff_line **v;
	size_t n = diff_sorted(d, kind, 0, &v), i, noise = 0;
	int dir, shown;
	char label[512], rel[32];

	for (i = 0; i < n; i++)
		noise += v[i]->verdict == VERDICT_NOISE;
	if (kind == LINE_HOLDER)
		fprintf(f, "\nGIL waits by what the GIL holder ran, per second of recording:\n");
	else if (kind == LINE_TASK)
		fprintf(f, "\nasyncio tasks suspended (--tasks), by task and what it awaits, task-seconds per second of recording:\n");
	else if (d->o.share)
		fprintf(f, "\nfunctions, %s time, share of the sampled time (--share):\n",
			kind == LINE_SELF ? "self" : "total");
	else
		fprintf(f, "\nfunctions, %s time, per second of recording:\n",
			kind == LINE_SELF ? "self" : "total");
	for (dir = VERDICT_GREW; dir <= VERDICT_SHRANK; dir++) {
		fprintf(f, "  %s:\n", dir == VERDICT_GREW ? "grew" : "shrank");
		for (i = 0, shown = 0; i < n && shown < d->o.top; i++) {
			if (v[i]->verdict != dir)
				continue;
			line_label(label, sizeof(label), v[i]);
			diff_fmt_rel(rel, sizeof(rel), v[i]);
			if (d->o.share && kind != LINE_HOLDER && kind != LINE_TASK)
				fprintf(f, "    %+7.1f pts  %6s  %.1f%% -> %.1f%%  %s\n", 100 * v[i]->delta,
					rel, 100 * v[i]->rate[0], 100 * v[i]->rate[1], label);
			else
				fprintf(f, "    %+8.3f s/s  %6s  %.3f -> %.3f s/s  %s\n", v[i]->delta, rel,
					v[i]->rate[0], v[i]->rate[1], label);
			shown++;
		}
		if (!shown)
			fprintf(f, "    none outside the noise\n");
	}
	fprintf(f, "  within noise: %zu %s\n", noise, kind == LINE_HOLDER ? "holder functions" :
		kind == LINE_TASK ? "task lines" : "functions");
	free(v);
}

static void print_noise(FILE *f, const struct diff *d)
{
	fprintf(f, "noise: sampling (Poisson in the sample counts) and %.0f%% run-to-run assumed",
		100 * d->o.run_noise);
	if (d->nruns[0] > 1 || d->nruns[1] > 1)
		fprintf(f, ", pooled with the spread between runs");
	fprintf(f, "; t test at %.1f sigma's tail; a change also needs >= %.0f ms per s and"
		" >= %.0f%% of the larger side\n", d->o.z, 1e3 * d->o.min_abs, 100 * d->o.min_rel);
}

/* --label's values, each state with time on a side (seconds per run). */
static void print_labels(FILE *f, const struct diff *d)
{
	const struct diff_line **v;
	size_t n = diff_sorted(d, LINE_LABEL, 0, &v), i;
	char label[512], rel[32];
	int any = 0;

	for (i = 0; i < n; i++) {
		if (v[i]->verdict == VERDICT_SAME)
			continue;
		if (!any++)
			fprintf(f, "\ntime per label value and state (seconds per run, share of the run's "
				"wall time; changes first):\n  %-48s %16s %16s %7s  %s\n", "", "base", "new",
				"change", "verdict");
		line_label(label, sizeof(label), v[i]);
		diff_fmt_rel(rel, sizeof(rel), v[i]);
		fprintf(f, "  %-48s %8.2f s %4.0f%% %8.2f s %4.0f%% %7s  %s\n", label,
			v[i]->amount[0], 100 * v[i]->rate[0], v[i]->amount[1], 100 * v[i]->rate[1],
			rel, verdict_name(v[i]->verdict));
	}
	free(v);
}

int diff_report_text(FILE *f, const struct diff *d)
{
	char summary[1024], shown[4 * sizeof(summary)];

	diff_summary(d, summary, sizeof(summary));
	/* it names the thread whose on-CPU time changed most */
	fprintf(f, "%s\n\n", printable(summary, shown, sizeof(shown)));
	print_runs(f, d);
	print_noise(f, d);
	print_changes(f, d);
	print_states(f, d);
	print_labels(f, d);
	print_gc(f, d);
	print_functions(f, d, LINE_SELF);
	print_functions(f, d, LINE_TOTAL);
	if (d->runs[0][0].holders.nthreads || d->runs[1][0].holders.nthreads)
		print_functions(f, d, LINE_HOLDER);
	if (d->runs[0][0].tasks.nthreads || d->runs[1][0].tasks.nthreads)
		print_functions(f, d, LINE_TASK);
	return ferror(f) ? -1 : 0;
}

/* ---- JSON ---- */

static void json_num(FILE *f, const char *key, double v)
{
	if (isfinite(v))
		fprintf(f, ",\"%s\":%.9g", key, v);
	else
		fprintf(f, ",\"%s\":null", key);
}

static void json_kv(FILE *f, const char *key, const char *s)
{
	fprintf(f, ",\"%s\":", key);
	if (s)
		json_write_string(f, s);
	else
		fputs("null", f);
}

static const char *kind_name(int kind)
{
	static const char *const names[] = { "state", "gc_count", "gc_total", "self", "total",
					     "holder", "label", "task" };

	return names[kind];
}

static void json_line(FILE *f, const struct diff_line *l, int rank)
{
	fprintf(f, "{\"kind\":\"%s\"", kind_name(l->kind));
	if (rank)
		fprintf(f, ",\"rank\":%d", rank);
	if (l->kind == LINE_STATE) {
		json_kv(f, "process", l->process);
		json_kv(f, "thread", l->thread);
		json_kv(f, "state", sample_state_name(l->state));
	} else if (l->kind == LINE_LABEL) {
		json_kv(f, "label", l->process);
		json_kv(f, "value", l->thread);
		json_kv(f, "state", sample_state_name(l->state));
	} else if (l->kind == LINE_GC_COUNT || l->kind == LINE_GC_TOTAL) {
		json_kv(f, "process", l->process);
		fprintf(f, ",\"generation\":%d", l->generation);
	} else {
		if (l->kind == LINE_HOLDER || l->kind == LINE_TASK)
			json_kv(f, "process", l->process);
		json_kv(f, l->kind == LINE_TASK ? "task" : "function", l->function);
		if (l->kind != LINE_TASK)
			json_kv(f, "file", l->file);
	}
	json_num(f, "base", l->amount[0]);
	json_num(f, "new", l->amount[1]);
	json_num(f, "base_per_s", l->rate[0]);
	json_num(f, "new_per_s", l->rate[1]);
	json_num(f, "delta_per_s", l->delta);
	json_num(f, "change", l->rel);
	json_num(f, "stat", l->stat);
	json_num(f, "df", l->df);
	fprintf(f, ",\"verdict\":\"%s\"}", verdict_name(l->verdict));
}

static void json_lines(FILE *f, const char *key, const struct diff *d, int kind,
		       int processes_only, int changes_only, int ranked)
{
	const struct diff_line **v;
	size_t n = diff_sorted(d, kind, processes_only, &v), i;
	int first = 1, rank = 0;

	fprintf(f, ",\n\"%s\":[", key);
	for (i = 0; i < n; i++) {
		if ((changes_only && !diff_is_change(v[i])) || v[i]->verdict == VERDICT_SAME)
			continue;
		fputs(first ? "\n" : ",\n", f);
		first = 0;
		json_line(f, v[i], ranked && diff_is_change(v[i]) ? ++rank : 0);
	}
	fputs("]", f);
	free(v);
}

static void json_changes(FILE *f, const struct diff *d)
{
	const struct diff_line *all[MAX_CHANGES];
	size_t nall = ranked_changes(d, all, MAX_CHANGES), i;

	fputs(",\n\"changes\":[", f);
	for (i = 0; i < nall; i++) {
		fputs(i ? ",\n" : "\n", f);
		json_line(f, all[i], (int)i + 1);
	}
	fputs("]", f);
}

static void json_gc(FILE *f, const struct diff *d)
{
	const struct diff_line **v;
	size_t n = diff_sorted(d, LINE_GC_COUNT, 1, &v), i;
	double s[3];
	int side;

	fputs(",\n\"gc\":[", f);
	for (i = 0; i < n; i++) {
		fputs(i ? ",\n{" : "\n{", f);
		fputs("\"process\":", f);
		json_write_string(f, v[i]->process);
		fprintf(f, ",\"generation\":%d", v[i]->generation);
		for (side = 0; side < 2; side++) {
			if (gc_stats(v[i], side, s))
				s[0] = s[1] = s[2] = 0;
			fprintf(f, ",\"%s\":{\"count\":%.9g,\"p50_s\":%.9g,\"p99_s\":%.9g,\"max_s\":%.9g}",
				side_names[side], v[i]->amount[side], s[0], s[1], s[2]);
		}
		fputs("}", f);
	}
	fputs("]", f);
	free(v);
}

static void json_runs(FILE *f, const struct diff *d)
{
	size_t i;
	int side;

	for (side = 0; side < 2; side++) {
		fprintf(f, ",\n\"%s\":{\"runs\":[", side_names[side]);
		for (i = 0; i < d->nruns[side]; i++) {
			const struct recording *r = &d->runs[side][i];

			fputs(i ? ",{" : "{", f);
			fputs("\"file\":", f);
			json_write_string(f, r->path);
			fprintf(f, ",\"wall_s\":%.9g,\"samples\":%lu,\"rate_hz\":%u,\"threads\":%zu}",
				r->wall_s, r->samples, r->rate_hz,
				r->has_states ? r->nthreads : r->prof.nthreads);
		}
		fprintf(f, "],\"wall_s\":%.9g", d->wall_s[side]);
		json_num(f, "gc_s", diff_state_amount(d, STATE_GC, side));
		json_num(f, "waiting_for_gc_s", diff_state_amount(d, STATE_GIL_WAIT_GC, side));
		fputs("}", f);
	}
}

int diff_report_json(FILE *f, const struct diff *d)
{
	char summary[1024];

	diff_summary(d, summary, sizeof(summary));
	fputs("{\"summary\":", f);
	json_write_string(f, summary);
	json_runs(f, d);
	fprintf(f, ",\n\"noise\":{\"model\":\"%s\",\"z\":%g,\"run_noise\":%g,"
		"\"prior_df\":%d,\"min_abs_s_per_s\":%g,\"min_rel\":%g}",
		d->nruns[0] > 1 || d->nruns[1] > 1 ? "spread" : "poisson", d->o.z, d->o.run_noise,
		DIFF_PRIOR_DF, d->o.min_abs, d->o.min_rel);
	/* --share: the functions' *_per_s are shares of the sampled time */
	fprintf(f, ",\n\"functions_by\":\"%s\"", d->o.share ? "share" : "per_second");
	json_changes(f, d);
	json_lines(f, "states", d, LINE_STATE, 0, 0, 0);
	json_gc(f, d);
	json_lines(f, "gc_counts", d, LINE_GC_COUNT, 1, 0, 0);
	json_lines(f, "gc_totals", d, LINE_GC_TOTAL, 1, 0, 0);
	json_lines(f, "functions_self", d, LINE_SELF, 0, 0, 1);
	json_lines(f, "functions_total", d, LINE_TOTAL, 0, 0, 1);
	json_lines(f, "gil_holders", d, LINE_HOLDER, 0, 0, 1);
	json_lines(f, "labels", d, LINE_LABEL, 0, 0, 0);
	json_lines(f, "tasks_suspended", d, LINE_TASK, 0, 0, 1);
	fputs("}\n", f);
	return ferror(f) ? -1 : 0;
}
