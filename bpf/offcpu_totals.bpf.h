/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Adding to a thread's exact totals: two atomic adds in its task storage,
 * or, for an exiting thread or a process without a drain iterator, the map
 * offcpu_totals through ep_add_key_map (offcpu_totals.bpf.c, which drains
 * them); and where a run began that no switch-in was seen to start.
 * Included by the off-CPU files after offcpu.bpf.h.
 */
#ifndef EP_OFFCPU_TOTALS_BPF_H
#define EP_OFFCPU_TOTALS_BPF_H

/* Adds to offcpu_totals (offcpu_totals.bpf.c): a global function, its key
 * as scalars, pid << 32 | tid, reason | flags << 8, and the holder. */
int ep_add_key_map(__u64 pid_tid, __u32 reason_flags, __u64 holder, __u64 n, __u64 ns);

static __always_inline void add_key_map(const struct ep_offcpu_task *st, __u8 reason, __u8 flags,
					__u64 holder, __u64 n, __u64 ns)
{
	ep_add_key_map((__u64)st->pid << 32 | st->tid, reason | (__u32)flags << 8, holder, n, ns);
}

static __always_inline void add_total_map(const struct ep_offcpu_task *st, __u8 reason,
					  __u8 own_gc, __u64 n, __u64 ns)
{
	add_key_map(st, reason, own_gc ? EP_IV_OWN_GC : 0, 0, n, ns);
}

/* GIL blame (kind 0: plain GIL wait, 1: behind a collection) to the map. */
static __always_inline void add_blame_map(const struct ep_offcpu_task *st, __u64 holder, int kind,
					  __u64 n, __u64 ns)
{
	add_key_map(st, kind ? EP_OFF_GIL_GC : EP_OFF_GIL, EP_TK_BLAME, holder, n, ns);
}

/* Into the thread's own storage: two atomic adds. Adds, not plain stores,
 * because the drain iterator takes them out from another CPU. An exiting
 * thread's totals have been (or are being) moved to the map: it adds there. */
static __always_inline void add_total(struct task_struct *task, struct ep_offcpu_task *st,
				      __u8 reason, __u64 ns)
{
	__u8 own_gc = !!(st->flags & EP_IV_OWN_GC);
	struct ep_totals *t;

	if (!st->totals_in_task || (task->flags & PF_EXITING) || reason >= EP_TOTAL_KINDS) {
		add_total_map(st, reason, own_gc, 1, ns);
		return;
	}
	t = &st->totals[own_gc][reason];
	__sync_fetch_and_add(&t->count, 1);
	__sync_fetch_and_add(&t->ns, ns);
}

/* The start of a run whose switch-in was not seen (the thread had no
 * storage then): a thread started since its process is profiled has run
 * for its whole CPU time (it has not left the CPU since it has no storage:
 * each switch-out makes one); an older one since profiling began. */
static __always_inline __u64 unseen_run_start(struct task_struct *task,
					      const struct ep_proc_cfg *cfg, __u64 now)
{
	__u64 ran = task->se.sum_exec_runtime;

	if (task->start_time < cfg->start_ts || ran >= now - cfg->start_ts)
		return cfg->start_ts;
	return now - ran;
}

#endif
