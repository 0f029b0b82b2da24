/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * --label NAME=FUNCTION:ARG and --dask, as record and top take them: the
 * labels a recording is made with.
 */
#ifndef EP_LABEL_OPTIONS_H
#define EP_LABEL_OPTIONS_H
#include <stddef.h>
#include "labels.h"

struct label_options {
	struct label_spec labels[EP_MAX_LABELS];	/* --label, then --dask's */
	int nlabels;
	int dask;		/* --dask: dask_prefix derived from dask_key */
};

/* One more --label arg: 0, or -1 with a one-line reason in err. */
int label_options_add(struct label_options *o, const char *arg, char *err, size_t len);
/* After the options: --dask's labels added. */
void label_options_finish(struct label_options *o);
/* Whether a label called name will be recorded. */
int label_options_named(const struct label_options *o, const char *name);

#endif
