// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * --subprocesses: follow the children of profiled processes. A forked child
 * is a copy of its parent, same interpreter at the same addresses, so its
 * configuration is copied here and its first samples already count; a
 * process that execs gets a new program, so its configuration is dropped
 * until userspace has found the new interpreter. Host pids only: the loader
 * refuses --subprocesses inside a PID namespace.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "ebpfprof.h"
#include "maps.bpf.h"
#include "pystack.bpf.h"

/* Loaded only with --subprocesses (bpf_program__set_autoload). */

/* tgid -> 1 for every process followed, Python or not yet (a shell that will
 * exec python, a multiprocessing spawn child before its exec) */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u8);
} followed SEC(".maps");

static __always_inline void send_proc_event(__u32 kind, __u32 pid, __u32 ppid)
{
	struct ep_proc_event e = { .kind = kind, .pid = pid, .ppid = ppid,
				   .ts = bpf_ktime_get_ns() };

	ring_output(&e, sizeof(e));
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(follow_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ppid = BPF_CORE_READ(parent, tgid);
	__u32 cpid = BPF_CORE_READ(child, pid);
	struct ep_proc_cfg *cfg;
	__u8 one = 1;

	if (cpid != BPF_CORE_READ(child, tgid))
		return 0;	/* a new thread, not a new process */
	if (!bpf_map_lookup_elem(&followed, &ppid))
		return 0;
	bpf_map_update_elem(&followed, &cpid, &one, BPF_ANY);
	cfg = bpf_map_lookup_elem(&procs, &ppid);
	if (cfg)
		bpf_map_update_elem(&procs, &cpid, cfg, BPF_ANY);
	send_proc_event(EP_EV_FORK, cpid, ppid);
	return 0;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(follow_exec, struct task_struct *p)
{
	__u32 pid = BPF_CORE_READ(p, tgid);

	if (!bpf_map_lookup_elem(&followed, &pid))
		return 0;
	bpf_map_delete_elem(&procs, &pid);
	send_proc_event(EP_EV_EXEC, pid, 0);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(follow_exit, struct task_struct *p)
{
	__u32 pid = BPF_CORE_READ(p, tgid);

	/* the thread group is gone when its leader exits last; a pid must not
	 * keep a configuration it could be reused with */
	if (pid != BPF_CORE_READ(p, pid) || !bpf_map_lookup_elem(&followed, &pid))
		return 0;
	bpf_map_delete_elem(&followed, &pid);
	bpf_map_delete_elem(&procs, &pid);
	send_proc_event(EP_EV_EXIT, pid, 0);
	return 0;
}
