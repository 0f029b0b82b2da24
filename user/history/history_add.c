// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* One recording stored as a run: where and when, its tags, its figures. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include "history.h"

static int fill_run(struct hist_run *run, const struct hist_add *a, const struct recording *r)
{
	struct utsname u;
	size_t i;

	if (uname(&u))
		memset(&u, 0, sizeof(u));
	run->series = strdup(a->series);
	run->kind = strdup("recording");
	run->at = a->at;
	run->host = strdup(u.nodename);
	run->kernel = strdup(u.release);
	run->python = strdup(r->python);
	run->command = strdup(r->command ? r->command : "");
	run->source = strdup(a->source ? a->source : "");
	if (!run->series || !run->kind || !run->host || !run->kernel || !run->python || !run->command ||
	    !run->source)
		return -1;
	for (i = 0; i < a->ntags && i < HIST_MAX_TAGS; i++) {
		run->tags[i] = strdup(a->tags[i]);
		if (!run->tags[i])
			return -1;
		run->ntags++;
	}
	return 0;
}

int hist_add_recording(struct hist_db *db, const struct hist_add *a, const struct recording *r,
		       long long *id, char *err, size_t errlen)
{
	struct hist_run run = { 0 };
	int rc = -1;

	if (fill_run(&run, a, r) || hist_metrics_from_recording(&run, r))
		snprintf(err, errlen, "out of memory");
	else
		rc = hist_db_add(db, &run, err, errlen);
	*id = run.id;
	hist_run_free(&run);
	return rc;
}
