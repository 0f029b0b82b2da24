/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Which process a live view (dump, top) looks at: --pid, or --match REGEX
 * naming exactly one process by its command line (the matcher of record's
 * --match, match.h). */
#ifndef EP_TARGET_PICK_H
#define EP_TARGET_PICK_H
#include <argp.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "procfs.h"
#include "py_target.h"

/* The --pid and --match options of the live views, for their argp tables. */
#define TARGET_PICK_OPTIONS(what) \
	{ "pid", 'p', "PID", 0, "The process to " what, 0 }, \
	{ "match", 'm', "REGEX", 0, "The one process whose command line matches the extended regular expression REGEX", 0 }

/* argp: parses -p and -m and checks at the end that exactly one was given.
 * ARGP_ERR_UNKNOWN for any other key. */
error_t target_pick_option(int key, char *arg, struct argp_state *state,
			   pid_t *pid, const char **match);

/* The one process (not ourselves) whose command line matches the extended
 * regular expression pattern; -1 with err filled if none or several do. */
pid_t target_match(const char *pattern, char *err, size_t errlen);

/* Finds and prepares the interpreter of a running pid. 0, or -1 with err. */
int target_open(pid_t pid, struct py_target *t, char *err, size_t errlen);

#endif
