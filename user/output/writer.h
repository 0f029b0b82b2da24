/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* One output format per writer_*.c, all behind this interface. */
#ifndef EP_WRITER_H
#define EP_WRITER_H
#include <stdint.h>
#include <stdio.h>
#include "profile.h"

struct analysis;

/* What the recording knew besides the samples, for writers that keep it. */
struct recording_info {
	unsigned long samples;		/* on-CPU samples kept */
	unsigned long long lost;	/* samples the ring buffer dropped */
	int python_major, python_minor;
	const char *gc_timing;		/* how collections were timed */
	const char *stop_reason;	/* "target exited", "duration reached"... */
	int idle;			/* off-CPU time is in the samples (--idle) */
	int gil_only;			/* only the GIL holder's samples (--gil) */
};

struct writer_options {
	/* GC pauses and off-CPU intervals, exact; NULL when unknown */
	const struct analysis *analysis;
	const struct recording_info *info;	/* NULL when unknown */
	uint64_t gc_min_ns;	/* chrome: shortest GC pause drawn as a slice */
	int threads;		/* collapsed: each thread as a root frame (-t) */
	const char *group_by;	/* speedscope: a profile per value of this label, not per thread */
	int pid;		/* pprof: only this process's threads; 0: all */
	int state_types;	/* pprof: a sample type per state (--push), not
				 * one cpu value with the state as a label only */
};

struct output_writer {
	const char *name;	/* the --format value */
	const char *suffix;	/* default file name ending */
	int binary;		/* 1 if not text */
	/* Writes the whole profile to f. Returns 0, or -1 with errno set. */
	int (*write)(const struct profile *p, const struct writer_options *o, FILE *f);
};

extern const struct output_writer speedscope_writer;
extern const struct output_writer collapsed_writer;
extern const struct output_writer chrome_trace_writer;
extern const struct output_writer pprof_writer;

/* pprof with state_types: "samples" (count) and "cpu" (nanoseconds) on CPU,
 * then state s's time (nanoseconds) for each state s from STATE_ON_CPU + 1
 * to STATE_RECORDED - 1, named by pprof_state_type_name(). */
void pprof_state_type_name(int s, char *out, size_t len);

/* What a writer's task_spans_each_pid callback writes to (record --tasks). */
struct task_out {
	FILE *f;
	const struct profile *p;
};

/* The writer named `name`, or NULL. */
const struct output_writer *writer_by_name(const char *name);

/*
 * Writes the profile to path with atomic_file_write(): never half a file,
 * never a device or a symlink replaced, owner and mode as atomic_file.h
 * says. Returns 0, or -1 with errno set.
 */
int writer_write_file(const struct output_writer *w, const struct profile *p,
		      const struct writer_options *o, const char *path);

#endif
