/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A span of one thread's time the analysis keeps exactly (a GC pause, a
 * wait), and a list of them: what the analysis (analysis.h) records and the
 * GIL blame (gil_blame.h) reads and names, without either knowing the other.
 */
#ifndef EP_INTERVAL_H
#define EP_INTERVAL_H
#include <stddef.h>
#include <stdint.h>

struct interval {
	int pid, tid;
	uint64_t start_ns, end_ns;	/* since the session start */
	int state;			/* enum sample_state (GC for pauses) */
	int generation;			/* GC: its generation, -1 unknown; a wait: the
					 * generation the thread itself was collecting, or -1 */
	int64_t collected;		/* GC: objects collected, -1 unknown */
	uint32_t *frames;		/* stack at the start, root first */
	uint32_t nframes;
	int holder;			/* a GIL wait: the GIL holder's tid, or GB_* */
	uint32_t *holder_frames;	/* ... and its stack during the wait (gil_blame_settle) */
	uint32_t holder_nframes;
	uint32_t label;			/* --label: its value's id + 1, 0: none */
};

struct interval_list {
	struct interval *v;
	size_t n, cap;
};

#endif
