/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * record --tasks: where a process's asyncio tasks stay suspended (3.11+).
 * Every walk reads all its tasks (py_asyncio.h: bounded in tasks, depth,
 * reads and PY_TASKS_WALK_NS) and places each suspended one: its await
 * chain as a stack, root first (the outermost awaiting task's <task NAME>
 * and coroutine frames, on through each awaiter down to the task's own,
 * topped by what it awaits: "[await sleep]"). A task seen at two walks in
 * the same place was suspended there for the time between them: its span
 * (task_spans.h) grows to the later walk. A task that moved, or ran, in
 * between is placed anew, the time between lost to both places: a task
 * that wakes more often than the walks shows where it waits most of the
 * time only if it waits at one place.
 *
 * Walks are TASK_WALK_EVERY_NS apart at least, and TASK_WALK_COST_FACTOR
 * times their own last duration apart: they take at most ~1/that of a CPU
 * whatever the number of tasks. A walk cut at its time bound is taken up
 * by the next one where it stopped (the tasks before passed over at a read
 * or two each), so a list longer than a walk reads is covered in turns: a
 * task is then seen every few walks, and "the time between" two sightings
 * at one place spans those walks.
 */
#ifndef EP_TASK_WALK_H
#define EP_TASK_WALK_H
#include <stdint.h>
#include "profile.h"
#include "py_symbolizer.h"
#include "py_target.h"

#define TASK_WALK_EVERY_NS	(1000ull * 1000000)
#define TASK_WALK_COST_FACTOR	20
/* A walk cut at a bound: the next goes on from where it stopped, and a
 * task's place is kept this many walks that do not reach it. */
#define TASK_WALK_MISSES_MAX	8
/* Awaiting tasks followed up from a task, at most. */
#define TASK_CHAIN_MAX		16

struct task_walk;

/* NULL if the target's version has no task walk (before 3.11) or out of memory. */
struct task_walk *task_walk_new(const struct py_target *t);
void task_walk_free(struct task_walk *w);
/* 1 if the next walk is due at now_ns (CLOCK_MONOTONIC). */
int task_walk_due(const struct task_walk *w, uint64_t now_ns);
/* One walk now: spans into p (its frames interned there, symbolized with
 * sym), times since t0_ns (the period's start, CLOCK_MONOTONIC);
 * by_function: frames per function, not per line. revisit (a period's
 * end): a list too long for one walk is read from where the oldest of the
 * last walks whose tasks are still placed began, so that they are seen
 * again (a short recording of a long list: its first part). */
void task_walk_step(struct task_walk *w, struct py_symbolizer *sym, struct profile *p,
		    uint64_t t0_ns, int by_function, int revisit);
/* --rotate: the spans so far are the last period's; the next walk opens
 * new ones (from the period's start) for tasks still in place. */
void task_walk_next_period(struct task_walk *w);
/* Walks so far, their time, and whether one stopped at a bound. */
void task_walk_cost(const struct task_walk *w, unsigned *walks, uint64_t *ns, int *truncated);

#endif
