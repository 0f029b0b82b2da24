// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <stdlib.h>
#include <string.h>
#include "grow.h"
#include "top_model.h"

void top_model_init(struct top_model *m)
{
	memset(m, 0, sizeof(*m));
	m->by_label = -1;
}

void top_model_by(struct top_model *m, int label)
{
	m->by_label = label;
}

static uint64_t value_time(const uint64_t *ns)
{
	uint64_t total = 0;
	int s;

	for (s = 0; s < STATE_RECORDED; s++)
		total += ns[s];
	return total;
}

/* The --by label's values with the most time in the interval, most first:
 * the label table holds the interval's figures (released after each). */
static void take_values(struct top_model *m, const struct analysis *a)
{
	const struct label_table *t = &a->labels;
	struct top_value v;
	size_t i, j;

	m->nvalues = 0;
	for (i = 0; m->by_label >= 0 && i < t->n; i++) {
		if (t->v[i].label != m->by_label || !label_value_total(&t->v[i]))
			continue;
		v.id = i;
		memcpy(v.ns, t->v[i].ns, sizeof(v.ns));
		if (m->nvalues == TOP_VALUES_MAX &&
		    value_time(m->values[m->nvalues - 1].ns) >= value_time(v.ns))
			continue;
		j = m->nvalues < TOP_VALUES_MAX ? m->nvalues++ : m->nvalues - 1;
		for (; j > 0 && value_time(m->values[j - 1].ns) < value_time(v.ns); j--)
			m->values[j] = m->values[j - 1];
		m->values[j] = v;
	}
}

void top_model_free(struct top_model *m)
{
	free(m->fns);
	free(m->stamp);
	free(m->threads);
	free(m->sample_cursor);
	free(m->holders);
	memset(m, 0, sizeof(*m));
}

/* grow_array(), then the items from n to want zeroed and counted in n. */
static int grow_zeroed(void **arr, size_t *cap, size_t *n, size_t want, size_t size)
{
	if (want <= *n)
		return 0;
	if (grow_array(arr, cap, want, size))
		return -1;
	memset((char *)*arr + *n * size, 0, (want - *n) * size);
	*n = want;
	return 0;
}

static int grow_fns(struct top_model *m, size_t nframes)
{
	size_t nstamps = m->nfns, i;

	/* the stamps first: fns' count is both arrays' length */
	if (grow_zeroed((void **)&m->stamp, &m->stamp_cap, &nstamps, nframes, sizeof(*m->stamp)) ||
	    grow_zeroed((void **)&m->fns, &m->fns_cap, &m->nfns, nframes, sizeof(*m->fns)))
		return -1;
	for (i = 0; i < m->nfns; i++)
		m->fns[i].frame = i;
	return 0;
}

struct top_thread *top_model_thread(struct top_model *m, int pid, int tid)
{
	struct top_thread *t;
	size_t i;

	for (i = 0; i < m->nthreads; i++)
		if (m->threads[i].pid == pid && m->threads[i].tid == tid)
			return &m->threads[i];
	if (GROW_ARRAY(m->threads, m->threads_cap, m->nthreads + 1))
		return NULL;
	t = &m->threads[m->nthreads++];
	memset(t, 0, sizeof(*t));
	t->pid = pid;
	t->tid = tid;
	return t;
}

/* Own time to the innermost frame, total time once to each function on the
 * stack (a recursive function is not counted twice). */
static void take_sample(struct top_model *m, const struct sample *s)
{
	uint32_t i, id;

	m->serial++;
	for (i = 0; i < s->nframes; i++) {
		id = s->frames[i];
		if (id >= m->nfns || m->stamp[id] == m->serial)
			continue;
		m->stamp[id] = m->serial;
		m->fns[id].total_ns += s->weight_ns;
		m->fns[id].total_all += s->weight_ns;
	}
	id = s->nframes ? s->frames[s->nframes - 1] : UINT32_MAX;
	if (id < m->nfns) {
		m->fns[id].own_ns += s->weight_ns;
		m->fns[id].own_all += s->weight_ns;
	}
}

static int take_samples(struct top_model *m, const struct profile *p)
{
	struct top_thread *tt;
	size_t i, j;

	if (grow_zeroed((void **)&m->sample_cursor, &m->cursors_cap, &m->ncursors, p->nthreads,
			sizeof(size_t)))
		return -1;
	for (i = 0; i < p->nthreads; i++) {
		const struct thread_profile *t = &p->threads[i];
		struct sample_iter it;
		struct sample s;

		tt = top_model_thread(m, t->pid, t->tid);
		if (!tt)
			return -1;
		sample_iter_init(&it, p, t);
		for (j = 0; sample_iter_next(&it, &s); j++) {
			if (j < m->sample_cursor[i] || s.state == STATE_IDLE)
				continue;	/* taken by an earlier update */
			take_sample(m, &s);
		}
		m->sample_cursor[i] = t->nsamples;
	}
	return 0;
}

/*
 * Each thread's time in each state over the interval, as a recording of it
 * would show it (analysis_thread_states): the kernel's exact totals, on-CPU
 * and every off-CPU reason, however short the runs and waits, plus the GC
 * pauses; the samples only where the kernel has no total. The caller has
 * the kernel deliver its totals up to end_ns first (session_cut_period).
 */
static int take_states(struct top_model *m, const struct profile *p, const struct analysis *a)
{
	struct thread_states *ts;
	struct top_thread *tt;
	size_t n = analysis_thread_states(a, p, &ts), i;
	int j, rc = 0;

	for (i = 0; i < n && !rc; i++) {
		tt = top_model_thread(m, ts[i].pid, ts[i].tid);
		if (!tt) {
			rc = -1;
			break;
		}
		for (j = 0; j < STATE_MAX; j++) {
			tt->ns[j] += ts[i].ns[j];
			tt->all[j] += ts[i].ns[j];
		}
	}
	free(ts);
	return rc;
}

static void take_gcs(struct top_model *m, const struct analysis *a)
{
	const struct interval *iv;
	uint64_t d;

	for (; m->gc_cursor < a->gcs.n; m->gc_cursor++) {
		iv = &a->gcs.v[m->gc_cursor];
		d = iv->end_ns > iv->start_ns ? iv->end_ns - iv->start_ns : 0;
		m->gc_window++;
		m->gc_all++;
		if (d > m->gc_longest_window)
			m->gc_longest_window = d;
		if (d > m->gc_longest_all)
			m->gc_longest_all = d;
	}
}

/* The holder's heaviest innermost frame among its samples not taken yet
 * (this interval's), those holding the GIL first. */
static void holder_frame(struct top_model *m, const struct profile *p, struct top_holder *h)
{
	uint64_t best = 0, *w = calloc(m->nfns + 1, sizeof(*w));
	size_t i, j;
	int pass;

	for (i = 0; w && i < p->nthreads && i < m->ncursors; i++) {
		const struct thread_profile *t = &p->threads[i];
		struct sample_iter it;
		struct sample s;

		if (t->pid != h->pid || t->tid != h->holder)
			continue;
		for (pass = 0; pass < 2 && !best; pass++) {
			sample_iter_init(&it, p, t);
			for (j = 0; sample_iter_next(&it, &s); j++)
				if (j >= m->sample_cursor[i] && s.state == STATE_ON_CPU && s.nframes &&
				    s.frames[s.nframes - 1] < m->nfns && (pass || s.holds_gil))
					w[s.frames[s.nframes - 1]] += s.weight_ns;
			for (j = 0; j < m->nfns; j++) {
				if (w[j] > best) {
					best = w[j];
					h->frame = j;
				}
			}
		}
	}
	h->has_frame = best > 0;
	free(w);
}

/* The GIL blame drained since the last update, per (waiter, holder). */
static int take_blame(struct top_model *m, const struct profile *p, const struct analysis *a)
{
	size_t i, j;

	for (j = 0; j < m->nholders; j++)
		m->holders[j].ns = 0;
	for (i = 0; i < a->blame.n; i++) {
		const struct blame_chunk *c = &a->blame.v[i];

		for (j = 0; j < m->nholders; j++)
			if (m->holders[j].pid == c->pid && m->holders[j].waiter == c->waiter &&
			    m->holders[j].holder == c->holder)
				break;
		if (j == m->nholders) {
			if (GROW_ARRAY(m->holders, m->holders_cap, m->nholders + 1))
				return -1;
			m->holders[m->nholders++] = (struct top_holder){ .pid = c->pid,
				.waiter = c->waiter, .holder = c->holder };
		}
		m->holders[j].ns += c->ns;
		m->holders[j].all += c->ns;
	}
	for (j = 0; j < m->nholders; j++)
		if (m->holders[j].ns && m->holders[j].holder > 0)
			holder_frame(m, p, &m->holders[j]);
	return 0;
}

int top_model_update(struct top_model *m, const struct profile *p, const struct analysis *a,
		     uint64_t end_ns)
{
	size_t i;

	m->window_start_ns = m->window_end_ns;
	m->window_end_ns = end_ns;
	for (i = 0; i < m->nfns; i++)
		m->fns[i].own_ns = m->fns[i].total_ns = 0;
	for (i = 0; i < m->nthreads; i++)
		memset(m->threads[i].ns, 0, sizeof(m->threads[i].ns));
	m->gc_window = 0;
	m->gc_longest_window = 0;
	/* the blame first: its holders' frames are among the samples not yet taken */
	if (grow_fns(m, p->nframes) || take_blame(m, p, a) || take_samples(m, p) ||
	    take_states(m, p, a))
		return -1;
	take_gcs(m, a);
	take_values(m, a);
	return 0;
}

void top_model_release(struct top_model *m, struct profile *p, struct analysis *a)
{
	size_t i;

	for (i = 0; i < p->nthreads && i < m->ncursors; i++) {
		struct thread_profile *t = &p->threads[i];

		/* without the memory to forget them, they are skipped next time */
		if (!profile_thread_forget(p, t, m->sample_cursor[i]))
			m->sample_cursor[i] = 0;
	}
	/* the collections and totals were all taken (the caller is
	 * single-threaded: nothing came in since the update), and the waits
	 * are in the totals: the next interval starts from none */
	analysis_next_period(a);
	m->gc_cursor = 0;
}

static const struct profile *sort_profile;
static enum top_sort sort_key;

static uint64_t key_of(const struct top_fn *f)
{
	switch (sort_key) {
	case TOP_SORT_TOTAL:	return f->total_ns;
	case TOP_SORT_OWN_ALL:	return f->own_all;
	case TOP_SORT_TOTAL_ALL: return f->total_all;
	default:		return f->own_ns;
	}
}

static int fn_cmp(const void *x, const void *y)
{
	const struct top_fn *a = x, *b = y;
	uint64_t ka, kb;
	int c;

	if (sort_key == TOP_SORT_NAME) {
		c = strcmp(sort_profile->frames[a->frame].name, sort_profile->frames[b->frame].name);
		if (c)
			return c;
	} else {
		ka = key_of(a);
		kb = key_of(b);
		if (ka != kb)
			return ka > kb ? -1 : 1;
	}
	/* ties by total: callers (less time of their own) above their callees;
	 * other ties: the busier since the start first; then a stable order */
	if ((sort_key == TOP_SORT_TOTAL || sort_key == TOP_SORT_TOTAL_ALL) &&
	    a->own_all != b->own_all)
		return a->own_all < b->own_all ? -1 : 1;
	if (a->own_all != b->own_all)
		return a->own_all > b->own_all ? -1 : 1;
	if (a->total_all != b->total_all)
		return a->total_all > b->total_all ? -1 : 1;
	return a->frame < b->frame ? -1 : a->frame > b->frame;
}

size_t top_model_sorted(const struct top_model *m, const struct profile *p,
			enum top_sort sort, struct top_fn **out)
{
	struct top_fn *v = malloc((m->nfns ? m->nfns : 1) * sizeof(*v));
	size_t i, n = 0;

	*out = v;
	if (!v)
		return 0;
	for (i = 0; i < m->nfns && i < p->nframes; i++)
		if (m->fns[i].total_all)
			v[n++] = m->fns[i];
	sort_profile = p;
	sort_key = sort;
	qsort(v, n, sizeof(*v), fn_cmp);
	return n;
}
