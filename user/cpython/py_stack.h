/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The kernel's frame walk, done from userspace with remote reads, for the
 * one case the kernel cannot see: threads that were already blocked when
 * the recording started (they never switch out while we watch).
 */
#ifndef EP_PY_STACK_H
#define EP_PY_STACK_H
#include <stdint.h>
#include <sys/types.h>
#include "ebpfprof.h"
#include "py_target.h"

/* The PyThreadState of kernel thread tid (same PID namespace as the target),
 * or 0. Needs native_thread_id (3.11+). */
uint64_t py_tstate_of_tid(const struct py_target *t, int tid);
/* Fills ev->frames/depth/flags like walk_python_stack() in the kernel. */
void py_stack_walk(const struct py_target *t, uint64_t tstate, struct ep_stack_event *ev);
/* The same, and entry[i] (EP_MAX_FRAMES of them) nonzero where frame i is the
 * first of a C call of the eval loop (--native: where C frames go). */
void py_stack_walk_entries(const struct py_target *t, uint64_t tstate, struct ep_stack_event *ev,
			   uint8_t *entry);

#endif
