/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * One recording session for many processes (record --pid A,B and --match):
 * one BPF object, one set of maps, one ring buffer, and per process a member
 * with a recorder of its own (its threads, stacks, code objects, symbol
 * caches, GC log). The session's records are routed to the member by pid, so
 * each process gets a profile of its own, and a process that exits has its
 * profile finished then and its memory freed, while the others go on.
 *
 *	group_open	load the programs once
 *	group_add	a prepared target joins (its maps, GC probes, blocked threads)
 *	group_run	poll, cut each member's periods, end members whose process exits
 *	group_stop	end every member still there
 *	group_close
 */
#ifndef EP_GROUP_H
#define EP_GROUP_H
#include <stdint.h>
#include "controller.h"
#include "follow.h"
#include "py_target.h"
#include "recorder.h"
#include "session.h"

struct group_member {
	struct session *session;	/* the group's, for its counters */
	struct py_target target;
	struct recorder rec;
	struct follower follower;	/* --subprocesses */
	int pidfd;			/* readable when the target exits */
	enum gc_probe_kind gc_probe;
	enum controller_stop_reason stopped;	/* why it ended (at on_end) */
	uint64_t next_cut_ns;		/* 0: no periods */
};

/* The front end's part, all but ctx optional. should_stop is asked before
 * every poll; on_tick after it (a matcher adds targets there); on_period
 * when a member's period ends, its recorder holding it; on_end when a
 * member is finished (its process exited, the duration, a stop), before
 * its memory goes. */
struct group_hooks {
	int (*should_stop)(void *ctx);
	void (*on_tick)(void *ctx, uint64_t now_ns);
	void (*on_period)(void *ctx, struct group_member *m, uint64_t end_ns);
	void (*on_end)(void *ctx, struct group_member *m);
	void *ctx;
};

struct group {
	struct controller_config cfg;	/* the options; its callbacks unused */
	struct group_hooks hooks;
	struct session *session;
	struct group_member **members;
	size_t n, cap;
	uint64_t deadline_ns;		/* 0: none */
	uint64_t next_names_ns;
	int cut_requested;
	struct group_member *last;	/* the member the last record went to */
	unsigned long unrouted;		/* records of no member (one that ended) */
};

/* Loads and attaches the BPF programs (cfg->periods must be SEPARATE). 0,
 * or -1 with err filled. */
int group_open(struct group *g, const struct controller_config *cfg,
	       const struct group_hooks *hooks, char *err, size_t errlen);
/* Starts recording the prepared target t (copied) as a new member. The
 * member, or NULL with err filled (nothing of it is left then). */
struct group_member *group_add(struct group *g, const struct py_target *t, char *err,
			       size_t errlen);
/* Runs until should_stop, the duration or a poll error. */
enum controller_stop_reason group_run(struct group *g);
/* SIGUSR1: every member's period ends at the next turn of the loop. */
void group_request_cut(struct group *g);
/* Ends every member with the reason given (on_end each). */
void group_stop(struct group *g, enum controller_stop_reason why);
void group_close(struct group *g);

/* 1 if a member records pid: its target, or a child it follows (-s). */
int group_records(struct group *g, pid_t pid);

#endif
