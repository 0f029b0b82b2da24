// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Suspended asyncio tasks placed walk after walk (task_walk.h). A task's
 * place is first known by a hash of what the walk read (its chain's tasks,
 * their code objects and instructions, what it awaits): only a task seen
 * twice at one place has its stack symbolized and its frames interned, so
 * the thousands of short-lived tasks of a server cost no frames.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "clock.h"
#include "hash.h"
#include "py_asyncio.h"
#include "py_task_await.h"
#include "task_walk.h"

#define NO_SPAN		((size_t)-1)
#define AWAIT_TEXT_MAX	1024

/* A suspended task as the last walk saw it. */
struct placed {
	uint64_t addr;
	uint64_t place;		/* hash of where it is suspended */
	uint64_t since_ns;	/* the first walk that saw it there (CLOCK_MONOTONIC) */
	size_t span;		/* its span in the profile, NO_SPAN: none yet */
	uint32_t track;
	unsigned missed;	/* walks since the last that reached it */
};

struct task_walk {
	const struct py_target *t;
	struct placed *placed;	/* by address */
	size_t nplaced;
	uint32_t next_track;
	size_t offset;		/* where the next walk starts: the last one was cut */
	size_t froms[TASK_WALK_MISSES_MAX];	/* where the last walks started, a ring */
	uint64_t next_ns;
	unsigned walks;
	uint64_t walk_ns;
	int truncated;
	uint32_t ids[TASK_STACK_MAX];
};

/* The tasks of one chain: the suspended task, then who awaits it, and so on. */
struct chain {
	const struct py_task *v[TASK_CHAIN_MAX];
	int n;
};

struct task_walk *task_walk_new(const struct py_target *t)
{
	struct task_walk *w;

	if (t->major != 3 || py_asyncio_gen_iframe(t->minor) < 0)
		return NULL;
	w = calloc(1, sizeof(*w));
	if (w)
		w->t = t;
	return w;
}

void task_walk_free(struct task_walk *w)
{
	if (!w)
		return;
	free(w->placed);
	free(w);
}

int task_walk_due(const struct task_walk *w, uint64_t now_ns)
{
	/* a tenth early: a caller on a one-second grid (top) walks on each */
	return w && now_ns + TASK_WALK_EVERY_NS / 10 >= w->next_ns;
}

static int in_chain(const struct chain *c, const struct py_task *t)
{
	int i;

	for (i = 0; i < c->n; i++)
		if (c->v[i] == t)
			return 1;
	return 0;
}

/* t and its awaiters (the first of each), as many as fit in a stack. */
static void chain_of(const struct py_tasks *all, const struct py_task *t, struct chain *c)
{
	int frames = 1 + t->nframes + 1;	/* its task frame, its own, the await */

	c->n = 0;
	c->v[c->n++] = t;
	while (c->n < TASK_CHAIN_MAX && t->nawaited_by) {
		t = py_asyncio_task_at(all, t->awaited_by[0]);
		if (!t || t->running || in_chain(c, t) || frames + 1 + t->nframes > TASK_STACK_MAX)
			break;
		frames += 1 + t->nframes;
		c->v[c->n++] = t;
	}
}

/* Where the chain's first task is suspended, as read (not yet named). */
static uint64_t place_of(const struct chain *c)
{
	const struct py_task *t = c->v[0];
	uint64_t h = FNV1A_BASIS;
	int i, j;

	h = fnv1a(h, &t->await_kind, sizeof(t->await_kind));
	if (t->await_kind == PY_AWAIT_TASK)
		h = fnv1a(h, &t->await_obj, sizeof(t->await_obj));
	if (t->await_kind == PY_AWAIT_GATHER)
		h = fnv1a(h, t->children, t->nchildren * sizeof(*t->children));
	if (t->await_kind == PY_AWAIT_OTHER)
		h = fnv1a_str(h, t->await_type);
	for (i = 0; i < c->n; i++) {
		h = fnv1a(h, &c->v[i]->addr, sizeof(c->v[i]->addr));
		for (j = 0; j < c->v[i]->nframes; j++) {
			h = fnv1a(h, &c->v[i]->frames[j].code, sizeof(c->v[i]->frames[j].code));
			h = fnv1a(h, &c->v[i]->frames[j].instr, sizeof(c->v[i]->frames[j].instr));
		}
	}
	return h;
}

/* Task t's frame and coroutine frames, outermost first, at ids; how many.
 * Its frames as symbolized go to sym_frames (innermost first) if not NULL. */
static uint32_t task_ids(struct py_symbolizer *sym, struct profile *p, const struct py_task *t,
			 int by_function, uint32_t *ids, struct py_sym_frame *sym_frames)
{
	char label[PY_TASK_NAME + 8];
	struct py_sym_frame fr;
	uint32_t n = 0, id;
	int i;

	py_task_frame_name(t->name, label, sizeof(label));
	ids[n++] = profile_frame(p, label, NULL, 0, FRAME_MARKER);
	for (i = t->nframes - 1; i >= 0; i--) {
		py_symbolizer_frame(sym, t->frames[i].code, t->frames[i].ident,
				    t->frames[i].instr, &fr);
		id = profile_frame(p, fr.name, fr.file, by_function ? fr.firstlineno : fr.line,
				   FRAME_PYTHON);
		ids[n++] = id;
		/* the profile's copies: they outlive the symbolizer's next call */
		if (sym_frames && id < p->nframes)
			sym_frames[i] = (struct py_sym_frame){ p->frames[id].name, p->frames[id].file,
							       fr.line, fr.firstlineno };
	}
	return n;
}

/* The chain's stack into w->ids, root first, topped by what its first task
 * awaits; how many frames. */
static uint32_t chain_stack(struct task_walk *w, struct py_symbolizer *sym, struct profile *p,
			    const struct py_tasks *all, const struct chain *c, int by_function)
{
	struct py_sym_frame own[PY_TASK_DEPTH];
	char what[AWAIT_TEXT_MAX], marker[AWAIT_TEXT_MAX + 16];
	uint32_t n = 0;
	int k;

	for (k = 0; k < PY_TASK_DEPTH; k++)
		own[k] = (struct py_sym_frame){ .name = "<unknown>" };
	for (k = c->n - 1; k >= 0; k--)
		n += task_ids(sym, p, c->v[k], by_function, w->ids + n, k ? NULL : own);
	py_task_await_text(all, c->v[0], own, what, sizeof(what));
	if (what[0])
		snprintf(marker, sizeof(marker), "[await %s]", what);
	else
		snprintf(marker, sizeof(marker), "[not awaiting]");
	w->ids[n++] = profile_frame(p, marker, NULL, 0, FRAME_MARKER);
	return n;
}

static int cmp_placed(const void *a, const void *b)
{
	uint64_t x = ((const struct placed *)a)->addr, y = ((const struct placed *)b)->addr;

	return x < y ? -1 : x > y;
}

static const struct placed *placed_before(const struct task_walk *w, uint64_t addr)
{
	struct placed key = { .addr = addr };

	return w->nplaced ? bsearch(&key, w->placed, w->nplaced, sizeof(key), cmp_placed) : NULL;
}

/* now - t0, or 0 when before it (a place found in the last period). */
static uint64_t since_t0(uint64_t at_ns, uint64_t t0_ns)
{
	return at_ns > t0_ns ? at_ns - t0_ns : 0;
}

/* Task t (its chain c) seen at now: its span grows, starts, or it is placed
 * anew. */
static void place(struct task_walk *w, struct py_symbolizer *sym, struct profile *p,
		  const struct py_tasks *all, const struct chain *c, uint64_t now_ns,
		  uint64_t t0_ns, int by_function, struct placed *out)
{
	const struct placed *before = placed_before(w, c->v[0]->addr);
	struct task_span s = { .pid = w->t->pid };
	long span;

	*out = (struct placed){ .addr = c->v[0]->addr, .place = place_of(c), .since_ns = now_ns,
				.span = NO_SPAN };
	out->track = before ? before->track : ++w->next_track;
	if (!before || before->place != out->place)
		return;
	out->since_ns = before->since_ns;
	out->span = before->span;
	if (out->span != NO_SPAN && out->span < p->tasks.n) {
		p->tasks.v[out->span].end_ns = since_t0(now_ns, t0_ns);
		return;
	}
	s.nframes = chain_stack(w, sym, p, all, c, by_function);
	s.frames = w->ids;
	s.task_frame = w->ids[s.nframes - 1 - 1 - c->v[0]->nframes];
	s.track = out->track;
	s.start_ns = since_t0(before->since_ns, t0_ns);
	s.end_ns = since_t0(now_ns, t0_ns);
	span = task_spans_add(&p->tasks, &s);
	out->span = span < 0 ? NO_SPAN : (size_t)span;
}

/* A running task: no place (a walk that finds it suspended places it anew). */
static void place_running(struct task_walk *w, const struct py_task *t, struct placed *out)
{
	const struct placed *before = placed_before(w, t->addr);

	*out = (struct placed){ .addr = t->addr, .span = NO_SPAN };
	out->track = before ? before->track : ++w->next_track;
}

/* The placements of the walks before that this one did not reach, kept
 * TASK_WALK_MISSES_MAX walks (a cut walk reaches only part of the list; the
 * next ones go on from there), after the n of placed (sorted); the count. */
static size_t keep_unreached(const struct task_walk *w, struct placed *placed, size_t n)
{
	size_t i, kept = n;

	for (i = 0; i < w->nplaced; i++) {
		if (w->placed[i].missed >= TASK_WALK_MISSES_MAX ||
		    (n && bsearch(&w->placed[i], placed, n, sizeof(*placed), cmp_placed)))
			continue;
		placed[kept] = w->placed[i];
		placed[kept++].missed++;
	}
	return kept;
}

/* Every task of all placed; the new placements replace the last, but for
 * those of tasks this walk did not reach when it saw only part of the list
 * (complete: 0). */
static void place_all(struct task_walk *w, struct py_symbolizer *sym, struct profile *p,
		      const struct py_tasks *all, int complete, uint64_t now_ns, uint64_t t0_ns,
		      int by_function)
{
	struct placed *placed = calloc(all->n + w->nplaced + 1, sizeof(*placed));
	struct chain c;
	size_t i, n = 0;

	if (!placed)
		return;
	for (i = 0; i < all->n; i++) {
		if (all->tasks[i].running) {
			place_running(w, &all->tasks[i], &placed[n++]);
			continue;
		}
		chain_of(all, &all->tasks[i], &c);
		place(w, sym, p, all, &c, now_ns, t0_ns, by_function, &placed[n++]);
	}
	qsort(placed, n, sizeof(*placed), cmp_placed);
	if (!complete) {
		n = keep_unreached(w, placed, n);
		qsort(placed, n, sizeof(*placed), cmp_placed);
	}
	free(w->placed);
	w->placed = placed;
	w->nplaced = n;
}

/* Where the oldest of the last walks whose tasks are still placed started:
 * its tasks gain the most from being seen again. */
static size_t revisit_from(const struct task_walk *w)
{
	unsigned back = w->walks < TASK_WALK_MISSES_MAX - 1 ? w->walks : TASK_WALK_MISSES_MAX - 1;

	return back ? w->froms[(w->walks - back) % TASK_WALK_MISSES_MAX] : 0;
}

void task_walk_step(struct task_walk *w, struct py_symbolizer *sym, struct profile *p,
		    uint64_t t0_ns, int by_function, int revisit)
{
	uint64_t start = monotonic_ns(), took, gap;
	struct py_tasks all;
	char err[256];
	size_t from;

	if (!w || !sym)
		return;
	from = revisit ? revisit_from(w) : w->offset;
	w->froms[w->walks++ % TASK_WALK_MISSES_MAX] = from;
	if (!py_asyncio_tasks_from(w->t, PY_TASKS_QUICK, from, &all, err, sizeof(err))) {
		w->truncated |= all.truncated;
		place_all(w, sym, p, &all, !from && !all.truncated, start, t0_ns, by_function);
		/* cut: the next walk goes on after the tasks this one reached
		 * (from the start if it reached none: passing over was all it did) */
		w->offset = all.truncated && all.n ? all.skipped + all.n : 0;
		py_asyncio_tasks_free(&all);
	}
	took = monotonic_ns() - start;
	w->walk_ns += took;
	gap = took * TASK_WALK_COST_FACTOR;
	w->next_ns = start + (gap > TASK_WALK_EVERY_NS ? gap : TASK_WALK_EVERY_NS);
}

void task_walk_next_period(struct task_walk *w)
{
	size_t i;

	for (i = 0; w && i < w->nplaced; i++)
		w->placed[i].span = NO_SPAN;
}

void task_walk_cost(const struct task_walk *w, unsigned *walks, uint64_t *ns, int *truncated)
{
	*walks = w ? w->walks : 0;
	*ns = w ? w->walk_ns : 0;
	*truncated = w ? w->truncated : 0;
}
