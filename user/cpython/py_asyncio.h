/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The asyncio tasks of a running target (3.11 to 3.15), read from its
 * memory only: each native (_asyncio.Task) task, its name, whether a
 * thread runs it now, the coroutines it is suspended in (innermost first)
 * and what the innermost one awaits: a Future, another Task, a gather's
 * children, or some other object. Where the tasks are:
 *   3.14+  each thread state's list of tasks, and the interpreter's list of
 *          tasks of exited threads; offsets from the _asyncio module's
 *          .AsyncioDebug section (py_asyncio_debug.c);
 *   3.11   asyncio.tasks._all_tasks (a WeakSet);
 *   3.12, 3.13  asyncio.tasks._scheduled_tasks (a WeakSet) + _eager_tasks.
 * The walk is bounded in tasks (PY_TASKS_MAX), coroutines per task
 * (PY_TASK_DEPTH), reads and time (PY_TASKS_BUDGET_NS): a forged list (a
 * cycle, a huge count) ends it early with `truncated` set.
 */
#ifndef EP_PY_ASYNCIO_H
#define EP_PY_ASYNCIO_H
#include <stddef.h>
#include <stdint.h>
#include "py_target.h"

#define PY_TASKS_MAX		100000
#define PY_TASK_DEPTH		64
#define PY_TASK_NAME		128
#define PY_TASK_CHILDREN	64	/* of a gather, and awaiters kept per task */
#define PY_TASKS_BUDGET_NS	(3000ull * 1000000)
#define PY_TASKS_READS		(1u << 23)

enum py_await_kind {
	PY_AWAIT_NONE,		/* running, or not suspended at an await */
	PY_AWAIT_FUTURE,	/* an asyncio Future (sleep, Queue.get, a read...) */
	PY_AWAIT_TASK,		/* another task: await_obj */
	PY_AWAIT_GATHER,	/* a gather: children */
	PY_AWAIT_OTHER,		/* some other awaitable: await_type */
};

struct py_coro_frame {
	uint64_t code;
	uint32_t instr;		/* byte offset, ~0 if unknown */
	uint32_t ident;		/* ep_code_ident() */
};

struct py_task {
	uint64_t addr;
	uint64_t coro;			/* its coroutine (task_coro) */
	char name[PY_TASK_NAME];	/* UTF-8 from the target: not printable yet */
	int running;			/* some thread's running task */
	int nframes;			/* coroutine frames, innermost first */
	struct py_coro_frame *frames;
	int truncated;			/* deeper than PY_TASK_DEPTH */
	enum py_await_kind await_kind;
	uint64_t await_obj;		/* the Task, Future or gathering future */
	char await_type[64];		/* its type name */
	int nchildren;			/* a gather's children */
	uint64_t children[PY_TASK_CHILDREN];
	int nawaited_by;		/* tasks awaiting this one */
	uint64_t awaited_by[PY_TASK_CHILDREN];
};

struct py_task_index {
	uint64_t addr;
	size_t i;
};

struct py_tasks {
	struct py_task *tasks;
	size_t n, cap;
	struct py_task_index *index;	/* by address: py_asyncio_task_at's */
	int truncated;			/* stopped at a bound: more tasks may exist */
	int seen_full;			/* ... its set of the tasks seen was full */
	size_t skipped;			/* tasks passed over (py_asyncio_tasks_from) */
	const char *source;		/* where the list was found */
	unsigned long reads;		/* of target memory, for the walk */
};

/* Names and coroutines only (no await chains, no awaiters), within
 * PY_TASKS_QUICK_NS: for a recording's <task NAME> frames. */
#define PY_TASKS_NAMES_ONLY	1u
#define PY_TASKS_QUICK_NS	(200ull * 1000000)
/* The whole walk within PY_TASKS_WALK_NS: record --tasks' walks, which
 * hold up the recording's loop (its drains) while they read. */
#define PY_TASKS_QUICK		2u
#define PY_TASKS_WALK_NS	(500ull * 1000000)

/*
 * Every task of target t (prepared: t->interp_addr set). 0 (n may be 0:
 * asyncio not imported, or no task), or -1 with err saying why in one line.
 */
int py_asyncio_tasks(const struct py_target *t, unsigned flags, struct py_tasks *out,
		     char *err, size_t errlen);
/* The same, passing over the first skip tasks found (in the walk's order,
 * read only as far as to know each is a task): a walk cut at a bound goes
 * on from there next time. */
int py_asyncio_tasks_from(const struct py_target *t, unsigned flags, size_t skip,
			  struct py_tasks *out, char *err, size_t errlen);
/* Where a generator or coroutine of 3.minor keeps its frame (gi_iframe), or -1. */
int py_asyncio_gen_iframe(int minor);
void py_asyncio_tasks_free(struct py_tasks *tasks);
/* The task at addr, or NULL. */
const struct py_task *py_asyncio_task_at(const struct py_tasks *tasks, uint64_t addr);
/* Its name, or NULL. */
const char *py_asyncio_task_name(const struct py_tasks *tasks, uint64_t addr);

/* 3.14+ (py_asyncio_debug.c): _Py_AsyncioModuleDebugOffsets, as read from
 * the target's interpreter or _asyncio extension module. */
struct py_asyncio_offsets {
	uint64_t task_size, task_name, task_awaited_by, task_is_task;
	uint64_t task_awaited_by_is_set, task_coro, task_node;
	uint64_t interp_size, interp_tasks_head;
	uint64_t tstate_size, tstate_running_loop, tstate_running_task, tstate_tasks_head;
};

/* 0 and *out from the first mapped ELF file (the interpreter's first, then
 * any _asyncio module) with a .AsyncioDebug section whose offsets fit the
 * objects they describe; -1 if none (asyncio not imported yet). Each file
 * is parsed once per process, a few at most, none after deadline_ns
 * (CLOCK_MONOTONIC); the answer is kept for the process. */
int py_asyncio_offsets_read(const struct py_target *t, uint64_t deadline_ns,
			    struct py_asyncio_offsets *out);
/* The same checks on a copy of the section (len bytes); 0 or -1. */
int py_asyncio_offsets_parse(const void *blob, size_t len, struct py_asyncio_offsets *out);

#endif
