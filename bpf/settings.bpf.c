// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Settings and licence shared by every ebpfprof program: the read-only
 * values the loader sets before load, and the licence the kernel checks.
 * No maps here: the shared maps are defined in gc.bpf.c (see there why). */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "ebpfprof.h"

/* Set by the loader before load. */
const volatile __u64 ep_pidns_dev = 0;	/* nonzero: filter on pids in this PID namespace */
const volatile __u64 ep_pidns_ino = 0;

/* What the running kernel has (user/record/kernel_features.c), set before load:
 * each picks a mechanism, the other one's code is dead and never verified. */
const volatile __u8 ep_has_task_storage = 1;	/* task storage maps: 5.11; else a tid hash */
const volatile __u8 ep_has_task_pt_regs = 1;	/* bpf_task_pt_regs: 5.15; else from task->stack */
const volatile __u8 ep_has_current_task_btf = 1;	/* bpf_get_current_task_btf: 5.11 */

/* What the recording asked for, set before load: without it, its code is
 * dead and costs the verifier nothing (start-up is a budget). */
const volatile __u8 ep_labels = 0;	/* --label, --dask: read labelled frames' values */

/* When a record with frames last woke the reader (emit_new_stack): one
 * word for all CPUs, whose races only wake the reader once more. */
__u64 ep_frames_woke_ns = 0;

char LICENSE[] SEC("license") = "Dual BSD/GPL";
