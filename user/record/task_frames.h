/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The <task NAME> frame of an on-CPU sample (3.11+). The kernel's walk
 * notes the address of the outermost frame a coroutine owns (task_frame of
 * the sample): when an asyncio task runs, that is its own coroutine's frame,
 * inside the coroutine object. Here that address is mapped back to the task
 * from a table of every task's coroutine (py_asyncio.h, names only), read
 * again when a sample names a coroutine the table lacks, at most once every
 * TASK_FRAMES_REFRESH_NS: a task started since the last read waits that
 * long for its name. A sample whose coroutine is no task's has no task frame.
 */
#ifndef EP_TASK_FRAMES_H
#define EP_TASK_FRAMES_H
#include <stdint.h>
#include "py_target.h"

#define TASK_FRAMES_REFRESH_NS	(1000ull * 1000000)

struct task_frames;

/* NULL if the target's version has no task frames (before 3.11). */
struct task_frames *task_frames_new(const struct py_target *t);
void task_frames_free(struct task_frames *tf);
/* "<task NAME>" for the task whose coroutine's frame is at frame, or NULL. */
const char *task_frames_name(struct task_frames *tf, uint64_t frame, uint64_t now_ns);
/* Reads of the task table so far, and the time they took. */
void task_frames_cost(const struct task_frames *tf, unsigned *reads, uint64_t *ns);

#endif
