/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * record --tasks: the time asyncio tasks stayed suspended, per process. A
 * span is one task's stay at one place: its await chain as a stack (root
 * first: the outermost awaiting task's <task NAME> and coroutine frames,
 * on down to the task's own, topped by what it awaits, "[await sleep]"),
 * from the walk that first saw it there to the last walk that still did
 * (record/task_walk.c). Every writer shows a process's spans as a profile
 * "[asyncio tasks] <process> (pid N)" in task-seconds: several tasks
 * suspended at once add up, so its total may exceed the recording's length.
 */
#ifndef EP_TASK_SPANS_H
#define EP_TASK_SPANS_H
#include <stddef.h>
#include <stdint.h>

/* Spans kept at most in a profile (a --rotate period): beyond, a task's new
 * place is not kept (counted in dropped). ~100 bytes each. */
#define TASK_SPANS_MAX	(1u << 18)
/* How the profile of a process's tasks is named: this, its name, its pid. */
#define TASK_SPANS_PREFIX	"[asyncio tasks] "
/* Frames of a span's stack at most. */
#define TASK_STACK_MAX	256

struct task_span {
	int pid;
	uint32_t track;			/* the task's number in its process, from 1 */
	uint32_t task_frame;		/* its <task NAME> frame id */
	uint64_t start_ns, end_ns;	/* since the session (period) start */
	uint32_t *frames;		/* frame ids, root first (owned) */
	uint32_t nframes;
};

struct task_spans {
	struct task_span *v;
	size_t n, cap;
	struct task_process {
		int pid;
		char *process;		/* its name, for the profile's */
	} *procs;
	size_t nprocs, procs_cap;
	unsigned long dropped;		/* spans not kept: TASK_SPANS_MAX reached */
};

/* A stack's time summed over the spans of one process. */
struct task_stack {
	const uint32_t *frames;		/* a span's */
	uint32_t nframes;
	uint64_t ns;
};

/* Adds a copy of s (frames copied). Its index, or -1 (full: dropped is
 * counted; out of memory). */
long task_spans_add(struct task_spans *ts, const struct task_span *s);
/* Names process pid (copied); 0 or -1. */
int task_spans_name_process(struct task_spans *ts, int pid, const char *process);
/* "[asyncio tasks] <process> (pid N)", malloc'ed; NULL if out of memory. */
char *task_spans_title(const struct task_spans *ts, int pid);
/* fn(pid, arg) for each process with spans, in order of its first span,
 * until fn returns non-zero; fn's last return, or -1 if out of memory. */
int task_spans_each_pid(const struct task_spans *ts, int (*fn)(int pid, void *arg), void *arg);
/* pid's spans summed per stack into a malloc'ed *out, by depth then frame
 * ids; how many, 0 when none, -1 if out of memory. */
long task_spans_stacks(const struct task_spans *ts, int pid, struct task_stack **out);
/* A process's profile as the writers write it. */
struct task_profile {
	char *title;			/* task_spans_title */
	struct task_stack *stacks;	/* task_spans_stacks */
	size_t n;
	uint64_t total_ns;		/* their time */
};

/* pid's profile into *out: 0 (n may be 0), or -1 if out of memory (*out
 * then holds nothing to free). */
int task_profile_of(const struct task_spans *ts, int pid, struct task_profile *out);
void task_profile_free(struct task_profile *tp);
/* The spans dropped, the processes' names kept (--rotate's next period). */
void task_spans_clear(struct task_spans *ts);
void task_spans_free(struct task_spans *ts);

#endif
