// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "grow.h"
#include "rotate.h"

void period_name(char *out, size_t len, const char *base, const char *suffix,
		 time_t t, unsigned ms, unsigned seq)
{
	size_t blen = strlen(base), slen = strlen(suffix);
	char stamp[48];
	struct tm tm;

	/* UTC: local time repeats an hour at a DST fall-back */
	gmtime_r(&t, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &tm);
	if (blen > slen && !strcmp(base + blen - slen, suffix))
		snprintf(out, len, "%.*s-%s.%03uZ-%u%s", (int)(blen - slen), base, stamp, ms % 1000,
			 seq, suffix);
	else
		snprintf(out, len, "%s-%s.%03uZ-%u", base, stamp, ms % 1000, seq);
}

static void drop_oldest_period(struct rotation *r)
{
	unsigned n = r->files_per_period;

	for (unsigned i = 0; i < n; i++) {
		unlink(r->written[i]);
		free(r->written[i]);
	}
	memmove(r->written, r->written + n, (r->nwritten - n) * sizeof(*r->written));
	r->nwritten -= n;
}

int rotation_written(struct rotation *r, const char *const *paths)
{
	unsigned n = 0;

	while (paths[n])
		n++;
	r->files_per_period = n;
	r->periods++;
	if (!r->keep)
		return 0;
	if (GROW_ARRAY(r->written, r->cap, r->nwritten + n))
		return -1;
	for (unsigned i = 0; i < n; i++) {
		r->written[r->nwritten] = strdup(paths[i]);
		if (!r->written[r->nwritten])
			return -1;
		r->nwritten++;
	}
	while (r->nwritten > (size_t)r->keep * n)
		drop_oldest_period(r);
	return 0;
}

void rotation_free(struct rotation *r)
{
	for (size_t i = 0; i < r->nwritten; i++)
		free(r->written[i]);
	free(r->written);
	memset(r, 0, sizeof(*r));
}
