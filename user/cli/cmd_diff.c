// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ebpfprof diff BASE NEW, or A1 A2 A3 --vs B1 B2 B3: compares recordings
 * (the speedscope files ebpfprof writes) and reports what changed beyond the
 * noise, as text, JSON, a differential flame graph (HTML), differential
 * folded stacks, or a pprof pair for `go tool pprof -diff_base`.
 */
#define _GNU_SOURCE
#include <argp.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "commands.h"
#include "atomic_file.h"
#include "diff.h"
#include "printable.h"
#include "parse_num.h"
#include "writer.h"

enum diff_format { FMT_TEXT, FMT_JSON, FMT_HTML, FMT_COLLAPSED, FMT_PPROF };

struct diff_args {
	const char *paths[2][DIFF_MAX_RUNS];
	size_t npaths[2];
	const char *given[2 * DIFF_MAX_RUNS];	/* in command-line order */
	size_t ngiven;
	size_t vs_at;		/* how many were given before --vs */
	int saw_vs;
	int format;
	const char *output;
	struct diff_opts o;
};

static const char doc[] =
	"Compare recordings: what changed between BASE and NEW beyond the noise.\v"
	"BASE and NEW are speedscope files written by ebpfprof. The noise is the "
	"sampling noise of the counts (Poisson) plus a run-to-run spread: assumed "
	"(--run-noise), pooled with the spread measured between runs when a side has "
	"several (A1 A2 A3 --vs B1 B2 B3), so more runs never make it less sensitive. "
	"Figures are per second of recording.\n\n"
	"Examples:\n"
	"  ebpfprof diff gc.speedscope.json nogc.speedscope.json\n"
	"  ebpfprof diff --json a1.json a2.json a3.json --vs b1.json b2.json b3.json\n"
	"  ebpfprof diff base.json new.json -o diff.html       differential flame graph\n"
	"  ebpfprof diff base.json new.json -f collapsed       stack count_base count_new\n"
	"  ebpfprof diff base.json new.json -f pprof -o new.pb.gz   (BASE: new.base.pb.gz)";

enum { OPT_VS = 1000, OPT_JSON, OPT_TOP, OPT_MIN_MS, OPT_MIN_REL, OPT_Z, OPT_RUN_NOISE };

static const struct argp_option option_list[] = {
	{ "vs", OPT_VS, NULL, 0, "The runs before are BASE, the runs after are NEW", 0 },
	{ "json", OPT_JSON, NULL, 0, "Report as JSON (same as -f json)", 0 },
	{ "format", 'f', "FORMAT", 0, "text (default), json, html, collapsed or pprof", 0 },
	{ "output", 'o', "FILE", 0, "Write to FILE (default: standard output; html and pprof need it; a name ending in .html means -f html)", 0 },
	{ "top", OPT_TOP, "N", 0, "Functions listed per direction (default 10)", 0 },
	{ "min-ms-per-s", OPT_MIN_MS, "MS", 0, "Smallest change counted, in ms per second of recording (default 10)", 0 },
	{ "min-change", OPT_MIN_REL, "PERCENT", 0, "Smallest change counted, in % of the larger side (default 10)", 0 },
	{ "sigmas", OPT_Z, "Z", 0, "Width of the noise interval, in a normal's sigmas (a t test of the same tail; default 3)", 0 },
	{ "run-noise", OPT_RUN_NOISE, "PERCENT", 0, "Assumed run-to-run standard deviation, weighed as 10 degrees of freedom against the runs' own spread (default 4)", 0 },
	{ NULL, 0, NULL, 0, NULL, 0 },
};

static const char *const format_names[] = { "text", "json", "html", "collapsed", "pprof" };

static double parse_double(struct argp_state *state, const char *arg, double min, double max)
{
	double v;

	if (parse_real(arg, min, 0, max, &v))
		argp_error(state, "invalid value: %s (%g to %g)", arg, min, max);
	return v;
}

static int format_by_name(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(format_names) / sizeof(format_names[0]); i++)
		if (!strcmp(name, format_names[i]))
			return (int)i;
	return -1;
}

/* BASE NEW, or BASE's runs --vs NEW's runs. */
static void split_sides(struct argp_state *state, struct diff_args *a)
{
	size_t i, cut = a->saw_vs ? a->vs_at : 1;

	if (!a->saw_vs && a->ngiven > 2)
		argp_error(state, "more than two recordings: put --vs between BASE's runs and NEW's");
	if (cut > DIFF_MAX_RUNS || a->ngiven - cut > DIFF_MAX_RUNS)
		argp_error(state, "at most %d runs per side", DIFF_MAX_RUNS);
	for (i = 0; i < a->ngiven; i++) {
		int side = i >= cut;

		a->paths[side][a->npaths[side]++] = a->given[i];
	}
}

static error_t parse_option(int key, char *arg, struct argp_state *state)
{
	struct diff_args *a = state->input;
	unsigned long top;

	switch (key) {
	case OPT_VS:
		if (a->saw_vs)
			argp_error(state, "--vs given twice");
		a->saw_vs = 1;
		a->vs_at = a->ngiven;
		break;
	case OPT_JSON:
		a->format = FMT_JSON;
		break;
	case 'f':
		a->format = format_by_name(arg);
		if (a->format < 0)
			argp_error(state, "unknown format: %s (text, json, html, collapsed or pprof)", arg);
		break;
	case 'o':
		a->output = arg;
		break;
	case OPT_TOP:
		if (parse_ulong(arg, 1, 100000, &top))
			argp_error(state, "invalid --top: %s (1 to 100000)", arg);
		a->o.top = (int)top;
		break;
	case OPT_MIN_MS:
		a->o.min_abs = parse_double(state, arg, 0, 1e6) / 1e3;
		break;
	case OPT_MIN_REL:
		a->o.min_rel = parse_double(state, arg, 0, 100) / 100;
		break;
	case OPT_RUN_NOISE:
		a->o.run_noise = parse_double(state, arg, 0, 1000) / 100;
		break;
	case OPT_Z:
		a->o.z = parse_double(state, arg, 0, 100);
		break;
	case ARGP_KEY_ARG:
		if (a->ngiven == 2 * DIFF_MAX_RUNS)
			argp_error(state, "at most %d runs per side", DIFF_MAX_RUNS);
		a->given[a->ngiven++] = arg;
		break;
	case ARGP_KEY_END:
		split_sides(state, a);
		if (!a->npaths[0] || !a->npaths[1])
			argp_error(state, "need BASE and NEW recordings (BASE NEW, or BASE... --vs NEW...)");
		if ((a->format == FMT_HTML || a->format == FMT_PPROF) && !a->output)
			argp_error(state, "-f %s needs -o FILE", format_names[a->format]);
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

/* A recording older or newer than this binary compares, with one line said. */
static void say_note(const struct recording *r)
{
	char note[512], line[1024], shown[4 * sizeof(line)];

	if (!recording_note(r, note, sizeof(note)))
		return;
	/* state names come from the file: escaped for the terminal */
	snprintf(line, sizeof(line), "%s: %s", r->path, note);
	fprintf(stderr, "ebpfprof diff: %s\n", printable(line, shown, sizeof(shown)));
}

static int read_side(struct diff *d, struct diff_args *a, int side)
{
	char err[1024];
	size_t i;

	d->runs[side] = calloc(a->npaths[side], sizeof(*d->runs[side]));
	if (!d->runs[side]) {
		fprintf(stderr, "ebpfprof diff: out of memory\n");
		return -1;
	}
	for (i = 0; i < a->npaths[side]; i++) {
		if (recording_read(&d->runs[side][i], a->paths[side][i], err, sizeof(err))) {
			recording_free(&d->runs[side][i]);
			fprintf(stderr, "ebpfprof diff: %s\n", err);
			return -1;
		}
		say_note(&d->runs[side][i]);
		d->nruns[side]++;
	}
	return 0;
}

/* Every pair of runs, either side: one line and exit 1 if any differs in
 * what its samples hold. */
static int check_comparable(const struct diff *d)
{
	const struct recording *all[2 * DIFF_MAX_RUNS];
	char err[1024];
	size_t n = 0, i, j;
	int side;

	for (side = 0; side < 2; side++)
		for (i = 0; i < d->nruns[side]; i++)
			all[n++] = &d->runs[side][i];
	for (i = 0; i < n; i++)
		for (j = i + 1; j < n; j++)
			if (recordings_comparable(all[i], all[j], err, sizeof(err))) {
				fprintf(stderr, "ebpfprof diff: %s\n", err);
				return -1;
			}
	return 0;
}

typedef int (*diff_writer)(FILE *f, const struct diff *d);

struct diff_job {
	diff_writer fn;
	const struct diff *d;
};

static int write_diff_job(FILE *f, void *ctx)
{
	const struct diff_job *job = ctx;

	return job->fn(f, job->d);
}

static void cannot_write(const char *path, int err)
{
	char shown[1024];

	fprintf(stderr, "ebpfprof diff: cannot write %s: %s\n",
		printable(path, shown, sizeof(shown)), atomic_file_strerror(err));
}

/* Where BASE goes beside NEW's path: ".base" before ".pb.gz". */
static void pprof_base_path(const char *path, char *base, size_t len)
{
	size_t n = strlen(path);

	if (ends_with(path, ".pb.gz"))
		n -= 6;
	snprintf(base, len, "%.*s.base.pb.gz", (int)n, path);
}

/* The outputs are refused before the recordings are read, as record does. */
static int check_outputs(const struct diff_args *a)
{
	char base[4096];

	if (!a->output)
		return 0;
	if (atomic_file_check(a->output)) {
		cannot_write(a->output, errno);
		return -1;
	}
	if (a->format != FMT_PPROF)
		return 0;
	pprof_base_path(a->output, base, sizeof(base));
	if (atomic_file_check(base)) {
		cannot_write(base, errno);
		return -1;
	}
	return 0;
}

/* NEW's first run at path, BASE's at path with ".base" before ".pb.gz". */
static int write_pprof_pair(const char *path, const struct diff *d)
{
	struct writer_options wo = { 0 };
	char base[4096];

	pprof_base_path(path, base, sizeof(base));
	if (writer_write_file(&pprof_writer, &d->runs[1][0].prof, &wo, path)) {
		cannot_write(path, errno);
		return -1;
	}
	if (writer_write_file(&pprof_writer, &d->runs[0][0].prof, &wo, base)) {
		cannot_write(base, errno);
		return -1;
	}
	fprintf(stderr, "ebpfprof diff: wrote NEW to %s and BASE to %s "
		"(go tool pprof -top -diff_base %s %s)%s\n", path, base, base, path,
		d->nruns[0] > 1 || d->nruns[1] > 1 ? "; first run of each side only" : "");
	return 0;
}

static int write_output(struct diff_args *a, const struct diff *d)
{
	static const diff_writer writers[] = {
		[FMT_TEXT] = diff_report_text, [FMT_JSON] = diff_report_json,
		[FMT_HTML] = diff_write_flame_html, [FMT_COLLAPSED] = diff_write_folded,
	};
	struct diff_job job;

	if (a->format == FMT_PPROF)
		return write_pprof_pair(a->output, d);
	if (!a->output)
		return writers[a->format](stdout, d) || fflush(stdout) ? -1 : 0;
	job.fn = writers[a->format];
	job.d = d;
	if (atomic_file_write(a->output, 0, write_diff_job, &job)) {
		cannot_write(a->output, errno);
		return -1;
	}
	if (a->format != FMT_TEXT && a->format != FMT_JSON)
		fprintf(stderr, "ebpfprof diff: wrote %s to %s\n", format_names[a->format], a->output);
	return 0;
}

int cmd_diff(int argc, char **argv)
{
	struct diff_args a = { .o = { .z = 3.0, .run_noise = 0.04, .min_abs = 0.010, .min_rel = 0.10, .top = 10 } };
	struct argp argp = { option_list, parse_option, "BASE NEW | BASE... --vs NEW...", doc,
			     NULL, NULL, NULL };
	struct diff d = { 0 };
	int side, rc = 1;
	size_t i;

	a.format = -1;
	argp_parse(&argp, argc, argv, ARGP_IN_ORDER, NULL, &a);
	if (a.format < 0)
		a.format = a.output && ends_with(a.output, ".html") ? FMT_HTML : FMT_TEXT;
	d.o = a.o;
	if (check_outputs(&a) || read_side(&d, &a, 0) || read_side(&d, &a, 1) ||
	    check_comparable(&d))
		goto out;
	if (diff_build(&d)) {
		fprintf(stderr, "ebpfprof diff: out of memory\n");
		goto out;
	}
	rc = write_output(&a, &d) ? 1 : 0;
out:
	diff_free(&d);
	for (side = 0; side < 2; side++) {
		for (i = 0; i < d.nruns[side]; i++)
			recording_free(&d.runs[side][i]);
		free(d.runs[side]);
	}
	return rc;
}
