/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Several targets (--pid A,B,C or --match REGEX) in one recording session
 * (controller.h): one BPF object for them all, a recorder per process, so every
 * process gets a complete profile of its own and one failing target cannot
 * spoil the others. This file finds the targets (--match: now and later, by
 * polling /proc from inside the recording loop), adds them to the session,
 * and hands each finished process to the front end's outputs.
 *
 * Any process can put the pattern in its command line, so what a match
 * costs is bounded: a target is checked here (CPython, a supported build)
 * before anything is set up for it; one refused, or whose recording failed,
 * is never tried again (known by pid and start time, so not even after an
 * exec); and at most max_processes are recorded at once, the others
 * waiting their turn.
 */
#ifndef EP_MULTI_H
#define EP_MULTI_H
#include <signal.h>
#include <stddef.h>
#include <sys/types.h>
#include "controller.h"
#include "match.h"

/* Processes recorded at once unless --max-processes says otherwise, and
 * the most it may say: the kernel's per-process table (struct ep_proc_cfg
 * in the procs map) holds 256, children followed included. */
#define MULTI_DEFAULT_PROCESSES	16
#define MULTI_MAX_PROCESSES	256

/* The front end's outputs of each process. start: before it is recorded,
 * its files are checked (a pointer the front end keeps for it, or NULL with
 * err filled: the process is not recorded); discard: it was not recorded
 * after all; period: --rotate, one period of it is in its recorder; end:
 * its profile is finished, written here, the pointer freed (0, or -1 when
 * it could not be written: said there). */
struct multi_outputs {
	void *(*start)(void *ctx, const struct py_target *t, char *err, size_t errlen);
	void (*discard)(void *ctx, void *out);
	void (*period)(void *ctx, struct controller_member *m, void *out, uint64_t end_ns);
	int (*end)(void *ctx, struct controller_member *m, void *out);
	void *ctx;
};

struct multi_opts {
	const struct controller_config *cfg;	/* the session's options and -d */
	unsigned max_processes;		/* 0: MULTI_DEFAULT_PROCESSES */
	const pid_t *pids;		/* fixed targets, or */
	size_t npids;
	const struct proc_matcher *match;	/* every matching CPython process */
	const char *pattern;		/* the regex, for messages */
	const char *where;		/* the summary's "into DIR", "and pushed" */
	struct multi_outputs out;
};

/* Runs until the duration ends, *stop is set, or (fixed pids) every target
 * has exited. *cut, when set, ends every process's period (then cleared).
 * 0 if every process's profile was written, 1 otherwise (also when the
 * session could not be opened: said). */
int multi_run(const struct multi_opts *o, volatile sig_atomic_t *stop,
	      volatile sig_atomic_t *cut);

/* Parses "PID[,PID...]" into a new array. 0, or -1 on a bad list. */
int parse_pid_list(const char *s, pid_t **out, size_t *n);

#endif
