// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The programs fitted to the running kernel (kernel_features.c): flags, maps, variants. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "session_priv.h"

/* Where the kernel has the rseq_update tracepoint, blocked threads' stacks
 * are taken on their return to user mode, not at every switch-out
 * (bpf/offcpu.bpf.c); without it, or if it cannot be attached, at switch-out. */
void session_attach_stack_at_return(struct session *s)
{
	if (!bpf_program__autoload(s->walk.stack_at_return))
		return;
	*s->walk.stack_at_return_link = bpf_program__attach(s->walk.stack_at_return);
	if (*s->walk.stack_at_return_link)
		s->skel->bss->ep_stack_at_return = 1;
}

/* Attaches prog, keeping the link in the skeleton (destroyed with it). */
int session_attach_one(struct bpf_program *prog, struct bpf_link **link, const char *what,
		       char *err, size_t errlen)
{
	*link = bpf_program__attach(prog);
	if (!*link) {
		snprintf(err, errlen, "cannot attach %s: %s", what, strerror(errno));
		return -1;
	}
	return 0;
}

int session_attach_followers(struct session *s, char *err, size_t errlen)
{
	struct ebpfprof_bpf *k = s->skel;

	return session_attach_one(k->progs.follow_fork, &k->links.follow_fork, "follow_fork", err, errlen) ||
	       session_attach_one(k->progs.follow_exec, &k->links.follow_exec, "follow_exec", err, errlen) ||
	       session_attach_one(k->progs.follow_exit, &k->links.follow_exit, "follow_exit", err, errlen);
}

/* The per-thread state map before 5.11: a hash keyed by host tid, one entry
 * per live thread of the profiled processes (offcpu_thread_exit deletes). */
#define EP_TID_STATES	16384

/*
 * Sets the object up for what the kernel has (user/record/kernel_features.c): the
 * feature flags the programs test (the other mechanism's code is dead and
 * never verified), the per-thread state map's type, and which variant of
 * each stack-walking program is loaded.
 */
int session_fit_to_kernel(struct session *s)
{
	struct ebpfprof_bpf *k = s->skel;
	const struct kernel_features *kf = &s->kf;
	int loop = kf->has[KF_BPF_LOOP], atomics = kf->has[KF_ATOMICS];
	/* the switch: before 5.12 without exchanges (and bpf_loop, 5.17), else
	 * with bpf_loop, else bounded */
	struct bpf_program *sw = !atomics ? k->progs.offcpu_switch_plain : loop ?
				 k->progs.offcpu_switch : k->progs.offcpu_switch_bounded;
	struct bpf_link **sw_link = !atomics ? &k->links.offcpu_switch_plain : loop ?
				    &k->links.offcpu_switch : &k->links.offcpu_switch_bounded;
	struct bpf_program *switches[] = { k->progs.offcpu_switch, k->progs.offcpu_switch_bounded,
					   k->progs.offcpu_switch_plain };
	struct bpf_program *unused[] = {
		loop ? k->progs.sample_on_cpu_bounded : k->progs.sample_on_cpu,
		loop ? k->progs.offcpu_stack_at_return_bounded : k->progs.offcpu_stack_at_return,
		loop ? k->progs.gc_done_usdt_bounded : k->progs.gc_done_usdt,
		loop ? k->progs.gc_done_uprobe_bounded : k->progs.gc_done_uprobe,
	};
	size_t i;

	k->rodata->ep_has_task_storage = kf->has[KF_TASK_STORAGE];
	k->rodata->ep_has_task_pt_regs = kf->has[KF_TASK_PT_REGS];
	k->rodata->ep_has_current_task_btf = kf->has[KF_CURRENT_TASK_BTF];
	if (!kf->has[KF_TASK_STORAGE] &&
	    (bpf_map__set_type(k->maps.offcpu_tasks, BPF_MAP_TYPE_HASH) ||
	     bpf_map__set_map_flags(k->maps.offcpu_tasks, 0) ||
	     bpf_map__set_max_entries(k->maps.offcpu_tasks, EP_TID_STATES)))
		return -1;
	for (i = 0; i < sizeof(unused) / sizeof(unused[0]); i++)
		bpf_program__set_autoload(unused[i], false);
	for (i = 0; i < sizeof(switches) / sizeof(switches[0]); i++)
		bpf_program__set_autoload(switches[i], switches[i] == sw);
	/* its exchanges would be refused: no drain, the totals go to the map */
	if (!atomics)
		bpf_program__set_autoload(k->progs.offcpu_drain_totals, false);
	s->walk = (struct walkers){
		.sample = loop ? k->progs.sample_on_cpu : k->progs.sample_on_cpu_bounded,
		.sw = sw,
		.sw_link = sw_link,
		.stack_at_return = loop ? k->progs.offcpu_stack_at_return :
					  k->progs.offcpu_stack_at_return_bounded,
		.stack_at_return_link = loop ? &k->links.offcpu_stack_at_return :
					       &k->links.offcpu_stack_at_return_bounded,
		.gc_done_usdt = loop ? k->progs.gc_done_usdt : k->progs.gc_done_usdt_bounded,
		.gc_done_uprobe = loop ? k->progs.gc_done_uprobe : k->progs.gc_done_uprobe_bounded,
	};
	/* without it, stacks are taken at switch-out (bpf/offcpu.bpf.c) */
	if (!kf->has[KF_RSEQ_UPDATE])
		bpf_program__set_autoload(s->walk.stack_at_return, false);
	return 0;
}

/* The GC probes no target of the recording needs are not loaded: each
 * program is verified at start-up, a budget. */
void session_set_gc_probes(struct session *s, unsigned gc_probes)
{
	struct ebpfprof_bpf *k = s->skel;

	if (!gc_probes)
		return;
	if (!(gc_probes & 1u << GC_PROBE_USDT)) {
		bpf_program__set_autoload(k->progs.gc_start_usdt, false);
		bpf_program__set_autoload(s->walk.gc_done_usdt, false);
	}
	if (!(gc_probes & 1u << GC_PROBE_UPROBE)) {
		bpf_program__set_autoload(k->progs.gc_start_uprobe, false);
		bpf_program__set_autoload(s->walk.gc_done_uprobe, false);
	}
}

/* --native: the sampler sends each sample's registers and stack, from a
 * record per CPU; without it the map is one entry and the code is dead. */
int session_set_native(struct session *s, const struct session_opts *o)
{
	int ncpu = libbpf_num_possible_cpus();

	if (!o->native)
		return 0;
	if (ncpu <= 0) {
		errno = -ncpu;
		return -1;
	}
	s->skel->rodata->ep_native = 1;
	if (o->native_stack_bytes)
		s->skel->rodata->ep_native_stack_bytes = o->native_stack_bytes > EP_NATIVE_STACK_MAX ?
							 EP_NATIVE_STACK_MAX : o->native_stack_bytes;
	return bpf_map__set_max_entries(s->skel->maps.native_scratch, ncpu);
}

/* With -v: what the kernel lacks, and what is done instead. */
void session_print_fallbacks(const struct session *s, FILE *f, const char *prefix)
{
	int i;

	for (i = 0; i < KF_COUNT; i++)
		if (!s->kf.has[i])
			fprintf(f, "%sthis kernel lacks %s (Linux %s)%s: %s\n", prefix,
				kernel_feature_what(i), kernel_feature_since(i),
				s->kf.forced[i] ? " (EBPFPROF_FORCE_MISSING)" : "",
				kernel_feature_without(i));
}

