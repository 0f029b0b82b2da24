/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * --subprocesses: acts on the process changes the recorder saw. Forked
 * Python children get their GC probes; a process that exec'ed is searched
 * for a new interpreter (which takes a few milliseconds to map and
 * initialise) until it has one, turns out not to be Python, or gives up.
 */
#ifndef EP_FOLLOW_H
#define EP_FOLLOW_H
#include <stddef.h>
#include <stdint.h>
#include "recorder.h"
#include "session.h"

struct pending_exec {
	int pid;
	uint64_t deadline_ns;
};

struct follower {
	struct session *session;
	struct recorder *rec;
	int verbose;
	int told_full;		/* the line about the open-file limit was printed */
	struct pending_exec *pending;
	size_t npending, cap;
};

/* Takes the recorder's changes and retries pending discoveries. */
void follower_step(struct follower *f);
void follower_free(struct follower *f);

#endif
