// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "blocked.h"
#include "procfs.h"
#include "py_stack.h"

static void seed_one(struct session *s, struct recorder *r, const struct py_target *t,
		     int tid, uint64_t ts_ns)
{
	struct ep_offcpu_start start = { .ts = ts_ns, .pid = t->pid, .tid = tid };
	struct ep_stack_event *ev;
	uint64_t arg0 = 0;
	char state = procfs_task_state(t->pid, tid);
	long nr;

	if (state != 'S' && state != 'D')
		return;		/* running or runnable: the kernel will see it leave */
	nr = procfs_task_syscall(t->pid, tid, &arg0);
	start.reason = ep_classify_blocked(nr, arg0, state == 'D', t->cfg.gil_start, t->cfg.gil_end);
	ev = calloc(1, sizeof(*ev));
	if (!ev)
		return;
	ev->kind = EP_EV_OFFCPU;
	ev->pid = t->pid;
	ev->tid = tid;
	ev->ts = ts_ns;
	ev->reason = start.reason;
	ev->tstate = py_tstate_of_tid(t, tid);
	if (ev->tstate)
		py_stack_walk(t, ev->tstate, ev);
	/* the recorder first, so the kernel's end record always finds the start */
	recorder_on_event(r, ev, sizeof(*ev));
	if (session_seed_offcpu(s, tid, &start))
		ev->kind = 0;
	free(ev);
}

void seed_blocked_threads(struct session *s, struct recorder *r,
			  const struct py_target *t, uint64_t ts_ns)
{
	char path[64];
	struct dirent *de;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/task", t->pid);
	dir = opendir(path);
	if (!dir)
		return;
	while ((de = readdir(dir)))
		if (de->d_name[0] != '.')
			seed_one(s, r, t, atoi(de->d_name), ts_ns);
	closedir(dir);
}
