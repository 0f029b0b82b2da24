// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Choosing an output writer, and writing its file (through atomic_file.c). */
#include <string.h>
#include "atomic_file.h"
#include "writer.h"

static const struct output_writer *const writers[] = {
	&speedscope_writer,
	&collapsed_writer,
	&chrome_trace_writer,
	&pprof_writer,
};

const struct output_writer *writer_by_name(const char *name)
{
	size_t i;

	if (!name)
		return NULL;
	for (i = 0; i < sizeof(writers) / sizeof(writers[0]); i++)
		if (strcmp(writers[i]->name, name) == 0)
			return writers[i];
	return NULL;
}

struct profile_job {
	const struct output_writer *w;
	const struct profile *p;
	const struct writer_options *o;
};

static int write_profile(FILE *f, void *ctx)
{
	const struct profile_job *job = ctx;

	return job->w->write(job->p, job->o, f);
}

int writer_write_file(const struct output_writer *w, const struct profile *p,
		      const struct writer_options *o, const char *path)
{
	struct profile_job job = { .w = w, .p = p, .o = o };

	return atomic_file_write(path, w->binary, write_profile, &job);
}
