// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * A run's figures another tool worked out, read from JSON: ebpfprof-dask
 * hands over a cluster's (each role's states and GC, each task prefix's
 * figures) this way, so that the database has one writer, this program,
 * and one schema. The document is input like a recording: every field is
 * checked and bounded, and a bad one is a one-line reason.
 */
#define _GNU_SOURCE
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "history.h"

#define TEXT_MAX 4096		/* a name, a command */
#define VALUE_MAX 1e15		/* seconds (31 million years), counts */

/* The kinds of figure a run may hold (history.h). */
static const char *const figure_kinds[] = {
	"state", "gc", "fn", "holder", "prefix", "prefix_state", "prefix_fn",
};

static int known_kind(const char *kind)
{
	size_t i;

	for (i = 0; i < sizeof(figure_kinds) / sizeof(figure_kinds[0]); i++)
		if (!strcmp(kind, figure_kinds[i]))
			return 1;
	return 0;
}

/* A string of at most TEXT_MAX bytes without a control character, or
 * NULL: the check's keys join a figure's texts with \x1f. */
static const char *text_of(json_t *v)
{
	const char *s = json_string_value(v), *c;

	if (!s || json_string_length(v) > TEXT_MAX || strlen(s) != json_string_length(v))
		return NULL;
	for (c = s; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			return NULL;
	return s;
}

static int take_text(json_t *doc, const char *key, char **out, char *err, size_t errlen)
{
	json_t *v = json_object_get(doc, key);
	const char *s = v ? text_of(v) : "";

	if (!s) {
		snprintf(err, errlen, "\"%s\" is not a string of at most %d bytes without control "
			 "characters", key, TEXT_MAX);
		return -1;
	}
	*out = strdup(s);
	if (!*out)
		snprintf(err, errlen, "out of memory");
	return *out ? 0 : -1;
}

static int take_number(json_t *doc, const char *key, double max, double *out, char *err,
		       size_t errlen)
{
	json_t *v = json_object_get(doc, key);
	double x = json_number_value(v);

	if (!json_is_number(v) || !(x >= 0 && x <= max)) {
		snprintf(err, errlen, "\"%s\" is not a number from 0 to %g", key, max);
		return -1;
	}
	*out = x;
	return 0;
}

/* One figure: [kind, process, thread, name, field, value]. */
static int take_figure(struct hist_run *run, json_t *f, size_t i, char *err, size_t errlen)
{
	const char *t[5];
	json_t *value = json_array_get(f, 5);
	double x = json_number_value(value);
	size_t k;

	if (!json_is_array(f) || json_array_size(f) != 6) {
		snprintf(err, errlen, "figure %zu is not [kind, process, thread, name, field, value]", i);
		return -1;
	}
	for (k = 0; k < 5; k++) {
		t[k] = text_of(json_array_get(f, k));
		if (!t[k]) {
			snprintf(err, errlen, "figure %zu: item %zu is not a string of at most %d bytes "
				 "without control characters", i, k, TEXT_MAX);
			return -1;
		}
	}
	if (!known_kind(t[0])) {
		snprintf(err, errlen, "figure %zu: unknown kind (state, gc, fn, holder, prefix, "
			 "prefix_state, prefix_fn)", i);
		return -1;
	}
	if (!json_is_number(value) || !(x >= 0 && x <= VALUE_MAX)) {
		snprintf(err, errlen, "figure %zu: the value is not a number from 0 to %g", i,
			 VALUE_MAX);
		return -1;
	}
	if (hist_run_add(run, t[0], t[1], t[2], t[3], t[4], x)) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	return 0;
}

static int take_figures(struct hist_run *run, json_t *doc, char *err, size_t errlen)
{
	json_t *figures = json_object_get(doc, "figures");
	size_t i;

	if (!json_is_array(figures) || json_array_size(figures) > HIST_MAX_FIGURES) {
		snprintf(err, errlen, "\"figures\" is not a list of at most %d figures",
			 HIST_MAX_FIGURES);
		return -1;
	}
	for (i = 0; i < json_array_size(figures); i++)
		if (take_figure(run, json_array_get(figures, i), i, err, errlen))
			return -1;
	return 0;
}

static int take_format(json_t *doc, char *err, size_t errlen)
{
	json_t *v = json_object_get(doc, "format");

	if (!json_is_integer(v) || json_integer_value(v) < 1) {
		snprintf(err, errlen, "not a run's figures (no \"format\")");
		return -1;
	}
	if (json_integer_value(v) > HIST_RUN_FORMAT_VERSION) {
		snprintf(err, errlen, "format %lld is newer than this ebpfprof's (%d): use a newer "
			 "ebpfprof", (long long)json_integer_value(v), HIST_RUN_FORMAT_VERSION);
		return -1;
	}
	return 0;
}

static int take_run(struct hist_run *run, json_t *doc, const struct hist_add *a, char *err,
		    size_t errlen)
{
	double at;
	size_t i;

	if (take_format(doc, err, errlen) || take_text(doc, "kind", &run->kind, err, errlen) ||
	    take_text(doc, "host", &run->host, err, errlen) ||
	    take_text(doc, "kernel", &run->kernel, err, errlen) ||
	    take_text(doc, "python", &run->python, err, errlen) ||
	    take_text(doc, "command", &run->command, err, errlen) ||
	    take_text(doc, "source", &run->source, err, errlen) ||
	    take_number(doc, "at", 1e11, &at, err, errlen) ||
	    take_number(doc, "duration_s", 1e9, &run->duration_s, err, errlen) ||
	    take_figures(run, doc, err, errlen))
		return -1;
	if (!run->kind[0]) {
		snprintf(err, errlen, "\"kind\" is empty");
		return -1;
	}
	run->at = (long long)at;
	run->series = strdup(a->series);
	for (i = 0; run->series && i < a->ntags && i < HIST_MAX_TAGS; i++) {
		run->tags[i] = strdup(a->tags[i]);
		if (!run->tags[i])
			break;
		run->ntags++;
	}
	if (!run->series || run->ntags < a->ntags) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	return 0;
}

int hist_run_from_json(struct hist_run *run, const struct hist_add *a, const char *text,
		       size_t len, char *err, size_t errlen)
{
	json_error_t jerr;
	json_t *doc;
	int rc;

	memset(run, 0, sizeof(*run));
	doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!doc) {
		snprintf(err, errlen, "not JSON: %s (line %d)", jerr.text, jerr.line);
		return -1;
	}
	if (!json_is_object(doc)) {
		snprintf(err, errlen, "not a run's figures (not a JSON object)");
		json_decref(doc);
		return -1;
	}
	rc = take_run(run, doc, a, err, errlen);
	json_decref(doc);
	if (rc)
		hist_run_free(run);
	return rc;
}
