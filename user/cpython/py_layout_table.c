// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Per-version CPython layouts, as plain data. Each struct py_layout below is,
 * verbatim, the output of "scripts/gen-layout.sh --all", which compiles
 * scripts/layout_probe.c against each version's headers, internal ones
 * included, and prints offsetof/sizeof of the real structs for x86-64;
 * .source names the header set. Only the comments between the structs are
 * written by hand. Regenerate rather than edit the figures, and run
 * "scripts/gen-layout.sh --compare" to check that the other header sets
 * (Debian release and Py_DEBUG builds, other patch releases) still agree.
 * The object layouts of the thread-name reader (struct py_obj_layout) come
 * after them, written by hand.
 *
 * Free-threaded builds (Py_GIL_DISABLED, "python3.13t") are not supported:
 * their objects, thread states and frames are laid out differently and
 * there is no single GIL to watch. The probe refuses to build against
 * their headers, and there is no entry for them here.
 */
#include <stddef.h>
#include <linux/types.h>	/* ebpfprof.h uses the kernel's fixed-width types */
#include "ebpfprof.h"
#include "py_layout.h"

/*
 * 3.8: the GC state and the GIL both live in _PyRuntime (runtime_gc,
 * runtime_ceval_gil); f_lasti counts bytes.
 */
static const struct py_layout py_3_8 = {
	/* PY_VERSION 3.8.18 */
	.major = 3,
	.minor = 8,
	.source = "gen-layout.sh on pyenv 3.8.18 headers",
	.runtime_interpreters_head = 32,
	.runtime_gc = 344,
	.runtime_ceval_gil = 1152,
	.interp_threads_head = 8,
	.interp_gc = -1,
	.interp_ceval_gil = -1,
	.interp_modules = 56,
	.gc_collecting = 200,
	.gil_size = 208,
	.gil_locked = 16,
	.gil_last_holder = 8,
	.tstate_next = 8,
	.tstate_thread_id = 176,
	.tstate_native_thread_id = -1,
	.tstate_frame = 24,
	.cframe_current_frame = -1,
	.frame_previous = 24,
	.frame_code = 32,
	.frame_globals = 48,
	.frame_instr = 104,
	.frame_owner = -1,
	.instr_kind = EP_INSTR_LASTI_BYTES,
	.owner_skip_min = 0,
	.code_tag_mask = 0x0,
	.code_filename = 104,
	.code_name = 112,
	.code_qualname = -1,
	.code_firstlineno = 40,
	.code_linetable = 120,
	.code_adaptive = -1,
	.linetable_format = PY_LINETABLE_LNOTAB,
	.unicode_length = 16,
	.unicode_state = 32,
	.unicode_ascii_size = 48,
	.unicode_compact_size = 72,
	.bytes_size = 16,
	.bytes_data = 32,
};

/*
 * 3.9: the GC state moved into the interpreter. Debian bullseye's
 * python3.9-dev 3.9.2 and its Py_DEBUG build (python3.9-dbg) give the same
 * figures as pyenv 3.9.18 (gen-layout.sh --compare).
 */
static const struct py_layout py_3_9 = {
	/* PY_VERSION 3.9.18 */
	.major = 3,
	.minor = 9,
	.source = "gen-layout.sh on pyenv 3.9.18 headers",
	.runtime_interpreters_head = 32,
	.runtime_gc = -1,
	.runtime_ceval_gil = 352,
	.interp_threads_head = 8,
	.interp_gc = 616,
	.interp_ceval_gil = -1,
	.interp_modules = 856,
	.gc_collecting = 200,
	.gil_size = 208,
	.gil_locked = 16,
	.gil_last_holder = 8,
	.tstate_next = 8,
	.tstate_thread_id = 176,
	.tstate_native_thread_id = -1,
	.tstate_frame = 24,
	.cframe_current_frame = -1,
	.frame_previous = 24,
	.frame_code = 32,
	.frame_globals = 48,
	.frame_instr = 104,
	.frame_owner = -1,
	.instr_kind = EP_INSTR_LASTI_BYTES,
	.owner_skip_min = 0,
	.code_tag_mask = 0x0,
	.code_filename = 104,
	.code_name = 112,
	.code_qualname = -1,
	.code_firstlineno = 40,
	.code_linetable = 120,
	.code_adaptive = -1,
	.linetable_format = PY_LINETABLE_LNOTAB,
	.unicode_length = 16,
	.unicode_state = 32,
	.unicode_ascii_size = 48,
	.unicode_compact_size = 72,
	.bytes_size = 16,
	.bytes_data = 32,
};

/* 3.10: f_lasti counts 2-byte code units; co_linetable replaces co_lnotab. */
static const struct py_layout py_3_10 = {
	/* PY_VERSION 3.10.13 */
	.major = 3,
	.minor = 10,
	.source = "gen-layout.sh on pyenv 3.10.13 headers",
	.runtime_interpreters_head = 32,
	.runtime_gc = -1,
	.runtime_ceval_gil = 352,
	.interp_threads_head = 8,
	.interp_gc = 616,
	.interp_ceval_gil = -1,
	.interp_modules = 856,
	.gc_collecting = 200,
	.gil_size = 208,
	.gil_locked = 16,
	.gil_last_holder = 8,
	.tstate_next = 8,
	.tstate_thread_id = 176,
	.tstate_native_thread_id = -1,
	.tstate_frame = 24,
	.cframe_current_frame = -1,
	.frame_previous = 24,
	.frame_code = 32,
	.frame_globals = 48,
	.frame_instr = 96,
	.frame_owner = -1,
	.instr_kind = EP_INSTR_LASTI_UNITS,
	.owner_skip_min = 0,
	.code_tag_mask = 0x0,
	.code_filename = 104,
	.code_name = 112,
	.code_qualname = -1,
	.code_firstlineno = 40,
	.code_linetable = 120,
	.code_adaptive = -1,
	.linetable_format = PY_LINETABLE_310,
	.unicode_length = 16,
	.unicode_state = 32,
	.unicode_ascii_size = 48,
	.unicode_compact_size = 72,
	.bytes_size = 16,
	.bytes_data = 32,
};

/*
 * 3.11: _PyInterpreterFrame, reached through tstate->cframe. Debian 12's
 * python3.11-dev 3.11.2, its Py_DEBUG build (python3.11-dbg, the
 * /usr/include/python3.11d pyconfig.h) and pyenv 3.11.7 all give the same
 * figures: Py_DEBUG no longer implies Py_TRACE_REFS, so the object header
 * and every struct read here keep their release layout, and nothing moved
 * between 3.11.2 and 3.11.7.
 */
static const struct py_layout py_3_11 = {
	/* PY_VERSION 3.11.7 */
	.major = 3,
	.minor = 11,
	.source = "gen-layout.sh on pyenv 3.11.7 headers",
	.runtime_interpreters_head = 40,
	.runtime_gc = -1,
	.runtime_ceval_gil = 360,
	.interp_threads_head = 16,
	.interp_gc = 648,
	.interp_ceval_gil = -1,
	.interp_modules = 888,
	.gc_collecting = 200,
	.gil_size = 208,
	.gil_locked = 16,
	.gil_last_holder = 8,
	.tstate_next = 8,
	.tstate_thread_id = 152,
	.tstate_native_thread_id = 160,
	.tstate_frame = 56,
	.cframe_current_frame = 8,
	.frame_previous = 48,
	.frame_code = 32,
	.frame_globals = 8,
	.frame_instr = 56,
	.frame_owner = 69,
	.instr_kind = EP_INSTR_POINTER,
	.owner_skip_min = 0,
	.code_tag_mask = 0x0,
	.code_filename = 112,
	.code_name = 120,
	.code_qualname = 128,
	.code_firstlineno = 72,
	.code_linetable = 136,
	.code_adaptive = 184,
	.linetable_format = PY_LINETABLE_LOCATIONS,
	.unicode_length = 16,
	.unicode_state = 32,
	.unicode_ascii_size = 48,
	.unicode_compact_size = 72,
	.bytes_size = 16,
	.bytes_data = 32,
};

/*
 * 3.12: the GIL is behind interp->ceval.gil; sys.modules moved to
 * interp->imports; frames owned by the C stack (owner 3) are shims.
 */
static const struct py_layout py_3_12 = {
	/* PY_VERSION 3.12.1 */
	.major = 3,
	.minor = 12,
	.source = "gen-layout.sh on pyenv 3.12.1 headers",
	.runtime_interpreters_head = 40,
	.runtime_gc = -1,
	.runtime_ceval_gil = -1,
	.interp_threads_head = 72,
	.interp_gc = 112,
	.interp_ceval_gil = 384,
	.interp_modules = 944,
	.gc_collecting = 200,
	.gil_size = 208,
	.gil_locked = 16,
	.gil_last_holder = 8,
	.tstate_next = 8,
	.tstate_thread_id = 136,
	.tstate_native_thread_id = 144,
	.tstate_frame = 56,
	.cframe_current_frame = 0,
	.frame_previous = 8,
	.frame_code = 0,
	.frame_globals = 24,
	.frame_instr = 56,
	.frame_owner = 70,
	.instr_kind = EP_INSTR_POINTER,
	.owner_skip_min = 3,
	.code_tag_mask = 0x0,
	.code_filename = 112,
	.code_name = 120,
	.code_qualname = 128,
	.code_firstlineno = 68,
	.code_linetable = 136,
	.code_adaptive = 192,
	.linetable_format = PY_LINETABLE_LOCATIONS,
	.unicode_length = 16,
	.unicode_state = 32,
	.unicode_ascii_size = 40,
	.unicode_compact_size = 56,
	.bytes_size = 16,
	.bytes_data = 32,
};

/*
 * 3.13: tstate->current_frame, f_executable, instr_ptr. Debian trixie's
 * python3.13-dev 3.13.5 and its Py_DEBUG build give the same figures as
 * pyenv 3.13.0. At run time py_debug_offsets_read() overrides most of this
 * entry from the target's own _Py_DebugOffsets.
 */
static const struct py_layout py_3_13 = {
	/* PY_VERSION 3.13.0 */
	.major = 3,
	.minor = 13,
	.source = "gen-layout.sh on pyenv 3.13.0 headers",
	.runtime_interpreters_head = 632,
	.runtime_gc = -1,
	.runtime_ceval_gil = -1,
	.interp_threads_head = 7344,
	.interp_gc = 7400,
	.interp_ceval_gil = 16,
	.interp_modules = 7656,
	.gc_collecting = 200,
	.gil_size = 208,
	.gil_locked = 16,
	.gil_last_holder = 8,
	.tstate_next = 8,
	.tstate_thread_id = 152,
	.tstate_native_thread_id = 160,
	.tstate_frame = 72,
	.cframe_current_frame = -1,
	.frame_previous = 8,
	.frame_code = 0,
	.frame_globals = 24,
	.frame_instr = 56,
	.frame_owner = 70,
	.instr_kind = EP_INSTR_POINTER,
	.owner_skip_min = 3,
	.code_tag_mask = 0x0,
	.code_filename = 112,
	.code_name = 120,
	.code_qualname = 128,
	.code_firstlineno = 68,
	.code_linetable = 136,
	.code_adaptive = 200,
	.linetable_format = PY_LINETABLE_LOCATIONS,
	.unicode_length = 16,
	.unicode_state = 32,
	.unicode_ascii_size = 40,
	.unicode_compact_size = 56,
	.bytes_size = 16,
	.bytes_data = 32,
};

/*
 * 3.14: f_executable is a _PyStackRef whose low two bits (Py_TAG_BITS in
 * pycore_stackref.h) are tags; FRAME_OWNED_BY_INTERPRETER (3) was added
 * below FRAME_OWNED_BY_CSTACK (4) and both are shims, as the header's own
 * _PyFrame_IsIncomplete() has it. The owner byte moved to 74 and
 * gc.collecting to 192. Debian sid's Py_DEBUG build (python3.14-dbg) gives
 * the same figures. Overridden at run time by _Py_DebugOffsets as for 3.13.
 */
static const struct py_layout py_3_14 = {
	/* PY_VERSION 3.14.10 */
	.major = 3,
	.minor = 14,
	.source = "gen-layout.sh on Debian sid python3.14-dev 3.14.10 headers",
	.runtime_interpreters_head = 808,
	.runtime_gc = -1,
	.runtime_ceval_gil = -1,
	.interp_threads_head = 7344,
	.interp_gc = 7408,
	.interp_ceval_gil = 16,
	.interp_modules = 7688,
	.gc_collecting = 192,
	.gil_size = 208,
	.gil_locked = 16,
	.gil_last_holder = 8,
	.tstate_next = 8,
	.tstate_thread_id = 152,
	.tstate_native_thread_id = 160,
	.tstate_frame = 72,
	.cframe_current_frame = -1,
	.frame_previous = 8,
	.frame_code = 0,
	.frame_globals = 24,
	.frame_instr = 56,
	.frame_owner = 74,
	.instr_kind = EP_INSTR_POINTER,
	.owner_skip_min = 3,
	.code_tag_mask = 0x3,
	.code_filename = 112,
	.code_name = 120,
	.code_qualname = 128,
	.code_firstlineno = 68,
	.code_linetable = 136,
	.code_adaptive = 208,
	.linetable_format = PY_LINETABLE_LOCATIONS,
	.unicode_length = 16,
	.unicode_state = 32,
	.unicode_ascii_size = 40,
	.unicode_compact_size = 56,
	.bytes_size = 16,
	.bytes_data = 32,
};

/*
 * 3.15: FRAME_OWNED_BY_CSTACK is gone and FRAME_OWNED_BY_INTERPRETER (3)
 * is the highest owner (a shim, as _PyFrame_IsIncomplete() has it);
 * thread_id moved to 176 (last_profiled_frame was added before it) and
 * gc.collecting to 112; the frame walk reads the same fields at the same
 * places as on 3.14. Debian sid's Py_DEBUG build (python3.15-dbg) gives
 * the same figures. Overridden at run time by _Py_DebugOffsets as for 3.13.
 */
static const struct py_layout py_3_15 = {
	/* PY_VERSION 3.15.2 */
	.major = 3,
	.minor = 15,
	.source = "gen-layout.sh on Debian sid python3.15-dev 3.15.2 headers",
	.runtime_interpreters_head = 936,
	.runtime_gc = -1,
	.runtime_ceval_gil = -1,
	.interp_threads_head = 7336,
	.interp_gc = 7400,
	.interp_ceval_gil = 16,
	.interp_modules = 7592,
	.gc_collecting = 112,
	.gil_size = 208,
	.gil_locked = 16,
	.gil_last_holder = 8,
	.tstate_next = 8,
	.tstate_thread_id = 176,
	.tstate_native_thread_id = 184,
	.tstate_frame = 72,
	.cframe_current_frame = -1,
	.frame_previous = 8,
	.frame_code = 0,
	.frame_globals = 24,
	.frame_instr = 56,
	.frame_owner = 74,
	.instr_kind = EP_INSTR_POINTER,
	.owner_skip_min = 3,
	.code_tag_mask = 0x3,
	.code_filename = 112,
	.code_name = 120,
	.code_qualname = 128,
	.code_firstlineno = 68,
	.code_linetable = 136,
	.code_adaptive = 208,
	.linetable_format = PY_LINETABLE_LOCATIONS,
	.unicode_length = 16,
	.unicode_state = 32,
	.unicode_ascii_size = 40,
	.unicode_compact_size = 56,
	.bytes_size = 16,
	.bytes_data = 32,
};

static const struct py_layout *const layouts[] = {
	&py_3_8, &py_3_9, &py_3_10, &py_3_11, &py_3_12, &py_3_13, &py_3_14,
	&py_3_15,
};

const struct py_layout *py_layout_for_version(int major, int minor)
{
	size_t i;

	for (i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++)
		if (layouts[i]->major == major && layouts[i]->minor == minor)
			return layouts[i];
	return NULL;
}

/*
 * The object layouts the thread-name reader needs (struct py_obj_layout),
 * by hand, not generated: taken with offsetof/sizeof from each header set
 * (-DPy_BUILD_CORE, internal headers included), except where a struct is
 * private to a .c file and not installed (noted in the entry). Kept in
 * step with layouts[] (the unit test checks it).
 */
static const struct py_obj_layout obj_layouts[] = {
	/*
	 * pyenv 3.8.18 headers. PyDictKeysObject and PyModuleObject are
	 * private there (Objects/dict-common.h, Objects/moduleobject.c): their
	 * figures were checked against live 3.8.18 objects with ctypes.
	 */
	{ .minor = 8, .tp_basicsize = 32, .tp_flags = 168, .tp_dictoffset = 288,
	  .ht_cached_keys = 872, .md_dict = 16, .ma_keys = 32, .ma_values = 40,
	  .dk_size = 8, .dk_log2_size = -1, .dk_log2_index_bytes = -1, .dk_kind = -1,
	  .dk_nentries = 32, .dk_indices = 40,
	  .entry_size = 24, .entry_key = 8, .entry_value = 16,
	  .uentry_size = -1, .uentry_key = -1, .uentry_value = -1,
	  .values_array = 0, .values_capacity = -1, .values_valid = -1,
	  .attr_kind = PY_ATTR_DICTOFFSET, .managed_dict = -1, .managed_values = -1,
	  .long_size = 16, .long_digits = 24, .long_tagged = 0,
	  .frame_localsplus = 360,
	  .tuple_items = 24 },
	/* pyenv 3.9.18 headers; dict keys and module as for 3.8 (ctypes) */
	{ .minor = 9, .tp_basicsize = 32, .tp_flags = 168, .tp_dictoffset = 288,
	  .ht_cached_keys = 864, .md_dict = 16, .ma_keys = 32, .ma_values = 40,
	  .dk_size = 8, .dk_log2_size = -1, .dk_log2_index_bytes = -1, .dk_kind = -1,
	  .dk_nentries = 32, .dk_indices = 40,
	  .entry_size = 24, .entry_key = 8, .entry_value = 16,
	  .uentry_size = -1, .uentry_key = -1, .uentry_value = -1,
	  .values_array = 0, .values_capacity = -1, .values_valid = -1,
	  .attr_kind = PY_ATTR_DICTOFFSET, .managed_dict = -1, .managed_values = -1,
	  .long_size = 16, .long_digits = 24, .long_tagged = 0,
	  .frame_localsplus = 360,
	  .tuple_items = 24 },
	/* pyenv 3.10.13 headers; dict keys as for 3.8 (ctypes) */
	{ .minor = 10, .tp_basicsize = 32, .tp_flags = 168, .tp_dictoffset = 288,
	  .ht_cached_keys = 872, .md_dict = 16, .ma_keys = 32, .ma_values = 40,
	  .dk_size = 8, .dk_log2_size = -1, .dk_log2_index_bytes = -1, .dk_kind = -1,
	  .dk_nentries = 32, .dk_indices = 40,
	  .entry_size = 24, .entry_key = 8, .entry_value = 16,
	  .uentry_size = -1, .uentry_key = -1, .uentry_value = -1,
	  .values_array = 0, .values_capacity = -1, .values_valid = -1,
	  .attr_kind = PY_ATTR_DICTOFFSET, .managed_dict = -1, .managed_values = -1,
	  .long_size = 16, .long_digits = 24, .long_tagged = 0,
	  .frame_localsplus = 352,
	  .tuple_items = 24 },
	/* pyenv 3.11.7 headers (Debian 12 3.11.2 and 3.11.2 Py_DEBUG agree) */
	{ .minor = 11, .tp_basicsize = 32, .tp_flags = 168, .tp_dictoffset = 288,
	  .ht_cached_keys = 872, .md_dict = 16, .ma_keys = 32, .ma_values = 40,
	  .dk_size = -1, .dk_log2_size = 8, .dk_log2_index_bytes = 9, .dk_kind = 10,
	  .dk_nentries = 24, .dk_indices = 32,
	  .entry_size = 24, .entry_key = 8, .entry_value = 16,
	  .uentry_size = 16, .uentry_key = 0, .uentry_value = 8,
	  .values_array = 0, .values_capacity = -1, .values_valid = -1,
	  .attr_kind = PY_ATTR_VALUES_PTR, .managed_dict = -24, .managed_values = -32,
	  .long_size = 16, .long_digits = 24, .long_tagged = 0,
	  .frame_localsplus = 72,
	  .tuple_items = 24 },
	/* pyenv 3.12.1 headers */
	{ .minor = 12, .tp_basicsize = 32, .tp_flags = 168, .tp_dictoffset = 288,
	  .ht_cached_keys = 880, .md_dict = 16, .ma_keys = 32, .ma_values = 40,
	  .dk_size = -1, .dk_log2_size = 8, .dk_log2_index_bytes = 9, .dk_kind = 10,
	  .dk_nentries = 24, .dk_indices = 32,
	  .entry_size = 24, .entry_key = 8, .entry_value = 16,
	  .uentry_size = 16, .uentry_key = 0, .uentry_value = 8,
	  .values_array = 0, .values_capacity = -1, .values_valid = -1,
	  .attr_kind = PY_ATTR_DICT_OR_VALUES, .managed_dict = -24, .managed_values = -1,
	  .long_size = 16, .long_digits = 24, .long_tagged = 1,
	  .frame_localsplus = 72,
	  .tuple_items = 24 },
	/* pyenv 3.13.0 headers */
	{ .minor = 13, .tp_basicsize = 32, .tp_flags = 168, .tp_dictoffset = 288,
	  .ht_cached_keys = 880, .md_dict = 16, .ma_keys = 32, .ma_values = 40,
	  .dk_size = -1, .dk_log2_size = 8, .dk_log2_index_bytes = 9, .dk_kind = 10,
	  .dk_nentries = 24, .dk_indices = 32,
	  .entry_size = 24, .entry_key = 8, .entry_value = 16,
	  .uentry_size = 16, .uentry_key = 0, .uentry_value = 8,
	  .values_array = 8, .values_capacity = 0, .values_valid = 3,
	  .attr_kind = PY_ATTR_INLINE_VALUES, .managed_dict = -24, .managed_values = -1,
	  .long_size = 16, .long_digits = 24, .long_tagged = 1,
	  .frame_localsplus = 72,
	  .tuple_items = 24 },
	/* Debian sid python3.14-dev 3.14.10 headers (its Py_DEBUG set agrees) */
	{ .minor = 14, .tp_basicsize = 32, .tp_flags = 168, .tp_dictoffset = 288,
	  .ht_cached_keys = 880, .md_dict = 16, .ma_keys = 32, .ma_values = 40,
	  .dk_size = -1, .dk_log2_size = 8, .dk_log2_index_bytes = 9, .dk_kind = 10,
	  .dk_nentries = 24, .dk_indices = 32,
	  .entry_size = 24, .entry_key = 8, .entry_value = 16,
	  .uentry_size = 16, .uentry_key = 0, .uentry_value = 8,
	  .values_array = 8, .values_capacity = 0, .values_valid = 3,
	  .attr_kind = PY_ATTR_INLINE_VALUES, .managed_dict = -24, .managed_values = -1,
	  .long_size = 16, .long_digits = 24, .long_tagged = 1,
	  .frame_localsplus = -1,
	  .tuple_items = 32 },
	/* Debian sid python3.15-dev 3.15.2 headers (its Py_DEBUG set agrees):
	 * as 3.14 but for ht_cached_keys */
	{ .minor = 15, .tp_basicsize = 32, .tp_flags = 168, .tp_dictoffset = 288,
	  .ht_cached_keys = 888, .md_dict = 16, .ma_keys = 32, .ma_values = 40,
	  .dk_size = -1, .dk_log2_size = 8, .dk_log2_index_bytes = 9, .dk_kind = 10,
	  .dk_nentries = 24, .dk_indices = 32,
	  .entry_size = 24, .entry_key = 8, .entry_value = 16,
	  .uentry_size = 16, .uentry_key = 0, .uentry_value = 8,
	  .values_array = 8, .values_capacity = 0, .values_valid = 3,
	  .attr_kind = PY_ATTR_INLINE_VALUES, .managed_dict = -24, .managed_values = -1,
	  .long_size = 16, .long_digits = 24, .long_tagged = 1,
	  .frame_localsplus = -1,
	  .tuple_items = 32 },
};

const struct py_obj_layout *py_obj_layout_for_version(int major, int minor)
{
	size_t i;

	for (i = 0; major == 3 && i < sizeof(obj_layouts) / sizeof(obj_layouts[0]); i++)
		if (obj_layouts[i].minor == minor)
			return &obj_layouts[i];
	return NULL;
}

/* Kept in step with layouts[] (the unit test checks it). */
const char *py_supported_versions(void)
{
	return "3.8, 3.9, 3.10, 3.11, 3.12, 3.13, 3.14, 3.15";
}
