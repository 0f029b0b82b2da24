/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What an asyncio task awaits, in words, the same for dump --tasks and
 * record --tasks: what a Future stands for is told by the asyncio coroutine
 * that awaits it (sleep, Queue.get, StreamReader.read...: the innermost
 * public one in asyncio's own files).
 */
#ifndef EP_PY_TASK_AWAIT_H
#define EP_PY_TASK_AWAIT_H
#include <stddef.h>
#include "py_asyncio.h"
#include "py_symbolizer.h"

/* A task's frame as recordings name it: "<task NAME>" (name unescaped:
 * the writers and the terminal escape it). */
void py_task_frame_name(const char *task_name, char *out, size_t len);

/* "sleep", "Task other", "gather: Task a, Task b", "Future", a type name,
 * or "" when task t of all awaits nothing. frames: its coroutine frames
 * symbolized, innermost first (t->nframes of them, NULL if unknown). */
void py_task_await_text(const struct py_tasks *all, const struct py_task *t,
			const struct py_sym_frame *frames, char *out, size_t len);

#endif
