// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Coiled's rule, per metric: regressed when each of the last runs is above
 * the mean of the window of runs before them by more than max(sigmas
 * standard deviations, a floor); improved when each is below it by as
 * much. A function is judged by its share of its process's on-CPU time (a
 * shared machine moves seconds by 25-30% between runs, not shares); states,
 * GC and GIL blame by seconds per second of recording. Both are in percent:
 * of the on-CPU time, of a second per second.
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "grow.h"
#include "hash.h"
#include "history.h"
#include "printable.h"

int hist_judge(const double *values, const struct hist_rule *rule, struct hist_stats *st)
{
	const double *last = values + rule->window;
	double sum = 0, sq = 0;
	size_t i, above = 0, below = 0;

	for (i = 0; i < rule->window; i++)
		sum += values[i];
	st->mean = rule->window ? sum / rule->window : 0;
	for (i = 0; i < rule->window; i++)
		sq += (values[i] - st->mean) * (values[i] - st->mean);
	st->sd = rule->window > 1 ? sqrt(sq / (rule->window - 1)) : 0;
	st->bar = fmax(rule->sigmas * st->sd, rule->floor);
	for (i = 0; i < rule->last; i++) {
		above += last[i] > st->mean + st->bar;
		below += last[i] < st->mean - st->bar;
	}
	if (rule->last && above == rule->last)
		return HIST_REGRESSED;
	if (rule->last && below == rule->last)
		return HIST_IMPROVED;
	return HIST_SAME;
}

/* What is judged: a process's states, GC time per generation, GIL blame,
 * and functions' shares. Per-thread states and the rest are kept, not
 * judged. */
static int judged(const struct hist_metric *m, int *is_share)
{
	*is_share = !strcmp(m->kind, "fn");
	if (*is_share)
		return !strcmp(m->field, "self_share") || !strcmp(m->field, "total_share");
	if (!strcmp(m->kind, "state"))
		return !m->thread[0];
	if (!strcmp(m->kind, "gc"))
		return !strcmp(m->field, "total_s");
	return !strcmp(m->kind, "holder");
}

static void metric_label(char *out, size_t len, const struct hist_metric *m)
{
	const char *proc = m->process[0] ? m->process : "?";

	if (!strcmp(m->kind, "fn"))
		snprintf(out, len, "%s, %s of %s's on-CPU time", m->name,
			 strcmp(m->field, "self_share") ? "total share" : "self share", proc);
	else if (!strcmp(m->kind, "state"))
		snprintf(out, len, "%s: %s, s/s", proc, m->name);
	else if (!strcmp(m->kind, "gc"))
		snprintf(out, len, "%s: GC %s time, s/s", proc, m->name);
	else
		snprintf(out, len, "%s: GIL waits behind %s, s/s", proc, m->name);
}

/* A metric by key. A run of deep stacks of distinct functions holds
 * ~200,000 metrics, each looked up once a run: a linear look-up took 106 s
 * for 120,000. */
static long find_metric(const struct hist_series *s, const char *key)
{
	struct hash_probe p;
	size_t e;

	for (e = hash_index_first(&s->by_key, fnv1a_str(FNV1A_BASIS, key), &p);
	     e != HASH_INDEX_NONE; e = hash_index_next(&p))
		if (!strcmp(s->metrics[e].key, key))
			return (long)e;
	return -1;
}

static long add_metric(struct hist_series *s, const char *key, const struct hist_metric *m,
		       int is_share)
{
	struct hist_series_metric *sm;
	char label[1200];

	if (GROW_ARRAY(s->metrics, s->cap, s->nmetrics + 1) ||
	    hash_index_reserve(&s->by_key, s->nmetrics + 1))
		return -1;
	sm = &s->metrics[s->nmetrics];
	memset(sm, 0, sizeof(*sm));
	metric_label(label, sizeof(label), m);
	sm->key = strdup(key);
	sm->label = strdup(label);
	sm->is_share = is_share;
	sm->values = calloc(s->nruns + 1, sizeof(double));	/* absent: 0 */
	if (!sm->key || !sm->label || !sm->values) {
		free(sm->key), free(sm->label), free(sm->values);
		return -1;
	}
	hash_index_add(&s->by_key, fnv1a_str(FNV1A_BASIS, key), s->nmetrics);	/* reserved */
	return (long)s->nmetrics++;
}

int hist_series_build(struct hist_series *s, struct hist_run *runs, size_t nruns)
{
	size_t r, i;

	memset(s, 0, sizeof(*s));
	s->runs = runs;
	s->nruns = nruns;
	for (r = 0; r < nruns; r++) {
		for (i = 0; i < runs[r].nm; i++) {
			const struct hist_metric *m = &runs[r].m[i];
			char *key;
			long at;
			int share;

			if (!judged(m, &share))
				continue;
			if (asprintf(&key, "%s\x1f%s\x1f%s\x1f%s", m->kind, m->process, m->name,
				     m->field) < 0)
				return -1;
			at = find_metric(s, key);
			if (at < 0)
				at = add_metric(s, key, m, share);
			free(key);
			if (at < 0)
				return -1;
			/* percent: of on-CPU time, of a second per second */
			s->metrics[at].values[r] = 100 * (share ? m->value :
				m->value / (runs[r].duration_s > 0 ? runs[r].duration_s : 1));
		}
	}
	return 0;
}

/* The process part of a metric's key: "fn\x1fPROCESS\x1f...". */
static int same_process(const char *a, const char *b)
{
	const char *ea = strchr(strchr(a, '\x1f') + 1, '\x1f');
	const char *eb = strchr(strchr(b, '\x1f') + 1, '\x1f');
	size_t pa = (size_t)(ea - strchr(a, '\x1f')), pb = (size_t)(eb - strchr(b, '\x1f'));

	return pa == pb && !memcmp(strchr(a, '\x1f'), strchr(b, '\x1f'), pa);
}

static int is_fn_share(const struct hist_series_metric *sm, const char *field)
{
	return sm->is_share && !strcmp(strrchr(sm->key, '\x1f') + 1, field);
}

/*
 * Shares add up to the whole: when one function's share grows, every
 * other's falls, though none of them changed. A function that "improved"
 * is judged again by its share of what the regressed functions (their self
 * shares, in the same process) left: if it did not change, that holds.
 */
static void rejudge_improved(struct hist_series *s, const struct hist_rule *rule,
			     struct hist_series_metric *sm, double *left)
{
	size_t need = rule->window + rule->last, r, j;
	double *v = left + (s->nruns - need);
	struct hist_stats st;

	for (r = s->nruns - need; r < s->nruns; r++) {
		double taken = 0;

		for (j = 0; j < s->nmetrics; j++)
			if (s->metrics[j].verdict == HIST_REGRESSED &&
			    is_fn_share(&s->metrics[j], "self_share") &&
			    same_process(s->metrics[j].key, sm->key))
				taken += s->metrics[j].values[r];
		left[r] = taken < 99.9 ? sm->values[r] * 100 / (100 - taken) : sm->values[r];
	}
	/* the report shows the share as measured: only the verdict changes */
	sm->verdict = hist_judge(v, rule, &st);
}

void hist_series_judge(struct hist_series *s, const struct hist_rule *rule)
{
	size_t i, need = rule->window + rule->last;
	double *left = calloc(s->nruns + 1, sizeof(double));

	for (i = 0; i < s->nmetrics; i++) {
		struct hist_series_metric *sm = &s->metrics[i];

		sm->verdict = s->nruns >= need ?
			hist_judge(sm->values + s->nruns - need, rule, &sm->st) : HIST_SAME;
	}
	for (i = 0; left && i < s->nmetrics; i++)
		if (s->metrics[i].verdict == HIST_IMPROVED && s->metrics[i].is_share)
			rejudge_improved(s, rule, &s->metrics[i], left);
	free(left);
}

void hist_series_free(struct hist_series *s)
{
	size_t i;

	for (i = 0; i < s->nmetrics; i++) {
		free(s->metrics[i].key);
		free(s->metrics[i].label);
		free(s->metrics[i].values);
	}
	free(s->metrics);
	hash_index_free(&s->by_key);
	memset(s, 0, sizeof(*s));
}

static void print_metric(FILE *f, const struct hist_series *s, const struct hist_rule *rule,
			 const struct hist_series_metric *sm)
{
	const char *unit = sm->is_share ? "%" : " ms/s";
	double scale = sm->is_share ? 1 : 10;	/* percent of a second: ms per s */
	char shown[4 * 1200];
	size_t i;
	int gone = 1;

	/* gone: what is left is under 5% of what was (a collection at exit) */
	for (i = s->nruns - rule->last; i < s->nruns; i++)
		gone = gone && sm->values[i] < 0.05 * sm->st.mean;
	/* function and process names are the target's */
	fprintf(f, "  %s%s\n    was %.3g%s (sd %.2g), now", printable(sm->label, shown, sizeof(shown)),
		gone && sm->verdict == HIST_IMPROVED ? ": gone" : "", sm->st.mean * scale, unit,
		sm->st.sd * scale);
	for (i = s->nruns - rule->last; i < s->nruns; i++)
		fprintf(f, " %.3g", sm->values[i] * scale);
	fprintf(f, " (bar %.2g%s)\n", sm->st.bar * scale, unit);
}

static int by_label(const void *x, const void *y)
{
	const struct hist_series_metric *a = *(const struct hist_series_metric *const *)x;
	const struct hist_series_metric *b = *(const struct hist_series_metric *const *)y;

	return strcmp(a->label, b->label);
}

static size_t print_verdicts(FILE *f, const struct hist_series *s, const struct hist_rule *rule,
			     int verdict, const char *title)
{
	const struct hist_series_metric **list = calloc(s->nmetrics + 1, sizeof(*list));
	size_t i, n = 0;

	if (!list)
		return 0;
	for (i = 0; i < s->nmetrics; i++)
		if (s->metrics[i].verdict == verdict)
			list[n++] = &s->metrics[i];
	qsort(list, n, sizeof(*list), by_label);
	if (n)
		fprintf(f, "%s (%zu):\n", title, n);
	for (i = 0; i < n; i++)
		print_metric(f, s, rule, list[i]);
	free(list);
	return n;
}

size_t hist_check_report(FILE *f, const struct hist_series *s, const struct hist_rule *rule,
			 const char *series)
{
	size_t need = rule->window + rule->last, regressed, improved;
	const struct hist_run *first, *cut;

	if (s->nruns < need) {
		fprintf(f, "series %s: %zu run%s, the check needs %zu (%zu before the last %zu): "
			"%zu more\n", series, s->nruns, s->nruns == 1 ? "" : "s", need, rule->window,
			rule->last, need - s->nruns);
		return 0;
	}
	first = &s->runs[s->nruns - need];
	cut = &s->runs[s->nruns - rule->last];
	fprintf(f, "series %s: runs #%lld-#%lld against the %zu before (#%lld-#%lld); "
		"%.3g sigmas, floor %.3g%% (of on-CPU time for functions, of a second per "
		"second for the rest)\n", series, cut->id, s->runs[s->nruns - 1].id,
		rule->window, first->id, (cut - 1)->id, rule->sigmas, rule->floor);
	regressed = print_verdicts(f, s, rule, HIST_REGRESSED, "regressed");
	improved = print_verdicts(f, s, rule, HIST_IMPROVED, "improved");
	if (!regressed && !improved)
		fprintf(f, "no change beyond the bar in %zu metrics\n", s->nmetrics);
	return regressed;
}
