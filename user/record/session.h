/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The kernel side of a recording: BPF programs loaded and attached, the
 * ring buffer they fill, and the per-process configuration they read. */
#ifndef EP_SESSION_H
#define EP_SESSION_H
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include "ebpfprof.h"

struct label_codes;

struct session;

/* Samples per second per CPU when none is asked for (--rate); the timer's
 * period is drawn around it (session.c), so 100 keeps no step with a 10 ms
 * program. */
#define SESSION_DEFAULT_RATE_HZ	100
/* ... as text, for --help (a macro's value as a string takes two steps) */
#define SESSION_QUOTE_(x)		#x
#define SESSION_QUOTE(x)		SESSION_QUOTE_(x)
#define SESSION_DEFAULT_RATE_TEXT	SESSION_QUOTE(SESSION_DEFAULT_RATE_HZ)
/* EBPFPROF_GIL_READ_GAP_US at most (the kernel draws below 2^32 ns) */
#define SESSION_GIL_READ_GAP_MAX_US	4000000u

struct session_opts {
	unsigned rate_hz;		/* 0: SESSION_DEFAULT_RATE_HZ */
	uint64_t pidns_dev, pidns_ino;	/* nonzero: filter on pids of this PID namespace */
	int follow_children;		/* --subprocesses */
	int native;			/* --native: samples send registers and user stack */
	unsigned native_stack_bytes;	/* ... this much of the stack (0: the default) */
	int labels;			/* --label: the kernel reads labelled frames' values */
	/* the GC probes' programs to load, 1 << enum gc_probe_kind each (its
	 * targets' session_gc_probes_for); 0: all, the targets not known yet */
	unsigned gc_probes;
	int verbose;
	/* off-CPU intervals at least this long are sent whole; shorter ones
	 * are sampled once per period of off-CPU time (weighted by it) */
	uint64_t offcpu_exact_ns, offcpu_period_ns;
	/* called for every record in the ring buffer */
	int (*on_event)(void *ctx, void *data, size_t len);
	/* called with the kernel's exact off-CPU totals as they are drained */
	void (*on_totals)(void *ctx, const struct ep_totals_key *key, const struct ep_totals *val);
	/* after each drain: stacks records named by id but the reader never
	 * got, one per call (1: filled, 0: none); the kernel forgets it sent
	 * them, so the next record at such a stack carries its frames */
	int (*next_lost_stack)(void *ctx, __u32 *pid, __u64 *stack_id);
	/* --label: a process whose labelled code objects changed (recorder.h) */
	int (*next_label_codes)(void *ctx, __u32 *pid, struct label_codes *out);
	/* the stack of a thread off the CPU whose stack the kernel takes only on
	 * its return to user mode, walked by the caller, for intervals still open
	 * when the recording ends or is cut (0, or -1 if unknown) */
	int (*stack_of_blocked)(void *ctx, __u32 pid, __u32 tid, __u64 *stack_id);
	void *ctx;
};

/* 1 if the profiler runs inside a PID namespace: pids on the command line
 * and in /proc are then that namespace's, and the kernel side must
 * translate; o->pidns_dev and o->pidns_ino then name it. Else 0. */
int session_opts_pidns(struct session_opts *o);

/* The environment's settings of the session (EBPFPROF_GIL_READ_GAP_US)
 * checked before anything is done: 0, or -1 with one line in err. */
int session_check_env(char *err, size_t errlen);
/* Loads and attaches the samplers. NULL with err filled on failure. */
struct session *session_open(const struct session_opts *o, char *err, size_t errlen);
enum gc_probe_kind {
	GC_PROBE_NONE = 0,	/* only the collecting flag, read by the sampler */
	GC_PROBE_USDT,		/* python:gc__start / gc__done */
	GC_PROBE_UPROBE,	/* uprobe + uretprobe on the collector function */
};

struct py_target;

/* Attaches the GC probes for a target: USDT if its binary has them, else
 * uprobes on the collector if its symbols name it. Returns the kind used. */
enum gc_probe_kind session_attach_gc(struct session *s, const struct py_target *t);
/* The GC probe t needs, 1 << enum gc_probe_kind, for session_opts.gc_probes. */
unsigned session_gc_probes_for(const struct py_target *t);
/* pid's GC clock slot + 1 (ep_proc_cfg.gc_slot), 0 if it has none */
__u16 session_gc_slot(const struct session *s, pid_t pid);
void session_free_gc_slot(struct session *s, pid_t pid);
const char *gc_probe_name(enum gc_probe_kind k);

/* Starts walking stacks of process pid with cfg. 0 or -1. */
int session_add_process(struct session *s, pid_t pid, const struct ep_proc_cfg *cfg);
/* Stops: threads of pid still off the CPU have their interval closed now
 * (delivered as records and totals), then the kernel forgets pid. */
void session_remove_process(struct session *s, pid_t pid);
/* Whether the kernel has pid's configuration (set here, or copied from its
 * parent at its fork). */
int session_has_process(struct session *s, pid_t pid);
/* --rotate: delivers the time so far of pid's threads now off the CPU (their
 * intervals go on into the next period) and the kernel's totals. */
void session_cut_period(struct session *s, pid_t pid);
/* --subprocesses: follow pid's future children (forks and execs). */
int session_follow(struct session *s, pid_t pid);
/* Forgets pid entirely: no more samples, and its children are not followed. */
void session_unfollow(struct session *s, pid_t pid);
/* Queues thread tid (of process st->pid, both in our PID namespace) as off
 * the CPU since st->off_ts; session_apply_seeds has the kernel open the
 * queued intervals (closed when each thread runs again), each unless its
 * thread has left the CPU since it was found blocked. 0 or -1. */
int session_queue_seed(struct session *s, int tid, const struct ep_offcpu_task *st);
void session_apply_seeds(struct session *s, pid_t pid);
/* Delivers ready records to on_event and the kernel's totals to on_totals;
 * waits up to timeout_ms. <0 on error. */
int session_poll(struct session *s, int timeout_ms);
/* Sum over CPUs of the kernel-side counters (enum ep_counter). */
void session_counters(struct session *s, uint64_t out[EP_CNT_MAX]);
/* What the kernel side lost, for the summary: the warnings and one line for
 * each figure a loss leaves short; verbose: every counter too. */
void session_print_summary(struct session *s, FILE *f, int verbose);
void session_close(struct session *s);

#endif
