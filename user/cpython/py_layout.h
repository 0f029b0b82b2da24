/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Where things are inside one CPython version's structures. Tables for
 * 3.8 to 3.15 live as data in py_layout_table.c (each entry says where its
 * figures came from); 3.13+ layouts are read from the target's own
 * _Py_DebugOffsets (py_debug_offsets.c) and fall back to the table.
 * A field that a version lacks is -1. Supporting a new version means an
 * entry in each of py_layout_table.c's two tables (test_layout checks).
 */
#ifndef EP_PY_LAYOUT_H
#define EP_PY_LAYOUT_H
#include <stdint.h>
#include <sys/types.h>
#include "py_linetable.h"

struct py_layout {
	int major, minor;		/* 3, 11 */
	const char *source;		/* where the figures came from */

	/* _PyRuntimeState */
	int runtime_interpreters_head;
	int runtime_gc;			/* 3.8: the GC state lives in the runtime */
	int runtime_ceval_gil;		/* up to 3.11: the GIL struct, inline */

	/* PyInterpreterState */
	int interp_threads_head;
	int interp_gc;			/* 3.9+: offset of struct _gc_runtime_state */
	int interp_ceval_gil;		/* 3.12+: struct _gil_runtime_state * */
	int interp_modules;		/* sys.modules (PyObject *) */

	/* struct _gc_runtime_state */
	int gc_collecting;		/* int */

	/* struct _gil_runtime_state */
	int gil_size;
	int gil_locked;			/* int (atomic) */
	int gil_last_holder;		/* PyThreadState * (atomic) */

	/* PyThreadState */
	int tstate_next;
	int tstate_thread_id;		/* unsigned long: pthread_self() */
	int tstate_native_thread_id;	/* 3.11+ */
	int tstate_frame;		/* ->frame (<=3.10), ->cframe (3.11, 3.12), ->current_frame (3.13+) */
	int cframe_current_frame;	/* 3.11, 3.12: _PyCFrame.current_frame; else -1 */

	/* PyFrameObject (<=3.10) or _PyInterpreterFrame (3.11+) */
	int frame_previous;		/* f_back / previous */
	int frame_code;			/* f_code / f_executable */
	int frame_globals;		/* f_globals: tells apart code objects at one address */
	int frame_instr;		/* f_lasti / prev_instr / instr_ptr */
	int frame_owner;		/* 3.11+ */
	int frame_localsplus;		/* --label: the fast locals, from the debug offsets
					 * (3.13+); 0: not known here (the generated
					 * tables below do not carry it: py_obj_layout's) */
	int instr_kind;			/* enum ep_instr_kind */
	int owner_skip_min;		/* 3.12+: owners >= this are C-stack shims; 0 none */
	uint64_t code_tag_mask;		/* 3.14: tag bits of _PyStackRef */

	/* PyCodeObject */
	int code_filename;
	int code_name;
	int code_qualname;		/* 3.11+ */
	int code_firstlineno;
	int code_linetable;		/* co_lnotab (3.8, 3.9) or co_linetable */
	int code_adaptive;		/* co_code_adaptive, 3.11+ */
	enum py_linetable_format linetable_format;

	/* str and bytes objects */
	int unicode_length;		/* PyASCIIObject.length */
	int unicode_state;		/* PyASCIIObject.state */
	int unicode_ascii_size;		/* sizeof(PyASCIIObject): data of compact ASCII */
	int unicode_compact_size;	/* sizeof(PyCompactUnicodeObject): data of compact non-ASCII */
	int bytes_size;			/* PyVarObject.ob_size */
	int bytes_data;			/* offsetof(PyBytesObject, ob_sval) */
};

/* The table entry for 3.minor, or NULL if that version is not supported. */
const struct py_layout *py_layout_for_version(int major, int minor);

/*
 * How an instance keeps its attributes: in a dict, or (3.11+, until some
 * code asks for __dict__) in a bare values array keyed by the class's
 * shared keys, ht_cached_keys.
 */
enum py_attr_kind {
	PY_ATTR_DICTOFFSET,	/* dict at obj + type->tp_dictoffset */
	PY_ATTR_VALUES_PTR,	/* values at obj + managed_values; dict at obj + managed_dict */
	PY_ATTR_DICT_OR_VALUES,	/* obj + managed_dict: a dict, or values - 1 (low bit set) */
	PY_ATTR_INLINE_VALUES,	/* values at obj + tp_basicsize; dict at obj + managed_dict */
};

/*
 * The object layouts struct py_layout does not cover: types, modules,
 * dicts and ints, for reading thread names (py_threads.c). Offsets in
 * bytes; -1 where a version lacks the field. Written by hand, in
 * py_layout_table.c after the generated struct py_layout entries.
 */
struct py_obj_layout {
	int minor;
	/* PyTypeObject, PyHeapTypeObject */
	int tp_basicsize, tp_flags, tp_dictoffset, ht_cached_keys;
	/* PyModuleObject */
	int md_dict;
	/* PyDictObject */
	int ma_keys, ma_values;
	/* PyDictKeysObject: dk_size (Py_ssize_t) up to 3.10, log2 bytes after */
	int dk_size, dk_log2_size, dk_log2_index_bytes, dk_kind;
	int dk_nentries, dk_indices;
	/* PyDictKeyEntry; PyDictUnicodeEntry (3.11+, when dk_kind != general) */
	int entry_size, entry_key, entry_value;
	int uentry_size, uentry_key, uentry_value;
	/* PyDictValues (a bare PyObject *[] up to 3.10) */
	int values_array, values_capacity, values_valid;
	/* instance attributes */
	enum py_attr_kind attr_kind;
	int managed_dict, managed_values;
	/* PyLongObject: ob_size (sign, digit count) or lv_tag (3.12+), digits */
	int long_size, long_digits, long_tagged;
	/* the frame's fast locals, arguments first: PyFrameObject.f_localsplus
	 * (<= 3.10), _PyInterpreterFrame.localsplus (3.11+); -1: not known */
	int frame_localsplus;
	/* PyTupleObject.ob_item: 3.14 caches the hash (ob_hash) before it */
	int tuple_items;
};

/* The object layouts of 3.minor, or NULL if that version is not supported. */
const struct py_obj_layout *py_obj_layout_for_version(int major, int minor);

/* "3.8, 3.9, 3.10, 3.11, 3.12, 3.13, 3.14, 3.15" */
const char *py_supported_versions(void);

/* py_debug_offsets_read(): the blob has the cookie and our version but
 * offsets no CPython has: the target lies and is not to be read. */
#define PY_DEBUG_OFFSETS_FORGED	(-2)

/*
 * 3.13+: fills *out from the _Py_DebugOffsets at the start of the target's
 * _PyRuntime (starting from the table entry *out already holds, for fields
 * the debug offsets lack). Checks the "xdebugpy" cookie, that the version
 * recorded there matches and that every offset keeps the reads it steers
 * inside their buffers. Returns 0, -1 if they cannot be used (*out keeps
 * the table's figures), or PY_DEBUG_OFFSETS_FORGED.
 */
int py_debug_offsets_read(pid_t pid, uint64_t runtime_addr, struct py_layout *out);
/* The same on a copy of the blob (len bytes); err (may be NULL) says which
 * offset is forged. For the fuzzer and py_debug_offsets_read(). */
int py_debug_offsets_parse(const void *blob, size_t len, struct py_layout *out,
			   char *err, size_t errlen);

#endif
