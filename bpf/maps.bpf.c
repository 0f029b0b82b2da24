// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The one definition of the maps every ebpfprof program shares. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "ebpfprof.h"
#define EP_DEFINE_MAPS
#include "maps.bpf.h"

/* Set by the loader before load. */
const volatile __u64 ep_pidns_dev = 0;	/* nonzero: filter on pids in this PID namespace */
const volatile __u64 ep_pidns_ino = 0;

char LICENSE[] SEC("license") = "Dual BSD/GPL";
