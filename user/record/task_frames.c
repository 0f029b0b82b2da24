// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Samples' <task NAME> frames (task_frames.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "clock.h"
#include "py_asyncio.h"
#include "py_task_await.h"
#include "task_frames.h"

#define LABEL_MAX	(PY_TASK_NAME + 8)

struct task_label {
	uint64_t coro;
	char label[LABEL_MAX];
};

struct task_frames {
	const struct py_target *t;
	int gen_iframe;
	struct task_label *labels;	/* sorted by coro */
	size_t n;
	uint64_t last_read_ns;
	unsigned reads;
	uint64_t read_ns;
};

struct task_frames *task_frames_new(const struct py_target *t)
{
	struct task_frames *tf;
	int off = t->major == 3 ? py_asyncio_gen_iframe(t->minor) : -1;

	if (off < 0)
		return NULL;
	tf = calloc(1, sizeof(*tf));
	if (!tf)
		return NULL;
	tf->t = t;
	tf->gen_iframe = off;
	return tf;
}

void task_frames_free(struct task_frames *tf)
{
	if (!tf)
		return;
	free(tf->labels);
	free(tf);
}

static int cmp_coro(const void *a, const void *b)
{
	uint64_t x = ((const struct task_label *)a)->coro, y = ((const struct task_label *)b)->coro;

	return x < y ? -1 : x > y;
}

/* The table read again; on failure the old one stays. */
static void reread(struct task_frames *tf, uint64_t now_ns)
{
	struct task_label *labels;
	struct py_tasks all;
	char err[256];
	size_t i, n = 0;

	tf->last_read_ns = now_ns;
	tf->reads++;
	if (py_asyncio_tasks(tf->t, PY_TASKS_NAMES_ONLY, &all, err, sizeof(err)))
		goto done;
	labels = calloc(all.n ? all.n : 1, sizeof(*labels));
	if (!labels) {
		py_asyncio_tasks_free(&all);
		goto done;
	}
	for (i = 0; i < all.n; i++) {
		if (!all.tasks[i].coro)
			continue;
		labels[n].coro = all.tasks[i].coro;
		py_task_frame_name(all.tasks[i].name, labels[n++].label, LABEL_MAX);
	}
	py_asyncio_tasks_free(&all);
	qsort(labels, n, sizeof(*labels), cmp_coro);
	free(tf->labels);
	tf->labels = labels;
	tf->n = n;
done:
	tf->read_ns += monotonic_ns() - now_ns;
}

static const struct task_label *find(const struct task_frames *tf, uint64_t coro)
{
	struct task_label key = { .coro = coro };

	return tf->n ? bsearch(&key, tf->labels, tf->n, sizeof(key), cmp_coro) : NULL;
}

const char *task_frames_name(struct task_frames *tf, uint64_t frame, uint64_t now_ns)
{
	const struct task_label *hit;
	uint64_t coro;

	if (!tf || frame < (uint64_t)tf->gen_iframe)
		return NULL;
	coro = frame - tf->gen_iframe;
	hit = find(tf, coro);
	if (!hit && now_ns - tf->last_read_ns >= TASK_FRAMES_REFRESH_NS) {
		reread(tf, now_ns);
		hit = find(tf, coro);
	}
	return hit ? hit->label : NULL;
}

void task_frames_cost(const struct task_frames *tf, unsigned *reads, uint64_t *ns)
{
	*reads = tf ? tf->reads : 0;
	*ns = tf ? tf->read_ns : 0;
}
