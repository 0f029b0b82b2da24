// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Reads a recording back for ebpfprof diff: the speedscope file ebpfprof
 * wrote (frames, one sampled profile per thread) and its "ebpfprof" object
 * (the run's facts, exact time per state per thread, GC statistics). The
 * file is input like any other: every field is checked before use, and a
 * bad one is a one-line error naming the file.
 */
#define _GNU_SOURCE
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "diff.h"

#define MAX_STACK 4096

static const char *str_or(json_t *obj, const char *key, const char *fallback)
{
	const char *s = json_string_value(json_object_get(obj, key));

	return s ? s : fallback;
}

/*
 * The bounds of every number read: each is converted to an integer or summed
 * over up to millions of threads and samples, so each is bounded where it is
 * read, well inside what a double and a uint64_t of nanoseconds hold. The
 * results stay finite: no inf or nan reaches a report.
 */
#define MAX_SECONDS	1e9	/* a duration or a time: 31 years */
#define MIN_DURATION_S	1e-9	/* the writer's resolution: %.9f */
#define MAX_COUNT	1e15	/* samples taken, collections */
#define MAX_WEIGHT_NS	1e15	/* one sample: 11 days */
#define MAX_RATE_HZ	100000

/* A finite number in [0, max] at obj.key into *out (below a tenth of a
 * nanosecond read as 0: the writer has no finer resolution); -1 if absent
 * or anything else. */
static int bounded(json_t *obj, const char *key, double max, double *out)
{
	json_t *v = json_object_get(obj, key);
	double x;

	if (!json_is_number(v))
		return -1;
	x = json_number_value(v);
	if (!(x >= 0 && x <= max))	/* false for nan too */
		return -1;
	*out = x < 1e-10 ? 0 : x;
	return 0;
}

/* An integer in [min, max] at obj.key into *out; -1 if absent or anything else. */
static int bounded_int(json_t *obj, const char *key, int min, int max, int *out)
{
	json_t *v = json_object_get(obj, key);
	json_int_t x = json_integer_value(v);

	if (!json_is_integer(v) || x < min || x > max)
		return -1;
	*out = (int)x;
	return 0;
}

static int read_frames(struct recording *r, json_t *root, char *err, size_t errlen)
{
	json_t *frames = json_object_get(json_object_get(root, "shared"), "frames"), *fr;
	const char *name;
	size_t i;
	json_int_t line;
	int64_t id;

	if (!json_is_array(frames)) {
		snprintf(err, errlen, "no shared.frames array");
		return -1;
	}
	r->nfile_frames = json_array_size(frames);
	r->frame_map = calloc(r->nfile_frames + 1, sizeof(*r->frame_map));
	if (!r->frame_map) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	json_array_foreach(frames, i, fr) {
		name = json_string_value(json_object_get(fr, "name"));
		if (!name) {
			snprintf(err, errlen, "frame %zu has no name", i);
			return -1;
		}
		line = json_integer_value(json_object_get(fr, "line"));
		/* ebpfprof writes no file for markers ([GC gen 2], [GIL wait]...) */
		/* equal frames are one frame: the file's ids map to interned ones */
		id = profile_frame(&r->prof, name, json_string_value(json_object_get(fr, "file")),
				   line > 0 && line < INT32_MAX ? (int)line : 0,
				   json_object_get(fr, "file") ? FRAME_PYTHON : FRAME_MARKER);
		if (id == UINT32_MAX || (size_t)id >= r->prof.nframes) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		r->frame_map[i] = (uint32_t)id;
	}
	return 0;
}

/* Thread 4242 "MainThread", maybe after "proc (pid 12) ": the names only. */
static void profile_names(const char *name, char *thread, size_t tlen,
			  char *process, size_t plen)
{
	const char *q = strchr(name, '"'), *p = strstr(name, " (pid ");
	size_t n;

	snprintf(thread, tlen, "%s", name);
	if (q && q[1]) {
		n = strlen(q + 1);
		snprintf(thread, tlen, "%.*s", (int)(n && q[n] == '"' ? n - 1 : n), q + 1);
	}
	snprintf(process, plen, "%.*s", p ? (int)(p - name) : 0, name);
}

static int read_stack(json_t *ids, uint32_t *out, uint32_t *n, const struct recording *r)
{
	json_t *id;
	size_t i;
	json_int_t v;

	if (!json_is_array(ids))
		return -1;
	*n = 0;
	json_array_foreach(ids, i, id) {
		v = json_integer_value(id);
		if (!json_is_integer(id) || v < 0 || (size_t)v >= r->nfile_frames)
			return -1;
		if (*n < MAX_STACK)
			out[(*n)++] = r->frame_map[v];
	}
	return 0;
}

/* "[GIL holders] name" -> "name" */
static void strip_prefix(char *process, const char *prefix)
{
	size_t n = strlen(prefix);

	if (!strncmp(process, prefix, n))
		memmove(process, process + n, strlen(process + n) + 1);
}

static int read_profile(struct recording *r, struct profile *into, json_t *pr, int index,
			uint32_t *ids, char *err, size_t errlen)
{
	json_t *samples = json_object_get(pr, "samples"), *weights = json_object_get(pr, "weights");
	char thread[256], process[256];
	struct thread_profile *t;
	struct sample s = { .frames = ids };
	uint64_t at = 0;
	size_t i;
	double w;

	if (!json_is_array(samples) || !json_is_array(weights) ||
	    json_array_size(samples) != json_array_size(weights)) {
		snprintf(err, errlen, "profile %d: samples and weights missing or of different lengths", index);
		return -1;
	}
	profile_names(str_or(pr, "name", ""), thread, sizeof(thread), process, sizeof(process));
	if (into == &r->holders)
		strip_prefix(process, GIL_HOLDERS_PREFIX);
	if (into == &r->tasks)
		strip_prefix(process, TASK_SPANS_PREFIX);
	t = profile_new_thread(into, 0, index);	/* one per profile */
	if (!t || !(t->name = strdup(thread)) || !(t->process = strdup(process))) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (i = 0; i < json_array_size(samples); i++) {
		w = json_number_value(json_array_get(weights, i));
		if (!json_is_number(json_array_get(weights, i)) || !(w >= 0) || w > MAX_WEIGHT_NS ||
		    read_stack(json_array_get(samples, i), ids, &s.nframes, r)) {
			snprintf(err, errlen, "profile %d: sample %zu is not a valid stack and weight", index, i);
			return -1;
		}
		s.start_ns = at;
		s.weight_ns = (uint64_t)w;
		at += s.weight_ns;
		if (!s.nframes || !s.weight_ns)
			continue;	/* a gap in the thread's timeline */
		if (profile_add_sample(into, t, &s)) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
	}
	return 0;
}

static int read_profiles(struct recording *r, json_t *root, char *err, size_t errlen)
{
	json_t *profiles = json_object_get(root, "profiles"), *pr;
	uint32_t *ids = malloc(MAX_STACK * sizeof(*ids));
	size_t i;
	int rc = 0;

	if (!ids || !json_is_array(profiles)) {
		snprintf(err, errlen, ids ? "no profiles array" : "out of memory");
		free(ids);
		return -1;
	}
	json_array_foreach(profiles, i, pr) {
		if (strcmp(str_or(pr, "type", ""), "sampled"))
			continue;	/* ebpfprof writes none other */
		/* what made others wait, not a thread's time */
		if (!strncmp(str_or(pr, "name", ""), GIL_HOLDERS_PREFIX, strlen(GIL_HOLDERS_PREFIX)))
			rc = read_profile(r, &r->holders, pr, (int)i, ids, err, errlen);
		/* record --tasks: task-seconds, not a thread's time either */
		else if (!strncmp(str_or(pr, "name", ""), TASK_SPANS_PREFIX, strlen(TASK_SPANS_PREFIX)))
			rc = read_profile(r, &r->tasks, pr, (int)i, ids, err, errlen);
		else
			rc = read_profile(r, &r->prof, pr, (int)i, ids, err, errlen);
		if (rc)
			break;
	}
	free(ids);
	return rc;
}

/* A state name of the recording this table does not know: noted once. */
static void note_unknown_state(struct recording *r, const char *name)
{
	char *list = r->unknown_states;
	size_t used = strlen(list), n = strlen(name);
	const char *at;

	/* the list is "a, b, c": a name counts only as a whole entry (a match
	 * inside another, or one character in, must not look before list) */
	for (at = strstr(list, name); n && at; at = strstr(at + 1, name))
		if ((at == list || (at - list >= 2 && at[-2] == ',' && at[-1] == ' ')) &&
		    (at[n] == ',' || !at[n]))
			return;
	if (used + n + 3 < sizeof(r->unknown_states))
		snprintf(list + used, sizeof(r->unknown_states) - used, "%s%s", used ? ", " : "", name);
	else if (!strstr(list, "...") && used + 6 < sizeof(r->unknown_states))
		snprintf(list + used, sizeof(r->unknown_states) - used, "%s...", used ? ", " : "");
}

static int read_thread(struct recording *r, struct rec_thread *rt, json_t *t, size_t i,
		       char *err, size_t errlen)
{
	json_t *states = json_object_get(t, "states_s"), *v;
	const char *key;
	int s;

	if (bounded_int(t, "pid", 0, INT_MAX, &rt->pid))
		rt->pid = -1;	/* no GC statistics can be its process's */
	if (!json_is_object(states)) {
		snprintf(err, errlen, "thread %zu: no states_s object", i);
		return -1;
	}
	json_object_foreach(states, key, v)
		if (state_by_name(key) < 0)
			note_unknown_state(r, key);
	for (s = 0; s < DIFF_NSTATES; s++) {
		/* a state added or dropped since it was written: said, not fatal */
		if (!json_object_get(states, sample_state_name(s))) {
			r->missing_states |= 1u << s;
			continue;
		}
		if (bounded(states, sample_state_name(s), MAX_SECONDS, &rt->states_s[s])) {
			snprintf(err, errlen, "thread %zu: invalid states_s.%s (not a number of "
				 "seconds in [0, %.0e])", i, sample_state_name(s), MAX_SECONDS);
			return -1;
		}
	}
	return 0;
}

static int read_threads(struct recording *r, json_t *threads, char *err, size_t errlen)
{
	json_t *t;
	size_t i;

	r->threads = calloc(json_array_size(threads) + 1, sizeof(*r->threads));
	if (!r->threads)
		goto oom;
	json_array_foreach(threads, i, t) {
		struct rec_thread *rt = &r->threads[r->nthreads];

		rt->name = strdup(str_or(t, "name", "?"));
		rt->process = strdup(str_or(t, "process", ""));
		r->nthreads++;	/* recording_free() frees what was read */
		if (!rt->name || !rt->process)
			goto oom;
		if (read_thread(r, rt, t, i, err, errlen))
			return -1;
	}
	return 0;
oom:
	snprintf(err, errlen, "out of memory");
	return -1;
}

/* One label's values: {VALUE: {"states_s": {...}, ...}}; a value without
 * a valid states_s is left out (a state missing reads as 0). */
static int read_label(struct recording *r, const char *label, json_t *values,
		      char *err, size_t errlen)
{
	struct rec_label *rl;
	const char *value;
	json_t *v, *states;
	int s;

	json_object_foreach(values, value, v) {
		states = json_object_get(v, "states_s");
		if (!json_is_object(states) || r->nlabels >= DIFF_MAX_LABEL_VALUES)
			continue;
		rl = &r->labels[r->nlabels];
		memset(rl, 0, sizeof(*rl));
		for (s = 0; s < DIFF_NSTATES; s++) {
			if (json_object_get(states, sample_state_name(s)) &&
			    bounded(states, sample_state_name(s), MAX_SECONDS, &rl->states_s[s])) {
				snprintf(err, errlen, "labels.%.40s: invalid states_s.%s (not a number "
					 "of seconds in [0, %.0e])", label, sample_state_name(s), MAX_SECONDS);
				return -1;
			}
		}
		rl->label = strdup(label);
		rl->value = strdup(value);
		r->nlabels++;	/* recording_free() frees what was read */
		if (!rl->label || !rl->value) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
	}
	return 0;
}

/* "labels" (format 3 on): per label and value, its time per state. */
static int read_labels(struct recording *r, json_t *labels, char *err, size_t errlen)
{
	const char *label;
	json_t *values;
	size_t n = 0;

	json_object_foreach(labels, label, values)
		if (json_is_object(values))
			n += json_object_size(values);
	n = n < DIFF_MAX_LABEL_VALUES ? n : DIFF_MAX_LABEL_VALUES;
	r->labels = calloc(n + 1, sizeof(*r->labels));
	if (!r->labels) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	json_object_foreach(labels, label, values)
		if (json_is_object(values) && read_label(r, label, values, err, errlen))
			return -1;
	return 0;
}

static int by_pid(const void *x, const void *y, void *arg)
{
	const struct rec_thread *t = arg;
	size_t a = *(const size_t *)x, b = *(const size_t *)y;

	if (t[a].pid != t[b].pid)
		return t[a].pid < t[b].pid ? -1 : 1;
	return a < b ? -1 : a > b;
}

/* The process name of the first thread of pid: a binary search in the
 * threads' indexes sorted by pid (a GC entry per process, a thread entry per
 * thread: a scan of one per the other would be quadratic). */
static const char *process_of_pid(const struct recording *r, const size_t *order, int pid)
{
	size_t lo = 0, hi = r->nthreads, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (r->threads[order[mid]].pid < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < r->nthreads && r->threads[order[lo]].pid == pid ?
	       r->threads[order[lo]].process : "";
}

static int read_gc(struct rec_gc *rg, json_t *g, size_t i, char *err, size_t errlen)
{
	static const char *const times[] = { "total_s", "p50_s", "p99_s", "max_s" };
	double *dst[] = { &rg->total_s, &rg->p50_s, &rg->p99_s, &rg->max_s };
	size_t k;

	if (bounded_int(g, "generation", -1, 2, &rg->generation)) {
		snprintf(err, errlen, "gc entry %zu: invalid generation (not -1, 0, 1 or 2)", i);
		return -1;
	}
	if (bounded(g, "count", MAX_COUNT, &rg->count)) {
		snprintf(err, errlen, "gc entry %zu: invalid count (not a number in [0, %.0e])", i, MAX_COUNT);
		return -1;
	}
	for (k = 0; k < sizeof(times) / sizeof(times[0]); k++) {
		if (bounded(g, times[k], MAX_SECONDS, dst[k])) {
			snprintf(err, errlen, "gc entry %zu: invalid %s (not a number of seconds in [0, %.0e])",
				 i, times[k], MAX_SECONDS);
			return -1;
		}
	}
	return 0;
}

static int read_gcs(struct recording *r, json_t *gcs, char *err, size_t errlen)
{
	size_t *order = malloc((r->nthreads + 1) * sizeof(*order)), i;
	json_t *g;
	int pid, rc = 0;

	r->gcs = calloc(json_array_size(gcs) + 1, sizeof(*r->gcs));
	if (!order || !r->gcs) {
		free(order);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (i = 0; i < r->nthreads; i++)
		order[i] = i;
	qsort_r(order, r->nthreads, sizeof(*order), by_pid, r->threads);
	json_array_foreach(gcs, i, g) {
		struct rec_gc *rg = &r->gcs[r->ngcs];

		if (bounded_int(g, "pid", 0, INT_MAX, &pid)) {
			snprintf(err, errlen, "gc entry %zu: invalid pid (not a process id)", i);
			rc = -1;
			break;
		}
		rg->process = strdup(process_of_pid(r, order, pid));
		r->ngcs++;
		if (!rg->process) {
			snprintf(err, errlen, "out of memory");
			rc = -1;
			break;
		}
		rc = read_gc(rg, g, i, err, errlen);
		if (rc)
			break;
	}
	free(order);
	return rc;
}

/* A boolean the recording may state: 1, 0, or -1 when it does not. */
static int flag(json_t *obj, const char *key)
{
	json_t *v = json_object_get(obj, key);

	return json_is_boolean(v) ? json_is_true(v) : -1;
}

/* How it was recorded: what its samples hold, and which times are exact. */
static void read_options(struct recording *r, json_t *e)
{
	const char *gc_timing = str_or(e, "gc_timing", "");
	const char *python = str_or(e, "python", "");

	/* "3.11": digits and dots only, else left out */
	if (strlen(python) < sizeof(r->python) && strspn(python, "0123456789.") == strlen(python))
		strcpy(r->python, python);

	r->idle = flag(e, "idle");
	r->gil_only = flag(e, "gil");
	r->on_cpu_exact = flag(e, "on_cpu_exact") == 1;
	r->gc_exact = !strcmp(gc_timing, "USDT probes") ||
		      !strcmp(gc_timing, "uprobes on the collector");
}

static int read_ebpfprof(struct recording *r, json_t *root, char *err, size_t errlen)
{
	json_t *e = json_object_get(root, "ebpfprof");
	json_t *threads = json_object_get(e, "threads"), *gcs = json_object_get(e, "gc");
	char why[192];
	double rate, samples = 0;

	if (!json_is_object(e)) {
		snprintf(err, errlen, "no \"ebpfprof\" object: not recorded by ebpfprof 0.1 or later");
		return -1;
	}
	/* every recording says its version; one made by hand may not: format 1 */
	r->version = 1;
	if (json_object_get(e, "version") && bounded_int(e, "version", 1, INT_MAX, &r->version)) {
		snprintf(err, errlen, "\"ebpfprof\" object: invalid version (not an integer >= 1)");
		return -1;
	}
	if (bounded(e, "rate_hz", MAX_RATE_HZ, &rate) || rate < 1) {
		snprintf(err, errlen, "\"ebpfprof\" object: invalid rate_hz (not a number in [1, %d])",
			 MAX_RATE_HZ);
		return -1;
	}
	if (bounded(e, "duration_s", MAX_SECONDS, &r->wall_s) || r->wall_s < MIN_DURATION_S) {
		snprintf(err, errlen, "\"ebpfprof\" object: invalid duration_s (not a number of "
			 "seconds in [%.0e, %.0e])", MIN_DURATION_S, MAX_SECONDS);
		return -1;
	}
	if (json_object_get(e, "samples") && bounded(e, "samples", MAX_COUNT, &samples)) {
		snprintf(err, errlen, "\"ebpfprof\" object: invalid samples (not a number in [0, %.0e])",
			 MAX_COUNT);
		return -1;
	}
	r->rate_hz = (unsigned)rate;
	read_options(r, e);
	r->samples = (unsigned long)samples;
	if (!json_is_array(threads) || !json_is_array(gcs))
		return 0;	/* written without the analysis: functions only */
	if (read_threads(r, threads, why, sizeof(why)) || read_gcs(r, gcs, why, sizeof(why)) ||
	    (json_is_object(json_object_get(e, "labels")) &&
	     read_labels(r, json_object_get(e, "labels"), why, sizeof(why)))) {
		snprintf(err, errlen, "\"ebpfprof\" object: %s", why);
		return -1;
	}
	r->has_states = 1;
	return 0;
}

static int read_root(struct recording *r, const char *path, json_t *root, json_error_t *jerr,
		     char *err, size_t errlen)
{
	char why[256];
	int rc;

	if (!root) {
		snprintf(err, errlen, "%s: %s (line %d)", path, jerr->text, jerr->line);
		return -1;
	}
	if (json_string_value(json_object_get(root, "name")))
		r->command = strdup(json_string_value(json_object_get(root, "name")));
	rc = read_ebpfprof(r, root, why, sizeof(why)) ||
	     read_frames(r, root, why, sizeof(why)) ||
	     read_profiles(r, root, why, sizeof(why));
	json_decref(root);
	if (rc)
		snprintf(err, errlen, "%s: %s", path, why);
	r->prof.duration_ns = (uint64_t)(r->wall_s * 1e9);	/* at most 1e18 */
	r->prof.rate_hz = r->rate_hz;
	return rc ? -1 : 0;
}

static void recording_init(struct recording *r, const char *path)
{
	memset(r, 0, sizeof(*r));
	r->path = path;
	profile_init(&r->prof);
	profile_init(&r->holders);
	profile_init(&r->tasks);
}

int recording_read(struct recording *r, const char *path, char *err, size_t errlen)
{
	json_error_t jerr;

	recording_init(r, path);
	return read_root(r, path, json_load_file(path, JSON_REJECT_DUPLICATES, &jerr), &jerr,
			 err, errlen);
}

int recording_read_buffer(struct recording *r, const char *name, const char *data, size_t len,
			  char *err, size_t errlen)
{
	json_error_t jerr;

	recording_init(r, name);
	return read_root(r, name, json_loadb(data, len, JSON_REJECT_DUPLICATES, &jerr), &jerr,
			 err, errlen);
}

/* Appends to out (used bytes so far) the states of mask, as "a, b". */
static size_t append_states(char *out, size_t len, size_t used, unsigned mask)
{
	int s, n = 0;

	for (s = 0; s < DIFF_NSTATES && used < len; s++)
		if (mask & 1u << s)
			used += snprintf(out + used, len - used, "%s%s", n++ ? ", " : "",
					 sample_state_name(s));
	return used;
}

int recording_note(const struct recording *r, char *out, size_t len)
{
	size_t used = 0;

	out[0] = 0;
	if (r->version > RECORDING_FORMAT_VERSION)
		used += snprintf(out, len, "written in format %d by a newer ebpfprof (this one reads "
				 "format %d), what it knows is compared", r->version,
				 RECORDING_FORMAT_VERSION);
	if (r->unknown_states[0] && used < len)
		used += snprintf(out + used, len - used, "%sstates this ebpfprof does not know, left "
				 "out: %s", used ? "; " : "", r->unknown_states);
	if (r->missing_states && used < len) {
		used += snprintf(out + used, len - used, "%sno time for states this ebpfprof has, "
				 "read as 0: ", used ? "; " : "");
		used = append_states(out, len, used, r->missing_states);
	}
	return used > 0;
}

void recording_free(struct recording *r)
{
	size_t i;

	for (i = 0; i < r->nthreads; i++) {
		free(r->threads[i].name);
		free(r->threads[i].process);
	}
	for (i = 0; i < r->ngcs; i++)
		free(r->gcs[i].process);
	for (i = 0; i < r->nlabels; i++) {
		free(r->labels[i].label);
		free(r->labels[i].value);
	}
	free(r->labels);
	free(r->threads);
	free(r->gcs);
	free(r->frame_map);
	free(r->command);
	profile_free(&r->prof);
	profile_free(&r->holders);
	profile_free(&r->tasks);
}

/* Samples with off-CPU time in them (--idle), or of the GIL holder only
 * (--gil), are not the samples of a plain recording: compared, every
 * function would change. Rates differ harmlessly (all is per second). */
int recordings_comparable(const struct recording *a, const struct recording *b,
			  char *err, size_t errlen)
{
	static const struct {
		size_t offset;
		const char *option;
	} options[] = {
		{ offsetof(struct recording, idle), "--idle" },
		{ offsetof(struct recording, gil_only), "--gil" },
	};
	size_t i;

	for (i = 0; i < sizeof(options) / sizeof(options[0]); i++) {
		int fa = *(const int *)((const char *)a + options[i].offset);
		int fb = *(const int *)((const char *)b + options[i].offset);

		if (fa < 0 || fb < 0 || fa == fb)
			continue;
		snprintf(err, errlen, "%s was recorded with %s and %s without: they cannot be "
			 "compared (record both with or both without it)",
			 fa ? a->path : b->path, options[i].option, fa ? b->path : a->path);
		return -1;
	}
	return 0;
}
