// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include "clock.h"
#include "ebpfprof.skel.h"
#include "grow.h"
#include "kernel_features.h"
#include "py_target.h"
#include "remote.h"
#include "remote_reader.h"
#include "session.h"

/* The programs that walk stacks, in the variant the kernel takes (bpf_loop,
 * or a bounded loop before 5.17), with where their links are kept. */
struct walkers {
	struct bpf_program *sample, *sw, *stack_at_return, *gc_done_usdt, *gc_done_uprobe;
	struct bpf_link **sw_link, **stack_at_return_link;
};

struct session {
	struct ebpfprof_bpf *skel;	/* single links are in skel->links */
	struct kernel_features kf;
	struct walkers walk;
	struct bpf_link *all_tasks_drain;	/* without per-process task iterators (< 6.1) */
	struct ring_buffer *rb;
	struct bpf_link **links;	/* the sampler, one per CPU */
	int *perf_fds;
	int ncpu;
	unsigned rate_hz;		/* the mean rate asked for */
	uint64_t rng;			/* xorshift64* state for the sampling periods */
	uint64_t next_rearm_ns;		/* when the next CPUs get new periods */
	int rearm_cpu;			/* the next of them */
	struct bpf_link **gc_links;	/* two per interpreter file probed */
	size_t ngc_links, gc_links_cap;
	struct gc_file {		/* the files probed, and how */
		dev_t dev;
		ino_t ino;
		enum gc_probe_kind kind;
	} *gc_files;
	size_t ngc_files, gc_files_cap;
	void (*on_totals)(void *ctx, const struct ep_totals_key *key, const struct ep_totals *val);
	int (*next_lost_stack)(void *ctx, __u32 *pid, __u64 *stack_id);
	int (*stack_of_blocked)(void *ctx, __u32 pid, __u32 tid, __u64 *stack_id);
	int (*on_event)(void *ctx, void *data, size_t len);
	void *ctx;
	unsigned long seed_failed;	/* blocked threads whose interval could not be opened */
	unsigned long drain_failed;
	struct ep_totals_key *drain_keys;	/* drain_totals' snapshot, the map's size */
	int thread_exit_attached;	/* offcpu_thread_exit: totals may stay in task storage */
	struct drain_iter {		/* per process: takes its threads' totals out */
		pid_t pid;
		struct bpf_link *link;
	} *iters;
	size_t niters, iters_cap;
};

static int verbose_libbpf;

/* The inode of the initial PID namespace (include/linux/proc_ns.h). */
#define PROC_PID_INIT_INO 0xEFFFFFFCu

int session_opts_pidns(struct session_opts *o)
{
	struct stat st;

	if (stat("/proc/self/ns/pid", &st) || st.st_ino == PROC_PID_INIT_INO)
		return 0;
	o->pidns_dev = st.st_dev;
	o->pidns_ino = st.st_ino;
	return 1;
}

/* libbpf's warnings always (they explain failures), its info with -v. */
static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list args)
{
	if (level == LIBBPF_DEBUG || (level == LIBBPF_INFO && !verbose_libbpf))
		return 0;
	return vfprintf(stderr, fmt, args);
}

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
static void rearm_samplers(struct session *s)
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

static int attach_samplers(struct session *s, unsigned rate_hz, char *err, size_t errlen)
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

/* 1 if the running kernel's BTF has the raw tracepoint `name` (tp_btf). */
static int kernel_has_tracepoint(const char *name)
{
	struct btf *btf = btf__load_vmlinux_btf();
	char type[128];
	int found;

	if (!btf)
		return 0;
	snprintf(type, sizeof(type), "btf_trace_%s", name);
	found = btf__find_by_name_kind(btf, type, BTF_KIND_TYPEDEF) > 0;
	btf__free(btf);
	return found;
}

/* Where the kernel has the rseq_update tracepoint, blocked threads' stacks
 * are taken on their return to user mode, not at every switch-out
 * (bpf/offcpu.bpf.c); without it, or if it cannot be attached, at switch-out. */
static void attach_stack_at_return(struct session *s)
{
	if (!bpf_program__autoload(s->walk.stack_at_return))
		return;
	*s->walk.stack_at_return_link = bpf_program__attach(s->walk.stack_at_return);
	if (*s->walk.stack_at_return_link)
		s->skel->bss->ep_stack_at_return = 1;
}

/* Attaches prog, keeping the link in the skeleton (destroyed with it). */
static int attach_one(struct bpf_program *prog, struct bpf_link **link, const char *what,
		      char *err, size_t errlen)
{
	*link = bpf_program__attach(prog);
	if (!*link) {
		snprintf(err, errlen, "cannot attach %s: %s", what, strerror(errno));
		return -1;
	}
	return 0;
}

static int attach_followers(struct session *s, char *err, size_t errlen)
{
	struct ebpfprof_bpf *k = s->skel;

	return attach_one(k->progs.follow_fork, &k->links.follow_fork, "follow_fork", err, errlen) ||
	       attach_one(k->progs.follow_exec, &k->links.follow_exec, "follow_exec", err, errlen) ||
	       attach_one(k->progs.follow_exit, &k->links.follow_exit, "follow_exit", err, errlen);
}

/* The per-thread state map before 5.11: a hash keyed by host tid, one entry
 * per live thread of the profiled processes (offcpu_thread_exit deletes). */
#define EP_TID_STATES	16384

/*
 * Sets the object up for what the kernel has (user/record/kernel_features.c): the
 * feature flags the programs test (the other mechanism's code is dead and
 * never verified), the per-thread state map's type, and which variant of
 * each stack-walking program is loaded.
 */
static int fit_to_kernel(struct session *s)
{
	struct ebpfprof_bpf *k = s->skel;
	const struct kernel_features *kf = &s->kf;
	int loop = kf->has[KF_BPF_LOOP], atomics = kf->has[KF_ATOMICS];
	/* the switch: before 5.12 without exchanges (and bpf_loop, 5.17), else
	 * with bpf_loop, else bounded */
	struct bpf_program *sw = !atomics ? k->progs.offcpu_switch_plain : loop ?
				 k->progs.offcpu_switch : k->progs.offcpu_switch_bounded;
	struct bpf_link **sw_link = !atomics ? &k->links.offcpu_switch_plain : loop ?
				    &k->links.offcpu_switch : &k->links.offcpu_switch_bounded;
	struct bpf_program *switches[] = { k->progs.offcpu_switch, k->progs.offcpu_switch_bounded,
					   k->progs.offcpu_switch_plain };
	struct bpf_program *unused[] = {
		loop ? k->progs.sample_on_cpu_bounded : k->progs.sample_on_cpu,
		loop ? k->progs.offcpu_stack_at_return_bounded : k->progs.offcpu_stack_at_return,
		loop ? k->progs.gc_done_usdt_bounded : k->progs.gc_done_usdt,
		loop ? k->progs.gc_done_uprobe_bounded : k->progs.gc_done_uprobe,
	};
	size_t i;

	k->rodata->ep_has_task_storage = kf->has[KF_TASK_STORAGE];
	k->rodata->ep_has_task_pt_regs = kf->has[KF_TASK_PT_REGS];
	k->rodata->ep_has_current_task_btf = kf->has[KF_CURRENT_TASK_BTF];
	if (!kf->has[KF_TASK_STORAGE] &&
	    (bpf_map__set_type(k->maps.offcpu_tasks, BPF_MAP_TYPE_HASH) ||
	     bpf_map__set_map_flags(k->maps.offcpu_tasks, 0) ||
	     bpf_map__set_max_entries(k->maps.offcpu_tasks, EP_TID_STATES)))
		return -1;
	for (i = 0; i < sizeof(unused) / sizeof(unused[0]); i++)
		bpf_program__set_autoload(unused[i], false);
	for (i = 0; i < sizeof(switches) / sizeof(switches[0]); i++)
		bpf_program__set_autoload(switches[i], switches[i] == sw);
	/* its exchanges would be refused: no drain, the totals go to the map */
	if (!atomics)
		bpf_program__set_autoload(k->progs.offcpu_drain_totals, false);
	s->walk = (struct walkers){
		.sample = loop ? k->progs.sample_on_cpu : k->progs.sample_on_cpu_bounded,
		.sw = sw,
		.sw_link = sw_link,
		.stack_at_return = loop ? k->progs.offcpu_stack_at_return :
					  k->progs.offcpu_stack_at_return_bounded,
		.stack_at_return_link = loop ? &k->links.offcpu_stack_at_return :
					       &k->links.offcpu_stack_at_return_bounded,
		.gc_done_usdt = loop ? k->progs.gc_done_usdt : k->progs.gc_done_usdt_bounded,
		.gc_done_uprobe = loop ? k->progs.gc_done_uprobe : k->progs.gc_done_uprobe_bounded,
	};
	return 0;
}

/* --native: the sampler sends each sample's registers and stack, from a
 * record per CPU; without it the map is one entry and the code is dead. */
static int set_native(struct session *s, const struct session_opts *o)
{
	int ncpu = libbpf_num_possible_cpus();

	if (!o->native)
		return 0;
	if (ncpu <= 0) {
		errno = -ncpu;
		return -1;
	}
	s->skel->rodata->ep_native = 1;
	if (o->native_stack_bytes)
		s->skel->rodata->ep_native_stack_bytes = o->native_stack_bytes > EP_NATIVE_STACK_MAX ?
							 EP_NATIVE_STACK_MAX : o->native_stack_bytes;
	return bpf_map__set_max_entries(s->skel->maps.native_scratch, ncpu);
}

/* With -v: what the kernel lacks, and what is done instead. */
static void print_fallbacks(const struct session *s, FILE *f, const char *prefix)
{
	int i;

	for (i = 0; i < KF_COUNT; i++)
		if (!s->kf.has[i])
			fprintf(f, "%sthis kernel lacks %s (Linux %s)%s: %s\n", prefix,
				kernel_feature_what(i), kernel_feature_since(i),
				s->kf.forced[i] ? " (EBPFPROF_FORCE_MISSING)" : "",
				kernel_feature_without(i));
}

int session_follow(struct session *s, pid_t pid)
{
	__u32 key = pid;
	__u8 one = 1;

	return bpf_map_update_elem(bpf_map__fd(s->skel->maps.followed), &key, &one, BPF_ANY);
}

void session_unfollow(struct session *s, pid_t pid)
{
	__u32 key = pid;

	session_remove_process(s, pid);
	bpf_map_delete_elem(bpf_map__fd(s->skel->maps.followed), &key);
}

struct session *session_open(const struct session_opts *o, char *err, size_t errlen)
{
	struct session *s = calloc(1, sizeof(*s));
	int rc;

	if (!s) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	s->on_event = o->on_event;
	s->on_totals = o->on_totals;
	s->next_lost_stack = o->next_lost_stack;
	s->stack_of_blocked = o->stack_of_blocked;
	s->ctx = o->ctx;
	verbose_libbpf = o->verbose;
	libbpf_set_print(libbpf_print);
	if (kernel_features_probe(&s->kf, err, errlen))
		goto fail;
	s->skel = ebpfprof_bpf__open();
	if (!s->skel) {
		snprintf(err, errlen, "cannot open the BPF object: %s", strerror(errno));
		goto fail;
	}
	if (fit_to_kernel(s)) {
		snprintf(err, errlen, "cannot set the BPF object up for this kernel: %s",
			 strerror(errno));
		goto fail;
	}
	if (o->verbose)
		print_fallbacks(s, stderr, "ebpfprof: ");
	s->skel->rodata->ep_pidns_dev = o->pidns_dev;
	s->skel->rodata->ep_pidns_ino = o->pidns_ino;
	if (o->offcpu_exact_ns)
		s->skel->rodata->ep_offcpu_exact_ns = o->offcpu_exact_ns;
	if (o->offcpu_period_ns)
		s->skel->rodata->ep_offcpu_period_ns = o->offcpu_period_ns;
	s->skel->rodata->ep_sample_period_ns = 1000000000ull / (o->rate_hz ? o->rate_hz : SESSION_DEFAULT_RATE_HZ);
	if (set_native(s, o)) {
		snprintf(err, errlen, "cannot set the BPF object up for --native: %s", strerror(errno));
		goto fail;
	}
	if (!o->follow_children) {	/* not loaded at all: nothing to check at run time */
		bpf_program__set_autoload(s->skel->progs.follow_fork, false);
		bpf_program__set_autoload(s->skel->progs.follow_exec, false);
		bpf_program__set_autoload(s->skel->progs.follow_exit, false);
	}
	if (!kernel_has_tracepoint("rseq_update"))
		bpf_program__set_autoload(s->walk.stack_at_return, false);
	rc = ebpfprof_bpf__load(s->skel);
	if (rc) {
		snprintf(err, errlen, "cannot load the BPF programs: %s%s", strerror(-rc),
			 o->verbose ? "" : " (run with -v for the verifier's log)");
		goto fail;
	}
	if (attach_samplers(s, o->rate_hz, err, errlen))
		goto fail;
	if (attach_one(s->walk.sw, s->walk.sw_link, "to the sched_switch tracepoint", err, errlen))
		goto fail;
	attach_stack_at_return(s);
	/* without it, an exiting thread's totals would go with its storage:
	 * they are then kept in the map, as on kernels without task iterators */
	s->skel->links.offcpu_thread_exit = bpf_program__attach(s->skel->progs.offcpu_thread_exit);
	s->thread_exit_attached = s->skel->links.offcpu_thread_exit != NULL;
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

static struct drain_iter *find_iter(struct session *s, pid_t pid)
{
	size_t i;

	for (i = 0; i < s->niters; i++)
		if (s->iters[i].pid == pid)
			return &s->iters[i];
	return NULL;
}

/* prog as a task iterator over the threads of process pid (Linux 6.1+);
 * before 6.1, over every task (the programs skip those without state). */
static struct bpf_link *attach_task_iter(struct session *s, struct bpf_program *prog, pid_t pid)
{
	DECLARE_LIBBPF_OPTS(bpf_iter_attach_opts, opts);
	union bpf_iter_link_info linfo = { 0 };

	if (!s->kf.has[KF_ITER_TASK_PID])
		return bpf_program__attach_iter(prog, NULL);
	linfo.task.pid = pid;
	opts.link_info = &linfo;
	opts.link_info_len = sizeof(linfo);
	return bpf_program__attach_iter(prog, &opts);
}

/* The iterator of pid's threads for offcpu_drain_totals: 0 once it exists,
 * so the kernel keeps their totals in task storage. */
static int attach_drain_iter(struct session *s, pid_t pid)
{
	struct bpf_link *link;

	if (find_iter(s, pid))
		return 0;
	if (!s->thread_exit_attached || !s->kf.has[KF_TASK_STORAGE] || !s->kf.has[KF_ATOMICS])
		return -1;
	if (!s->kf.has[KF_ITER_TASK_PID]) {	/* one iterator drains every process */
		if (!s->all_tasks_drain)
			s->all_tasks_drain = attach_task_iter(s, s->skel->progs.offcpu_drain_totals, 0);
		return s->all_tasks_drain ? 0 : -1;
	}
	if (GROW_ARRAY(s->iters, s->iters_cap, s->niters + 1))
		return -1;
	link = attach_task_iter(s, s->skel->progs.offcpu_drain_totals, pid);
	if (!link)
		return -1;
	s->iters[s->niters++] = (struct drain_iter){ pid, link };
	return 0;
}

static void drain_task_totals(struct session *s, struct drain_iter *it);

int session_add_process(struct session *s, pid_t pid, const struct ep_proc_cfg *cfg)
{
	struct ep_proc_cfg with_iter = *cfg;
	struct drain_iter *it;
	__u32 key = pid;

	with_iter.totals_in_task = !attach_drain_iter(s, pid);
	/* its threads' on-CPU time counts from here */
	with_iter.start_ts = monotonic_ns();
	if (verbose_libbpf)
		fprintf(stderr, "ebpfprof: off-CPU totals of %d: %s\n", pid, with_iter.totals_in_task ?
			"per thread in task storage, drained by a task iterator" :
			!s->kf.has[KF_TASK_STORAGE] ? "in a hash map (no task storage in this kernel)" :
			!s->kf.has[KF_ATOMICS] ? "in a hash map (no BPF exchanges in this kernel)" :
			"in a hash map (no task iterator for the process)");
	if (bpf_map_update_elem(bpf_map__fd(s->skel->maps.procs), &key, &with_iter, BPF_ANY))
		return -1;
	/* a first drain gives every thread storage: the switch-in of one
	 * runnable now is then seen, and one running now is counted from here */
	it = find_iter(s, pid);
	if (it)
		drain_task_totals(s, it);
	return 0;
}

/* The GC clock of pid at now into *out; -1 if its collections are not probed. */
static int gc_clock_now(struct session *s, pid_t pid, uint64_t now, uint64_t *out)
{
	__u32 key = pid;
	__u64 clock;

	if (bpf_map_lookup_elem(bpf_map__fd(s->skel->maps.gc_clocks), &key, &clock))
		return -1;
	*out = ep_gc_clock_read(clock, now);
	return 0;
}

/* Reads the records of size rec_size an iterator link writes, each to fn
 * (if any); 0, or -1 if the iterator could not be run or read to its end.
 * A record cut by a read is put back together. */
static int read_iter(struct bpf_link *link, size_t rec_size,
		     void (*fn)(void *arg, const void *rec), void *arg)
{
	char buf[EP_DRAIN_READ_BYTES];
	size_t have = 0, at;
	ssize_t n;
	int fd = bpf_iter_create(bpf_link__fd(link));

	if (fd < 0)
		return -1;
	while ((n = read(fd, buf + have, sizeof(buf) - have)) > 0 || (n < 0 && errno == EINTR)) {
		if (n < 0)
			continue;
		have += n;
		for (at = 0; at + rec_size <= have; at += rec_size)
			if (fn)
				fn(arg, buf + at);
		memmove(buf, buf + at, have - at);
		have -= at;
	}
	close(fd);
	return n < 0 ? -1 : 0;
}

/* Forgets the operations left in offcpu_task_ops: their threads are gone. */
static void clear_task_ops(struct session *s)
{
	int fd = bpf_map__fd(s->skel->maps.offcpu_task_ops);
	__u32 key;

	while (!bpf_map_get_next_key(fd, NULL, &key))
		if (bpf_map_delete_elem(fd, &key))
			break;
}

/* Runs offcpu_task_io over pid's threads: the operations queued in
 * offcpu_task_ops are applied, and each thread's storage (struct
 * ep_task_dump) goes to fn. Task iterators reach every thread on every
 * kernel we support; a pidfd of a thread, the other way to its storage,
 * needs Linux 6.9. */
static int task_io(struct session *s, pid_t pid, void (*fn)(void *arg, const void *rec), void *arg)
{
	struct bpf_link *link = attach_task_iter(s, s->skel->progs.offcpu_task_io, pid);
	int rc;

	if (!link) {
		clear_task_ops(s);
		return -1;
	}
	rc = read_iter(link, sizeof(struct ep_task_dump), fn, arg);
	bpf_link__destroy(link);
	clear_task_ops(s);
	return rc;
}

/* The GIL of pid as the kernel reads it (see ep_gil_blame); holder 0 when
 * it cannot be read. */
static struct ep_gil_seen gil_now(struct session *s, pid_t pid, uint64_t *addr)
{
	struct ep_gil_seen seen = { 0 };
	struct ep_proc_cfg cfg;
	__u32 key = pid;
	uint64_t w[3];

	*addr = 0;
	if (bpf_map_lookup_elem(bpf_map__fd(s->skel->maps.procs), &key, &cfg) ||
	    !cfg.gil_holder_addr || cfg.gil_holder_addr + 8 != cfg.gil_locked_addr)
		return seen;
	*addr = cfg.gil_holder_addr;
	if (remote_read(pid, cfg.gil_holder_addr, w, sizeof(w)))
		return seen;
	seen.holder = w[0];
	seen.locked = (uint32_t)w[1];
	seen.switch_number = w[2];
	return seen;
}

int session_seed_offcpu(struct session *s, int tid, const struct ep_offcpu_task *st)
{
	struct ep_task_op op = { .op = EP_TASK_SEED, .seed = *st };
	__u32 key = tid;
	/* the GC clock as the kernel would have read it at the switch-out */
	uint64_t clock = 0, addr;

	gc_clock_now(s, st->pid, st->off_ts, &clock);
	op.seed.gc_clock_out = clock;
	/* its holder: the one now, as though it had begun to wait now */
	if (st->reason == EP_OFF_GIL || st->reason == EP_OFF_GIL_GC) {
		op.seed.gil_out = gil_now(s, st->pid, &addr);
		op.seed.gil_addr = addr;
	}
	/* a thread gone meanwhile leaves its operation unused: nothing to seed */
	if (bpf_map_update_elem(bpf_map__fd(s->skel->maps.offcpu_task_ops), &key, &op, BPF_ANY) ||
	    task_io(s, st->pid, NULL, NULL)) {
		s->seed_failed++;
		return -1;
	}
	return 0;
}

/* A GIL wait's time, plain and behind a collection, under its holder
 * (ep_gil_blame() of the GIL at its start and now), as the kernel would. */
static void deliver_blame(struct session *s, const struct ep_offcpu_task *st, uint64_t plain_ns,
			  uint64_t gc_ns)
{
	uint64_t addr;
	struct ep_gil_seen now = gil_now(s, st->pid, &addr);
	struct ep_totals_key key = { .pid = st->pid, .tid = st->tid, .flags = EP_TK_BLAME,
				     .holder = ep_gil_blame(&st->gil_out, &now) };
	struct ep_totals val = { 1, 0 };

	if (!s->on_totals)
		return;
	if (plain_ns) {
		key.reason = EP_OFF_GIL;
		val.ns = plain_ns;
		s->on_totals(s->ctx, &key, &val);
	}
	if (gc_ns) {
		key.reason = EP_OFF_GIL_GC;
		val.ns = gc_ns;
		s->on_totals(s->ctx, &key, &val);
	}
}

/* Thread st->tid is off the CPU now: delivers its interval up to now as the
 * kernel would at its switch-in (record with its stack, and totals). keep:
 * the interval goes on from now (--rotate's cut: st gets its new start),
 * else it is closed (st->off_ts 0). */
static void deliver_open_interval(struct session *s, struct ep_offcpu_task *st, uint64_t now,
				  int keep)
{
	struct ep_offcpu_record rec;
	struct ep_totals_key key;
	struct ep_totals val = { 1, 0 };
	uint64_t gc_ns = 0, clock_now;
	pid_t pid = st->pid;

	/* its stack is taken when it returns to user mode: walk it from here */
	if (!st->stack_id && (st->flags & EP_IV_STACK_LATER) && s->stack_of_blocked)
		s->stack_of_blocked(s->ctx, st->pid, st->tid, &st->stack_id);
	if (st->reason == EP_OFF_GIL && !(st->flags & EP_IV_OWN_GC) &&
	    !gc_clock_now(s, pid, now, &clock_now) && clock_now > st->gc_clock_out)
		gc_ns = clock_now - st->gc_clock_out;
	if (gc_ns > now - st->off_ts)
		gc_ns = now - st->off_ts;
	rec = (struct ep_offcpu_record){
		.kind = EP_EV_OFFCPU, .pid = st->pid, .tid = st->tid, .reason = st->reason,
		.flags = st->flags | EP_IV_EXACT | EP_IV_OPEN, .gc_gen = st->gc_gen,
		.start_ts = st->off_ts, .end_ts = now, .weight_ns = now - st->off_ts,
		.gc_ns = gc_ns, .stack_id = st->stack_id };
	key = (struct ep_totals_key){ .pid = st->pid, .tid = st->tid,
				      .flags = st->flags & EP_IV_OWN_GC };
	if (gc_ns && s->on_totals) {
		key.reason = EP_OFF_GIL_GC;
		val.ns = gc_ns;
		s->on_totals(s->ctx, &key, &val);
	}
	if (rec.weight_ns > gc_ns && s->on_totals) {
		key.reason = st->reason;
		val.ns = rec.weight_ns - gc_ns;
		s->on_totals(s->ctx, &key, &val);
	}
	if ((st->reason == EP_OFF_GIL || st->reason == EP_OFF_GIL_GC) && !(st->flags & EP_IV_OWN_GC))
		deliver_blame(s, st, st->reason == EP_OFF_GIL ? rec.weight_ns - gc_ns : 0,
			      st->reason == EP_OFF_GIL ? gc_ns : rec.weight_ns);
	if (s->on_event)
		s->on_event(s->ctx, &rec, sizeof(rec));
	/* closed here: the kernel must not count it again when the thread runs,
	 * or, at a cut, only what comes after it */
	st->off_ts = keep ? now : 0;
	if (keep && st->reason == EP_OFF_GIL && !(st->flags & EP_IV_OWN_GC) &&
	    !gc_clock_now(s, pid, now, &clock_now))
		st->gc_clock_out = clock_now;
}

struct closing {
	struct session *s;
	pid_t pid;
	uint64_t now;
	int keep;
	struct closed {			/* what the kernel is to be told */
		__u32 tid;
		struct ep_task_op op;
	} *closed;
	size_t nclosed, closed_cap;
	int failed;
};

static void close_dumped(void *arg, const void *rec)
{
	struct closing *c = arg;
	const struct ep_task_dump *d = rec;
	struct ep_offcpu_task st = d->st;
	struct closed *out;

	/* a GIL wait ended, its holder not yet settled (the thread has not
	 * returned to user mode): at the end, nothing else will */
	if (!c->keep && (pid_t)st.pid == c->pid && (st.blame_ns[0] || st.blame_ns[1]))
		deliver_blame(c->s, &st, st.blame_ns[0], st.blame_ns[1]);
	if (!st.off_ts || (pid_t)st.pid != c->pid || c->now <= st.off_ts)
		return;
	if (GROW_ARRAY(c->closed, c->closed_cap, c->nclosed + 1)) {
		c->failed = 1;
		return;
	}
	out = &c->closed[c->nclosed++];
	*out = (struct closed){ .tid = d->tid,
				.op = { .op = EP_TASK_RESTART, .expect_off_ts = st.off_ts } };
	deliver_open_interval(c->s, &st, c->now, c->keep);
	out->op.off_ts = st.off_ts;
	out->op.gc_clock_out = st.gc_clock_out;
}

/* Reads the storage of pid's threads, delivers the intervals open now, then
 * has the kernel close them (or, keep, restart them now): two iterator runs,
 * the second applying what the first found. */
static void close_open_intervals(struct session *s, pid_t pid, int keep)
{
	struct closing c = { .s = s, .pid = pid, .now = monotonic_ns(), .keep = keep };
	int fd = bpf_map__fd(s->skel->maps.offcpu_task_ops);
	size_t i;

	if (task_io(s, pid, close_dumped, &c))
		c.failed = 1;
	for (i = 0; i < c.nclosed; i++)
		if (bpf_map_update_elem(fd, &c.closed[i].tid, &c.closed[i].op, BPF_ANY))
			c.failed = 1;
	if (c.nclosed && task_io(s, pid, NULL, NULL))
		c.failed = 1;
	if (c.failed)
		s->drain_failed++;
	free(c.closed);
}

/* Reads and deletes one entry of a hash map: in one step from Linux 5.14;
 * before, a lookup then a delete (what a switch-in adds between the two,
 * microseconds apart, is lost). */
static int take_entry(int fd, const void *key, void *val)
{
	if (!bpf_map_lookup_and_delete_elem(fd, key, val))
		return 0;
	if (errno != EINVAL && errno != ENOTSUP && errno != 524 /* ENOTSUPP */)
		return -1;
	if (bpf_map_lookup_elem(fd, key, val))
		return -1;
	bpf_map_delete_elem(fd, key);
	return 0;
}

/*
 * Moves the kernel's off-CPU totals to on_totals: the keys first, then each
 * entry, read and deleted in one step so that nothing added meanwhile is lost.
 * A switch-heavy thread re-creates its entry microseconds after it is taken
 * out, so taking entries one by one from the first key chased those
 * re-creations, up to the map's size each drain (59% of a CPU on a pinned
 * ping-pong); a snapshot of the keys bounds a drain by the entries it found.
 */
static void drain_totals(struct session *s)
{
	int fd = bpf_map__fd(s->skel->maps.offcpu_totals);
	unsigned int max = bpf_map__max_entries(s->skel->maps.offcpu_totals), n = 0, i;
	struct ep_totals_key *prev = NULL;
	struct ep_totals val;

	if (!s->drain_keys) {
		s->drain_keys = calloc(max, sizeof(*s->drain_keys));
		if (!s->drain_keys) {
			s->drain_failed++;
			return;
		}
	}
	while (n < max && !bpf_map_get_next_key(fd, prev, &s->drain_keys[n]))
		prev = &s->drain_keys[n++];
	for (i = 0; i < n; i++) {
		if (take_entry(fd, &s->drain_keys[i], &val)) {
			if (errno != ENOENT)
				s->drain_failed++;
			continue;
		}
		if (s->on_totals)
			s->on_totals(s->ctx, &s->drain_keys[i], &val);
	}
}

static void deliver_totals_entry(void *arg, const void *rec)
{
	struct session *s = arg;
	struct ep_totals_entry e;

	memcpy(&e, rec, sizeof(e));
	if (s->on_totals)
		s->on_totals(s->ctx, &e.key, &e.val);
}

/* Runs the process's drain iterator: each ep_totals_entry read is taken out
 * of the kernel (offcpu_drain_totals), so each goes to on_totals once. */
static void drain_task_totals(struct session *s, struct drain_iter *it)
{
	if (read_iter(it->link, sizeof(struct ep_totals_entry), deliver_totals_entry, s))
		s->drain_failed++;
}

/* The drain iterator over every task (kernels before 6.1), if any. */
static void drain_all_tasks(struct session *s)
{
	if (s->all_tasks_drain &&
	    read_iter(s->all_tasks_drain, sizeof(struct ep_totals_entry), deliver_totals_entry, s))
		s->drain_failed++;
}

static void drain_all(struct session *s)
{
	size_t i;

	drain_all_tasks(s);
	for (i = 0; i < s->niters; i++)
		drain_task_totals(s, &s->iters[i]);
	drain_totals(s);
}

void session_remove_process(struct session *s, pid_t pid)
{
	struct drain_iter *it = find_iter(s, pid);
	__u32 key = pid;

	close_open_intervals(s, pid, 0);
	bpf_map_delete_elem(bpf_map__fd(s->skel->maps.procs), &key);
	bpf_map_delete_elem(bpf_map__fd(s->skel->maps.gc_clocks), &key);
	if (it) {
		drain_task_totals(s, it);
		bpf_link__destroy(it->link);
		*it = s->iters[--s->niters];
	}
	drain_all_tasks(s);
	drain_totals(s);
}

void session_cut_period(struct session *s, pid_t pid)
{
	struct drain_iter *it = find_iter(s, pid);

	close_open_intervals(s, pid, 1);
	if (it)
		drain_task_totals(s, it);
	drain_all_tasks(s);
	drain_totals(s);
}

/* Stacks the reader never got the frames of are sent whole again. */
static void resend_lost_stacks(struct session *s)
{
	int fd = bpf_map__fd(s->skel->maps.sent_stacks);
	struct ep_sent_key key = { 0 };

	while (s->next_lost_stack && s->next_lost_stack(s->ctx, &key.pid, &key.stack_id))
		bpf_map_delete_elem(fd, &key);
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
static int drain_timeout(struct session *s, int timeout_ms)
{
	if (timeout_ms < 2)
		return timeout_ms;
	return timeout_ms / 2 + (int)(next_random(s) % (uint64_t)timeout_ms);
}

int session_poll(struct session *s, int timeout_ms)
{
	/* records do not wake us (see ring_output): the timeout is the drain period */
	int n = ring_buffer__poll(s->rb, drain_timeout(s, timeout_ms));

	if (n == 0 || n == -EINTR)
		n = ring_buffer__consume(s->rb);
	drain_all(s);
	resend_lost_stacks(s);
	rearm_samplers(s);
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
	if (link && GROW_ARRAY(s->gc_links, s->gc_links_cap, s->ngc_links + 1)) {
		bpf_link__destroy(link);
		return -1;
	}
	if (!link)
		return -1;
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

/*
 * The GC probes are attached to the interpreter's file for every process
 * (pid -1), and the programs keep only profiled processes (procs). Given a
 * pid, the kernel's uprobe is a perf event of that task, and perf switches a
 * task's events out and in with the task: measured on a two-thread ping-pong
 * pinned to one CPU, that made every context switch ~2 us dearer (+20%)
 * while not one collection ran (a uprobe_multi link with a pid did the
 * same). The price of the wide attach: other processes running the same
 * file pay the probes' traps on their collections (~2.5 us each here), the
 * programs returning at once for them.
 */
#define GC_PROBE_PID	(-1)

static int attach_gc_usdt(struct session *s, const struct py_target *t)
{
	struct bpf_link *start, *done;

	start = bpf_program__attach_usdt(s->skel->progs.gc_start_usdt, GC_PROBE_PID, t->elf_path,
					 "python", "gc__start", NULL);
	done = bpf_program__attach_usdt(s->walk.gc_done_usdt, GC_PROBE_PID, t->elf_path,
					"python", "gc__done", NULL);
	return keep_gc_pair(s, start, done);
}

static int attach_gc_uprobe(struct session *s, const struct py_target *t, const char *fn)
{
	LIBBPF_OPTS(bpf_uprobe_opts, entry, .func_name = fn);
	LIBBPF_OPTS(bpf_uprobe_opts, ret, .func_name = fn, .retprobe = true);
	struct bpf_link *start, *done;

	start = bpf_program__attach_uprobe_opts(s->skel->progs.gc_start_uprobe, GC_PROBE_PID,
						t->elf_path, 0, &entry);
	done = bpf_program__attach_uprobe_opts(s->walk.gc_done_uprobe, GC_PROBE_PID,
					       t->elf_path, 0, &ret);
	return keep_gc_pair(s, start, done);
}

static enum gc_probe_kind attach_gc_probes(struct session *s, const struct py_target *t)
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

/* With probes, the process gets a GC clock: GIL waits are then split
 * exactly in the kernel (see ep_gc_clock_read). Without a clock (map full:
 * more than its 256 processes) its GIL waits are classified by the
 * collecting flag instead, as for a process without probes; the summary
 * says so through EP_CNT_MAP_FULL. */
/* Probes once per interpreter file: attached for every process, a second
 * attach would run the programs twice per collection. */
static enum gc_probe_kind probe_file(struct session *s, const struct py_target *t)
{
	enum gc_probe_kind kind;
	size_t i;

	for (i = 0; i < s->ngc_files; i++)
		if (s->gc_files[i].dev == t->elf_dev && s->gc_files[i].ino == t->elf_ino)
			return s->gc_files[i].kind;
	kind = attach_gc_probes(s, t);
	if (kind != GC_PROBE_NONE && !GROW_ARRAY(s->gc_files, s->gc_files_cap, s->ngc_files + 1))
		s->gc_files[s->ngc_files++] = (struct gc_file){ t->elf_dev, t->elf_ino, kind };
	return kind;
}

enum gc_probe_kind session_attach_gc(struct session *s, const struct py_target *t)
{
	enum gc_probe_kind kind = probe_file(s, t);
	__u32 key = t->pid;
	__u64 clock = 0;

	if (kind != GC_PROBE_NONE &&
	    bpf_map_update_elem(bpf_map__fd(s->skel->maps.gc_clocks), &key, &clock, BPF_NOEXIST) &&
	    errno != EEXIST) {
		fprintf(stderr, "ebpfprof: warning: process %d: GC clock not kept (%s): its GIL waits behind collections are classified by the collecting flag\n",
			t->pid, strerror(errno));
	}
	return kind;
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
	size_t i;
	int cpu;

	if (!s)
		return;
	for (i = 0; i < s->ngc_links; i++)
		bpf_link__destroy(s->gc_links[i]);
	free(s->gc_links);
	for (i = 0; i < s->niters; i++)
		bpf_link__destroy(s->iters[i].link);
	free(s->iters);
	bpf_link__destroy(s->all_tasks_drain);
	free(s->gc_files);
	free(s->drain_keys);
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

void session_print_summary(struct session *s, FILE *f)
{
	uint64_t c[EP_CNT_MAX];

	session_counters(s, c);
	print_fallbacks(s, f, "ebpfprof: ");
	fprintf(f, "ebpfprof: off-CPU: %llu intervals timed exactly in the kernel, %llu of them sent (over the threshold, or sampled), %llu of those with their stack taken on the thread's return to user mode; stacks walked %llu times, reused %llu times\n",
		(unsigned long long)c[EP_CNT_OFFCPU], (unsigned long long)c[EP_CNT_OFFCPU_SENT],
		(unsigned long long)c[EP_CNT_STACK_LATER],
		(unsigned long long)c[EP_CNT_STACK_WALKS], (unsigned long long)c[EP_CNT_STACK_REUSED]);
	if (c[EP_CNT_GIL_BLAMED])
		fprintf(f, "ebpfprof: GIL waits: %llu put on their holder in the kernel, %llu of them split where the GIL changed hands\n",
			(unsigned long long)c[EP_CNT_GIL_BLAMED], (unsigned long long)c[EP_CNT_GIL_SPLIT]);
	if (c[EP_CNT_STORAGE_BUSY])
		fprintf(f, "ebpfprof: %llu switch-outs not timed: the thread's task storage was busy (its lock held on that CPU)\n",
			(unsigned long long)c[EP_CNT_STORAGE_BUSY]);
	if (c[EP_CNT_STACK_LATER_LOST])
		fprintf(f, "ebpfprof: %llu off-CPU intervals sent without their stack (the thread blocked again before returning to user mode, or exited)\n",
			(unsigned long long)c[EP_CNT_STACK_LATER_LOST]);
	if (c[EP_CNT_LOST] || c[EP_CNT_MAP_FULL] || c[EP_CNT_GC_LOST] || s->seed_failed ||
	    s->drain_failed)
		fprintf(f, "ebpfprof: warning: lost %llu records (ring buffer full), %llu kernel map updates failed (maps full), %llu collections ended unseen, %lu blocked threads not seeded, %lu totals not drained\n",
			(unsigned long long)c[EP_CNT_LOST], (unsigned long long)c[EP_CNT_MAP_FULL],
			(unsigned long long)c[EP_CNT_GC_LOST], s->seed_failed, s->drain_failed);
	if (remote_timeouts())
		fprintf(f, "ebpfprof: warning: %lu reads of the target's memory given up after %llu ms (a page never served: userfaultfd, FUSE); those pages were not read again, a process after %d such reads not at all\n",
			remote_timeouts(), REMOTE_READ_TIMEOUT_NS / 1000000, REMOTE_HUNG_MAX);
	/* threads the interpreter does not know (yet, or any more): not in the profile */
	if (c[EP_CNT_NO_TSTATE])
		fprintf(f, "ebpfprof: %llu of the %llu samples taken were of threads without a Python thread state (not in the profile)\n",
			(unsigned long long)c[EP_CNT_NO_TSTATE], (unsigned long long)c[EP_CNT_SAMPLES]);
}
