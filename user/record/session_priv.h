/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Inside the session (session.h), shared by its files, one concern each:
 *   session.c		open, add and remove processes, poll, close
 *   session_timer.c	the samplers' per-CPU timers and their random periods
 *   session_fit.c	fitting the programs to the running kernel
 *   session_offcpu.c	off-CPU intervals: seeding, closing, draining totals
 *   session_gc.c		the GC probes
 *   session_counters.c	the kernel side's counters and the summary
 *   session_load.c	loading the programs, and the verifier's work on each
 */
#ifndef EP_SESSION_PRIV_H
#define EP_SESSION_PRIV_H
#include <stdint.h>
#include <sys/types.h>
#include <bpf/libbpf.h>
#include "ebpfprof.skel.h"
#include "kernel_features.h"
#include "session.h"

/* The programs that walk stacks, in the variant the kernel takes (bpf_loop,
 * or a bounded loop before 5.17), with where their links are kept. */
struct walkers {
	struct bpf_program *sample, *sw, *stack_at_return, *gc_done_usdt, *gc_done_uprobe;
	struct bpf_link **sw_link, **stack_at_return_link;
};

/* The most programs one load holds (bpf/: 20 today). */
#define SESSION_MAX_PROGS	32

/* One program's load: what the verifier spent on it. */
struct prog_load {
	const char *name;
	uint32_t insns;		/* instructions verified (0: the kernel does not say, < 5.16) */
	uint64_t start_ns;	/* when its load began (CLOCK_BOOTTIME) */
	uint64_t ns;		/* how long it took */
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
	unsigned read_late_ms;		/* a test's: the first records read this late */
	uint64_t last_poll_ns;		/* when session_poll last returned (or the first process came) */
	uint64_t longest_gap_ns;	/* the longest the reader was away from the records */
	uint64_t first_sample_ns;	/* when the first sample was taken, 0: none yet */
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
	pid_t gc_slot_pid[EP_GC_CLOCK_SLOTS];	/* who holds each GC clock slot, 0: free */
	void (*on_totals)(void *ctx, const struct ep_totals_key *key, const struct ep_totals *val);
	int (*next_lost_stack)(void *ctx, __u32 *pid, __u64 *stack_id);
	int (*next_label_codes)(void *ctx, __u32 *pid, struct label_codes *out);
	int (*stack_of_blocked)(void *ctx, __u32 pid, __u32 tid, __u64 *stack_id);
	int (*on_event)(void *ctx, void *data, size_t len);
	void *ctx;
	unsigned long seed_failed;	/* blocked threads whose interval could not be opened */
	unsigned long seeds_queued;	/* in offcpu_task_ops, for session_apply_seeds */
	unsigned long drain_failed;
	unsigned long unseen_closed;	/* intervals of unseen switch-ins closed at a cut or the end */
	struct ep_totals_key *drain_keys;	/* drain_totals' snapshot, the map's size */
	int thread_exit_attached;	/* offcpu_thread_exit: totals may stay in task storage */
	uint64_t load_ns;		/* the programs' load, all of them */
	struct prog_load loads[SESSION_MAX_PROGS];	/* each, in load order */
	size_t nloads;
	struct drain_iter {		/* per process: takes its threads' totals out */
		pid_t pid;
		struct bpf_link *link;
	} *iters;
	size_t niters, iters_cap;
};

/* session_timer.c */
int session_attach_samplers(struct session *s, unsigned rate_hz, char *err, size_t errlen);
void session_rearm_samplers(struct session *s);
int session_drain_timeout(struct session *s, int timeout_ms);
/* session_fit.c */
int session_attach_one(struct bpf_program *prog, struct bpf_link **link, const char *what,
		       char *err, size_t errlen);
int session_fit_to_kernel(struct session *s);
int session_set_native(struct session *s, const struct session_opts *o);
void session_set_gc_probes(struct session *s, unsigned gc_probes);
int session_attach_followers(struct session *s, char *err, size_t errlen);
void session_attach_stack_at_return(struct session *s);
void session_print_fallbacks(const struct session *s, FILE *f, const char *prefix);
/* session_gc.c */
void session_destroy_gc_links(struct session *s);
/* session_load.c */
int session_load(struct session *s);
void session_print_loads(const struct session *s, FILE *f);
/* session_offcpu.c */
int session_attach_drain_iter(struct session *s, pid_t pid);
struct drain_iter *session_find_iter(struct session *s, pid_t pid);
void session_drain_task_totals(struct session *s, struct drain_iter *it);
void session_drain_all(struct session *s);

#endif
