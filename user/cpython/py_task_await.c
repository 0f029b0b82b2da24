// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* What an asyncio task awaits, in words (py_task_await.h). */
#include <stdio.h>
#include <string.h>
#include "py_task_await.h"

void py_task_frame_name(const char *task_name, char *out, size_t len)
{
	snprintf(out, len, "<task %s>", task_name);
}

/* The asyncio function a Future is awaited in, or "Future". */
static const char *future_site(const struct py_task *t, const struct py_sym_frame *frames)
{
	int i;

	for (i = 0; frames && i < t->nframes; i++) {
		const struct py_sym_frame *fr = &frames[i];
		const char *last = strrchr(fr->name, '.');

		last = last ? last + 1 : fr->name;
		if (fr->file && strstr(fr->file, "asyncio/") && last[0] != '_' && last[0] != '<')
			return fr->name;
	}
	return "Future";
}

void py_task_await_text(const struct py_tasks *all, const struct py_task *t,
			const struct py_sym_frame *frames, char *out, size_t len)
{
	size_t used;
	int i;

	out[0] = 0;
	switch (t->await_kind) {
	case PY_AWAIT_FUTURE:
		snprintf(out, len, "%s", future_site(t, frames));
		break;
	case PY_AWAIT_TASK:
		snprintf(out, len, "Task %s", py_asyncio_task_name(all, t->await_obj) ?: "?");
		break;
	case PY_AWAIT_GATHER:
		snprintf(out, len, "gather:");
		for (i = 0; i < t->nchildren; i++) {
			const char *n = py_asyncio_task_name(all, t->children[i]);

			used = strlen(out);
			snprintf(out + used, len - used, "%s %s%s", i ? "," : "",
				 n ? "Task " : "Future", n ? n : "");
		}
		break;
	case PY_AWAIT_OTHER:
		snprintf(out, len, "%s", t->await_type);
		break;
	default:
		break;
	}
}
