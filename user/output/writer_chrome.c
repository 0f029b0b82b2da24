// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Chrome's Trace Event Format (the JSON object form), as chrome://tracing,
 * Perfetto and speedscope read it.
 *
 * A sampler sees stacks, not calls: a call is rebuilt as the run of
 * consecutive samples whose stacks share it at the same depth, and becomes
 * one "X" (complete) event from the first sample's start to the last one's
 * end. A gap in the thread's samples ends every call open across it.
 *
 * Garbage collections are timed exactly (probes), not sampled: each one at
 * least --gc-min-ms long is its own "gc" slice on its thread's track, from
 * its real start to its real end, with its generation, the objects it
 * collected and the Python stack that triggered it. The calls rebuilt from
 * samples are cut around it, so slices still nest.
 *
 * With --label (--dask), each run of a thread's samples under one label
 * value (a Dask task's key) is a "task" slice on the thread's track, around
 * that run's calls: the calls are cut where the value changes, so that the
 * same function in two tasks is two calls, each inside its task.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "grow.h"
#include "analysis.h"
#include "json.h"
#include "writer.h"

#include "version.h"

/* The event list being written: a comma goes before all but the first. */
struct trace_out {
	FILE *f;
	size_t nevents;
};

/* One rebuilt call. */
struct call {
	uint64_t start, end;	/* ns since the session start */
	uint32_t frame;
	uint32_t depth;		/* 0 for the root */
};

/* A run of samples under one label value. */
struct task_run {
	uint64_t start, end;
	uint32_t label;		/* the samples' label: a value's id + 1 */
};

struct call_list {
	struct call *calls;
	size_t n, cap;
	struct call *open;	/* the calls in progress, root first */
	size_t nopen, open_cap;
	struct task_run *tasks;
	size_t ntasks, tasks_cap;
	struct task_run task;	/* the run in progress, label 0: none */
};

static int push(struct call **arr, size_t *n, size_t *cap, const struct call *c)
{
	if (GROW_ARRAY(*arr, *cap, *n + 1))
		return -1;
	(*arr)[(*n)++] = *c;
	return 0;
}

/* Ends the open calls at depth `keep` and deeper at time `at`. */
static int close_calls(struct call_list *cl, size_t keep, uint64_t at)
{
	struct call c;

	while (cl->nopen > keep) {
		c = cl->open[--cl->nopen];
		c.end = at;
		if (push(&cl->calls, &cl->n, &cl->cap, &c))
			return -1;
	}
	return 0;
}

static size_t common_depth(const struct call_list *cl, const struct sample *s)
{
	size_t d = 0;

	while (d < cl->nopen && d < s->nframes && cl->open[d].frame == s->frames[d])
		d++;
	return d;
}

/* Continues the calls the sample shares with the open ones; starts the rest. */
static int add_sample(struct call_list *cl, const struct sample *s,
		      uint64_t start)
{
	size_t d = common_depth(cl, s);
	struct call c;

	if (close_calls(cl, d, start))
		return -1;
	for (; d < s->nframes; d++) {
		c.start = start;
		c.end = start;
		c.frame = s->frames[d];
		c.depth = d;
		if (push(&cl->open, &cl->nopen, &cl->open_cap, &c))
			return -1;
	}
	return 0;
}

/* One thread's collections drawn as slices, in time order. */
struct gc_cuts {
	const struct interval **v;
	size_t n, cap, next;
};

static int by_start(const void *x, const void *y)
{
	const struct interval *a = *(const struct interval *const *)x;
	const struct interval *b = *(const struct interval *const *)y;

	return a->start_ns < b->start_ns ? -1 : a->start_ns > b->start_ns;
}

static int collect_gcs(const struct writer_options *o, const struct thread_profile *t,
		       struct gc_cuts *gc)
{
	const struct interval_list *gcs;
	size_t i;

	gc->n = gc->next = 0;
	if (!o || !o->analysis)
		return 0;
	gcs = &o->analysis->gcs;
	for (i = 0; i < gcs->n; i++) {
		const struct interval *g = &gcs->v[i];

		if (g->pid != t->pid || g->tid != t->tid || g->end_ns <= g->start_ns ||
		    g->end_ns - g->start_ns < o->gc_min_ns)
			continue;
		if (GROW_ARRAY(gc->v, gc->cap, gc->n + 1))
			return -1;
		gc->v[gc->n++] = g;
	}
	qsort(gc->v, gc->n, sizeof(*gc->v), by_start);
	return 0;
}

/*
 * Adds the sample's time [start, end) to the calls, except where a
 * collection drawn as a slice covers it: open calls end where it starts and
 * start again after it; *cursor becomes where the sample ends. 0, or -1.
 */
static int add_around_gcs(struct call_list *cl, struct gc_cuts *gc, const struct sample *s,
			  uint64_t start, uint64_t end, uint64_t *cursor)
{
	const struct interval *g;

	while (gc->next < gc->n && gc->v[gc->next]->start_ns < end) {
		g = gc->v[gc->next++];
		if (g->start_ns > start && s->state != STATE_IDLE && add_sample(cl, s, start))
			return -1;
		if (close_calls(cl, 0, g->start_ns > start ? g->start_ns : start))
			return -1;
		if (g->end_ns > start)
			start = g->end_ns;
	}
	*cursor = end > start ? end : start;
	if (end <= start)
		return 0;
	if (s->state == STATE_IDLE)
		return close_calls(cl, 0, start);
	return add_sample(cl, s, start);
}

/* Ends the task run in progress, if any. */
static int end_task(struct call_list *cl)
{
	if (cl->task.label && cl->task.end > cl->task.start) {
		if (GROW_ARRAY(cl->tasks, cl->tasks_cap, cl->ntasks + 1))
			return -1;
		cl->tasks[cl->ntasks++] = cl->task;
	}
	cl->task.label = 0;
	return 0;
}

/*
 * A sample under another label value than the run in progress's, placed
 * from start: the calls and the run end; the new run starts at start, or at
 * the collection this sample will be cut around if it starts earlier (it
 * starts after the previous sample's end: see add_around_gcs), so that the
 * collection's slice is inside the run.
 */
static int change_task(struct call_list *cl, const struct gc_cuts *gc, const struct sample *s,
		       uint64_t start, uint64_t cursor)
{
	uint64_t from = start;

	if (close_calls(cl, 0, start) || end_task(cl))
		return -1;
	if (gc->next < gc->n && gc->v[gc->next]->start_ns < from)
		from = gc->v[gc->next]->start_ns;
	cl->task.label = s->label;
	cl->task.start = from > cursor ? from : cursor;
	cl->task.end = cl->task.start;
	return 0;
}

/*
 * The thread's calls and task runs. A sample overlapping the previous one is
 * pushed past it, whole, so calls nest properly and keep their time.
 */
static int build_calls(const struct profile *p, const struct thread_profile *t,
		       struct call_list *cl, struct gc_cuts *gc, int with_tasks)
{
	uint64_t cursor = 0, start, end;
	struct sample_iter it;
	struct sample s;

	cl->n = 0;
	cl->nopen = 0;
	cl->ntasks = 0;
	cl->task.label = 0;
	sample_iter_init(&it, p, t);
	while (sample_iter_next(&it, &s)) {
		start = s.start_ns > cursor ? s.start_ns : cursor;
		end = sample_placed_end(&s, start, sample_iter_peek(&it));
		if (end <= start)
			continue;
		if (start > cursor && close_calls(cl, 0, cursor))
			return -1;
		if (!with_tasks)
			s.label = 0;
		if (s.label != cl->task.label && change_task(cl, gc, &s, start, cursor))
			return -1;
		if (add_around_gcs(cl, gc, &s, start, end, &cursor))
			return -1;
		cl->task.end = cursor;
	}
	return close_calls(cl, 0, cursor) || end_task(cl) ? -1 : 0;
}

/* Time order, callers before their callees: the order viewers nest by. */
static int call_cmp(const void *a, const void *b)
{
	const struct call *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->depth < y->depth ? -1 : x->depth > y->depth;
}

/* Microseconds, exactly: the format's unit, with nanoseconds as decimals. */
static int put_us(FILE *f, const char *key, uint64_t ns)
{
	return fprintf(f, ",\"%s\":%" PRIu64 ".%03u", key, ns / 1000,
		       (unsigned)(ns % 1000)) < 0 ? -1 : 0;
}

static int event_start(struct trace_out *out)
{
	return fputs(out->nevents++ ? ",\n{" : "\n{", out->f) < 0 ? -1 : 0;
}

static int put_call(struct trace_out *out, const struct profile *p,
		    const struct thread_profile *t, const struct call *c)
{
	const struct frame_info *fr = &p->frames[c->frame];
	FILE *f = out->f;

	if (event_start(out) || fputs("\"ph\":\"X\",\"name\":", f) < 0 ||
	    json_write_string(f, fr->name) ||
	    fprintf(f, ",\"cat\":\"%s\",\"pid\":%d,\"tid\":%d",
		    fr->kind == FRAME_MARKER ? "marker" : "python", t->pid, t->tid) < 0 ||
	    put_us(f, "ts", c->start) || put_us(f, "dur", c->end - c->start))
		return -1;
	if (fr->kind != FRAME_MARKER && fr->file) {
		if (fputs(",\"args\":{\"file\":", f) < 0 || json_write_string(f, fr->file))
			return -1;
		if (fr->line > 0 && fprintf(f, ",\"line\":%d", fr->line) < 0)
			return -1;
		if (fputc('}', f) == EOF)
			return -1;
	}
	return fputc('}', f) == EOF ? -1 : 0;
}

/* "f (file:line)" per frame, innermost first: what triggered a collection. */
static int put_gc_stack(FILE *f, const struct profile *p, const struct interval *g)
{
	const char *sep = "";
	char *text;
	uint32_t i;
	int err = fputs(",\"stack\":[", f) < 0;

	for (i = g->nframes; !err && i-- > 0;) {
		const struct frame_info *fr;

		if (g->frames[i] >= p->nframes)
			continue;
		fr = &p->frames[g->frames[i]];
		if (fr->file ? asprintf(&text, "%s (%s:%d)", fr->name, fr->file, fr->line) < 0
			     : asprintf(&text, "%s", fr->name) < 0)
			return -1;
		err = fputs(sep, f) < 0 || json_write_string(f, text);
		free(text);
		sep = ",";
	}
	return err || fputc(']', f) == EOF ? -1 : 0;
}

static int put_gc(struct trace_out *out, const struct profile *p, const struct interval *g)
{
	FILE *f = out->f;
	char name[32];

	snprintf(name, sizeof(name), "GC gen %d", g->generation);
	if (event_start(out) ||
	    fprintf(f, "\"ph\":\"X\",\"name\":\"%s\",\"cat\":\"gc\",\"pid\":%d,\"tid\":%d",
		    name, g->pid, g->tid) < 0 ||
	    put_us(f, "ts", g->start_ns) || put_us(f, "dur", g->end_ns - g->start_ns) ||
	    fprintf(f, ",\"args\":{\"generation\":%d,\"collected\":%lld", g->generation,
		    (long long)g->collected) < 0 ||
	    put_gc_stack(f, p, g) || fputs("}}", f) < 0)
		return -1;
	return 0;
}

/* "label":"value" for the task's value and the one it derives. */
static int put_task_args(FILE *f, const struct label_table *t, uint32_t id)
{
	int hops, err = fputs(",\"args\":{", f) < 0;

	for (hops = 0; !err && id < t->n && hops < 2; hops++, id = t->v[id].derived)
		err = (hops && fputc(',', f) == EOF) ||
		      json_write_string(f, t->names[t->v[id].label]) || fputc(':', f) == EOF ||
		      json_write_string(f, t->v[id].value);
	return err || fputc('}', f) == EOF ? -1 : 0;
}

static int put_task(struct trace_out *out, const struct label_table *t,
		    const struct thread_profile *th, const struct task_run *run)
{
	uint32_t id = run->label - 1;
	FILE *f = out->f;

	if (id >= t->n)
		return 0;
	if (event_start(out) || fputs("\"ph\":\"X\",\"name\":", f) < 0 ||
	    json_write_string(f, t->v[id].value) ||
	    fprintf(f, ",\"cat\":\"task\",\"pid\":%d,\"tid\":%d", th->pid, th->tid) < 0 ||
	    put_us(f, "ts", run->start) || put_us(f, "dur", run->end - run->start) ||
	    put_task_args(f, t, id))
		return -1;
	return fputc('}', f) == EOF ? -1 : 0;
}

static int put_thread_calls(struct trace_out *out, const struct profile *p,
			    const struct writer_options *o, const struct thread_profile *t,
			    struct call_list *cl, struct gc_cuts *gc)
{
	const struct label_table *labels = o && o->analysis ? &o->analysis->labels : NULL;
	size_t i;

	if (build_calls(p, t, cl, gc, labels && labels->n))
		return -1;
	/* each run before its calls: viewers nest the first of equal slices outside */
	for (i = 0; i < cl->ntasks; i++)
		if (put_task(out, labels, t, &cl->tasks[i]))
			return -1;
	qsort(cl->calls, cl->n, sizeof(*cl->calls), call_cmp);
	for (i = 0; i < cl->n; i++) {
		/* A stack with an id from no interned frame has no name to show. */
		if (cl->calls[i].frame >= p->nframes)
			continue;
		if (put_call(out, p, t, &cl->calls[i]))
			return -1;
	}
	for (i = 0; i < gc->n; i++)
		if (put_gc(out, p, gc->v[i]))
			return -1;
	return 0;
}

/* A metadata event naming the process (tid < 0) or a thread. */
static int put_meta(struct trace_out *out, const char *what, int pid, int tid,
		    const char *name)
{
	FILE *f = out->f;

	if (event_start(out) ||
	    fprintf(f, "\"ph\":\"M\",\"name\":\"%s\",\"pid\":%d", what, pid) < 0)
		return -1;
	if (tid >= 0 && fprintf(f, ",\"tid\":%d", tid) < 0)
		return -1;
	if (fputs(",\"args\":{\"name\":", f) < 0 || json_write_string(f, name))
		return -1;
	return fputs("}}", f) < 0 ? -1 : 0;
}

static int first_of_process(const struct profile *p, size_t i)
{
	size_t j;

	for (j = 0; j < i; j++)
		if (p->threads[j].pid == p->threads[i].pid)
			return 0;
	return 1;
}

static int put_names(struct trace_out *out, const struct thread_profile *t,
		     int first)
{
	char fallback[32];

	if (first) {
		snprintf(fallback, sizeof(fallback), "pid %d", t->pid);
		if (put_meta(out, "process_name", t->pid, -1,
			     t->process ? t->process : fallback))
			return -1;
	}
	snprintf(fallback, sizeof(fallback), "Thread %d", t->tid);
	return put_meta(out, "thread_name", t->pid, t->tid, t->name ? t->name : fallback);
}

/*
 * record --tasks: a process's suspended tasks as a process of their own,
 * "[asyncio tasks] <process> (pid N)" (pid TASKS_PID_BASE + N: no real pid
 * reaches it), one track per task named by its <task NAME> frame, each of
 * its spans (task_spans.h) drawn as the nested calls of its await chain.
 */
#define TASKS_PID_BASE	(1 << 22)	/* PID_MAX_LIMIT */

static int span_cmp(const void *a, const void *b)
{
	const struct task_span *x = *(const struct task_span *const *)a;
	const struct task_span *y = *(const struct task_span *const *)b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->track != y->track)
		return x->track < y->track ? -1 : 1;
	return x->start_ns < y->start_ns ? -1 : x->start_ns > y->start_ns;
}

static int put_span(struct trace_out *out, const struct profile *p, const struct task_span *s)
{
	struct thread_profile track = { .pid = TASKS_PID_BASE + s->pid, .tid = s->track };
	struct call c = { .start = s->start_ns, .end = s->end_ns };
	uint32_t d;

	for (d = 0; d < s->nframes; d++) {
		c.frame = s->frames[d];
		c.depth = d;
		if (c.frame < p->nframes && put_call(out, p, &track, &c))
			return -1;
	}
	return 0;
}

/* Names the span's process and track when it is the first of them. */
static int put_span_names(struct trace_out *out, const struct profile *p,
			  const struct task_span *s, const struct task_span *prev)
{
	int pid = TASKS_PID_BASE + s->pid, err = 0;
	char *title;

	if (!prev || prev->pid != s->pid) {
		title = task_spans_title(&p->tasks, s->pid);
		err = !title || put_meta(out, "process_name", pid, -1, title);
		free(title);
	}
	if (!err && (!prev || prev->pid != s->pid || prev->track != s->track) &&
	    s->task_frame < p->nframes)
		err = put_meta(out, "thread_name", pid, s->track, p->frames[s->task_frame].name);
	return err ? -1 : 0;
}

static int put_tasks(struct trace_out *out, const struct profile *p)
{
	const struct task_span **order = calloc(p->tasks.n + 1, sizeof(*order));
	size_t i;
	int err = !order;

	for (i = 0; !err && i < p->tasks.n; i++)
		order[i] = &p->tasks.v[i];
	if (!err && p->tasks.n)
		qsort(order, p->tasks.n, sizeof(*order), span_cmp);
	for (i = 0; !err && i < p->tasks.n; i++)
		err = put_span_names(out, p, order[i], i ? order[i - 1] : NULL) ||
		      (order[i]->end_ns > order[i]->start_ns && put_span(out, p, order[i]));
	free(order);
	return err ? -1 : 0;
}

static int put_header(FILE *f, const struct profile *p)
{
	if (fputs("{\"displayTimeUnit\":\"ms\",\n\"otherData\":{\"command\":", f) < 0 ||
	    json_write_string(f, p->command ? p->command : "") ||
	    fprintf(f, ",\"exporter\":\"ebpfprof " EP_VERSION "\",\"rate_hz\":%u"
		    ",\"duration_ns\":%" PRIu64 "},\n", p->rate_hz, p->duration_ns) < 0)
		return -1;
	return fputs("\"traceEvents\":[", f) < 0 ? -1 : 0;
}

static int chrome_write(const struct profile *p, const struct writer_options *o,
			FILE *f)
{
	struct trace_out out = { .f = f };
	struct call_list cl = { 0 };
	struct gc_cuts gc = { 0 };
	size_t i;
	int err;

	err = put_header(f, p);
	for (i = 0; !err && i < p->nthreads; i++)
		err = put_names(&out, &p->threads[i], first_of_process(p, i));
	for (i = 0; !err && i < p->nthreads; i++)
		err = collect_gcs(o, &p->threads[i], &gc) ||
		      put_thread_calls(&out, p, o, &p->threads[i], &cl, &gc);
	err = err || put_tasks(&out, p);
	if (!err && fputs("\n]}\n", f) < 0)
		err = -1;
	free(cl.calls);
	free(cl.open);
	free(cl.tasks);
	free(gc.v);
	if (err && !errno)
		errno = EIO;
	return err;
}

const struct output_writer chrome_trace_writer = {
	.name = "chrome",
	.suffix = ".trace.json",
	.binary = 0,
	.write = chrome_write,
};
