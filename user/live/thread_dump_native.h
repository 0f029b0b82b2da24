/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * dump --native: a thread's native stack with its Python frames woven in
 * (native_weave.h), as py-spy dump --native prints it. The registers of a
 * running thread can only be had from the thread itself: it is stopped with
 * ptrace for as long as its registers, its stack (32 KiB from rsp) and its
 * Python frames are read, then let go; a thread that does not stop within
 * 100 ms (uninterruptible sleep) keeps its Python stack alone.
 */
#ifndef EP_THREAD_DUMP_NATIVE_H
#define EP_THREAD_DUMP_NATIVE_H
#include "dump_thread.h"
#include "native_unwind.h"
#include "py_target.h"

/* Fills th->frames (innermost first) and th->native; 0, or -1 when the
 * thread could not be stopped or read (th untouched: walk its Python stack). */
int dump_native_stack(const struct py_target *t, struct native_unwinder *u,
		      struct py_symbolizer *sym, struct dump_thread *th, struct ep_stack_event *ev);

#endif
