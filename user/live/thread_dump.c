// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ebpfprof.h"
#include "procfs.h"
#include "py_stack.h"
#include "py_threads.h"
#include "recorder.h"
#include "remote.h"
#include "states.h"
#include "thread_dump.h"
#include "thread_dump_native.h"

/* Beyond any real process: more is garbage or a runaway target. */
#define DUMP_MAX_THREADS	4096
#define DUMP_MAX_TSTATES	4096

struct tstate_ids {
	uint64_t tstate;
	uint64_t ident;		/* pthread_self(): threading.get_ident() */
	int tid;		/* 0: unknown */
};

struct py_view {
	struct tstate_ids *ts;
	int nts;
	struct py_thread_name *names;
	int nnames;
};

const char *dump_state_name(int state)
{
	const char *name;

	if (state == DUMP_STOPPED)
		return "stopped";
	if (state == DUMP_GONE)
		return "gone";
	name = state_spelling(state)->dump_name;
	return name ? name : state_table[STATE_OTHER].dump_name;
}

/* Every thread state of the main interpreter with its ids. The tid is in the
 * state from 3.11; before, threading's Thread._native_id has it. */
static void read_python_threads(const struct py_target *t, struct py_view *v)
{
	const struct py_layout *L = &t->layout;
	uint64_t tstate = 0, native;
	int i, j;

	v->names = calloc(DUMP_MAX_THREADS, sizeof(*v->names));
	v->ts = calloc(DUMP_MAX_TSTATES, sizeof(*v->ts));
	if (!v->names || !v->ts)
		return;
	v->nnames = py_thread_names(t->pid, L, t->interp_addr, v->names, DUMP_MAX_THREADS);
	if (v->nnames < 0)
		v->nnames = 0;
	if (remote_read_u64(t->pid, t->interp_addr + L->interp_threads_head, &tstate))
		return;
	for (i = 0; tstate && i < DUMP_MAX_TSTATES; i++) {
		struct tstate_ids *id = &v->ts[v->nts];

		id->tstate = tstate;
		remote_read_u64(t->pid, tstate + L->tstate_thread_id, &id->ident);
		if (L->tstate_native_thread_id >= 0 &&
		    !remote_read_u64(t->pid, tstate + L->tstate_native_thread_id, &native))
			id->tid = (int)native;
		for (j = 0; !id->tid && j < v->nnames; j++)
			if (v->names[j].ident == id->ident)
				id->tid = v->names[j].native_id;
		v->nts++;
		if (remote_read_u64(t->pid, tstate + L->tstate_next, &tstate))
			break;
	}
}

static const struct tstate_ids *ids_by_tid(const struct py_view *v, int tid)
{
	for (int i = 0; i < v->nts; i++)
		if (v->ts[i].tid == tid)
			return &v->ts[i];
	return NULL;
}

static const char *name_by_ident(const struct py_view *v, uint64_t ident)
{
	for (int i = 0; i < v->nnames; i++)
		if (v->names[i].ident == ident)
			return v->names[i].name;
	return NULL;
}

/* Syscalls whose first argument is the descriptor waited on. */
static int fd_in_arg0(long nr)
{
	switch (nr) {
	case EP_NR_read: case EP_NR_write: case EP_NR_pread64: case EP_NR_readv:
	case EP_NR_connect: case EP_NR_accept: case EP_NR_accept4: case EP_NR_sendto:
	case EP_NR_recvfrom: case EP_NR_sendmsg: case EP_NR_recvmsg: case EP_NR_preadv:
	case EP_NR_recvmmsg: case EP_NR_epoll_wait: case EP_NR_epoll_pwait:
	case EP_NR_epoll_pwait2:
		return 1;
	}
	return 0;
}

/* The descriptor an I/O wait is on: the syscall's own, or the first of a
 * poll() set (how socket timeouts and selectors wait). */
static void describe_io(pid_t pid, struct dump_thread *th)
{
	int32_t fd = -1;

	if (fd_in_arg0(th->syscall))
		fd = (int32_t)th->args[0];
	else if ((th->syscall == EP_NR_poll || th->syscall == EP_NR_ppoll) && th->args[1] >= 1)
		remote_read_i32(pid, th->args[0], &fd);	/* struct pollfd starts with int fd */
	if (fd >= 0 && !fd_describe(pid, fd, &th->fd))
		th->has_fd = 1;
}

static void read_state(const struct py_target *t, struct dump_thread *th, uint64_t now_ns)
{
	char st = procfs_task_state(t->pid, th->tid);
	uint64_t last_ran;

	th->syscall = -1;
	th->state_s = -1;
	switch (st) {
	case 'S': case 'D':
		break;
	case 'T': case 't':
		th->state = DUMP_STOPPED;
		return;
	case 0: case 'Z': case 'X':
		th->state = DUMP_GONE;
		return;
	default:
		th->state = STATE_ON_CPU;
		return;
	}
	th->syscall = procfs_task_syscall_args(t->pid, th->tid, th->args);
	/* in no syscall: it ran since its state was read (a spinning thread
	 * blocks on the GIL for microseconds), so it is running or runnable;
	 * only a page fault (D) blocks outside a syscall */
	if (th->syscall < 0 && st != 'D') {
		th->state = STATE_ON_CPU;
		return;
	}
	th->state = state_of_reason(ep_classify_blocked(th->syscall, th->args[0], st == 'D',
							t->cfg.gil_start, t->cfg.gil_end));
	if (th->syscall == EP_NR_futex)
		th->futex = th->args[0];
	if (th->state == STATE_IO)
		describe_io(t->pid, th);
	last_ran = procfs_task_last_ran_ns(t->pid, th->tid);
	if (last_ran)	/* the two clocks may disagree by a tick */
		th->state_s = last_ran < now_ns ? (now_ns - last_ran) / 1e9 : 0;
}

static void read_stack(const struct py_target *t, struct py_symbolizer *sym,
		       struct dump_thread *th, struct ep_stack_event *ev)
{
	int i;

	memset(ev, 0, EP_STACK_EVENT_HDR_SIZE);
	py_stack_walk(t, th->tstate, ev);
	th->truncated = !!(ev->flags & EP_F_TRUNCATED);
	th->frames = calloc(ev->depth ? ev->depth : 1, sizeof(*th->frames));
	if (!th->frames)
		return;
	for (i = 0; i < ev->depth; i++)
		py_symbolizer_frame(sym, ev->frames[i].code, ev->frames[i].ident,
				    ev->frames[i].instr, &th->frames[i]);
	th->nframes = ev->depth;
}

static void read_gil(const struct py_target *t, struct dump_snapshot *s, int *collecting)
{
	const struct ep_proc_cfg *c = &t->cfg;
	int32_t locked, coll;

	s->gil_locked = -1;
	s->gc_collecting = -1;
	if (c->gil_locked_addr && !remote_read_i32(t->pid, c->gil_locked_addr, &locked))
		s->gil_locked = locked != 0;
	if (c->gc_collecting_addr && !remote_read_i32(t->pid, c->gc_collecting_addr, &coll))
		s->gc_collecting = coll != 0;
	*collecting = s->gc_collecting;
}

static int cmp_tid(const void *a, const void *b)
{
	return ((const struct dump_thread *)a)->tid - ((const struct dump_thread *)b)->tid;
}

static int add_task(pid_t tid, void *ctx)
{
	struct dump_snapshot *s = ctx;

	s->threads[s->nthreads++].tid = tid;
	return s->nthreads >= DUMP_MAX_THREADS;
}

static int list_tasks(pid_t pid, struct dump_snapshot *s)
{
	s->threads = calloc(DUMP_MAX_THREADS, sizeof(*s->threads));
	if (!s->threads || procfs_each_task(pid, add_task, s))
		return -1;
	qsort(s->threads, s->nthreads, sizeof(*s->threads), cmp_tid);
	return 0;
}

static void fill_thread(const struct py_target *t, struct dump_snapshot *s,
			const struct py_view *v, struct dump_thread *th,
			struct ep_stack_event *ev, uint64_t holder, int collecting,
			struct native_unwinder *u)
{
	/* the target knows its threads by the ids of its own PID namespace */
	const struct tstate_ids *ids = ids_by_tid(v, procfs_task_inner_tid(t->pid, th->tid));
	const char *name = ids ? name_by_ident(v, ids->ident) : NULL;

	if (name)
		snprintf(th->name, sizeof(th->name), "%s", name);
	else
		procfs_comm(t->pid, th->tid, th->name, sizeof(th->name));
	if (th->state == STATE_GIL_WAIT && collecting > 0)
		th->state = STATE_GIL_WAIT_GC;
	if (ids)
		th->tstate = ids->tstate;
	/* --native: any thread, Python or not */
	if (u && !dump_native_stack(t, u, s->sym, th, ev) && !ids)
		return;
	if (!ids)
		return;
	/* The GIL was read after the states: a thread seen waiting for it has
	 * taken it since, and the holder we saw is no longer sure. */
	th->holds_gil = s->gil_locked > 0 && holder == ids->tstate &&
			th->state != STATE_GIL_WAIT && th->state != STATE_GIL_WAIT_GC;
	if (th->holds_gil)
		s->gil_holder_tid = th->tid;
	if (!th->frames)
		read_stack(t, s->sym, th, ev);
}

static int take(const struct py_target *t, struct dump_snapshot *s, struct native_unwinder *u,
		char *err, size_t errlen)
{
	struct py_view v = { 0 };
	struct ep_stack_event *ev = malloc(sizeof(*ev));
	uint64_t holder = 0, now;
	int collecting;
	size_t i;

	memset(s, 0, sizeof(*s));
	s->pid = t->pid;
	s->sym = py_symbolizer_new(t->pid, &t->layout);
	if (!ev || !s->sym || list_tasks(t->pid, s)) {
		snprintf(err, errlen, "cannot read the threads of process %d", t->pid);
		free(ev);
		return -1;
	}
	read_python_threads(t, &v);
	/* the states first, close together in time, then the GIL's state */
	now = monotonic_ns();
	for (i = 0; i < s->nthreads; i++)
		read_state(t, &s->threads[i], now);
	read_gil(t, s, &collecting);
	if (t->cfg.gil_holder_addr)
		remote_read_u64(t->pid, t->cfg.gil_holder_addr, &holder);
	for (i = 0; i < s->nthreads; i++)
		fill_thread(t, s, &v, &s->threads[i], ev, holder, collecting, u);
	free(v.ts);
	free(v.names);
	free(ev);
	return 0;
}

int dump_take(const struct py_target *t, struct dump_snapshot *s, char *err, size_t errlen)
{
	return take(t, s, NULL, err, errlen);
}

int dump_take_native(const struct py_target *t, struct dump_snapshot *s, char *err, size_t errlen)
{
	struct native_unwinder *u = native_unwinder_new(t->pid);
	int rc;

	if (!u) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	rc = take(t, s, u, err, errlen);
	native_unwinder_free(u);
	return rc;
}

const struct dump_thread *dump_thread_by_tid(const struct dump_snapshot *s, int tid)
{
	for (size_t i = 0; i < s->nthreads; i++)
		if (s->threads[i].tid == tid)
			return &s->threads[i];
	return NULL;
}

void dump_free(struct dump_snapshot *s)
{
	for (size_t i = 0; s->threads && i < s->nthreads; i++) {
		free(s->threads[i].frames);
		free(s->threads[i].native);
	}
	free(s->threads);
	py_symbolizer_free(s->sym);
	memset(s, 0, sizeof(*s));
}
