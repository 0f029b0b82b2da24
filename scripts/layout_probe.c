// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Layout probe: compiled by scripts/gen-layout.sh against one CPython
 * version's headers, internal ones included (-DPy_BUILD_CORE), and run on
 * the build host. It prints, as the body of a C initializer of
 * struct py_layout (user/cpython/py_layout.h), every figure the profiler needs,
 * each taken with offsetof/sizeof so that nothing is transcribed by hand.
 *
 * Built with -DEP_PROBE_DEBUG_OFFSETS (3.13+ only) it instead prints where
 * each field of _Py_DebugOffsets sits in that struct, counted in u64 words:
 * the index tables of user/cpython/py_debug_offsets.c.
 *
 * Must be compiled for x86-64, the only target the profiler supports, so
 * that pointer sizes and alignment are the target's.
 */
#include <Python.h>
#include <stddef.h>
#include <stdio.h>

#if !defined(__x86_64__) || !defined(__LP64__)
#error "the layout probe must be compiled for x86-64"
#endif

#if PY_MAJOR_VERSION != 3 || PY_MINOR_VERSION < 8 || PY_MINOR_VERSION > 15
#error "only CPython 3.8 to 3.15 are supported"
#endif

/*
 * Free-threaded builds lay out objects and thread states differently and
 * have no single GIL to watch; the profiler does not support them.
 */
#ifdef Py_GIL_DISABLED
#error "free-threaded (Py_GIL_DISABLED) builds are not supported"
#endif

#define V(maj, min)	(PY_VERSION_HEX >= (((maj) << 24) | ((min) << 16)))

/* 3.8 keeps runtime and interpreter state in pycore_pystate.h. */
#include "internal/pycore_pystate.h"
#if V(3, 9)
#include "internal/pycore_runtime.h"
#include "internal/pycore_interp.h"
#endif
#include "internal/pycore_gil.h"
#if V(3, 11)
#include "internal/pycore_frame.h"
#else
#include "frameobject.h"
#include "code.h"
#endif
#if V(3, 14)
/* 3.14 split the frame struct and _PyStackRef out of pycore_frame.h. */
#include "internal/pycore_interpframe_structs.h"
#include "internal/pycore_stackref.h"
#endif

#define OFF(type, member)	((long)offsetof(type, member))

static void field(const char *name, long v)
{
	printf("\t.%s = %ld,\n", name, v);
}

static void field_sym(const char *name, const char *sym)
{
	printf("\t.%s = %s,\n", name, sym);
}

#ifndef EP_PROBE_DEBUG_OFFSETS

int main(void)
{
	/*
	 * Comment lines first: the script copies them above the entry, so
	 * the table says which build configuration produced each entry.
	 */
	printf("\t/* PY_VERSION %s", PY_VERSION);
#ifdef Py_DEBUG
	printf(", Py_DEBUG");
#endif
#ifdef Py_TRACE_REFS
	printf(", Py_TRACE_REFS");
#endif
	printf(" */\n");

	field("major", PY_MAJOR_VERSION);
	field("minor", PY_MINOR_VERSION);

	/* _PyRuntimeState */
	field("runtime_interpreters_head", OFF(_PyRuntimeState, interpreters.head));
#if V(3, 9)
	field("runtime_gc", -1);
#else
	field("runtime_gc", OFF(_PyRuntimeState, gc));
#endif
#if V(3, 12)
	field("runtime_ceval_gil", -1);
#else
	field("runtime_ceval_gil", OFF(_PyRuntimeState, ceval.gil));
#endif

	/* PyInterpreterState */
#if V(3, 11)
	field("interp_threads_head", OFF(PyInterpreterState, threads.head));
#else
	field("interp_threads_head", OFF(PyInterpreterState, tstate_head));
#endif
#if V(3, 9)
	field("interp_gc", OFF(PyInterpreterState, gc));
#else
	field("interp_gc", -1);
#endif
#if V(3, 12)
	field("interp_ceval_gil", OFF(PyInterpreterState, ceval.gil));
	field("interp_modules", OFF(PyInterpreterState, imports.modules));
#else
	field("interp_ceval_gil", -1);
	field("interp_modules", OFF(PyInterpreterState, modules));
#endif

	field("gc_collecting", OFF(struct _gc_runtime_state, collecting));

	field("gil_size", (long)sizeof(struct _gil_runtime_state));
	field("gil_locked", OFF(struct _gil_runtime_state, locked));
	field("gil_last_holder", OFF(struct _gil_runtime_state, last_holder));

	/* PyThreadState */
	field("tstate_next", OFF(PyThreadState, next));
	field("tstate_thread_id", OFF(PyThreadState, thread_id));
#if V(3, 11)
	field("tstate_native_thread_id", OFF(PyThreadState, native_thread_id));
#else
	field("tstate_native_thread_id", -1);
#endif
#if V(3, 13)
	field("tstate_frame", OFF(PyThreadState, current_frame));
	field("cframe_current_frame", -1);
#elif V(3, 11)
	field("tstate_frame", OFF(PyThreadState, cframe));
	field("cframe_current_frame", OFF(_PyCFrame, current_frame));
#else
	field("tstate_frame", OFF(PyThreadState, frame));
	field("cframe_current_frame", -1);
#endif

	/* The frame */
#if V(3, 11)
	field("frame_previous", OFF(_PyInterpreterFrame, previous));
#if V(3, 13)
	field("frame_code", OFF(_PyInterpreterFrame, f_executable));
	field("frame_instr", OFF(_PyInterpreterFrame, instr_ptr));
#else
	field("frame_code", OFF(_PyInterpreterFrame, f_code));
	field("frame_instr", OFF(_PyInterpreterFrame, prev_instr));
#endif
	field("frame_owner", OFF(_PyInterpreterFrame, owner));
	field_sym("instr_kind", "EP_INSTR_POINTER");
#else
	field("frame_previous", OFF(PyFrameObject, f_back));
	field("frame_code", OFF(PyFrameObject, f_code));
	field("frame_instr", OFF(PyFrameObject, f_lasti));
	field("frame_owner", -1);
#if V(3, 10)
	field_sym("instr_kind", "EP_INSTR_LASTI_UNITS");
#else
	field_sym("instr_kind", "EP_INSTR_LASTI_BYTES");
#endif
#endif

	/*
	 * From 3.12 the interpreter pushes frames owned by the C stack
	 * (entry and trampoline shims) that stand for no Python function.
	 * 3.14 added FRAME_OWNED_BY_INTERPRETER just below
	 * FRAME_OWNED_BY_CSTACK, and its own _PyFrame_IsIncomplete() treats
	 * every owner from FRAME_OWNED_BY_INTERPRETER up as not a Python
	 * frame, so the skip starts at the lower of the two.
	 * 3.11 marks entry frames with is_entry instead, on real frames.
	 */
#if V(3, 15)
	/* 3.15 dropped FRAME_OWNED_BY_CSTACK; FRAME_OWNED_BY_INTERPRETER is
	 * the highest owner and _PyFrame_IsIncomplete() skips from it up. */
	field("owner_skip_min", FRAME_OWNED_BY_INTERPRETER);
#elif V(3, 14)
	field("owner_skip_min", FRAME_OWNED_BY_INTERPRETER < FRAME_OWNED_BY_CSTACK ?
	      FRAME_OWNED_BY_INTERPRETER : FRAME_OWNED_BY_CSTACK);
#elif V(3, 12)
	field("owner_skip_min", FRAME_OWNED_BY_CSTACK);
#else
	field("owner_skip_min", 0);
#endif

	/* 3.14: f_executable is a _PyStackRef, tagged in its low bits. */
#if V(3, 14)
	printf("\t.code_tag_mask = 0x%lx,\n", (unsigned long)Py_TAG_BITS);
#else
	printf("\t.code_tag_mask = 0x0,\n");
#endif

	/* PyCodeObject */
	field("code_filename", OFF(PyCodeObject, co_filename));
	field("code_name", OFF(PyCodeObject, co_name));
#if V(3, 11)
	field("code_qualname", OFF(PyCodeObject, co_qualname));
#else
	field("code_qualname", -1);
#endif
	field("code_firstlineno", OFF(PyCodeObject, co_firstlineno));
#if V(3, 10)
	field("code_linetable", OFF(PyCodeObject, co_linetable));
#else
	field("code_linetable", OFF(PyCodeObject, co_lnotab));
#endif
#if V(3, 11)
	field("code_adaptive", OFF(PyCodeObject, co_code_adaptive));
	field_sym("linetable_format", "PY_LINETABLE_LOCATIONS");
#elif V(3, 10)
	field("code_adaptive", -1);
	field_sym("linetable_format", "PY_LINETABLE_310");
#else
	field("code_adaptive", -1);
	field_sym("linetable_format", "PY_LINETABLE_LNOTAB");
#endif

	/* str and bytes */
	field("unicode_length", OFF(PyASCIIObject, length));
	field("unicode_state", OFF(PyASCIIObject, state));
	field("unicode_ascii_size", (long)sizeof(PyASCIIObject));
	field("unicode_compact_size", (long)sizeof(PyCompactUnicodeObject));
	field("bytes_size", OFF(PyVarObject, ob_size));
	field("bytes_data", OFF(PyBytesObject, ob_sval));
	return 0;
}

#else /* EP_PROBE_DEBUG_OFFSETS */

#if !V(3, 13)
#error "_Py_DebugOffsets exists from 3.13 on"
#endif

#define IDX(member)	(OFF(_Py_DebugOffsets, member) / 8)

/*
 * One designated initializer per field user/cpython/py_debug_offsets.c reads, as
 * u64 word indices into the blob; the names are that file's DO_* enum.
 */
int main(void)
{
	/* The struct must sit at the very start of _PyRuntime. */
	if (offsetof(_PyRuntimeState, debug_offsets) != 0) {
		fprintf(stderr, "_Py_DebugOffsets is not at offset 0 of _PyRuntime\n");
		return 1;
	}
	printf("\t/* PY_VERSION %s: sizeof(_Py_DebugOffsets) = %zu */\n",
	       PY_VERSION, sizeof(_Py_DebugOffsets));
#define P(name, member)	printf("\t[%s] = %ld,\n", #name, IDX(member))
	P(DO_VERSION, version);
	P(DO_FREE_THREADED, free_threaded);
	P(DO_RUNTIME_INTERPRETERS_HEAD, runtime_state.interpreters_head);
	P(DO_INTERP_THREADS_HEAD, interpreter_state.threads_head);
	P(DO_INTERP_GC, interpreter_state.gc);
	P(DO_INTERP_MODULES, interpreter_state.imports_modules);
	P(DO_INTERP_CEVAL_GIL, interpreter_state.ceval_gil);
	P(DO_INTERP_GIL, interpreter_state.gil_runtime_state);
	P(DO_INTERP_GIL_LOCKED, interpreter_state.gil_runtime_state_locked);
	P(DO_INTERP_GIL_HOLDER, interpreter_state.gil_runtime_state_holder);
	P(DO_TSTATE_NEXT, thread_state.next);
	P(DO_TSTATE_CURRENT_FRAME, thread_state.current_frame);
	P(DO_TSTATE_THREAD_ID, thread_state.thread_id);
	P(DO_TSTATE_NATIVE_THREAD_ID, thread_state.native_thread_id);
	P(DO_FRAME_PREVIOUS, interpreter_frame.previous);
	P(DO_FRAME_EXECUTABLE, interpreter_frame.executable);
	P(DO_FRAME_INSTR_PTR, interpreter_frame.instr_ptr);
	P(DO_FRAME_OWNER, interpreter_frame.owner);
	P(DO_CODE_FILENAME, code_object.filename);
	P(DO_CODE_NAME, code_object.name);
	P(DO_CODE_QUALNAME, code_object.qualname);
	P(DO_CODE_LINETABLE, code_object.linetable);
	P(DO_CODE_FIRSTLINENO, code_object.firstlineno);
	P(DO_CODE_ADAPTIVE, code_object.co_code_adaptive);
	P(DO_BYTES_OB_SIZE, bytes_object.ob_size);
	P(DO_BYTES_OB_SVAL, bytes_object.ob_sval);
	P(DO_UNICODE_STATE, unicode_object.state);
	P(DO_UNICODE_LENGTH, unicode_object.length);
	P(DO_UNICODE_ASCII_SIZE, unicode_object.asciiobject_size);
	P(DO_GC_COLLECTING, gc.collecting);
#undef P
	return 0;
}

#endif /* EP_PROBE_DEBUG_OFFSETS */
