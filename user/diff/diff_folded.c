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
#include "grow.h"

struct fold_index {
	size_t *slots;		/* stack index + 1, 0 empty */
	size_t nslots;
};

static size_t *slot_of(const struct fold_index *ix, const struct folded *fo, const char *key)
{
	size_t i = hash_first_slot(fnv1a_str(FNV1A_BASIS, key), ix->nslots);

	while (ix->slots[i] && strcmp(fo->stacks[ix->slots[i] - 1], key))
		i = hash_next_slot(i, ix->nslots);
	return &ix->slots[i];
}

static int grow(struct fold_index *ix, struct folded *fo)
{
	struct fold_index bigger = { .nslots = ix->nslots ? ix->nslots * 2 : 1024 };
	/* the index stays at most half full: room for nslots / 2 stacks; the
	 * three arrays share fo->cap, each grows from it to the same size */
	size_t i, need = bigger.nslots / 2, cap_stacks = fo->cap, cap_a = fo->cap, cap_b = fo->cap;

	if (GROW_ARRAY(fo->stacks, cap_stacks, need) || GROW_ARRAY(fo->ns[0], cap_a, need) ||
	    GROW_ARRAY(fo->ns[1], cap_b, need))
		return -1;
	bigger.slots = calloc(bigger.nslots, sizeof(size_t));
	if (!bigger.slots)
		return -1;
	fo->cap = cap_b;
	for (i = 0; i < fo->n; i++)
		*slot_of(&bigger, fo, fo->stacks[i]) = i + 1;
	free(ix->slots);
	*ix = bigger;
	return 0;
}

static int add_stack(struct fold_index *ix, struct folded *fo, const char *key,
		     int side, double v)
{
	size_t *slot;

	if (fo->n * 2 >= ix->nslots && grow(ix, fo))
		return -1;
	slot = slot_of(ix, fo, key);
	if (!*slot) {
		fo->stacks[fo->n] = strdup(key);
		if (!fo->stacks[fo->n])
			return -1;
		fo->ns[0][fo->n] = fo->ns[1][fo->n] = 0;
		*slot = ++fo->n;
	}
	fo->ns[side][*slot - 1] += v;
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

static int fold_side(struct fold_index *ix, struct folded *fo, const struct diff *d,
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
	struct fold_index ix = { 0 };
	size_t len = 1 << 16;
	char *buf = malloc(len);
	int err = !buf;

	memset(fo, 0, sizeof(*fo));
	err = err || grow(&ix, fo) ||
	      fold_side(&ix, fo, d, 0, buf, len) || fold_side(&ix, fo, d, 1, buf, len) ||
	      sort_folded(fo);
	free(ix.slots);
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
