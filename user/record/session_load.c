// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Loading the programs, and what the verifier spent on each: start-up is a
 * budget (docs/benchmarks.md, "Start-up"), and the verifier's work is most
 * of it. Per program: the instructions it verified (bpf_prog_info's
 * verified_insns, 5.16+) and its load time, from the kernel's load_time of
 * each program (taken as its verification starts: programs load one after
 * the other, so each one lasts until the next one's).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <bpf/bpf.h>
#include "clock.h"
#include "session_priv.h"

static uint64_t boottime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static int by_start(const void *a, const void *b)
{
	const struct prog_load *x = a, *y = b;

	return x->start_ns < y->start_ns ? -1 : x->start_ns > y->start_ns;
}

/* Fills s->loads from the loaded programs, in their load order. */
static void note_loads(struct session *s, uint64_t end_ns)
{
	struct bpf_program *prog;
	struct bpf_prog_info info;
	__u32 len;
	size_t i;

	s->nloads = 0;
	bpf_object__for_each_program(prog, s->skel->obj) {
		if (bpf_program__fd(prog) < 0 || s->nloads >= SESSION_MAX_PROGS)
			continue;
		memset(&info, 0, sizeof(info));
		len = sizeof(info);
		if (bpf_obj_get_info_by_fd(bpf_program__fd(prog), &info, &len))
			continue;
		s->loads[s->nloads++] = (struct prog_load){ .name = bpf_program__name(prog),
							   .insns = info.verified_insns,
							   .start_ns = info.load_time };
	}
	qsort(s->loads, s->nloads, sizeof(s->loads[0]), by_start);
	for (i = 0; i < s->nloads; i++) {
		uint64_t next = i + 1 < s->nloads ? s->loads[i + 1].start_ns : end_ns;

		s->loads[i].ns = next > s->loads[i].start_ns ? next - s->loads[i].start_ns : 0;
	}
}

int session_load(struct session *s)
{
	uint64_t t0 = monotonic_ns();
	int rc = ebpfprof_bpf__load(s->skel);

	s->load_ns = monotonic_ns() - t0;
	if (!rc)
		note_loads(s, boottime_ns());
	return rc;
}

void session_print_loads(const struct session *s, FILE *f)
{
	size_t i;

	fprintf(f, "ebpfprof: BPF programs loaded in %.3f s\n", s->load_ns / 1e9);
	for (i = 0; i < s->nloads; i++) {
		if (s->loads[i].insns)
			fprintf(f, "ebpfprof:   %-32s %8u instructions verified, %.3f s\n",
				s->loads[i].name, s->loads[i].insns, s->loads[i].ns / 1e9);
		else	/* bpf_prog_info.verified_insns: Linux 5.16 */
			fprintf(f, "ebpfprof:   %-32s %.3f s\n", s->loads[i].name, s->loads[i].ns / 1e9);
	}
}
