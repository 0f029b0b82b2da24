// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * On-CPU sampling: a cpu-clock perf event on every CPU runs this at the
 * chosen rate; for threads of profiled processes it walks the Python stack
 * and sends it (by id when it was sent before), with the GC and GIL state of
 * that moment.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "ebpfprof.h"
#include "maps.bpf.h"
#include "pystack.bpf.h"

/* Per CPU: the time of its last tick, for the weight of the next sample. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} last_tick SEC(".maps");

/*
 * A sample stands for the CPU time since its CPU's previous tick, whatever
 * ran then: userspace re-arms each CPU's timer with a random period now and
 * then (session.c), so samples never keep step with a periodic program, and
 * this weight stays exact across those restarts. Its mean is the mean period.
 */
static __always_inline __u64 tick_weight(struct bpf_perf_event_data *ctx, __u64 now)
{
	__u32 zero = 0;
	__u64 *last = bpf_map_lookup_elem(&last_tick, &zero), gap;

	if (!last)
		return ctx->sample_period;
	gap = *last && now > *last ? now - *last : ctx->sample_period;
	*last = now;
	return gap;
}

/* In a collection: exactly known from the GC probes, or (stripped builds
 * without probes) when the interpreter's flag is set and this thread holds
 * the GIL, since only the GIL holder can be collecting. */
static __always_inline void mark_gc(const struct ep_proc_cfg *cfg,
				    struct ep_stack_event *ev, __u32 tid)
{
	struct ep_gc_running *gc = bpf_map_lookup_elem(&gc_running, &tid);

	if (gc) {
		ev->flags |= EP_F_IN_GC | EP_F_GC_GEN_KNOWN;
		ev->gc_gen = gc->generation;
		return;
	}
	if (cfg->gc_collecting_addr && ev->tstate &&
	    read_s32(cfg->gc_collecting_addr) && ev->gil_holder == ev->tstate)
		ev->flags |= EP_F_IN_GC;
}

static __always_inline int sample(struct bpf_perf_event_data *ctx, int loop)
{
	struct ep_proc_cfg *cfg;
	struct ep_scratch *sc;
	struct ep_stack_event *ev;
	__u64 now = bpf_ktime_get_ns(), weight = tick_weight(ctx, now);
	__u32 pid, tid;

	if (!current_ids(&pid, &tid))
		return 0;
	cfg = bpf_map_lookup_elem(&procs, &pid);
	if (!cfg)
		return 0;
	sc = scratch_slot(EP_SCRATCH_SAMPLE);
	if (!sc)
		return 0;
	ev = start_stack_event(sc, EP_EV_SAMPLE, pid, tid, now);
	ev->weight_ns = weight;
	ev->gil_holder = gil_holder(cfg);
	count(EP_CNT_SAMPLES);
	capture_python_stack(cfg, sc, tid, loop);
	if (ev->flags & EP_F_NO_TSTATE)
		count(EP_CNT_NO_TSTATE);
	else
		mark_gc(cfg, ev, tid);
	emit_stack_by_id(ev);
	return 0;
}

SEC("perf_event")
int sample_on_cpu(struct bpf_perf_event_data *ctx)
{
	return sample(ctx, EP_WALK_BPF_LOOP);
}

/* Before Linux 5.17 (no bpf_loop): the loader keeps this one instead. */
SEC("perf_event")
int sample_on_cpu_bounded(struct bpf_perf_event_data *ctx)
{
	return sample(ctx, EP_WALK_BOUNDED);
}
