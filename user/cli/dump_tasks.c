// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ebpfprof dump --tasks: every asyncio task of a process (py_asyncio.h),
 * running or suspended, with its coroutine frames innermost first, what
 * it awaits (py_task_await.h) and which tasks await it.
 */
#include <stdlib.h>
#include <string.h>
#include "dump_frames.h"
#include "dump_tasks.h"
#include "json.h"
#include "printable.h"
#include "py_asyncio.h"
#include "py_task_await.h"

#define SHOWN_MAX	4096
#define AWAIT_MAX	1024

struct shown_task {
	const struct py_task *task;
	struct py_sym_frame *frames;	/* names copied out of the symbolizer */
	char *strings;
};

static void await_text(const struct py_tasks *all, const struct shown_task *s, char *out, size_t len)
{
	py_task_await_text(all, s->task, s->frames, out, len);
}

/* Frames of every task, symbolized once and copied (the symbolizer's
 * strings live only until its next call). */
static int symbolize(const struct py_target *t, const struct py_tasks *all, struct shown_task *shown)
{
	struct py_symbolizer *sym = py_symbolizer_new(t->pid, &t->layout);
	struct py_sym_frame fr;
	size_t i;
	int j;

	if (!sym)
		return -1;
	for (i = 0; i < all->n; i++) {
		const struct py_task *task = &all->tasks[i];

		shown[i].task = task;
		shown[i].frames = calloc(task->nframes ? task->nframes : 1, sizeof(fr));
		if (!shown[i].frames)
			continue;
		for (j = 0; j < task->nframes; j++) {
			py_symbolizer_frame(sym, task->frames[j].code, task->frames[j].ident,
					    task->frames[j].instr, &fr);
			fr.name = strdup(fr.name ? fr.name : "<unknown>");
			fr.file = fr.file ? strdup(fr.file) : NULL;
			shown[i].frames[j] = fr;
		}
	}
	py_symbolizer_free(sym);
	return 0;
}

static void unsymbolize(const struct py_tasks *all, struct shown_task *shown)
{
	size_t i;
	int j;

	for (i = 0; i < all->n; i++) {
		for (j = 0; shown[i].frames && j < all->tasks[i].nframes; j++) {
			free((char *)shown[i].frames[j].name);
			free((char *)shown[i].frames[j].file);
		}
		free(shown[i].frames);
	}
	free(shown);
}

static void print_task_text(FILE *f, const struct py_tasks *all, const struct shown_task *s)
{
	const struct py_task *t = s->task;
	char name[SHOWN_MAX], what[AWAIT_MAX], shown[SHOWN_MAX];
	int i;

	fprintf(f, "\nTask \"%s\" (0x%llx): %s", printable(t->name, name, sizeof(name)),
		(unsigned long long)t->addr, t->running ? "running" : "suspended");
	await_text(all, s, what, sizeof(what));
	if (what[0])
		fprintf(f, " [await %s]", printable(what, shown, sizeof(shown)));
	fputc('\n', f);
	for (i = 0; s->frames && i < t->nframes; i++)
		dump_print_frame(f, &s->frames[i]);
	if (t->truncated)
		fputs("    [truncated]\n", f);
	for (i = 0; i < t->nawaited_by; i++)
		fprintf(f, "    awaited by Task \"%s\"\n",
			printable(py_asyncio_task_name(all, t->awaited_by[i]) ?: "?", name, sizeof(name)));
}

/* [{"name": ..., "address": "0x..."}, ...] */
static void json_tasks(FILE *f, const struct py_tasks *all, const uint64_t *addrs, int n)
{
	int i;

	fputc('[', f);
	for (i = 0; i < n; i++) {
		fputs(i ? ", {\"name\": " : "{\"name\": ", f);
		json_write_string(f, py_asyncio_task_name(all, addrs[i]) ?: "");
		fprintf(f, ", \"address\": \"0x%llx\"}", (unsigned long long)addrs[i]);
	}
	fputc(']', f);
}

static const char *kind_name(enum py_await_kind k)
{
	switch (k) {
	case PY_AWAIT_FUTURE: return "future";
	case PY_AWAIT_TASK: return "task";
	case PY_AWAIT_GATHER: return "gather";
	case PY_AWAIT_OTHER: return "other";
	default: return "none";
	}
}

static void print_task_json(FILE *f, const struct py_tasks *all, const struct shown_task *s)
{
	const struct py_task *t = s->task;
	char what[AWAIT_MAX];
	int i;

	await_text(all, s, what, sizeof(what));
	fprintf(f, "    {\"address\": \"0x%llx\", \"name\": ", (unsigned long long)t->addr);
	json_write_string(f, t->name);
	fprintf(f, ", \"state\": \"%s\", \"await\": {\"kind\": \"%s\", \"text\": ",
		t->running ? "running" : "suspended", kind_name(t->await_kind));
	json_write_string(f, what);
	fputs(", \"type\": ", f);
	json_write_string(f, t->await_type);
	fputs(", \"tasks\": ", f);
	if (t->await_kind == PY_AWAIT_TASK)
		json_tasks(f, all, &t->await_obj, 1);
	else
		json_tasks(f, all, t->children, t->await_kind == PY_AWAIT_GATHER ? t->nchildren : 0);
	fputs("}, \"awaited_by\": ", f);
	json_tasks(f, all, t->awaited_by, t->nawaited_by);
	fprintf(f, ", \"truncated\": %s, \"stack\": [", t->truncated ? "true" : "false");
	for (i = 0; s->frames && i < t->nframes; i++) {
		fputs(i ? ",\n      " : "\n      ", f);
		dump_json_frame(f, &s->frames[i]);
	}
	fputs("]}", f);
}

static void print_all(FILE *f, const struct py_target *t, const struct py_tasks *all,
		      const struct shown_task *shown, int json)
{
	char path[SHOWN_MAX];
	size_t i;

	if (json) {
		fprintf(f, "{\"pid\": %d, \"python\": \"%d.%d.%d\", \"source\": ", t->pid,
			t->major, t->minor, t->micro);
		json_write_string(f, all->source ? all->source : "");
		fprintf(f, ", \"truncated\": %s, \"reads\": %lu,\n  \"tasks\": [\n",
			all->truncated ? "true" : "false", all->reads);
		for (i = 0; i < all->n; i++) {
			fputs(i ? ",\n" : "", f);
			print_task_json(f, all, &shown[i]);
		}
		fputs("\n  ]}\n", f);
		return;
	}
	fprintf(f, "Process %d: asyncio tasks\nPython v%d.%d.%d (%s)\n", t->pid, t->major, t->minor,
		t->micro, printable(t->shown_path, path, sizeof(path)));
	if (!all->n)
		fputs("\nNo asyncio tasks (asyncio not imported, or no task alive)\n", f);
	for (i = 0; i < all->n; i++)
		print_task_text(f, all, &shown[i]);
	if (all->seen_full)
		fputs("\n[truncated: more distinct tasks than a walk keeps: the target's task lists are forged or corrupt]\n", f);
	else if (all->truncated)
		fputs("\n[truncated: more tasks than read within the bounds]\n", f);
}

int dump_tasks(FILE *f, const struct py_target *t, int json, char *err, size_t errlen)
{
	struct shown_task *shown;
	struct py_tasks all;

	if (py_asyncio_tasks(t, 0, &all, err, errlen))
		return -1;
	shown = calloc(all.n ? all.n : 1, sizeof(*shown));
	if (!shown || symbolize(t, &all, shown)) {
		free(shown);
		py_asyncio_tasks_free(&all);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	print_all(f, t, &all, shown, json);
	unsymbolize(&all, shown);
	py_asyncio_tasks_free(&all);
	return 0;
}
