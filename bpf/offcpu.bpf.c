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

/* x86-64 syscall numbers */
#define NR_read			0
#define NR_write		1
#define NR_poll			7
#define NR_pread64		17
#define NR_readv		19
#define NR_select		23
#define NR_nanosleep		35
#define NR_connect		42
#define NR_accept		43
#define NR_sendto		44
#define NR_recvfrom		45
#define NR_sendmsg		46
#define NR_recvmsg		47
#define NR_futex		202
#define NR_io_getevents		208
#define NR_clock_nanosleep	230
#define NR_epoll_wait		232
#define NR_pselect6		270
#define NR_ppoll		271
#define NR_epoll_pwait		281
#define NR_accept4		288
#define NR_preadv		295
#define NR_recvmmsg		299
#define NR_io_uring_enter	426
#define NR_epoll_pwait2		441
#define NR_futex_waitv		449

#define TASK_UNINTERRUPTIBLE	0x2

const volatile int ep_offcpu_enabled = 1;

struct offcpu_start {
	__u64 ts;
	__u32 pid;		/* ids in the profiler's namespace, for the end record */
	__u32 tid;
	__u8 reason;
};

/* host tid -> when and why it left the CPU */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct offcpu_start);
} offcpu_since SEC(".maps");

static __always_inline int is_io_syscall(long nr)
{
	switch (nr) {
	case NR_read: case NR_write: case NR_poll: case NR_pread64: case NR_readv:
	case NR_connect: case NR_accept: case NR_sendto: case NR_recvfrom:
	case NR_sendmsg: case NR_recvmsg: case NR_io_getevents: case NR_epoll_wait:
	case NR_ppoll: case NR_epoll_pwait: case NR_accept4: case NR_preadv:
	case NR_recvmmsg: case NR_io_uring_enter: case NR_epoll_pwait2:
		return 1;
	}
	return 0;
}

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
	if (nr == NR_futex || nr == NR_futex_waitv) {
		if (nr == NR_futex && arg0 >= cfg->gil_start && arg0 < cfg->gil_end)
			return EP_OFF_GIL;
		return EP_OFF_LOCK;
	}
	if (nr == NR_nanosleep || nr == NR_clock_nanosleep)
		return EP_OFF_SLEEP;
	/* select() and pselect() with no descriptors are how older Pythons sleep */
	if (nr == NR_select || nr == NR_pselect6)
		return arg0 == 0 ? EP_OFF_SLEEP : EP_OFF_IO;
	if (is_io_syscall(nr))
		return EP_OFF_IO;
	if (state & TASK_UNINTERRUPTIBLE)	/* page faults, disk */
		return EP_OFF_IO;
	return EP_OFF_OTHER;
}

/* The GIL holder is collecting: a GIL wait now is a wait for the GC. */
static __always_inline int holder_collecting(const struct ep_proc_cfg *cfg)
{
	return cfg->gc_collecting_addr && read_s32(cfg->gc_collecting_addr);
}

static __always_inline void on_switch_out(struct task_struct *prev)
{
	struct offcpu_start start = {};
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
	struct offcpu_start *start = bpf_map_lookup_elem(&offcpu_since, &host_tid);
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
	if (bpf_ringbuf_output(&events, &end, sizeof(end), 0))
		count(EP_CNT_LOST);
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
