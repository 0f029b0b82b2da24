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
#include "states.h"

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

/* What is judged, and in what unit: a process's states, GC time per
 * generation, GIL blame (per second of recording), functions' shares, and
 * each task prefix's states per second of its task time. Per-thread
 * states and the rest are kept, not judged. */
static int judged(const struct hist_metric *m, enum hist_unit *unit)
{
	*unit = HIST_PER_SECOND;
	if (!strcmp(m->kind, "fn")) {
		*unit = HIST_SHARE;
		return !strcmp(m->field, "self_share") || !strcmp(m->field, "total_share");
	}
	if (!strcmp(m->kind, "prefix_state")) {
		*unit = HIST_PER_TASK_SECOND;
		return 1;
	}
	if (!strcmp(m->kind, "state"))
		return !m->thread[0];
	if (!strcmp(m->kind, "gc"))
		return !strcmp(m->field, "total_s");
	return !strcmp(m->kind, "holder");
}

/* A state as a person reads it: "GC", "waiting for GC"; else its name. */
static const char *state_title(const char *name)
{
	int s = state_by_name(name);

	return s >= 0 ? state_spelling(s)->title : name;
}

static void metric_label(char *out, size_t len, const struct hist_metric *m)
{
	const char *proc = m->process[0] ? m->process : "?";

	if (!strcmp(m->kind, "fn"))
		snprintf(out, len, "%s, %s of %s's on-CPU time", m->name,
			 strcmp(m->field, "self_share") ? "total share" : "self share", proc);
	else if (!strcmp(m->kind, "prefix_state"))
		snprintf(out, len, "prefix %s: %s", m->name, state_title(m->field));
	else if (!strcmp(m->kind, "prefix"))
		snprintf(out, len, "prefix %s: task time, s/s", m->name);
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
		       enum hist_unit unit, int is_judged)
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
	sm->unit = unit;
	sm->is_share = unit == HIST_SHARE;
	sm->judged = is_judged;
	sm->per = -1;
	sm->values = calloc(s->nruns + 1, sizeof(double));	/* absent: 0 */
	if (!sm->key || !sm->label || !sm->values) {
		free(sm->key), free(sm->label), free(sm->values);
		return -1;
	}
	hash_index_add(&s->by_key, fnv1a_str(FNV1A_BASIS, key), s->nmetrics);	/* reserved */
	return (long)s->nmetrics++;
}

/* The series metric of key, added if new: its index, -1 out of memory. */
static long metric_of(struct hist_series *s, const struct hist_metric *m, enum hist_unit unit,
		      int is_judged)
{
	char *key;
	long at;

	if (asprintf(&key, "%s\x1f%s\x1f%s\x1f%s", m->kind, m->process, m->name, m->field) < 0)
		return -1;
	at = find_metric(s, key);
	if (at < 0)
		at = add_metric(s, key, m, unit, is_judged);
	free(key);
	return at;
}

/* A state in which a task waits to run behind something not its own: the
 * machine (preemption), another thread holding the GIL or collecting. A
 * loaded machine moves them run to run: preemption took from none to 4.9
 * times a prefix's other time, GIL waits (their holders preempted) from
 * 0.07 to 0.59 of it, between 16 runs of one workload. */
static int contention_state(const char *name)
{
	int st = state_by_name(name);

	return st == STATE_PREEMPTED || st == STATE_GIL_WAIT || st == STATE_GIL_WAIT_GC;
}

/* Not judged at all: the machine's load (the state table's run_noise). */
static int machine_state(const char *name)
{
	int st = state_by_name(name);

	return st >= 0 && state_spelling(st)->run_noise > 0;
}

/* A prefix's state is judged per second of the prefix's own task time:
 * its time less contention (contention_state), which would otherwise move
 * every share with the machine's load; kept beside it in a metric of its
 * own ("own_s", not judged), found or added here. */
static int link_prefix_time(struct hist_series *s, long at, const struct hist_metric *m)
{
	struct hist_metric own = { (char *)"prefix", m->process, (char *)"", m->name,
				   (char *)"own_s", 0 };
	long per;

	if (s->metrics[at].per >= 0)
		return 0;
	per = metric_of(s, &own, HIST_PER_SECOND, 0);
	if (per < 0)
		return -1;
	s->metrics[at].per = per;
	return 0;
}

static int add_run_metrics(struct hist_series *s, const struct hist_run *run, size_t r)
{
	double per_s = run->duration_s > 0 ? run->duration_s : 1;
	size_t i;

	for (i = 0; i < run->nm; i++) {
		const struct hist_metric *m = &run->m[i];
		enum hist_unit unit;
		/* kept, not judged: a prefix's time (drawn), the machine's share */
		int time_of_prefix = !strcmp(m->kind, "prefix") && !strcmp(m->field, "time_s");
		int is_judged = judged(m, &unit) && !time_of_prefix;
		int machine = unit == HIST_PER_TASK_SECOND && machine_state(m->field);
		long at;

		if (!is_judged && !time_of_prefix)
			continue;
		at = metric_of(s, m, unit, is_judged && !machine);
		if (at < 0 || (unit == HIST_PER_TASK_SECOND && link_prefix_time(s, at, m)))
			return -1;
		/* percent: of on-CPU time, of a second per second (a prefix's
		 * states too, until its own time divides them) */
		s->metrics[at].values[r] = 100 * (unit == HIST_SHARE ? m->value : m->value / per_s);
		if (unit == HIST_PER_TASK_SECOND && !contention_state(m->field))
			s->metrics[s->metrics[at].per].values[r] += s->metrics[at].values[r];
	}
	return 0;
}

int hist_series_build(struct hist_series *s, struct hist_run *runs, size_t nruns)
{
	size_t r, i;

	memset(s, 0, sizeof(*s));
	s->runs = runs;
	s->nruns = nruns;
	for (r = 0; r < nruns; r++)
		if (add_run_metrics(s, &runs[r], r))
			return -1;
	/* a prefix's states per second of its own time, a run without the
	 * prefix 0 */
	for (i = 0; i < s->nmetrics; i++) {
		struct hist_series_metric *sm = &s->metrics[i];

		if (sm->unit != HIST_PER_TASK_SECOND)
			continue;
		for (r = 0; r < nruns; r++) {
			double time = s->metrics[sm->per].values[r];

			sm->values[r] = time > 0 ? 100 * sm->values[r] / time : 0;
		}
	}
	return 0;
}

/* The process and name parts of a metric's key: "KIND\x1fPROCESS\x1fNAME\x1f...";
 * with_name: both, else the process alone. */
static int same_part(const char *a, const char *b, int with_name)
{
	const char *pa = strchr(a, '\x1f'), *pb = strchr(b, '\x1f');
	const char *ea = strchr(pa + 1, '\x1f'), *eb = strchr(pb + 1, '\x1f');

	if (with_name) {
		ea = strchr(ea + 1, '\x1f');
		eb = strchr(eb + 1, '\x1f');
	}
	return ea - pa == eb - pb && !memcmp(pa, pb, (size_t)(ea - pa));
}

static int is_field(const struct hist_series_metric *sm, const char *field)
{
	return !strcmp(strrchr(sm->key, '\x1f') + 1, field);
}

/* Whether regressed metric o takes its part from sm's whole: another
 * function's self share in sm's process, another state of sm's prefix. */
static int takes_from(const struct hist_series_metric *o, const struct hist_series_metric *sm)
{
	if (o->verdict != HIST_REGRESSED || o->unit != sm->unit || o == sm)
		return 0;
	if (sm->unit == HIST_SHARE)
		return is_field(o, "self_share") && same_part(o->key, sm->key, 0);
	return same_part(o->key, sm->key, 1);
}

/*
 * Shares add up to the whole: when one function's share of its process's
 * on-CPU time grows, or one state's of its prefix's time, every other's
 * falls, though none of them changed. A share that "improved" is judged
 * again by its share of what the regressed ones of its whole left: if it
 * did not change, that holds.
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
			if (takes_from(&s->metrics[j], sm))
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

		sm->verdict = sm->judged && s->nruns >= need ?
			hist_judge(sm->values + s->nruns - need, rule, &sm->st) : HIST_SAME;
	}
	for (i = 0; left && i < s->nmetrics; i++)
		if (s->metrics[i].verdict == HIST_IMPROVED && s->metrics[i].unit != HIST_PER_SECOND)
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

/* A prefix's state: "prefix churn: GC 0.21 -> 0.52 s per task-second", the
 * mean of the window and of the last runs. */
static void print_per_task(FILE *f, const struct hist_series *s, const struct hist_rule *rule,
			   const struct hist_series_metric *sm, const char *label)
{
	double now = 0;
	size_t i;

	for (i = s->nruns - rule->last; i < s->nruns; i++)
		now += sm->values[i] / 100;
	fprintf(f, "  %s %.2f -> %.2f s per task-second\n    was %.3g (sd %.2g), now", label,
		sm->st.mean / 100, now / rule->last, sm->st.mean / 100, sm->st.sd / 100);
	for (i = s->nruns - rule->last; i < s->nruns; i++)
		fprintf(f, " %.3g", sm->values[i] / 100);
	fprintf(f, " (bar %.2g)\n", sm->st.bar / 100);
}

static void print_metric(FILE *f, const struct hist_series *s, const struct hist_rule *rule,
			 const struct hist_series_metric *sm)
{
	const char *unit = sm->is_share ? "%" : " ms/s";
	double scale = sm->is_share ? 1 : 10;	/* percent of a second: ms per s */
	char shown[4 * 1200];
	size_t i;
	int gone = 1;

	/* function, process and prefix names are the target's */
	printable(sm->label, shown, sizeof(shown));
	if (sm->unit == HIST_PER_TASK_SECOND) {
		print_per_task(f, s, rule, sm, shown);
		return;
	}
	/* gone: what is left is under 5% of what was (a collection at exit) */
	for (i = s->nruns - rule->last; i < s->nruns; i++)
		gone = gone && sm->values[i] < 0.05 * sm->st.mean;
	fprintf(f, "  %s%s\n    was %.3g%s (sd %.2g), now", shown,
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

static int has_prefixes(const struct hist_series *s)
{
	size_t i;

	for (i = 0; i < s->nmetrics; i++)
		if (s->metrics[i].unit == HIST_PER_TASK_SECOND)
			return 1;
	return 0;
}

static size_t judged_count(const struct hist_series *s)
{
	size_t i, n = 0;

	for (i = 0; i < s->nmetrics; i++)
		n += s->metrics[i].judged;
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
		"%.3g sigmas, floor %.3g%% (of on-CPU time for functions, %sof a second per "
		"second for the rest)\n", series, cut->id, s->runs[s->nruns - 1].id, rule->window,
		first->id, (cut - 1)->id, rule->sigmas, rule->floor,
		has_prefixes(s) ? "of a task-second for task prefixes' states, " : "");
	regressed = print_verdicts(f, s, rule, HIST_REGRESSED, "regressed");
	improved = print_verdicts(f, s, rule, HIST_IMPROVED, "improved");
	if (!regressed && !improved)
		fprintf(f, "no change beyond the bar in %zu metrics\n", judged_count(s));
	return regressed;
}
