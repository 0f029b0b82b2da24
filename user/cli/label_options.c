// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <stdio.h>
#include <string.h>
#include "label_options.h"

int label_options_add(struct label_options *o, const char *arg, char *err, size_t len)
{
	if (o->nlabels >= EP_USER_LABELS) {
		snprintf(err, len, "too many --label: at most %d", EP_USER_LABELS);
		return -1;
	}
	if (label_spec_parse(arg, &o->labels[o->nlabels], err, len))
		return -1;
	o->nlabels++;
	return 0;
}

error_t label_options_parse(int key, char *arg, struct argp_state *state, struct label_options *o)
{
	char err[256];

	switch (key) {
	case LABEL_OPT_LABEL:
		if (label_options_add(o, arg, err, sizeof(err)))
			argp_error(state, "%s", err);
		return 0;
	case LABEL_OPT_DASK:
		o->dask = 1;
		return 0;
	default:
		return ARGP_ERR_UNKNOWN;
	}
}

/* --dask: the task's key is an argument of distributed's task runner for
 * as long as the task runs: _run_task(task, data, execution_state, key, ...)
 * since 2024.11, apply_function(function, args, kwargs, execution_state,
 * key, ...) and apply_function_actor (same place) before; coroutine tasks
 * run in Worker.execute(self, key, ...) on the event loop (3.11+ only:
 * earlier Pythons keep no qualified name). */
void label_options_finish(struct label_options *o)
{
	static const struct { const char *function; int arg; } runners[] = {
		{ "_run_task", 3 },
		{ "apply_function", 4 },
		{ "apply_function_actor", 4 },
		{ "Worker.execute", 1 },
	};
	size_t i;

	if (!o->dask)
		return;
	for (i = 0; i < sizeof(runners) / sizeof(runners[0]); i++) {
		struct label_spec *s = &o->labels[o->nlabels++];

		snprintf(s->name, sizeof(s->name), "dask_key");
		snprintf(s->function, sizeof(s->function), "%s", runners[i].function);
		s->arg = runners[i].arg;
	}
}

int label_options_named(const struct label_options *o, const char *name)
{
	int i;

	for (i = 0; i < o->nlabels; i++)
		if (!strcmp(o->labels[i].name, name))
			return 1;
	return o->dask && !strcmp(name, "dask_prefix");
}
