// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Off-CPU time with its reason, decided in the kernel at the moment a
 * profiled thread leaves the CPU: still runnable means preempted; blocked in
 * futex() on an address inside the GIL's struct means waiting for the GIL;
 * any other futex is a lock (threading.Lock, Condition, queue); sleeping
 * and I/O calls are told apart by the syscall number.
 *
 * Switch-out only notes when and why, in the task's own storage (freed with
 * the task). Preemptions need no stack (the thread was running Python: its
 * on-CPU samples show where). The stack of a blocked thread is only needed
 * if its interval is sent, which switch-in decides, and it cannot change
 * before the thread next returns to user mode: where the thread has an rseq
 * area (glibc 2.35+ registers one for every thread), the kernel's rseq
 * notification on that return runs offcpu_stack_at_return in the thread's
 * own context, which takes the stack then, for the few intervals sent. Else
 * the stack is noted at switch-out: a fingerprint of the two innermost
 * frames finds the last walk still valid in the common case of a thread
 * blocking where it blocked before; only a new place costs a walk, sent once
 * as an EP_EV_STACK record. Reading the target's memory is the dearest part
 * of a switch (~0.1 us a read in a VM), which the first way avoids.
 *
 * The time on the CPU is exact too: switch-in notes the time, switch-out
 * adds the run to the thread's on-CPU total (EP_TOTAL_ON_CPU), and the
 * drain iterator counts a running thread's run so far (moving its start to
 * the drain's time), so a thread that never leaves the CPU is counted and
 * the totals of every thread add up to the time it was observed.
 *
 * Switch-in adds the exact time to the thread's totals per reason, split
 * for a GIL wait into the part behind a collection, from the process's GC
 * clock. They are kept in the thread's storage (two atomic adds, where a
 * hash update cost ~0.12 us), taken out every EP_DRAIN_MS by a task
 * iterator over the process (offcpu_drain_totals), and moved to the map
 * offcpu_totals when the thread exits. An interval over the threshold
 * is sent whole; shorter ones as the sampling points they hold, one per
 * period of the thread's short off-CPU time on average (short_points), so
 * the --idle flame graph stays proportional to off-CPU time.
 *
 * One file per concern, linked into the one object: this one, the switch
 * program, its settings, and the maps the others share (offcpu.bpf.h);
 * offcpu_return.bpf.c, the return to user mode; offcpu_stack.bpf.c, the
 * stack noted at either; offcpu_totals.bpf.c, the totals' drain, the
 * thread's exit and the map; offcpu_task_io.bpf.c, userspace's seeds and
 * reads. Headers: classify.bpf.h (the reason), offcpu_totals.bpf.h (adding
 * to the totals), blame.bpf.h (the GIL's holder), cpu_clock.bpf.h.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "ebpfprof.h"
#include "maps.bpf.h"
#include "pystack.bpf.h"
/* The off-CPU maps are defined here, the first of the offcpu*.bpf.c in the
 * link (offcpu.bpf.h). */
#define EP_DEFINE_OFFCPU_MAPS
#include "offcpu.bpf.h"
#include "offcpu_totals.bpf.h"
#include "classify.bpf.h"
#include "blame.bpf.h"
#include "cpu_clock.bpf.h"

/* Set by the loader: intervals at least this long are sent whole... */
const volatile __u64 ep_offcpu_exact_ns = 10000000;
/* ... shorter ones are sampled once per this much off-CPU time. */
const volatile __u64 ep_offcpu_period_ns = 10000000;
/* A thread's GIL waits are read (the GIL at the wait's start and end, for
 * its holder) at most about one per this much time; 0: every one. Set by
 * the loader (EBPFPROF_GIL_READ_GAP_US), at most 2^32. See gil_read_due. */
const volatile __u64 ep_gil_read_gap_ns = 300000;
/* Tests only (EBPFPROF_TEST_UNSEEN_SWITCH_IN): every switch-in of a main
 * thread goes unseen, as one refused task storage does now and then (see
 * end_unseen_interval). 0 for users: the verifier drops the branch. */
const volatile __u8 ep_test_unseen_switch_in = 0;
/* Set by userspace once offcpu_stack_at_return is attached. */
volatile __u32 ep_stack_at_return;

/* The kernel notifies the task's rseq area on every return to user mode
 * after a switch (and runs the rseq_update tracepoint then). */
static __always_inline int has_rseq(struct task_struct *task)
{
	if (!bpf_core_field_exists(task->rseq))
		return 0;
	return task->rseq != NULL;
}

static __always_inline __u64 random_below(__u64 n)
{
	return ((__u64)bpf_get_prandom_u32() * n) >> 32;	/* n <= 2^32 */
}

/*
 * Is this GIL wait of the thread's to be read? Each read of the GIL costs
 * ~0.1 us here, and the one at a wait's end lies on the woken thread's way
 * to the GIL: at a hundred thousand waits a second they changed how two
 * threads raced for it, and cost a ping-pong a third of its speed
 * (docs/benchmarks.md, section 7). So a thread's waits are read at most
 * about one per ep_gil_read_gap_ns: the next one due a random [gap/2,
 * 3 gap/2) after a read, never in step with a program's own period. A
 * thread waiting less often has every wait read. The time of the others is
 * exact, and the drain spreads it over the holders of the waits read in the
 * same period (drain_blame). Every wait is read where there is no drain to
 * spread (totals in the map: an exiting thread, an old kernel).
 */
static __always_inline int gil_read_due(struct task_struct *task, struct ep_offcpu_task *st,
					__u64 now)
{
	if (!ep_gil_read_gap_ns || !st->totals_in_task || (task->flags & PF_EXITING))
		return 1;
	if (now < st->gil_read_due_ts)
		return 0;
	st->gil_read_due_ts = now + ep_gil_read_gap_ns / 2 + random_below(ep_gil_read_gap_ns);
	return 1;
}

/* A GIL wait begins: the GIL now, for its blame (one read of the thread's
 * own memory, only for GIL waits read). A wait whose end was not seen yet
 * (the thread blocked again before it returned to user mode) ends here. */
static __always_inline void note_gil_out(struct task_struct *prev, struct ep_offcpu_task *st,
					 const struct ep_proc_cfg *cfg)
{
	struct ep_gil_seen seen = {};
	int gil_wait = st->reason == EP_OFF_GIL || st->reason == EP_OFF_GIL_GC;
	int read;

	if (EP_BENCH_NO_GIL)
		return;
	read = gil_wait && gil_read_due(prev, st, st->off_ts);
	if (read || st->blame_ns[0] || st->blame_ns[1])
		read_gil(gil_addr(cfg), &seen);
	settle_blame(prev, st, &seen, 0);
	st->gil_out = read ? seen : (struct ep_gil_seen){};
	/* where its end reads the GIL, without the process's configuration;
	 * 0: not read (the wait's time goes to blame_unread) */
	st->gil_addr = read ? gil_addr(cfg) : 0;
}

/* Adds the run ending now to the thread's on-CPU total. Its start is taken
 * with an exchange: the drain iterator, on another CPU, may be moving it to
 * its own time, having counted the run up to there. A switch-in not seen
 * (task storage is refused to a program while another holds its per-CPU
 * lock on that CPU, e.g. the drain iterator preempted) leaves no start: the
 * run is then the CPU time the thread gained since its last switch-out.
 * atomics 0 (a constant): before Linux 5.12, which has no BPF exchange and
 * no drain iterator then (the totals are in the map), a plain read. */
static __always_inline void end_run(struct task_struct *prev, struct ep_offcpu_task *st,
				    const struct ep_proc_cfg *cfg, __u64 now, int atomics)
{
	__u64 since, ran, run = 0;

	if (EP_BENCH_NO_RUN_TIME)
		return;
	since = atomics ? __sync_lock_test_and_set(&st->on_ts, 0) : st->on_ts;
	ran = prev->se.sum_exec_runtime;

	if (!atomics)
		st->on_ts = 0;
	if (!since && st->ran_ns) {
		run = ran > st->ran_ns ? ran - st->ran_ns : 0;
		since = now > run ? now - run : 0;
	} else if (!since) {
		since = unseen_run_start(prev, cfg, now);
	}
	st->ran_ns = ran;
	if (since < cfg->start_ts)	/* switched in before the process was profiled */
		since = cfg->start_ts;
	if (now > since)
		add_total(prev, st, EP_TOTAL_ON_CPU, now - since);
}

/*
 * A gap to the next sampling point of short off-CPU time, uniform in
 * [period/2, 3 period/2): one period on average, so each point stands for
 * one period. Drawn, not fixed, so the points never lock step with a
 * program's own period; narrow, so a run of short waits at one place gets
 * close to its length's worth of points. Per-interval coin flips
 * (probability length/period) scattered them as a Poisson process, whose
 * count over a stack's time varies about 3.5 times as much.
 */
static __always_inline __u64 next_short_gap(void)
{
	return ep_offcpu_period_ns / 2 + random_below(ep_offcpu_period_ns);
}

/*
 * How many sampling points a short interval of len holds, on a line of the
 * thread's short off-CPU time: at most two, since len < period and a gap
 * is at least period/2. The thread's first point falls at a random phase.
 */
static __always_inline __u32 short_points(struct ep_offcpu_task *st, __u64 len)
{
	__u64 due = st->short_due_ns;
	__u32 points;

	if (!due)
		due = 1 + random_below(ep_offcpu_period_ns);
	for (points = 0; points < 2 && len >= due; points++) {
		len -= due;
		due = next_short_gap();
	}
	st->short_due_ns = due - len;
	return points;
}

/* Sent whole when long, else as the sampling points it holds (weight one
 * period each): now, or on the thread's return to user mode when its stack
 * is taken then. */
static __always_inline void maybe_send(struct ep_offcpu_task *st, __u64 now, __u64 len,
				       __u64 gc_ns, __u64 holder)
{
	struct ep_offcpu_record rec = {
		.kind = EP_EV_OFFCPU, .pid = st->pid, .tid = st->tid, .reason = st->reason,
		.flags = st->flags, .gc_gen = st->gc_gen, .start_ts = st->off_ts, .end_ts = now,
		.weight_ns = len, .gc_ns = gc_ns, .stack_id = st->stack_id, .holder = holder,
	};
	__u32 points;

	if (EP_BENCH_NO_SEND)
		return;
	if (len >= ep_offcpu_exact_ns || len >= ep_offcpu_period_ns) {
		rec.flags |= EP_IV_EXACT;
	} else {
		/* len < period <= 2^32 ns here, so no product overflows */
		points = short_points(st, len);
		if (!points)
			return;
		rec.weight_ns = points * ep_offcpu_period_ns;
	}
	if (st->flags & EP_IV_STACK_LATER) {
		/* a record still waiting: the thread has not returned to user
		 * mode since (blocked again in the kernel); it goes without */
		if (st->pending.kind) {
			count(EP_CNT_STACK_LATER_LOST);
			send_record(&st->pending);
		}
		st->pending = rec;
		return;
	}
	send_record(&rec);
}

/* The thread's interval off the CPU ends at now: its exact time to its
 * totals, its GIL wait to the holder, and sent or sampled. */
static __always_inline void end_interval(struct task_struct *task, struct ep_offcpu_task *st,
					 __u64 now, int gil_readable)
{
	__u64 len, gc_ns = 0, *clock, holder;

	len = now > st->off_ts ? now - st->off_ts : 0;
	if (EP_GIL_WAIT_MAY_BE_GC(st->reason, st->flags)) {
		clock = gc_clock_of(st->pid, st->gc_slot);
		if (clock)
			gc_ns = ep_gc_clock_read(*clock, now) - st->gc_clock_out;
		EP_GIL_WAIT_GC_CAP(gc_ns, len);
	}
	if (gc_ns)
		add_total(task, st, EP_OFF_GIL_GC, gc_ns);
	if (len > gc_ns)
		add_total(task, st, st->reason, len - gc_ns);
	count(EP_CNT_OFFCPU);
	holder = blame_at_switch_in(task, st, len, gc_ns, gil_readable);
	maybe_send(st, now, len, gc_ns, holder);
	st->off_ts = 0;
}

/*
 * The thread leaves the CPU with an interval still open: its switch-in was
 * refused task storage (its per-CPU lock held by the drain iterator,
 * preempted on that CPU by this very thread). The interval ended when the
 * thread came back, the CPU time it gained since its last switch-out ago;
 * left open, the next switch-out wrote over it and lost it whole (a 0.2 s
 * sleep, 1 run in 6 under load). Its GIL holder is not known, nor its
 * stack if that was to be taken on the return that followed.
 */
static __always_inline void end_unseen_interval(struct task_struct *prev, struct ep_offcpu_task *st,
						__u64 now)
{
	/* not before the interval's start: a cut may have moved it past the
	 * switch-in (userspace restarts an open interval at the cut) */
	__u64 in = ep_unseen_return(st->off_ts, st->ran_ns, prev->se.sum_exec_runtime, now);

	if (!in)	/* no CPU time seen gained: it came back about now */
		in = now;
	count(EP_CNT_SWITCH_IN_UNSEEN);
	/* its stack is taken on the return that followed (stack_at_return);
	 * not taken (it blocked again in the kernel first), it goes without */
	st->flags &= ~EP_IV_STACK_LATER;
	end_interval(prev, st, in, 0);
}

static __always_inline void on_switch_out(struct task_struct *prev, __u64 *now, int loop,
					  int atomics)
{
	struct ep_offcpu_task *st;
	struct ep_gc_running *own_gc;
	struct ep_proc_cfg *cfg;
	__u64 *clock;
	__u32 pid, tid;

	/* prev is still `current` here: the switch has not happened yet */
	if (!current_ids(&pid, &tid))
		return;
	cfg = bpf_map_lookup_elem(&procs, &pid);
	if (!cfg || EP_BENCH_FILTER_ONLY)
		return;
	st = task_state_get(prev, 1);
	if (EP_BENCH_ONLY_LOOKUPS)
		return;
	if (!st) {
		/* task storage has no size: refused, its per-CPU lock was held
		 * (the drain iterator preempted on this CPU); the tid hash is full */
		count(ep_has_task_storage ? EP_CNT_STORAGE_BUSY : EP_CNT_MAP_FULL);
		run_clock_out(prev, NULL, 0);
		return;
	}
	if (st->off_ts && st->pid)
		end_unseen_interval(prev, st, clock_now(now));
	st->pid = pid;
	st->tid = tid;
	st->flags = 0;
	st->primed = 0;
	st->totals_in_task = cfg->totals_in_task;
	st->gc_slot = cfg->gc_slot;
	end_run(prev, st, cfg, clock_now(now), atomics);
	run_clock_out(prev, st, *now);
	st->off_ts = *now;
	st->reason = classify(cfg, prev);
	clock = gc_clock_of(pid, cfg->gc_slot);
	st->gc_clock_out = clock ? ep_gc_clock_read(*clock, st->off_ts) : 0;
	if (!clock && st->reason == EP_OFF_GIL && holder_collecting(cfg))
		st->reason = EP_OFF_GIL_GC;
	note_gil_out(prev, st, cfg);
	/* gc_running is filled by the probes, which keep the clock: no
	 * collection running in the process, none of this thread's either */
	if (clock && (*clock & EP_GC_RUNNING)) {
		st->flags |= EP_IV_GC_FIRST;
		own_gc = bpf_map_lookup_elem(&gc_running, &tid);
		if (own_gc) {
			st->flags |= EP_IV_OWN_GC;
			st->gc_gen = own_gc->generation;
		}
	}
	st->stack_id = 0;
	if (st->reason == EP_OFF_PREEMPTED)
		return;
	if (ep_stack_at_return && has_rseq(prev))
		st->flags |= EP_IV_STACK_LATER;
	else
		note_stack(pid, tid, st->off_ts, loop);
}

static __always_inline void on_switch_in(struct task_struct *prev, struct task_struct *next,
					 __u64 *now_once)
{
	struct ep_offcpu_task *st;
	__u64 now;

	if (EP_BENCH_FILTER_ONLY)
		return;
	st = task_state_get(next, 0);
	if (!st || EP_BENCH_ONLY_LOOKUPS)
		return;
	if (ep_test_unseen_switch_in && st->tid == st->pid)
		return;
	now = clock_now(now_once);
	st->on_ts = now;	/* the run's start, for its on-CPU time */
	run_clock_in(next, st, now);
	if (st->off_ts)
		end_interval(next, st, now, prev->mm == next->mm);
}

static int bench_delay_cb(__u32 i, void *t0)
{
	return bpf_ktime_get_ns() - *(__u64 *)t0 >= EP_BENCH_DELAY_NS;
}

/* Time alone, spent where the switch program spends it: does the target
 * change how it switches for what the program does, or for how long it
 * runs? (docs/benchmarks.md, issue 29) */
static __always_inline void bench_delay(struct task_struct *t)
{
	__u32 pid = t->tgid;
	__u64 t0;

	if (!EP_BENCH_DELAY_NS || !bpf_map_lookup_elem(&procs, &pid))
		return;
	t0 = bpf_ktime_get_ns();
	bpf_loop(1 << 16, bench_delay_cb, &t0, 0);
}

#define SWITCH_PROG(name, loop, atomics)						\
SEC("tp_btf/sched_switch")								\
int BPF_PROG(name, bool preempt, struct task_struct *prev, struct task_struct *next)	\
{											\
	__u64 now = 0;									\
											\
	if (EP_BENCH_EMPTY) {								\
		bench_delay(prev);							\
		bench_delay(next);							\
		return 0;								\
	}										\
	note_idle(prev, next, &now);							\
	on_switch_out(prev, &now, loop, atomics);					\
	on_switch_in(prev, next, &now);						\
	return 0;									\
}

SWITCH_PROG(offcpu_switch, EP_WALK_BPF_LOOP, 1)
/* Before Linux 5.17 (no bpf_loop): the loader keeps this one instead; before
 * 5.12 (no BPF exchange, which the kernel refuses even unreached) the last. */
SWITCH_PROG(offcpu_switch_bounded, EP_WALK_BOUNDED, 1)
SWITCH_PROG(offcpu_switch_plain, EP_WALK_BOUNDED, 0)
