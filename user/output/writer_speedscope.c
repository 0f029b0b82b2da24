// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * speedscope's JSON file format (https://www.speedscope.app/file-format-schema.json):
 * one "sampled" profile per thread, weights in nanoseconds.
 *
 * speedscope draws each profile's time-ordered view from 0 to the sum of its
 * weights, placing samples end to end. So that every thread shares the
 * session's time axis, each profile covers [0, duration) exactly: time no
 * sample covers is a sample with an empty stack, which speedscope draws as
 * empty space.
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
#include "label_top.h"
#include "writer.h"

#include "version.h"

#define SCHEMA_URL "https://www.speedscope.app/file-format-schema.json"

/* A stretch of a thread's timeline: a sample's stack, or a gap (no frames).
 * The frames are the profile's, so spans outlive the samples read. */
struct span {
	const uint32_t *frames;
	uint32_t nframes;
	uint64_t weight;
};

struct timeline {
	struct span *spans;
	size_t n, cap;
};

static int same_stack(const struct span *a, const struct sample *b)
{
	if (!a->nframes || !b)
		return !a->nframes && !b;
	return a->nframes == b->nframes &&
	       memcmp(a->frames, b->frames, a->nframes * sizeof(*a->frames)) == 0;
}

/* Appends a span of the stack (NULL: a gap), merged into the last one when
 * the stack is the same. */
static int timeline_add(struct timeline *tl, const struct sample *stack,
			uint64_t weight)
{
	if (!weight)
		return 0;
	if (tl->n && same_stack(&tl->spans[tl->n - 1], stack)) {
		tl->spans[tl->n - 1].weight += weight;
		return 0;
	}
	if (GROW_ARRAY(tl->spans, tl->cap, tl->n + 1))
		return -1;
	tl->spans[tl->n].frames = stack ? stack->frames : NULL;
	tl->spans[tl->n].nframes = stack ? stack->nframes : 0;
	tl->spans[tl->n].weight = weight;
	tl->n++;
	return 0;
}

/* Samples that show nothing the thread did are drawn as gaps. */
static const struct sample *shown_stack(const struct sample *s)
{
	if (s->state == STATE_IDLE || !s->nframes)
		return NULL;
	return s;
}

/*
 * The thread's timeline over [0, axis_end): its samples in start order, each
 * whole, pushed past the previous one where they overlap so that time only
 * moves forward, and the time between them as gaps.
 */
static int build_timeline(const struct profile *p, const struct thread_profile *t,
			  uint64_t axis_end, struct timeline *tl)
{
	uint64_t cursor = 0, start, end;
	struct sample_iter it;
	struct sample s;

	tl->n = 0;
	sample_iter_init(&it, p, t);
	while (sample_iter_next(&it, &s)) {
		start = s.start_ns > cursor ? s.start_ns : cursor;
		end = sample_placed_end(&s, start, sample_iter_peek(&it));
		if (end > axis_end)
			end = axis_end;
		if (end <= start)
			continue;
		if (timeline_add(tl, NULL, start - cursor) ||
		    timeline_add(tl, shown_stack(&s), end - start))
			return -1;
		cursor = end;
	}
	return timeline_add(tl, NULL, axis_end - cursor);
}

/* The time axis: the session's length or, if unknown, the last sample's end. */
static uint64_t axis_end(const struct profile *p)
{
	struct sample_iter it;
	struct sample s;
	uint64_t end = 0;
	size_t i;

	if (p->duration_ns)
		return p->duration_ns;
	for (i = 0; i < p->nthreads; i++) {
		sample_iter_init(&it, p, &p->threads[i]);
		while (sample_iter_next(&it, &s))
			if (sample_end(&s) > end)
				end = sample_end(&s);
	}
	return end;
}

/* py-spy's naming: Thread 4242 "MainThread", after the process if several. */
static char *profile_name(const struct thread_profile *t, int with_process)
{
	const char *process = "";
	char pid[32] = "";
	char *name;
	int n;

	if (with_process) {
		process = t->process ? t->process : "";
		snprintf(pid, sizeof(pid), "%s(pid %d) ", *process ? " " : "", t->pid);
	}
	if (t->name)
		n = asprintf(&name, "%s%sThread %d \"%s\"", process, pid, t->tid, t->name);
	else
		n = asprintf(&name, "%s%sThread %d", process, pid, t->tid);
	return n < 0 ? NULL : name;
}

static int write_frame(FILE *f, const struct frame_info *fr)
{
	if (fputs("{\"name\":", f) < 0 || json_write_string(f, fr->name))
		return -1;
	/* Markers are not code: a file or line would send a reader looking for it. */
	if (fr->kind != FRAME_MARKER && fr->file) {
		if (fputs(",\"file\":", f) < 0 || json_write_string(f, fr->file))
			return -1;
		if (fr->line > 0 && fprintf(f, ",\"line\":%d", fr->line) < 0)
			return -1;
	}
	return fputc('}', f) == EOF ? -1 : 0;
}

static int write_frames(const struct profile *p, FILE *f)
{
	size_t i;

	if (fputs("\"shared\":{\"frames\":[", f) < 0)
		return -1;
	for (i = 0; i < p->nframes; i++) {
		if (i && fputc(',', f) == EOF)
			return -1;
		if (fputc('\n', f) == EOF || write_frame(f, &p->frames[i]))
			return -1;
	}
	return fputs("]},\n", f) < 0 ? -1 : 0;
}

static int write_stack(FILE *f, const struct span *s, uint32_t nframes)
{
	const char *sep = "";
	uint32_t i;

	if (fputc('[', f) == EOF)
		return -1;
	for (i = 0; i < s->nframes; i++) {
		/* An id no frame was interned for would make speedscope reject the file. */
		if (s->frames[i] >= nframes)
			continue;
		if (fprintf(f, "%s%" PRIu32, sep, s->frames[i]) < 0)
			return -1;
		sep = ",";
	}
	return fputc(']', f) == EOF ? -1 : 0;
}

static int write_spans(FILE *f, const struct timeline *tl, uint32_t nframes)
{
	size_t i;

	if (fputs(",\"samples\":[", f) < 0)
		return -1;
	for (i = 0; i < tl->n; i++) {
		if (i && fputc(',', f) == EOF)
			return -1;
		if (write_stack(f, &tl->spans[i], nframes))
			return -1;
	}
	if (fputs("],\"weights\":[", f) < 0)
		return -1;
	for (i = 0; i < tl->n; i++)
		if (fprintf(f, i ? ",%" PRIu64 : "%" PRIu64, tl->spans[i].weight) < 0)
			return -1;
	return fputs("]}", f) < 0 ? -1 : 0;
}

static int write_thread(FILE *f, const struct profile *p,
			const struct thread_profile *t, int with_process,
			uint64_t end, struct timeline *tl)
{
	char *name = profile_name(t, with_process);
	int err;

	if (!name || build_timeline(p, t, end, tl)) {
		free(name);
		return -1;
	}
	err = fputs("{\"type\":\"sampled\",\"name\":", f) < 0 ||
	      json_write_string(f, name) ||
	      fprintf(f, ",\"unit\":\"nanoseconds\",\"startValue\":0,"
		      "\"endValue\":%" PRIu64, end) < 0 ||
	      write_spans(f, tl, p->nframes);
	free(name);
	return err ? -1 : 0;
}

/* Whether pid is among done[0..n) (a few processes), else adds it. */
static int holders_written(int pid, int **done, size_t *n, size_t *cap)
{
	size_t j;

	for (j = 0; j < *n; j++)
		if ((*done)[j] == pid)
			return 1;
	if (GROW_ARRAY(*done, *cap, *n + 1))
		return -1;
	(*done)[(*n)++] = pid;
	return 0;
}

/* "[GIL holders] <process> (pid N)": what the GIL holders ran, each stack
 * weighted by the time other threads waited for the GIL while it ran. */
static int write_holders(FILE *f, const struct profile *p, const struct gil_blame *b, int pid)
{
	const char *process = NULL;
	double total = 0;
	size_t i, n = 0;
	char *name;
	int err;

	for (i = 0; i < b->nstacks; i++) {
		if (b->stacks[i].pid != pid)
			continue;
		total += (uint64_t)(b->stacks[i].ns + 0.5);
		if (!process)
			process = profile_thread_process(p, pid, b->stacks[i].waiter);
	}
	if (asprintf(&name, "[GIL holders] %s (pid %d)", process ? process : "python", pid) < 0)
		return -1;
	err = fputs(",\n{\"type\":\"sampled\",\"name\":", f) < 0 || json_write_string(f, name) ||
	      fprintf(f, ",\"unit\":\"nanoseconds\",\"startValue\":0,"
		      "\"endValue\":%.0f,\"samples\":[", total) < 0;
	free(name);
	for (i = 0; !err && i < b->nstacks; i++) {
		struct span sp = { .frames = b->stacks[i].frames, .nframes = b->stacks[i].nframes };

		if (b->stacks[i].pid != pid)
			continue;
		err = (n++ && fputc(',', f) == EOF) || write_stack(f, &sp, p->nframes);
	}
	err = err || fputs("],\"weights\":[", f) < 0;
	for (i = 0, n = 0; !err && i < b->nstacks; i++)
		if (b->stacks[i].pid == pid)
			err = fprintf(f, n++ ? ",%" PRIu64 : "%" PRIu64,
				      (uint64_t)(b->stacks[i].ns + 0.5)) < 0;
	return err || fputs("]}", f) < 0 ? -1 : 0;
}

static int write_holder_profiles(FILE *f, const struct profile *p, const struct analysis *a)
{
	size_t i, n = 0, cap = 0;
	int *done = NULL, seen, err = 0;

	for (i = 0; a && !err && i < a->blame.nstacks; i++) {
		seen = holders_written(a->blame.stacks[i].pid, &done, &n, &cap);
		err = seen < 0 || (!seen && write_holders(f, p, &a->blame, a->blame.stacks[i].pid));
	}
	free(done);
	return err ? -1 : 0;
}

/* record --tasks: "[asyncio tasks] <process> (pid N)", each suspended
 * task's await chain weighted by the time it stayed there (task_spans.h),
 * end to end: its total is in task-seconds, not on the time axis. */
static int write_task_profile(int pid, void *arg)
{
	const struct task_out *out = arg;
	struct task_profile tp;
	FILE *f = out->f;
	size_t i;
	int err = task_profile_of(&out->p->tasks, pid, &tp);

	if (!err && tp.n)
		err = fputs(",\n{\"type\":\"sampled\",\"name\":", f) < 0 ||
		      json_write_string(f, tp.title) ||
		      fprintf(f, ",\"unit\":\"nanoseconds\",\"startValue\":0,"
			      "\"endValue\":%" PRIu64 ",\"samples\":[", tp.total_ns) < 0;
	for (i = 0; !err && i < tp.n; i++) {
		struct span sp = { .frames = tp.stacks[i].frames, .nframes = tp.stacks[i].nframes };

		err = (i && fputc(',', f) == EOF) || write_stack(f, &sp, out->p->nframes);
	}
	err = err || (tp.n && fputs("],\"weights\":[", f) < 0);
	for (i = 0; !err && i < tp.n; i++)
		err = fprintf(f, i ? ",%" PRIu64 : "%" PRIu64, tp.stacks[i].ns) < 0;
	err = err || (tp.n && fputs("]}", f) < 0);
	task_profile_free(&tp);
	return err ? -1 : 0;
}

static int write_task_profiles(FILE *f, const struct profile *p)
{
	struct task_out out = { f, p };

	return task_spans_each_pid(&p->tasks, write_task_profile, &out);
}

/*
 * A recording without a sample (the target never ran Python on a CPU while
 * recorded, e.g. it slept throughout) still opens in speedscope, which
 * refuses a file without profiles: one profile, one gap over the session,
 * named for what happened.
 */
static int write_no_samples(FILE *f, uint64_t end)
{
	end = end ? end : 1;
	return fprintf(f, "\n{\"type\":\"sampled\",\"name\":\"no samples: the target ran no "
		       "Python on a CPU while recorded\",\"unit\":\"nanoseconds\","
		       "\"startValue\":0,\"endValue\":%" PRIu64 ",\"samples\":[[]],"
		       "\"weights\":[%" PRIu64 "]}", end, end) < 0 ? -1 : 0;
}

/*
 * --group-by NAME: a profile per value of the label, "NAME=value", of the
 * samples of every thread under it, end to end (no time axis: the threads'
 * times are summed). Samples under no value are left out.
 */
static int group_samples(const struct profile *p, const struct label_table *t, int label,
			 struct timeline *tls)
{
	struct sample_iter it;
	struct sample s;
	uint32_t v;
	size_t i;

	for (i = 0; i < p->nthreads; i++) {
		sample_iter_init(&it, p, &p->threads[i]);
		while (sample_iter_next(&it, &s)) {
			v = label_value_under(t, s.label, label);
			if (v != LABEL_NONE && shown_stack(&s) &&
			    timeline_add(&tls[v], &s, s.weight_ns))
				return -1;
		}
	}
	return 0;
}

static int write_group(FILE *f, const struct profile *p, const struct label_table *t,
		       uint32_t v, const struct timeline *tl, int *first)
{
	uint64_t total = 0;
	char *name;
	size_t i;
	int err;

	for (i = 0; i < tl->n; i++)
		total += tl->spans[i].weight;
	if (asprintf(&name, "%s=%s", t->names[t->v[v].label], t->v[v].value) < 0)
		return -1;
	err = (!*first && fputc(',', f) == EOF) || fputs("\n{\"type\":\"sampled\",\"name\":", f) < 0 ||
	      json_write_string(f, name) ||
	      fprintf(f, ",\"unit\":\"nanoseconds\",\"startValue\":0,\"endValue\":%" PRIu64,
		      total) < 0 || write_spans(f, tl, p->nframes);
	free(name);
	*first = 0;
	return err ? -1 : 0;
}

static int write_groups(const struct profile *p, const struct analysis *a, const char *by,
			FILE *f, int *first)
{
	const struct label_table *t = &a->labels;
	int label = label_table_find(t, by), err;
	struct timeline *tls = calloc(t->n ? t->n : 1, sizeof(*tls));
	size_t v;

	if (!tls || label < 0) {
		free(tls);
		return tls ? 0 : -1;	/* no such label: no profiles */
	}
	err = group_samples(p, t, label, tls);
	for (v = 0; !err && v < t->n; v++)
		if (tls[v].n)
			err = write_group(f, p, t, v, &tls[v], first);
	for (v = 0; v < t->n; v++)
		free(tls[v].spans);
	free(tls);
	return err;
}

static int write_thread_profiles(const struct profile *p, const struct analysis *a, FILE *f)
{
	const struct thread_profile **order;
	struct timeline tl = { 0 };
	int with_process = profile_many_processes(p), err = 0;
	uint64_t end = axis_end(p);
	size_t i;

	/* profiles in a stable order */
	order = profile_sorted_threads(p);
	if (!order)
		return -1;
	if (fputs("\"profiles\":[", f) < 0)
		err = -1;
	for (i = 0; !err && i < p->nthreads; i++) {
		if ((i && fputc(',', f) == EOF) || fputc('\n', f) == EOF ||
		    write_thread(f, p, order[i], with_process, end, &tl))
			err = -1;
	}
	if (!err && !p->nthreads && write_no_samples(f, end))
		err = -1;
	if (!err && (write_holder_profiles(f, p, a) || write_task_profiles(f, p) ||
		     fputs("]", f) < 0))
		err = -1;
	free(tl.spans);
	free(order);
	return err;
}

static int write_profiles(const struct profile *p, const struct writer_options *o, FILE *f)
{
	const struct analysis *a = o ? o->analysis : NULL;
	int first = 1;

	if (!o || !o->group_by || !a)
		return write_thread_profiles(p, a, f);
	if (fputs("\"profiles\":[", f) < 0 || write_groups(p, a, o->group_by, f, &first))
		return -1;
	if (first && write_no_samples(f, axis_end(p)))
		return -1;
	return write_holder_profiles(f, p, a) || write_task_profiles(f, p) ||
	       fputs("]", f) < 0 ? -1 : 0;
}

/*
 * The "ebpfprof" object: what the samples cannot say and `ebpfprof diff`
 * needs, i.e. the recording's facts, each thread's exact time per state and
 * the GC pauses' statistics per process and generation. speedscope ignores
 * top-level properties it does not know.
 */
/* The states' names, for a reader to know them without a list of its own. */
static int write_state_names(FILE *f)
{
	int s, err = fputs(",\"states\":[", f) < 0;

	for (s = 0; !err && s < STATE_RECORDED; s++)
		err = fprintf(f, "%s\"%s\"", s ? "," : "", sample_state_name(s)) < 0;
	return err || fputs("]", f) < 0 ? -1 : 0;
}

static int write_info(FILE *f, const struct profile *p, const struct recording_info *in)
{
	if (fprintf(f, "\"version\":%d", RECORDING_FORMAT_VERSION) < 0 || write_state_names(f) ||
	    fprintf(f, ",\"duration_s\":%.9f,\"rate_hz\":%u", p->duration_ns / 1e9,
		    p->rate_hz) < 0)
		return -1;
	if (p->start_realtime_ns &&
	    fprintf(f, ",\"start_unix_s\":%.6f", p->start_realtime_ns / 1e9) < 0)
		return -1;
	if (!in)
		return 0;
	if (fprintf(f, ",\"samples\":%lu,\"lost\":%llu,\"python\":\"%d.%d\",\"idle\":%s,"
		    "\"gil\":%s,\"gc_timing\":", in->samples, in->lost, in->python_major,
		    in->python_minor, in->idle ? "true" : "false",
		    in->gil_only ? "true" : "false") < 0 ||
	    json_write_string(f, in->gc_timing ? in->gc_timing : "") ||
	    fputs(",\"stop_reason\":", f) < 0 ||
	    json_write_string(f, in->stop_reason ? in->stop_reason : ""))
		return -1;
	return 0;
}

/* A thread's GIL waits (gc: its waiting-for-GC) by holder tid, and the
 * part not attributed to any. */
static int write_blame(FILE *f, const struct analysis *a, int pid, int tid, int gc)
{
	struct blame_share *v;
	size_t i, n = gil_blame_of(&a->blame, NULL, pid, tid, gc, &v), k = 0;
	uint64_t unattributed = 0;
	int err = fprintf(f, ",\"%s_by_holder\":{", gc ? "gc_wait" : "gil_wait") < 0;

	for (i = 0; !err && i < n; i++) {
		if (v[i].holder <= 0)
			unattributed += v[i].ns;
		else
			err = fprintf(f, "%s\"%d\":%.9f", k++ ? "," : "", v[i].holder,
				      v[i].ns / 1e9) < 0;
	}
	free(v);
	return err || fprintf(f, "},\"%s_unattributed_s\":%.9f", gc ? "gc_wait" : "gil_wait",
			      unattributed / 1e9) < 0 ? -1 : 0;
}

static int write_thread_states(FILE *f, const struct profile *p, const struct analysis *a)
{
	struct thread_states *ts;
	const char *name, *process;
	size_t i, n = analysis_thread_states(a, p, &ts);
	int s, err = fputs(",\n\"threads\":[", f) < 0;

	for (i = 0; !err && i < n; i++) {
		/* sampled or not: threads with only off-CPU time have a label */
		name = profile_thread_name(p, ts[i].pid, ts[i].tid);
		process = profile_thread_process(p, ts[i].pid, ts[i].tid);
		err = fprintf(f, "%s\n{\"pid\":%d,\"tid\":%d,\"name\":", i ? "," : "",
			      ts[i].pid, ts[i].tid) < 0 ||
		      json_write_string(f, name ? name : "") ||
		      fputs(",\"process\":", f) < 0 ||
		      json_write_string(f, process ? process : "") ||
		      fprintf(f, ",\"observed_s\":%.9f,\"states_s\":{", ts[i].observed_ns / 1e9) < 0;
		for (s = 0; !err && s < STATE_RECORDED; s++)
			err = fprintf(f, "%s\"%s\":%.9f", s ? "," : "", sample_state_name(s),
				      ts[i].ns[s] / 1e9) < 0;
		err = err || fputs("}", f) < 0 || write_blame(f, a, ts[i].pid, ts[i].tid, 0) ||
		      write_blame(f, a, ts[i].pid, ts[i].tid, 1) || fputs("}", f) < 0;
	}
	free(ts);
	return err || fputs("]", f) < 0 ? -1 : 0;
}

static int cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

	return a < b ? -1 : a > b;
}

/* The q-th quantile of sorted v (nearest rank). */
static uint64_t quantile(const uint64_t *v, size_t n, double q)
{
	size_t rank = (size_t)(q * n + 0.999999);

	return v[rank ? rank - 1 : 0];
}

/* One line of GC statistics: the pauses of process pid and generation gen. */
static int write_gc_group(FILE *f, const struct interval_list *gcs, int pid, int gen,
			  uint64_t *scratch, int *first)
{
	uint64_t total = 0;
	size_t i, n = 0;

	for (i = 0; i < gcs->n; i++)
		if (gcs->v[i].pid == pid && gcs->v[i].generation == gen)
			scratch[n++] = gcs->v[i].end_ns - gcs->v[i].start_ns;
	if (!n)
		return 0;
	qsort(scratch, n, sizeof(*scratch), cmp_u64);
	for (i = 0; i < n; i++)
		total += scratch[i];
	if (fprintf(f, "%s\n{\"pid\":%d,\"generation\":%d,\"count\":%zu,\"total_s\":%.9f,"
		    "\"p50_s\":%.9f,\"p99_s\":%.9f,\"max_s\":%.9f}", *first ? "" : ",", pid, gen,
		    n, total / 1e9, quantile(scratch, n, 0.5) / 1e9,
		    quantile(scratch, n, 0.99) / 1e9, scratch[n - 1] / 1e9) < 0)
		return -1;
	*first = 0;
	return 0;
}

static int seen_before(const struct interval_list *gcs, size_t i)
{
	size_t j;

	for (j = 0; j < i; j++)
		if (gcs->v[j].pid == gcs->v[i].pid && gcs->v[j].generation == gcs->v[i].generation)
			return 1;
	return 0;
}

static int write_gc_stats(FILE *f, const struct analysis *a)
{
	const struct interval_list *gcs = &a->gcs;
	uint64_t *scratch = malloc((gcs->n ? gcs->n : 1) * sizeof(*scratch));
	int first = 1, err = !scratch || fputs(",\n\"gc\":[", f) < 0;
	size_t i;

	/* groups in order of first appearance; few of them (processes x 3) */
	for (i = 0; !err && i < gcs->n; i++)
		if (!seen_before(gcs, i))
			err = write_gc_group(f, gcs, gcs->v[i].pid, gcs->v[i].generation,
					     scratch, &first);
	free(scratch);
	return err || fputs("]", f) < 0 ? -1 : 0;
}

/* 1 if the scheduler's probes timed the threads' runs (the kernel's totals
 * hold on-CPU time): the states' on-CPU time is then exact, not sampled,
 * and diff gives it no sampling noise. */
static int on_cpu_exact(const struct analysis *a)
{
	for (size_t i = 0; i < a->ntotals; i++)
		if (a->totals[i].ns[STATE_ON_CPU])
			return 1;
	return 0;
}

/* Per value, how many values with time derive it (the task keys of a
 * dask_prefix): a calloc'ed array of t->n, NULL when out of memory. */
static uint32_t *count_sources(const struct label_table *t)
{
	uint32_t *n = calloc(t->n + 1, sizeof(*n));
	size_t i;

	for (i = 0; n && i < t->n; i++)
		if (t->v[i].derived < t->n && (label_value_total(&t->v[i]) || t->v[i].gc_count))
			n[t->v[i].derived]++;
	return n;
}

/* "series":{STATE:[seconds per bin],...}: the states with time only. */
static int write_series(FILE *f, const struct label_value *v, uint32_t nbins)
{
	uint64_t sum;
	uint32_t b;
	int s, k = 0, err = fputs(",\"series\":{", f) < 0;

	for (s = 0; !err && s < STATE_RECORDED; s++) {
		for (b = 0, sum = 0; b < nbins; b++)
			sum += label_series_at(v->series, b, s);
		if (!sum)
			continue;
		err = fprintf(f, "%s\"%s\":[", k++ ? "," : "", sample_state_name(s)) < 0;
		for (b = 0; !err && b < nbins; b++)
			err = fprintf(f, "%s%.6f", b ? "," : "",
				      label_series_at(v->series, b, s) / 1e9) < 0;
		err = err || fputc(']', f) == EOF;
	}
	return err || fputc('}', f) == EOF ? -1 : 0;
}

#define LABEL_TOP_FUNCTIONS	10

/* "functions":[{"name","file","self_s","total_s"}]: the most self time first. */
static int write_functions(FILE *f, const struct profile *p, const struct label_top *lt,
			   uint32_t id)
{
	const struct label_fn *top[LABEL_TOP_FUNCTIONS];
	const struct frame_info *fr;
	size_t i, n = label_top_of(lt, id, top, LABEL_TOP_FUNCTIONS);
	int err = fputs(",\"functions\":[", f) < 0;

	for (i = 0; !err && i < n; i++) {
		fr = &p->frames[top[i]->frame];
		err = fputs(i ? ",{\"name\":" : "{\"name\":", f) < 0 ||
		      json_write_string(f, fr->name ? fr->name : "") ||
		      fputs(",\"file\":", f) < 0 || json_write_string(f, fr->file ? fr->file : "") ||
		      fprintf(f, ",\"self_s\":%.9f,\"total_s\":%.9f}", top[i]->self_ns / 1e9,
			      top[i]->total_ns / 1e9) < 0;
	}
	return err || fputc(']', f) == EOF ? -1 : 0;
}

/* What a label's series and functions are written with. */
struct label_extras {
	const struct profile *p;
	const struct label_top *top;	/* NULL: out of memory, no functions */
	const uint32_t *sources;	/* count_sources(), NULL: out of memory */
	uint32_t nbins;
};

/* A value's figures beyond its totals: its series and functions, and the
 * count of values deriving it. */
static int write_value_extras(FILE *f, const struct label_table *t, uint32_t id,
			      const struct label_extras *x)
{
	const struct label_value *v = &t->v[id];
	int label_derived = 0, i;

	for (i = 0; i < t->nnames; i++)
		label_derived |= t->derive_to[i] == v->label;
	if (label_derived && x->sources && fprintf(f, ",\"sources\":%u", x->sources[id]) < 0)
		return -1;
	if (!v->series)
		return 0;
	if (write_series(f, v, x->nbins))
		return -1;
	return x->top ? write_functions(f, x->p, x->top, id) : 0;
}

/* --label: "labels":{NAME:{VALUE:{"states_s":{...},"samples":N,"gc_count":N,"gc_s":S,
 * and with a series "series" and "functions"}}}, the values with time in this
 * recording only. */
static int write_label_values(FILE *f, const struct label_table *t, int label,
			      const struct label_extras *x)
{
	const struct label_value *v;
	size_t i, k = 0;
	int s, err = 0;

	for (i = 0; !err && i < t->n; i++) {
		v = &t->v[i];
		if (v->label != label || (!label_value_total(v) && !v->gc_count))
			continue;
		err = fputs(k++ ? ",\n" : "\n", f) < 0 || json_write_string(f, v->value) ||
		      fputs(":{\"states_s\":{", f) < 0;
		for (s = 0; !err && s < STATE_RECORDED; s++)
			err = fprintf(f, "%s\"%s\":%.9f", s ? "," : "", sample_state_name(s),
				      v->ns[s] / 1e9) < 0;
		err = err || fprintf(f, "},\"samples\":%llu,\"gc_count\":%llu,\"gc_s\":%.9f",
				     (unsigned long long)v->samples,
				     (unsigned long long)v->gc_count, v->gc_ns / 1e9) < 0 ||
		      write_value_extras(f, t, i, x) || fputc('}', f) == EOF;
	}
	return err ? -1 : 0;
}

/* "state_groups": how the Dask report sums the states into its columns
 * (include/ep_states.h), so that the package keeps no list of its own. */
static int write_state_groups(FILE *f)
{
	int g, s, k, err = fputs(",\n\"state_groups\":[", f) < 0;

	for (g = 0; !err && g < STATE_GROUP_MAX; g++) {
		err = fprintf(f, "%s{\"key\":\"%s\",\"title\":\"%s\",\"on_cpu\":%s,\"states\":[",
			      g ? "," : "", state_groups[g].key, state_groups[g].title,
			      state_groups[g].on_cpu ? "true" : "false") < 0;
		for (s = 0, k = 0; !err && s < STATE_RECORDED; s++)
			if (state_table[s].group == g)
				err = fprintf(f, "%s\"%s\"", k++ ? "," : "", sample_state_name(s)) < 0;
		err = err || fputs("]}", f) < 0;
	}
	return err || fputs("]", f) < 0 ? -1 : 0;
}

static int write_labels(FILE *f, const struct profile *p, const struct label_table *t)
{
	struct label_top top;
	struct label_extras x = { .p = p, .top = &top,
				  .nbins = label_clock_bins(&t->clock, p->duration_ns) };
	uint32_t *sources;
	int i, err;

	if (!t->nnames)
		return 0;
	if (label_top_build(&top, p, t))
		x.top = NULL;	/* the rest is still worth writing */
	sources = count_sources(t);
	x.sources = sources;
	err = write_state_groups(f) ||
	      fprintf(f, ",\n\"label_bin_s\":%.3f,\"labels\":{", t->clock.bin_ns / 1e9) < 0;
	for (i = 0; !err && i < t->nnames; i++)
		err = (i && fputc(',', f) == EOF) || json_write_string(f, t->names[i]) ||
		      fputs(":{", f) < 0 || write_label_values(f, t, i, &x) || fputs("}", f) < 0;
	label_top_free(&top);
	free(sources);
	return err || fputs("}", f) < 0 ? -1 : 0;
}

static int write_ebpfprof(FILE *f, const struct profile *p, const struct writer_options *o)
{
	if (fputs(",\n\"ebpfprof\":{", f) < 0 || write_info(f, p, o ? o->info : NULL))
		return -1;
	if (o && o->analysis &&
	    (fprintf(f, ",\"on_cpu_exact\":%s", on_cpu_exact(o->analysis) ? "true" : "false") < 0 ||
	     write_thread_states(f, p, o->analysis) || write_gc_stats(f, o->analysis) ||
	     write_labels(f, p, &o->analysis->labels)))
		return -1;
	return fputs("}", f) < 0 ? -1 : 0;
}

static int speedscope_write(const struct profile *p, const struct writer_options *o,
			    FILE *f)
{
	/* the time axis is always filled: see the top of this file */
	if (fputs("{\"$schema\":\"" SCHEMA_URL "\",\n\"name\":", f) < 0 ||
	    json_write_string(f, p->command ? p->command : "ebpfprof") ||
	    fputs(",\n\"exporter\":\"ebpfprof " EP_VERSION "\",\n"
		  "\"activeProfileIndex\":0,\n", f) < 0 ||
	    write_frames(p, f) || write_profiles(p, o, f) || write_ebpfprof(f, p, o) ||
	    fputs("}\n", f) < 0)
		goto fail;
	return 0;
fail:
	if (!errno)
		errno = EIO;
	return -1;
}

const struct output_writer speedscope_writer = {
	.name = "speedscope",
	.suffix = ".speedscope.json",
	.binary = 0,
	.write = speedscope_write,
};
