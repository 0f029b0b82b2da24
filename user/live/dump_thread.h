/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * One thread as dump shows it: filled by thread_dump.c, its native stack by
 * thread_dump_native.c (which needs this, not the snapshot: no circle).
 */
#ifndef EP_DUMP_THREAD_H
#define EP_DUMP_THREAD_H
#include <stdint.h>
#include "fd_describe.h"
#include "native_unwind.h"
#include "py_symbolizer.h"
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

#endif
