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

/* Set by the loader: the mean sampling period (1 / rate). */
const volatile __u64 ep_sample_period_ns = 10000000;

/*
 * A sample stands for its thread's own on-CPU time since the thread's
 * previous sample: the switch program keeps, per CPU, which profiled thread
 * runs there, since when, and its time not yet sampled from earlier runs
 * (cpu_clock, in maps.bpf.h). Every nanosecond a thread runs goes to exactly
 * one of its samples, the next one: the rectangle rule on the thread's own
 * timeline, unbiased as long as the ticks do not keep step with the program.
 * Userspace re-arms each CPU's timer with a random period now and then
 * (session.c), so samples never keep step with a periodic program.
 *
 * It once weighed the CPU's busy time since its previous tick, whatever ran:
 * unbiased too, but on a busy machine other processes' time moved between
 * the threads at random, and a thread busy 30% of a 10 ms cycle read its
 * share up to 3.6 points off in a run with other load on the 2 CPUs. A
 * thread's sampled total is now its exact on-CPU time, but for the time
 * after its last sample.
 *
 * That busy time is still the weight of a thread whose switch-in was not
 * seen (running when profiling began), for its first sample: idle time goes
 * to no tick (the switch program notes when the CPU goes idle and comes
 * back; an idle CPU's timer falls silent in a VM on 6.18), and a gap over 8
 * mean periods (busy part of at most the old period plus the new one, 4
 * mean periods) means idle time not seen: one mean period then.
 */
static __always_inline __u64 tick_weight(__u64 now, __u32 host_tid)
{
	__u32 zero = 0;
	struct ep_cpu_clock *c = bpf_map_lookup_elem(&cpu_clock, &zero);
	__u64 gap, idle, run;

	if (!c)
		return ep_sample_period_ns;
	if (c->idle_since)	/* a tick while idle: the idle task's */
		return 0;
	gap = c->last_tick && now > c->last_tick ? now - c->last_tick : ep_sample_period_ns;
	idle = c->idle_ns;
	c->last_tick = now;
	c->idle_ns = 0;
	if (c->run_tid && c->run_tid == host_tid) {
		run = c->run_carry_ns + (now > c->run_from ? now - c->run_from : 0);
		c->run_carry_ns = 0;
		c->run_from = now;
		return run ? run : 1;	/* 0 would read as "unknown" */
	}
	gap = gap > idle ? gap - idle : 0;
	return gap && gap <= 8 * ep_sample_period_ns ? gap : ep_sample_period_ns;
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

/*
 * --native: the sampler also sends the thread's user registers and a copy of
 * its user stack (struct ep_native_event), for userspace to unwind. Set by
 * the loader; without it the code below is dead and never verified, and a
 * sample costs what it did.
 */
const volatile __u8 ep_native = 0;
/* bytes of stack copied per sample, at most EP_NATIVE_STACK_MAX */
const volatile __u32 ep_native_stack_bytes = 16384;

/* One record per CPU (indexed by CPU: 32 KiB of stack do not fit a per-CPU
 * value), with a page to spare so that a masked offset plus a page-sized
 * read stays inside. The loader sizes it to the CPUs, or 1 without --native. */
struct ep_native_scratch {
	struct ep_native_event ev;
	__u8 slack[4096];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ep_native_scratch);
} native_scratch SEC(".maps");

static __always_inline void regs_out(const struct pt_regs *r, __u64 *out)
{
	out[0] = r->ax; out[1] = r->dx; out[2] = r->cx; out[3] = r->bx;
	out[4] = r->si; out[5] = r->di; out[6] = r->bp; out[7] = r->sp;
	out[8] = r->r8; out[9] = r->r9; out[10] = r->r10; out[11] = r->r11;
	out[12] = r->r12; out[13] = r->r13; out[14] = r->r14; out[15] = r->r15;
	out[16] = r->ip;
}

/* Before 5.15: the perf context's registers, when they are the user's. Not
 * inlined: the compiler would merge its loads with the other path's, and one
 * instruction cannot read both a context and a BTF pointer. */
static __noinline int regs_from_context(struct bpf_perf_event_data *ctx, __u64 *out)
{
	/* cs is a union with wider views on new kernels: a context field is
	 * read whole, 8 bytes */
	__u64 cs = ((const __u64 *)&ctx->regs)[__builtin_offsetof(struct pt_regs, cs) / 8];

	if (!out || (cs & 3) != 3)
		return -1;
	regs_out((const struct pt_regs *)&ctx->regs, out);
	return 0;
}

/* The interrupted thread's user registers: on x86-64 those its entry to the
 * kernel saved (an interrupt from user mode saves them there too). */
static __always_inline int user_regs(struct bpf_perf_event_data *ctx, __u64 *out)
{
	if (!ep_has_task_pt_regs)
		return regs_from_context(ctx, out);
	regs_out((const struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf()), out);
	return 0;
}

/* Copies up to ep_native_stack_bytes of the user stack from sp: in one read,
 * or, when that range runs past the stack's end (a shallow main thread),
 * page by page up to the first page that cannot be read. Returns the bytes. */
static __always_inline __u32 copy_user_stack(struct ep_native_scratch *ns, __u64 sp)
{
	__u32 want = ep_native_stack_bytes, got = 0, len;
	__u64 addr;

	if (want > EP_NATIVE_STACK_MAX)
		want = EP_NATIVE_STACK_MAX;
	if (!bpf_probe_read_user(ns->ev.stack, want, (void *)sp))
		return want;
	for (int i = 0; i < EP_NATIVE_STACK_MAX / 4096 + 1; i++) {
		if (got >= want)
			break;
		addr = sp + got;
		len = 4096 - (addr & 4095);
		if (len > want - got)
			len = want - got;
		/* the compiler keeps two copies of len: bound the one passed */
		barrier_var(len);
		len &= 0x1fff;
		if (len > 4096)
			break;
		barrier_var(len);
		if (bpf_probe_read_user(ns->ev.stack + (got & (EP_NATIVE_STACK_MAX - 1)), len,
					(void *)addr))
			break;
		got += len;
	}
	return got;
}

/* Sends the current thread's registers and stack (before its sample). */
static __always_inline void emit_native(struct bpf_perf_event_data *ctx, __u32 pid, __u32 tid,
					__u64 now)
{
	__u32 cpu = bpf_get_smp_processor_id();
	struct ep_native_scratch *ns = bpf_map_lookup_elem(&native_scratch, &cpu);
	__u64 size;

	if (!ns)
		return;
	ns->ev.kind = EP_EV_NATIVE;
	ns->ev.pid = pid;
	ns->ev.tid = tid;
	ns->ev.ts = now;
	ns->ev.flags = 0;
	ns->ev.stack_len = 0;
	if (user_regs(ctx, ns->ev.regs))
		ns->ev.flags |= EP_NATIVE_F_NO_REGS;
	else
		ns->ev.stack_len = copy_user_stack(ns, ns->ev.regs[7]);
	size = ns->ev.stack_len;
	if (size > EP_NATIVE_STACK_MAX)
		size = EP_NATIVE_STACK_MAX;
	ring_output(&ns->ev, EP_NATIVE_EVENT_HDR_SIZE + size);
}

/* Sends the sample: with its frames the first time its stack is seen, its
 * code objects' names before them (with bpf_loop); by stack id after that,
 * but whole with --native (its frames' entry marks are per sample, and 16
 * bytes a frame are little next to the stack copy). */
static __always_inline void emit_sample(struct ep_scratch *sc, int loop)
{
	struct ep_stack_event *ev = &sc->ev;
	struct ep_sent_key key = sent_key(ev);

	if (ev->depth && !bpf_map_lookup_elem(&sent_stacks, &key)) {
		if (loop == EP_WALK_BPF_LOOP)
			ep_code_names(sc->slot);
		emit_first_stack(ev, &key);
		return;
	}
	if (ep_native || !ev->depth) {
		emit_stack_event(ev);
		return;
	}
	ev->flags |= EP_F_STACK_BY_ID;
	ev->depth = 0;
	ring_output(ev, EP_STACK_EVENT_HDR_SIZE);
}

static __always_inline int sample(struct bpf_perf_event_data *ctx, int loop)
{
	struct ep_proc_cfg *cfg;
	struct ep_scratch *sc;
	struct ep_stack_event *ev;
	__u64 now = bpf_ktime_get_ns();
	__u64 weight = tick_weight(now, (__u32)bpf_get_current_pid_tgid());
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
	if (ep_native)
		emit_native(ctx, pid, tid, now);
	emit_sample(sc, loop);
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
