/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What the off-CPU files (offcpu*.bpf.c, one per concern; the design in
 * offcpu.bpf.c) share: the pieces a benchmark build leaves out, each
 * thread's off-CPU state in its task storage, the record's send, the stack
 * noted into that state (offcpu_stack.bpf.c) and the thread's id as the
 * profiler sees it. The maps are defined once, in offcpu.bpf.c (which
 * defines EP_DEFINE_OFFCPU_MAPS and sorts first of them in the link); the
 * other files see them as extern, as maps.bpf.h's.
 */
#ifndef EP_OFFCPU_BPF_H
#define EP_OFFCPU_BPF_H

#ifdef EP_DEFINE_OFFCPU_MAPS
#define EP_OFFCPU_MAP
#else
#define EP_OFFCPU_MAP extern
#endif

/* Pieces of the switch program a benchmark build leaves out (make
 * BPF_EXTRA=-DEP_BENCH_NO_GIL ...) to time them (bench/switch_pieces.py,
 * docs/benchmarks.md); all in by default, never for use. */
#ifndef EP_BENCH_NO_CLASSIFY
#define EP_BENCH_NO_CLASSIFY	0	/* every blocked thread a lock wait */
#endif
#ifndef EP_BENCH_NO_GIL
#define EP_BENCH_NO_GIL		0	/* no GIL read, no blame */
#endif
#ifndef EP_BENCH_NO_RUN_TIME
#define EP_BENCH_NO_RUN_TIME	0	/* no on-CPU time */
#endif
#ifndef EP_BENCH_NO_CPU_CLOCK
#define EP_BENCH_NO_CPU_CLOCK	0	/* no sampler clock, no idle time */
#endif
#ifndef EP_BENCH_NO_SEND
#define EP_BENCH_NO_SEND	0	/* no record sent, no sampling point drawn */
#endif
#ifndef EP_BENCH_EMPTY
#define EP_BENCH_EMPTY		0	/* the switch and return programs return at once */
#endif
#ifndef EP_BENCH_FILTER_ONLY
#define EP_BENCH_FILTER_ONLY	0	/* the procs filter alone */
#endif
#ifndef EP_BENCH_ONLY_LOOKUPS
#define EP_BENCH_ONLY_LOOKUPS	0	/* the filter and task storage, nothing else */
#endif
#ifndef EP_BENCH_DELAY_NS
#define EP_BENCH_DELAY_NS	0	/* with EP_BENCH_EMPTY: spin this long a profiled side */
#endif

/* one load or store the compiler keeps, in order (the drain runs on another CPU) */
#define EP_ONCE(x)		(*(volatile typeof(x) *)&(x))
#define PF_EXITING		0x4

/* Each thread's off-CPU state. Task storage (Linux 5.11) goes with the
 * task; on older kernels the loader makes this a preallocated hash of
 * EP_TID_STATES entries keyed by the thread's host tid (task->pid), whose
 * entry offcpu_thread_exit deletes (see task_state_get). */
EP_OFFCPU_MAP struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct ep_offcpu_task);
} offcpu_tasks SEC(".maps");

/* A zeroed state, the first value of a thread's entry in the tid hash
 * (static: each file that makes states has its copy in .rodata). */
static const struct ep_offcpu_task no_state;

/*
 * The off-CPU state of task: its task storage, or, before Linux 5.11, its
 * entry in the tid hash (the same map, made a hash by the loader). create:
 * make it if missing, except for an exiting task in the hash, whose entry
 * offcpu_thread_exit has deleted (or is about to): nothing would delete a
 * new one. NULL when there is none (or the map is full).
 */
static __always_inline struct ep_offcpu_task *task_state_get(struct task_struct *task, int create)
{
	struct ep_offcpu_task *st;
	__u32 tid;

	if (ep_has_task_storage)
		return bpf_task_storage_get(&offcpu_tasks, task, 0,
					    create ? BPF_LOCAL_STORAGE_GET_F_CREATE : 0);
	tid = task->pid;
	st = bpf_map_lookup_elem(&offcpu_tasks, &tid);
	if (st || !create || (task->flags & PF_EXITING))
		return st;
	bpf_map_update_elem(&offcpu_tasks, &tid, &no_state, BPF_NOEXIST);
	return bpf_map_lookup_elem(&offcpu_tasks, &tid);
}

/* The thread is gone: its entry in the tid hash goes too (task storage goes
 * with the task by itself). */
static __always_inline void task_state_free(struct task_struct *task)
{
	__u32 tid = task->pid;

	if (!ep_has_task_storage)
		bpf_map_delete_elem(&offcpu_tasks, &tid);
}

/* The current thread's off-CPU state (the switch-out's prev, or the
 * thread returning to user mode), found from the current task alone. */
static __always_inline struct ep_offcpu_task *current_state(void)
{
	__u32 tid;

	if (ep_has_task_storage)
		return bpf_task_storage_get(&offcpu_tasks, bpf_get_current_task_btf(), 0, 0);
	tid = (__u32)bpf_get_current_pid_tgid();	/* the tid hash's key: the host tid */
	return bpf_map_lookup_elem(&offcpu_tasks, &tid);
}

/* note_stack_here for the current thread, as global functions verified
 * once per program (offcpu_stack.bpf.c); 1 if noted. */
int ep_note_stack(__u32 pid, __u32 tid, __u64 now);
int ep_note_stack_bounded(__u32 pid, __u32 tid, __u64 now);

/* The current thread's stack into its state (st->stack_id), which st is. */
static __always_inline int note_stack(__u32 pid, __u32 tid, __u64 now, int loop)
{
	if (loop == EP_WALK_BPF_LOOP)
		return ep_note_stack(pid, tid, now);
	return ep_note_stack_bounded(pid, tid, now);
}

static __always_inline void send_record(struct ep_offcpu_record *rec)
{
	if (!ring_output(rec, sizeof(*rec)))
		count(EP_CNT_OFFCPU_SENT);
}

/* task's thread id in the profiler's PID namespace, 0 if it has none there.
 * Runs in the profiler's context (an iterator being read): the depth of its
 * own PID namespace is that of its own pid. */
static __always_inline __u32 task_tid_in_ns(struct task_struct *task)
{
	/* read with probes: any kernel's task, trusted or not */
	struct task_struct *me = (struct task_struct *)bpf_get_current_task();
	unsigned int level;
	struct pid *pid;
	struct upid upid;
	__u64 at;

	if (!ep_pidns_ino)
		return task->pid;
	level = BPF_CORE_READ(me, thread_pid, level);
	pid = BPF_CORE_READ(task, thread_pid);
	if (!pid || BPF_CORE_READ(pid, level) < level)
		return 0;
	at = bpf_core_field_offset(struct pid, numbers) + (__u64)(level & 63) * sizeof(upid);
	if (bpf_core_read(&upid, sizeof(upid), (void *)pid + at) ||
	    BPF_CORE_READ(upid.ns, ns.inum) != ep_pidns_ino)
		return 0;
	return upid.nr;
}

#endif
