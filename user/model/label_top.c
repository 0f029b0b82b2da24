// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <stdlib.h>
#include <string.h>
#include "grow.h"
#include "hash.h"
#include "hash_index.h"
#include "label_top.h"

static uint64_t frame_fn_hash(const struct frame_info *fr)
{
	return fnv1a_str(fnv1a_str(FNV1A_BASIS, fr->name ? fr->name : ""),
			 fr->file ? fr->file : "");
}

static int same_fn(const struct frame_info *a, const struct frame_info *b)
{
	return !strcmp(a->name ? a->name : "", b->name ? b->name : "") &&
	       !strcmp(a->file ? a->file : "", b->file ? b->file : "");
}

/* Each frame's function: the first frame of the same name and file. */
static int map_functions(struct label_top *lt, const struct profile *p)
{
	struct hash_index fns = { 0 };
	struct hash_probe probe;
	size_t i, e;
	uint64_t h;

	lt->fn_of_frame = malloc((p->nframes + 1) * sizeof(*lt->fn_of_frame));
	if (!lt->fn_of_frame || hash_index_reserve(&fns, p->nframes))
		return -1;
	for (i = 0; i < p->nframes; i++) {
		h = frame_fn_hash(&p->frames[i]);
		for (e = hash_index_first(&fns, h, &probe); e != HASH_INDEX_NONE;
		     e = hash_index_next(&probe))
			if (same_fn(&p->frames[e], &p->frames[i]))
				break;
		if (e == HASH_INDEX_NONE) {
			hash_index_add(&fns, h, i);	/* reserved */
			e = i;
		}
		lt->fn_of_frame[i] = e;
	}
	lt->nframes = p->nframes;
	hash_index_free(&fns);
	return 0;
}

static uint64_t entry_hash(uint32_t value, uint32_t frame)
{
	uint64_t key = (uint64_t)value << 32 | frame;

	return fnv1a(FNV1A_BASIS, &key, sizeof(key));
}

/* The entry of (value, function), made if new; NULL when out of memory. */
static struct label_fn *entry(struct label_top *lt, uint32_t value, uint32_t frame)
{
	uint64_t h = entry_hash(value, frame);
	struct hash_probe p;
	struct label_fn *e;
	size_t i;

	for (i = hash_index_first(&lt->index, h, &p); i != HASH_INDEX_NONE;
	     i = hash_index_next(&p)) {
		e = &lt->v[i];
		if (e->value == value && e->frame == frame)
			return e;
	}
	if (GROW_ARRAY(lt->v, lt->cap, lt->n + 1) || hash_index_add(&lt->index, h, lt->n))
		return NULL;
	e = &lt->v[lt->n++];
	memset(e, 0, sizeof(*e));
	e->value = value;
	e->frame = frame;
	e->last_sample = UINT64_MAX;
	return e;
}

/* Adds sample number k's stack under value: self to its innermost frame,
 * total to each function once. */
static int add_stack(struct label_top *lt, uint32_t value, const struct sample *s, uint64_t k)
{
	struct label_fn *e;
	uint32_t i, fn;

	for (i = 0; i < s->nframes; i++) {
		if (s->frames[i] >= lt->nframes)
			continue;	/* an id from no interned frame: no name */
		fn = lt->fn_of_frame[s->frames[i]];
		e = entry(lt, value, fn);
		if (!e)
			return -1;
		if (e->last_sample != k) {
			e->total_ns += s->weight_ns;
			e->last_sample = k;
		}
		if (i + 1 == s->nframes)
			e->self_ns += s->weight_ns;
	}
	return 0;
}

static int add_thread(struct label_top *lt, const struct profile *p, const struct label_table *t,
		      const struct thread_profile *tp, uint64_t *k)
{
	struct sample_iter it;
	struct sample s;
	uint32_t id;
	int hops;

	sample_iter_init(&it, p, tp);
	while (sample_iter_next(&it, &s)) {
		(*k)++;
		if (!s.label || (s.state != STATE_ON_CPU && s.state != STATE_GC))
			continue;
		/* the sample's value and the one it derives (dask_key, dask_prefix) */
		for (hops = 0, id = s.label - 1; id < t->n && hops < 2; hops++, id = t->v[id].derived)
			if (t->v[id].series && add_stack(lt, id, &s, *k))
				return -1;
	}
	return 0;
}

int label_top_build(struct label_top *lt, const struct profile *p, const struct label_table *t)
{
	uint64_t k = 0;
	size_t i;

	memset(lt, 0, sizeof(*lt));
	if (map_functions(lt, p))
		goto fail;
	for (i = 0; i < p->nthreads; i++)
		if (add_thread(lt, p, t, &p->threads[i], &k))
			goto fail;
	return 0;
fail:
	label_top_free(lt);
	return -1;
}

static int by_self_desc(const void *x, const void *y)
{
	const struct label_fn *a = *(const struct label_fn *const *)x;
	const struct label_fn *b = *(const struct label_fn *const *)y;

	if (a->self_ns != b->self_ns)
		return a->self_ns < b->self_ns ? 1 : -1;
	if (a->total_ns != b->total_ns)
		return a->total_ns < b->total_ns ? 1 : -1;
	return a->frame < b->frame ? -1 : a->frame > b->frame;
}

size_t label_top_of(const struct label_top *lt, uint32_t value, const struct label_fn **out,
		    size_t max)
{
	size_t i, n = 0, j;
	const struct label_fn *e;

	if (!max)
		return 0;
	/* keeps the max best seen so far, sorted: one pass, no allocation */
	for (i = 0; i < lt->n; i++) {
		e = &lt->v[i];
		if (e->value != value || !e->self_ns)
			continue;
		if (n == max && by_self_desc(&e, &out[n - 1]) >= 0)
			continue;
		j = n < max ? n++ : n - 1;
		while (j > 0 && by_self_desc(&e, &out[j - 1]) < 0) {
			out[j] = out[j - 1];
			j--;
		}
		out[j] = e;
	}
	return n;
}

void label_top_free(struct label_top *lt)
{
	free(lt->fn_of_frame);
	free(lt->v);
	hash_index_free(&lt->index);
	memset(lt, 0, sizeof(*lt));
}
