// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "blocked.h"
#include "grow.h"
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

/* The state of thread tid now, and why it is blocked; 0 if it is not
 * (running or runnable: the kernel will see it leave). */
static int blocked_now(const struct py_target *t, int tid, __u8 *reason)
{
	uint64_t arg0 = 0;
	char state = procfs_task_state(t->pid, tid);
	long nr;

	if (state != 'S' && state != 'D')
		return 0;
	nr = procfs_task_syscall(t->pid, tid, &arg0);
	*reason = ep_classify_blocked(nr, arg0, state == 'D', t->cfg.gil_start, t->cfg.gil_end);
	return 1;
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

struct found {
	int tid;
	uint64_t stack_id;
};

struct seeding {
	struct recorder *r;
	const struct py_target *t;
	uint64_t ts_ns;
	struct found *v;
	size_t n, cap;
};

/* First pass: each thread blocked now, its stack walked (the slow part). */
static int walk_blocked(pid_t tid, void *ctx)
{
	struct seeding *sd = ctx;
	__u8 reason;

	if (!blocked_now(sd->t, tid, &reason) || GROW_ARRAY(sd->v, sd->cap, sd->n + 1))
		return 0;
	/* the recorder first, so the kernel's record always finds the stack */
	sd->v[sd->n++] = (struct found){ tid, blocked_stack(sd->r, sd->t, tid, sd->ts_ns) };
	return 0;
}

/*
 * Seeds the threads blocked at the start in two passes: the stacks walked
 * first, then each thread's state read again and its interval queued, and
 * all opened in one run. One thread at a time (walk, seed), a thread that
 * woke between its state read and its seed, a millisecond or more later,
 * lost its wait up to then: with 80 threads napping 10 ms, 3-4 ms each.
 */
void seed_blocked_threads(struct session *s, struct recorder *r,
			  const struct py_target *t, uint64_t ts_ns)
{
	struct seeding sd = { .r = r, .t = t, .ts_ns = ts_ns };
	struct ep_offcpu_task st;
	size_t i;

	procfs_each_task(t->pid, walk_blocked, &sd);
	for (i = 0; i < sd.n; i++) {
		st = (struct ep_offcpu_task){ .off_ts = ts_ns, .pid = t->pid, .tid = sd.v[i].tid,
					      .flags = EP_IV_SEEDED, .stack_id = sd.v[i].stack_id };
		if (blocked_now(t, sd.v[i].tid, &st.reason))
			session_queue_seed(s, sd.v[i].tid, &st);
	}
	session_apply_seeds(s, t->pid);
	free(sd.v);
}
