/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * One recording session, from the BPF programs' load to the last record
 * drained, for one process or many: one BPF object, one ring buffer, and a
 * member per process with a recorder of its own (its threads, stacks, code
 * objects, symbol caches, GC log). The session's records are routed to the
 * member by pid, so each process gets a profile of its own. record and top
 * are a group of one; record --pid A,B and --match (multi.h) a group of
 * many, where a process that exits has its member ended then (on_end) and
 * its memory freed while the others go on. Front ends fill one
 * controller_config, hand the controller prepared targets and run its loop;
 * they write or show what it recorded, and never touch the kernel side.
 *
 *	controller_open		load the programs (before a command is launched)
 *	controller_add		a prepared target joins: GC probes, maps, blocked threads
 *	controller_run		poll, follow children, cut periods, until stopped
 *	controller_stop		end every member: close, drain, finish its profile
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

struct controller_member;

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
	/* a group of many (multi.h): the duration counts from the open, and a
	 * member whose process exits ends alone (on_end, then its memory goes)
	 * while the run goes on; else the one target's exit ends the run, and
	 * its member stays for the front end to read until controller_close */
	int several;
	/* The front end's part of the loop, all optional. should_stop is asked
	 * before every poll (a signal, a key); on_tick is called after it;
	 * on_period when a member's period ends, its recorder holding it;
	 * on_end when a member is finished (its process exited, the duration,
	 * a stop), its profile complete. */
	int (*should_stop)(void *ctx);
	void (*on_tick)(void *ctx, uint64_t now_ns);
	void (*on_period)(void *ctx, struct controller_member *m, uint64_t end_ns);
	void (*on_end)(void *ctx, struct controller_member *m);
	void *ctx;
};

enum controller_stop_reason {
	CONTROLLER_RUNNING,
	CONTROLLER_STOPPED,		/* should_stop said so */
	CONTROLLER_DURATION,		/* duration_ns reached */
	CONTROLLER_TARGET_EXITED,
	CONTROLLER_POLL_FAILED,
};

/* One process recorded: its target (copied), its recorder, its children
 * (--subprocesses). */
struct controller_member {
	struct session *session;	/* the controller's, for its counters */
	struct py_target target;
	struct recorder rec;
	struct follower follower;
	int pidfd;			/* readable when the target exits; -1 */
	int own_pidfd;			/* ... opened here, closed here */
	int launched;			/* the target is our child */
	enum gc_probe_kind gc_probe;
	enum controller_stop_reason stopped;	/* why it ended (at on_end) */
	int ended;			/* a group of one: its profile is finished */
	uint64_t next_cut_ns;		/* 0: no periods */
};

struct controller {
	struct controller_config cfg;
	struct session *session;
	struct controller_member **members;
	size_t n, cap;
	struct controller_member *last;	/* the member the last record went to */
	unsigned long unrouted;		/* records of no member (one that ended) */
	enum controller_stop_reason stopped;
	uint64_t deadline_ns;		/* 0: none (yet) */
	uint64_t next_names_ns;
	uint64_t last_cut_ns;
	int cut_requested;
};

/* Drains what the session has ready without waiting, at most passes times
 * (0: until empty). */
void controller_drain(struct session *s, unsigned passes);
/* Loads and attaches the BPF programs. 0, or -1 with err filled (c is then
 * closed). */
int controller_open(struct controller *c, const struct controller_config *cfg,
		    char *err, size_t errlen);
/* Starts recording the prepared target t (copied) as a new member: its GC
 * probes, its maps, its threads already blocked, its asyncio tasks.
 * pidfd watches it (-1: the member opens one); launched: it is our child
 * (left to the caller to reap). The member, or NULL with err filled
 * (nothing of it is left then). */
struct controller_member *controller_add(struct controller *c, const struct py_target *t,
					 int pidfd, int launched, char *err, size_t errlen);
/* Runs until should_stop, the duration, a poll error or (a group of one)
 * the target's exit; the reason is returned and kept in c->stopped. */
enum controller_stop_reason controller_run(struct controller *c);
/* Ends every member's period now: the records in the ring (a bounded
 * number of passes: a target that fills it as fast as we read must not
 * hold us), the time so far of threads off the CPU and the kernel's totals
 * go to the recorder, then on_period (see enum controller_periods). */
void controller_cut_period(struct controller *c);
/* Asks for every member's period to end at the next turn of the loop
 * (SIGUSR1); a request within a quarter second of the last cut is merged
 * into it. */
void controller_request_cut(struct controller *c);
/* Ends every member still recording with the reason the run stopped:
 * its open intervals closed, the ring drained; unless live, its profile
 * finished (ready for the writers); then on_end. */
void controller_stop(struct controller *c);
void controller_close(struct controller *c);

/* 1 if a member records pid: its target, or a child it follows (-s). */
int controller_records(struct controller *c, pid_t pid);
/* Records the kernel could not hand the session s (ring full): all its
 * processes'. */
uint64_t controller_lost(struct session *s);
/* What the kernel side and (a group of one) the recorder lost, for the
 * summary. */
void controller_print_losses(struct controller *c, FILE *f);

/* A group of one: its member's recorder (after controller_add). */
static inline struct recorder *controller_recorder(struct controller *c)
{
	return &c->members[0]->rec;
}

#endif
