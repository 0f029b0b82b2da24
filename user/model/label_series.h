/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A label value's time per state over the recording (the recording's
 * labels.NAME.VALUE.series): what the Dask cluster report draws as each
 * worker's task balance over time. Every series of a table shares one
 * clock: bins of 100 ms at first, doubled (pairs of bins merged) whenever
 * the recording outgrows LABEL_BINS of them, so a series stays the same
 * size however long the recording.
 */
#ifndef EP_LABEL_SERIES_H
#define EP_LABEL_SERIES_H
#include <stdint.h>
#include "states.h"

#define LABEL_BINS		512
#define LABEL_BIN_NS_FIRST	100000000ull
/* Past this (about 3 years a bin) a time is not a recording's: clamped. */
#define LABEL_BIN_NS_MAX	(1ull << 56)

struct label_clock {
	uint64_t bin_ns;
};

void label_clock_init(struct label_clock *c);
/* Whether the clock's bins end before end_ns: then each series is halved
 * (label_series_halve) and the clock widened (label_clock_widen). */
int label_clock_too_narrow(const struct label_clock *c, uint64_t end_ns);
void label_clock_widen(struct label_clock *c);
/* How many bins [0, duration_ns) takes, at most LABEL_BINS. */
uint32_t label_clock_bins(const struct label_clock *c, uint64_t duration_ns);

/* A zeroed series (LABEL_BINS x STATE_RECORDED), or NULL (out of memory). */
uint64_t *label_series_new(void);
/* Adds ns of state over [start_ns, start_ns + ns) to series, each bin its
 * part; time past the clock's last bin goes to the last bin. */
void label_series_add(uint64_t *series, const struct label_clock *c, int state,
		      uint64_t start_ns, uint64_t ns);
/* Merges each pair of bins into one, for a clock about to widen. */
void label_series_halve(uint64_t *series);
/* The time of state in bin. */
static inline uint64_t label_series_at(const uint64_t *series, uint32_t bin, int state)
{
	return series[(uint64_t)bin * STATE_RECORDED + state];
}

#endif
