// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Suspended asyncio tasks' spans (task_spans.h). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "grow.h"
#include "task_spans.h"

long task_spans_add(struct task_spans *ts, const struct task_span *s)
{
	uint32_t *frames;

	if (ts->n >= TASK_SPANS_MAX) {
		ts->dropped++;
		return -1;
	}
	frames = malloc((s->nframes ? s->nframes : 1) * sizeof(*frames));
	if (!frames || GROW_ARRAY(ts->v, ts->cap, ts->n + 1)) {
		free(frames);
		ts->dropped++;
		return -1;
	}
	memcpy(frames, s->frames, s->nframes * sizeof(*frames));
	ts->v[ts->n] = *s;
	ts->v[ts->n].frames = frames;
	return (long)ts->n++;
}

static struct task_process *process_of(const struct task_spans *ts, int pid)
{
	size_t i;

	for (i = 0; i < ts->nprocs; i++)
		if (ts->procs[i].pid == pid)
			return &ts->procs[i];
	return NULL;
}

int task_spans_name_process(struct task_spans *ts, int pid, const char *process)
{
	struct task_process *p = process_of(ts, pid);
	char *copy = strdup(process);

	if (!copy || (!p && GROW_ARRAY(ts->procs, ts->procs_cap, ts->nprocs + 1))) {
		free(copy);
		return -1;
	}
	if (!p) {
		p = &ts->procs[ts->nprocs++];
		p->pid = pid;
	} else {
		free(p->process);
	}
	p->process = copy;
	return 0;
}

char *task_spans_title(const struct task_spans *ts, int pid)
{
	const struct task_process *p = process_of(ts, pid);
	char *title;

	if (asprintf(&title, TASK_SPANS_PREFIX "%s (pid %d)", p ? p->process : "python", pid) < 0)
		return NULL;
	return title;
}

int task_spans_each_pid(const struct task_spans *ts, int (*fn)(int pid, void *arg), void *arg)
{
	size_t i, j, n = 0, cap = 0;
	int *pids = NULL, err = 0;

	for (i = 0; i < ts->n; i++) {
		for (j = 0; j < n && pids[j] != ts->v[i].pid; j++)
			;
		if (j < n)
			continue;	/* a few processes: a scan is enough */
		if (GROW_ARRAY(pids, cap, n + 1)) {
			free(pids);
			return -1;
		}
		pids[n++] = ts->v[i].pid;
	}
	for (i = 0; !err && i < n; i++)
		err = fn(pids[i], arg);
	free(pids);
	return err;
}

/* Equal stacks side by side: by depth, then by frame ids. */
static int stack_cmp(const void *a, const void *b)
{
	const struct task_stack *x = a, *y = b;

	if (x->nframes != y->nframes)
		return x->nframes < y->nframes ? -1 : 1;
	return memcmp(x->frames, y->frames, x->nframes * sizeof(*x->frames));
}

long task_spans_stacks(const struct task_spans *ts, int pid, struct task_stack **out)
{
	struct task_stack *v = malloc((ts->n ? ts->n : 1) * sizeof(*v));
	size_t i, n = 0, kept = 0;

	*out = v;
	if (!v)
		return -1;
	for (i = 0; i < ts->n; i++)
		if (ts->v[i].pid == pid && ts->v[i].end_ns > ts->v[i].start_ns)
			v[n++] = (struct task_stack){ ts->v[i].frames, ts->v[i].nframes,
						      ts->v[i].end_ns - ts->v[i].start_ns };
	if (n)
		qsort(v, n, sizeof(*v), stack_cmp);
	for (i = 0; i < n; i++) {
		if (kept && !stack_cmp(&v[kept - 1], &v[i]))
			v[kept - 1].ns += v[i].ns;
		else
			v[kept++] = v[i];
	}
	return (long)kept;
}

int task_profile_of(const struct task_spans *ts, int pid, struct task_profile *out)
{
	long n = task_spans_stacks(ts, pid, &out->stacks);
	size_t i;

	out->title = n >= 0 ? task_spans_title(ts, pid) : NULL;
	if (!out->title) {
		free(out->stacks);
		memset(out, 0, sizeof(*out));
		return -1;
	}
	out->n = (size_t)n;
	out->total_ns = 0;
	for (i = 0; i < out->n; i++)
		out->total_ns += out->stacks[i].ns;
	return 0;
}

void task_profile_free(struct task_profile *tp)
{
	free(tp->title);
	free(tp->stacks);
	memset(tp, 0, sizeof(*tp));
}

void task_spans_clear(struct task_spans *ts)
{
	size_t i;

	for (i = 0; i < ts->n; i++)
		free(ts->v[i].frames);
	ts->n = 0;
	ts->dropped = 0;
}

void task_spans_free(struct task_spans *ts)
{
	size_t i;

	task_spans_clear(ts);
	for (i = 0; i < ts->nprocs; i++)
		free(ts->procs[i].process);
	free(ts->procs);
	free(ts->v);
	memset(ts, 0, sizeof(*ts));
}
