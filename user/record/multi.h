/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Several targets (--pid A,B or --match REGEX): one recording per process,
 * each a child ebpfprof run as "--pid PID" with the same options (every
 * option the parent was given but those choosing the targets and files), so
 * every process gets a complete profile of its own and one failing target
 * cannot spoil the others. This file finds the targets (--match: now and
 * later, by polling /proc), starts, signals and reaps the children.
 *
 * Any process can put the pattern in its command line, so what a match
 * costs is bounded: a target is checked here (CPython, a supported build)
 * before a child loads any BPF program for it; one refused, or whose
 * recording failed, is never tried again (known by pid and start time, so
 * not even after an exec); and at most MULTI_MAX_CHILDREN record at once,
 * the others waiting their turn.
 */
#ifndef EP_MULTI_H
#define EP_MULTI_H
#include <signal.h>
#include <stddef.h>
#include <sys/types.h>
#include "match.h"

/* Recordings (children, each with its BPF programs and per-CPU perf
 * events) at once; further matches wait for one to end. */
#define MULTI_MAX_CHILDREN 16

struct multi_opts {
	/* the child's program and the options it forwards, NULL-terminated */
	const char *const *base_argv;
	const char *outdir;		/* one profile per process in it; NULL:
					 * none (--push alone) */
	const char *suffix;		/* of the profiles' names */
	const char *gc_log_dir;		/* NULL: no GC log */
	double duration;		/* seconds; 0: until a signal */
	const pid_t *pids;		/* fixed targets, or */
	size_t npids;
	const struct proc_matcher *match;	/* every matching CPython process */
	const char *pattern;		/* the regex, for messages */
};

/* Runs until the duration ends, *stop is set, or (fixed pids) every child
 * has exited. *forward, when set, is a signal to pass on to the children
 * (then cleared). 0 if every child wrote its profile, 1 otherwise. */
int multi_run(const struct multi_opts *o, volatile sig_atomic_t *stop,
	      volatile sig_atomic_t *forward);

/* Parses "PID[,PID...]" into a new array. 0, or -1 on a bad list. */
int parse_pid_list(const char *s, pid_t **out, size_t *n);

#endif
