/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Why a thread left the CPU (the off-CPU reason, include/ebpfprof.h's
 * ep_classify_blocked): still runnable, or blocked in which system call on
 * what; a GIL wait while the holder collects is a wait for the GC. Used at
 * switch-out (offcpu.bpf.c) and for a thread found off the CPU at the
 * start (offcpu_totals.bpf.c).
 */
#ifndef EP_CLASSIFY_BPF_H
#define EP_CLASSIFY_BPF_H

#define TASK_UNINTERRUPTIBLE	0x2

/* task_struct before 5.14 named its state `state` (a long). */
struct task_struct___pre514 {
	long state;
} __attribute__((preserve_access_index));

/* x86-64's kernel stack (THREAD_SIZE: 16 KiB without KASAN, as in every
 * distribution kernel) ends with the task's user-mode registers. */
#define EP_THREAD_SIZE	16384

/* The task's state bits; 0 (TASK_RUNNING): on a CPU, or runnable */
static __always_inline unsigned int task_state_bits(struct task_struct *task)
{
	if (bpf_core_field_exists(task->__state))
		return task->__state;
	return ((struct task_struct___pre514 *)task)->state;
}

static __always_inline __u8 classify(const struct ep_proc_cfg *cfg, struct task_struct *prev)
{
	/* prev and its pt_regs are BTF pointers the verifier trusts: plain
	 * (CO-RE relocated) loads, not a helper call per field */
	unsigned int state = task_state_bits(prev);
	struct pt_regs *regs;
	long nr;
	__u64 arg0;

	if (EP_BENCH_NO_CLASSIFY)
		return EP_OFF_LOCK;
	if (state == 0)		/* TASK_RUNNING: switched out while runnable */
		return EP_OFF_PREEMPTED;
	if (ep_has_task_pt_regs) {
		regs = (struct pt_regs *)bpf_task_pt_regs(prev);
		if (!regs)
			return EP_OFF_OTHER;
		nr = regs->orig_ax;
		arg0 = regs->di;
	} else {
		/* before 5.15: task_pt_regs() by hand, read with a probe */
		regs = (struct pt_regs *)((__u64)prev->stack + EP_THREAD_SIZE) - 1;
		if (bpf_core_read(&nr, sizeof(nr), &regs->orig_ax) ||
		    bpf_core_read(&arg0, sizeof(arg0), &regs->di))
			return EP_OFF_OTHER;
	}
	return ep_classify_blocked(nr, arg0, state & TASK_UNINTERRUPTIBLE,
				   cfg->gil_start, cfg->gil_end);
}

/* The GIL holder is collecting: a GIL wait now is a wait for the GC. Only
 * for processes without GC probes; with them the GC clock splits exactly. */
static __always_inline int holder_collecting(const struct ep_proc_cfg *cfg)
{
	return cfg->gc_collecting_addr && read_s32(cfg->gc_collecting_addr);
}

#endif
