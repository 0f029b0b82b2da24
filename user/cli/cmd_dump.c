// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ebpfprof dump: every thread of a running CPython process, once, without
 * stopping it: its state now and for how long, why it waits (the GIL and
 * who holds it, GC, a lock, I/O on which socket or file, sleep) and its
 * Python stack, innermost first as py-spy prints it.
 */
#include <argp.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "commands.h"
#include "dump_frames.h"
#include "dump_tasks.h"
#include "frame_names.h"
#include "json.h"
#include "printable.h"
#include "target_pick.h"
#include "thread_dump.h"

#define ERRLEN 512

struct dump_options {
	pid_t pid;
	const char *match;
	int json;
	int native;
	int tasks;
	struct frame_naming naming;
};

static const char doc[] =
	"Print what every thread of a running CPython process is doing now, without "
	"stopping it: state (running, GIL wait, waiting for GC, lock wait, I/O, sleep), "
	"for how long, what it waits on, and its Python stack.\v"
	"Examples:\n"
	"  sudo ebpfprof dump --pid 4242\n"
	"  sudo ebpfprof dump --match 'gunicorn: worker' --json\n"
	"  sudo ebpfprof dump --tasks --pid 4242";

static const struct argp_option option_list[] = {
	TARGET_PICK_OPTIONS("dump"),
	{ "json", 'j', NULL, 0, "Write JSON instead of text", 0 },
	{ "tasks", 't', NULL, 0, "The process's asyncio tasks instead of its threads (3.11 to 3.15): each task's coroutine frames, what it awaits and which tasks await it", 0 },
	{ "native", 'n', NULL, 0, "Native (C/C++) frames woven into each thread's stack; stops each thread a moment (ptrace) to read its registers", 0 },
	FRAME_NAMING_OPTIONS,
	{ NULL, 0, NULL, 0, NULL, 0 },
};

static error_t parse_option(int key, char *arg, struct argp_state *state)
{
	struct dump_options *o = state->input;

	if (frame_naming_option(key, &o->naming))
		return 0;
	switch (key) {
	case 'j':
		o->json = 1;
		return 0;
	case 'n':
		o->native = 1;
		return 0;
	case 't':
		o->tasks = 1;
		return 0;
	case ARGP_KEY_ARG:
		argp_error(state, "unexpected argument '%s'", arg);
		return 0;
	default:
		return target_pick_option(key, arg, state, &o->pid, &o->match);
	}
}

/* "blocked in recvfrom on fd 5: tcp 127.0.0.1:40000 -> 127.0.0.1:5555" */
static void detail_text(const struct dump_snapshot *s, const struct dump_thread *th,
			char *out, size_t len)
{
	const struct dump_thread *h = dump_thread_by_tid(s, s->gil_holder_tid);
	char fd[512];

	out[0] = 0;
	if (th->holds_gil) {
		snprintf(out, len, ", holds the GIL%s", s->gc_collecting > 0 ? " (collecting garbage)" : "");
	} else if (th->state == STATE_GIL_WAIT || th->state == STATE_GIL_WAIT_GC) {
		if (h)
			snprintf(out, len, ", GIL held by thread %d \"%s\"%s", h->tid, h->name,
				 s->gc_collecting > 0 ? " (collecting garbage)" : " (not collecting)");
		else
			snprintf(out, len, ", GIL %s", s->gil_locked > 0 ? "held by an unknown thread" : "free");
	} else if (th->state == STATE_LOCK_WAIT && th->futex) {
		snprintf(out, len, ", on futex 0x%llx", (unsigned long long)th->futex);
	} else if (th->has_fd) {
		fd_info_format_watched(s->pid, &th->fd, fd, sizeof(fd));
		snprintf(out, len, ", on %s", fd);
	}
}

/* Names, paths and the command line come from the target: printable() keeps
 * its terminal controls (ESC, C1, bidi overrides) text. */
#define SHOWN_MAX 4096

static void print_text(FILE *f, const struct py_target *t, const struct dump_snapshot *s)
{
	char cmd[512], detail[768], line[SHOWN_MAX], path[SHOWN_MAX];
	size_t i;
	int j;

	procfs_cmdline(s->pid, cmd, sizeof(cmd));
	fprintf(f, "Process %d: %s\nPython v%d.%d.%d (%s)\n", s->pid,
		printable(cmd, line, sizeof(line)), t->major, t->minor, t->micro,
		printable(t->shown_path, path, sizeof(path)));
	for (i = 0; i < s->nthreads; i++) {
		const struct dump_thread *th = &s->threads[i];

		detail_text(s, th, detail, sizeof(detail));
		fprintf(f, "\nThread %d \"%s\": %s", th->tid,
			printable(th->name, line, sizeof(line)), dump_state_name(th->state));
		if (th->state_s >= 0)
			fprintf(f, " for %.3f s", th->state_s);
		fprintf(f, "%s\n", printable(detail, line, sizeof(line)));
		if (!th->tstate && !th->nframes)
			fputs("    (no Python thread state)\n", f);
		for (j = 0; j < th->nframes; j++)
			dump_print_frame(f, &th->frames[j]);
		if (th->truncated)
			fputs("    [truncated]\n", f);
	}
}

static void json_fd(FILE *f, const struct fd_info *fi)
{
	fprintf(f, ", \"fd\": {\"fd\": %d, ", fi->fd);
	dump_json_kv_str(f, "kind", fi->kind);
	fputs(", ", f);
	dump_json_kv_str(f, "local", fi->local);
	fputs(", ", f);
	dump_json_kv_str(f, "peer", fi->peer);
	fputs(", ", f);
	dump_json_kv_str(f, "path", fi->path);
	fputs(", \"watched\": [", f);
	for (int i = 0; i < fi->nwatched; i++)
		fprintf(f, "%s%d", i ? ", " : "", fi->watched[i]);
	fputs("]}", f);
}

static void json_thread(FILE *f, const struct dump_snapshot *s, const struct dump_thread *th)
{
	int j;

	fprintf(f, "    {\"tid\": %d, ", th->tid);
	dump_json_kv_str(f, "name", th->name);
	fprintf(f, ", \"state\": \"%s\", \"state_seconds\": ", dump_state_name(th->state));
	if (th->state_s >= 0)
		fprintf(f, "%.6f", th->state_s);
	else
		fputs("null", f);
	fprintf(f, ", \"python\": %s, \"holds_gil\": %s, \"syscall\": %ld",
		th->tstate ? "true" : "false", th->holds_gil ? "true" : "false", th->syscall);
	if ((th->state == STATE_GIL_WAIT || th->state == STATE_GIL_WAIT_GC) && s->gil_holder_tid)
		fprintf(f, ", \"gil_holder\": %d", s->gil_holder_tid);
	if (th->futex)
		fprintf(f, ", \"futex\": \"0x%llx\"", (unsigned long long)th->futex);
	if (th->has_fd)
		json_fd(f, &th->fd);
	fprintf(f, ", \"truncated\": %s, \"stack\": [", th->truncated ? "true" : "false");
	for (j = 0; j < th->nframes; j++) {
		fprintf(f, "%s\n      ", j ? "," : "");
		dump_json_frame(f, &th->frames[j]);
	}
	fputs("]}", f);
}

static void print_json(FILE *f, const struct py_target *t, const struct dump_snapshot *s)
{
	char cmd[4096];
	size_t i;

	procfs_cmdline(s->pid, cmd, sizeof(cmd));
	fprintf(f, "{\"pid\": %d, ", s->pid);
	dump_json_kv_str(f, "command", cmd);
	fprintf(f, ", \"python\": \"%d.%d.%d\", ", t->major, t->minor, t->micro);
	dump_json_kv_str(f, "interpreter", t->shown_path);
	fputs(", \"gil\": {\"locked\": ", f);
	fputs(s->gil_locked < 0 ? "null" : s->gil_locked ? "true" : "false", f);
	fputs(", \"holder\": ", f);
	if (s->gil_holder_tid)
		fprintf(f, "%d", s->gil_holder_tid);
	else
		fputs("null", f);
	fputs(", \"collecting\": ", f);
	fputs(s->gc_collecting < 0 ? "null" : s->gc_collecting ? "true" : "false", f);
	fputs("},\n  \"threads\": [\n", f);
	for (i = 0; i < s->nthreads; i++) {
		if (i)
			fputs(",\n", f);
		json_thread(f, s, &s->threads[i]);
	}
	fputs("\n  ]}\n", f);
}

int cmd_dump(int argc, char **argv)
{
	struct dump_options o = { 0 };
	struct argp argp = { option_list, parse_option, "--pid PID | --match PATTERN", doc, NULL, NULL, NULL };
	struct dump_snapshot snap;
	struct py_target *t;
	char err[ERRLEN], line[4 * ERRLEN];

	argp_parse(&argp, argc, argv, 0, NULL, &o);
	frame_naming_set(&o.naming);
	if (o.match) {
		o.pid = target_match(o.match, err, sizeof(err));
		if (o.pid < 0)
			goto fail;
	}
	t = calloc(1, sizeof(*t));
	if (!t) {
		snprintf(err, sizeof(err), "out of memory");
		goto fail;
	}
	if (o.tasks && o.native) {
		free(t);
		snprintf(err, sizeof(err), "--tasks and --native cannot be combined");
		goto fail;
	}
	if (o.tasks) {
		if (target_open(o.pid, t, err, sizeof(err)) ||
		    dump_tasks(stdout, t, o.json, err, sizeof(err))) {
			free(t);
			goto fail;
		}
		free(t);
		goto flush;
	}
	if (target_open(o.pid, t, err, sizeof(err)) ||
	    (o.native ? dump_take_native : dump_take)(t, &snap, err, sizeof(err))) {
		free(t);
		goto fail;
	}
	if (o.json)
		print_json(stdout, t, &snap);
	else
		print_text(stdout, t, &snap);
	dump_free(&snap);
	free(t);
flush:
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "ebpfprof dump: cannot write the output: %s\n", strerror(errno));
		return 1;
	}
	return 0;
fail:
	/* the error names the target's comm or paths */
	fprintf(stderr, "ebpfprof dump: %s\n", printable(err, line, sizeof(line)));
	return 1;
}
