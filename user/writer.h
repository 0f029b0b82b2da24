/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* One output format per writer_*.c, all behind this interface. */
#ifndef EP_WRITER_H
#define EP_WRITER_H
#include <stdio.h>
#include "profile.h"

struct writer_options {
	int gaps_as_idle;	/* fill unobserved time so threads line up */
	int threads;		/* collapsed: each thread as a root frame (-t) */
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

/* The writer named `name`, or NULL. */
const struct output_writer *writer_by_name(const char *name);

/*
 * Writes the profile to path atomically: into a temporary file in the same
 * directory, then renamed over path. Never leaves a half-written file.
 * Returns 0, or -1 with errno set.
 */
int writer_write_file(const struct output_writer *w, const struct profile *p,
		      const struct writer_options *o, const char *path);

#endif
