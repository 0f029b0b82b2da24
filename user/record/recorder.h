/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Turns the kernel's records into the profile as they stream in: symbolizes
 * each frame as it arrives (so a target that exits mid-run still has names),
 * adds marker frames ([GC gen 2], [truncated]), keeps per-thread facts for
 * naming. Its memory grows with distinct stacks, threads, collections and
 * the profile's own samples (on-CPU samples, off-CPU intervals over the
 * threshold, sampled short ones), never with the number of switches: short
 * intervals are summed in the kernel (recorder_on_totals).
 */
#ifndef EP_RECORDER_H
#define EP_RECORDER_H
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include "analysis.h"
#include "clock.h"
#include "ebpfprof.h"
#include "labels.h"
#include "profile.h"
#include "py_target.h"
#include "stack_table.h"

struct recorder_opts {
	unsigned rate_hz;
	int gil_only;		/* keep only samples of the GIL holder */
	int by_function;	/* one frame per function, not per line */
	int idle;		/* add off-CPU time as samples with a reason frame */
	int native;		/* --native: weave C frames into each sample's stack */
	const struct label_spec *labels;	/* --label, --dask */
	int nlabels;
	int dask;		/* --dask: dask_prefix derived from the label dask_key */
	int tasks;		/* --tasks: where asyncio tasks stay suspended (task_walk.h) */
};

/* --label: the code objects of a process the kernel is to read labels
 * under (struct ep_proc_cfg's label fields), for the session to set. */
struct label_codes {
	__u8 n;
	__u64 code[EP_LABEL_CODES];
	__u32 ident[EP_LABEL_CODES];
	__u8 arg[EP_LABEL_CODES];
	__u8 index[EP_LABEL_CODES];
};

struct rec_process;

/* Labelled stacks the stack table keeps at most (recorder.c keep_stack):
 * as many as the kernel remembers having sent (sent_stacks). */
#define LABELLED_STACKS_KEPT	65536

/* A change in the set of processes, for the driver to act on (--subprocesses). */
struct proc_change {
	int kind;		/* EP_EV_FORK, EP_EV_EXEC or EP_EV_EXIT */
	int pid;
	int ppid;
	int python;		/* FORK: the child is a copy of a profiled interpreter */
};

struct recorder {
	struct profile profile;
	struct analysis analysis;
	struct recorder_opts opts;
	struct rec_process **procs;
	size_t nprocs, procs_cap;
	struct stack_table stacks;	/* (pid, stack id) -> frames */
	uint64_t t0_ns;			/* session start, CLOCK_MONOTONIC */
	unsigned long kept;		/* on-CPU samples kept in the profile */
	unsigned long unknown_stacks;	/* records naming a stack never received */
	unsigned long failed;		/* records dropped here: out of memory */
	uint32_t *ids;			/* scratch: frame ids of one sample */
	struct {			/* by-id stacks never received, for the kernel to resend */
		__u32 pid;
		__u64 id;
	} lost[16];
	unsigned nlost;
	struct native_pending *native;	/* --native: unwound stacks awaiting their samples */
	unsigned long native_unpaired;	/* --native: samples whose registers never came */
	unsigned long native_unwound;	/* --native: stacks unwound, */
	unsigned long native_complete;	/* ... to the thread's first frame, */
	unsigned long native_frames;	/* ... native frames found in all */
	uint64_t native_cpu_ns;		/* ... our CPU time unwinding and naming them */
	int label_of_spec[EP_MAX_LABELS];	/* opts.labels[i]'s index in the label table */
	struct kept_stack {			/* labelled stacks in the stack table, a ring */
		int pid;
		uint64_t id;
	} *labelled;
	uint64_t labelled_next;
	struct proc_change *changes;	/* not yet taken by the driver */
	size_t nchanges, changes_cap;
};

int recorder_init(struct recorder *r, const struct recorder_opts *o);
void recorder_free(struct recorder *r);
/* Adds a process whose interpreter is prepared (t->cfg valid), or replaces
 * what was known of that pid (after an exec). */
int recorder_add_process(struct recorder *r, const struct py_target *t);
/* The prepared target of a known process, or NULL. */
const struct py_target *recorder_target(struct recorder *r, int pid);
/* Moves the pending process changes to the caller (free() them). */
size_t recorder_take_changes(struct recorder *r, struct proc_change **out);
/* ring_buffer callback */
int recorder_on_event(void *ctx, void *data, size_t len);
/* The kernel's exact off-CPU totals of one thread and reason (drained). */
void recorder_on_totals(void *ctx, const struct ep_totals_key *key, const struct ep_totals *val);
/* session_opts.next_lost_stack: one stack a sample named by id without the
 * frames ever reaching us (1), or none left (0). */
int recorder_next_lost_stack(void *ctx, __u32 *pid, __u64 *stack_id);
/* session_opts.next_label_codes: a process whose labelled code objects
 * changed, and all of them now; 0 when none is left. */
int recorder_next_label_codes(void *ctx, __u32 *pid, struct label_codes *out);
/* Collections of pid are timed by probes: overlaps with them are exact. */
void recorder_set_exact_gc(struct recorder *r, int pid);
/* --tasks: walks the asyncio tasks of each process whose walk is due, or
 * of every process (all: the start, a period's end: a list too long for
 * one walk is read again where the last walk read it). */
void recorder_walk_tasks(struct recorder *r, int all);
/* The tasks' spans dropped; the next walk opens one, from where it began,
 * for each task still in place (a new period, a live view's walk). */
void recorder_release_tasks(struct recorder *r);
/* --tasks in a live view: when a walk is due, the spans dropped and every
 * process walked, so the spans are the tasks in place at that walk, each
 * from where it began. */
void recorder_live_tasks(struct recorder *r);
/* Reads the Python names of the threads seen so far while the target lives. */
void recorder_refresh_names(struct recorder *r);
/* Names every thread (Python name, else MainThread or the kernel's comm),
 * sets the duration and sorts: the profile is then ready for the writers. */
void recorder_finish(struct recorder *r, uint64_t end_ns);
/* What userspace could not keep, for the summary: the warnings and one line
 * for each figure a loss leaves short (nothing when all is well); verbose:
 * the counts behind them too, and --tasks' walks and --native's unwinds. */
void recorder_print_losses(const struct recorder *r, FILE *f, int verbose);

/* The session starts at t0_ns (CLOCK_MONOTONIC): the profile's times count
 * from there. Call it before the first process is added. */
static inline void recorder_start(struct recorder *r, uint64_t t0_ns)
{
	r->t0_ns = t0_ns;
}

static inline uint64_t recorder_t0(const struct recorder *r)
{
	return r->t0_ns;
}

/* On-CPU samples kept in the profile (this period's, with --rotate). */
static inline unsigned long recorder_kept(const struct recorder *r)
{
	return r->kept;
}

/* Processes profiled so far: the target and the children followed. */
static inline size_t recorder_nprocs(const struct recorder *r)
{
	return r->nprocs;
}

/* The pid of the i-th of them (i < recorder_nprocs). */
int recorder_pid(const struct recorder *r, size_t i);

/* The profile and the exact GC pauses and waits so far: ready for the
 * writers and the report after recorder_finish or recorder_cut_period. A
 * live view may free what it has consumed of them (top_model_release). */
static inline struct profile *recorder_profile(struct recorder *r)
{
	return &r->profile;
}

static inline struct analysis *recorder_analysis(struct recorder *r)
{
	return &r->analysis;
}

/* The command the profile is named after (not copied: it must outlive r). */
static inline void recorder_set_command(struct recorder *r, const char *command)
{
	r->profile.command = command;
}

/* --rotate: ends the current period at end_ns like recorder_finish, except
 * that a thread still off the CPU stays so: its interval goes on into the
 * next period. Write the profile, then call recorder_next_period. */
void recorder_cut_period(struct recorder *r, uint64_t end_ns);
/* Drops the period's samples and intervals, keeps processes, threads and
 * frames, and starts the next period at start_ns (the last one's end). */
void recorder_next_period(struct recorder *r, uint64_t start_ns);


#endif
