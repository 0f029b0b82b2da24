/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * --rotate SECONDS / --keep N: the names of each period's files (the
 * output's name with the period's start time before its suffix) and the
 * deletion of the oldest ones this run wrote beyond N, in the order they were
 * written (never by name or time: the clock can step back).
 */
#ifndef EP_ROTATE_H
#define EP_ROTATE_H
#include <stddef.h>
#include <stdint.h>
#include <time.h>

struct rotation {
	unsigned keep;		/* 0: keep every period */
	char **written;		/* the oldest first: a profile, then its log */
	size_t nwritten, cap;
	unsigned files_per_period;
	unsigned periods;	/* written so far */
	unsigned seq;		/* the last period's sequence number in its names */
};

/* base "dir/app.speedscope.json", suffix ".speedscope.json", start time t
 * (and its milliseconds) in UTC, sequence number seq ->
 * "dir/app-20261123-193000.123Z-7.speedscope.json"; a base without the
 * suffix gets them at its end. The number keeps names apart when the clock
 * steps back: a period's files never replace another's. */
void period_name(char *out, size_t len, const char *base, const char *suffix,
		 time_t t, unsigned ms, unsigned seq);
/* Notes a period's files (NULL ends the list) and deletes the oldest periods
 * beyond r->keep. 0, or -1 when a name could not be kept. */
int rotation_written(struct rotation *r, const char *const *paths);
void rotation_free(struct rotation *r);

#endif
