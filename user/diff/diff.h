/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * ebpfprof diff: recordings read back (diff_read.c), compared line by line
 * with a noise model (diff_model.c), reported as text or JSON
 * (diff_report.c), drawn as a differential flame graph (diff_flame.c) or
 * written as differential folded stacks (diff_folded.c).
 */
#ifndef EP_DIFF_H
#define EP_DIFF_H
#include <stddef.h>
#include <stdio.h>
#include "profile.h"

#define DIFF_NSTATES STATE_RECORDED	/* the states a thread's time is split into */
#define DIFF_MAX_RUNS 32
/* The assumed run-to-run noise weighs as much as this many degrees of
 * freedom of measured spread (11 runs' worth) in a side's variance. */
#define DIFF_PRIOR_DF 10
/* The name of a recording's profile of what the GIL holders ran. */
#define GIL_HOLDERS_PREFIX "[GIL holders] "

struct rec_thread {
	char *name;		/* Python thread name */
	char *process;		/* process name */
	int pid;		/* -1 if the file gives none */
	double states_s[DIFF_NSTATES];	/* enum sample_state */
};

/* A label's value (--label, --dask), its time per state (format 3 on). */
struct rec_label {
	char *label, *value;
	double states_s[DIFF_NSTATES];
};

/* A recording's label values read, at most: beyond, the rest are left out. */
#define DIFF_MAX_LABEL_VALUES	100000

struct rec_gc {
	char *process;
	int generation;
	double count, total_s, p50_s, p99_s, max_s;
};

/* One recording: the speedscope file ebpfprof wrote, read back. */
struct recording {
	const char *path;
	struct profile prof;	/* frames and, per profile, its samples */
	/* the "[GIL holders] <process> (pid N)" profiles, one thread each named
	 * by that process: their frames are prof's ids (holders has none) */
	struct profile holders;
	/* record --tasks' "[asyncio tasks] <process> (pid N)" profiles, the same
	 * way: suspended task-seconds per stack */
	struct profile tasks;
	uint32_t *frame_map;	/* the file's frame index -> prof's frame id */
	size_t nfile_frames;
	double wall_s;
	unsigned rate_hz;
	unsigned long samples;
	int has_states;		/* the file has the "ebpfprof" object */
	int version;		/* its format (RECORDING_FORMAT_VERSION) */
	/* states its threads have time in that this table does not know (left
	 * out), and states of the table no thread of it has (read as 0): a
	 * recording older or newer than this binary still compares */
	char unknown_states[160];
	unsigned missing_states;	/* a bit per enum sample_state */
	char python[16];	/* the CPython version ("3.11"), "" if not said */
	char *command;		/* the file's name: what was profiled, or NULL */
	int idle, gil_only;	/* recorded with --idle, --gil; -1 not said */
	int gc_exact;		/* GC time from the collector's probes, not samples */
	int on_cpu_exact;	/* on-CPU state time from the scheduler, not samples */
	struct rec_thread *threads;
	size_t nthreads;
	struct rec_gc *gcs;
	size_t ngcs;
	struct rec_label *labels;
	size_t nlabels;
};

/* Reads path; on failure writes a one-line reason to err and returns -1. */
int recording_read(struct recording *r, const char *path, char *err, size_t errlen);
/* 0 if a and b sample the same things; else -1 and a one-line reason. */
int recordings_comparable(const struct recording *a, const struct recording *b,
			  char *err, size_t errlen);
/* The same from len bytes at data (the fuzzer's), named name. */
int recording_read_buffer(struct recording *r, const char *name, const char *data, size_t len,
			  char *err, size_t errlen);
void recording_free(struct recording *r);
/* What of the recording was not as this binary writes it (a newer format, a
 * state unknown or missing), in one line into out; 0 if nothing, else 1. */
int recording_note(const struct recording *r, char *out, size_t len);

/* ---- the comparison ---- */

enum line_kind {
	LINE_STATE,		/* a state's time, per process or thread */
	LINE_GC_COUNT,		/* collections per process and generation */
	LINE_GC_TOTAL,		/* their total time */
	LINE_SELF,		/* a function's self time */
	LINE_TOTAL,		/* a function's total (inclusive) time */
	LINE_HOLDER,		/* GIL waits behind a function its holder ran, per process */
	LINE_LABEL,		/* a state's time under a label value (process: the
				 * label, thread: the value) */
	LINE_TASK,		/* suspended task-seconds per task and what it awaits, per process */
};

enum verdict {
	VERDICT_SAME,		/* nothing on either side */
	VERDICT_NOISE,		/* within noise */
	VERDICT_GREW,
	VERDICT_SHRANK,
};

/* One compared quantity: per run, its amount (seconds, or a count) and the
 * equivalent number of samples its sampling noise is Poisson in. */
struct diff_line {
	int kind;		/* enum line_kind */
	char *process, *thread;	/* thread NULL for a process's total */
	int state;		/* LINE_STATE */
	int generation;		/* LINE_GC_* */
	char *function, *file;	/* LINE_SELF / LINE_TOTAL */
	/* [side][run]: one block sized by the runs (a recording may make
	 * millions of lines: 32 runs a side each would be gigabytes) */
	double *v[2];		/* amount */
	double *n[2];		/* equivalent samples */
	double pause_s[2][3];	/* LINE_GC_COUNT: [side] p50, p99, max summed */
	size_t npauses[2];	/* over this many entries */
	/* results, per second of recording, averaged over the runs of a side */
	double amount[2];	/* mean amount per run */
	double rate[2];		/* mean amount per second */
	double delta;		/* rate[1] - rate[0] */
	double rel;		/* delta / rate[0]; +inf when it appeared */
	double score;		/* |delta| / max(rate): 1 for appeared or vanished */
	double stat;		/* delta over its standard error */
	double df;		/* that error's degrees of freedom (Welch) */
	int verdict;
};

struct diff_opts {
	double z;		/* the bar, in a normal's sigmas (a t of the same tail) */
	double run_noise;	/* assumed relative run-to-run sd (the prior) */
	double min_abs;		/* smallest change counted, seconds per second */
	double min_rel;		/* smallest change counted, relative to the larger side */
	int top;		/* functions listed per direction */
	/* --share: a function's time as its share of its run's sampled time
	 * (times the run's length, so that a line's rate is its share): a
	 * machine that runs the same work 25% slower moves seconds, not shares */
	int share;
};

struct diff {
	struct recording *runs[2];	/* [side] arrays */
	size_t nruns[2];
	double wall_s[2];		/* summed over the runs of a side */
	struct diff_line *lines;
	size_t nlines, cap;
	struct diff_opts o;
};

int diff_build(struct diff *d);
/* The t with df degrees of freedom whose two-sided tail is the normal's
 * beyond z sigmas. */
double diff_t_critical(double z, double df);
void diff_free(struct diff *d);
const char *diff_state_title(int state);
const char *verdict_name(int v);
/* The lines of one kind, ordered: changes by score (state, GC) or by
 * |delta| (functions), then the rest. *out is malloc'ed. */
size_t diff_sorted(const struct diff *d, int kind, int processes_only,
		   const struct diff_line ***out);

int diff_is_change(const struct diff_line *l);	/* grew or shrank */
/* "+12%", "-100%", "new" (appeared), "0%" */
void diff_fmt_rel(char *out, size_t len, const struct diff_line *l);
/* A state's time per run on one side, summed over the processes. */
double diff_state_amount(const struct diff *d, int state, int side);
/* The one-line summary for the GC question. */
void diff_summary(const struct diff *d, char *out, size_t len);

/* The frame a [GIL holders] sample is blamed on: its innermost Python
 * frame, else its innermost (a marker); NULL if none is of p. */
const struct frame_info *diff_holder_frame(const struct profile *p, const struct sample *s);

/* ---- outputs ---- */
int diff_report_text(FILE *f, const struct diff *d);
int diff_report_json(FILE *f, const struct diff *d);
int diff_write_flame_html(FILE *f, const struct diff *d);
int diff_write_folded(FILE *f, const struct diff *d);

/* Folded stacks of one side, summed over its runs: "thread;f;g" -> ns. */
struct folded {
	char **stacks;
	double *ns[2];		/* [side], per second of recording */
	size_t n, cap;
};
int diff_fold(const struct diff *d, struct folded *out);
void folded_free(struct folded *fo);

#endif
