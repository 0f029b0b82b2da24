// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * A run's figures from a recording read back: its states per process and
 * thread, GC per generation, each function's self and total time and share
 * of its process's on-CPU time (bounded), and GIL blame by the function its
 * holder ran.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include "grow.h"
#include "history.h"

static char *dup_str(const char *s)
{
	return strdup(s ? s : "");
}

int hist_run_add(struct hist_run *run, const char *kind, const char *process,
		 const char *thread, const char *name, const char *field, double value)
{
	struct hist_metric *m;

	if (GROW_ARRAY(run->m, run->cap, run->nm + 1))
		return -1;
	m = &run->m[run->nm];
	m->kind = dup_str(kind);
	m->process = dup_str(process);
	m->thread = dup_str(thread);
	m->name = dup_str(name);
	m->field = dup_str(field);
	m->value = value;
	if (!m->kind || !m->process || !m->thread || !m->name || !m->field) {
		free(m->kind), free(m->process), free(m->thread), free(m->name), free(m->field);
		return -1;
	}
	run->nm++;
	return 0;
}

void hist_run_free(struct hist_run *run)
{
	size_t i;

	for (i = 0; i < run->nm; i++) {
		free(run->m[i].kind);
		free(run->m[i].process);
		free(run->m[i].thread);
		free(run->m[i].name);
		free(run->m[i].field);
	}
	for (i = 0; i < run->ntags; i++)
		free(run->tags[i]);
	free(run->m);
	free(run->series);
	free(run->kind);
	free(run->host);
	free(run->kernel);
	free(run->python);
	free(run->command);
	free(run->source);
	memset(run, 0, sizeof(*run));
}

const char *hist_tag_take(const char **tags, size_t *ntags, const char *tag)
{
	if (hist_tag_valid(tag))
		return "invalid --tag (KEY=VALUE, KEY of letters, digits, _.-)";
	if (*ntags == HIST_MAX_TAGS)
		return "more than 32 tags";
	tags[(*ntags)++] = tag;
	return NULL;
}

int hist_tag_valid(const char *tag)
{
	const char *eq = strchr(tag, '=');
	const char *c;

	if (!eq || eq == tag || eq - tag > 64 || strlen(eq + 1) > 256)
		return -1;
	for (c = tag; c < eq; c++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-", *c))
			return -1;
	return 0;
}

static int add_states(struct hist_run *run, const struct recording *r)
{
	size_t i, j;
	int s;

	for (i = 0; i < r->nthreads; i++) {
		const struct rec_thread *t = &r->threads[i];

		for (s = 0; s < DIFF_NSTATES; s++) {
			double proc_s = 0;

			if (t->states_s[s] > 0 &&
			    hist_run_add(run, "state", t->process, t->name, sample_state_name(s),
					 "seconds", t->states_s[s]))
				return -1;
			/* the process's line once, at its first thread */
			for (j = 0; j < r->nthreads; j++) {
				if (strcmp(r->threads[j].process, t->process))
					continue;
				if (j < i)
					break;
				proc_s += r->threads[j].states_s[s];
			}
			if (j >= i && proc_s > 0 &&
			    hist_run_add(run, "state", t->process, "", sample_state_name(s),
					 "seconds", proc_s))
				return -1;
		}
	}
	return 0;
}

static int add_gcs(struct hist_run *run, const struct recording *r)
{
	static const char *const fields[] = { "count", "total_s", "p50_s", "p99_s", "max_s" };
	size_t i, f;
	char gen[16];

	for (i = 0; i < r->ngcs; i++) {
		const struct rec_gc *g = &r->gcs[i];
		double v[] = { g->count, g->total_s, g->p50_s, g->p99_s, g->max_s };

		if (g->generation < 0)
			snprintf(gen, sizeof(gen), "gen ?");
		else
			snprintf(gen, sizeof(gen), "gen %d", g->generation);
		for (f = 0; f < sizeof(fields) / sizeof(fields[0]); f++)
			if (hist_run_add(run, "gc", g->process, "", gen, fields[f], v[f]))
				return -1;
	}
	return 0;
}

/* A function: its name and file, and its time in one process. */
struct fn_time {
	const struct frame_info *fr;
	double self_s, total_s;
	size_t seen;		/* the last sample that counted its total */
};

static int by_function(const void *x, const void *y, void *ctx)
{
	const struct profile *p = ctx;
	const struct frame_info *a = &p->frames[*(const uint32_t *)x];
	const struct frame_info *b = &p->frames[*(const uint32_t *)y];
	int c = strcmp(a->name, b->name);

	return c ? c : strcmp(a->file ? a->file : "", b->file ? b->file : "");
}

/* Each frame's function: frames of one name and file (several lines) are
 * one function. Returns the number of functions; fn_of[frame] set. */
static size_t functions_of(const struct profile *p, uint32_t *fn_of, struct fn_time *fns)
{
	uint32_t *order = malloc((p->nframes + 1) * sizeof(*order));
	size_t i, n = 0;

	if (!order)
		return (size_t)-1;
	for (i = 0; i < p->nframes; i++)
		order[i] = (uint32_t)i;
	qsort_r(order, p->nframes, sizeof(*order), by_function, (void *)p);
	for (i = 0; i < p->nframes; i++) {
		if (!i || by_function(&order[i - 1], &order[i], (void *)p))
			fns[n++].fr = &p->frames[order[i]];
		fn_of[order[i]] = (uint32_t)(n - 1);
	}
	free(order);
	return n;
}

/* A sampled thread's process as the states name it: its profile's name
 * says it only with several processes; else found by the thread's name,
 * else the recording's one process. */
static const char *process_of(const struct recording *r, const struct thread_profile *t)
{
	const char *only = r->nthreads ? r->threads[0].process : "";
	size_t i;

	if (t->process && t->process[0])
		return t->process;
	for (i = 0; i < r->nthreads; i++) {
		if (t->name && !strcmp(r->threads[i].name, t->name))
			return r->threads[i].process;
		if (strcmp(r->threads[i].process, only))
			only = "";
	}
	return only;
}

static int on_cpu(const struct sample *s)
{
	return s->state == STATE_ON_CPU || s->state == STATE_GC;
}

/* The on-CPU time of process's threads, per function; returns their sum. */
static double time_functions(const struct recording *r, const char *process,
			     const uint32_t *fn_of, struct fn_time *fns, size_t *serial)
{
	const struct profile *p = &r->prof;
	double sum = 0;
	size_t i;
	uint32_t k;

	for (i = 0; i < p->nthreads; i++) {
		struct sample_iter it;
		struct sample s;

		if (strcmp(process_of(r, &p->threads[i]), process))
			continue;
		for (sample_iter_init(&it, p, &p->threads[i]); sample_iter_next(&it, &s);) {
			double v = s.weight_ns / 1e9;

			if (!on_cpu(&s) || !s.nframes)
				continue;
			(*serial)++;
			sum += v;
			fns[fn_of[s.frames[s.nframes - 1]]].self_s += v;
			for (k = 0; k < s.nframes; k++) {
				struct fn_time *fn = &fns[fn_of[s.frames[k]]];

				if (fn->seen == *serial)
					continue;
				fn->seen = *serial;
				fn->total_s += v;
			}
		}
	}
	return sum;
}

static int by_total_desc(const void *x, const void *y)
{
	const struct fn_time *a = x, *b = y;

	return (a->total_s < b->total_s) - (a->total_s > b->total_s);
}

void hist_function_label(char *out, size_t len, const struct frame_info *fr)
{
	if (fr->file && fr->file[0])
		snprintf(out, len, "%s (%s)", fr->name, fr->file);
	else
		snprintf(out, len, "%s", fr->name);
}

/* The kept functions of one process: the top ones and those over the floor. */
static int keep_functions(struct hist_run *run, const char *process, struct fn_time *fns,
			  size_t n, double sum)
{
	char label[1024];
	size_t i;

	qsort(fns, n, sizeof(*fns), by_total_desc);
	for (i = 0; i < n && fns[i].total_s > 0; i++) {
		double self = fns[i].self_s / sum, total = fns[i].total_s / sum;

		if (i >= HIST_TOP_FUNCTIONS && self < HIST_KEEP_SHARE && total < HIST_KEEP_SHARE)
			continue;
		hist_function_label(label, sizeof(label), fns[i].fr);
		if (hist_run_add(run, "fn", process, "", label, "self_s", fns[i].self_s) ||
		    hist_run_add(run, "fn", process, "", label, "total_s", fns[i].total_s) ||
		    hist_run_add(run, "fn", process, "", label, "self_share", self) ||
		    hist_run_add(run, "fn", process, "", label, "total_share", total))
			return -1;
	}
	return 0;
}

static int add_process_functions(struct hist_run *run, const struct recording *r,
				 const char *process, const uint32_t *fn_of, size_t nfns)
{
	const struct profile *p = &r->prof;
	struct fn_time *fns = calloc(nfns + 1, sizeof(*fns));
	size_t serial = 0, i;
	double sum;
	int err;

	if (!fns)
		return -1;
	/* the function table again: keep_functions sorts it */
	for (i = 0; i < p->nframes; i++)
		fns[fn_of[i]].fr = &p->frames[i];
	sum = time_functions(r, process, fn_of, fns, &serial);
	err = sum > 0 ? keep_functions(run, process, fns, nfns, sum) : 0;
	free(fns);
	return err;
}

static int add_functions(struct hist_run *run, const struct recording *r)
{
	const struct profile *p = &r->prof;
	uint32_t *fn_of = calloc(p->nframes + 1, sizeof(*fn_of));
	struct fn_time *fns = calloc(p->nframes + 1, sizeof(*fns));
	size_t nfns = fn_of && fns ? functions_of(p, fn_of, fns) : (size_t)-1;
	size_t i, j;
	int err = nfns == (size_t)-1;

	free(fns);
	for (i = 0; !err && i < p->nthreads; i++) {
		const char *process = process_of(r, &p->threads[i]);

		for (j = 0; j < i; j++)		/* each process once */
			if (!strcmp(process_of(r, &p->threads[j]), process))
				break;
		if (j == i)
			err = add_process_functions(run, r, process, fn_of, nfns);
	}
	free(fn_of);
	return err ? -1 : 0;
}

/* Others' GIL waits per process and the function their holder ran: the
 * entries from first on, one per holder, summed over its samples. */
static int add_holder_time(struct hist_run *run, size_t first, const char *process,
			   const char *label, double seconds)
{
	size_t i;

	for (i = first; i < run->nm; i++)
		if (!strcmp(run->m[i].process, process) && !strcmp(run->m[i].name, label)) {
			run->m[i].value += seconds;
			return 0;
		}
	return hist_run_add(run, "holder", process, "", label, "seconds", seconds);
}

static int add_holders(struct hist_run *run, const struct recording *r)
{
	const struct profile *h = &r->holders;
	size_t first = run->nm, i;
	char label[1024];

	for (i = 0; i < h->nthreads; i++) {
		const char *process = h->threads[i].process ? h->threads[i].process : "";
		struct sample_iter it;
		struct sample s;

		for (sample_iter_init(&it, h, &h->threads[i]); sample_iter_next(&it, &s);) {
			const struct frame_info *fr = s.nframes ? diff_holder_frame(&r->prof, &s) : NULL;

			if (!fr)
				continue;
			hist_function_label(label, sizeof(label), fr);
			if (add_holder_time(run, first, process, label, s.weight_ns / 1e9))
				return -1;
		}
	}
	return 0;
}

int hist_metrics_from_recording(struct hist_run *run, const struct recording *r)
{
	run->duration_s = r->wall_s;
	return add_states(run, r) || add_gcs(run, r) || add_functions(run, r) ||
	       add_holders(run, r) ? -1 : 0;
}
