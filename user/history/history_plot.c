// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * history plot: one self-contained page (inline SVG, no script, nothing
 * fetched) with the trends of a series: states and GC in ms per second,
 * the top functions' self share, each run a point, a run flagged by the
 * check's rule (at any point of the series, not only the last) drawn red.
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "history.h"

#define PLOT_W 1000
#define PLOT_H 220
#define MARGIN_L 60
#define MARGIN_R 20
#define MARGIN_T 16
#define MARGIN_B 28
#define TOP_FUNCTIONS 8
#define MAX_LINES 10

static const char *const colours[MAX_LINES] = {
	"#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b",
	"#e377c2", "#7f7f7f", "#bcbd22", "#17becf", "#393b79",
};

/* Text for HTML: the five characters that mean something escaped. */
static void put_html(FILE *f, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '&': fputs("&amp;", f); break;
		case '"': fputs("&quot;", f); break;
		case '\'': fputs("&#39;", f); break;
		default:
			if ((unsigned char)*s >= 0x20 || *s == '\t')
				fputc(*s, f);
		}
	}
}

/* Whether run i of metric sm is flagged: the rule judged at each end
 * point of the series, the last runs of a regressing window marked. */
static void flag_runs(const struct hist_series *s, const struct hist_rule *rule,
		      const struct hist_series_metric *sm, char *flagged)
{
	size_t need = rule->window + rule->last, end, k;
	struct hist_stats st;

	memset(flagged, 0, s->nruns);
	if (!sm->judged)
		return;
	for (end = need; end <= s->nruns; end++)
		if (hist_judge(sm->values + end - need, rule, &st) == HIST_REGRESSED)
			for (k = end - rule->last; k < end; k++)
				flagged[k] = 1;
}

static double scale_of(const struct hist_series_metric *sm)
{
	/* percent of on-CPU time; ms per second; seconds per task-second */
	return sm->unit == HIST_SHARE ? 1 : sm->unit == HIST_PER_TASK_SECOND ? 0.01 : 10;
}

static double max_of(const struct hist_series *s, const struct hist_series_metric *const *lines,
		     size_t n)
{
	double top = 0;
	size_t i, r;

	for (i = 0; i < n; i++)
		for (r = 0; r < s->nruns; r++)
			top = fmax(top, lines[i]->values[r] * scale_of(lines[i]));
	return top > 0 ? top * 1.1 : 1;
}

static double x_of(size_t r, size_t nruns)
{
	double w = PLOT_W - MARGIN_L - MARGIN_R;

	return MARGIN_L + (nruns > 1 ? w * r / (nruns - 1) : w / 2);
}

static double y_of(double v, double top)
{
	return MARGIN_T + (PLOT_H - MARGIN_T - MARGIN_B) * (1 - v / top);
}

static void axes(FILE *f, const struct hist_series *s, double top, const char *unit)
{
	size_t r, step = s->nruns > 20 ? s->nruns / 10 : 1;
	int t;

	fprintf(f, "<line x1='%d' y1='%d' x2='%d' y2='%d' stroke='#444'/>\n", MARGIN_L,
		PLOT_H - MARGIN_B, PLOT_W - MARGIN_R, PLOT_H - MARGIN_B);
	fprintf(f, "<line x1='%d' y1='%d' x2='%d' y2='%d' stroke='#444'/>\n", MARGIN_L, MARGIN_T,
		MARGIN_L, PLOT_H - MARGIN_B);
	for (t = 0; t <= 4; t++) {
		double v = top * t / 4, y = y_of(v, top);

		fprintf(f, "<line x1='%d' y1='%.1f' x2='%d' y2='%.1f' stroke='#eee'/>"
			"<text x='%d' y='%.1f' text-anchor='end' font-size='11'>%.3g%s</text>\n",
			MARGIN_L, y, PLOT_W - MARGIN_R, y, MARGIN_L - 4, y + 4, v, unit);
	}
	for (r = 0; r < s->nruns; r += step)
		fprintf(f, "<text x='%.1f' y='%d' text-anchor='middle' font-size='11'>#%lld</text>\n",
			x_of(r, s->nruns), PLOT_H - MARGIN_B + 16, s->runs[r].id);
}

static void one_line(FILE *f, const struct hist_series *s, const struct hist_rule *rule,
		     const struct hist_series_metric *sm, double top, const char *colour,
		     char *flagged)
{
	size_t r;

	fprintf(f, "<polyline fill='none' stroke='%s' stroke-width='1.5' points='", colour);
	for (r = 0; r < s->nruns; r++)
		fprintf(f, "%.1f,%.1f ", x_of(r, s->nruns), y_of(sm->values[r] * scale_of(sm), top));
	fprintf(f, "'/>\n");
	flag_runs(s, rule, sm, flagged);
	for (r = 0; r < s->nruns; r++) {
		double x = x_of(r, s->nruns), y = y_of(sm->values[r] * scale_of(sm), top);

		fprintf(f, "<circle cx='%.1f' cy='%.1f' r='%d' fill='%s'><title>run #%lld: %.4g</title>"
			"</circle>\n", x, y, flagged[r] ? 6 : 3,
			flagged[r] ? "#d62728" : colour, s->runs[r].id, sm->values[r] * scale_of(sm));
	}
}

static void legend(FILE *f, const struct hist_series_metric *const *lines, size_t n)
{
	size_t i;

	fputs("<div class='legend'>", f);
	for (i = 0; i < n; i++) {
		fprintf(f, "<span><i style='background:%s'></i>", colours[i]);
		put_html(f, lines[i]->label);
		fputs("</span>", f);
	}
	fputs("</div>\n", f);
}

static int chart(FILE *f, const struct hist_series *s, const struct hist_rule *rule,
		 const char *title, const struct hist_series_metric *const *lines, size_t n)
{
	char *flagged = malloc(s->nruns + 1);
	double top = max_of(s, lines, n);
	size_t i;

	if (!flagged)
		return -1;
	fprintf(f, "<h2>");
	put_html(f, title);
	fprintf(f, "</h2>\n<svg width='%d' height='%d' viewBox='0 0 %d %d' "
		"xmlns='http://www.w3.org/2000/svg' font-family='sans-serif'>\n", PLOT_W, PLOT_H,
		PLOT_W, PLOT_H);
	axes(f, s, top, n && lines[0]->is_share ? "%" : "");
	for (i = 0; i < n; i++)
		one_line(f, s, rule, lines[i], top, colours[i], flagged);
	fputs("</svg>\n", f);
	legend(f, lines, n);
	free(flagged);
	return ferror(f) ? -1 : 0;
}

static double mean_of(const struct hist_series *s, const struct hist_series_metric *sm)
{
	double sum = 0;
	size_t r;

	for (r = 0; r < s->nruns; r++)
		sum += sm->values[r];
	return s->nruns ? sum / s->nruns : 0;
}

/* The metrics of one kind (and field), the largest on average first. */
static size_t pick(const struct hist_series *s, const char *prefix, const char *field,
		   const struct hist_series_metric **out, size_t max)
{
	size_t i, j, n = 0;

	for (i = 0; i < s->nmetrics; i++) {
		const struct hist_series_metric *sm = &s->metrics[i];
		double m = mean_of(s, sm);

		/* without a field: the judged ones (not the machine's preemption) */
		if (strncmp(sm->key, prefix, strlen(prefix)) || (!field && !sm->judged) ||
		    (field && strcmp(strrchr(sm->key, '\x1f') + 1, field)) || m <= 0)
			continue;
		for (j = n; j > 0 && mean_of(s, out[j - 1]) < m; j--)
			if (j < max)
				out[j] = out[j - 1];
		if (j < max)
			out[j] = sm;
		if (n < max)
			n++;
	}
	return n;
}

int hist_plot_html(FILE *f, const struct hist_series *s, const struct hist_rule *rule,
		   const char *series)
{
	const struct hist_series_metric *lines[MAX_LINES];
	size_t n;
	int err = 0;

	fputs("<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>ebpfprof history: ", f);
	put_html(f, series);
	fputs("</title><style>body{font-family:sans-serif;margin:20px;color:#222}"
	      "h2{font-size:15px;margin:18px 0 4px}.legend span{margin-right:14px;font-size:12px;"
	      "white-space:nowrap}.legend i{display:inline-block;width:10px;height:10px;"
	      "margin-right:4px}.note{font-size:12px;color:#555}</style></head><body>\n<h1>", f);
	put_html(f, series);
	fprintf(f, "</h1>\n<p class='note'>%zu runs. A red point: a run flagged by the check's "
		"rule (each of %zu runs above the mean of the %zu before by more than max(%.3g sd, "
		"%.3g%%)).</p>\n", s->nruns, rule->last, rule->window, rule->sigmas, rule->floor);
	n = pick(s, "state\x1f", NULL, lines, MAX_LINES);
	err = err || chart(f, s, rule, "States, ms per second of recording", lines, n);
	n = pick(s, "gc\x1f", NULL, lines, MAX_LINES);
	if (n)
		err = err || chart(f, s, rule, "GC time per generation, ms per second", lines, n);
	n = pick(s, "fn\x1f", "self_share", lines, TOP_FUNCTIONS);
	err = err || chart(f, s, rule, "Top functions, self share of the process's on-CPU time",
			   lines, n);
	n = pick(s, "prefix_state\x1f", NULL, lines, MAX_LINES);
	if (n)
		err = err || chart(f, s, rule, "Task prefixes: each state, seconds per second of the "
				   "prefix's task time", lines, n);
	n = pick(s, "prefix\x1f", "time_s", lines, MAX_LINES);
	if (n)
		err = err || chart(f, s, rule, "Task prefixes: task time (thread-seconds), ms per "
				   "second of recording", lines, n);
	n = pick(s, "holder\x1f", NULL, lines, MAX_LINES);
	if (n)
		err = err || chart(f, s, rule, "GIL waits behind the holder's function, ms per second",
				   lines, n);
	fputs("</body></html>\n", f);
	return err || ferror(f) ? -1 : 0;
}
