/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What record makes of one process's recording (the only one, or one of a
 * group of many): the profile in the chosen format, or with --rotate each
 * period's, named by its start time and kept to --keep; the GC log; the run
 * stored in the history; each period pushed (--push); and the summary. The
 * front end turns its options into one outputs_config and calls these from
 * the controller's hooks:
 *
 *	outputs_init	the paths, checked before anything is recorded
 *	outputs_period	on_period: the period just cut, written and pushed
 *	outputs_last	on_end: the last profile (or period), the history run
 *	outputs_summary	what was recorded, the state table, what was lost
 *	outputs_free
 */
#ifndef EP_OUTPUTS_H
#define EP_OUTPUTS_H
#include <signal.h>
#include <stddef.h>
#include <time.h>
#include "controller.h"
#include "history.h"
#include "pusher.h"
#include "rotate.h"
#include "writer.h"

struct outputs_config {
	const struct output_writer *writer;
	const char *history;		/* --history SERIES: the run stored; NULL: none */
	const char *history_db;		/* NULL: the user's default */
	const char *const *tags;	/* --tag KEY=VALUE */
	size_t ntags;
	double wait_threshold_ms;	/* the GC log's shortest wait */
	double gc_min_ms;		/* chrome: the shortest pause drawn as a slice */
	const char *group_by;		/* speedscope: a profile per value of this label */
	int threads;			/* collapsed: stacks under their thread */
	int idle, gil_only, subprocesses;	/* what was recorded, for the summary */
	int verbose;
	int rotate;			/* a file per period, named by its start */
	unsigned keep;			/* --rotate: the newest periods kept; 0: all */
	const char *output_option;	/* -o as given: a single recording's history source */
	volatile sig_atomic_t *stop_signal;	/* the signal that stopped the run, 0: none */
};

struct outputs {
	const struct outputs_config *cfg;
	struct pusher *pusher;		/* --push; NULL: none */
	char *output;			/* the profile's path (--rotate: the base of the names) */
	int files;			/* profile files are written (not with --push alone) */
	char *gc_log;			/* NULL: none */
	int several;			/* one of a group of many: the session's losses said once */
	struct rotation rotation;
	struct timespec period_start;	/* wall clock, for the names */
	struct controller_member *m;	/* the recording, bound at each call */
};

/* out's paths: output (files: a profile is written there) and gc_log
 * (NULL: none), copied. 0, or -1 with err filled. */
int outputs_init(struct outputs *out, const struct outputs_config *cfg, const char *output,
		 int files, const char *gc_log, struct pusher *pusher, int several,
		 char *err, size_t errlen);
void outputs_free(struct outputs *out);
/* --history: the database opened and closed at once, so that one refused
 * is said before the recording. 0, or -1 with err filled. */
int outputs_check_history(const struct outputs_config *cfg, char *err, size_t errlen);

/* The period m's recorder holds (the controller cut it) is written, pushed,
 * the oldest files beyond --keep deleted, and said in one line. 0, or -1
 * with err filled (a file that could not be written). */
int outputs_period(struct outputs *out, struct controller_member *m, char *err, size_t errlen);
/* m's finished profile: written (--rotate: as its last period) with its GC
 * log, stored in the history. 0, or -1 with err filled; the paths written
 * go to prof and log (empty: none) for outputs_summary. */
int outputs_last(struct outputs *out, struct controller_member *m, char *prof, char *log,
		 size_t len, char *err, size_t errlen);
/* The summary of m's recording: what was recorded and where, the state
 * table, who held the GIL, the longest pauses, what was lost (the
 * session's too when not one of several). */
void outputs_summary(struct outputs *out, struct controller_member *m, const char *prof,
		     const char *log);

#endif
