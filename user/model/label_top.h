/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The functions each label value spends its on-CPU time in (the recording's
 * labels.NAME.VALUE.functions: a Dask task prefix's top functions), from the
 * profile's samples: self time (the innermost frame) and total time (every
 * frame of the stack, once), per function (a name and file: its frames at
 * any line). Only the values with a series are counted (labels.h), so the
 * table is bounded by them and the functions of the program.
 */
#ifndef EP_LABEL_TOP_H
#define EP_LABEL_TOP_H
#include <stddef.h>
#include <stdint.h>
#include "hash_index.h"
#include "labels.h"
#include "profile.h"

/* A value's time in one function. */
struct label_fn {
	uint32_t value;		/* the value's id in the label table */
	uint32_t frame;		/* the function's first frame id (its name, file) */
	uint64_t self_ns, total_ns;
	uint64_t last_sample;	/* the sample it last counted, for total_ns */
};

struct label_top {
	uint32_t *fn_of_frame;	/* frame id -> its function's first frame id */
	size_t nframes;
	struct label_fn *v;
	size_t n, cap;
	struct hash_index index;	/* v by (value, frame) */
};

/* Counts the on-CPU samples of p (in GC or not) under each value of t with
 * a series: 0, or -1 (out of memory: lt is freed and empty). */
int label_top_build(struct label_top *lt, const struct profile *p, const struct label_table *t);
/* The value's functions with the most self time, up to max, sorted, into
 * out (pointers into lt): how many. */
size_t label_top_of(const struct label_top *lt, uint32_t value, const struct label_fn **out,
		    size_t max);
void label_top_free(struct label_top *lt);

#endif
