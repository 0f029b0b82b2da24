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
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "ebpfprof.h"
#include "maps.bpf.h"
#include "pystack.bpf.h"

/* Pieces of the switch program a benchmark build leaves out (make
 * BPF_EXTRA=-DEP_BENCH_NO_GIL ...) to time them (bench/switch_pieces.py,
 * docs/benchmarks.md); all in by default, never for use. */
#ifndef EP_BENCH_NO_CLASSIFY
#define EP_BENCH_NO_CLASSIFY	0	/* every blocked thread a lock wait */
#endif
#ifndef EP_BENCH_NO_GIL
#define EP_BENCH_NO_GIL		0	/* no GIL read, no blame */
#endif
#ifndef EP_BENCH_NO_RUN_TIME
#define EP_BENCH_NO_RUN_TIME	0	/* no on-CPU time */
#endif
#ifndef EP_BENCH_NO_CPU_CLOCK
#define EP_BENCH_NO_CPU_CLOCK	0	/* no sampler clock, no idle time */
#endif
#ifndef EP_BENCH_NO_SEND
#define EP_BENCH_NO_SEND	0	/* no record sent, no sampling point drawn */
#endif
#ifndef EP_BENCH_EMPTY
#define EP_BENCH_EMPTY		0	/* the switch and return programs return at once */
#endif
#ifndef EP_BENCH_FILTER_ONLY
#define EP_BENCH_FILTER_ONLY	0	/* the procs filter alone */
#endif
#ifndef EP_BENCH_ONLY_LOOKUPS
#define EP_BENCH_ONLY_LOOKUPS	0	/* the filter and task storage, nothing else */
#endif
#ifndef EP_BENCH_DELAY_NS
#define EP_BENCH_DELAY_NS	0	/* with EP_BENCH_EMPTY: spin this long a profiled side */
#endif

#define TASK_UNINTERRUPTIBLE	0x2
/* one load or store the compiler keeps, in order (the drain runs on another CPU) */
#define EP_ONCE(x)		(*(volatile typeof(x) *)&(x))
#define PF_EXITING		0x4

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

/* Each thread's off-CPU state. Task storage (Linux 5.11) goes with the
 * task; on older kernels the loader makes this a preallocated hash of
 * EP_TID_STATES entries keyed by the thread's host tid (task->pid), whose
 * entry offcpu_thread_exit deletes (see task_state_get). */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct ep_offcpu_task);
} offcpu_tasks SEC(".maps");

/* A zeroed state, the first value of a thread's entry in the tid hash. */
static const struct ep_offcpu_task no_state;

/*
 * The off-CPU state of task: its task storage, or, before Linux 5.11, its
 * entry in the tid hash (the same map, made a hash by the loader). create:
 * make it if missing, except for an exiting task in the hash, whose entry
 * offcpu_thread_exit has deleted (or is about to): nothing would delete a
 * new one. NULL when there is none (or the map is full).
 */
static __always_inline struct ep_offcpu_task *task_state_get(struct task_struct *task, int create)
{
	struct ep_offcpu_task *st;
	__u32 tid;

	if (ep_has_task_storage)
		return bpf_task_storage_get(&offcpu_tasks, task, 0,
					    create ? BPF_LOCAL_STORAGE_GET_F_CREATE : 0);
	tid = task->pid;
	st = bpf_map_lookup_elem(&offcpu_tasks, &tid);
	if (st || !create || (task->flags & PF_EXITING))
		return st;
	bpf_map_update_elem(&offcpu_tasks, &tid, &no_state, BPF_NOEXIST);
	return bpf_map_lookup_elem(&offcpu_tasks, &tid);
}

/* The thread is gone: its entry in the tid hash goes too (task storage goes
 * with the task by itself). */
static __always_inline void task_state_free(struct task_struct *task)
{
	__u32 tid = task->pid;

	if (!ep_has_task_storage)
		bpf_map_delete_elem(&offcpu_tasks, &tid);
}

/* (pid, tid, reason) -> exact count and time; drained by userspace every
 * EP_DRAIN_MS, so it holds the threads active in one period */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct ep_totals_key);
	__type(value, struct ep_totals);
} offcpu_totals SEC(".maps");

/* tid -> an operation userspace wants done on that thread's storage */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct ep_task_op);
} offcpu_task_ops SEC(".maps");

/* task_struct before 5.14 named its state `state` (a long). */
struct task_struct___pre514 {
	long state;
} __attribute__((preserve_access_index));

/* x86-64's kernel stack (THREAD_SIZE: 16 KiB without KASAN, as in every
 * distribution kernel) ends with the task's user-mode registers. */
#define EP_THREAD_SIZE	16384

/* The task's state bits; 0 (TASK_RUNNING): on a CPU, or runnable */
static __always_inline unsigned int task_state_bits(struct task_struct *task)
{
	if (bpf_core_field_exists(task->__state))
		return task->__state;
	return ((struct task_struct___pre514 *)task)->state;
}

static __always_inline __u8 classify(const struct ep_proc_cfg *cfg, struct task_struct *prev)
{
	/* prev and its pt_regs are BTF pointers the verifier trusts: plain
	 * (CO-RE relocated) loads, not a helper call per field */
	unsigned int state = task_state_bits(prev);
	struct pt_regs *regs;
	long nr;
	__u64 arg0;

	if (EP_BENCH_NO_CLASSIFY)
		return EP_OFF_LOCK;
	if (state == 0)		/* TASK_RUNNING: switched out while runnable */
		return EP_OFF_PREEMPTED;
	if (ep_has_task_pt_regs) {
		regs = (struct pt_regs *)bpf_task_pt_regs(prev);
		if (!regs)
			return EP_OFF_OTHER;
		nr = regs->orig_ax;
		arg0 = regs->di;
	} else {
		/* before 5.15: task_pt_regs() by hand, read with a probe */
		regs = (struct pt_regs *)((__u64)prev->stack + EP_THREAD_SIZE) - 1;
		if (bpf_core_read(&nr, sizeof(nr), &regs->orig_ax) ||
		    bpf_core_read(&arg0, sizeof(arg0), &regs->di))
			return EP_OFF_OTHER;
	}
	return ep_classify_blocked(nr, arg0, state & TASK_UNINTERRUPTIBLE,
				   cfg->gil_start, cfg->gil_end);
}

/* The GIL holder is collecting: a GIL wait now is a wait for the GC. Only
 * for processes without GC probes; with them the GC clock splits exactly. */
static __always_inline int holder_collecting(const struct ep_proc_cfg *cfg)
{
	return cfg->gc_collecting_addr && read_s32(cfg->gc_collecting_addr);
}

/* Where the GIL's last holder, flag and switch number are read from (in
 * that order, 8 bytes apart, as in every version), 0: unknown. */
static __always_inline __u64 gil_addr(const struct ep_proc_cfg *cfg)
{
	return cfg->gil_holder_addr + 8 == cfg->gil_locked_addr ? cfg->gil_holder_addr : 0;
}

/* The GIL's last holder and switch number (see ep_gil_blame), in one read
 * at addr (gil_addr()) of the current task's memory; holder 0 when not known. */
static __always_inline void read_gil(__u64 addr, struct ep_gil_seen *seen)
{
	__u64 w[3];

	seen->holder = 0;
	seen->switch_number = 0;
	seen->locked = 0;
	if (!addr || bpf_probe_read_user(w, sizeof(w), (void *)addr))
		return;
	seen->holder = w[0];
	seen->locked = (__u32)w[1];	/* an int */
	seen->switch_number = w[2];
}

/* The thread's innermost frame: through the PyThreadState its storage
 * remembers while that still names this thread (one read for both), else
 * through the shared lookup. 0 for none. */
static __always_inline __u64 task_frame(const struct ep_proc_cfg *cfg, struct ep_scratch *sc,
					struct ep_offcpu_task *st, __u32 tid, int loop)
{
	__u64 field;

	if (!st->tstate || !tstate_frame_field(cfg, sc, st->tstate, &field)) {
		st->tstate = find_tstate(st->pid, tid, loop);
		if (!st->tstate)
			return 0;
		field = read_u64(st->tstate + cfg->tstate_frame);
	}
	return frame_from_field(cfg, field);
}

/* The stack the thread leaves the CPU with: the last walk's if the
 * fingerprint matches, else a new walk, sent as an EP_EV_STACK record. The
 * body of ep_note_stack. */
static __always_inline void note_stack_here(const struct ep_proc_cfg *cfg, struct ep_offcpu_task *st,
				       __u32 pid, __u32 tid, __u64 now, int loop)
{
	struct ep_scratch *sc = scratch_slot(EP_SCRATCH_OFFCPU);
	struct ep_stack_event *ev;
	__u64 frame, key;

	st->stack_id = 0;
	if (!sc)
		return;
	frame = task_frame(cfg, sc, st, tid, loop);
	if (!frame)
		return;
	key = stack_key(cfg, sc, frame);
	if (key && key == st->stack_key) {
		st->stack_id = st->stack_id_cached;
		count(EP_CNT_STACK_REUSED);
		return;
	}
	ev = start_stack_event(sc, EP_EV_STACK, pid, tid, now);
	ev->tstate = st->tstate;
	walk_python_stack(cfg, sc, st->tstate, loop);
	count(EP_CNT_STACK_WALKS);
	st->stack_key = 0;
	if (emit_stack_event(ev))
		return;		/* userspace would not know it: walk again next time */
	/* a labelled stack is walked again every time: the same innermost
	 * frames may run under another value of the label (the next task) */
	st->stack_key = ev->flags & EP_F_LABEL ? 0 : key;
	st->stack_id_cached = ev->stack_id;
	st->stack_id = ev->stack_id;
}

/* The current thread's off-CPU state (the switch-out's prev, or the
 * thread returning to user mode), found from the current task alone. */
static __always_inline struct ep_offcpu_task *current_state(void)
{
	__u32 tid;

	if (ep_has_task_storage)
		return bpf_task_storage_get(&offcpu_tasks, bpf_get_current_task_btf(), 0, 0);
	tid = (__u32)bpf_get_current_pid_tgid();	/* the tid hash's key: the host tid */
	return bpf_map_lookup_elem(&offcpu_tasks, &tid);
}

static __always_inline int note_stack_of_current(__u32 pid, __u32 tid, __u64 now, int loop)
{
	struct ep_offcpu_task *st = current_state();
	const struct ep_proc_cfg *cfg = bpf_map_lookup_elem(&procs, &pid);

	if (!st || !cfg)
		return 0;
	note_stack_here(cfg, st, pid, tid, now, loop);
	return 1;
}

/*
 * note_stack_here for the current thread, as global functions: the stack's
 * look-ups and walk are verified once per program, not at each of the
 * switch program's states that reach them (a third of its instructions
 * verified). Scalar arguments (5.10): the state and the configuration are
 * looked up again, on this rarer path only. 1 if noted.
 */
__noinline int ep_note_stack(__u32 pid, __u32 tid, __u64 now)
{
	return note_stack_of_current(pid, tid, now, EP_WALK_BPF_LOOP);
}

__noinline int ep_note_stack_bounded(__u32 pid, __u32 tid, __u64 now)
{
	return note_stack_of_current(pid, tid, now, EP_WALK_BOUNDED);
}

/* The current thread's stack into its state (st->stack_id), which st is. */
static __always_inline int note_stack(__u32 pid, __u32 tid, __u64 now, int loop)
{
	if (loop == EP_WALK_BPF_LOOP)
		return ep_note_stack(pid, tid, now);
	return ep_note_stack_bounded(pid, tid, now);
}

#include "cpu_clock.bpf.h"

/* The kernel notifies the task's rseq area on every return to user mode
 * after a switch (and runs the rseq_update tracepoint then). */
static __always_inline int has_rseq(struct task_struct *task)
{
	if (!bpf_core_field_exists(task->rseq))
		return 0;
	return task->rseq != NULL;
}

static __always_inline void end_run(struct task_struct *prev, struct ep_offcpu_task *st,
				    const struct ep_proc_cfg *cfg, __u64 now, int atomics);
static __always_inline __u64 settle_blame(struct task_struct *task, struct ep_offcpu_task *st,
					  const struct ep_gil_seen *in, int taking);
static __always_inline void end_unseen_interval(struct task_struct *prev, struct ep_offcpu_task *st,
						__u64 now);

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

/*
 * Adds to offcpu_totals: the totals of exiting threads and of processes
 * without a drain iterator; a hash update (~0.12 us here), kept off the
 * common path. A global function, verified once per program rather than at
 * each of the several places the switch program adds to its totals; its
 * key comes as scalars (5.10 takes no pointer arguments): pid << 32 | tid,
 * reason | flags << 8, and the holder.
 */
__noinline int ep_add_key_map(__u64 pid_tid, __u32 reason_flags, __u64 holder, __u64 n, __u64 ns)
{
	struct ep_totals_key key = { .pid = pid_tid >> 32, .tid = (__u32)pid_tid,
				     .reason = (__u8)reason_flags, .flags = (__u8)(reason_flags >> 8),
				     .holder = holder };
	struct ep_totals *t = bpf_map_lookup_elem(&offcpu_totals, &key), fresh = { n, ns };

	if (t) {
		__sync_fetch_and_add(&t->count, n);
		__sync_fetch_and_add(&t->ns, ns);
		return 0;
	}
	/* a racing first update on another CPU: add to the one that won */
	if (!bpf_map_update_elem(&offcpu_totals, &key, &fresh, BPF_NOEXIST))
		return 0;
	t = bpf_map_lookup_elem(&offcpu_totals, &key);
	if (!t) {
		count(EP_CNT_MAP_FULL);
		return -1;
	}
	__sync_fetch_and_add(&t->count, n);
	__sync_fetch_and_add(&t->ns, ns);
	return 0;
}

static __always_inline void add_key_map(const struct ep_offcpu_task *st, __u8 reason, __u8 flags,
					__u64 holder, __u64 n, __u64 ns)
{
	ep_add_key_map((__u64)st->pid << 32 | st->tid, reason | (__u32)flags << 8, holder, n, ns);
}

static __always_inline void add_total_map(const struct ep_offcpu_task *st, __u8 reason,
					  __u8 own_gc, __u64 n, __u64 ns)
{
	add_key_map(st, reason, own_gc ? EP_IV_OWN_GC : 0, 0, n, ns);
}

/* GIL blame (kind 0: plain GIL wait, 1: behind a collection) to the map. */
static __always_inline void add_blame_map(const struct ep_offcpu_task *st, __u64 holder, int kind,
					  __u64 n, __u64 ns)
{
	add_key_map(st, kind ? EP_OFF_GIL_GC : EP_OFF_GIL, EP_TK_BLAME, holder, n, ns);
}

/* Into the thread's own storage: two atomic adds. Adds, not plain stores,
 * because the drain iterator takes them out from another CPU. An exiting
 * thread's totals have been (or are being) moved to the map: it adds there. */
static __always_inline void add_total(struct task_struct *task, struct ep_offcpu_task *st,
				      __u8 reason, __u64 ns)
{
	__u8 own_gc = !!(st->flags & EP_IV_OWN_GC);
	struct ep_totals *t;

	if (!st->totals_in_task || (task->flags & PF_EXITING) || reason >= EP_TOTAL_KINDS) {
		add_total_map(st, reason, own_gc, 1, ns);
		return;
	}
	t = &st->totals[own_gc][reason];
	__sync_fetch_and_add(&t->count, 1);
	__sync_fetch_and_add(&t->ns, ns);
}

#include "blame.bpf.h"

/* The start of a run whose switch-in was not seen (the thread had no
 * storage then): a thread started since its process is profiled has run
 * for its whole CPU time (it has not left the CPU since it has no storage:
 * each switch-out makes one); an older one since profiling began. */
static __always_inline __u64 unseen_run_start(struct task_struct *task,
					      const struct ep_proc_cfg *cfg, __u64 now)
{
	__u64 ran = task->se.sum_exec_runtime;

	if (task->start_time < cfg->start_ts || ran >= now - cfg->start_ts)
		return cfg->start_ts;
	return now - ran;
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

static __always_inline void send_record(struct ep_offcpu_record *rec)
{
	if (!ring_output(rec, sizeof(*rec)))
		count(EP_CNT_OFFCPU_SENT);
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

/* Is t the current task? (a trusted pointer from 5.11, a number before) */
static __always_inline int is_current(struct task_struct *t)
{
	if (ep_has_current_task_btf)
		return t == bpf_get_current_task_btf();
	return (__u64)t == bpf_get_current_task();
}

/* Back in user mode with its interval still open: its switch-in went
 * unseen (end_unseen_interval). Only a blocked interval waiting for its
 * stack can be open here. */
static __always_inline int unseen_came_back(const struct ep_offcpu_task *st)
{
	return st->off_ts && (st->flags & EP_IV_STACK_LATER);
}

/*
 * The thread returns to user mode after a switch-in: its Python stack is
 * still the one it blocked with. An interval that waits for its stack
 * (EP_IV_STACK_LATER) gets it here, in the thread's own context, and goes.
 * One whose switch-in went unseen gets it too, and goes at the thread's
 * next switch-out, where it is closed: left to then, the stack was gone
 * and a nap's wait showed none. Tracepoints run with preemption off, so
 * the off-CPU scratch slot is not shared with a sched_switch run on this
 * CPU.
 */
static __always_inline int stack_at_return(struct task_struct *t, int loop)
{
	struct ep_offcpu_task *st;
	struct ep_gil_seen gil = {};
	int unseen, noted;

	if (EP_BENCH_EMPTY || EP_BENCH_FILTER_ONLY)
		return 0;
	st = task_state_get(t, 0);
	if (!st)
		return 0;
	unseen = unseen_came_back(st);
	if (!(st->pending.kind || st->blame_ns[0] || st->blame_ns[1] || unseen) || !is_current(t))
		return 0;
	if (st->blame_ns[0] || st->blame_ns[1]) {
		/* the GIL wait's end: the waiter has not taken the GIL yet */
		read_gil(st->gil_addr, &gil);
		settle_blame(t, st, &gil, 1);
	}
	if (!st->pending.kind && !unseen)
		return 0;
	noted = note_stack(st->pid, st->tid, bpf_ktime_get_ns(), loop);
	if (unseen)
		st->flags &= ~EP_IV_STACK_LATER;	/* st->stack_id is its stack */
	if (!st->pending.kind)
		return 0;
	if (noted) {
		st->pending.stack_id = st->stack_id;
		count(EP_CNT_STACK_LATER);
	}
	send_record(&st->pending);
	st->pending.kind = 0;
	return 0;
}

SEC("tp_btf/rseq_update")
int BPF_PROG(offcpu_stack_at_return, struct task_struct *t)
{
	return stack_at_return(t, EP_WALK_BPF_LOOP);
}

SEC("tp_btf/rseq_update")
int BPF_PROG(offcpu_stack_at_return_bounded, struct task_struct *t)
{
	return stack_at_return(t, EP_WALK_BOUNDED);
}

/* task's thread id in the profiler's PID namespace, 0 if it has none there.
 * Runs in the profiler's context (an iterator being read): the depth of its
 * own PID namespace is that of its own pid. */
static __always_inline __u32 task_tid_in_ns(struct task_struct *task)
{
	/* read with probes: any kernel's task, trusted or not */
	struct task_struct *me = (struct task_struct *)bpf_get_current_task();
	unsigned int level;
	struct pid *pid;
	struct upid upid;
	__u64 at;

	if (!ep_pidns_ino)
		return task->pid;
	level = BPF_CORE_READ(me, thread_pid, level);
	pid = BPF_CORE_READ(task, thread_pid);
	if (!pid || BPF_CORE_READ(pid, level) < level)
		return 0;
	at = bpf_core_field_offset(struct pid, numbers) + (__u64)(level & 63) * sizeof(upid);
	if (bpf_core_read(&upid, sizeof(upid), (void *)pid + at) ||
	    BPF_CORE_READ(upid.ns, ns.inum) != ep_pidns_ino)
		return 0;
	return upid.nr;
}

/*
 * A thread off the CPU since before its process was profiled (a switch-out
 * since would have made its storage), or started since and not yet run:
 * an interval from the start (the recording's, or the thread's), as its
 * switch-out would have classified it. Userspace's seed (with its stack)
 * may replace it. Left out, a thread queued or blocked at the start lost
 * the time up to its first switch-in: 10-30 ms a spinner on a loaded
 * machine, more in a guest; a napper's nap when its seed came late.
 */
static __always_inline void prime_off_cpu(struct task_struct *task, struct ep_offcpu_task *st,
					  const struct ep_proc_cfg *cfg)
{
	__u64 *clock = gc_clock_of(st->pid, cfg->gc_slot);
	/* a thread started since (not yet run): from its start, not the
	 * recording's; from the recording's, a 100 us thread waited 7 s */
	__u64 from = task->start_time > cfg->start_ts ? task->start_time : cfg->start_ts;

	st->reason = classify(cfg, task);
	st->flags = EP_IV_SEEDED;
	st->gc_clock_out = clock ? ep_gc_clock_read(*clock, from) : 0;
	st->off_ts = from;
}

/* A thread of the process without storage (it has not left the CPU since
 * the process is profiled): storage for it, so that its switch-in is seen
 * and, running now, its run so far is counted. */
static __always_inline struct ep_offcpu_task *prime_task(struct task_struct *task, __u64 now)
{
	struct ep_offcpu_task *st;
	struct ep_proc_cfg *cfg;
	__u32 pid, tid;

	if (task->flags & PF_EXITING)
		return NULL;
	tid = task_tid_in_ns(task);
	pid = task_tid_in_ns(task->group_leader);
	cfg = tid && pid ? bpf_map_lookup_elem(&procs, &pid) : NULL;
	if (!cfg)
		return NULL;
	st = task_state_get(task, 1);
	if (!st || st->pid)	/* a switch-out made it meanwhile */
		return st;
	st->pid = pid;
	st->tid = tid;
	st->totals_in_task = cfg->totals_in_task;
	st->gc_slot = cfg->gc_slot;
	st->primed = 1;
	st->ran_ns = task->se.sum_exec_runtime;
	if (task->on_cpu) {
		__sync_val_compare_and_swap(&st->on_ts, 0, unseen_run_start(task, cfg, now));
	} else {
		prime_off_cpu(task, st, cfg);
	}
	return st;
}

/* A thread on the CPU now: its run up to now goes to its on-CPU total, and
 * the run's start moves to now, unless it left the CPU meanwhile (its
 * switch-out, which exchanges the start, then counts the run itself). */
static __always_inline void count_running(struct task_struct *task, struct ep_offcpu_task *st,
					  __u64 now)
{
	__u64 since = st->on_ts, from;
	struct ep_proc_cfg *cfg;

	if (!since || now <= since || !task->on_cpu || (task->flags & PF_EXITING) ||
	    !st->totals_in_task)
		return;
	cfg = bpf_map_lookup_elem(&procs, &st->pid);
	if (!cfg || __sync_val_compare_and_swap(&st->on_ts, since, now) != since)
		return;
	from = since > cfg->start_ts ? since : cfg->start_ts;
	if (now > from)
		__sync_fetch_and_add(&st->totals[0][EP_TOTAL_ON_CPU].ns, now - from);
}

SEC("iter/task")
int offcpu_drain_totals(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;
	struct ep_totals_entry e = { 0 };
	struct ep_offcpu_task *st;
	struct ep_totals *t;
	int own, reason;
	__u64 now;

	if (!task)
		return 0;
	now = bpf_ktime_get_ns();
	st = task_state_get(task, 0);
	if (!st)
		st = prime_task(task, now);
	if (!st)
		return 0;
	count_running(task, st, now);
	e.key.pid = st->pid;
	e.key.tid = st->tid;
	for (own = 0; own < 2; own++) {
		for (reason = 0; reason < EP_TOTAL_KINDS; reason++) {
			t = &st->totals[own][reason];
			e.val.count = t->count;
			e.val.ns = t->ns;
			if (!e.val.count && !e.val.ns)
				continue;
			e.key.reason = reason;
			e.key.flags = own ? EP_IV_OWN_GC : 0;
			if (bpf_seq_write(ctx->meta->seq, &e, sizeof(e)))
				return 0;
			__sync_fetch_and_add(&t->count, -e.val.count);
			__sync_fetch_and_add(&t->ns, -e.val.ns);
		}
	}
	drain_blame(ctx->meta->seq, st, &e);
	return 0;
}

/* A thread exits: its storage goes with it, so its totals go to the map,
 * and a record still waiting for its stack goes without one. Its switches
 * from here on add to the map (PF_EXITING is set before this runs). */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(offcpu_thread_exit, struct task_struct *task)
{
	struct ep_offcpu_task *st = task_state_get(task, 0);
	struct ep_totals *t;
	__u64 n, ns;
	int own, reason;

	if (!st)
		return 0;
	for (own = 0; own < 2; own++) {
		for (reason = 0; reason < EP_TOTAL_KINDS; reason++) {
			t = &st->totals[own][reason];
			n = t->count;
			ns = t->ns;
			if (!n && !ns)
				continue;
			__sync_fetch_and_add(&t->count, -n);
			__sync_fetch_and_add(&t->ns, -ns);
			add_total_map(st, reason, own, n, ns);
		}
	}
	exit_blame(task, st);
	if (st->pending.kind) {
		count(EP_CNT_STACK_LATER_LOST);
		send_record(&st->pending);
		st->pending.kind = 0;
	}
	task_state_free(task);
	return 0;
}

/* 1 if the operation was applied: a restart only to the interval userspace
 * read (the thread has not been on a CPU since), which is then userspace's
 * to deliver up to its cut, and not the switch-in's. */
static __always_inline int apply_task_op(struct task_struct *task, const struct ep_task_op *op)
{
	struct ep_offcpu_task *st;

	if (op->op == EP_TASK_SEED) {
		/* no storage yet (pid 0), or only the drain iterator's: the
		 * thread has not left the CPU since it was found blocked, so the
		 * seed's interval is still its own */
		st = task_state_get(task, 1);
		if (!st)
			count(EP_CNT_MAP_FULL);
		else if (!st->pid || (st->primed && !st->on_ts)) {
			__builtin_memcpy(st, &op->seed, sizeof(*st));
			st->ran_ns = task->se.sum_exec_runtime;
			return 1;
		}
		return 0;
	}
	st = task_state_get(task, 0);
	/* the same interval as userspace read (it has not run since) */
	if (!st || st->off_ts != op->expect_off_ts)
		return 0;
	st->off_ts = op->off_ts;
	st->gc_clock_out = op->gc_clock_out;
	/* its switch-in went unseen and it is still on the CPU: userspace
	 * counts its run up to the cut, the drain or its switch-out the rest */
	if (op->on_ts && !st->on_ts)
		st->on_ts = op->on_ts;
	return 1;
}

/* Applies the operation queued for each thread of the process (once), and
 * writes the storage of each thread that has one. */
SEC("iter/task")
int offcpu_task_io(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;
	/* struct ep_task_dump's head (the whole is more than a BPF stack) */
	struct { __u32 tid, applied; __u64 ran_now_ns; } head = { 0 };
	struct ep_offcpu_task *st;
	struct ep_task_op *op;
	__u32 tid;

	if (!task)
		return 0;
	tid = task_tid_in_ns(task);
	if (!tid)
		return 0;
	op = bpf_map_lookup_elem(&offcpu_task_ops, &tid);
	/* kept (userspace deletes the ops after the run) and marked done: a
	 * record that did not fit the read makes the kernel run this program
	 * again for the same thread, which must say again what was done */
	if (op) {
		if (!op->done)
			op->done = EP_TASK_OP_TRIED + apply_task_op(task, op);
		head.applied = op->done == EP_TASK_OP_APPLIED;
	}
	st = task_state_get(task, 0);
	if (!st)
		return 0;
	head.tid = tid;
	head.ran_now_ns = task->se.sum_exec_runtime;
	_Static_assert(sizeof(head) == __builtin_offsetof(struct ep_task_dump, st), "dump head");
	if (!bpf_seq_write(ctx->meta->seq, &head, sizeof(head)))
		bpf_seq_write(ctx->meta->seq, st, sizeof(*st));
	return 0;
}
