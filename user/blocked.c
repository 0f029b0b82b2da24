// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "blocked.h"
#include "py_stack.h"

/* The one-letter state of a task: R running, S sleeping, D uninterruptible... */
static char task_state(int pid, int tid)
{
	char path[64], buf[512], *close;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", pid, tid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	close = strrchr(buf, ')');	/* the comm may contain spaces and parentheses */
	return close && close[1] == ' ' ? close[2] : 0;
}

/* The syscall a blocked task is in and its first argument; -1 if none. */
static long task_syscall(int pid, int tid, uint64_t *arg0)
{
	char path[64];
	long nr = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/syscall", pid, tid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	if (fscanf(f, "%ld 0x%lx", &nr, (unsigned long *)arg0) != 2)
		nr = -1;
	fclose(f);
	return nr;
}

static void seed_one(struct session *s, struct recorder *r, const struct py_target *t,
		     int tid, uint64_t ts_ns)
{
	struct ep_offcpu_start start = { .ts = ts_ns, .pid = t->pid, .tid = tid };
	struct ep_stack_event *ev;
	uint64_t arg0 = 0;
	char state = task_state(t->pid, tid);
	long nr;

	if (state != 'S' && state != 'D')
		return;		/* running or runnable: the kernel will see it leave */
	nr = task_syscall(t->pid, tid, &arg0);
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
