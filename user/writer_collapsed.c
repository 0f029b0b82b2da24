// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Brendan Gregg's folded stacks, as flamegraph.pl, inferno and speedscope
 * read them: one line per distinct stack, "frame;frame;... COUNT", root
 * first, COUNT in samples at the session's rate. As py-spy writes them: the
 * threads' stacks are merged unless -t asks for a "Thread TID "name"" root,
 * and a profile of several processes starts each stack with its process.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "writer.h"

/* A sample to count, with its thread's place in the output order. */
struct stack_ref {
	size_t thread_rank;	/* equal for stacks merged under one root */
	const struct thread_profile *t;
	const struct sample *s;
};

/* By thread, then by stack: equal stacks of a thread end up side by side. */
static int ref_cmp(const void *a, const void *b)
{
	const struct stack_ref *x = a, *y = b;
	uint32_t i, n;

	if (x->thread_rank != y->thread_rank)
		return x->thread_rank < y->thread_rank ? -1 : 1;
	n = x->s->nframes < y->s->nframes ? x->s->nframes : y->s->nframes;
	for (i = 0; i < n; i++)
		if (x->s->frames[i] != y->s->frames[i])
			return x->s->frames[i] < y->s->frames[i] ? -1 : 1;
	if (x->s->nframes != y->s->nframes)
		return x->s->nframes < y->s->nframes ? -1 : 1;
	return 0;
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

/* The samples to count into *out, sorted so that equal stacks are adjacent. */
/* Which root frames each line starts with. */
struct roots {
	int process;		/* the profile has several processes */
	int thread;		/* -t */
};

static int collect(const struct profile *p, const struct roots *r,
		   struct stack_ref **out, size_t *n)
{
	const struct thread_profile **order;
	struct stack_ref *refs;
	size_t i, j, total = 0, rank = 0;

	for (i = 0; i < p->nthreads; i++)
		total += p->threads[i].nsamples;
	order = profile_sorted_threads(p);
	refs = calloc(total + 1, sizeof(*refs));
	if (!order || !refs) {
		free(order);
		free(refs);
		errno = ENOMEM;
		return -1;
	}
	*n = 0;
	for (i = 0; i < p->nthreads; i++) {
		if (i && !r->thread && order[i]->pid != order[i - 1]->pid)
			rank++;
		if (r->thread)
			rank = i;
		for (j = 0; j < order[i]->nsamples; j++) {
			if (!counted(&order[i]->samples[j]))
				continue;
			refs[*n].thread_rank = rank;
			refs[*n].t = order[i];
			refs[*n].s = &order[i]->samples[j];
			(*n)++;
		}
	}
	free(order);
	qsort(refs, *n, sizeof(*refs), ref_cmp);
	*out = refs;
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

static int put_line(FILE *f, const struct profile *p, const struct roots *roots,
		    const struct stack_ref *r, uint64_t count)
{
	uint32_t i;

	if (put_roots(f, roots, r->t))
		return -1;
	for (i = 0; i < r->s->nframes; i++) {
		if (i && fputc(';', f) == EOF)
			return -1;
		if (r->s->frames[i] < p->nframes) {
			if (put_frame(f, &p->frames[r->s->frames[i]]))
				return -1;
		} else if (fputs("[unknown]", f) < 0) {
			return -1;
		}
	}
	return fprintf(f, " %" PRIu64 "\n", count) < 0 ? -1 : 0;
}

static int collapsed_write(const struct profile *p, const struct writer_options *o,
			   FILE *f)
{
	struct roots roots = { .process = profile_many_processes(p), .thread = o && o->threads };
	struct stack_ref *refs;
	uint64_t count;
	size_t n, i, j;
	int err = 0;

	if (collect(p, &roots, &refs, &n))
		return -1;
	for (i = 0; !err && i < n; i = j) {
		count = 0;
		for (j = i; j < n && same_stack(&refs[i], &refs[j]); j++)
			count += profile_sample_count(p, refs[j].s);
		err = put_line(f, p, &roots, &refs[i], count);
	}
	free(refs);
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
