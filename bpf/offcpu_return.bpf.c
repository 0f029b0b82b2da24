// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The return to user mode after a switch-in (the rseq_update tracepoint,
 * where the thread has an rseq area; the loader attaches it where the
 * kernel has it): a blocked interval's stack taken in the thread's own
 * context, and the GIL read at a wait's end (the design in offcpu.bpf.c).
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
#include "blame.bpf.h"

/* Is t the current task? (a trusted pointer from 5.11, a number before) */
static __always_inline int is_current(struct task_struct *t)
{
	if (ep_has_current_task_btf)
		return t == bpf_get_current_task_btf();
	return (__u64)t == bpf_get_current_task();
}

/* Back in user mode with its interval still open: its switch-in went
 * unseen (end_unseen_interval). Only a blocked interval waiting for its
 * stack can be open here. */
static __always_inline int unseen_came_back(const struct ep_offcpu_task *st)
{
	return st->off_ts && (st->flags & EP_IV_STACK_LATER);
}

/*
 * The thread returns to user mode after a switch-in: its Python stack is
 * still the one it blocked with. An interval that waits for its stack
 * (EP_IV_STACK_LATER) gets it here, in the thread's own context, and goes.
 * One whose switch-in went unseen gets it too, and goes at the thread's
 * next switch-out, where it is closed: left to then, the stack was gone
 * and a nap's wait showed none. Tracepoints run with preemption off, so
 * the off-CPU scratch slot is not shared with a sched_switch run on this
 * CPU.
 */
static __always_inline int stack_at_return(struct task_struct *t, int loop)
{
	struct ep_offcpu_task *st;
	struct ep_gil_seen gil = {};
	int unseen, noted;

	if (EP_BENCH_EMPTY || EP_BENCH_FILTER_ONLY)
		return 0;
	st = task_state_get(t, 0);
	if (!st)
		return 0;
	unseen = unseen_came_back(st);
	if (!(st->pending.kind || st->blame_ns[0] || st->blame_ns[1] || unseen) || !is_current(t))
		return 0;
	if (st->blame_ns[0] || st->blame_ns[1]) {
		/* the GIL wait's end: the waiter has not taken the GIL yet */
		read_gil(st->gil_addr, &gil);
		settle_blame(t, st, &gil, 1);
	}
	if (!st->pending.kind && !unseen)
		return 0;
	noted = note_stack(st->pid, st->tid, bpf_ktime_get_ns(), loop);
	if (unseen)
		st->flags &= ~EP_IV_STACK_LATER;	/* st->stack_id is its stack */
	if (!st->pending.kind)
		return 0;
	if (noted) {
		st->pending.stack_id = st->stack_id;
		count(EP_CNT_STACK_LATER);
	}
	send_record(&st->pending);
	st->pending.kind = 0;
	return 0;
}

SEC("tp_btf/rseq_update")
int BPF_PROG(offcpu_stack_at_return, struct task_struct *t)
{
	return stack_at_return(t, EP_WALK_BPF_LOOP);
}

SEC("tp_btf/rseq_update")
int BPF_PROG(offcpu_stack_at_return_bounded, struct task_struct *t)
{
	return stack_at_return(t, EP_WALK_BOUNDED);
}
