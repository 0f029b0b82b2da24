// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "match.h"
#include "parse_num.h"
#include "preflight.h"
#include "target_pick.h"

struct first_match {
	int n;
	pid_t first;
};

static void count_match(void *ctx, pid_t pid, const char *cmdline)
{
	struct first_match *fm = ctx;

	(void)cmdline;
	if (!fm->n++)
		fm->first = pid;
}

pid_t target_match(const char *pattern, char *err, size_t errlen)
{
	struct first_match fm = { 0 };
	struct proc_matcher m;
	int rc;

	if (matcher_init(&m, pattern, err, errlen))
		return -1;
	rc = matcher_scan(&m, count_match, &fm);
	matcher_free(&m);
	if (rc) {
		snprintf(err, errlen, "cannot list /proc");
		return -1;
	}
	if (fm.n == 1)
		return fm.first;
	if (fm.n == 0)
		snprintf(err, errlen, "no process's command line matches '%s'", pattern);
	else
		snprintf(err, errlen, "%d processes' command lines match '%s' (the first is %d): give --pid",
			 fm.n, pattern, fm.first);
	return -1;
}

int target_open(pid_t pid, struct py_target *t, char *err, size_t errlen)
{
	if (preflight_pid(pid, err, errlen))
		return -1;
	return py_target_open(pid, t, err, errlen) == PY_TARGET_OK ? 0 : -1;
}

error_t target_pick_option(int key, char *arg, struct argp_state *state,
			   pid_t *pid, const char **match)
{
	char err[512];

	switch (key) {
	case 'p':
		if (parse_pid(arg, pid))
			argp_error(state, "invalid pid: %s", arg);
		return 0;
	case 'm':
		if (!arg[0])
			argp_error(state, "empty --match pattern");
		if (matcher_valid(arg, err, sizeof(err)))
			argp_error(state, "%s", err);
		*match = arg;
		return 0;
	case ARGP_KEY_END:
		if (!*pid == !*match)
			argp_error(state, "give one of --pid PID or --match PATTERN");
		return 0;
	default:
		return ARGP_ERR_UNKNOWN;
	}
}
