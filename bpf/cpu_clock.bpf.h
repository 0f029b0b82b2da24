/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The switch program's clock, and the sampler's per-CPU clock it keeps
 * (the map cpu_clock, maps.bpf.h; sample.bpf.c weighs each sample by it):
 * which profiled thread runs on the CPU since when, and when the CPU goes
 * idle. Included by offcpu.bpf.c alone, after offcpu.bpf.h (the task storage).
 */
#ifndef EP_CPU_CLOCK_BPF_H
#define EP_CPU_CLOCK_BPF_H

/* One clock read per program run, taken when first needed: most switches
 * on the machine are of other processes and need none. */
static __always_inline __u64 clock_now(__u64 *now)
{
	if (!*now)
		*now = bpf_ktime_get_ns();
	return *now;
}

/*
 * The sampler's per-thread clock (maps.bpf.h): a profiled thread leaving
 * the CPU keeps its time not yet in a sample in its storage; switch-in puts
 * it on the CPU's clock with the run's start. Both run with interrupts off,
 * so no tick on this CPU comes in between. Only switches of threads with
 * storage look the clock up, not every switch on the machine; a profiled
 * thread's switch-out clears it even when storage is refused, so a switch-in
 * not seen leaves the thread to the fallback weight, not to a stale clock.
 */
static __always_inline struct ep_cpu_clock *cpu_clock_here(void)
{
	__u32 zero = 0;

	if (EP_BENCH_NO_CPU_CLOCK)
		return NULL;
	return bpf_map_lookup_elem(&cpu_clock, &zero);
}

static __always_inline void run_clock_out(struct task_struct *prev, struct ep_offcpu_task *st,
					  __u64 now)
{
	struct ep_cpu_clock *c = cpu_clock_here();

	if (!c)
		return;
	if (st && c->run_tid == prev->pid)
		st->unsampled_ns = c->run_carry_ns + (now > c->run_from ? now - c->run_from : 0);
	c->run_tid = 0;
}

static __always_inline void run_clock_in(struct task_struct *next, struct ep_offcpu_task *st,
					 __u64 now)
{
	struct ep_cpu_clock *c = cpu_clock_here();

	if (!c)
		return;
	c->run_tid = next->pid;
	c->run_carry_ns = st->unsampled_ns;
	c->run_from = now;
}

/*
 * The CPU goes idle or comes back (the idle task, pid 0, is one side): for
 * the sampler, which leaves idle time out of a sample's weight. An idle
 * CPU's timer falls silent (seen on 6.18, in a VM: no tick at all while
 * idle), so the tick after the idle stretch would otherwise stand for it.
 * Switches run with interrupts off: no tick comes in between on this CPU.
 */
static __always_inline void note_idle(struct task_struct *prev, struct task_struct *next,
				      __u64 *now_once)
{
	struct ep_cpu_clock *c;
	__u64 now;

	if (prev->pid && next->pid)
		return;
	c = cpu_clock_here();
	if (!c)
		return;
	now = clock_now(now_once);
	if (!next->pid) {
		c->idle_since = now;
	} else if (c->idle_since) {
		c->idle_ns += now > c->idle_since ? now - c->idle_since : 0;
		c->idle_since = 0;
	}
}

#endif
