/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * --label NAME=FUNCTION:ARG and --dask, as record and top take them: the
 * labels a recording is made with.
 */
#ifndef EP_LABEL_OPTIONS_H
#define EP_LABEL_OPTIONS_H
#include <argp.h>
#include <stddef.h>
#include "labels.h"

/* The argp keys of --label and --dask, the same in every command. */
enum { LABEL_OPT_LABEL = 0x4c00, LABEL_OPT_DASK };

struct label_options {
	struct label_spec labels[EP_MAX_LABELS];	/* --label, then --dask's */
	int nlabels;
	int dask;		/* --dask: dask_prefix derived from dask_key */
};

/* One more --label arg: 0, or -1 with a one-line reason in err. */
int label_options_add(struct label_options *o, const char *arg, char *err, size_t len);
/* An argp parser's step for --label and --dask: 0 when key was one of them
 * (a bad --label is argp_error's), ARGP_ERR_UNKNOWN otherwise. */
error_t label_options_parse(int key, char *arg, struct argp_state *state, struct label_options *o);
/* After the options: --dask's labels added. */
void label_options_finish(struct label_options *o);
/* Whether a label called name will be recorded. */
int label_options_named(const struct label_options *o, const char *name);

#endif
