// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The stack a blocked thread leaves the CPU with (offcpu.bpf.c tells when
 * it is taken: at switch-out, or on the thread's return to user mode), as
 * global functions the switch and return programs call (note_stack,
 * offcpu.bpf.h): the last walk's when the fingerprint of its two innermost
 * frames matches, else a new walk sent as an EP_EV_STACK record.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "ebpfprof.h"
#include "maps.bpf.h"
#include "pystack.bpf.h"
#include "offcpu.bpf.h"

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
