// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Off-CPU time with its reason, decided in the kernel at the moment a
 * profiled thread leaves the CPU: still runnable means preempted; blocked in
 * futex() on an address inside the GIL's struct means waiting for the GIL;
 * any other futex is a lock (threading.Lock, Condition, queue); sleeping
 * and I/O calls are told apart by the syscall number. The stack at
 * switch-out is sent then; a small record closes the interval at switch-in.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "ebpfprof.h"
#include "maps.bpf.h"
#include "pystack.bpf.h"

#define TASK_UNINTERRUPTIBLE	0x2

const volatile int ep_offcpu_enabled = 1;

/* host tid -> when and why it left the CPU */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct ep_offcpu_start);
} offcpu_since SEC(".maps");

static __always_inline __u8 classify(const struct ep_proc_cfg *cfg, struct task_struct *prev)
{
	struct pt_regs *regs;
	unsigned int state = BPF_CORE_READ(prev, __state);
	long nr;
	__u64 arg0;

	if (state == 0)		/* TASK_RUNNING: switched out while runnable */
		return EP_OFF_PREEMPTED;
	regs = (struct pt_regs *)bpf_task_pt_regs(prev);
	if (!regs)
		return EP_OFF_OTHER;
	nr = BPF_CORE_READ(regs, orig_ax);
	arg0 = BPF_CORE_READ(regs, di);
	return ep_classify_blocked(nr, arg0, state & TASK_UNINTERRUPTIBLE,
				   cfg->gil_start, cfg->gil_end);
}

/* The GIL holder is collecting: a GIL wait now is a wait for the GC. */
static __always_inline int holder_collecting(const struct ep_proc_cfg *cfg)
{
	return cfg->gc_collecting_addr && read_s32(cfg->gc_collecting_addr);
}

static __always_inline void on_switch_out(struct task_struct *prev)
{
	struct ep_offcpu_start start = {};
	struct ep_proc_cfg *cfg;
	struct ep_scratch *sc;
	struct ep_stack_event *ev;
	__u32 pid, tid, host_tid = BPF_CORE_READ(prev, pid);

	/* prev is still `current` here: the switch has not happened yet */
	if (!current_ids(&pid, &tid))
		return;
	cfg = bpf_map_lookup_elem(&procs, &pid);
	if (!cfg)
		return;
	sc = scratch_slot(EP_SCRATCH_OFFCPU);
	if (!sc)
		return;
	start.ts = bpf_ktime_get_ns();
	start.pid = pid;
	start.tid = tid;
	start.reason = classify(cfg, prev);
	if (start.reason == EP_OFF_GIL && holder_collecting(cfg))
		start.reason = EP_OFF_GIL_GC;
	ev = start_stack_event(sc, EP_EV_OFFCPU, pid, tid, start.ts);
	ev->reason = start.reason;
	ev->gil_holder = gil_holder(cfg);
	capture_python_stack(cfg, sc, tid);
	bpf_map_update_elem(&offcpu_since, &host_tid, &start, BPF_ANY);
	count(EP_CNT_OFFCPU);
	emit_stack_event(ev);
}

static __always_inline void on_switch_in(struct task_struct *next)
{
	__u32 host_tid = BPF_CORE_READ(next, pid);
	struct ep_offcpu_start *start = bpf_map_lookup_elem(&offcpu_since, &host_tid);
	struct ep_offcpu_end end = {};

	if (!start)
		return;
	end.kind = EP_EV_OFFCPU_END;
	end.pid = start->pid;
	end.tid = start->tid;
	end.reason = start->reason;
	end.start_ts = start->ts;
	end.end_ts = bpf_ktime_get_ns();
	bpf_map_delete_elem(&offcpu_since, &host_tid);
	ring_output(&end, sizeof(end));
}

SEC("tp_btf/sched_switch")
int BPF_PROG(offcpu_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	if (!ep_offcpu_enabled)
		return 0;
	on_switch_out(prev);
	on_switch_in(next);
	return 0;
}
