/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * One recording, from the BPF programs' load to the last record drained:
 * the session (kernel side) and the recorder (the profile) kept in step.
 * record, top and any other front end fill one controller_config, hand the
 * controller a prepared target and run its loop; they write or show what it
 * recorded, and never touch the kernel side themselves.
 *
 *	controller_open		load the programs (before a command is launched)
 *	controller_attach	GC probes, the target's maps, its blocked threads
 *	controller_run		poll, follow children, cut periods, until stopped
 *	controller_stop		close what is still open, drain, finish the profile
 *	controller_close
 */
#ifndef EP_CONTROLLER_H
#define EP_CONTROLLER_H
#include <argp.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include "follow.h"
#include "py_target.h"
#include "recorder.h"
#include "session.h"

/* What the end of a period does with the recorder. */
enum controller_periods {
	/* record --rotate: each period becomes a complete profile of its own
	 * (on_period writes it), then the recorder starts the next one */
	CONTROLLER_PERIODS_SEPARATE,
	/* top: the recorder holds everything up to the period's end; the view
	 * (on_period) consumes it and may release what it consumed */
	CONTROLLER_PERIODS_LIVE,
};

/* The front ends' --rate, for their argp tables: samples per second per CPU,
 * 1 to CONTROLLER_RATE_MAX. */
#define CONTROLLER_RATE_MAX	10000
#define CONTROLLER_RATE_OPTION \
	{ "rate", 'r', "HZ", 0, "Samples per second per thread (default " SESSION_DEFAULT_RATE_TEXT ")", 0 }
/* argp: parses -r into *rate_hz, or fails the command line with one line.
 * ARGP_ERR_UNKNOWN for any other key. */
error_t controller_rate_option(int key, char *arg, struct argp_state *state, unsigned *rate_hz);

/* Passes over the ring at a period's end before its cut: the records of a
 * target that fills the ring as fast as we read belong to the next one. */
#define CONTROLLER_CUT_DRAIN_PASSES	16
/* Thread names change and threads come and go: read them this often. */
#define CONTROLLER_NAMES_EVERY_NS	1000000000ull

/* The shortest wait sent whole when none is asked for (record -W). */
#define CONTROLLER_WAIT_THRESHOLD_MS	10.0

/* The most stack --native copies per sample (KiB): the kernel's buffer. */
#define CONTROLLER_NATIVE_STACK_MAX_KIB	(EP_NATIVE_STACK_MAX / 1024)

struct controller_config {
	unsigned rate_hz;		/* 0: SESSION_DEFAULT_RATE_HZ */
	/* off-CPU intervals at least this long (ms) are sent whole with their
	 * stack; shorter ones are sampled once per period of the rate
	 * (CONTROLLER_WAIT_THRESHOLD_MS when none is asked for) */
	double wait_threshold_ms;
	int gil_only;			/* keep only samples of the GIL holder */
	int by_function;		/* one frame per function, not per line */
	int idle;			/* off-CPU time as samples too */
	int native;			/* weave native frames */
	unsigned native_stack_bytes;	/* ... from this much stack (0: the default) */
	int subprocesses;		/* follow the target's Python children */
	const struct label_spec *labels;	/* --label, --dask */
	int nlabels;
	int dask;			/* --dask: dask_prefix derived from dask_key */
	int tasks;			/* --tasks: walk the asyncio tasks (task_walk.h) */
	unsigned gc_probes;		/* the targets' GC probes, if known (session_opts) */
	int verbose;
	uint64_t duration_ns;		/* 0: until stopped or the target exits */
	uint64_t period_ns;		/* 0: no periods but on request */
	enum controller_periods periods;
	/* The front end's part of the loop, all optional. should_stop is asked
	 * before every poll (a signal, a key); on_tick is called after it;
	 * on_period when a period ends, with the recorder holding it. */
	int (*should_stop)(void *ctx);
	void (*on_tick)(void *ctx, uint64_t now_ns);
	void (*on_period)(void *ctx, uint64_t end_ns);
	void *ctx;
};

enum controller_stop_reason {
	CONTROLLER_RUNNING,
	CONTROLLER_STOPPED,		/* should_stop said so */
	CONTROLLER_DURATION,		/* duration_ns reached */
	CONTROLLER_TARGET_EXITED,
	CONTROLLER_POLL_FAILED,
};

struct controller {
	struct controller_config cfg;
	struct session *session;
	struct recorder rec;
	struct follower follower;
	const struct py_target *target;
	int pidfd;			/* readable when the target exits; -1 */
	int own_pidfd;			/* ... opened here, closed here */
	int launched;			/* the target is our child */
	enum gc_probe_kind gc_probe;
	enum controller_stop_reason stopped;
	uint64_t deadline_ns;		/* 0: none */
	uint64_t next_cut_ns;		/* 0: no periods */
	uint64_t last_cut_ns;
	uint64_t next_names_ns;
	int cut_requested;
};

/* The session's and the recorder's options of cfg (rate_hz set), without
 * the session's callbacks: for a driver of its own (group.h). */
void controller_session_opts(const struct controller_config *cfg, struct session_opts *so);
void controller_recorder_opts(const struct controller_config *cfg, struct recorder_opts *ro);
/* Drains what the session has ready without waiting, at most passes times
 * (0: until empty). */
void controller_drain(struct session *s, unsigned passes);
/* Loads and attaches the BPF programs, readies the recorder. 0, or -1 with
 * err filled (c is then closed). */
int controller_open(struct controller *c, const struct controller_config *cfg,
		    char *err, size_t errlen);
/* Starts recording the prepared target t (it must outlive c): its GC
 * probes, its maps, its threads already blocked. pidfd watches it (-1: the
 * controller opens one); launched: it is our child (left to the caller to
 * reap). 0, or -1 with err filled. */
int controller_attach(struct controller *c, const struct py_target *t, int pidfd, int launched,
		      char *err, size_t errlen);
/* Runs until should_stop, the duration, the target's exit or an error; the
 * reason is returned and kept in c->stopped. */
enum controller_stop_reason controller_run(struct controller *c);
/* Ends a period now: the records in the ring (a bounded number of passes:
 * a target that fills it as fast as we read must not hold us), the time so
 * far of threads off the CPU and the kernel's totals go to the recorder,
 * then on_period (see enum controller_periods). */
void controller_cut_period(struct controller *c);
/* Asks for a period to end at the next turn of the loop (SIGUSR1); the same
 * request twice within a quarter second ends one period. */
void controller_request_cut(struct controller *c);
/* The target's open intervals are closed, the ring drained; unless live,
 * the profile is finished (ready for the writers). */
void controller_stop(struct controller *c);
void controller_close(struct controller *c);

/* Records the kernel could not hand us (ring full). */
uint64_t controller_lost(struct controller *c);
/* What the kernel side and the recorder lost, for the summary. */
void controller_print_losses(struct controller *c, FILE *f);

static inline struct recorder *controller_recorder(struct controller *c)
{
	return &c->rec;
}

#endif
