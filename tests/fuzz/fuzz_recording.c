// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libFuzzer target of ebpfprof diff's recording reader (user/diff/diff_read.c):
 * a recording is a file a user hands over, from anywhere. Input: the file's
 * bytes. When it reads, the recording is compared with itself and every
 * output is written (text, JSON, flame graph, folded stacks) to /dev/null:
 * what the reader lets through must be safe to convert, sum and print
 * (UBSan catches an out-of-range conversion; ASan an overrun). Every
 * figure read must be finite, and the reader must refuse with a reason.
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "diff.h"

static void check_finite(const struct recording *r)
{
	size_t i;
	int s;

	if (!isfinite(r->wall_s) || !(r->wall_s > 0) || !r->rate_hz)
		abort();
	for (i = 0; i < r->nthreads; i++)
		for (s = 0; s < DIFF_NSTATES; s++)
			if (!isfinite(r->threads[i].states_s[s]) || r->threads[i].states_s[s] < 0)
				abort();
	for (i = 0; i < r->ngcs; i++)
		if (!isfinite(r->gcs[i].count) || !isfinite(r->gcs[i].total_s) ||
		    !isfinite(r->gcs[i].max_s))
			abort();
}

static void compare_with_itself(struct recording *r, FILE *null)
{
	struct diff d = { .runs = { r, r }, .nruns = { 1, 1 },
			  .o = { .z = 3, .run_noise = 0.08, .min_abs = 0.01, .min_rel = 0.1,
				 .top = 10 } };

	if (!diff_build(&d)) {
		diff_report_text(null, &d);
		diff_report_json(null, &d);
		diff_write_flame_html(null, &d);
		diff_write_folded(null, &d);
	}
	diff_free(&d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static FILE *null;
	struct recording r;
	char err[512];

	if (!null && !(null = fopen("/dev/null", "w")))
		abort();
	if (recording_read_buffer(&r, "fuzz", (const char *)data, size, err, sizeof(err))) {
		if (!err[0])
			abort();	/* refused without a reason */
	} else {
		check_finite(&r);
		compare_with_itself(&r, null);
	}
	recording_free(&r);
	return 0;
}
