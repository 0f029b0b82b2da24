// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ebpfprof history: the run history (user/history/).
 *   history add SERIES REC... [--tag k=v]   store recordings made before
 *   history add-run SERIES FILE|- [--tag k=v] store a run's figures (ebpfprof-dask's)
 *   history list SERIES                      its runs
 *   history show RUN                         one run's figures
 *   history check SERIES                     Coiled's rule; exit 1 on a regression
 *   history plot SERIES -o trend.html        the trends, flagged runs marked
 */
#define _GNU_SOURCE
#include <argp.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include "commands.h"
#include "atomic_file.h"
#include "history.h"
#include "parse_num.h"
#include "printable.h"
#include "sudo_user.h"

#define MAX_ARGS 1024

struct history_args {
	const char *action;
	const char *args[MAX_ARGS];
	size_t nargs;
	const char *tags[HIST_MAX_TAGS];
	size_t ntags;
	const char *db_path;
	const char *output;
	struct hist_rule rule;
};

static const char doc[] =
	"The run history: each run's figures kept in an SQLite database, judged run after run.\v"
	"Actions:\n"
	"  add SERIES REC...        store recordings (speedscope files ebpfprof wrote) as runs\n"
	"  add-run SERIES FILE      store a run's figures another tool worked out (JSON, - for "
	"stdin): ebpfprof-dask's cluster runs, with their task prefixes\n"
	"  list SERIES              the runs of SERIES\n"
	"  show RUN                 one run's figures\n"
	"  check SERIES             a metric regressed when each of the last runs (--last) is above "
	"the mean of the runs before them (--window) by more than max(--sigmas standard "
	"deviations, --floor); functions by their share of the process's on-CPU time, a task "
	"prefix's states by seconds per second of its task time, states, GC and GIL waits by "
	"seconds per second. Exit 1 on a regression, 0 otherwise (too few "
	"runs too: it says how many more it needs)\n"
	"  plot SERIES -o FILE.html the trends of states, GC, the top functions and task prefixes, "
	"flagged runs "
	"marked (a self-contained page)\n\n"
	"The database: --history-db PATH, else $XDG_DATA_HOME/ebpfprof/history.db of the user "
	"who ran ebpfprof (under sudo, the sudo user's). `ebpfprof --history SERIES ...` "
	"stores a recording as it ends.";

enum { OPT_TAG = 1000, OPT_DB, OPT_LAST, OPT_WINDOW, OPT_SIGMAS, OPT_FLOOR };

static const struct argp_option option_list[] = {
	{ "tag", OPT_TAG, "KEY=VALUE", 0, "add, add-run: a tag of the runs (a commit, gc-off); "
	  "repeatable", 0 },
	{ "history-db", OPT_DB, "PATH", 0, "The database (default: ~/.local/share/ebpfprof/history.db)", 0 },
	{ "last", OPT_LAST, "N", 0, "check: runs judged (default 3)", 0 },
	{ "window", OPT_WINDOW, "N", 0, "check: runs before them (default 10)", 0 },
	{ "sigmas", OPT_SIGMAS, "Z", 0, "check: standard deviations of the bar (default 3)", 0 },
	{ "floor", OPT_FLOOR, "PERCENT", 0, "check: smallest bar, in % of on-CPU time for functions "
	  "and of a second per second (10 ms/s per %) for the rest (default 1)", 0 },
	{ "output", 'o', "FILE", 0, "plot: the page", 0 },
	{ NULL, 0, NULL, 0, NULL, 0 },
};

static size_t count_arg(struct argp_state *state, const char *arg, unsigned long min,
			unsigned long max)
{
	unsigned long v;

	if (parse_ulong(arg, min, max, &v))
		argp_error(state, "invalid value: %s (%lu to %lu)", arg, min, max);
	return v;
}

static void check_arity(struct argp_state *state, struct history_args *a)
{
	int many = !strcmp(a->action, "add");

	if (!strcmp(a->action, "add-run")) {
		if (a->nargs != 2)
			argp_error(state, "add-run needs SERIES and one FILE (- for stdin)");
	} else if (!strcmp(a->action, "add") || !strcmp(a->action, "list") ||
	    !strcmp(a->action, "check") || !strcmp(a->action, "plot")) {
		if (many ? a->nargs < 2 : a->nargs != 1)
			argp_error(state, "%s needs SERIES%s", a->action, many ? " and recordings" : " only");
	} else if (!strcmp(a->action, "show")) {
		if (a->nargs != 1)
			argp_error(state, "show needs one RUN number");
	} else {
		argp_error(state, "unknown action: %s (add, add-run, list, show, check, plot)",
			   a->action);
	}
	if (!strcmp(a->action, "plot") && !a->output)
		argp_error(state, "plot needs -o FILE.html");
	if (a->ntags && strcmp(a->action, "add") && strcmp(a->action, "add-run"))
		argp_error(state, "--tag is for add and add-run");
}

static error_t parse_option(int key, char *arg, struct argp_state *state)
{
	struct history_args *a = state->input;
	const char *why;

	switch (key) {
	case OPT_TAG:
		why = hist_tag_take(a->tags, &a->ntags, arg);
		if (why)
			argp_error(state, "%s: %s", why, arg);
		break;
	case OPT_DB:
		a->db_path = arg;
		break;
	case OPT_LAST:
		a->rule.last = count_arg(state, arg, 1, 1000);
		break;
	case OPT_WINDOW:
		a->rule.window = count_arg(state, arg, 2, 10000);
		break;
	case OPT_SIGMAS:
		if (parse_real(arg, 0, 0, 100, &a->rule.sigmas))
			argp_error(state, "invalid --sigmas: %s (0 to 100)", arg);
		break;
	case OPT_FLOOR:
		if (parse_real(arg, 0, 0, 100, &a->rule.floor))
			argp_error(state, "invalid --floor: %s (0 to 100)", arg);
		break;
	case 'o':
		a->output = arg;
		break;
	case ARGP_KEY_ARG:
		if (!a->action)
			a->action = arg;
		else if (a->nargs == MAX_ARGS)
			argp_error(state, "at most %d arguments", MAX_ARGS);
		else
			a->args[a->nargs++] = arg;
		break;
	case ARGP_KEY_END:
		if (!a->action)
			argp_error(state, "need an action: add, add-run, list, show, check or plot");
		check_arity(state, a);
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static void fail_line(const char *what)
{
	char shown[4096];

	fprintf(stderr, "ebpfprof history: %s\n", printable(what, shown, sizeof(shown)));
}

static int open_db(const struct history_args *a, int create, struct hist_db **db)
{
	char path[4096], err[4096];

	if (a->db_path)
		snprintf(path, sizeof(path), "%s", a->db_path);
	else if (hist_default_path(path, sizeof(path), create, err, sizeof(err))) {
		fail_line(err);
		return -1;
	}
	if (hist_db_open(db, a->db_path ? a->db_path : path, create, err, sizeof(err))) {
		fail_line(err);
		return -1;
	}
	return 0;
}

static int add_one(struct hist_db *db, const struct history_args *a, const char *path)
{
	struct hist_add add = { a->args[0], path, 0, a->tags, a->ntags };
	struct recording r;
	struct stat sb;
	char err[4096];
	long long id;
	int rc;

	if (recording_read(&r, path, err, sizeof(err))) {
		recording_free(&r);
		fail_line(err);
		return -1;
	}
	add.at = stat(path, &sb) ? (long long)time(NULL) : (long long)sb.st_mtime;
	rc = hist_add_recording(db, &add, &r, &id, err, sizeof(err));
	recording_free(&r);
	if (rc) {
		fail_line(err);
		return -1;
	}
	printf("run #%lld: %s\n", id, path);
	return 0;
}

static int do_add(const struct history_args *a, struct hist_db *db)
{
	size_t i;

	for (i = 1; i < a->nargs; i++)
		if (add_one(db, a, a->args[i]))
			return 1;
	return 0;
}

/* FILE's bytes (stdin for "-"), at most RUN_FILE_MAX; NULL and errno. */
#define RUN_FILE_MAX (256 << 20)
static char *read_all(const char *path, size_t *len)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "rbe") : stdin;
	size_t cap = 1 << 16, n;
	char *buf = malloc(cap), *grown;

	*len = 0;
	if (!f || !buf)
		goto fail;
	while ((n = fread(buf + *len, 1, cap - *len, f)) > 0) {
		*len += n;
		if (*len < cap)
			continue;
		if (cap >= RUN_FILE_MAX) {
			errno = EFBIG;
			goto fail;
		}
		grown = realloc(buf, cap *= 2);
		if (!grown)
			goto fail;
		buf = grown;
	}
	if (ferror(f))
		goto fail;
	if (f != stdin)
		fclose(f);
	return buf;
fail:
	if (f && f != stdin)
		fclose(f);
	free(buf);
	return NULL;
}

static int do_add_run(const struct history_args *a, struct hist_db *db)
{
	struct hist_add add = { a->args[0], a->args[1], 0, a->tags, a->ntags };
	const char *path = a->args[1];
	struct hist_run run;
	char err[4096], line[4200];
	size_t len;
	char *text = read_all(path, &len);
	int rc;

	if (!text) {
		snprintf(line, sizeof(line), "%s: cannot read: %s", path, strerror(errno));
		fail_line(line);
		return 1;
	}
	rc = hist_run_from_json(&run, &add, text, len, err, sizeof(err));
	free(text);
	if (rc) {
		snprintf(line, sizeof(line), "%s: %s", path, err);
		fail_line(line);
		return 1;
	}
	rc = hist_db_add(db, &run, err, sizeof(err));
	if (rc)
		fail_line(err);
	else
		printf("run #%lld: %s\n", run.id, path);
	hist_run_free(&run);
	return rc ? 1 : 0;
}

static void print_when(FILE *f, long long at)
{
	time_t t = (time_t)at;
	struct tm tm;
	char when[32];

	if (!gmtime_r(&t, &tm) || !strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm))
		snprintf(when, sizeof(when), "%lld", at);
	fprintf(f, "%s", when);
}

static void print_tags(FILE *f, const struct hist_run *run)
{
	char shown[1024];
	size_t i;

	for (i = 0; i < run->ntags; i++)
		fprintf(f, " %s", printable(run->tags[i], shown, sizeof(shown)));
}

static int do_list(const struct history_args *a, struct hist_db *db)
{
	struct hist_run *runs;
	size_t n, i;
	char err[4096], shown[1024];

	if (hist_db_runs(db, a->args[0], 0, 0, &runs, &n, err, sizeof(err))) {
		fail_line(err);
		return 1;
	}
	if (!n)
		printf("series %s: no runs\n", printable(a->args[0], shown, sizeof(shown)));
	else
		printf("%6s  %-19s  %8s  %-6s  %s\n", "run", "when (UTC)", "duration", "python",
		       "host, command, tags");
	for (i = 0; i < n; i++) {
		printf("%6lld  ", runs[i].id);
		print_when(stdout, runs[i].at);
		printf("  %7.2fs  %-6s", runs[i].duration_s,
		       printable(runs[i].python, shown, sizeof(shown)));
		printf("  %s", printable(runs[i].host, shown, sizeof(shown)));
		printf(", %s", printable(runs[i].command, shown, sizeof(shown)));
		print_tags(stdout, &runs[i]);
		printf("\n");
	}
	hist_runs_free(runs, n);
	return 0;
}

static void print_figures(const struct hist_run *run)
{
	char line[4096], shown[4 * sizeof(line)];
	size_t i;

	for (i = 0; i < run->nm; i++) {
		const struct hist_metric *m = &run->m[i];

		snprintf(line, sizeof(line), "  %-6s %s%s%s  %s  %s", m->kind, m->process,
			 m->thread[0] ? " / " : "", m->thread, m->name, m->field);
		printf("%s = %.6g\n", printable(line, shown, sizeof(shown)), m->value);
	}
}

/* The figure of kind, name and field in process (thread ""), 0 if none. */
static double figure(const struct hist_run *run, const char *kind, const char *process,
		     const char *thread, const char *name, const char *field)
{
	size_t i;

	for (i = 0; i < run->nm; i++) {
		const struct hist_metric *m = &run->m[i];

		if (!strcmp(m->kind, kind) && !strcmp(m->process, process) &&
		    !strcmp(m->thread, thread) && !strcmp(m->name, name) && !strcmp(m->field, field))
			return m->value;
	}
	return 0;
}

/* One prefix: its tasks and time, its states with their share of its
 * time, its collections, its top functions. */
static void print_prefix(const struct hist_run *run, const struct hist_metric *p)
{
	double time = p->value;
	char shown[4096];
	size_t i;

	printf("  %s: %.0f tasks, %.3f s", printable(p->name, shown, sizeof(shown)),
	       figure(run, "prefix", p->process, "", p->name, "tasks"), time);
	for (i = 0; i < run->nm; i++) {
		const struct hist_metric *m = &run->m[i];

		if (!strcmp(m->kind, "prefix_state") && !strcmp(m->process, p->process) &&
		    !strcmp(m->name, p->name) && m->value > 0)
			printf("; %s %.3f s (%.2f s per task-second)", printable(m->field, shown,
			       sizeof(shown)), m->value, time > 0 ? m->value / time : 0);
	}
	printf("; %.0f collections, %.3f s\n",
	       figure(run, "prefix", p->process, "", p->name, "gc_count"),
	       figure(run, "prefix", p->process, "", p->name, "gc_s"));
	for (i = 0; i < run->nm; i++) {
		const struct hist_metric *m = &run->m[i];

		if (!strcmp(m->kind, "prefix_fn") && !strcmp(m->process, p->process) &&
		    !strcmp(m->thread, p->name) && !strcmp(m->field, "self_s"))
			printf("    %8.3f s  %s\n", m->value, printable(m->name, shown, sizeof(shown)));
	}
}

/* A cluster run's task prefixes, as stored (most time first). */
static void print_prefixes(const struct hist_run *run)
{
	size_t i, n = 0;

	for (i = 0; i < run->nm; i++)
		n += !strcmp(run->m[i].kind, "prefix") && !strcmp(run->m[i].field, "time_s");
	if (!n)
		return;
	printf("task prefixes (%zu; time in thread-seconds, top functions by self on-CPU time):\n", n);
	for (i = 0; i < run->nm; i++)
		if (!strcmp(run->m[i].kind, "prefix") && !strcmp(run->m[i].field, "time_s"))
			print_prefix(run, &run->m[i]);
}

static int do_show(const struct history_args *a, struct hist_db *db)
{
	struct hist_run run;
	unsigned long id;
	char err[4096], shown[4096];
	int rc;

	if (parse_ulong(a->args[0], 1, (1UL << 62), &id)) {
		fail_line("show: RUN is a run's number (history list SERIES)");
		return 2;
	}
	rc = hist_db_run(db, (long long)id, &run, err, sizeof(err));
	if (rc) {
		if (rc > 0)
			fprintf(stderr, "ebpfprof history: no run #%lu\n", id);
		else
			fail_line(err);
		return 1;
	}
	printf("run #%lld of series %s\nwhen: ", run.id, printable(run.series, shown, sizeof(shown)));
	print_when(stdout, run.at);
	printf(" UTC\nhost: %s\n", printable(run.host, shown, sizeof(shown)));
	printf("kernel: %s\n", printable(run.kernel, shown, sizeof(shown)));
	/* the database's: a file anyone may have written */
	printf("python: %s\n", printable(run.python, shown, sizeof(shown)));
	printf("command: %s\n", printable(run.command, shown, sizeof(shown)));
	printf("source: %s\nduration: %.3f s\ntags:", printable(run.source, shown, sizeof(shown)),
	       run.duration_s);
	print_tags(stdout, &run);
	printf("\nkind: %s\n", printable(run.kind, shown, sizeof(shown)));
	print_prefixes(&run);
	printf("figures (%zu):\n", run.nm);
	print_figures(&run);
	hist_run_free(&run);
	return 0;
}

struct plot_job {
	const struct hist_series *s;
	const struct hist_rule *rule;
	const char *series;
};

static int write_plot(FILE *f, void *ctx)
{
	const struct plot_job *job = ctx;

	return hist_plot_html(f, job->s, job->rule, job->series);
}

static int do_judged(const struct history_args *a, struct hist_db *db)
{
	struct hist_series s;
	struct hist_run *runs;
	size_t n, regressed;
	char err[4096], shown[1024];
	int plot = !strcmp(a->action, "plot");

	/* plot draws the whole series, check reads what it judges */
	if (hist_db_runs(db, a->args[0], plot ? 0 : a->rule.window + a->rule.last, 1, &runs, &n,
			 err, sizeof(err))) {
		fail_line(err);
		return 1;
	}
	if (hist_series_build(&s, runs, n)) {
		fail_line("out of memory");
		hist_series_free(&s);
		hist_runs_free(runs, n);
		return 1;
	}
	hist_series_judge(&s, &a->rule);
	printable(a->args[0], shown, sizeof(shown));
	if (plot) {
		struct plot_job job = { &s, &a->rule, shown };

		regressed = atomic_file_write(a->output, 0, write_plot, &job);
		if (regressed)
			fprintf(stderr, "ebpfprof history: cannot write %s: %s\n", a->output,
				atomic_file_strerror(errno));
		else
			fprintf(stderr, "ebpfprof history: wrote %s (%zu runs)\n", a->output, n);
	} else {
		regressed = hist_check_report(stdout, &s, &a->rule, shown);
	}
	hist_series_free(&s);
	hist_runs_free(runs, n);
	return regressed ? 1 : 0;
}

int cmd_history(int argc, char **argv)
{
	struct history_args a = { .rule = { .last = 3, .window = 10, .sigmas = 3, .floor = 1 } };
	struct argp argp = { option_list, parse_option, "ACTION [ARGS...]", doc, NULL, NULL, NULL };
	struct fs_identity root;
	struct hist_db *db;
	int add, rc = 1;

	argp_parse(&argp, argc, argv, 0, NULL, &a);
	add = !strcmp(a.action, "add") || !strcmp(a.action, "add-run");
	/* the database, the recordings added and the plot are the user's
	 * files: under sudo, read and written as them */
	sudo_fs_enter(&root);
	if (open_db(&a, add, &db))
		goto out;
	if (!strcmp(a.action, "add"))
		rc = do_add(&a, db);
	else if (!strcmp(a.action, "add-run"))
		rc = do_add_run(&a, db);
	else if (!strcmp(a.action, "list"))
		rc = do_list(&a, db);
	else if (!strcmp(a.action, "show"))
		rc = do_show(&a, db);
	else
		rc = do_judged(&a, db);
	hist_db_close(db);
out:
	sudo_fs_leave(&root);
	return rc;
}
