/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What the running kernel's BPF offers, probed once before the programs are
 * loaded: each feature either has a fallback (the BPF object carries both
 * mechanisms, the loader keeps one) or is required (without it ebpfprof
 * says, in one line, what is missing and which Linux brings it).
 */
#ifndef EP_KERNEL_FEATURES_H
#define EP_KERNEL_FEATURES_H
#include <stddef.h>

enum kernel_feature {
	/* required */
	KF_TP_BTF,		/* BTF-typed tracepoints, 5.5 */
	KF_NS_PID,		/* bpf_get_ns_current_pid_tgid, 5.7 */
	KF_RINGBUF,		/* BPF ring buffers, 5.8 */
	KF_TASK_ITER,		/* task iterators, 5.8 */
	/* with a fallback */
	KF_TASK_STORAGE,	/* task storage maps, 5.11 */
	KF_CURRENT_TASK_BTF,	/* bpf_get_current_task_btf, 5.11 */
	KF_ATOMICS,		/* BPF exchanges (xchg, cmpxchg), 5.12 */
	KF_TASK_PT_REGS,	/* bpf_task_pt_regs, 5.15 */
	KF_BPF_LOOP,		/* bpf_loop, 5.17 */
	KF_ITER_TASK_PID,	/* task iterators of one process, 6.1 */
	KF_RSEQ_UPDATE,		/* the rseq_update tracepoint (tp_btf), 4.18 */
	KF_COUNT,
};

struct kernel_features {
	unsigned char has[KF_COUNT];
	unsigned char forced[KF_COUNT];	/* made missing by EBPFPROF_FORCE_MISSING */
};

/* Probes the running kernel, then applies EBPFPROF_FORCE_MISSING (a comma-
 * separated list of feature names, or "fallbacks": every feature that has
 * one), which makes ebpfprof act as on a kernel without them (tests,
 * benchmarks of the fallbacks). 0, or -1 with one line in err: a required
 * feature is missing, or the variable names an unknown feature. */
int kernel_features_probe(struct kernel_features *kf, char *err, size_t errlen);

/* What it is, the Linux version that brought it, and what ebpfprof does
 * without it (NULL for a required feature). */
const char *kernel_feature_what(enum kernel_feature f);
const char *kernel_feature_since(enum kernel_feature f);
const char *kernel_feature_without(enum kernel_feature f);

#endif
