// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "analysis.h"
#include "ebpfprof.h"
#include "grow.h"
#include "hash.h"
#include "hash_index.h"
#include "states.h"

void analysis_init(struct analysis *a)
{
	memset(a, 0, sizeof(*a));
	label_table_init(&a->labels);
}

static void list_free(struct interval_list *l)
{
	size_t i;

	for (i = 0; i < l->n; i++) {
		free(l->v[i].frames);
		free(l->v[i].holder_frames);
	}
	free(l->v);
	memset(l, 0, sizeof(*l));
}

void analysis_free(struct analysis *a)
{
	analysis_next_period(a);
	label_table_free(&a->labels);
	free(a->exact_gc_pids);
	memset(a, 0, sizeof(*a));
}

void analysis_next_period(struct analysis *a)
{
	list_free(&a->gcs);
	list_free(&a->waits);
	gil_blame_free(&a->blame);
	label_table_next_period(&a->labels);
	free(a->totals);
	hash_index_free(&a->totals_index);
	a->totals = NULL;
	a->ntotals = a->totals_cap = 0;
}

int analysis_add(struct interval_list *l, const struct interval *iv)
{
	struct interval *copy;

	if (GROW_ARRAY(l->v, l->cap, l->n + 1))
		return -1;
	copy = &l->v[l->n];
	*copy = *iv;
	copy->frames = NULL;
	copy->holder_frames = NULL;
	copy->holder_nframes = 0;
	if (iv->nframes) {
		copy->frames = malloc(iv->nframes * sizeof(*copy->frames));
		if (!copy->frames)
			return -1;
		memcpy(copy->frames, iv->frames, iv->nframes * sizeof(*copy->frames));
	}
	l->n++;
	return 0;
}

int analysis_set_exact_gc(struct analysis *a, int pid)
{
	if (analysis_gc_is_exact(a, pid))
		return 0;
	if (GROW_ARRAY(a->exact_gc_pids, a->exact_cap, a->nexact + 1))
		return -1;
	a->exact_gc_pids[a->nexact++] = pid;
	return 0;
}

int analysis_gc_is_exact(const struct analysis *a, int pid)
{
	size_t i;

	for (i = 0; i < a->nexact; i++)
		if (a->exact_gc_pids[i] == pid)
			return 1;
	return 0;
}

int analysis_reason_state(int reason)
{
	return state_of_reason(reason);
}

static uint64_t thread_hash(int pid, int tid)
{
	int key[2] = { pid, tid };

	return fnv1a(FNV1A_BASIS, key, sizeof(key));
}

static size_t thread_entry(const struct analysis *a, int pid, int tid)
{
	struct hash_probe p;
	size_t e;

	for (e = hash_index_first(&a->totals_index, thread_hash(pid, tid), &p);
	     e != HASH_INDEX_NONE; e = hash_index_next(&p))
		if (a->totals[e].pid == pid && a->totals[e].tid == tid)
			break;
	return e;
}

static struct thread_totals *totals_of(struct analysis *a, int pid, int tid)
{
	size_t e = thread_entry(a, pid, tid);

	if (e != HASH_INDEX_NONE)
		return &a->totals[e];
	if (GROW_ARRAY(a->totals, a->totals_cap, a->ntotals + 1) ||
	    hash_index_add(&a->totals_index, thread_hash(pid, tid), a->ntotals))
		return NULL;
	memset(&a->totals[a->ntotals], 0, sizeof(*a->totals));
	a->totals[a->ntotals].pid = pid;
	a->totals[a->ntotals].tid = tid;
	return &a->totals[a->ntotals++];
}

static const struct thread_totals *find_totals(const struct analysis *a, int pid, int tid)
{
	size_t e = thread_entry(a, pid, tid);

	return e != HASH_INDEX_NONE ? &a->totals[e] : NULL;
}

int analysis_has_thread(const struct analysis *a, int pid, int tid)
{
	return find_totals(a, pid, tid) != NULL;
}

int analysis_add_totals(struct analysis *a, int pid, int tid, int state, int own_gc,
			uint64_t count, uint64_t ns)
{
	struct thread_totals *t = totals_of(a, pid, tid);

	if (!t || state < 0 || state >= STATE_MAX)
		return -1;
	if (own_gc)
		t->own_gc_ns += ns;
	else
		t->ns[state] += ns;
	if (state != STATE_ON_CPU)	/* runs are not off-CPU intervals */
		a->intervals += count;
	return 0;
}

static struct thread_states *states_of(struct thread_states **v, size_t *n, size_t *cap,
				       int pid, int tid)
{
	size_t i;

	for (i = 0; i < *n; i++)
		if ((*v)[i].pid == pid && (*v)[i].tid == tid)
			return &(*v)[i];
	if (grow_array((void **)v, cap, *n + 1, sizeof(**v)))
		return NULL;
	memset(&(*v)[*n], 0, sizeof(**v));
	(*v)[*n].pid = pid;
	(*v)[*n].tid = tid;
	return &(*v)[(*n)++];
}

/* On-CPU time from the kernel's exact total where there is one (else from
 * the samples), less the time on the CPU inside the thread's collections,
 * which the GC column has: with exact pauses, the pauses less the time the
 * collector spent off the CPU; else the samples taken in collections. */
static void settle_on_cpu(const struct analysis *a, struct thread_states *ts,
			  const struct thread_totals *t, uint64_t sampled_on, uint64_t sampled_gc)
{
	uint64_t exact = t ? t->ns[STATE_ON_CPU] : 0, in_gc;

	if (!exact) {
		ts->ns[STATE_ON_CPU] = sampled_on;
		return;
	}
	if (!analysis_gc_is_exact(a, ts->pid))
		in_gc = sampled_gc;
	else
		in_gc = ts->ns[STATE_GC] > t->own_gc_ns ? ts->ns[STATE_GC] - t->own_gc_ns : 0;
	ts->ns[STATE_ON_CPU] = exact > in_gc ? exact - in_gc : 0;
}

size_t analysis_thread_states(const struct analysis *a, const struct profile *p,
			      struct thread_states **out)
{
	struct thread_states *ts;
	uint64_t *sampled;	/* per thread of the table: [on-CPU, in GC] */
	size_t i, j, n = 0, cap = 0, scap = 0;

	*out = NULL;
	sampled = NULL;
	for (i = 0; i < p->nthreads; i++) {
		const struct thread_profile *t = &p->threads[i];
		struct sample_iter it;
		struct sample s;

		ts = states_of(out, &n, &cap, t->pid, t->tid);
		if (!ts || grow_array((void **)&sampled, &scap, 2 * n, sizeof(*sampled)))
			break;
		sampled[2 * (ts - *out)] = sampled[2 * (ts - *out) + 1] = 0;
		sample_iter_init(&it, p, t);
		while (sample_iter_next(&it, &s)) {
			if (s.state == STATE_ON_CPU)
				sampled[2 * (ts - *out)] += s.weight_ns;
			/* exact collections are counted from the pauses below */
			else if (s.state == STATE_GC && !analysis_gc_is_exact(a, t->pid))
				sampled[2 * (ts - *out) + 1] += s.weight_ns;
		}
		ts->ns[STATE_GC] = sampled[2 * (ts - *out) + 1];
	}
	for (i = 0; i < a->gcs.n; i++) {
		const struct interval *g = &a->gcs.v[i];

		ts = states_of(out, &n, &cap, g->pid, g->tid);
		if (ts && analysis_gc_is_exact(a, g->pid))
			ts->ns[STATE_GC] += g->end_ns - g->start_ns;
	}
	for (i = 0; i < a->ntotals; i++) {
		const struct thread_totals *t = &a->totals[i];

		/* threads with nothing but off-CPU time are still threads of the table */
		ts = states_of(out, &n, &cap, t->pid, t->tid);
		for (j = 0; ts && j < STATE_MAX; j++)
			if (j != STATE_ON_CPU)
				ts->ns[j] += t->ns[j];
		/* a collector off the CPU mid-collection: with exact pauses that
		 * time is already the pause's */
		if (ts && !analysis_gc_is_exact(a, t->pid))
			ts->ns[STATE_OTHER] += t->own_gc_ns;
	}
	for (i = 0; i < n; i++) {
		const struct thread_totals *t = find_totals(a, (*out)[i].pid, (*out)[i].tid);
		int had = sampled && 2 * i + 1 < scap && i < p->nthreads;

		settle_on_cpu(a, &(*out)[i], t, had ? sampled[2 * i] : 0, had ? sampled[2 * i + 1] : 0);
		for (j = 0; j < STATE_MAX; j++)
			(*out)[i].observed_ns += (*out)[i].ns[j];
	}
	free(sampled);
	return n;
}

const char *state_marker(int state)
{
	const char *marker = state_spelling(state)->marker;

	return marker ? marker : state_table[STATE_OTHER].marker;
}

struct piece {
	size_t sample;		/* whose stack */
	uint64_t start_ns, weight_ns;
};

struct fit {
	struct sample *v;	/* the thread's samples, sorted */
	size_t n;
	size_t next_anchor;	/* first exact sample not yet passed */
	uint64_t cursor;	/* where the next sample can start */
	struct piece *extra;	/* pieces after the first, added at the end */
	size_t nextra, extra_cap;
};

/* The first exact sample at index >= *from that ends after at, or NULL. */
static const struct sample *next_anchor(struct fit *f, uint64_t at)
{
	for (; f->next_anchor < f->n; f->next_anchor++) {
		const struct sample *s = &f->v[f->next_anchor];

		if (s->exact && s->start_ns + s->weight_ns > at)
			return s;
	}
	return NULL;
}

/* Places sample i at its time or after the previous one, its whole weight,
 * cut around the exact samples in the way (the pieces past the first become
 * samples of their own). */
static int place(struct fit *f, size_t i)
{
	struct sample *s = &f->v[i];
	uint64_t at = s->start_ns > f->cursor ? s->start_ns : f->cursor, left = s->weight_ns;
	int first = 1;

	while (left) {
		const struct sample *a = next_anchor(f, at);
		uint64_t room = !a ? left : a->start_ns > at ? a->start_ns - at : 0;
		uint64_t take = room < left ? room : left;

		if (take && first) {
			s->start_ns = at;
			s->weight_ns = take;
			first = 0;
		} else if (take) {
			if (GROW_ARRAY(f->extra, f->extra_cap, f->nextra + 1))
				return -1;
			f->extra[f->nextra++] = (struct piece){ i, at, take };
		}
		left -= take;
		at += take;
		if (left && a)
			at = a->start_ns + a->weight_ns;
	}
	f->cursor = at;
	return 0;
}

/* The extra pieces as samples after the others. */
static int add_pieces(struct fit *f)
{
	struct sample *v;
	size_t i;

	if (!f->nextra)
		return 0;
	v = realloc(f->v, (f->n + f->nextra) * sizeof(*v));
	if (!v)
		return -1;
	f->v = v;
	for (i = 0; i < f->nextra; i++) {
		v[f->n + i] = v[f->extra[i].sample];
		v[f->n + i].start_ns = f->extra[i].start_ns;
		v[f->n + i].weight_ns = f->extra[i].weight_ns;
	}
	f->n += f->nextra;
	return 0;
}

/* One thread at a time: its samples decoded, fitted, stored back. */
static int fit_thread(struct profile *p, struct thread_profile *t)
{
	struct fit f = { .n = t->nsamples };
	size_t i;
	int rc = 0;

	f.v = profile_thread_samples(p, t);
	if (!f.v)
		return -1;
	profile_sort_samples(f.v, f.n);
	for (i = 0; i < f.n && !rc; i++)
		if (!f.v[i].exact)
			rc = place(&f, i);
	if (!rc)
		rc = add_pieces(&f);
	if (!rc) {
		/* placing moved samples: back in time order */
		profile_sort_samples(f.v, f.n);
		rc = profile_thread_set_samples(p, t, f.v, f.n);
	}
	free(f.extra);
	free(f.v);
	return rc;
}

int analysis_fit_timeline(struct profile *p)
{
	size_t i;
	int rc = 0;

	for (i = 0; i < p->nthreads; i++)
		rc |= fit_thread(p, &p->threads[i]);
	return rc;
}

uint32_t analysis_idle_markers(struct profile *p, uint32_t *ids, uint32_t n, int state, int gen)
{
	char gc_name[32];

	/* a collector off the CPU mid-collection: the time is the pause's too */
	if (gen >= 0) {
		ids[n++] = profile_frame(p, state_gc_marker(gen, gc_name, sizeof(gc_name)), NULL, 0,
					 FRAME_MARKER);
	}
	ids[n++] = profile_frame(p, state_marker(state), NULL, 0, FRAME_MARKER);
	return n;
}

int analysis_add_idle_samples(const struct analysis *a, struct profile *p)
{
	uint32_t *ids = NULL;
	size_t i, ids_cap = 0;
	int rc = 0;

	for (i = 0; i < a->waits.n; i++) {
		const struct interval *w = &a->waits.v[i];
		struct thread_profile *t = profile_thread(p, w->pid, w->tid);
		struct sample s = { .start_ns = w->start_ns, .weight_ns = w->end_ns - w->start_ns,
				    .state = w->state, .exact = 1, .label = w->label };

		/* the frames and up to two marker frames */
		if (GROW_ARRAY(ids, ids_cap, w->nframes + 2)) {
			rc = -1;
			break;
		}
		if (!t || !s.weight_ns)
			continue;
		if (w->nframes)
			memcpy(ids, w->frames, w->nframes * sizeof(*ids));
		s.frames = ids;
		s.nframes = analysis_idle_markers(p, ids, w->nframes, w->state, w->generation);
		profile_add_sample(p, t, &s);
	}
	free(ids);
	return rc;
}
