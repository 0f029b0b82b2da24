// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "blocked.h"
#include "procfs.h"
#include "py_stack.h"

/* The kernel's stack id for frames walked here (same hash, same order). */
static uint64_t stack_id_of(const struct ep_stack_event *ev)
{
	uint64_t h = 0;
	int i;

	for (i = 0; i < ev->depth && i < EP_MAX_FRAMES; i++)
		h = ep_stack_mix(h, ev->frames[i].code, ev->frames[i].instr, ev->frames[i].ident);
	return ep_stack_id(h, ev->flags);
}

/* Walks the stack of thread tid, off the CPU, from here, and gives it to the
 * recorder as the kernel would have sent it; its id, 0 if it has none. */
static uint64_t blocked_stack(struct recorder *r, const struct py_target *t, int tid,
			      uint64_t ts_ns)
{
	struct ep_stack_event *ev = calloc(1, sizeof(*ev));
	uint64_t id = 0;

	if (!ev)
		return 0;
	ev->kind = EP_EV_STACK;
	ev->pid = t->pid;
	ev->tid = tid;
	ev->ts = ts_ns;
	ev->tstate = py_tstate_of_tid(t, tid);
	if (ev->tstate) {
		py_stack_walk(t, ev->tstate, ev);
		ev->stack_id = id = stack_id_of(ev);
		recorder_on_event(r, ev, sizeof(*ev));
	}
	free(ev);
	return id;
}

static void seed_one(struct session *s, struct recorder *r, const struct py_target *t,
		     int tid, uint64_t ts_ns)
{
	struct ep_offcpu_task st = { .off_ts = ts_ns, .pid = t->pid, .tid = tid,
				     .flags = EP_IV_SEEDED };
	uint64_t arg0 = 0;
	char state = procfs_task_state(t->pid, tid);
	long nr;

	if (state != 'S' && state != 'D')
		return;		/* running or runnable: the kernel will see it leave */
	nr = procfs_task_syscall(t->pid, tid, &arg0);
	st.reason = ep_classify_blocked(nr, arg0, state == 'D', t->cfg.gil_start, t->cfg.gil_end);
	/* the recorder first, so the kernel's record always finds the stack */
	st.stack_id = blocked_stack(r, t, tid, ts_ns);
	session_seed_offcpu(s, tid, &st);
}

int blocked_stack_of(void *ctx, __u32 pid, __u32 tid, __u64 *stack_id)
{
	struct recorder *r = ctx;
	const struct py_target *t = recorder_target(r, pid);

	if (!t)
		return -1;
	*stack_id = blocked_stack(r, t, tid, 0);
	return *stack_id ? 0 : -1;
}

struct seeding {
	struct session *s;
	struct recorder *r;
	const struct py_target *t;
	uint64_t ts_ns;
};

static int seed_task(pid_t tid, void *ctx)
{
	struct seeding *sd = ctx;

	seed_one(sd->s, sd->r, sd->t, tid, sd->ts_ns);
	return 0;
}

void seed_blocked_threads(struct session *s, struct recorder *r,
			  const struct py_target *t, uint64_t ts_ns)
{
	struct seeding sd = { s, r, t, ts_ns };

	procfs_each_task(t->pid, seed_task, &sd);
}
