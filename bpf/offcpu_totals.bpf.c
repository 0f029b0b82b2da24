// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The exact totals' way out (the design in offcpu.bpf.c): the task iterator
 * that takes each thread's totals and GIL blame out of its storage every
 * EP_DRAIN_MS (offcpu_drain_totals), making storage for a thread that has
 * none yet; a thread's exit, which moves them to the map offcpu_totals; and
 * that map's global adder, for the totals that cannot stay in storage.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "ebpfprof.h"
#include "maps.bpf.h"
#include "pystack.bpf.h"
#include "offcpu.bpf.h"
#include "offcpu_totals.bpf.h"
#include "classify.bpf.h"
#include "blame.bpf.h"

/* (pid, tid, reason) -> exact count and time; drained by userspace every
 * EP_DRAIN_MS, so it holds the threads active in one period */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct ep_totals_key);
	__type(value, struct ep_totals);
} offcpu_totals SEC(".maps");

/*
 * Adds to offcpu_totals: the totals of exiting threads and of processes
 * without a drain iterator; a hash update (~0.12 us here), kept off the
 * common path. A global function, verified once per program rather than at
 * each of the several places the switch program adds to its totals; its
 * key comes as scalars (5.10 takes no pointer arguments): pid << 32 | tid,
 * reason | flags << 8, and the holder.
 */
__noinline int ep_add_key_map(__u64 pid_tid, __u32 reason_flags, __u64 holder, __u64 n, __u64 ns)
{
	struct ep_totals_key key = { .pid = pid_tid >> 32, .tid = (__u32)pid_tid,
				     .reason = (__u8)reason_flags, .flags = (__u8)(reason_flags >> 8),
				     .holder = holder };
	struct ep_totals *t = bpf_map_lookup_elem(&offcpu_totals, &key), fresh = { n, ns };

	if (t) {
		__sync_fetch_and_add(&t->count, n);
		__sync_fetch_and_add(&t->ns, ns);
		return 0;
	}
	/* a racing first update on another CPU: add to the one that won */
	if (!bpf_map_update_elem(&offcpu_totals, &key, &fresh, BPF_NOEXIST))
		return 0;
	t = bpf_map_lookup_elem(&offcpu_totals, &key);
	if (!t) {
		count(EP_CNT_MAP_FULL);
		return -1;
	}
	__sync_fetch_and_add(&t->count, n);
	__sync_fetch_and_add(&t->ns, ns);
	return 0;
}

/*
 * A thread off the CPU since before its process was profiled (a switch-out
 * since would have made its storage), or started since and not yet run:
 * an interval from the start (the recording's, or the thread's), as its
 * switch-out would have classified it. Userspace's seed (with its stack)
 * may replace it. Left out, a thread queued or blocked at the start lost
 * the time up to its first switch-in: 10-30 ms a spinner on a loaded
 * machine, more in a guest; a napper's nap when its seed came late.
 */
static __always_inline void prime_off_cpu(struct task_struct *task, struct ep_offcpu_task *st,
					  const struct ep_proc_cfg *cfg)
{
	__u64 *clock = gc_clock_of(st->pid, cfg->gc_slot);
	/* a thread started since (not yet run): from its start, not the
	 * recording's; from the recording's, a 100 us thread waited 7 s */
	__u64 from = task->start_time > cfg->start_ts ? task->start_time : cfg->start_ts;

	st->reason = classify(cfg, task);
	st->flags = EP_IV_SEEDED;
	st->gc_clock_out = clock ? ep_gc_clock_read(*clock, from) : 0;
	st->off_ts = from;
}

/* A thread of the process without storage (it has not left the CPU since
 * the process is profiled): storage for it, so that its switch-in is seen
 * and, running now, its run so far is counted. */
static __always_inline struct ep_offcpu_task *prime_task(struct task_struct *task, __u64 now)
{
	struct ep_offcpu_task *st;
	struct ep_proc_cfg *cfg;
	__u32 pid, tid;

	if (task->flags & PF_EXITING)
		return NULL;
	tid = task_tid_in_ns(task);
	pid = task_tid_in_ns(task->group_leader);
	cfg = tid && pid ? bpf_map_lookup_elem(&procs, &pid) : NULL;
	if (!cfg)
		return NULL;
	st = task_state_get(task, 1);
	if (!st || st->pid)	/* a switch-out made it meanwhile */
		return st;
	st->pid = pid;
	st->tid = tid;
	st->totals_in_task = cfg->totals_in_task;
	st->gc_slot = cfg->gc_slot;
	st->primed = 1;
	st->ran_ns = task->se.sum_exec_runtime;
	if (task->on_cpu) {
		__sync_val_compare_and_swap(&st->on_ts, 0, unseen_run_start(task, cfg, now));
	} else {
		prime_off_cpu(task, st, cfg);
	}
	return st;
}

/* A thread on the CPU now: its run up to now goes to its on-CPU total, and
 * the run's start moves to now, unless it left the CPU meanwhile (its
 * switch-out, which exchanges the start, then counts the run itself). */
static __always_inline void count_running(struct task_struct *task, struct ep_offcpu_task *st,
					  __u64 now)
{
	__u64 since = st->on_ts, from;
	struct ep_proc_cfg *cfg;

	if (!since || now <= since || !task->on_cpu || (task->flags & PF_EXITING) ||
	    !st->totals_in_task)
		return;
	cfg = bpf_map_lookup_elem(&procs, &st->pid);
	if (!cfg || __sync_val_compare_and_swap(&st->on_ts, since, now) != since)
		return;
	from = since > cfg->start_ts ? since : cfg->start_ts;
	if (now > from)
		__sync_fetch_and_add(&st->totals[0][EP_TOTAL_ON_CPU].ns, now - from);
}

SEC("iter/task")
int offcpu_drain_totals(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;
	struct ep_totals_entry e = { 0 };
	struct ep_offcpu_task *st;
	struct ep_totals *t;
	int own, reason;
	__u64 now;

	if (!task)
		return 0;
	now = bpf_ktime_get_ns();
	st = task_state_get(task, 0);
	if (!st)
		st = prime_task(task, now);
	if (!st)
		return 0;
	count_running(task, st, now);
	e.key.pid = st->pid;
	e.key.tid = st->tid;
	for (own = 0; own < 2; own++) {
		for (reason = 0; reason < EP_TOTAL_KINDS; reason++) {
			t = &st->totals[own][reason];
			e.val.count = t->count;
			e.val.ns = t->ns;
			if (!e.val.count && !e.val.ns)
				continue;
			e.key.reason = reason;
			e.key.flags = own ? EP_IV_OWN_GC : 0;
			if (bpf_seq_write(ctx->meta->seq, &e, sizeof(e)))
				return 0;
			__sync_fetch_and_add(&t->count, -e.val.count);
			__sync_fetch_and_add(&t->ns, -e.val.ns);
		}
	}
	drain_blame(ctx->meta->seq, st, &e);
	return 0;
}

/* A thread exits: its storage goes with it, so its totals go to the map,
 * and a record still waiting for its stack goes without one. Its switches
 * from here on add to the map (PF_EXITING is set before this runs). */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(offcpu_thread_exit, struct task_struct *task)
{
	struct ep_offcpu_task *st = task_state_get(task, 0);
	struct ep_totals *t;
	__u64 n, ns;
	int own, reason;

	if (!st)
		return 0;
	for (own = 0; own < 2; own++) {
		for (reason = 0; reason < EP_TOTAL_KINDS; reason++) {
			t = &st->totals[own][reason];
			n = t->count;
			ns = t->ns;
			if (!n && !ns)
				continue;
			__sync_fetch_and_add(&t->count, -n);
			__sync_fetch_and_add(&t->ns, -ns);
			add_total_map(st, reason, own, n, ns);
		}
	}
	exit_blame(task, st);
	if (st->pending.kind) {
		count(EP_CNT_STACK_LATER_LOST);
		send_record(&st->pending);
		st->pending.kind = 0;
	}
	task_state_free(task);
	return 0;
}
