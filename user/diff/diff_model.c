// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The comparison: every quantity both sides have (a state's time per process
 * and thread, GC counts and time per generation, each function's self and
 * total time) becomes a line, normalized per second of recording so runs of
 * different lengths compare, with a verdict from a noise model:
 *
 * - each run's amount is treated as Poisson in its equivalent number of
 *   samples (time x rate; a GC total in its number of collections), which
 *   gives its sampling variance;
 * - one run per side cannot show how much runs differ for other reasons
 *   (the machine's load moves preemption and sleep; exact off-CPU timings
 *   have no sampling noise at all), so a run-to-run term is assumed: a
 *   relative standard deviation of run_noise (default 8%) per run, and of
 *   the state table's run_noise for a state the machine's load moves
 *   (preemption: 50%; two copies of one program side by side differ 2x);
 * - with several runs on a side, the spread between them (the variance of
 *   the runs' per-second rates over the number of runs) replaces that
 *   assumption when it is larger than the sampling variance, as a benchmark
 *   A/B comparison does, and the difference is judged by a t statistic with
 *   the runs' degrees of freedom instead of z;
 * - a change also has to matter: at least min_abs seconds per second and
 *   min_rel of the larger side. Machine noise (preemption on a shared host)
 *   is not Poisson; these floors keep it from being reported as a change.
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "diff.h"
#include "hash.h"
#include "hash_index.h"
#include "grow.h"
#include "states.h"

const char *diff_state_title(int state)
{
	return state >= 0 && state < DIFF_NSTATES ? state_table[state].title : "?";
}

const char *verdict_name(int v)
{
	switch (v) {
	case VERDICT_GREW:
		return "grew";
	case VERDICT_SHRANK:
		return "shrank";
	case VERDICT_NOISE:
		return "within noise";
	default:
		return "none";
	}
}

static int eq(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

static struct diff_line *new_line(struct diff *d)
{
	struct diff_line *l;

	if (GROW_ARRAY(d->lines, d->cap, d->nlines + 1))
		return NULL;
	l = &d->lines[d->nlines];
	memset(l, 0, sizeof(*l));
	l->v[0] = calloc(2 * (d->nruns[0] + d->nruns[1]), sizeof(double));
	if (!l->v[0])
		return NULL;
	l->v[1] = l->v[0] + d->nruns[0];
	l->n[0] = l->v[1] + d->nruns[1];
	l->n[1] = l->n[0] + d->nruns[0];
	d->nlines++;
	return l;
}

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

/* ---- every line found by its key (kind, process, thread, state,
 * generation, function, file) in a hash of line indexes: a recording may
 * hold 100k threads, 9 state lines each, and as many functions ---- */

static uint64_t hash_str(uint64_t h, const char *s)
{
	if (!s)
		return fnv1a(h, "\1", 2);	/* NULL is not "" */
	return fnv1a(h, s, strlen(s) + 1);	/* the NUL ends a field */
}

static uint64_t hash_key(const struct diff_line *k)
{
	int kind = k->kind * 64 + k->state * 4 + k->generation + 1;
	uint64_t h = fnv1a(FNV1A_BASIS, &kind, sizeof(kind));

	h = hash_str(h, k->process);
	h = hash_str(h, k->thread);
	h = hash_str(h, k->function);
	return hash_str(h, k->file);
}

static int same_key(const struct diff_line *a, const struct diff_line *b)
{
	return a->kind == b->kind && a->state == b->state && a->generation == b->generation &&
	       eq(a->process, b->process) && eq(a->thread, b->thread) &&
	       eq(a->function, b->function) && eq(a->file, b->file);
}

/* The index of the line with key's key, made (with copies of its names) on
 * first use, with `extra` more lines after it of the kinds that follow
 * (a function's self line is followed by its total line); -1 if out of memory. */
static long keyed_line(struct diff *d, struct hash_index *ix, const struct diff_line *key,
		       int extra)
{
	uint64_t h = hash_key(key);
	struct hash_probe p;
	struct diff_line *l;
	size_t e, first;
	int k;

	for (e = hash_index_first(ix, h, &p); e != HASH_INDEX_NONE; e = hash_index_next(&p))
		if (same_key(&d->lines[e], key))
			return (long)e;
	first = d->nlines;
	for (k = 0; k <= extra; k++) {
		l = new_line(d);
		if (!l)
			return -1;
		l->kind = key->kind + k;
		l->state = key->state;
		l->generation = key->generation;
		l->process = dup_or_null(key->process);
		l->thread = dup_or_null(key->thread);
		l->function = dup_or_null(key->function);
		l->file = dup_or_null(key->file);
		if ((key->process && !l->process) || (key->thread && !l->thread) ||
		    (key->function && !l->function) || (key->file && !l->file))
			return -1;
	}
	if (hash_index_add(ix, h, first))
		return -1;
	return (long)first;
}

static int add(struct diff *d, struct hash_index *ix, const struct diff_line *key,
	       int side, size_t run, double v, double n)
{
	long i = keyed_line(d, ix, key, 0);

	if (i < 0)
		return -1;
	d->lines[i].v[side][run] += v;
	d->lines[i].n[side][run] += n;
	return 0;
}

/* A GC entry: its count line, the total line after it, and on the count
 * line the sums of its pause percentiles (the report shows their mean). */
static int add_gc(struct diff *d, struct hash_index *ix, int side, size_t run,
		  const struct rec_gc *g)
{
	struct diff_line key = { .kind = LINE_GC_COUNT, .process = g->process,
				 .state = STATE_GC, .generation = g->generation };
	long i = keyed_line(d, ix, &key, 1);
	struct diff_line *count, *total;

	if (i < 0)
		return -1;
	count = &d->lines[i];
	total = count + 1;
	count->v[side][run] += g->count;
	count->n[side][run] += g->count;
	total->v[side][run] += g->total_s;
	total->n[side][run] += g->count;
	count->pause_s[side][0] += g->p50_s;
	count->pause_s[side][1] += g->p99_s;
	count->pause_s[side][2] += g->max_s;
	count->npauses[side]++;
	return 0;
}

/* Off-CPU time is measured exactly by the scheduler's probes; GC time when
 * the collector's probes timed it; on-CPU time when the recording says the
 * scheduler measured it. Exact times have no sampling noise, only run-to-run
 * noise; the rest is Poisson in its equivalent samples. */
static int state_is_exact(const struct recording *r, int state)
{
	if (state == STATE_ON_CPU)
		return r->on_cpu_exact;
	if (state == STATE_GC)
		return r->gc_exact;
	return 1;
}

static int add_states(struct diff *d, struct hash_index *ix, int side, size_t run,
		      const struct recording *r)
{
	struct diff_line key = { .kind = LINE_STATE };
	size_t i;

	for (i = 0; i < r->nthreads; i++) {
		const struct rec_thread *t = &r->threads[i];

		key.process = t->process;
		for (key.state = 0; key.state < DIFF_NSTATES; key.state++) {
			double v = t->states_s[key.state];
			double n = state_is_exact(r, key.state) ? 0 : v * r->rate_hz;

			key.thread = t->name;
			if (add(d, ix, &key, side, run, v, n))
				return -1;
			key.thread = NULL;
			if (add(d, ix, &key, side, run, v, n))
				return -1;
		}
	}
	for (i = 0; i < r->ngcs; i++)
		if (add_gc(d, ix, side, run, &r->gcs[i]))
			return -1;
	return 0;
}

/* A label value's time per state: its on-CPU and GC time are sampled
 * (Poisson in their samples), its waits exact. */
static int add_labels(struct diff *d, struct hash_index *ix, int side, size_t run,
		      const struct recording *r)
{
	struct diff_line key = { .kind = LINE_LABEL };
	size_t i;

	for (i = 0; i < r->nlabels; i++) {
		key.process = r->labels[i].label;
		key.thread = r->labels[i].value;
		for (key.state = 0; key.state < DIFF_NSTATES; key.state++) {
			double v = r->labels[i].states_s[key.state];
			int sampled = key.state == STATE_ON_CPU || key.state == STATE_GC;

			if (add(d, ix, &key, side, run, v, sampled ? v * r->rate_hz : 0))
				return -1;
		}
	}
	return 0;
}

/* The index of a frame's function's self line (its total line follows). */
static long fn_line(struct diff *d, struct hash_index *ix, const struct frame_info *fr)
{
	struct diff_line key = { .kind = LINE_SELF, .function = fr->name, .file = fr->file };

	return keyed_line(d, ix, &key, 1);
}

/* Each frame's function line, and per function the last sample that
 * counted it (a recursive function's total counts a sample once). */
struct run_fns {
	long *of_frame;
	size_t *seen;
};

/* The time of a recording's samples, in seconds (at least a nanosecond). */
static double sampled_seconds(const struct profile *p)
{
	double sum = 0;
	size_t i;

	for (i = 0; i < p->nthreads; i++) {
		struct sample_iter it;
		struct sample s;

		for (sample_iter_init(&it, p, &p->threads[i]); sample_iter_next(&it, &s);)
			sum += s.weight_ns / 1e9;
	}
	return sum > 1e-9 ? sum : 1e-9;
}

static int add_functions(struct diff *d, struct hash_index *ix, int side, size_t run,
			 const struct recording *r)
{
	const struct profile *p = &r->prof;
	struct run_fns rf = { calloc(p->nframes + 1, sizeof(long)), NULL };
	size_t i, serial = 0;
	uint32_t k;
	int err = !rf.of_frame;
	double to_share = 1;	/* seconds to what a line holds */

	for (i = 0; !err && i < p->nframes; i++) {
		rf.of_frame[i] = fn_line(d, ix, &p->frames[i]);
		err = rf.of_frame[i] < 0;
	}
	rf.seen = err ? NULL : calloc(d->nlines + 1, sizeof(size_t));
	err = err || !rf.seen;
	if (!err && d->o.share)
		to_share = r->wall_s / sampled_seconds(p);
	for (i = 0; !err && i < p->nthreads; i++) {
		struct sample_iter it;
		struct sample sample, *s = &sample;

		for (sample_iter_init(&it, p, &p->threads[i]); sample_iter_next(&it, s);) {
			double n = s->weight_ns / 1e9 * r->rate_hz, v = s->weight_ns / 1e9 * to_share;
			long self = rf.of_frame[s->frames[s->nframes - 1]];

			serial++;
			d->lines[self].v[side][run] += v;
			d->lines[self].n[side][run] += n;
			for (k = 0; k < s->nframes; k++) {
				long fn = rf.of_frame[s->frames[k]];

				if (rf.seen[fn] == serial)
					continue;
				rf.seen[fn] = serial;
				d->lines[fn + 1].v[side][run] += v;
				d->lines[fn + 1].n[side][run] += n;
			}
		}
	}
	free(rf.of_frame);
	free(rf.seen);
	return err ? -1 : 0;
}

/* The innermost Python frame of a stack, else its innermost frame (a
 * marker: [GIL changed hands], [no samples]). */
const struct frame_info *diff_holder_frame(const struct profile *p, const struct sample *s)
{
	uint32_t i;

	for (i = s->nframes; i > 0; i--)
		if (s->frames[i - 1] < p->nframes && p->frames[s->frames[i - 1]].kind == FRAME_PYTHON)
			return &p->frames[s->frames[i - 1]];
	return s->frames[s->nframes - 1] < p->nframes ? &p->frames[s->frames[s->nframes - 1]] : NULL;
}

/* What made others wait: the [GIL holders] profiles' time (others' GIL
 * waits) per process and the function its holder ran, sampled like a
 * function's time (the waits are spread over the holders' samples). */
static int add_holders(struct diff *d, struct hash_index *ix, int side, size_t run,
		       const struct recording *r)
{
	const struct profile *h = &r->holders;
	struct diff_line key = { .kind = LINE_HOLDER };
	size_t i;

	for (i = 0; i < h->nthreads; i++) {
		struct sample_iter it;
		struct sample s;

		key.process = h->threads[i].process;
		for (sample_iter_init(&it, h, &h->threads[i]); sample_iter_next(&it, &s);) {
			const struct frame_info *fr = s.nframes ? diff_holder_frame(&r->prof, &s) : NULL;
			double v = s.weight_ns / 1e9;

			if (!fr)
				continue;
			key.function = fr->name;
			key.file = fr->file;
			if (add(d, ix, &key, side, run, v, v * r->rate_hz))
				return -1;
		}
	}
	return 0;
}

/* record --tasks: a task stack's line, "<task NAME> [await X]": its own
 * (innermost) task frame and its top; 0, or -1 when it has neither. */
static int task_line_name(const struct profile *p, const struct sample *s, char *out, size_t len)
{
	const char *own = NULL, *top;
	uint32_t i;

	for (i = 0; i < s->nframes; i++)
		if (s->frames[i] < p->nframes && !strncmp(p->frames[s->frames[i]].name, "<task ", 6))
			own = p->frames[s->frames[i]].name;
	if (!own || s->frames[s->nframes - 1] >= p->nframes)
		return -1;
	top = p->frames[s->frames[s->nframes - 1]].name;
	snprintf(out, len, "%s %s", own, top);
	return 0;
}

/* Suspended task-seconds per process, task and what it awaits. A walk a
 * second measures them: their noise is counted as one sample a second. */
static int add_tasks(struct diff *d, struct hash_index *ix, int side, size_t run,
		     const struct recording *r)
{
	const struct profile *tp = &r->tasks;
	struct diff_line key = { .kind = LINE_TASK };
	char name[1024];
	size_t i;

	for (i = 0; i < tp->nthreads; i++) {
		struct sample_iter it;
		struct sample s;

		key.process = tp->threads[i].process;
		for (sample_iter_init(&it, tp, &tp->threads[i]); sample_iter_next(&it, &s);) {
			double v = s.weight_ns / 1e9;

			if (!s.nframes || task_line_name(&r->prof, &s, name, sizeof(name)))
				continue;
			key.function = name;
			if (add(d, ix, &key, side, run, v, v))
				return -1;
		}
	}
	return 0;
}

/*
 * Student's t, for the critical value of a line's statistic: the two-sided
 * tail of |T| > t with df degrees of freedom is I_x(df/2, 1/2) at
 * x = df / (df + t^2), the regularized incomplete beta function, here by its
 * continued fraction (modified Lentz).
 */
static double beta_fraction(double a, double b, double x)
{
	const double tiny = 1e-300;
	double c = 1, d = 1 - (a + b) * x / (a + 1), h, step;
	int m;

	d = 1 / (fabs(d) < tiny ? tiny : d);
	h = d;
	for (m = 1; m <= 300; m++) {
		double even = m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m));
		double odd = -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1));

		d = 1 + even * d;
		c = 1 + even / c;
		d = 1 / (fabs(d) < tiny ? tiny : d);
		c = fabs(c) < tiny ? tiny : c;
		h *= d * c;
		d = 1 + odd * d;
		c = 1 + odd / c;
		d = 1 / (fabs(d) < tiny ? tiny : d);
		c = fabs(c) < tiny ? tiny : c;
		step = d * c;
		h *= step;
		if (fabs(step - 1) < 1e-12)
			break;
	}
	return h;
}

/* I_x(a, b), from the fraction on the side where it converges fast. */
static double incomplete_beta(double a, double b, double x)
{
	double front;

	if (x <= 0)
		return 0;
	if (x >= 1)
		return 1;
	front = exp(lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log1p(-x));
	if (x < (a + 1) / (a + b + 2))
		return front * beta_fraction(a, b, x) / a;
	return 1 - front * beta_fraction(b, a, 1 - x) / b;
}

/* P(|T| > t) for Student's t with df degrees of freedom. */
static double t_two_sided_tail(double t, double df)
{
	return incomplete_beta(df / 2, 0.5, df / (df + t * t));
}

/*
 * The t such that P(|T| > t) is the normal's two-sided tail beyond z sigmas:
 * --sigmas keeps its meaning (3: 0.27% of unchanged lines) however many
 * degrees of freedom the noise estimate has, and the bar falls towards z as
 * they grow. By bisection: the tail falls as t grows.
 */
static double t_critical(double z, double df)
{
	double tail = erfc(z / M_SQRT2), lo = z, hi = z, mid;
	int i;

	if (!(df > 0) || df > 1e6)
		return z;
	while (t_two_sided_tail(hi, df) > tail && hi < 1e6)
		hi *= 2;
	for (i = 0; i < 100 && hi - lo > 1e-9 * hi; i++) {
		mid = (lo + hi) / 2;
		if (t_two_sided_tail(mid, df) > tail)
			lo = mid;
		else
			hi = mid;
	}
	return hi;
}

struct side_stats {
	double rate, var;	/* per second, and the variance of that mean */
	double df;		/* degrees of freedom of var */
};

/* The assumed relative run-to-run standard deviation of a line. */
static double assumed_run_noise(const struct diff *d, const struct diff_line *l)
{
	/* a state the machine's load moves (preemption) has its own, in the table */
	if (l->kind == LINE_STATE && state_table[l->state].run_noise > 0)
		return state_table[l->state].run_noise;
	return d->o.run_noise;
}

/*
 * One side's mean rate and the variance of that mean. A run's rate varies
 * by its sampling noise (Poisson in its equivalent samples; none for exact
 * times) and by run-to-run noise. The variance of one run is estimated by
 * pooling what is assumed with what is measured: the assumption (the
 * sampling variance plus run_noise of the rate) counts as DIFF_PRIOR_DF degrees
 * of freedom, the runs' own spread as k - 1, as a scaled inverse chi-square
 * prior updated by the sample variance would. More runs thus only add
 * evidence: the variance of the mean falls as 1/k unless the runs really do
 * differ more than assumed, and the degrees of freedom only grow.
 */
static struct side_stats side_stats(const struct diff *d, const struct diff_line *l, int side)
{
	struct side_stats st = { 0 };
	size_t k = d->nruns[side], i;
	double sum = 0, sampling = 0, mean = 0, spread = 0, rel = assumed_run_noise(d, l);
	double prior;

	for (i = 0; i < k; i++) {
		double w = d->runs[side][i].wall_s, x = l->v[side][i] / w;

		sum += l->v[side][i];
		mean += x / k;
		if (l->n[side][i] > 0)
			sampling += x * x / l->n[side][i] / k;	/* mean over the runs */
	}
	st.rate = sum / d->wall_s[side];
	for (i = 0; i < k; i++) {
		double r = l->v[side][i] / d->runs[side][i].wall_s - mean;

		spread += k > 1 ? r * r / (k - 1) : 0;
	}
	prior = sampling + rel * rel * st.rate * st.rate;
	st.df = DIFF_PRIOR_DF + (double)k - 1;
	st.var = (DIFF_PRIOR_DF * prior + ((double)k - 1) * spread) / st.df / (double)k;
	return st;
}

/* Welch-Satterthwaite: the degrees of freedom of the difference's variance. */
static double welch_df(const struct side_stats *a, const struct side_stats *b)
{
	double den = a->var * a->var / a->df + b->var * b->var / b->df;

	return den > 0 ? (a->var + b->var) * (a->var + b->var) / den : a->df + b->df;
}

static void judge(const struct diff *d, struct diff_line *l)
{
	struct side_stats a = side_stats(d, l, 0), b = side_stats(d, l, 1);
	double larger = a.rate > b.rate ? a.rate : b.rate, se = sqrt(a.var + b.var);
	int timed = l->kind != LINE_GC_COUNT;

	l->amount[0] = a.rate * d->wall_s[0] / d->nruns[0];
	l->amount[1] = b.rate * d->wall_s[1] / d->nruns[1];
	l->rate[0] = a.rate;
	l->rate[1] = b.rate;
	l->delta = b.rate - a.rate;
	l->rel = a.rate > 0 ? l->delta / a.rate : (b.rate > 0 ? INFINITY : 0);
	l->score = larger > 0 ? fabs(l->delta) / larger : 0;
	l->stat = se > 0 ? l->delta / se : (l->delta ? INFINITY : 0);
	l->df = welch_df(&a, &b);
	l->verdict = VERDICT_NOISE;
	if (larger <= 0)
		l->verdict = VERDICT_SAME;
	else if (l->score >= d->o.min_rel && (!timed || fabs(l->delta) >= d->o.min_abs) &&
		 /* the t bar is never below z: most lines need no quantile */
		 fabs(l->stat) >= d->o.z && fabs(l->stat) >= t_critical(d->o.z, l->df))
		l->verdict = l->delta > 0 ? VERDICT_GREW : VERDICT_SHRANK;
}

double diff_t_critical(double z, double df)
{
	return t_critical(z, df);
}

int diff_build(struct diff *d)
{
	struct hash_index ix = { 0 };
	size_t i;
	int side, err = 0;

	for (side = 0; side < 2; side++) {
		d->wall_s[side] = 0;
		for (i = 0; i < d->nruns[side]; i++)
			d->wall_s[side] += d->runs[side][i].wall_s;
	}
	for (side = 0; !err && side < 2; side++)
		for (i = 0; !err && i < d->nruns[side]; i++)
			err = add_states(d, &ix, side, i, &d->runs[side][i]) ||
			      add_labels(d, &ix, side, i, &d->runs[side][i]);
	for (side = 0; !err && side < 2; side++)
		for (i = 0; !err && i < d->nruns[side]; i++)
			err = add_functions(d, &ix, side, i, &d->runs[side][i]) ||
			      add_holders(d, &ix, side, i, &d->runs[side][i]) ||
			      add_tasks(d, &ix, side, i, &d->runs[side][i]);
	hash_index_free(&ix);
	for (i = 0; !err && i < d->nlines; i++)
		judge(d, &d->lines[i]);
	return err ? -1 : 0;
}

void diff_free(struct diff *d)
{
	size_t i;

	for (i = 0; i < d->nlines; i++) {
		free(d->lines[i].process);
		free(d->lines[i].thread);
		free(d->lines[i].function);
		free(d->lines[i].file);
		free(d->lines[i].v[0]);
	}
	free(d->lines);
	d->lines = NULL;
	d->nlines = d->cap = 0;
}

int diff_is_change(const struct diff_line *l)
{
	return l->verdict == VERDICT_GREW || l->verdict == VERDICT_SHRANK;
}

/* Changes first; among them (states, GC) what appeared or vanished first,
 * then the largest; functions by the size of the change alone. */
static int line_cmp(const void *x, const void *y)
{
	const struct diff_line *a = *(const struct diff_line *const *)x;
	const struct diff_line *b = *(const struct diff_line *const *)y;
	double da = fabs(a->delta), db = fabs(b->delta);

	if (diff_is_change(a) != diff_is_change(b))
		return diff_is_change(a) ? -1 : 1;
	if (a->kind != LINE_SELF && a->kind != LINE_TOTAL && a->kind != LINE_HOLDER &&
	    a->kind != LINE_TASK &&
	    fabs(a->score - b->score) > 1e-9)
		return a->score > b->score ? -1 : 1;
	return da > db ? -1 : da < db;
}

size_t diff_sorted(const struct diff *d, int kind, int processes_only,
		   const struct diff_line ***out)
{
	size_t i, n = 0;

	*out = malloc((d->nlines + 1) * sizeof(**out));
	if (!*out)
		return 0;
	for (i = 0; i < d->nlines; i++) {
		const struct diff_line *l = &d->lines[i];

		if (l->kind != kind || (processes_only && l->thread))
			continue;
		(*out)[n++] = l;
	}
	qsort(*out, n, sizeof(**out), line_cmp);
	return n;
}

/* ---- the one-line summary for the GC question (text, JSON, flame graph) ---- */

/* "+12%", "-100%", "new" (appeared), "0%" */
void diff_fmt_rel(char *out, size_t len, const struct diff_line *l)
{
	if (isinf(l->rel))
		snprintf(out, len, "new");
	else
		snprintf(out, len, "%+.0f%%", 100 * l->rel);
}

double diff_state_amount(const struct diff *d, int state, int side)
{
	double sum = 0;
	size_t i;

	for (i = 0; i < d->nlines; i++)
		if (d->lines[i].kind == LINE_STATE && !d->lines[i].thread &&
		    d->lines[i].state == state)
			sum += d->lines[i].amount[side];
	return sum;
}

static double state_rate(const struct diff *d, int state, int side)
{
	return diff_state_amount(d, state, side) * d->nruns[side] / d->wall_s[side];
}

static void summary_state(char *out, size_t len, const struct diff *d, int state)
{
	const char *title = state_table[state].title;
	double a = diff_state_amount(d, state, 0), b = diff_state_amount(d, state, 1);
	double ra = state_rate(d, state, 0), rb = state_rate(d, state, 1);
	size_t used = strlen(out);

	if (ra > 0)
		snprintf(out + used, len - used, "%s%s: %.2f s -> %.2f s (%+.0f%%)", used ? "; " : "",
			 title, a, b, 100 * (rb - ra) / ra);
	else
		snprintf(out + used, len - used, "%s%s: %.2f s -> %.2f s", used ? "; " : "",
			 title, a, b);
}

/* The thread whose on-CPU time changed most, outside the noise. */
static const struct diff_line *top_on_cpu(const struct diff *d)
{
	const struct diff_line *best = NULL;
	size_t i;

	for (i = 0; i < d->nlines; i++) {
		const struct diff_line *l = &d->lines[i];

		if (l->kind != LINE_STATE || !l->thread || l->state != STATE_ON_CPU || !diff_is_change(l))
			continue;
		if (!best || fabs(l->delta) > fabs(best->delta))
			best = l;
	}
	return best;
}

void diff_summary(const struct diff *d, char *out, size_t len)
{
	const struct diff_line *cpu = top_on_cpu(d);
	char rel[32];
	size_t used;

	out[0] = 0;
	summary_state(out, len, d, STATE_GC);
	summary_state(out, len, d, STATE_GIL_WAIT_GC);
	used = strlen(out);
	if (cpu) {
		diff_fmt_rel(rel, sizeof(rel), cpu);
		snprintf(out + used, len - used, "; %s on-CPU %s", cpu->thread, rel);
	} else {
		snprintf(out + used, len - used, "; on-CPU: no change outside the noise");
	}
}
