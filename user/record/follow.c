// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <stdio.h>
#include <stdlib.h>
#include "follow.h"
#include "grow.h"
#include "printable.h"
#include "remote.h"

/* How long after an exec the new program may take to map libpython and
 * initialise it, and to show that it is no Python at all. */
#define READY_TIMEOUT_NS	(10ull * 1000000000ull)
#define FOUND_TIMEOUT_NS	(2ull * 1000000000ull)

static void attach_gc(struct follower *f, const struct py_target *t)
{
	if (session_attach_gc(f->session, t) != GC_PROBE_NONE)
		recorder_set_exact_gc(f->rec, t->pid);
}

static void add_pending(struct follower *f, int pid)
{
	if (GROW_ARRAY(f->pending, f->cap, f->npending + 1))
		return;
	f->pending[f->npending++] = (struct pending_exec){ pid, monotonic_ns() + READY_TIMEOUT_NS };
}

static void drop_pending(struct follower *f, size_t i)
{
	f->pending[i] = f->pending[--f->npending];
}

static void drop_pending_pid(struct follower *f, int pid)
{
	size_t i;

	for (i = 0; i < f->npending; i++)
		if (f->pending[i].pid == pid)
			drop_pending(f, i--);
}

/* 1 when the process is settled (profiled, or given up on), 0 to try again. */
static int try_discover(struct follower *f, const struct pending_exec *p)
{
	struct py_target t;
	char err[512], shown[2048];
	int rc;
	uint64_t now = monotonic_ns();

	/* held since its fork: gone, its pid may be anyone's now */
	if (!remote_same_process(p->pid))
		return 1;
	rc = py_target_open(p->pid, &t, err, sizeof(err));
	if (rc == PY_TARGET_OK) {
		recorder_add_process(f->rec, &t);
		session_add_process(f->session, t.pid, &t.cfg);
		attach_gc(f, &t);
		if (f->verbose)
			fprintf(stderr, "ebpfprof: following process %d (CPython %d.%d)\n",
				t.pid, t.major, t.minor);
		return 1;
	}
	if (rc == PY_TARGET_NOT_READY && now < p->deadline_ns)
		return 0;
	/* libpython is mapped a little after the exec: "not Python" is final only later */
	if (rc == PY_TARGET_NOT_PYTHON && now + READY_TIMEOUT_NS < p->deadline_ns + FOUND_TIMEOUT_NS)
		return 0;
	if (f->verbose)
		fprintf(stderr, "ebpfprof: not following process %d: %s\n", p->pid,
			printable(err, shown, sizeof(shown)));
	return 1;
}

/* A child the recorder could not hold by a pidfd is never read: the kernel
 * forgets it and its children. Said once when the bound is the reason. */
static void stop_following(struct follower *f, int pid)
{
	session_unfollow(f->session, pid);
	if (remote_full() && !f->told_full) {
		fprintf(stderr, "ebpfprof: %zu processes followed already, the most the open-file "
			"limit allows (ulimit -n less %d): process %d and any new process are not "
			"followed while so many live\n", remote_tracked(), REMOTE_FD_RESERVE, pid);
		f->told_full = 1;
	} else if (f->verbose) {
		fprintf(stderr, "ebpfprof: not following process %d: it exited\n", pid);
	}
}

static int is_pending(const struct follower *f, int pid)
{
	size_t i;

	for (i = 0; i < f->npending; i++)
		if (f->pending[i].pid == pid)
			return 1;
	return 0;
}

static void handle(struct follower *f, const struct proc_change *c)
{
	const struct py_target *t;

	switch (c->kind) {
	case EP_EV_FORK:
		if (!remote_same_process(c->pid)) {
			stop_following(f, c->pid);
			break;
		}
		t = c->python ? recorder_target(f->rec, c->pid) : NULL;
		if (t) {
			/* forked before its parent was found (the kernel copies
			 * a configuration it has at the fork), the parent since */
			if (!session_has_process(f->session, t->pid))
				session_add_process(f->session, t->pid, &t->cfg);
			attach_gc(f, t);
		} else if (is_pending(f, c->ppid)) {
			/* a copy of a program not yet found to be Python (3.14's
			 * forkserver forks its workers as soon as it is up):
			 * found the same way as its parent, in its own right */
			add_pending(f, c->pid);
		}
		break;
	case EP_EV_EXEC:
		drop_pending_pid(f, c->pid);
		add_pending(f, c->pid);
		break;
	case EP_EV_EXIT:
		drop_pending_pid(f, c->pid);
		break;
	}
}

void follower_step(struct follower *f)
{
	struct proc_change *changes;
	size_t i, n = recorder_take_changes(f->rec, &changes);

	for (i = 0; i < n; i++)
		handle(f, &changes[i]);
	free(changes);
	for (i = 0; i < f->npending; i++)
		if (try_discover(f, &f->pending[i]))
			drop_pending(f, i--);
}

void follower_free(struct follower *f)
{
	free(f->pending);
	f->pending = NULL;
	f->npending = f->cap = 0;
}
