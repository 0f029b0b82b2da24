// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <stdlib.h>
#include <string.h>
#include "label_series.h"

void label_clock_init(struct label_clock *c)
{
	c->bin_ns = LABEL_BIN_NS_FIRST;
}

int label_clock_too_narrow(const struct label_clock *c, uint64_t end_ns)
{
	return c->bin_ns < LABEL_BIN_NS_MAX && end_ns / c->bin_ns >= LABEL_BINS;
}

void label_clock_widen(struct label_clock *c)
{
	if (c->bin_ns < LABEL_BIN_NS_MAX)
		c->bin_ns *= 2;
}

uint32_t label_clock_bins(const struct label_clock *c, uint64_t duration_ns)
{
	uint64_t n = duration_ns / c->bin_ns + (duration_ns % c->bin_ns != 0);

	return n > LABEL_BINS ? LABEL_BINS : n ? (uint32_t)n : 1;
}

uint64_t *label_series_new(void)
{
	return calloc((size_t)LABEL_BINS * STATE_RECORDED, sizeof(uint64_t));
}

void label_series_add(uint64_t *series, const struct label_clock *c, int state,
		      uint64_t start_ns, uint64_t ns)
{
	uint64_t bin = start_ns / c->bin_ns, room, part;

	if (state < 0 || state >= STATE_RECORDED)
		return;
	/* bin by bin: at most LABEL_BINS steps, the rest in the last */
	while (ns && bin < LABEL_BINS - 1) {
		room = (bin + 1) * c->bin_ns - start_ns;
		part = ns < room ? ns : room;
		series[bin * STATE_RECORDED + state] += part;
		ns -= part;
		start_ns += part;
		bin++;
	}
	if (bin > LABEL_BINS - 1)
		bin = LABEL_BINS - 1;
	series[bin * STATE_RECORDED + state] += ns;
}

void label_series_halve(uint64_t *series)
{
	uint32_t b;
	int s;

	for (b = 0; b < LABEL_BINS / 2; b++)
		for (s = 0; s < STATE_RECORDED; s++)
			series[b * STATE_RECORDED + s] = series[2 * b * STATE_RECORDED + s] +
							 series[(2 * b + 1) * STATE_RECORDED + s];
	memset(series + (LABEL_BINS / 2) * STATE_RECORDED, 0,
	       (size_t)(LABEL_BINS / 2) * STATE_RECORDED * sizeof(*series));
}
