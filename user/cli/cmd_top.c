// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ebpfprof top: a live view of a running CPython process, refreshed every
 * interval: its functions by own and total time (last interval and since
 * the start), and above them each thread's time in every state the kernel
 * tells apart, and the GC pauses. Keys change the sort; q quits. When
 * stdout is not a terminal the same view is printed as plain text.
 */
#include <argp.h>
#include <dirent.h>
#include <stdarg.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "commands.h"
#include "controller.h"
#include "frame_names.h"
#include "label_options.h"
#include "parse_num.h"
#include "preflight.h"
#include "printable.h"
#include "procfs.h"
#include "py_threads.h"
#include "states.h"
#include "stop_signal.h"
#include "target_pick.h"
#include "top_model.h"
#include "top_term.h"
#include "utf8.h"

#define ERRLEN 512
#define MAX_NAMES 1024
#define PLAIN_ROWS 20		/* functions per refresh when not a terminal */
/* A thread's name: this many characters (not bytes: a name in any script is
 * cut between characters and lines up), at most 4 bytes each */
#define NAME_COLUMN	18
#define NAME_COLUMN_MAX	(4 * NAME_COLUMN + 1)

struct top_options {
	pid_t pid;
	const char *match;
	unsigned rate_hz;
	double interval_s;
	double duration_s;
	int tasks;		/* --tasks */
	struct frame_naming naming;
	struct label_options label;	/* --label, --dask */
	const char *by;			/* --by NAME */
};

enum { OPT_BY = 0x200, OPT_TASKS };	/* long options only */

struct top_view {
	const struct top_options *o;
	struct py_target *t;
	struct controller ctl;
	struct recorder *rec;	/* the controller's */
	struct top_model model;
	int quit;		/* q pressed */
	enum top_sort sort;
	int tty;
	char cmd[256];
	struct py_thread_name *names;
	int nnames;
	uint64_t lost;
};

static const char doc[] =
	"A live view of a running CPython process: functions by own and total time, "
	"each thread's share of time on CPU, waiting for the GIL, for GC, on locks, "
	"in I/O and asleep, and the GC pauses. Keys: o own, t total (last interval), "
	"O/T (since the start), n name, q quit.\v"
	"Examples:\n"
	"  sudo ebpfprof top --pid 4242\n"
	"  sudo ebpfprof top --pid 4242 -d 10 > top.txt     plain text every second\n"
	"  sudo ebpfprof top --pid 4242 --dask --by dask_prefix     time per Dask task prefix";

static const struct argp_option option_list[] = {
	TARGET_PICK_OPTIONS("watch"),
	CONTROLLER_RATE_OPTION,
	{ "interval", 'i', "SECONDS", 0, "Refresh every SECONDS (default 1)", 0 },
	{ "duration", 'd', "SECONDS", 0, "Stop after SECONDS (default: until q, Ctrl-C or the target exits)", 0 },
	{ "label", LABEL_OPT_LABEL, "NAME=FUNCTION:ARGUMENT", 0, "Label samples and waits whose stack holds a frame of FUNCTION with its argument ARGUMENT (as record's --label; repeatable, at most 4)", 0 },
	{ "dask", LABEL_OPT_DASK, NULL, 0, "Dask workers: labels dask_key and dask_prefix (as record's --dask)", 0 },
	{ "by", OPT_BY, "NAME", 0, "Show each value of label NAME (--label's, or dask_prefix, dask_key) with its time per state", 0 },
	{ "tasks", OPT_TASKS, NULL, 0, "asyncio (3.11+): the tasks suspended longest, with what they await", 0 },
	FRAME_NAMING_OPTIONS,
	{ NULL, 0, NULL, 0, NULL, 0 },
};

static double parse_seconds(struct argp_state *state, const char *what, const char *arg)
{
	double v;

	if (parse_real(arg, 0, 1, 1e6, &v))
		argp_error(state, "invalid %s: %s (seconds, > 0)", what, arg);
	return v;
}

static error_t parse_option(int key, char *arg, struct argp_state *state)
{
	struct top_options *o = state->input;

	if (frame_naming_option(key, &o->naming) ||
	    controller_rate_option(key, arg, state, &o->rate_hz) != ARGP_ERR_UNKNOWN ||
	    label_options_parse(key, arg, state, &o->label) != ARGP_ERR_UNKNOWN)
		return 0;
	switch (key) {
	case 'i':
		o->interval_s = parse_seconds(state, "interval", arg);
		break;
	case 'd':
		o->duration_s = parse_seconds(state, "duration", arg);
		break;
	case OPT_BY:
		o->by = arg;
		break;
	case ARGP_KEY_END:
		label_options_finish(&o->label);
		if (o->by && !label_options_named(&o->label, o->by))
			argp_error(state, "--by %s: no label of that name (give --label %s=FUNCTION:ARG, or --dask for dask_key and dask_prefix)",
				   o->by, o->by);
		return target_pick_option(key, arg, state, &o->pid, &o->match);
	case OPT_TASKS:
		o->tasks = 1;
		break;
	case ARGP_KEY_ARG:
		argp_error(state, "unexpected argument '%s'", arg);
		break;
	default:
		return target_pick_option(key, arg, state, &o->pid, &o->match);
	}
	return 0;
}

static void die(const char *msg)
{
	char shown[4 * ERRLEN];

	top_term_close();
	/* the error can name the target's comm or paths */
	fprintf(stderr, "ebpfprof top: %s\n", printable(msg, shown, sizeof(shown)));
	exit(1);
}

static const char *thread_name(struct top_view *v, int tid, char *buf, size_t len)
{
	int inner = procfs_task_inner_tid(v->t->pid, tid);
	const char *py_name = NULL, *name;

	for (int i = 0; i < v->nnames && !py_name; i++)
		if (v->names[i].native_id == inner)
			py_name = v->names[i].name;
	buf[0] = 0;
	if (!py_name && tid != v->t->pid)
		procfs_comm(v->t->pid, tid, buf, len);
	name = thread_display_name(py_name, buf, v->t->pid, tid);
	return name ? name : "?";
}

static const char *sort_title(enum top_sort s)
{
	switch (s) {
	case TOP_SORT_TOTAL:	return "total (last interval)";
	case TOP_SORT_OWN_ALL:	return "own (since start)";
	case TOP_SORT_TOTAL_ALL: return "total (since start)";
	case TOP_SORT_NAME:	return "name";
	default:		return "own (last interval)";
	}
}

/* A line, cut to the screen's width when on a terminal. */
static void put_line(struct top_view *v, int cols, const char *fmt, ...)
{
	char line[1024], shown[4 * sizeof(line)];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	/* names come from the target: no control characters reach the
	 * terminal; on one, cut to its width in characters (never inside a
	 * character; an escape is plain ASCII) */
	printable(line, shown, sizeof(shown));
	if (v->tty && cols > 0)
		shown[utf8_prefix(shown, (size_t)cols, sizeof(shown) - 1)] = 0;
	fputs(shown, stdout);
	fputs(v->tty ? "\033[K\n" : "\n", stdout);
}

static int by_tid(const void *a, const void *b)
{
	return ((const struct top_thread *)a)->tid - ((const struct top_thread *)b)->tid;
}

/* Every thread threading knows, even one that has not run since we started.
 * The model counts by the kernel's (host) tids; threading by the target's. */
static int add_python_thread(pid_t tid, void *ctx)
{
	struct top_view *v = ctx;
	int inner = procfs_task_inner_tid(v->t->pid, tid), j;

	for (j = 0; j < v->nnames; j++)
		if (v->names[j].native_id == inner)
			top_model_thread(&v->model, v->t->pid, tid);
	return 0;
}

static void add_python_threads(struct top_view *v)
{
	procfs_each_task(v->t->pid, add_python_thread, v);
}

/* The threads of the view, by tid. A thread blocked since before we started
 * has its time too: the controller seeded it, as record does. */
static void list_threads(struct top_view *v)
{
	struct top_model *m = &v->model;

	add_python_threads(v);
	qsort(m->threads, m->nthreads, sizeof(*m->threads), by_tid);
}

static void render_threads(struct top_view *v, int cols, double window_ns)
{
	const struct top_model *m = &v->model;
	char head[256], row[512], name[NAME_COLUMN_MAX], comm[64];
	int shares[STATE_MAX], nshares = state_top_columns(shares), j;
	size_t i;
	int n;

	n = snprintf(head, sizeof(head), "%-7s %-18s", "TID", "THREAD (last interval)");
	for (j = 0; j < nshares; j++)
		n += snprintf(head + n, sizeof(head) - n, " %7s", state_table[shares[j]].short_label);
	put_line(v, cols, "%s", head);
	for (i = 0; i < m->nthreads; i++) {
		const struct top_thread *t = &m->threads[i];

		utf8_fit(thread_name(v, t->tid, comm, sizeof(comm)), NAME_COLUMN, name, sizeof(name));
		n = snprintf(row, sizeof(row), "%-7d %s", t->tid, name);
		for (j = 0; j < nshares; j++)
			n += snprintf(row + n, sizeof(row) - n, " %6.0f%%",
				      window_ns > 0 ? 100.0 * t->ns[shares[j]] / window_ns : 0.0);
		put_line(v, cols, "%s", row);
	}
}

/* --by NAME: its values with the most time in the interval, each state's
 * time as a share of the interval (over 100% for a value on several
 * threads at once); returns the lines written. */
static int render_values(struct top_view *v, int cols, double window_ns)
{
	const struct label_table *t = &recorder_analysis(v->rec)->labels;
	const struct top_model *m = &v->model;
	int shares[STATE_MAX], nshares = state_top_columns(shares), j, n;
	char head[256], row[512], name[4 * 26 + 1];
	size_t i;

	if (m->by_label < 0)
		return 0;
	n = snprintf(head, sizeof(head), "%-26s", t->names[m->by_label]);
	for (j = 0; j < nshares; j++)
		n += snprintf(head + n, sizeof(head) - n, " %7s", state_table[shares[j]].short_label);
	put_line(v, cols, "%s", head);
	for (i = 0; i < m->nvalues; i++) {
		if (m->values[i].id >= t->n)
			continue;
		utf8_fit(t->v[m->values[i].id].value, 26, name, sizeof(name));
		n = snprintf(row, sizeof(row), "%s", name);
		for (j = 0; j < nshares; j++)
			n += snprintf(row + n, sizeof(row) - n, " %6.0f%%",
				      window_ns > 0 ? 100.0 * m->values[i].ns[shares[j]] / window_ns : 0.0);
		put_line(v, cols, "%s", row);
	}
	put_line(v, cols, "");
	return (int)m->nvalues + 2;
}

#define TOP_HOLDER_LINES	5

static int by_holder_ns(const void *x, const void *y)
{
	const struct top_holder *a = x, *b = y;

	return a->ns < b->ns ? 1 : a->ns > b->ns ? -1 : 0;
}

/* Who held the GIL while threads waited (last interval), and what it ran;
 * returns the lines written. */
static int render_holders(struct top_view *v, int cols, double window_ns)
{
	const struct profile *p = recorder_profile(v->rec);
	struct top_model *m = &v->model;
	char waiter[NAME_COLUMN_MAX], holder[128], comm[64], what[512];
	const struct frame_info *fr;
	size_t i;
	int shown = 0;

	qsort(m->holders, m->nholders, sizeof(*m->holders), by_holder_ns);
	for (i = 0; i < m->nholders && shown < TOP_HOLDER_LINES && m->holders[i].ns; i++) {
		const struct top_holder *h = &m->holders[i];

		if (!shown++)
			put_line(v, cols, "%-7s %-18s %7s  %s", "TID", "WAITING FOR GIL", "%", "BEHIND (holder, running)");
		utf8_fit(thread_name(v, h->waiter, comm, sizeof(comm)), NAME_COLUMN, waiter, sizeof(waiter));
		if (h->holder > 0)
			snprintf(holder, sizeof(holder), "%d %s", h->holder,
				 thread_name(v, h->holder, comm, sizeof(comm)));
		else
			snprintf(holder, sizeof(holder), "%s", gil_blame_marker(h->holder));
		fr = h->has_frame && h->frame < p->nframes ? &p->frames[h->frame] : NULL;
		if (fr && fr->file)
			snprintf(what, sizeof(what), "%s in %s (%s:%d)", holder, fr->name, fr->file, fr->line);
		else
			snprintf(what, sizeof(what), "%s", holder);
		put_line(v, cols, "%-7d %s %6.1f%%  %s", h->waiter, waiter,
			 window_ns > 0 ? 100.0 * h->ns / window_ns : 0.0, what);
	}
	if (shown)
		put_line(v, cols, "");
	return shown ? shown + 2 : 0;
}

#define TOP_TASK_LINES	5

static int by_length(const void *x, const void *y)
{
	const struct task_span *a = *(const struct task_span *const *)x;
	const struct task_span *b = *(const struct task_span *const *)y;
	uint64_t la = a->end_ns - a->start_ns, lb = b->end_ns - b->start_ns;

	return la < lb ? 1 : la > lb ? -1 : 0;
}

/* --tasks: the tasks suspended longest where they are now (the spans are
 * the tasks in place at the last walk: recorder_live_tasks), with what they
 * await; returns the lines written. */
static int render_tasks(struct top_view *v, int cols)
{
	const struct profile *p = recorder_profile(v->rec);
	const struct task_span **order = calloc(p->tasks.n + 1, sizeof(*order));
	char name[NAME_COLUMN_MAX];
	size_t i;
	int shown = 0;

	if (!order || !p->tasks.n) {
		free(order);
		return 0;
	}
	for (i = 0; i < p->tasks.n; i++)
		order[i] = &p->tasks.v[i];
	qsort(order, p->tasks.n, sizeof(*order), by_length);
	put_line(v, cols, "%-30s %10s  %s", "ASYNCIO TASK", "SUSPENDED", "AWAITING");
	for (i = 0; i < p->tasks.n && shown < TOP_TASK_LINES; i++, shown++) {
		const struct task_span *s = order[i];
		uint32_t top = s->frames[s->nframes - 1];

		utf8_fit(s->task_frame < p->nframes ? p->frames[s->task_frame].name : "?", 30,
			 name, sizeof(name));
		put_line(v, cols, "%s %9.1fs  %s", name, (s->end_ns - s->start_ns) / 1e9,
			 top < p->nframes ? p->frames[top].name : "?");
	}
	put_line(v, cols, "");
	free(order);
	return shown + 2;
}

static void render_functions(struct top_view *v, int rows, int cols, double window_ns)
{
	const struct profile *p = recorder_profile(v->rec);
	struct top_fn *fns;
	size_t n = top_model_sorted(&v->model, p, v->sort, &fns), i;
	char where[512];

	put_line(v, cols, "%7s %7s %9s %9s  %s", "%Own", "%Total", "OwnTime", "TotalTime",
		 "Function (file:line)");
	for (i = 0; i < n && (int)i < rows; i++) {
		const struct frame_info *fr = &p->frames[fns[i].frame];

		if (fr->file && fr->line > 0)
			snprintf(where, sizeof(where), "%s (%s:%d)", fr->name, fr->file, fr->line);
		else if (fr->file)
			snprintf(where, sizeof(where), "%s (%s)", fr->name, fr->file);
		else
			snprintf(where, sizeof(where), "%s", fr->name);
		put_line(v, cols, "%6.1f%% %6.1f%% %8.2fs %8.2fs  %s",
			 window_ns > 0 ? 100.0 * fns[i].own_ns / window_ns : 0.0,
			 window_ns > 0 ? 100.0 * fns[i].total_ns / window_ns : 0.0,
			 fns[i].own_all / 1e9, fns[i].total_all / 1e9, where);
	}
	free(fns);
}

static void render(struct top_view *v)
{
	const struct top_model *m = &v->model;
	double window_ns = (double)(m->window_end_ns - m->window_start_ns);
	double elapsed = m->window_end_ns / 1e9;
	int rows = PLAIN_ROWS + 8, cols = 0, left;

	if (v->tty) {
		top_term_size(&rows, &cols);
		fputs("\033[H", stdout);
	}
	put_line(v, cols, "ebpfprof top: pid %d (%s), CPython %d.%d, %u Hz, %.0f s, %lu samples, %llu lost",
		 v->t->pid, v->cmd, v->t->major, v->t->minor, v->o->rate_hz, elapsed, recorder_kept(v->rec),
		 (unsigned long long)v->lost);
	put_line(v, cols, "GC: %.1f pauses/s, longest %.1f ms (last interval); %lu pauses, longest %.1f ms since the start",
		 window_ns > 0 ? m->gc_window / (window_ns / 1e9) : 0.0, m->gc_longest_window / 1e6,
		 m->gc_all, m->gc_longest_all / 1e6);
	put_line(v, cols, "");
	render_threads(v, cols, window_ns);
	put_line(v, cols, "");
	rows -= render_values(v, cols, window_ns);
	rows -= render_holders(v, cols, window_ns);
	rows -= render_tasks(v, cols);
	put_line(v, cols, "Sort: %s    keys: o own  t total  O/T since start  n name  q quit",
		 sort_title(v->sort));
	left = rows - 7 - (int)m->nthreads;
	render_functions(v, v->tty ? (left > 1 ? left : 1) : PLAIN_ROWS, cols, window_ns);
	if (v->tty)
		fputs("\033[J", stdout);
	else
		put_line(v, cols, "");
	fflush(stdout);
}

/* The controller drained the ring and closed the intervals so far (the
 * kernel's totals hold the short runs and waits never sent): everything up
 * to end_ns is in the recorder, for the view to take and release. */
static void refresh(void *ctx, struct controller_member *m, uint64_t end_ns)
{
	struct top_view *v = ctx;
	int n;

	(void)m;
	v->lost = controller_lost(v->ctl.session);
	n = py_thread_names(v->t->pid, &v->t->layout, v->t->interp_addr, v->names, MAX_NAMES);
	v->nnames = n > 0 ? n : 0;
	if (top_model_update(&v->model, recorder_profile(v->rec), recorder_analysis(v->rec),
			     end_ns - recorder_t0(v->rec)))
		die("out of memory");
	top_model_release(&v->model, recorder_profile(v->rec), recorder_analysis(v->rec));
	recorder_live_tasks(v->rec);
	list_threads(v);
	render(v);
}

/* 1 if the key asks to quit; a sort key re-renders at once. */
static int on_key(struct top_view *v, int key)
{
	switch (key) {
	case 'q': case 'Q':
		return 1;
	case 'o': case '1':
		v->sort = TOP_SORT_OWN;
		break;
	case 't': case '2':
		v->sort = TOP_SORT_TOTAL;
		break;
	case 'O': case '3':
		v->sort = TOP_SORT_OWN_ALL;
		break;
	case 'T': case '4':
		v->sort = TOP_SORT_TOTAL_ALL;
		break;
	case 'n': case '5':
		v->sort = TOP_SORT_NAME;
		break;
	default:
		return 0;
	}
	render(v);
	return 0;
}

static int should_stop(void *ctx)
{
	struct top_view *v = ctx;

	return stop_signal || v->quit;
}

static void on_tick(void *ctx, uint64_t now_ns)
{
	struct top_view *v = ctx;
	int key;

	(void)now_ns;
	while (!v->quit && (key = top_term_key()) >= 0)
		v->quit = on_key(v, key);
}

/* Recording starts before the first view: one now, then one per interval. */
static void start(struct top_view *v, char *err)
{
	/* one frame per function; every interval a period the view consumes */
	struct controller_config cc = {
		.rate_hz = v->o->rate_hz, .wait_threshold_ms = CONTROLLER_WAIT_THRESHOLD_MS,
		.by_function = 1, .duration_ns = (uint64_t)(v->o->duration_s * 1e9),
		.period_ns = (uint64_t)(v->o->interval_s * 1e9), .periods = CONTROLLER_PERIODS_LIVE,
		.should_stop = should_stop, .on_tick = on_tick, .on_period = refresh, .ctx = v,
		.labels = v->o->label.labels, .nlabels = v->o->label.nlabels, .dask = v->o->label.dask,
		.tasks = v->o->tasks,
	};

	if (preflight_btf(err, ERRLEN) || preflight_privileges(err, ERRLEN) ||
	    target_open(v->o->pid, v->t, err, ERRLEN))
		die(err);
	cc.gc_probes = session_gc_probes_for(v->t);
	if (controller_open(&v->ctl, &cc, err, ERRLEN))
		die(err);
	if (!controller_add(&v->ctl, v->t, -1, 0, err, ERRLEN))
		die(err);
	v->rec = controller_recorder(&v->ctl);
	if (v->o->by)
		top_model_by(&v->model, label_table_find(&recorder_analysis(v->rec)->labels, v->o->by));
}

int cmd_top(int argc, char **argv)
{
	struct top_options o = { .rate_hz = SESSION_DEFAULT_RATE_HZ, .interval_s = 1 };
	struct argp argp = { option_list, parse_option, "--pid PID | --match PATTERN", doc, NULL, NULL, NULL };
	struct top_view v = { .o = &o };
	char err[ERRLEN];

	argp_parse(&argp, argc, argv, 0, NULL, &o);
	frame_naming_set(&o.naming);
	if (o.match && (o.pid = target_match(o.match, err, sizeof(err))) < 0)
		die(err);
	v.t = calloc(1, sizeof(*v.t));
	v.names = calloc(MAX_NAMES, sizeof(*v.names));
	if (!v.t || !v.names)
		die("out of memory");
	top_model_init(&v.model);
	install_stop_signals();
	start(&v, err);
	procfs_cmdline(o.pid, v.cmd, sizeof(v.cmd));
	v.tty = top_term_open();
	controller_cut_period(&v.ctl);
	controller_run(&v.ctl);
	top_term_close();
	controller_stop(&v.ctl);
	controller_close(&v.ctl);
	top_model_free(&v.model);
	free(v.names);
	free(v.t);
	return 0;
}
