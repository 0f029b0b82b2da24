/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The line on stderr that says a recording is alive, when stderr is a
 * terminal: rewritten in place, gone before the summary. */
#ifndef EP_PROGRESS_H
#define EP_PROGRESS_H
#include <stdint.h>
#include <stdio.h>

struct progress {
	FILE *f;		/* NULL: not a terminal, say nothing */
	uint64_t next_ns;	/* when to rewrite the line */
	int shown;
};

/* Shows progress on f only if f is a terminal. */
void progress_init(struct progress *p, FILE *f);
/* Rewrites the line at most every 250 ms. */
void progress_update(struct progress *p, uint64_t now_ns, double elapsed_s,
		     unsigned long samples, unsigned long long lost, unsigned long gc_pauses);
/* Erases the line. */
void progress_clear(struct progress *p);

#endif
