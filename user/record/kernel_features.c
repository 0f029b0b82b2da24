// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include "kernel_features.h"

static const struct {
	const char *name, *what, *since, *without;
} features[KF_COUNT] = {
	[KF_TP_BTF] = { "tp_btf", "BTF-typed tracepoints (tp_btf)", "5.5", NULL },
	[KF_NS_PID] = { "ns_pid", "bpf_get_ns_current_pid_tgid", "5.7", NULL },
	[KF_RINGBUF] = { "ringbuf", "BPF ring buffers", "5.8", NULL },
	[KF_TASK_ITER] = { "task_iter", "task iterators (iter/task)", "5.8", NULL },
	[KF_TASK_STORAGE] = { "task_storage", "task storage maps", "5.11",
		"threads' off-CPU state in a hash keyed by thread id, their exact totals in a hash map (a dearer switch)" },
	[KF_CURRENT_TASK_BTF] = { "current_task_btf", "bpf_get_current_task_btf", "5.11",
		"the thread's pthread id read with a probe" },
	[KF_ATOMICS] = { "atomics", "BPF atomic exchanges", "5.12",
		"a thread's run taken at its switch-out by a plain read, its exact totals in a hash map (a dearer switch)" },
	[KF_TASK_PT_REGS] = { "task_pt_regs", "bpf_task_pt_regs", "5.15",
		"a blocked thread's syscall read from its kernel stack with probes" },
	[KF_BPF_LOOP] = { "bpf_loop", "bpf_loop", "5.17",
		"stacks walked by a global function, 2 frames a call, threads scanned to 32" },
	[KF_ITER_TASK_PID] = { "iter_task_pid", "task iterators of one process", "6.1",
		"task iterators over every task, filtered in BPF" },
	[KF_RSEQ_UPDATE] = { "rseq_update", "the rseq_update tracepoint", "4.18",
		"a blocked thread's stack taken at its switch-out, not on its return to user mode" },
};

const char *kernel_feature_what(enum kernel_feature f)
{
	return features[f].what;
}

const char *kernel_feature_since(enum kernel_feature f)
{
	return features[f].since;
}

const char *kernel_feature_without(enum kernel_feature f)
{
	return features[f].without;
}

/* Is `name` an enumerator of `enum bpf_func_id` in the kernel's BTF? The
 * test CO-RE's bpf_core_enum_value_exists makes, for helpers of tracing
 * programs, which libbpf's helper probes cannot load. */
static int btf_has_helper(const struct btf *btf, const char *name)
{
	int id = btf__find_by_name_kind(btf, "bpf_func_id", BTF_KIND_ENUM);
	const struct btf_type *t = id > 0 ? btf__type_by_id(btf, id) : NULL;
	const struct btf_enum *e;
	int i;

	if (!t)
		return 0;
	e = btf_enum(t);
	for (i = 0; i < btf_vlen(t); i++)
		if (!strcmp(btf__name_by_offset(btf, e[i].name_off), name))
			return 1;
	return 0;
}

/* Does the verifier take an atomic exchange (BPF_XCHG, Linux 5.12)? Before,
 * it refuses any program holding one, even where it is never reached. */
static int prog_loads_xchg(void)
{
	const struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_1 },
		{ .code = BPF_STX | BPF_MEM | BPF_DW, .dst_reg = BPF_REG_10,
		  .src_reg = BPF_REG_1, .off = -8 },
		{ .code = BPF_STX | BPF_ATOMIC | BPF_DW, .dst_reg = BPF_REG_10,
		  .src_reg = BPF_REG_1, .off = -8, .imm = BPF_XCHG },
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	int fd = bpf_prog_load(BPF_PROG_TYPE_SOCKET_FILTER, NULL, "GPL", insns,
			       sizeof(insns) / sizeof(insns[0]), NULL);

	if (fd < 0)
		return 0;
	close(fd);
	return 1;
}

/* Has union bpf_iter_link_info a member `task` (a task iterator's pid)? */
static int btf_iter_has_task_filter(const struct btf *btf)
{
	int id = btf__find_by_name_kind(btf, "bpf_iter_link_info", BTF_KIND_UNION);
	const struct btf_type *t = id > 0 ? btf__type_by_id(btf, id) : NULL;
	const struct btf_member *m;
	int i;

	if (!t)
		return 0;
	m = btf_members(t);
	for (i = 0; i < btf_vlen(t); i++)
		if (!strcmp(btf__name_by_offset(btf, m[i].name_off), "task"))
			return 1;
	return 0;
}

static void probe(struct kernel_features *kf, const struct btf *btf)
{
	kf->has[KF_TP_BTF] = btf__find_by_name_kind(btf, "btf_trace_sched_switch",
						    BTF_KIND_TYPEDEF) > 0;
	kf->has[KF_NS_PID] = btf_has_helper(btf, "BPF_FUNC_get_ns_current_pid_tgid");
	kf->has[KF_RINGBUF] = libbpf_probe_bpf_map_type(BPF_MAP_TYPE_RINGBUF, NULL) == 1;
	kf->has[KF_TASK_ITER] = btf__find_by_name_kind(btf, "bpf_iter_task", BTF_KIND_FUNC) > 0;
	kf->has[KF_TASK_STORAGE] = libbpf_probe_bpf_map_type(BPF_MAP_TYPE_TASK_STORAGE, NULL) == 1;
	kf->has[KF_CURRENT_TASK_BTF] = btf_has_helper(btf, "BPF_FUNC_get_current_task_btf");
	kf->has[KF_ATOMICS] = prog_loads_xchg();
	kf->has[KF_TASK_PT_REGS] = btf_has_helper(btf, "BPF_FUNC_task_pt_regs");
	kf->has[KF_BPF_LOOP] = libbpf_probe_bpf_helper(BPF_PROG_TYPE_KPROBE, BPF_FUNC_loop, NULL) == 1;
	kf->has[KF_ITER_TASK_PID] = btf_iter_has_task_filter(btf);
	kf->has[KF_RSEQ_UPDATE] = btf__find_by_name_kind(btf, "btf_trace_rseq_update",
							 BTF_KIND_TYPEDEF) > 0;
}

/* The one-line refusal of an unknown name, listing the known ones from the
 * table itself, so that a feature added there is listed too. */
static void unknown_feature(const char *name, char *err, size_t errlen)
{
	size_t used;
	int f;

	used = snprintf(err, errlen, "EBPFPROF_FORCE_MISSING: unknown kernel feature '%.40s' (known:",
			name);
	for (f = 0; f < KF_COUNT && used < errlen; f++)
		used += snprintf(err + used, errlen - used, " %s,", features[f].name);
	if (used < errlen)
		snprintf(err + used, errlen - used, " fallbacks)");
}

/* EBPFPROF_FORCE_MISSING: the features to act as if the kernel lacked. */
static int apply_forced(struct kernel_features *kf, char *err, size_t errlen)
{
	const char *env = getenv("EBPFPROF_FORCE_MISSING");
	char *copy, *tok, *save = NULL;
	int f, found, rc = 0;

	if (!env || !*env)
		return 0;
	copy = strdup(env);
	if (!copy)
		return 0;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		found = 0;
		for (f = 0; f < KF_COUNT; f++) {
			if (strcmp(tok, features[f].name) &&
			    (strcmp(tok, "fallbacks") || !features[f].without))
				continue;
			found = 1;
			kf->forced[f] = kf->has[f];
			kf->has[f] = 0;
		}
		if (!found) {
			unknown_feature(tok, err, errlen);
			rc = -1;
			break;
		}
	}
	free(copy);
	return rc;
}

/* Can this process use bpf() at all? A seccomp filter (a container's
 * default profile) or missing privileges refuse every probe alike, which
 * must not read as a kernel lacking the features probed: an array map, in
 * every kernel with BPF, tells the two apart. */
static int bpf_usable(char *err, size_t errlen)
{
	int fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, NULL, 4, 4, 1, NULL);

	if (fd >= 0) {
		close(fd);
		return 0;
	}
	snprintf(err, errlen, "cannot load the BPF programs: %s", strerror(errno));
	return -1;
}

int kernel_features_probe(struct kernel_features *kf, char *err, size_t errlen)
{
	struct btf *btf = btf__load_vmlinux_btf();
	struct utsname u;
	int f;

	memset(kf, 0, sizeof(*kf));
	if (bpf_usable(err, errlen)) {
		btf__free(btf);
		return -1;
	}
	if (!btf) {
		snprintf(err, errlen, "cannot read the kernel's BTF (/sys/kernel/btf/vmlinux): ebpfprof needs a kernel built with CONFIG_DEBUG_INFO_BTF=y (5.8 or later)");
		return -1;
	}
	probe(kf, btf);
	btf__free(btf);
	if (apply_forced(kf, err, errlen))
		return -1;
	for (f = 0; f < KF_COUNT; f++) {
		if (kf->has[f] || features[f].without)
			continue;
		if (uname(&u))
			strcpy(u.release, "?");
		snprintf(err, errlen, "this kernel (%.64s) lacks %s (Linux %s): ebpfprof needs Linux 5.8 or later",
			 u.release, features[f].what, features[f].since);
		return -1;
	}
	return 0;
}
