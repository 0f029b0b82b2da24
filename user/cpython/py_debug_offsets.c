// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * 3.13+: the target describes its own layout. _PyRuntime starts with a
 * _Py_DebugOffsets struct: the cookie "xdebugpy", PY_VERSION_HEX and a
 * free_threaded flag (both u64), then sections of u64 offsets (runtime,
 * interpreter, thread state, frame, code object, ...). Reading it makes the
 * profiler right for patch releases and vendor builds whose headers we
 * never compiled against, as long as the section layout itself is known.
 *
 * That layout changed between 3.13 (pycore_runtime.h) and 3.14
 * (pycore_debug_offsets.h): 3.14 inserted fields such as threads_main,
 * code_object_generation and stackpointer in the middle of sections and
 * added a set section; 3.15 added last_profiled_frame and its sequence
 * number to the thread state section, moving thread_id and all that
 * follows. So the position of every field read here is kept as
 * data, one index table per minor version, in u64 words from the start of
 * the struct; the tables are the output of
 * "scripts/gen-layout.sh --debug-offsets" on the headers named in .source.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "ebpfprof.h"
#include "py_layout.h"
#include "remote.h"

enum do_field {
	DO_VERSION,
	DO_FREE_THREADED,
	DO_RUNTIME_INTERPRETERS_HEAD,
	DO_INTERP_THREADS_HEAD,
	DO_INTERP_GC,
	DO_INTERP_MODULES,
	DO_INTERP_CEVAL_GIL,
	DO_INTERP_GIL,		/* offsetof(PyInterpreterState, _gil) */
	DO_INTERP_GIL_LOCKED,	/* offsetof(PyInterpreterState, _gil.locked) */
	DO_INTERP_GIL_HOLDER,	/* offsetof(PyInterpreterState, _gil.last_holder) */
	DO_TSTATE_NEXT,
	DO_TSTATE_CURRENT_FRAME,
	DO_TSTATE_THREAD_ID,
	DO_TSTATE_NATIVE_THREAD_ID,
	DO_FRAME_PREVIOUS,
	DO_FRAME_EXECUTABLE,
	DO_FRAME_INSTR_PTR,
	DO_FRAME_OWNER,
	DO_FRAME_LOCALSPLUS,	/* between instr_ptr and owner in every version */
	DO_CODE_FILENAME,
	DO_CODE_NAME,
	DO_CODE_QUALNAME,
	DO_CODE_LINETABLE,
	DO_CODE_FIRSTLINENO,
	DO_CODE_ADAPTIVE,
	DO_BYTES_OB_SIZE,
	DO_BYTES_OB_SVAL,
	DO_UNICODE_STATE,
	DO_UNICODE_LENGTH,
	DO_UNICODE_ASCII_SIZE,
	DO_GC_COLLECTING,
	DO_NR,
};

/* The cookie is word 0; the tables say where the rest is. */
#define DO_COOKIE	"xdebugpy"
/* Enough for the furthest field read (3.15: word 95 of 111). */
#define DO_MAX_WORDS	128
/* Words up to the furthest field any table reads. */
#define DO_USED_WORDS	96
/*
 * No structure the profiler reads has a field this far in, and the kernel
 * side keeps offsets in 16 bits (0xffff meaning "none"); a larger value
 * means the blob is not what we think it is. Fields read out of a buffer
 * of fixed size have tighter bounds (do_bounds).
 */
#define DO_MAX_OFFSET	0xff00
/* The header of a str or bytes object read whole: sizeof(PyASCIIObject) is 40. */
#define DO_OBJ_HEADER_MAX	64
/* A frame's fast locals start after its header: 72 to 80 bytes in 3.13-3.15. */
#define DO_LOCALSPLUS_MAX	512

struct do_table {
	int minor;
	const char *source;	/* what a layout filled from this table says */
	uint16_t idx[DO_NR];	/* u64 word of each field in _Py_DebugOffsets */
};

static const struct do_table do_tables[] = {
	{
		.minor = 13,
		.source = "the target's _Py_DebugOffsets (3.13 index table from pyenv 3.13.0 pycore_runtime.h); other fields from the 3.13 table entry",
		.idx = {
			/* PY_VERSION 3.13.0: sizeof(_Py_DebugOffsets) = 584 */
			[DO_VERSION] = 1,
			[DO_FREE_THREADED] = 2,
			[DO_RUNTIME_INTERPRETERS_HEAD] = 5,
			[DO_INTERP_THREADS_HEAD] = 9,
			[DO_INTERP_GC] = 10,
			[DO_INTERP_MODULES] = 11,
			[DO_INTERP_CEVAL_GIL] = 14,
			[DO_INTERP_GIL] = 15,
			[DO_INTERP_GIL_LOCKED] = 17,
			[DO_INTERP_GIL_HOLDER] = 18,
			[DO_TSTATE_NEXT] = 21,
			[DO_TSTATE_CURRENT_FRAME] = 23,
			[DO_TSTATE_THREAD_ID] = 24,
			[DO_TSTATE_NATIVE_THREAD_ID] = 25,
			[DO_FRAME_PREVIOUS] = 29,
			[DO_FRAME_EXECUTABLE] = 30,
			[DO_FRAME_INSTR_PTR] = 31,
			[DO_FRAME_LOCALSPLUS] = 32,
			[DO_FRAME_OWNER] = 33,
			[DO_CODE_FILENAME] = 35,
			[DO_CODE_NAME] = 36,
			[DO_CODE_QUALNAME] = 37,
			[DO_CODE_LINETABLE] = 38,
			[DO_CODE_FIRSTLINENO] = 39,
			[DO_CODE_ADAPTIVE] = 43,
			[DO_BYTES_OB_SIZE] = 65,
			[DO_BYTES_OB_SVAL] = 66,
			[DO_UNICODE_STATE] = 68,
			[DO_UNICODE_LENGTH] = 69,
			[DO_UNICODE_ASCII_SIZE] = 70,
			[DO_GC_COLLECTING] = 72,
		},
	},
	{
		.minor = 14,
		.source = "the target's _Py_DebugOffsets (3.14 index table from Debian sid 3.14.10 pycore_debug_offsets.h); other fields from the 3.14 table entry",
		.idx = {
			/* PY_VERSION 3.14.10: sizeof(_Py_DebugOffsets) = 760 */
			[DO_VERSION] = 1,
			[DO_FREE_THREADED] = 2,
			[DO_RUNTIME_INTERPRETERS_HEAD] = 5,
			[DO_INTERP_THREADS_HEAD] = 9,
			[DO_INTERP_GC] = 11,
			[DO_INTERP_MODULES] = 12,
			[DO_INTERP_CEVAL_GIL] = 15,
			[DO_INTERP_GIL] = 16,
			[DO_INTERP_GIL_LOCKED] = 18,
			[DO_INTERP_GIL_HOLDER] = 19,
			[DO_TSTATE_NEXT] = 24,
			[DO_TSTATE_CURRENT_FRAME] = 26,
			[DO_TSTATE_THREAD_ID] = 27,
			[DO_TSTATE_NATIVE_THREAD_ID] = 28,
			[DO_FRAME_PREVIOUS] = 32,
			[DO_FRAME_EXECUTABLE] = 33,
			[DO_FRAME_INSTR_PTR] = 34,
			[DO_FRAME_LOCALSPLUS] = 35,
			[DO_FRAME_OWNER] = 36,
			[DO_CODE_FILENAME] = 40,
			[DO_CODE_NAME] = 41,
			[DO_CODE_QUALNAME] = 42,
			[DO_CODE_LINETABLE] = 43,
			[DO_CODE_FIRSTLINENO] = 44,
			[DO_CODE_ADAPTIVE] = 48,
			[DO_BYTES_OB_SIZE] = 75,
			[DO_BYTES_OB_SVAL] = 76,
			[DO_UNICODE_STATE] = 78,
			[DO_UNICODE_LENGTH] = 79,
			[DO_UNICODE_ASCII_SIZE] = 80,
			[DO_GC_COLLECTING] = 82,
		},
	},
	{
		.minor = 15,
		.source = "the target's _Py_DebugOffsets (3.15 index table from Debian sid 3.15.2 pycore_debug_offsets.h); other fields from the 3.15 table entry",
		.idx = {
			/* PY_VERSION 3.15.2: sizeof(_Py_DebugOffsets) = 888 */
			[DO_VERSION] = 1,
			[DO_FREE_THREADED] = 2,
			[DO_RUNTIME_INTERPRETERS_HEAD] = 5,
			[DO_INTERP_THREADS_HEAD] = 9,
			[DO_INTERP_GC] = 11,
			[DO_INTERP_MODULES] = 12,
			[DO_INTERP_CEVAL_GIL] = 15,
			[DO_INTERP_GIL] = 16,
			[DO_INTERP_GIL_LOCKED] = 18,
			[DO_INTERP_GIL_HOLDER] = 19,
			[DO_TSTATE_NEXT] = 24,
			[DO_TSTATE_CURRENT_FRAME] = 26,
			[DO_TSTATE_THREAD_ID] = 30,
			[DO_TSTATE_NATIVE_THREAD_ID] = 31,
			[DO_FRAME_PREVIOUS] = 40,
			[DO_FRAME_EXECUTABLE] = 41,
			[DO_FRAME_INSTR_PTR] = 42,
			[DO_FRAME_LOCALSPLUS] = 43,
			[DO_FRAME_OWNER] = 44,
			[DO_CODE_FILENAME] = 48,
			[DO_CODE_NAME] = 49,
			[DO_CODE_QUALNAME] = 50,
			[DO_CODE_LINETABLE] = 51,
			[DO_CODE_FIRSTLINENO] = 52,
			[DO_CODE_ADAPTIVE] = 56,
			[DO_BYTES_OB_SIZE] = 87,
			[DO_BYTES_OB_SVAL] = 88,
			[DO_UNICODE_STATE] = 90,
			[DO_UNICODE_LENGTH] = 91,
			[DO_UNICODE_ASCII_SIZE] = 92,
			[DO_GC_COLLECTING] = 95,
		},
	},
};

/*
 * Fields copied as they are. The GIL's two fields are not here: the debug
 * offsets give them from the start of the interpreter (its inline _gil),
 * while py_layout wants them from the start of the GIL struct, which
 * interp->ceval.gil points to.
 */
#define LAY(field)	offsetof(struct py_layout, field)
static const struct {
	uint8_t from;		/* enum do_field */
	uint16_t to;		/* offset of an int in struct py_layout */
} do_copy[] = {
	{ DO_RUNTIME_INTERPRETERS_HEAD,	LAY(runtime_interpreters_head) },
	{ DO_INTERP_THREADS_HEAD,	LAY(interp_threads_head) },
	{ DO_INTERP_GC,			LAY(interp_gc) },
	{ DO_INTERP_MODULES,		LAY(interp_modules) },
	{ DO_INTERP_CEVAL_GIL,		LAY(interp_ceval_gil) },
	{ DO_TSTATE_NEXT,		LAY(tstate_next) },
	{ DO_TSTATE_CURRENT_FRAME,	LAY(tstate_frame) },
	{ DO_TSTATE_THREAD_ID,		LAY(tstate_thread_id) },
	{ DO_TSTATE_NATIVE_THREAD_ID,	LAY(tstate_native_thread_id) },
	{ DO_FRAME_PREVIOUS,		LAY(frame_previous) },
	{ DO_FRAME_EXECUTABLE,		LAY(frame_code) },
	{ DO_FRAME_INSTR_PTR,		LAY(frame_instr) },
	{ DO_FRAME_OWNER,		LAY(frame_owner) },
	{ DO_FRAME_LOCALSPLUS,		LAY(frame_localsplus) },
	{ DO_CODE_FILENAME,		LAY(code_filename) },
	{ DO_CODE_NAME,			LAY(code_name) },
	{ DO_CODE_QUALNAME,		LAY(code_qualname) },
	{ DO_CODE_LINETABLE,		LAY(code_linetable) },
	{ DO_CODE_FIRSTLINENO,		LAY(code_firstlineno) },
	{ DO_CODE_ADAPTIVE,		LAY(code_adaptive) },
	{ DO_BYTES_OB_SIZE,		LAY(bytes_size) },
	{ DO_BYTES_OB_SVAL,		LAY(bytes_data) },
	{ DO_UNICODE_STATE,		LAY(unicode_state) },
	{ DO_UNICODE_LENGTH,		LAY(unicode_length) },
	{ DO_UNICODE_ASCII_SIZE,	LAY(unicode_ascii_size) },
	{ DO_GC_COLLECTING,		LAY(gc_collecting) },
};

/*
 * Every field's bound: an offset plus the size read there must stay inside
 * the buffer it indexes. A frame is read as EP_FRAME_READ_MAX bytes (in BPF
 * and in py_stack.c), a str or bytes header as DO_OBJ_HEADER_MAX; the rest
 * are addresses added to a pointer and need only fit the kernel's 16 bits.
 */
static const struct {
	uint8_t field;		/* enum do_field */
	uint8_t size;		/* bytes read at the offset */
	uint16_t limit;		/* offset + size may not exceed this */
	const char *name;	/* for the error message */
} do_bounds[] = {
	{ DO_FRAME_PREVIOUS, 8, EP_FRAME_READ_MAX, "frame.previous" },
	{ DO_FRAME_EXECUTABLE, 8, EP_FRAME_READ_MAX, "frame.executable" },
	{ DO_FRAME_INSTR_PTR, 8, EP_FRAME_READ_MAX, "frame.instr_ptr" },
	{ DO_FRAME_OWNER, 1, EP_FRAME_READ_MAX, "frame.owner" },
	/* read by itself (--label), a few words past the fields above */
	{ DO_FRAME_LOCALSPLUS, 8, DO_LOCALSPLUS_MAX, "frame.localsplus" },
	{ DO_UNICODE_STATE, 4, DO_OBJ_HEADER_MAX, "unicode.state" },
	{ DO_UNICODE_LENGTH, 8, DO_OBJ_HEADER_MAX, "unicode.length" },
	{ DO_UNICODE_ASCII_SIZE, 0, DO_OBJ_HEADER_MAX, "unicode.asciiobject_size" },
	{ DO_BYTES_OB_SIZE, 8, DO_OBJ_HEADER_MAX, "bytes.ob_size" },
	{ DO_BYTES_OB_SVAL, 0, DO_OBJ_HEADER_MAX, "bytes.ob_sval" },
};

/* The name of a field out of its bounds, or NULL if all are in theirs. */
static const char *out_of_bounds(const struct do_table *t, const uint64_t *w)
{
	size_t i;

	for (i = 0; i < DO_NR; i++)
		if (i != DO_VERSION && i != DO_FREE_THREADED && w[t->idx[i]] > DO_MAX_OFFSET - 8)
			return "an offset";
	for (i = 0; i < sizeof(do_bounds) / sizeof(do_bounds[0]); i++)
		if (w[t->idx[do_bounds[i].field]] > (uint64_t)do_bounds[i].limit - do_bounds[i].size)
			return do_bounds[i].name;
	/* the str's header fields lie before its characters (all values are
	 * below DO_MAX_OFFSET here: no sum overflows) */
	if (w[t->idx[DO_UNICODE_STATE]] + 4 > w[t->idx[DO_UNICODE_ASCII_SIZE]] ||
	    w[t->idx[DO_UNICODE_LENGTH]] + 8 > w[t->idx[DO_UNICODE_ASCII_SIZE]])
		return "unicode.asciiobject_size";
	if (w[t->idx[DO_BYTES_OB_SIZE]] + 8 > w[t->idx[DO_BYTES_OB_SVAL]])
		return "bytes.ob_sval";
	return NULL;
}

static const struct do_table *do_table_for(int major, int minor)
{
	size_t i;

	if (major != 3)
		return NULL;
	for (i = 0; i < sizeof(do_tables) / sizeof(do_tables[0]); i++)
		if (do_tables[i].minor == minor)
			return &do_tables[i];
	return NULL;
}

int py_debug_offsets_read(pid_t pid, uint64_t runtime_addr, struct py_layout *out)
{
	uint64_t w[DO_USED_WORDS];

	if (remote_read(pid, runtime_addr, w, sizeof(w)))
		return -1;
	return py_debug_offsets_parse(w, sizeof(w), out, NULL, 0);
}

int py_debug_offsets_parse(const void *blob, size_t len, struct py_layout *out,
			   char *err, size_t errlen)
{
	const struct do_table *t = do_table_for(out->major, out->minor);
	uint64_t w[DO_MAX_WORDS] = { 0 }, version, gil, locked, holder;
	const char *bad;
	struct py_layout l;
	size_t nwords = 0, i;

	if (!t)
		return -1;
	for (i = 0; i < DO_NR; i++)
		if (t->idx[i] + 1u > nwords)
			nwords = t->idx[i] + 1u;
	if (nwords > DO_MAX_WORDS || len < nwords * sizeof(w[0]))
		return -1;
	memcpy(w, blob, nwords * sizeof(w[0]));

	if (memcmp(w, DO_COOKIE, 8))
		return -1;
	/* A 3.14 blob read with the 3.13 table would give wrong offsets. */
	version = w[t->idx[DO_VERSION]];
	if ((version >> 24) != (uint64_t)out->major ||
	    ((version >> 16) & 0xff) != (uint64_t)out->minor)
		return -1;
	if (w[t->idx[DO_FREE_THREADED]])
		return -1;
	/* The cookie and version are right: offsets that are not are forged. */
	bad = out_of_bounds(t, w);
	if (bad) {
		if (err)
			snprintf(err, errlen, "%s out of bounds", bad);
		return PY_DEBUG_OFFSETS_FORGED;
	}

	/* Build the result aside: on any failure *out keeps the table's. */
	l = *out;
	for (i = 0; i < sizeof(do_copy) / sizeof(do_copy[0]); i++)
		*(int *)((char *)&l + do_copy[i].to) = (int)w[t->idx[do_copy[i].from]];

	gil = w[t->idx[DO_INTERP_GIL]];
	locked = w[t->idx[DO_INTERP_GIL_LOCKED]];
	holder = w[t->idx[DO_INTERP_GIL_HOLDER]];
	if (locked < gil || holder < gil) {
		if (err)
			snprintf(err, errlen, "the GIL's fields lie before the GIL");
		return PY_DEBUG_OFFSETS_FORGED;
	}
	l.gil_locked = (int)(locked - gil);
	l.gil_last_holder = (int)(holder - gil);
	if (l.gil_size > 0 && (l.gil_locked + 4 > l.gil_size ||
			       l.gil_last_holder + 8 > l.gil_size)) {
		if (err)
			snprintf(err, errlen, "the GIL's fields lie past the GIL");
		return PY_DEBUG_OFFSETS_FORGED;
	}

	/* 3.13+ have no _PyCFrame: tstate->current_frame is the frame. */
	l.cframe_current_frame = -1;
	l.source = t->source;
	*out = l;
	return 0;
}
