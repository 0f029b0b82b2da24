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
#include "fd_describe.h"
#include "native_unwind.h"
#include "py_symbolizer.h"
#include "py_target.h"
#include "states.h"

/* A thread's state is one of the table's (enum sample_state, states.h:
 * STATE_ON_CPU when running or runnable), or one of these, which are no
 * state of a thread's time: */
#define DUMP_STOPPED	-2	/* stopped (SIGSTOP, traced) */
#define DUMP_GONE	-3	/* exited while we looked */

struct dump_thread {
	int tid;
	char name[128];		/* Python thread name, else the kernel's comm */
	uint64_t tstate;	/* 0: no Python thread state */
	int state;		/* enum sample_state, DUMP_STOPPED or DUMP_GONE */
	double state_s;		/* seconds in that state, <0 if unknown */
	long syscall;		/* blocked in, or -1 */
	uint64_t args[6];
	int holds_gil;
	int has_fd;		/* I/O wait on a known descriptor */
	struct fd_info fd;
	uint64_t futex;		/* lock and GIL waits: the futex address */
	struct py_sym_frame *frames;	/* innermost first */
	struct native_sym *native;	/* --native: what frames' native names point to */
	int nframes;
	int truncated;
};

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
/* The table's dump_name ("running", "gil_wait", "gc_wait", "lock_wait",
 * "io", "sleep", "preempted", "other"), "stopped" or "gone". */
const char *dump_state_name(int state);
/* The thread with that tid, or NULL. */
const struct dump_thread *dump_thread_by_tid(const struct dump_snapshot *s, int tid);

#endif
