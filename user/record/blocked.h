/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Threads already off the CPU when the recording starts (a reader blocked in
 * recv, a thread asleep): the kernel will only see them come back, so their
 * interval is opened here, from /proc/PID/task/TID/{stat,syscall} and a
 * userspace stack walk, with the same classification as the kernel's.
 */
#ifndef EP_BLOCKED_H
#define EP_BLOCKED_H
#include <stdint.h>
#include "py_target.h"
#include "recorder.h"
#include "session.h"

/* Opens an off-CPU interval starting at ts_ns for every blocked thread. */
void seed_blocked_threads(struct session *s, struct recorder *r,
			  const struct py_target *t, uint64_t ts_ns);
/* session_opts.stack_of_blocked, ctx a struct recorder: the stack of thread
 * tid of pid, off the CPU, walked from here and given to the recorder. */
int blocked_stack_of(void *ctx, __u32 pid, __u32 tid, __u64 *stack_id);

#endif
