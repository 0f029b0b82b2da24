/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Run history: each recording's figures kept in an SQLite database
 * (history_store.c), taken from a recording read back (history_metrics.c),
 * judged run after run by Coiled's rule (history_check.c) and drawn as
 * trends (history_plot.c).
 */
#ifndef EP_HISTORY_H
#define EP_HISTORY_H
#include <stddef.h>
#include <stdio.h>
#include "diff.h"
#include "hash_index.h"

/* 1: runs, tags, metrics. 2: runs.kind ("recording": one recording's
 * figures; "dask-cluster": a cluster's, with its task prefixes). */
#define HIST_SCHEMA_VERSION 2
/* Functions kept per process: the first HIST_TOP_FUNCTIONS by total share
 * and every one whose self or total share is at least HIST_KEEP_SHARE. */
#define HIST_TOP_FUNCTIONS 50
#define HIST_KEEP_SHARE 0.005
#define HIST_MAX_TAGS 32

/* One figure of a run. kind: "state" (seconds in a state, per process when
 * thread is "" and per thread), "gc" (name "gen N": count, total_s, p50_s,
 * p99_s, max_s), "fn" (name "function (file)": self_s, total_s, self_share
 * and total_share of the process's on-CPU time), "holder" (GIL waits of
 * the process behind the function their holder ran: seconds).
 * A Dask cluster's run (kind "dask-cluster") has the states and GC of each
 * role ("scheduler", "workers" summed) as process, and per task prefix:
 * "prefix" (name the prefix: tasks, time_s the thread-seconds under it,
 * gc_count, gc_s), "prefix_state" (name the prefix, field a state: seconds)
 * and "prefix_fn" (thread the prefix, name "function (file)": self_s,
 * total_s), process "workers". */
struct hist_metric {
	char *kind, *process, *thread, *name, *field;
	double value;
};

struct hist_run {
	long long id;
	char *series;
	long long at;		/* Unix seconds */
	char *kind;		/* "recording" or "dask-cluster" */
	char *host, *kernel, *python, *command, *source;
	double duration_s;
	char *tags[HIST_MAX_TAGS];	/* "key=value" */
	size_t ntags;
	struct hist_metric *m;
	size_t nm, cap;
};

void hist_run_free(struct hist_run *run);
int hist_run_add(struct hist_run *run, const char *kind, const char *process,
		 const char *thread, const char *name, const char *field, double value);
/* A run's figures from a recording read back; -1 out of memory. */
int hist_metrics_from_recording(struct hist_run *run, const struct recording *r);
/* "function (file)", or the name of a marker. */
void hist_function_label(char *out, size_t len, const struct frame_info *fr);
/* Adds tag to tags (HIST_MAX_TAGS of them): NULL, or why not. */
const char *hist_tag_take(const char **tags, size_t *ntags, const char *tag);
/* "k=v" with a non-empty key of [A-Za-z0-9_.-]; 0 if so. */
int hist_tag_valid(const char *tag);

/* ---- the store ---- */
struct hist_db;

/* The default database of the user who ran ebpfprof (under sudo, the sudo
 * user's): $XDG_DATA_HOME/ebpfprof/history.db, else
 * ~/.local/share/ebpfprof/history.db; with create, its folders are made
 * (theirs). -1 and a one-line reason if there is no home. */
int hist_default_path(char *out, size_t len, int create, char *err, size_t errlen);
/* Opens (create: makes) the database at path, migrated to this schema.
 * -1 and a one-line reason: missing, corrupt, not ours, newer schema. */
int hist_db_open(struct hist_db **db, const char *path, int create, char *err, size_t errlen);
void hist_db_close(struct hist_db *db);
/* Stores run in one transaction; run->id set. */
int hist_db_add(struct hist_db *db, struct hist_run *run, char *err, size_t errlen);
/* The last n runs of series (all when n is 0), oldest first, with their
 * figures when with_metrics. */
int hist_db_runs(struct hist_db *db, const char *series, size_t n, int with_metrics,
		 struct hist_run **runs, size_t *nruns, char *err, size_t errlen);
/* Run id with its figures; 1 if there is none. */
int hist_db_run(struct hist_db *db, long long id, struct hist_run *run, char *err, size_t errlen);
void hist_runs_free(struct hist_run *runs, size_t n);

/* What a stored recording is filed under. */
struct hist_add {
	const char *series;
	const char *source;	/* its file, or "" */
	long long at;		/* when it was made, Unix seconds */
	const char *const *tags;	/* "key=value", valid */
	size_t ntags;
};

/* Stores recording r as a run of a->series; *id its number. */
int hist_add_recording(struct hist_db *db, const struct hist_add *a, const struct recording *r,
		       long long *id, char *err, size_t errlen);

/* A run's figures another tool worked out (ebpfprof-dask: a cluster's),
 * read from a JSON document (history_import.c) of format
 * HIST_RUN_FORMAT_VERSION: {"format":1, "kind", "at", "host", "kernel",
 * "python", "command", "source", "duration_s", "figures": [[kind, process,
 * thread, name, field, value], ...]}. Every field is checked: -1 and a
 * one-line reason. The run is filed under a->series with a->tags. */
#define HIST_RUN_FORMAT_VERSION 1
#define HIST_MAX_FIGURES 1000000
int hist_run_from_json(struct hist_run *run, const struct hist_add *a, const char *text,
		       size_t len, char *err, size_t errlen);

/* ---- Coiled's rule ---- */
struct hist_rule {
	size_t last, window;
	double sigmas;
	double floor;		/* in the metric's unit (percent) */
};

enum hist_verdict { HIST_SAME = 0, HIST_REGRESSED = 1, HIST_IMPROVED = -1 };

struct hist_stats {
	double mean, sd, bar;	/* bar: max(sigmas * sd, floor) */
};

/* The verdict of one metric: regressed when each of the last values is
 * above the mean of the window before them by more than the bar, improved
 * when each is below it by more; values has window + last entries, oldest
 * first. */
int hist_judge(const double *values, const struct hist_rule *rule, struct hist_stats *st);

/* A judged series: per metric a row of values over its runs. */
enum hist_unit {
	HIST_PER_SECOND,	/* seconds per second of recording */
	HIST_SHARE,		/* share of the process's on-CPU time */
	HIST_PER_TASK_SECOND,	/* a prefix's seconds per second of its task time */
};

struct hist_series_metric {
	char *key;		/* kind, process, name, field joined by '\x1f' */
	char *label;		/* as printed */
	int is_share;		/* unit == HIST_SHARE */
	enum hist_unit unit;
	int judged;		/* 0: kept for another's sake (a prefix's time) */
	long per;		/* HIST_PER_TASK_SECOND: its prefix's time metric */
	double *values;		/* percent, per run */
	int verdict;
	struct hist_stats st;
};

struct hist_series {
	struct hist_run *runs;
	size_t nruns;
	struct hist_series_metric *metrics;
	size_t nmetrics, cap;
	struct hash_index by_key;	/* metrics by key */
};

/* The judged metrics of runs (oldest first): -1 out of memory. */
int hist_series_build(struct hist_series *s, struct hist_run *runs, size_t nruns);
/* Judges every metric over the last window + last runs. */
void hist_series_judge(struct hist_series *s, const struct hist_rule *rule);
void hist_series_free(struct hist_series *s);
/* The check's report; returns the number of regressions. */
size_t hist_check_report(FILE *f, const struct hist_series *s, const struct hist_rule *rule,
			 const char *series);

int hist_plot_html(FILE *f, const struct hist_series *s, const struct hist_rule *rule,
		   const char *series);

#endif
