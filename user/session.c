// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#define _GNU_SOURCE
#include <errno.h>
#include <linux/perf_event.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "ebpfprof.skel.h"
#include "session.h"

struct session {
	struct ebpfprof_bpf *skel;
	struct ring_buffer *rb;
	struct bpf_link **links;
	int *perf_fds;
	int ncpu;
};

static int verbose_libbpf;

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list args)
{
	if (level == LIBBPF_DEBUG || (level == LIBBPF_INFO && !verbose_libbpf))
		return 0;
	if (!verbose_libbpf && level == LIBBPF_WARN)
		return 0;
	return vfprintf(stderr, fmt, args);
}

/* A cpu-clock event per CPU: a software timer, present in every VM, ticking
 * every 1/rate s of CPU time whatever runs, so samples are exact in time. */
static int open_cpu_clock(int cpu, unsigned rate_hz)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE,
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.size = sizeof(attr),
		.sample_period = 1000000000ull / rate_hz,
	};

	return syscall(__NR_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

static int attach_samplers(struct session *s, unsigned rate_hz, char *err, size_t errlen)
{
	int cpu;

	s->ncpu = libbpf_num_possible_cpus();
	s->links = calloc(s->ncpu, sizeof(*s->links));
	s->perf_fds = malloc(s->ncpu * sizeof(int));
	if (!s->links || !s->perf_fds)
		return -1;
	for (cpu = 0; cpu < s->ncpu; cpu++)
		s->perf_fds[cpu] = -1;
	for (cpu = 0; cpu < s->ncpu; cpu++) {
		s->perf_fds[cpu] = open_cpu_clock(cpu, rate_hz);
		if (s->perf_fds[cpu] < 0) {
			if (errno == ENODEV)	/* CPU offline */
				continue;
			snprintf(err, errlen, "cannot open a cpu-clock perf event on CPU %d: %s",
				 cpu, strerror(errno));
			return -1;
		}
		s->links[cpu] = bpf_program__attach_perf_event(s->skel->progs.sample_on_cpu,
							       s->perf_fds[cpu]);
		if (!s->links[cpu]) {
			snprintf(err, errlen, "cannot attach the sampler on CPU %d: %s",
				 cpu, strerror(errno));
			return -1;
		}
	}
	return 0;
}

struct session *session_open(const struct session_opts *o, char *err, size_t errlen)
{
	struct session *s = calloc(1, sizeof(*s));
	int rc;

	if (!s)
		return NULL;
	verbose_libbpf = o->verbose;
	libbpf_set_print(libbpf_print);
	s->skel = ebpfprof_bpf__open();
	if (!s->skel) {
		snprintf(err, errlen, "cannot open the BPF object: %s", strerror(errno));
		goto fail;
	}
	s->skel->rodata->ep_pidns_dev = o->pidns_dev;
	s->skel->rodata->ep_pidns_ino = o->pidns_ino;
	rc = ebpfprof_bpf__load(s->skel);
	if (rc) {
		snprintf(err, errlen, "cannot load the BPF programs: %s%s", strerror(-rc),
			 o->verbose ? "" : " (run with -v for the verifier's log)");
		goto fail;
	}
	if (attach_samplers(s, o->rate_hz, err, errlen))
		goto fail;
	s->rb = ring_buffer__new(bpf_map__fd(s->skel->maps.events), o->on_event, o->ctx, NULL);
	if (!s->rb) {
		snprintf(err, errlen, "cannot open the ring buffer: %s", strerror(errno));
		goto fail;
	}
	return s;
fail:
	session_close(s);
	return NULL;
}

int session_add_process(struct session *s, pid_t pid, const struct ep_proc_cfg *cfg)
{
	__u32 key = pid;

	return bpf_map_update_elem(bpf_map__fd(s->skel->maps.procs), &key, cfg, BPF_ANY);
}

void session_remove_process(struct session *s, pid_t pid)
{
	__u32 key = pid;

	bpf_map_delete_elem(bpf_map__fd(s->skel->maps.procs), &key);
}

int session_poll(struct session *s, int timeout_ms)
{
	int n = ring_buffer__poll(s->rb, timeout_ms);

	return n == -EINTR ? 0 : n;
}

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

void session_close(struct session *s)
{
	int cpu;

	if (!s)
		return;
	if (s->rb)
		ring_buffer__free(s->rb);
	for (cpu = 0; s->links && cpu < s->ncpu; cpu++)
		bpf_link__destroy(s->links[cpu]);
	for (cpu = 0; s->perf_fds && cpu < s->ncpu; cpu++)
		if (s->perf_fds[cpu] >= 0)
			close(s->perf_fds[cpu]);
	free(s->links);
	free(s->perf_fds);
	ebpfprof_bpf__destroy(s->skel);
	free(s);
}
