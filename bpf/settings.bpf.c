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

char LICENSE[] SEC("license") = "Dual BSD/GPL";
