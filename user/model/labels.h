/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * --label NAME=FUNCTION:ARGUMENT: the time of every sample, off-CPU
 * interval and collection whose stack held a labelled frame, per value of
 * the label, in the states of the per-thread table. The kernel reads the
 * value with the stack (bpf/label.bpf.c); label_format() shows it as text.
 * A value may derive another label's (--dask: dask_prefix from dask_key).
 */
#ifndef EP_LABELS_H
#define EP_LABELS_H
#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>
#include "ebpfprof.h"
#include "hash_index.h"
#include "label_series.h"
#include "states.h"

/* Distinct values kept apart per label and recording: a target can make a
 * new value for every call; past this they share one, LABEL_OTHER, or one
 * per derived value ("[other values: inc]"). */
#define LABEL_VALUES_MAX	20000
#define LABEL_OTHER		"[other values]"
/* The longest text a value is shown as (a tuple of four items). */
#define LABEL_TEXT_MAX		256
#define LABEL_NONE		UINT32_MAX
/* Values of a label that keep a series over time (label_series.h): the
 * first ones of each label others do not derive from (dask_prefix, not
 * dask_key: a key per task). */
#define LABEL_SERIES_VALUES	32

struct label_value {
	int label;			/* index of its label's name */
	char *value;			/* as label_format() shows it */
	uint32_t derived;		/* the value it derives, LABEL_NONE: none */
	uint64_t ns[STATE_MAX];		/* indexed by enum sample_state */
	uint64_t samples;		/* on-CPU samples (in GC or not) */
	uint64_t gc_count, gc_ns;	/* collections that ran under it */
	uint64_t *series;		/* its time per bin and state, or NULL */
};

/* Makes the value of a derived label from its source (dask_prefix from a
 * key's str, NULL when the key is no str). */
typedef void (*label_derive_fn)(const char *value, char *out, size_t len);

struct label_table {
	char *names[2 * EP_MAX_LABELS];
	int nnames;
	int derive_to[2 * EP_MAX_LABELS];	/* a label's derived label, -1: none */
	label_derive_fn derive[2 * EP_MAX_LABELS];
	struct label_value *v;
	size_t n, cap;
	struct hash_index index;	/* v by (label, text) */
	size_t per_label[2 * EP_MAX_LABELS];	/* values of each label */
	size_t with_series[2 * EP_MAX_LABELS];	/* of those, with a series */
	struct label_clock clock;		/* the series' bins */
};

void label_table_init(struct label_table *t);
void label_table_free(struct label_table *t);
/* A new label's index, or -1 (too many, out of memory). */
int label_table_add_name(struct label_table *t, const char *name);
/* Label `from`'s values also count under label `to`, as fn makes them. */
void label_table_derive(struct label_table *t, int from, int to, label_derive_fn fn);
/* The id of (label, text), kept if new, with its derived value made from
 * source; LABEL_NONE when out of memory. */
uint32_t label_intern(struct label_table *t, int label, const char *text, const char *source);
/* Adds ns of state (a sample when sample is set) under id and its derived,
 * spent from start_ns on (since the recording's start), for their series. */
void label_add_time(struct label_table *t, uint32_t id, int state, uint64_t start_ns,
		    uint64_t ns, int sample);
/* Adds a collection of ns under id and its derived. */
void label_add_gc(struct label_table *t, uint32_t id, uint64_t ns);
/* Forgets the figures, keeps the values (their ids are in stacks kept). */
void label_table_next_period(struct label_table *t);
/* The value's total time in the states of the thread table. */
uint64_t label_value_total(const struct label_value *v);
/* The value read by the kernel as text: a str in quotes when inside a
 * tuple, an int in decimal, a tuple as Python shows it, anything else as
 * <type>. Bytes outside printable ASCII are shown as \xNN. */
void label_format(const struct ep_label_blob *b, char *out, size_t len);
/* One --label NAME=FUNCTION:ARGUMENT. */
#define LABEL_NAME_MAX		32
#define LABEL_FUNCTION_MAX	128

struct label_spec {
	char name[LABEL_NAME_MAX];
	char function[LABEL_FUNCTION_MAX];	/* a qualified name, or a plain one */
	int arg;				/* index among the arguments */
};

/* Parses arg into *out: 0, or -1 with a one-line reason in err. */
int label_spec_parse(const char *arg, struct label_spec *out, char *err, size_t errlen);
/* 1 if a code object named `name` (its co_qualname, 3.11+, or co_name) is
 * function `function`: the same name, or a qualified name ending in
 * ".function" when function is a plain name. */
int label_function_matches(const char *function, const char *name);

/* The value of `label` a sample's label (its value's id + 1, 0: none)
 * stands for: that value, or the one it derives; LABEL_NONE if neither. */
uint32_t label_value_under(const struct label_table *t, uint32_t sample_label, int label);
/* The index of the label called name, or -1. */
int label_table_find(const struct label_table *t, const char *name);

/* The value's str (alone, or a tuple's first item) into buf, as text
 * without quotes; NULL when it is no str. */
const char *label_source(const struct ep_label_blob *b, char *buf, size_t len);

#endif
