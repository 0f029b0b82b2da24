// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Both sides' stacks folded ("thread;f;g;h"), per second of recording so
 * runs of different lengths compare, and the differential folded file
 * flamegraph's difffolded tooling reads: "stack count_base count_new", the
 * counts in microseconds per second of recording.
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "diff.h"
#include "hash.h"
#include "hash_index.h"
#include "grow.h"

/* Room for one more stack: the three arrays share fo->cap, each grows
 * from it to the same size. */
static int room_for_one(struct folded *fo)
{
	size_t cap_stacks = fo->cap, cap_a = fo->cap, cap_b = fo->cap;

	if (GROW_ARRAY(fo->stacks, cap_stacks, fo->n + 1) ||
	    GROW_ARRAY(fo->ns[0], cap_a, fo->n + 1) || GROW_ARRAY(fo->ns[1], cap_b, fo->n + 1))
		return -1;
	fo->cap = cap_b;
	return 0;
}

static int add_stack(struct hash_index *ix, struct folded *fo, const char *key,
		     int side, double v)
{
	uint64_t h = fnv1a_str(FNV1A_BASIS, key);
	struct hash_probe p;
	size_t e;

	for (e = hash_index_first(ix, h, &p); e != HASH_INDEX_NONE; e = hash_index_next(&p))
		if (!strcmp(fo->stacks[e], key))
			break;
	if (e == HASH_INDEX_NONE) {
		if (room_for_one(fo))
			return -1;
		fo->stacks[fo->n] = strdup(key);
		if (!fo->stacks[fo->n] || hash_index_add(ix, h, fo->n)) {
			free(fo->stacks[fo->n]);
			return -1;
		}
		fo->ns[0][fo->n] = fo->ns[1][fo->n] = 0;
		e = fo->n++;
	}
	fo->ns[side][e] += v;
	return 0;
}

/* Appends ";name" with the format's separators (';', newline) replaced. */
static size_t put_name(char *buf, size_t used, size_t len, const char *name, int sep)
{
	if (sep && used < len)
		buf[used++] = ';';
	for (; *name && used < len; name++)
		buf[used++] = *name == ';' ? ':' : *name == '\n' ? ' ' : *name;
	return used;
}

/* "thread;f;g", root first; -1 if it does not fit. */
static int fold_sample(char *buf, size_t len, const struct profile *p,
		       const struct thread_profile *t, const struct sample *s)
{
	size_t used = put_name(buf, 0, len, t->name ? t->name : "?", 0);
	uint32_t i;

	for (i = 0; i < s->nframes; i++)
		used = put_name(buf, used, len, p->frames[s->frames[i]].name, 1);
	if (used >= len)
		return -1;
	buf[used] = 0;
	return 0;
}

static int fold_side(struct hash_index *ix, struct folded *fo, const struct diff *d,
		     int side, char *buf, size_t len)
{
	struct sample_iter it;
	struct sample s;
	size_t r, i;

	for (r = 0; r < d->nruns[side]; r++) {
		const struct profile *p = &d->runs[side][r].prof;

		for (i = 0; i < p->nthreads; i++)
			for (sample_iter_init(&it, p, &p->threads[i]); sample_iter_next(&it, &s);) {
				if (fold_sample(buf, len, p, &p->threads[i], &s))
					continue;	/* deeper than any flame graph shows */
				if (add_stack(ix, fo, buf, side, s.weight_ns / d->wall_s[side]))
					return -1;
			}
	}
	return 0;
}

static int by_stack(const void *x, const void *y, void *arg)
{
	const struct folded *fo = arg;

	return strcmp(fo->stacks[*(const size_t *)x], fo->stacks[*(const size_t *)y]);
}

/* Sorts the stacks by name: callers group together, as flame graphs need. */
static int sort_folded(struct folded *fo)
{
	size_t *order = malloc((fo->n + 1) * sizeof(*order)), i;
	char **stacks = malloc((fo->n + 1) * sizeof(*stacks));
	double *a = malloc((fo->n + 1) * sizeof(double)), *b = malloc((fo->n + 1) * sizeof(double));

	if (!order || !stacks || !a || !b) {
		free(order), free(stacks), free(a), free(b);
		return -1;
	}
	for (i = 0; i < fo->n; i++)
		order[i] = i;
	qsort_r(order, fo->n, sizeof(*order), by_stack, fo);
	for (i = 0; i < fo->n; i++) {
		stacks[i] = fo->stacks[order[i]];
		a[i] = fo->ns[0][order[i]];
		b[i] = fo->ns[1][order[i]];
	}
	free(fo->stacks), free(fo->ns[0]), free(fo->ns[1]), free(order);
	fo->stacks = stacks;
	fo->ns[0] = a;
	fo->ns[1] = b;
	fo->cap = fo->n + 1;
	return 0;
}

int diff_fold(const struct diff *d, struct folded *fo)
{
	struct hash_index ix = { 0 };
	size_t len = 1 << 16;
	char *buf = malloc(len);
	int err = !buf;

	memset(fo, 0, sizeof(*fo));
	err = err || fold_side(&ix, fo, d, 0, buf, len) || fold_side(&ix, fo, d, 1, buf, len) ||
	      sort_folded(fo);
	hash_index_free(&ix);
	free(buf);
	return err ? -1 : 0;
}

void folded_free(struct folded *fo)
{
	size_t i;

	for (i = 0; i < fo->n; i++)
		free(fo->stacks[i]);
	free(fo->stacks);
	free(fo->ns[0]);
	free(fo->ns[1]);
	memset(fo, 0, sizeof(*fo));
}

int diff_write_folded(FILE *f, const struct diff *d)
{
	struct folded fo;
	size_t i;

	if (diff_fold(d, &fo))
		return -1;
	/* ns per second of recording -> microseconds per second */
	for (i = 0; i < fo.n; i++)
		fprintf(f, "%s %.0f %.0f\n", fo.stacks[i], fo.ns[0][i] / 1e3, fo.ns[1][i] / 1e3);
	folded_free(&fo);
	return ferror(f) ? -1 : 0;
}
