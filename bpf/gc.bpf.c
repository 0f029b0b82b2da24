// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Garbage collections as exact intervals: CPython's python:gc__start and
 * python:gc__done USDT probes where the binary has them (Debian's builds),
 * else a uprobe and uretprobe on the collector function (unstripped builds).
 * The sampler reads gc_running to put a [GC gen N] frame on samples taken
 * inside a collection. Each collection is sent with the Python stack that
 * triggered it.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/usdt.bpf.h>
#include "ebpfprof.h"
/* The shared maps (maps.bpf.h) are defined in this object, the one that
 * includes usdt.bpf.h and its weak maps: defined in another object
 * (settings.bpf.c, say), they link, but bpftool gen skeleton then fails on
 * this object's USDT programs ("map relo failed to find map for section
 * '.maps'"). The other objects see them as extern. */
#define EP_DEFINE_MAPS
#include "maps.bpf.h"
#include "pystack.bpf.h"

static __always_inline void gc_begin(int generation)
{
	struct ep_gc_running run = {};
	struct ep_proc_cfg *cfg;
	__u64 *clock;
	__u32 pid, tid;

	if (!current_ids(&pid, &tid))
		return;
	cfg = bpf_map_lookup_elem(&procs, &pid);
	if (!cfg)
		return;
	run.start_ts = bpf_ktime_get_ns();
	run.generation = generation;
	if (bpf_map_update_elem(&gc_running, &tid, &run, BPF_ANY))
		count(EP_CNT_MAP_FULL);
	clock = gc_clock_of(pid, cfg->gc_slot);
	if (clock)	/* one word, one store: readers never see half of it */
		*clock = ep_gc_clock_start(*clock, run.start_ts);
}

static __always_inline void gc_clock_stop(__u32 pid, __u16 gc_slot, __u64 now)
{
	__u64 *clock = gc_clock_of(pid, gc_slot);

	if (clock)
		*clock = ep_gc_clock_stop(*clock, now);
}

static __always_inline void gc_end(long collected, int loop)
{
	struct ep_gc_running *run;
	struct ep_proc_cfg *cfg;
	struct ep_scratch *sc;
	struct ep_stack_event *ev;
	__u32 pid, tid;

	__u64 now = bpf_ktime_get_ns();

	if (!current_ids(&pid, &tid))
		return;
	cfg = bpf_map_lookup_elem(&procs, &pid);
	run = bpf_map_lookup_elem(&gc_running, &tid);
	if (!cfg || !run) {
		if (cfg)
			count(EP_CNT_GC_LOST);
		return;
	}
	gc_clock_stop(pid, cfg->gc_slot, now);
	sc = scratch_slot(EP_SCRATCH_GC);
	if (sc) {
		ev = start_stack_event(sc, EP_EV_GC, pid, tid, run->start_ts);
		ev->end_ts = now;
		ev->gc_gen = run->generation;
		ev->flags = EP_F_GC_GEN_KNOWN;
		ev->collected = collected;
		/* the collection runs inside the frame that allocated: its stack is the trigger */
		capture_python_stack(cfg, sc, tid, loop);
		emit_stack_by_id(ev);
	}
	bpf_map_delete_elem(&gc_running, &tid);
}

SEC("usdt")
int BPF_USDT(gc_start_usdt, int generation)
{
	gc_begin(generation);
	return 0;
}

SEC("usdt")
int BPF_USDT(gc_done_usdt, long collected)
{
	gc_end(collected, EP_WALK_BPF_LOOP);
	return 0;
}

/* Before Linux 5.17 (no bpf_loop): the loader keeps these instead. */
SEC("usdt")
int BPF_USDT(gc_done_usdt_bounded, long collected)
{
	gc_end(collected, EP_WALK_BOUNDED);
	return 0;
}

/* Every collector function we probe (3.9's collect, 3.10+'s gc_collect_main)
 * takes the generation as its second argument. */
SEC("uprobe")
int BPF_KPROBE(gc_start_uprobe, void *tstate, long generation)
{
	gc_begin((int)generation);
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(gc_done_uprobe, long ret)
{
	gc_end(ret, EP_WALK_BPF_LOOP);
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(gc_done_uprobe_bounded, long ret)
{
	gc_end(ret, EP_WALK_BOUNDED);
	return 0;
}
