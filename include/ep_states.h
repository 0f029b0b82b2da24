/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The one list of the states a thread's time is split into (issue 45): every
 * other list is made from these rows, in the kernel and in userspace. Macros
 * only, so that BPF C (against vmlinux.h) and user C both include it:
 *   - enum ep_offcpu_reason (include/ebpfprof.h): the off-CPU reasons the
 *     kernel classifies, one per OFF(...) row, in row order;
 *   - enum sample_state and state_table[] (user/model/states.{h,c}): every
 *     output's spellings, in row order (the summary's columns, the order of a
 *     recording's states_s);
 *   - a recording's "state_groups" (the Dask report's columns);
 *   - tests/unit/test_states.c, and the Python tests, which parse this file.
 *
 * A new state is one row here, and the classifier that gives its reason
 * (ep_classify_blocked in include/ebpfprof.h, or bpf/offcpu.bpf.c's
 * classify() for what no syscall tells: preemption), plus its tests and the
 * table of states in docs/recording.md. A new row goes before the end unless
 * its place in the summary is meant; the reasons' numbers are the kernel's
 * and this binary's only (never written into a recording), so rows may move.
 */
#ifndef EP_STATES_H
#define EP_STATES_H

/*
 * One row per state:
 *   X(ID, REASON, GROUP, name, title, column, short_label, top_col, marker,
 *     dump_name, run_noise)
 * ID         enum sample_state's STATE_<ID>
 * REASON     OFF(R): the kernel's off-CPU reason EP_OFF_<R>, classified as this
 *            state; ON_CPU: the kernel's exact on-CPU total (EP_TOTAL_ON_CPU);
 *            NONE: no reason means it (a collection is timed by the GC probes)
 * GROUP      the Dask report's column (EP_STATE_GROUPS below)
 * name       key and label: a recording's states_s, pprof's state label and
 *            sample type (with '_' for '-'), --gc-log's reason, diff's JSON,
 *            --list-states, --push's sample types
 * title      diff's text
 * column     record's summary column, 12 wide
 * short_label  top's share column, 7 wide
 * top_col    its place among top's columns, from 1
 * marker     the frame its --idle samples end in; NULL: on-CPU samples have
 *            their own stacks
 * dump_name  dump's state; NULL: dump never says it (dump reads reasons)
 * run_noise  diff: the relative run-to-run deviation assumed of this state's
 *            time when the machine's load, not the program, moves it; 0:
 *            diff's --run-noise
 */
#define EP_STATES(X)								\
	X(ON_CPU, ON_CPU, ON_CPU,						\
	  "on-cpu", "on-CPU", "on-CPU", "on-CPU", 1,				\
	  NULL, "running", 0)							\
	X(GC, NONE, GC,								\
	  "gc", "GC", "GC", "GC", 3,						\
	  "[GC]", NULL, 0)							\
	X(GIL_WAIT, OFF(GIL), GIL_WAIT,						\
	  "gil-wait", "GIL wait", "GIL wait", "GIL", 2,				\
	  "[GIL wait]", "gil_wait", 0)						\
	/* waiting for the GIL while its holder collects */			\
	X(GIL_WAIT_GC, OFF(GIL_GC), GIL_WAIT,					\
	  "waiting-for-gc", "waiting for GC", "wait GC", "waitGC", 4,		\
	  "[waiting for GC]", "gc_wait", 0)					\
	X(LOCK_WAIT, OFF(LOCK), OTHER,						\
	  "lock-wait", "lock wait", "lock wait", "lock", 5,			\
	  "[lock wait]", "lock_wait", 0)					\
	X(IO, OFF(IO), IO_SLEEP,						\
	  "io", "I/O", "I/O", "I/O", 6,						\
	  "[I/O wait]", "io", 0)						\
	X(SLEEP, OFF(SLEEP), IO_SLEEP,						\
	  "sleep", "sleep", "sleep", "sleep", 7,				\
	  "[sleep]", "sleep", 0)						\
	/* runnable, not running: the machine's load, not the program */	\
	X(PREEMPTED, OFF(PREEMPTED), OTHER,					\
	  "preempted", "preempted", "preempted", "preempt", 8,			\
	  "[preempted]", "preempted", 0.5)					\
	/* off CPU for another reason (a Nanny in waitpid) */			\
	X(OTHER, OFF(OTHER), OTHER,						\
	  "other", "other", "other", "other", 9,				\
	  "[off-CPU]", "other", 0)

/*
 * The Dask report's columns, in its order, each a sum of the states whose
 * GROUP is its ID:
 *   G(ID, key, title, on_cpu)
 * key     the report's JSON key, with "_s" after it
 * title   its column's heading
 * on_cpu  1: time on a CPU (the picture's solid part, the report's on-CPU share)
 */
#define EP_STATE_GROUPS(G)							\
	G(ON_CPU, "on_cpu", "on-CPU", 1)					\
	G(GC, "gc", "GC", 1)							\
	G(GIL_WAIT, "gil_wait", "GIL wait", 0)					\
	G(IO_SLEEP, "io_sleep", "I/O+sleep", 0)					\
	G(OTHER, "other", "other", 0)

#endif
