/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * --native: one stack from the native one and the Python one, as py-spy
 * shows it. Each C call of the interpreter's eval loop
 * (_PyEval_EvalFrameDefault) is replaced by the Python frames it ran: from
 * 3.11 one call runs several (Python-to-Python calls stay in the loop), up
 * to the frame it was entered with, which the kernel's walk marks
 * (EP_INSTR_ENTRY). The interpreter's own plumbing between them (call
 * machinery, main, thread start) is left out; its frames inner to every
 * Python frame and every other library's (list.sort, GC, a C extension) are
 * kept. Frames are profile frame ids here: no names, no memory of its own.
 */
#ifndef EP_NATIVE_WEAVE_H
#define EP_NATIVE_WEAVE_H
#include <stdint.h>
#include "native_unwind.h"

enum native_kind {
	NATIVE_FOREIGN = 0,	/* any other file's code */
	NATIVE_INTERP = 1,	/* the interpreter's file, not its eval loop */
	NATIVE_EVAL = 2,	/* _PyEval_EvalFrameDefault */
	NATIVE_ANON = 3,	/* code in no file: a JIT's, or -X perf's trampolines */
};

struct native_ref {
	uint32_t id;		/* profile frame id */
	uint8_t kind;		/* enum native_kind */
};

/* The kind of a native frame named sym, in a process whose interpreter's
 * file (the one holding _PyRuntime) has inode interp_ino. */
uint8_t native_kind_of(const struct native_sym *sym, uint64_t interp_ino);

/*
 * py: the Python frames innermost first, py_entry[i] nonzero when frame i is
 * the first its eval call ran; nat: the native frames innermost first,
 * complete when they reach the thread's first frame. Writes
 * the woven stack root first into out (room for max ids); returns its length.
 * Python frames no eval frame claims (the native unwind stopped short of
 * them) go at the root; with no Python frames the native stack is kept whole.
 */
uint32_t native_weave(const uint32_t *py, const uint8_t *py_entry, uint32_t npy,
		      const struct native_ref *nat, uint32_t nnat, int complete, uint32_t *out,
		      uint32_t max);

#endif
