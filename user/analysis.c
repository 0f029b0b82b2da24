// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "analysis.h"

void analysis_init(struct analysis *a)
{
	memset(a, 0, sizeof(*a));
}

static void list_free(struct interval_list *l)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		free(l->v[i].frames);
	free(l->v);
	memset(l, 0, sizeof(*l));
}

void analysis_free(struct analysis *a)
{
	list_free(&a->gcs);
	list_free(&a->waits);
}

int analysis_add(struct interval_list *l, const struct interval *iv)
{
	struct interval *copy;

	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 256;
		struct interval *v = realloc(l->v, cap * sizeof(*v));

		if (!v)
			return -1;
		l->v = v;
		l->cap = cap;
	}
	copy = &l->v[l->n];
	*copy = *iv;
	copy->frames = NULL;
	if (iv->nframes) {
		copy->frames = malloc(iv->nframes * sizeof(*copy->frames));
		if (!copy->frames)
			return -1;
		memcpy(copy->frames, iv->frames, iv->nframes * sizeof(*copy->frames));
	}
	l->n++;
	return 0;
}

void analysis_set_exact_gc(struct analysis *a, int pid)
{
	if (!analysis_gc_is_exact(a, pid) && a->nexact < 64)
		a->exact_gc_pids[a->nexact++] = pid;
}

int analysis_gc_is_exact(const struct analysis *a, int pid)
{
	int i;

	for (i = 0; i < a->nexact; i++)
		if (a->exact_gc_pids[i] == pid)
			return 1;
	return 0;
}

static int by_start(const void *x, const void *y)
{
	const struct interval *a = x, *b = y;

	return a->start_ns < b->start_ns ? -1 : a->start_ns > b->start_ns;
}

/* The first collection of pid (other than in tid) overlapping [start, end)
 * at or after index *from; gcs are sorted by start and never overlap within
 * one process (one collection at a time: the collector holds the GIL). */
static const struct interval *next_gc_overlap(const struct analysis *a, size_t *from,
					      int pid, int tid, uint64_t start, uint64_t end)
{
	for (; *from < a->gcs.n; (*from)++) {
		const struct interval *g = &a->gcs.v[*from];

		if (g->start_ns >= end)
			return NULL;
		if (g->pid == pid && g->tid != tid && g->end_ns > start)
			return g;
	}
	return NULL;
}

/* Index of the first interval starting at or after t (list sorted by start). */
static size_t first_start_at(const struct interval_list *l, uint64_t t)
{
	size_t lo = 0, hi = l->n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (l->v[mid].start_ns < t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static uint64_t longest(const struct interval_list *l)
{
	uint64_t m = 0;
	size_t i;

	for (i = 0; i < l->n; i++)
		if (l->v[i].end_ns - l->v[i].start_ns > m)
			m = l->v[i].end_ns - l->v[i].start_ns;
	return m;
}

struct piece {
	uint64_t start_ns, end_ns;
	int state;
};

/* Cuts wait w into GIL-wait and waiting-for-GC pieces; returns how many. */
static size_t cut_wait(const struct analysis *a, const struct interval *w,
		       uint64_t longest_gc, struct piece **out)
{
	const struct interval *g;
	struct piece *v = NULL, *grown;
	uint64_t at = w->start_ns;
	size_t n = 0, from = first_start_at(&a->gcs, w->start_ns > longest_gc ?
					    w->start_ns - longest_gc : 0);

	for (;;) {
		g = next_gc_overlap(a, &from, w->pid, w->tid, at, w->end_ns);
		uint64_t gs = g ? (g->start_ns > at ? g->start_ns : at) : w->end_ns;
		uint64_t ge = g ? (g->end_ns < w->end_ns ? g->end_ns : w->end_ns) : w->end_ns;

		grown = realloc(v, (n + 2) * sizeof(*v));
		if (!grown)
			break;
		v = grown;
		if (gs > at)
			v[n++] = (struct piece){ at, gs, STATE_GIL_WAIT };
		if (!g)
			break;
		v[n++] = (struct piece){ gs, ge, STATE_GIL_WAIT_GC };
		at = ge;
		from++;
	}
	*out = v;
	return n;
}

/* Replaces the wait at index i by its pieces: the first in place, the others
 * appended (they share its stack). */
static void split_one(struct analysis *a, size_t i, uint64_t longest_gc)
{
	struct interval w = a->waits.v[i];
	struct piece *pieces;
	size_t k, n = cut_wait(a, &w, longest_gc, &pieces);

	for (k = 1; k < n; k++) {
		struct interval extra = w;

		extra.start_ns = pieces[k].start_ns;
		extra.end_ns = pieces[k].end_ns;
		extra.state = pieces[k].state;
		analysis_add(&a->waits, &extra);
	}
	if (n) {
		a->waits.v[i].start_ns = pieces[0].start_ns;
		a->waits.v[i].end_ns = pieces[0].end_ns;
		a->waits.v[i].state = pieces[0].state;
	}
	free(pieces);
}

void analysis_split_gc_waits(struct analysis *a)
{
	size_t i, n = a->waits.n;
	uint64_t longest_gc = longest(&a->gcs);

	qsort(a->gcs.v, a->gcs.n, sizeof(*a->gcs.v), by_start);
	for (i = 0; i < n; i++) {
		struct interval *w = &a->waits.v[i];

		if (w->state != STATE_GIL_WAIT && w->state != STATE_GIL_WAIT_GC)
			continue;
		/* with exact collections, overlap decides; without, the kernel's
		 * reading of the collecting flag at switch-out stands */
		if (!analysis_gc_is_exact(a, w->pid))
			continue;
		a->waits.v[i].state = STATE_GIL_WAIT;
		split_one(a, i, longest_gc);
	}
	qsort(a->waits.v, a->waits.n, sizeof(*a->waits.v), by_start);
}

static struct thread_states *states_of(struct thread_states **v, size_t *n, int pid, int tid)
{
	struct thread_states *grown;
	size_t i;

	for (i = 0; i < *n; i++)
		if ((*v)[i].pid == pid && (*v)[i].tid == tid)
			return &(*v)[i];
	grown = realloc(*v, (*n + 1) * sizeof(**v));
	if (!grown)
		return NULL;
	*v = grown;
	memset(&grown[*n], 0, sizeof(grown[*n]));
	grown[*n].pid = pid;
	grown[*n].tid = tid;
	return &grown[(*n)++];
}

/* How much of wait w falls inside collections run by the same thread: a
 * collector can be preempted mid-collection, and that time is the pause's. */
static uint64_t own_gc_overlap(const struct analysis *a, const struct interval *w,
			       uint64_t longest_gc)
{
	size_t i = first_start_at(&a->gcs, w->start_ns > longest_gc ? w->start_ns - longest_gc : 0);
	uint64_t sum = 0;

	for (; i < a->gcs.n && a->gcs.v[i].start_ns < w->end_ns; i++) {
		const struct interval *g = &a->gcs.v[i];
		uint64_t s = g->start_ns > w->start_ns ? g->start_ns : w->start_ns;
		uint64_t e = g->end_ns < w->end_ns ? g->end_ns : w->end_ns;

		if (g->pid == w->pid && g->tid == w->tid && e > s)
			sum += e - s;
	}
	return sum;
}

size_t analysis_thread_states(const struct analysis *a, const struct profile *p,
			      struct thread_states **out)
{
	struct thread_states *ts;
	uint64_t longest_gc = longest(&a->gcs);
	size_t i, j, n = 0;

	*out = NULL;
	for (i = 0; i < p->nthreads; i++) {
		const struct thread_profile *t = &p->threads[i];

		ts = states_of(out, &n, t->pid, t->tid);
		for (j = 0; ts && j < t->nsamples; j++) {
			const struct sample *s = &t->samples[j];

			/* exact collections are counted from the pauses below */
			if (s->state == STATE_GC && analysis_gc_is_exact(a, t->pid))
				continue;
			if (s->state == STATE_ON_CPU || s->state == STATE_GC)
				ts->ns[s->state] += s->weight_ns;
		}
	}
	for (i = 0; i < a->gcs.n; i++) {
		const struct interval *g = &a->gcs.v[i];

		ts = states_of(out, &n, g->pid, g->tid);
		if (ts && analysis_gc_is_exact(a, g->pid))
			ts->ns[STATE_GC] += g->end_ns - g->start_ns;
	}
	for (i = 0; i < a->waits.n; i++) {
		const struct interval *w = &a->waits.v[i];

		ts = states_of(out, &n, w->pid, w->tid);
		if (ts && analysis_gc_is_exact(a, w->pid))
			ts->ns[w->state] += w->end_ns - w->start_ns - own_gc_overlap(a, w, longest_gc);
		else if (ts)
			ts->ns[w->state] += w->end_ns - w->start_ns;
	}
	for (i = 0; i < n; i++)
		for (j = 0; j < STATE_MAX; j++)
			(*out)[i].observed_ns += (*out)[i].ns[j];
	return n;
}

const char *state_marker(int state)
{
	switch (state) {
	case STATE_GC: return "[GC]";
	case STATE_GIL_WAIT: return "[GIL wait]";
	case STATE_GIL_WAIT_GC: return "[waiting for GC]";
	case STATE_LOCK_WAIT: return "[lock wait]";
	case STATE_IO: return "[I/O wait]";
	case STATE_SLEEP: return "[sleep]";
	case STATE_PREEMPTED: return "[preempted]";
	default: return "[off-CPU]";
	}
}

/* Spreads samples [from, to) of t evenly over [start, end). */
static void spread(struct thread_profile *t, size_t from, size_t to, uint64_t start, uint64_t end)
{
	uint64_t each = (end - start) / (to - from);
	size_t i;

	for (i = from; i < to; i++) {
		t->samples[i].start_ns = start + (i - from) * each;
		t->samples[i].weight_ns = i + 1 == to ? end - t->samples[i].start_ns : each;
	}
}

/* The on-CPU slice [start, w's start) before wait w: its samples (among the
 * first n, the thread's own; later ones were added here), or w's stack. */
static size_t fit_slice(struct profile *p, struct thread_profile *t, size_t next, size_t n,
			uint64_t start, const struct interval *w)
{
	size_t first = next;
	struct sample s = { .start_ns = start, .state = STATE_ON_CPU };

	while (next < n && t->samples[next].start_ns < w->start_ns)
		next++;
	if (w->start_ns <= start)
		return next;
	if (next > first) {
		spread(t, first, next, start, w->start_ns);
		return next;
	}
	s.weight_ns = w->start_ns - start;
	s.frames = w->frames;
	s.nframes = w->nframes;
	if (w->nframes)
		profile_add_sample(p, t, &s);	/* appended: the caller sorts again */
	return next;
}

static void fit_thread(const struct analysis *a, struct profile *p, struct thread_profile *t)
{
	size_t i, next = 0, n = t->nsamples;
	uint64_t cursor = n ? t->samples[0].start_ns : UINT64_MAX;
	int seen = 0;

	for (i = 0; i < a->waits.n; i++) {
		const struct interval *w = &a->waits.v[i];

		if (w->pid != t->pid || w->tid != t->tid)
			continue;
		if (!seen++ && w->start_ns < cursor)
			cursor = w->start_ns;
		next = fit_slice(p, t, next, n, cursor, w);
		if (w->end_ns > cursor)
			cursor = w->end_ns;
	}
	/* after the last wait: the thread ran on; its samples keep their own width */
	for (i = next; seen && i < n; i++)
		if (t->samples[i].start_ns < cursor)
			t->samples[i].start_ns = cursor;
}

void analysis_fit_on_cpu_samples(const struct analysis *a, struct profile *p)
{
	size_t i;

	for (i = 0; i < p->nthreads; i++)
		fit_thread(a, p, &p->threads[i]);
}

/* The collection of w's own thread that w starts inside, or NULL. */
static const struct interval *own_gc_at(const struct analysis *a, const struct interval *w,
					uint64_t longest_gc)
{
	size_t i = first_start_at(&a->gcs, w->start_ns > longest_gc ? w->start_ns - longest_gc : 0);

	for (; i < a->gcs.n && a->gcs.v[i].start_ns <= w->start_ns; i++) {
		const struct interval *g = &a->gcs.v[i];

		if (g->pid == w->pid && g->tid == w->tid && g->end_ns > w->start_ns)
			return g;
	}
	return NULL;
}

int analysis_add_idle_samples(const struct analysis *a, struct profile *p)
{
	uint64_t longest_gc = longest(&a->gcs);
	uint32_t *ids = NULL;
	size_t i;

	for (i = 0; i < a->waits.n; i++) {
		const struct interval *w = &a->waits.v[i];
		struct thread_profile *t = profile_thread(p, w->pid, w->tid);
		struct sample s = { .start_ns = w->start_ns, .weight_ns = w->end_ns - w->start_ns,
				    .state = w->state };
		const struct interval *gc = own_gc_at(a, w, longest_gc);
		uint32_t *grown = realloc(ids, (w->nframes + 2) * sizeof(*ids));
		char gc_name[32];

		if (!t || !grown || !s.weight_ns) {
			ids = grown ? grown : ids;
			continue;
		}
		ids = grown;
		memcpy(ids, w->frames, w->nframes * sizeof(*ids));
		s.frames = ids;
		s.nframes = w->nframes;
		/* a collector preempted mid-collection: the time is the pause's too */
		if (gc) {
			snprintf(gc_name, sizeof(gc_name), "[GC gen %d]", gc->generation);
			ids[s.nframes++] = profile_frame(p, gc_name, NULL, 0, FRAME_MARKER);
		}
		ids[s.nframes++] = profile_frame(p, state_marker(w->state), NULL, 0, FRAME_MARKER);
		profile_add_sample(p, t, &s);
	}
	free(ids);
	return 0;
}
