// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Brendan Gregg's folded stacks, as flamegraph.pl, inferno and speedscope
 * read them: one line per distinct stack, "frame;frame;... COUNT", root
 * first, COUNT in samples at the session's rate. As py-spy writes them: the
 * threads' stacks are merged unless -t asks for a "Thread TID "name"" root,
 * and a profile of several processes starts each stack with its process.
 * record --tasks' suspended tasks follow, under a root of their own.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "grow.h"
#include "writer.h"

/* A stack's samples counted, with its thread's place in the output order. */
struct stack_ref {
	size_t thread_rank;	/* equal for stacks merged under one root */
	const struct thread_profile *t;
	const uint32_t *frames;	/* the profile's */
	uint32_t nframes;
	uint64_t count;		/* samples */
	uint64_t weight_ns;	/* their weights summed */
};

struct ref_list {
	struct stack_ref *v;
	size_t n, cap;
};

/* By thread, then by stack: equal stacks of a thread end up side by side. */
static int ref_cmp(const void *a, const void *b)
{
	const struct stack_ref *x = a, *y = b;

	if (x->thread_rank != y->thread_rank)
		return x->thread_rank < y->thread_rank ? -1 : 1;
	return profile_stack_cmp(x->frames, x->nframes, y->frames, y->nframes);
}

static int same_stack(const struct stack_ref *x, const struct stack_ref *y)
{
	return ref_cmp(x, y) == 0;
}

/* Idle time and stackless samples say nothing about where time went. */
static int counted(const struct sample *s)
{
	return s->state != STATE_IDLE && s->nframes;
}

/* Which root frames each line starts with. */
struct roots {
	int process;		/* the profile has several processes */
	int thread;		/* -t */
};

static int ref_push(struct ref_list *l, const struct stack_ref *r)
{
	if (GROW_ARRAY(l->v, l->cap, l->n + 1))
		return -1;
	l->v[l->n++] = *r;
	return 0;
}

/* Sorts l->v[from..] and merges equal stacks into one, counts summed. */
static void merge_refs(struct ref_list *l, size_t from)
{
	size_t i, kept = from;

	if (l->n == from)
		return;		/* l->v may be NULL: not for qsort */
	qsort(l->v + from, l->n - from, sizeof(*l->v), ref_cmp);
	for (i = from; i < l->n; i++) {
		if (kept > from && same_stack(&l->v[kept - 1], &l->v[i]))
		{
			l->v[kept - 1].count += l->v[i].count;
			l->v[kept - 1].weight_ns += l->v[i].weight_ns;
		} else
			l->v[kept++] = l->v[i];
	}
	l->n = kept;
}

/* One thread's samples counted per stack onto l. */
static int collect_thread(const struct profile *p, const struct thread_profile *t,
			  size_t rank, struct ref_list *l)
{
	struct stack_ref r = { .thread_rank = rank, .t = t };
	struct sample_iter it;
	struct sample s;
	size_t from = l->n;

	sample_iter_init(&it, p, t);
	while (sample_iter_next(&it, &s)) {
		if (!counted(&s))
			continue;
		r.frames = s.frames;
		r.nframes = s.nframes;
		r.count = 1;
		r.weight_ns = s.weight_ns;
		if (ref_push(l, &r))
			return -1;
	}
	/* one thread's samples at a time, not the whole profile's */
	merge_refs(l, from);
	return 0;
}

/* The stacks to write into *l, by thread rank and stack, counts summed. */
static int collect(const struct profile *p, const struct roots *r, struct ref_list *l)
{
	const struct thread_profile **order = profile_sorted_threads(p);
	size_t i, rank = 0;

	if (!order)
		return -1;
	for (i = 0; i < p->nthreads; i++) {
		if (i && !r->thread && order[i]->pid != order[i - 1]->pid)
			rank++;
		if (r->thread)
			rank = i;
		if (collect_thread(p, order[i], rank, l)) {
			free(order);
			errno = ENOMEM;
			return -1;
		}
	}
	free(order);
	merge_refs(l, 0);
	return 0;
}

/*
 * Writes s with the characters that would break the format replaced: ';'
 * separates frames and a line break ends the record.
 */
static int put_clean(FILE *f, const char *s)
{
	unsigned char c;

	for (; *s; s++) {
		c = *s;
		if (c == ';')
			c = ',';
		else if (c < 0x20 || c == 0x7f)
			c = ' ';
		if (fputc(c, f) == EOF)
			return -1;
	}
	return 0;
}

/* "python3 (pid 100);Thread 101 "name";" as the roots ask. */
static int put_roots(FILE *f, const struct roots *r, const struct thread_profile *t)
{
	if (r->process) {
		if (t->process && (put_clean(f, t->process) || fputc(' ', f) == EOF))
			return -1;
		if (fprintf(f, "(pid %d);", t->pid) < 0)
			return -1;
	}
	if (!r->thread)
		return 0;
	if (fprintf(f, "Thread %d", t->tid) < 0)
		return -1;
	if (t->name && (fputs(" \"", f) < 0 || put_clean(f, t->name) || fputc('"', f) == EOF))
		return -1;
	return fputc(';', f) == EOF ? -1 : 0;
}

static int put_frame(FILE *f, const struct frame_info *fr)
{
	if (put_clean(f, fr->name))
		return -1;
	if (fr->kind == FRAME_MARKER || !fr->file)
		return 0;
	if (fputs(" (", f) < 0 || put_clean(f, fr->file))
		return -1;
	if (fr->line > 0 && fprintf(f, ":%d", fr->line) < 0)
		return -1;
	return fputc(')', f) == EOF ? -1 : 0;
}

/*
 * A line's count: its samples' summed weight in periods, rounded once for
 * the line (at least 1). Rounding each sample (at least 1 each) counted a
 * thread sharing its CPU, whose samples weigh less than a period, high: 27%
 * over its exact on-CPU time under load. Without a rate, the samples.
 */
static uint64_t line_count(const struct profile *p, const struct stack_ref *r)
{
	uint64_t period = p->rate_hz ? 1000000000ull / p->rate_hz : 0, n;

	if (!period)
		return r->count;
	n = (r->weight_ns + period / 2) / period;
	return n ? n : 1;
}

/* The stack's frames and its line's count, after its roots. */
static int put_stack(FILE *f, const struct profile *p, const struct stack_ref *r)
{
	uint32_t i;

	for (i = 0; i < r->nframes; i++) {
		if (i && fputc(';', f) == EOF)
			return -1;
		if (r->frames[i] < p->nframes) {
			if (put_frame(f, &p->frames[r->frames[i]]))
				return -1;
		} else if (fputs("[unknown]", f) < 0) {
			return -1;
		}
	}
	return fprintf(f, " %" PRIu64 "\n", line_count(p, r)) < 0 ? -1 : 0;
}

static int put_line(FILE *f, const struct profile *p, const struct roots *roots,
		    const struct stack_ref *r)
{
	return put_roots(f, roots, r->t) || put_stack(f, p, r) ? -1 : 0;
}

/* record --tasks: a process's suspended tasks under a root of their own,
 * "[asyncio tasks] <process> (pid N)", counted in task-seconds at the
 * session's rate. */
static int put_task_lines(int pid, void *arg)
{
	const struct task_out *out = arg;
	struct task_profile tp;
	size_t i;
	int err = task_profile_of(&out->p->tasks, pid, &tp);

	for (i = 0; !err && i < tp.n; i++) {
		struct stack_ref r = { .frames = tp.stacks[i].frames, .nframes = tp.stacks[i].nframes,
				       .count = 1, .weight_ns = tp.stacks[i].ns };

		err = put_clean(out->f, tp.title) || fputc(';', out->f) == EOF ||
		      put_stack(out->f, out->p, &r);
	}
	task_profile_free(&tp);
	return err ? -1 : 0;
}

static int put_tasks(FILE *f, const struct profile *p)
{
	struct task_out out = { f, p };

	return task_spans_each_pid(&p->tasks, put_task_lines, &out);
}

static int collapsed_write(const struct profile *p, const struct writer_options *o,
			   FILE *f)
{
	struct roots roots = { .process = profile_many_processes(p), .thread = o && o->threads };
	struct ref_list refs = { 0 };
	size_t i;
	int err = collect(p, &roots, &refs);

	for (i = 0; !err && i < refs.n; i++)
		err = put_line(f, p, &roots, &refs.v[i]);
	err = err || put_tasks(f, p);
	free(refs.v);
	if (err && !errno)
		errno = EIO;
	return err;
}

const struct output_writer collapsed_writer = {
	.name = "collapsed",
	.suffix = ".collapsed.txt",
	.binary = 0,
	.write = collapsed_write,
};
