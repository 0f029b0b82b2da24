// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The samplers' timers: one cpu-clock event per CPU, re-armed at random periods. */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "clock.h"
#include "session_priv.h"

/*
 * Sampling periods. A timer that ticks at a fixed period keeps step with a
 * program that works on a timer of the same period (or a multiple): every
 * sample lands in the same phase of its cycle, and a thread busy 30% of
 * each 10 ms read as 0% or 98% at 100 Hz. So each CPU's timer gets a new
 * random period now and then (PERF_EVENT_IOC_PERIOD, which restarts it):
 * the rate uniform in [rate/2, 3*rate/2], whose mean is the rate asked for;
 * a period drawn that way moves the samples' phase in any program's cycle
 * shorter than it by an amount spread evenly over that cycle. Each sample
 * is weighted by its thread's on-CPU time since its previous sample
 * (sample.bpf.c), so the restarts and the varying periods lose no time. A CPU keeps
 * a period for at least REARM_PERIODS mean periods (and a drain period), and
 * the re-arms come at moments drawn at random (drain_timeout); at most
 * REARM_CPUS_PER_DRAIN CPUs are re-armed per drain (each an IPI).
 */
#define REARM_PERIODS		4
#define REARM_CPUS_PER_DRAIN	16
#define MIN_PERIOD_NS		10000	/* the kernel's floor for a cpu-clock period */

static uint64_t next_random(struct session *s)
{
	s->rng ^= s->rng >> 12;
	s->rng ^= s->rng << 25;
	s->rng ^= s->rng >> 27;
	return s->rng * 0x2545f4914f6cdd1dull;
}

static uint64_t draw_period(struct session *s)
{
	/* 53 random bits: u uniform in [0, 1) */
	double u = (next_random(s) >> 11) * (1.0 / 9007199254740992.0);
	uint64_t period = (uint64_t)(1e9 / (s->rate_hz * (0.5 + u)));

	return period > MIN_PERIOD_NS ? period : MIN_PERIOD_NS;
}

/* A cpu-clock event per CPU: a software timer, present in every VM, ticking
 * every period of CPU time whatever runs, so samples are exact in time. */
static int open_cpu_clock(int cpu, uint64_t period_ns)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE,
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.size = sizeof(attr),
		.sample_period = period_ns,
	};

	return syscall(__NR_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

/* New random periods for the next CPUs in turn, when their time has come. */
void session_rearm_samplers(struct session *s)
{
	uint64_t now = monotonic_ns(), keep, period;
	int n, cpu;

	if (!s->perf_fds || now < s->next_rearm_ns)
		return;
	for (n = 0; n < REARM_CPUS_PER_DRAIN && n < s->ncpu; n++) {
		cpu = s->rearm_cpu;
		s->rearm_cpu = (s->rearm_cpu + 1) % s->ncpu;
		period = draw_period(s);
		if (s->perf_fds[cpu] >= 0)
			ioctl(s->perf_fds[cpu], PERF_EVENT_IOC_PERIOD, &period);
	}
	keep = REARM_PERIODS * (1000000000ull / s->rate_hz);
	s->next_rearm_ns = now + (keep > EP_DRAIN_MS * 1000000ull ? keep : 0);
}

int session_attach_samplers(struct session *s, unsigned rate_hz, char *err, size_t errlen)
{
	int cpu;

	s->rate_hz = rate_hz ? rate_hz : SESSION_DEFAULT_RATE_HZ;
	s->rng = (monotonic_ns() ^ (uint64_t)getpid() << 32) | 1;

	s->ncpu = libbpf_num_possible_cpus();
	if (s->ncpu <= 0) {
		snprintf(err, errlen, "cannot count the CPUs: %s", strerror(-s->ncpu));
		return -1;
	}
	s->links = calloc(s->ncpu, sizeof(*s->links));
	s->perf_fds = malloc(s->ncpu * sizeof(int));
	if (!s->links || !s->perf_fds) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (cpu = 0; cpu < s->ncpu; cpu++)
		s->perf_fds[cpu] = -1;
	for (cpu = 0; cpu < s->ncpu; cpu++) {
		s->perf_fds[cpu] = open_cpu_clock(cpu, draw_period(s));
		if (s->perf_fds[cpu] < 0) {
			if (errno == ENODEV)	/* CPU offline */
				continue;
			snprintf(err, errlen, "cannot open a cpu-clock perf event on CPU %d: %s",
				 cpu, strerror(errno));
			return -1;
		}
		s->links[cpu] = bpf_program__attach_perf_event(s->walk.sample, s->perf_fds[cpu]);
		if (!s->links[cpu]) {
			snprintf(err, errlen, "cannot attach the sampler on CPU %d: %s",
				 cpu, strerror(errno));
			return -1;
		}
	}
	return 0;
}

/*
 * The drain period, drawn at random around the one asked for. The samplers
 * are re-armed at the end of a drain: drains at a steady period (poll's
 * timeout plus a nearly constant drain) keep step with a program's timer as
 * a fixed sampling period would, and the first tick after each re-arm, whose
 * weight holds the time since the tick before it, would fall in the same
 * phase of the program's cycle every time (measured: a 100 ms ticker read
 * +40% at 400 Hz). Drawn uniform in [timeout/2, 3*timeout/2], the re-arms
 * fall at random in any program's cycle.
 */
int session_drain_timeout(struct session *s, int timeout_ms)
{
	if (timeout_ms < 2)
		return timeout_ms;
	return timeout_ms / 2 + (int)(next_random(s) % (uint64_t)timeout_ms);
}

