// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The kernel side of a recording (session.h): open, processes, poll, close. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "clock.h"
#include "recorder.h"
#include "session_priv.h"

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

/* EBPFPROF_GIL_READ_GAP_US: how often at most a thread's GIL waits are read
 * for their holder (bpf/offcpu.bpf.c, gil_read_due); 0: every one. 1 and
 * *ns when set, 0 when not, -1 with err when it is not a number in range. */
static int gil_read_gap(uint64_t *ns, char *err, size_t errlen)
{
	const char *text = getenv("EBPFPROF_GIL_READ_GAP_US");
	unsigned long long us;
	char *end;

	if (!text)
		return 0;
	errno = 0;
	us = strtoull(text, &end, 10);
	if (!*text || *end || errno || us > SESSION_GIL_READ_GAP_MAX_US) {
		snprintf(err, errlen, "EBPFPROF_GIL_READ_GAP_US must be a number of microseconds "
			 "from 0 to %u, not '%.40s'", SESSION_GIL_READ_GAP_MAX_US, text);
		return -1;
	}
	*ns = us * 1000;
	return 1;
}

int session_check_env(char *err, size_t errlen)
{
	uint64_t ns;

	return gil_read_gap(&ns, err, errlen) < 0 ? -1 : 0;
}

static int set_gil_read_gap(struct session *s, char *err, size_t errlen)
{
	uint64_t ns;
	int rc = gil_read_gap(&ns, err, errlen);

	if (rc > 0)
		s->skel->rodata->ep_gil_read_gap_ns = ns;
	return rc < 0 ? -1 : 0;
}

/* The reader is held up when it is away from the ring buffer: between two
 * polls, or handling one record (a slow read of the target), or what a poll
 * does after reading them. Records left unread meanwhile may name code
 * objects freed by the time they are read. */
static void note_held_up(struct session *s, uint64_t since_ns)
{
	uint64_t held = monotonic_ns() - since_ns;

	if (held > s->longest_gap_ns)
		s->longest_gap_ns = held;
}

/* -v: when the first sample was taken, after ebpfprof started (its time
 * to attach, a budget: docs/benchmarks.md, "Start-up"). */
static void note_first_sample(struct session *s, const void *data, size_t len)
{
	const struct ep_stack_event *ev = data;

	if (s->first_sample_ns || len < EP_STACK_EVENT_HDR_SIZE || ev->kind != EP_EV_SAMPLE)
		return;
	s->first_sample_ns = ev->ts;
	if (verbose_libbpf)
		fprintf(stderr, "ebpfprof: first sample %.3f s after start (CLOCK_MONOTONIC %llu ns)\n",
			(ev->ts - process_started_ns()) / 1e9, (unsigned long long)ev->ts);
}

static int on_record(void *ctx, void *data, size_t len)
{
	struct session *s = ctx;
	uint64_t start = monotonic_ns();
	int rc;

	note_first_sample(s, data, len);
	rc = s->on_event(s->ctx, data, len);

	note_held_up(s, start);
	return rc;
}

/* The object's settings (its rodata) and which programs load, from o. */
static int session_configure(struct session *s, const struct session_opts *o, char *err, size_t errlen)
{
	s->skel->rodata->ep_pidns_dev = o->pidns_dev;
	s->skel->rodata->ep_pidns_ino = o->pidns_ino;
	if (o->offcpu_exact_ns)
		s->skel->rodata->ep_offcpu_exact_ns = o->offcpu_exact_ns;
	if (o->offcpu_period_ns)
		s->skel->rodata->ep_offcpu_period_ns = o->offcpu_period_ns;
	s->skel->rodata->ep_sample_period_ns = 1000000000ull / (o->rate_hz ? o->rate_hz : SESSION_DEFAULT_RATE_HZ);
	if (set_gil_read_gap(s, err, errlen))
		return -1;
	/* a test's way to the interval a refused switch-in leaves open */
	s->skel->rodata->ep_test_unseen_switch_in = getenv("EBPFPROF_TEST_UNSEEN_SWITCH_IN") != NULL;
	/* a test's way to a profiler held up (a loaded host, a slow read) while
	 * a short target runs and exits */
	if (getenv("EBPFPROF_TEST_READ_LATE_MS"))
		s->read_late_ms = atoi(getenv("EBPFPROF_TEST_READ_LATE_MS")) % 10000;
	s->skel->rodata->ep_labels = o->labels;
	session_set_gc_probes(s, o->follow_children ? 0 : o->gc_probes);
	if (session_set_native(s, o)) {
		snprintf(err, errlen, "cannot set the BPF object up for --native: %s", strerror(errno));
		return -1;
	}
	if (!o->follow_children) {	/* not loaded at all: nothing to check at run time */
		bpf_program__set_autoload(s->skel->progs.follow_fork, false);
		bpf_program__set_autoload(s->skel->progs.follow_exec, false);
		bpf_program__set_autoload(s->skel->progs.follow_exit, false);
	}
	return 0;
}

/* Every program attached where it runs. */
static int session_attach_all(struct session *s, const struct session_opts *o, char *err, size_t errlen)
{
	if (session_attach_samplers(s, o->rate_hz, err, errlen))
		return -1;
	if (session_attach_one(s->walk.sw, s->walk.sw_link, "to the sched_switch tracepoint", err, errlen))
		return -1;
	session_attach_stack_at_return(s);
	/* without it, an exiting thread's totals would go with its storage:
	 * they are then kept in the map, as on kernels without task iterators */
	s->skel->links.offcpu_thread_exit = bpf_program__attach(s->skel->progs.offcpu_thread_exit);
	s->thread_exit_attached = s->skel->links.offcpu_thread_exit != NULL;
	if (o->follow_children && session_attach_followers(s, err, errlen))
		return -1;
	return 0;
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
	s->next_label_codes = o->next_label_codes;
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
	if (session_fit_to_kernel(s)) {
		snprintf(err, errlen, "cannot set the BPF object up for this kernel: %s",
			 strerror(errno));
		goto fail;
	}
	if (o->verbose)
		session_print_fallbacks(s, stderr, "ebpfprof: ");
	if (session_configure(s, o, err, errlen))
		goto fail;
	rc = session_load(s);
	if (rc) {
		snprintf(err, errlen, "cannot load the BPF programs: %s%s", strerror(-rc),
			 o->verbose ? "" : " (run with -v for the verifier's log)");
		goto fail;
	}
	if (o->verbose)
		session_print_loads(s, stderr);
	if (session_attach_all(s, o, err, errlen))
		goto fail;
	s->rb = ring_buffer__new(bpf_map__fd(s->skel->maps.events), on_record, s, NULL);
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
	struct ep_proc_cfg with_iter = *cfg;
	struct drain_iter *it;
	__u32 key = pid;

	with_iter.totals_in_task = !session_attach_drain_iter(s, pid);
	with_iter.gc_slot = session_gc_slot(s, pid);
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
	/* its records come from now: the reader is late from here on too */
	if (!s->last_poll_ns)
		s->last_poll_ns = monotonic_ns();
	/* a first drain gives every thread storage: the switch-in of one
	 * runnable now is then seen, and one running now is counted from here */
	it = session_find_iter(s, pid);
	if (it)
		session_drain_task_totals(s, it);
	/* said last: a front end (ebpfprof_dask, the tests) starts the work
	 * it measures on this line */
	if (verbose_libbpf)
		fprintf(stderr, "ebpfprof: recording %d from %.3f s after start\n", pid,
			(monotonic_ns() - process_started_ns()) / 1e9);
	return 0;
}

int session_has_process(struct session *s, pid_t pid)
{
	struct ep_proc_cfg cfg;
	__u32 key = pid;

	return !bpf_map_lookup_elem(bpf_map__fd(s->skel->maps.procs), &key, &cfg);
}

/* Stacks the reader never got the frames of are sent whole again. */
static void resend_lost_stacks(struct session *s)
{
	int fd = bpf_map__fd(s->skel->maps.sent_stacks);
	struct ep_sent_key key = { 0 };

	while (s->next_lost_stack && s->next_lost_stack(s->ctx, &key.pid, &key.stack_id))
		bpf_map_delete_elem(fd, &key);
}

/* --label: the kernel reads labels under the code objects the reader has
 * seen named as labelled functions since the last drain. */
static void push_label_codes(struct session *s)
{
	int fd = bpf_map__fd(s->skel->maps.procs);
	struct label_codes lc;
	struct ep_proc_cfg cfg;
	__u32 pid;

	while (s->next_label_codes && s->next_label_codes(s->ctx, &pid, &lc)) {
		if (bpf_map_lookup_elem(fd, &pid, &cfg))
			continue;	/* gone */
		cfg.nlabel_codes = lc.n;
		memcpy(cfg.label_code, lc.code, sizeof(cfg.label_code));
		memcpy(cfg.label_ident, lc.ident, sizeof(cfg.label_ident));
		memcpy(cfg.label_arg, lc.arg, sizeof(cfg.label_arg));
		memcpy(cfg.label_index, lc.index, sizeof(cfg.label_index));
		bpf_map_update_elem(fd, &pid, &cfg, BPF_EXIST);
	}
}

/* Milliseconds left to until, rounded up. */
static int ms_left(uint64_t until)
{
	uint64_t now = monotonic_ns();

	return now >= until ? 0 : (int)((until - now + 999999) / 1000000);
}

/*
 * Reads records for up to timeout_ms. Most records do not wake us (see
 * ring_output): the timeout is the drain period. A new stack does, so that
 * its code objects are read while they exist; its records are taken then,
 * and again a moment later, for a new stack that came within the kernel's
 * EP_FRAMES_WAKEUP_NS of it without waking us. Then the wait goes on to the
 * period's end (a signal ends it).
 */
static int read_records(struct session *s, int timeout_ms)
{
	uint64_t until = monotonic_ns() + (uint64_t)timeout_ms * 1000000;
	int n = 0, got, again;

	for (;;) {
		got = ring_buffer__poll(s->rb, timeout_ms);
		if (got <= 0)
			return got == 0 || got == -EINTR ? n : got;
		n += got;
		again = ms_left(until);
		if (again > 2)
			again = 2;
		got = ring_buffer__poll(s->rb, again);
		if (got < 0)
			return got == -EINTR ? n : got;
		n += got;
		got = ring_buffer__consume(s->rb);
		n += got > 0 ? got : 0;
		timeout_ms = ms_left(until);
		if (!timeout_ms)
			return n;
	}
}

int session_poll(struct session *s, int timeout_ms)
{
	uint64_t after;
	int n;

	if (!s->last_poll_ns)
		s->last_poll_ns = monotonic_ns();
	if (s->read_late_ms) {
		struct timespec late = { s->read_late_ms / 1000, s->read_late_ms % 1000 * 1000000L };

		s->read_late_ms = 0;
		nanosleep(&late, NULL);
	}
	note_held_up(s, s->last_poll_ns);	/* said in the summary */
	n = read_records(s, session_drain_timeout(s, timeout_ms));

	if (n == 0)
		n = ring_buffer__consume(s->rb);
	after = monotonic_ns();
	session_drain_all(s);
	resend_lost_stacks(s);
	push_label_codes(s);
	session_rearm_samplers(s);
	note_held_up(s, after);
	s->last_poll_ns = monotonic_ns();
	return n;
}

void session_close(struct session *s)
{
	size_t i;
	int cpu;

	if (!s)
		return;
	session_destroy_gc_links(s);
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

