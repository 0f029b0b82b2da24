// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* What the kernel side counted and lost, and the summary's lines of it. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include "remote.h"
#include "remote_reader.h"
#include "report.h"
#include "session_priv.h"

void session_counters(struct session *s, uint64_t out[EP_CNT_MAX])
{
	int ncpu = libbpf_num_possible_cpus(), fd = bpf_map__fd(s->skel->maps.counters);
	uint64_t *vals = calloc(ncpu, sizeof(*vals));
	__u32 key;
	int cpu;

	memset(out, 0, sizeof(uint64_t) * EP_CNT_MAX);
	if (!vals)
		return;
	for (key = 0; key < EP_CNT_MAX; key++) {
		if (bpf_map_lookup_elem(fd, &key, vals))
			continue;
		for (cpu = 0; cpu < ncpu; cpu++)
			out[key] += vals[cpu];
	}
	free(vals);
}

/* -v: what the kernel side counted, whether or not anything was lost. */
static void print_counts(const struct session *s, FILE *f, const uint64_t *c)
{
	fprintf(f, "ebpfprof: off-CPU: %llu intervals timed exactly in the kernel, %llu of them sent (over the threshold, or sampled), %llu of those with their stack taken on the thread's return to user mode; stacks walked %llu times, reused %llu times\n",
		(unsigned long long)c[EP_CNT_OFFCPU], (unsigned long long)c[EP_CNT_OFFCPU_SENT],
		(unsigned long long)c[EP_CNT_STACK_LATER],
		(unsigned long long)c[EP_CNT_STACK_WALKS], (unsigned long long)c[EP_CNT_STACK_REUSED]);
	if (c[EP_CNT_GIL_BLAMED] || c[EP_CNT_GIL_UNREAD])
		fprintf(f, "ebpfprof: GIL waits: %llu put on their holder in the kernel, %llu of them split where the GIL changed hands; %llu not read (a thread's waits are read at most about one per %llu us), spread over the holders of those read\n",
			(unsigned long long)c[EP_CNT_GIL_BLAMED], (unsigned long long)c[EP_CNT_GIL_SPLIT],
			(unsigned long long)c[EP_CNT_GIL_UNREAD],
			(unsigned long long)s->skel->rodata->ep_gil_read_gap_ns / 1000);
	if (c[EP_CNT_STORAGE_BUSY])
		fprintf(f, "ebpfprof: %llu switch-outs not timed: the thread's task storage was busy (its lock held on that CPU)\n",
			(unsigned long long)c[EP_CNT_STORAGE_BUSY]);
	/* their time is counted (from the thread's CPU time) and their wait
	 * shown "behind a holder not known": no figure is short */
	if (c[EP_CNT_SWITCH_IN_UNSEEN])
		fprintf(f, "ebpfprof: %llu switch-ins not seen (the thread's task storage was busy): their intervals were closed at the next switch-out or the end, from the thread's CPU time, with no GIL holder\n",
			(unsigned long long)c[EP_CNT_SWITCH_IN_UNSEEN]);
	if (c[EP_CNT_STACK_LATER_LOST])
		fprintf(f, "ebpfprof: %llu off-CPU intervals sent without their stack (the thread blocked again before returning to user mode, or exited)\n",
			(unsigned long long)c[EP_CNT_STACK_LATER_LOST]);
	/* A start can go unseen only if the collection began before the process
	 * was watched (a failed update of gc_running counts as maps full):
	 * not a loss, so not a warning, nor a loss line. */
	if (c[EP_CNT_GC_LOST])
		fprintf(f, "ebpfprof: %llu collections were already under way when watching began: their end was seen, not their start (not timed)\n",
			(unsigned long long)c[EP_CNT_GC_LOST]);
	/* threads the interpreter does not know (yet, or any more): not in the profile */
	if (c[EP_CNT_NO_TSTATE])
		fprintf(f, "ebpfprof: %llu of the %llu samples taken were of threads without a Python thread state (not in the profile)\n",
			(unsigned long long)c[EP_CNT_NO_TSTATE], (unsigned long long)c[EP_CNT_SAMPLES]);
}

static double percent(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * part / whole : 100.0;
}

/* A loss that leaves a figure short: one line each, the figure and by how
 * much. The thread table is exact, so any of its losses is said; the
 * sampled figures' from LOSS_SHOWN_PERCENT, or any with -v. */
static void print_loss_lines(FILE *f, const uint64_t *c, int verbose)
{
	uint64_t switch_outs = c[EP_CNT_OFFCPU] + c[EP_CNT_STORAGE_BUSY];
	double min = verbose ? 0 : LOSS_SHOWN_PERCENT;

	if (c[EP_CNT_STORAGE_BUSY])
		fprintf(f, "ebpfprof: loss: %llu of %llu switch-outs (%.1f%%) not timed (the thread's task storage was busy): the thread table's columns are short by those intervals\n",
			(unsigned long long)c[EP_CNT_STORAGE_BUSY], (unsigned long long)switch_outs,
			percent(c[EP_CNT_STORAGE_BUSY], switch_outs));
	if (c[EP_CNT_STACK_LATER_LOST] &&
	    percent(c[EP_CNT_STACK_LATER_LOST], c[EP_CNT_OFFCPU_SENT]) >= min)
		fprintf(f, "ebpfprof: loss: %llu of %llu off-CPU intervals sent (%.1f%%) have no stack (the thread blocked again before returning to user mode, or exited): the profile shows them without their frames\n",
			(unsigned long long)c[EP_CNT_STACK_LATER_LOST],
			(unsigned long long)c[EP_CNT_OFFCPU_SENT],
			percent(c[EP_CNT_STACK_LATER_LOST], c[EP_CNT_OFFCPU_SENT]));
	if (c[EP_CNT_NO_TSTATE] && percent(c[EP_CNT_NO_TSTATE], c[EP_CNT_SAMPLES]) >= min)
		fprintf(f, "ebpfprof: loss: %llu of %llu samples taken (%.1f%%) are not in the profile: their threads had no Python thread state (not yet, or no longer)\n",
			(unsigned long long)c[EP_CNT_NO_TSTATE], (unsigned long long)c[EP_CNT_SAMPLES],
			percent(c[EP_CNT_NO_TSTATE], c[EP_CNT_SAMPLES]));
}

/* The default summary keeps the warnings (a problem to fix) and the loss
 * lines; -v adds every counter. */
void session_print_summary(struct session *s, FILE *f, int verbose)
{
	uint64_t c[EP_CNT_MAX];

	session_counters(s, c);
	c[EP_CNT_SWITCH_IN_UNSEEN] += s->unseen_closed;
	session_print_fallbacks(s, f, "ebpfprof: ");
	if (verbose)
		print_counts(s, f, c);
	if (c[EP_CNT_LOST] || c[EP_CNT_MAP_FULL] || s->seed_failed || s->drain_failed)
		fprintf(f, "ebpfprof: warning: lost %llu records (ring buffer full), %llu kernel map updates failed (maps full), %lu blocked threads not seeded, %lu totals not drained\n",
			(unsigned long long)c[EP_CNT_LOST], (unsigned long long)c[EP_CNT_MAP_FULL],
			s->seed_failed, s->drain_failed);
	if (s->longest_gap_ns > 1000000000ull)
		fprintf(f, "ebpfprof: warning: the reader of the kernel's records was held up for %.1f s once (a slow read of the target, a loaded host): code objects freed meanwhile are named only if the kernel named them\n",
			s->longest_gap_ns / 1e9);
	if (remote_timeouts())
		fprintf(f, "ebpfprof: warning: %lu reads of the target's memory given up after %llu ms (a page never served: userfaultfd, FUSE; the last waited in %s); those pages were not read again, a process after %d such reads not at all\n",
			remote_timeouts(), REMOTE_READ_TIMEOUT_NS / 1000000, remote_last_wait(), REMOTE_HUNG_MAX);
	print_loss_lines(f, c, verbose);
}
