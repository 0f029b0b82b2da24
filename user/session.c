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
#include "py_target.h"
#include "session.h"

struct session {
	struct ebpfprof_bpf *skel;
	struct ring_buffer *rb;
	struct bpf_link **links;
	int *perf_fds;
	int ncpu;
	struct bpf_link *offcpu_link;
	struct bpf_link *follow_links[3];
	struct bpf_link *gc_links[64];	/* two per profiled process */
	int ngc_links;
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

static int attach_followers(struct session *s, char *err, size_t errlen)
{
	struct bpf_program *progs[3] = { s->skel->progs.follow_fork, s->skel->progs.follow_exec,
					 s->skel->progs.follow_exit };
	int i;

	for (i = 0; i < 3; i++) {
		s->follow_links[i] = bpf_program__attach(progs[i]);
		if (!s->follow_links[i]) {
			snprintf(err, errlen, "cannot attach %s: %s", bpf_program__name(progs[i]),
				 strerror(errno));
			return -1;
		}
	}
	return 0;
}

int session_follow(struct session *s, pid_t pid)
{
	__u32 key = pid;
	__u8 one = 1;

	return bpf_map_update_elem(bpf_map__fd(s->skel->maps.followed), &key, &one, BPF_ANY);
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
	s->skel->rodata->ep_follow_children = o->follow_children;
	rc = ebpfprof_bpf__load(s->skel);
	if (rc) {
		snprintf(err, errlen, "cannot load the BPF programs: %s%s", strerror(-rc),
			 o->verbose ? "" : " (run with -v for the verifier's log)");
		goto fail;
	}
	if (attach_samplers(s, o->rate_hz, err, errlen))
		goto fail;
	s->offcpu_link = bpf_program__attach(s->skel->progs.offcpu_switch);
	if (!s->offcpu_link) {
		snprintf(err, errlen, "cannot attach to the sched_switch tracepoint: %s", strerror(errno));
		goto fail;
	}
	if (o->follow_children && attach_followers(s, err, errlen))
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

int session_seed_offcpu(struct session *s, int host_tid, const struct ep_offcpu_start *start)
{
	__u32 key = host_tid;

	return bpf_map_update_elem(bpf_map__fd(s->skel->maps.offcpu_since), &key, start, BPF_NOEXIST);
}

int session_poll(struct session *s, int timeout_ms)
{
	/* records do not wake us (see ring_output): the timeout is the drain period */
	int n = ring_buffer__poll(s->rb, timeout_ms);

	if (n == 0 || n == -EINTR)
		n = ring_buffer__consume(s->rb);
	return n;
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

/* Collector functions that take the generation as their second argument,
 * newest first; 3.8's collect() only exists as constprop clones whose
 * arguments cannot be trusted, so it gets no uprobe. */
static const char *const collector_functions[] = {
	"gc_collect_main",	/* 3.10 to 3.14 */
	"collect",		/* 3.9 */
};

static int keep_gc_link(struct session *s, struct bpf_link *link)
{
	if (!link || s->ngc_links >= (int)(sizeof(s->gc_links) / sizeof(s->gc_links[0]))) {
		bpf_link__destroy(link);
		return -1;
	}
	s->gc_links[s->ngc_links++] = link;
	return 0;
}

/* Keeps both links of a probe pair, or neither: half a pair would leave
 * collections that start and never end (or the reverse). */
static int keep_gc_pair(struct session *s, struct bpf_link *start, struct bpf_link *done)
{
	if (!start || !done) {
		bpf_link__destroy(start);
		bpf_link__destroy(done);
		return -1;
	}
	keep_gc_link(s, start);
	return keep_gc_link(s, done);
}

static int attach_gc_usdt(struct session *s, const struct py_target *t)
{
	struct bpf_link *start, *done;

	start = bpf_program__attach_usdt(s->skel->progs.gc_start_usdt, t->pid, t->elf_path,
					 "python", "gc__start", NULL);
	done = bpf_program__attach_usdt(s->skel->progs.gc_done_usdt, t->pid, t->elf_path,
					"python", "gc__done", NULL);
	return keep_gc_pair(s, start, done);
}

static int attach_gc_uprobe(struct session *s, const struct py_target *t, const char *fn)
{
	LIBBPF_OPTS(bpf_uprobe_opts, entry, .func_name = fn);
	LIBBPF_OPTS(bpf_uprobe_opts, ret, .func_name = fn, .retprobe = true);
	struct bpf_link *start, *done;

	start = bpf_program__attach_uprobe_opts(s->skel->progs.gc_start_uprobe, t->pid,
						t->elf_path, 0, &entry);
	done = bpf_program__attach_uprobe_opts(s->skel->progs.gc_done_uprobe, t->pid,
					       t->elf_path, 0, &ret);
	return keep_gc_pair(s, start, done);
}

enum gc_probe_kind session_attach_gc(struct session *s, const struct py_target *t)
{
	size_t i;

	if (t->has_usdt && !attach_gc_usdt(s, t))
		return GC_PROBE_USDT;
	if (!t->has_symtab)
		return GC_PROBE_NONE;
	for (i = 0; i < sizeof(collector_functions) / sizeof(collector_functions[0]); i++)
		if (py_target_symbol(t, collector_functions[i]) &&
		    !attach_gc_uprobe(s, t, collector_functions[i]))
			return GC_PROBE_UPROBE;
	return GC_PROBE_NONE;
}

const char *gc_probe_name(enum gc_probe_kind k)
{
	switch (k) {
	case GC_PROBE_USDT:
		return "USDT probes";
	case GC_PROBE_UPROBE:
		return "uprobes on the collector";
	default:
		return "the collecting flag only";
	}
}

void session_close(struct session *s)
{
	int cpu, i;

	if (!s)
		return;
	for (i = 0; i < s->ngc_links; i++)
		bpf_link__destroy(s->gc_links[i]);
	bpf_link__destroy(s->offcpu_link);
	for (i = 0; i < 3; i++)
		bpf_link__destroy(s->follow_links[i]);
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
