// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Userspace's reads and writes of the threads' off-CPU state: a task
 * iterator over the process that applies the operation queued for a thread
 * (a seed: the interval userspace found it blocked in; a restart at a
 * recording's cut) and writes each thread's storage out.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "ebpfprof.h"
#include "maps.bpf.h"
#include "pystack.bpf.h"
#include "offcpu.bpf.h"

/* tid -> an operation userspace wants done on that thread's storage */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct ep_task_op);
} offcpu_task_ops SEC(".maps");

/* 1 if the operation was applied: a restart only to the interval userspace
 * read (the thread has not been on a CPU since), which is then userspace's
 * to deliver up to its cut, and not the switch-in's. */
static __always_inline int apply_task_op(struct task_struct *task, const struct ep_task_op *op)
{
	struct ep_offcpu_task *st;

	if (op->op == EP_TASK_SEED) {
		/* no storage yet (pid 0), or only the drain iterator's: the
		 * thread has not left the CPU since it was found blocked, so the
		 * seed's interval is still its own */
		st = task_state_get(task, 1);
		if (!st)
			count(EP_CNT_MAP_FULL);
		else if (!st->pid || (st->primed && !st->on_ts)) {
			__builtin_memcpy(st, &op->seed, sizeof(*st));
			st->ran_ns = task->se.sum_exec_runtime;
			return 1;
		}
		return 0;
	}
	st = task_state_get(task, 0);
	/* the same interval as userspace read (it has not run since) */
	if (!st || st->off_ts != op->expect_off_ts)
		return 0;
	st->off_ts = op->off_ts;
	st->gc_clock_out = op->gc_clock_out;
	/* its switch-in went unseen and it is still on the CPU: userspace
	 * counts its run up to the cut, the drain or its switch-out the rest */
	if (op->on_ts && !st->on_ts)
		st->on_ts = op->on_ts;
	return 1;
}

/* Applies the operation queued for each thread of the process (once), and
 * writes the storage of each thread that has one. */
SEC("iter/task")
int offcpu_task_io(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;
	/* struct ep_task_dump's head (the whole is more than a BPF stack) */
	struct { __u32 tid, applied; __u64 ran_now_ns; } head = { 0 };
	struct ep_offcpu_task *st;
	struct ep_task_op *op;
	__u32 tid;

	if (!task)
		return 0;
	tid = task_tid_in_ns(task);
	if (!tid)
		return 0;
	op = bpf_map_lookup_elem(&offcpu_task_ops, &tid);
	/* kept (userspace deletes the ops after the run) and marked done: a
	 * record that did not fit the read makes the kernel run this program
	 * again for the same thread, which must say again what was done */
	if (op) {
		if (!op->done)
			op->done = EP_TASK_OP_TRIED + apply_task_op(task, op);
		head.applied = op->done == EP_TASK_OP_APPLIED;
	}
	st = task_state_get(task, 0);
	if (!st)
		return 0;
	head.tid = tid;
	head.ran_now_ns = task->se.sum_exec_runtime;
	_Static_assert(sizeof(head) == __builtin_offsetof(struct ep_task_dump, st), "dump head");
	if (!bpf_seq_write(ctx->meta->seq, &head, sizeof(head)))
		bpf_seq_write(ctx->meta->seq, st, sizeof(*st));
	return 0;
}
