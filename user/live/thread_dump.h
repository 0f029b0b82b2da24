/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What every thread of a CPython process is doing right now, read without
 * stopping it: its state from /proc (the syscall it is blocked in, classified
 * as the kernel side does), how long it has been off the CPU, its Python
 * stack (the userspace frame walk of py_stack.c, so a thread blocked for
 * hours shows its stack), who holds the GIL, and what an I/O wait waits on.
 */
#ifndef EP_THREAD_DUMP_H
#define EP_THREAD_DUMP_H
#include <stdint.h>
#include <sys/types.h>
#include "dump_thread.h"
#include "py_symbolizer.h"
#include "py_target.h"

struct dump_snapshot {
	pid_t pid;
	int gil_locked;		/* -1 unknown */
	int gil_holder_tid;	/* 0: none or not a thread we know */
	int gc_collecting;	/* -1 unknown */
	struct dump_thread *threads;
	size_t nthreads;
	struct py_symbolizer *sym;	/* owns the frames' strings */
};

/* Takes the snapshot of a prepared target. 0, or -1 with err filled. */
int dump_take(const struct py_target *t, struct dump_snapshot *s, char *err, size_t errlen);
/* The same with native frames woven into every thread's stack (each thread
 * stopped a moment: thread_dump_native.h). */
int dump_take_native(const struct py_target *t, struct dump_snapshot *s, char *err, size_t errlen);
void dump_free(struct dump_snapshot *s);
/* The state's dump_name (include/ep_states.h: "running", "gil_wait"...;
 * other's for a state without one), "stopped" or "gone". */
const char *dump_state_name(int state);
/* The thread with that tid, or NULL. */
const struct dump_thread *dump_thread_by_tid(const struct dump_snapshot *s, int tid);

#endif
