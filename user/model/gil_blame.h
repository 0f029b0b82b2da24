/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Who held the GIL while each thread waited for it (issue 21). The kernel
 * adds every GIL wait's exact time under its holder (ep_gil_blame(),
 * include/ebpfprof.h); each drain's amounts arrive here as chunks, stamped
 * with the drain's time. What a holder was running is then its own samples
 * (and, for waiting-for-GC, its collections with the stack that triggered
 * each) around that time: each chunk is spread over them in proportion to
 * their weight, so every stack's share adds up exactly to the waits.
 */
#ifndef EP_GIL_BLAME_H
#define EP_GIL_BLAME_H
#include <stddef.h>
#include <stdint.h>
#include "profile.h"

struct interval_list;

/* A holder that is not a thread (not attributed). */
#define GB_UNKNOWN	0	/* not observed: no GIL address, an unreadable GIL,
				 * a wait whose end was not seen, the waiter itself */
#define GB_CHANGED	(-1)	/* the GIL changed hands during the wait */
#define GB_HANDOFF	(-2)	/* the GIL was free, then taken by another (a forced
				 * switch's drop): no holder, not in the holders' profile */

/* A chunk's amounts are spread over the holder's samples from this long
 * before its drain to a little after (the waits of a chunk ended in the
 * drain period before it, and began at most a few switch intervals earlier). */
#define GB_WINDOW_BEFORE_NS	100000000ull
#define GB_WINDOW_AFTER_NS	10000000ull

/* Most (item, waiter) cells a holder's spread keeps per waiter (8 bytes
 * each): past it, its stacks are kept for all its waiters at once. */
#define GB_MAX_CELLS		(16u << 20)

/* PyThreadStates not (yet) seen in a sample that a holder's waits are kept
 * under, each until the end (it may be named then). The holder is the
 * GIL's last_holder, which the target writes: one rewriting it with a new
 * value every switch would add an entry per value per drain for the whole
 * recording. Past this many distinct values, waits behind a new one are
 * folded into "[GIL holder unknown]" (and counted in folded_*). */
#define GB_UNNAMED_MAX		4096

/* A chunk behind a holder thread, not behind a collection, is spread over
 * its holder's samples during the recording once they are surely in (its
 * window has passed by GB_LATE_NS: ring buffer and drain delays), when the
 * recorder tells its samples (gil_blame_note_sample): a long recording then
 * keeps its totals per (waiter, holder, stack), not a chunk per drain. Its
 * amounts go to a summary chunk of its (pid, waiter, holder) whose at_ns
 * says what is left to do at the end: */
#define GB_AT_SPREAD	UINT64_MAX		/* nothing: already spread */
#define GB_AT_WHOLE	(UINT64_MAX - 1)	/* spread over the whole recording
						 * (no sample in its window) */
#define GB_LATE_NS	1000000000ull
#define GB_PASS_NS	1000000000ull		/* how often it spreads */
/* A chunk behind a PyThreadState no sample has named this long after its
 * drain goes to a summary of its (pid, waiter, PyThreadState), GB_AT_WHOLE
 * (spread over the holder's whole recording if it is named at the end):
 * a target rewriting its GIL's last holder with values that never name a
 * thread then keeps a chunk per value and waiter, not one per drain. */
#define GB_UNNAMED_AGE_NS	5000000000ull

struct blame_chunk {
	int pid, waiter;
	int holder;		/* the holder's tid, or GB_* */
	int gc;			/* 1: behind a collection (waiting-for-GC) */
	uint64_t tstate;	/* holder GB_UNKNOWN: the PyThreadState not yet named, or 0 */
	uint64_t at_ns;		/* the drain's time, since the session start */
	uint64_t count, ns;
};

/* What a holder ran while a thread waited: root first, a root frame naming
 * the holder thread, then its Python stack ([GC gen N] on top when
 * collecting); a marker alone for unattributed time. */
struct blame_stack {
	int pid, waiter, holder, gc;	/* waiter 0: every waiter's (see GB_MAX_CELLS) */
	uint32_t *frames;
	uint32_t nframes;
	double ns;
};

/* A holder thread's samples of the last few seconds, to spread chunks over. */
struct blame_recent {
	int pid, tid;
	struct recent_sample {
		uint64_t start, weight;
		uint32_t stack;		/* the profile's stack store id */
		int kind;		/* enum item_kind (gil_blame.c) */
	} *v;
	size_t n, cap;
};

/* Spread amounts of one waiter behind one holder running one stack. */
struct blame_spread {
	int pid, holder, waiter;
	uint32_t stack;
	double ns;
};

struct gil_blame {
	struct blame_chunk *v;
	size_t n, cap;
	uint64_t *unnamed;		/* the distinct tstates of chunks, sorted */
	size_t nunnamed, unnamed_cap;
	uint64_t folded_count, folded_ns;	/* waits folded past GB_UNNAMED_MAX */
	size_t *summary;		/* indexes in v of the summary chunks, by key */
	size_t nsummary, summary_cap;
	struct blame_recent *recent;	/* by (pid, tid); none: nothing spread early */
	size_t nrecent, recent_cap;
	struct blame_spread *spread;	/* by (pid, holder, waiter, stack) */
	size_t nspread, spread_cap;
	uint64_t pass_ns;		/* the last spreading pass */
	struct blame_stack *stacks;	/* from gil_blame_settle() */
	size_t nstacks, stacks_cap;
};

void gil_blame_free(struct gil_blame *b);
/* Adds a chunk (merged into an equal one of the same drain); one behind a
 * PyThreadState past GB_UNNAMED_MAX distinct ones as behind a holder not
 * known. A timeless chunk (no holder thread nor PyThreadState, not behind a
 * collection: its drain's time is never used) is merged into the first of
 * its (pid, waiter, holder), whose at_ns stays the first drain's: a long
 * recording keeps one per waiter and marker, not one per drain. 0 or -1. */
int gil_blame_add(struct gil_blame *b, const struct blame_chunk *c);
/* A sample of thread (pid, tid) whose stack is the profile's `stack`
 * (its log's last_stack once added), for spreading early; 0 or -1. */
int gil_blame_note_sample(struct gil_blame *b, int pid, int tid, const struct sample *s,
			  uint32_t stack);

/*
 * Spreads every chunk over its holder's samples and collections (gcs) into
 * b->stacks, and gives each wait of `waits` with a holder the holder's
 * stack during it (holder_frames). Frames it needs (the holders' root
 * frames, the markers) are interned in p, whose threads must be named and
 * sorted. 0 or -1 (out of memory).
 */
int gil_blame_settle(struct gil_blame *b, struct profile *p, const struct interval_list *gcs,
		     struct interval_list *waits);

/* One holder's part of a thread's waits. */
struct blame_share {
	int holder;		/* tid or GB_* */
	uint64_t ns;
	uint32_t top_frame;	/* its stacks' heaviest innermost Python frame (b->stacks) */
	double top_ns;		/* ... and its time; 0: none */
};

/* Thread (pid, waiter)'s GIL waits (gc: its waiting-for-GC) per holder,
 * largest first, unattributed ones last, with each holder's top frame
 * unless p is NULL; *out malloc'ed (NULL when none). */
size_t gil_blame_of(const struct gil_blame *b, const struct profile *p, int pid, int waiter,
		    int gc, struct blame_share **out);
/* Names the holder of unattributed waiting-for-GC chunks (and waits): the
 * collector, when the process's collections around the chunk (during the
 * wait) are all one thread's. */
void gil_blame_name_collectors(struct gil_blame *b, const struct interval_list *gcs,
			       struct interval_list *waits);
/* The marker frame name of an unattributed holder. */
const char *gil_blame_marker(int holder);

#endif
