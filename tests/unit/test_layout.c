// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The per-version layout table and the 3.13+ _Py_DebugOffsets reader.
 *
 *   gcc -Iinclude -Iuser/{base,cpython,model,output,diff,record,live,cli} tests/unit/test_layout.c user/cpython/py_layout_table.c \
 *       user/cpython/py_debug_offsets.c [user/base/remote.c] -lcmocka
 *
 * The captured blobs are handed to py_debug_offsets_read() as this very
 * process's memory (pid = getpid(), address = a copy of the blob), so the
 * real remote_read() of user/base/remote.c reads them with process_vm_readv.
 * Without user/base/remote.c the weak stub below serves the same reads.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <linux/types.h>
#include <cmocka.h>
#include "ebpfprof.h"
#include "py_layout.h"
#include "remote.h"
#include "debug_offsets_blobs.h"

/* Overridden by user/base/remote.c when that is linked in. */
__attribute__((weak)) int remote_read(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	if (pid != getpid() || !addr)
		return -1;
	memcpy(buf, (const void *)(uintptr_t)addr, len);
	return 0;
}

/* Words of _Py_DebugOffsets the corruption tests touch (same in 3.13, 3.14, 3.15). */
#define W_VERSION		1
#define W_FREE_THREADED		2
#define W_THREADS_HEAD		9	/* interpreter_state.threads_head */

static void check_offset(int off, const char *what, int minor)
{
	if (off < 0 || off >= EP_NO_OFFSET)
		fail_msg("3.%d: %s = %d", minor, what, off);
}

#define CHECK_OFF(L, f)	check_offset((L)->f, #f, (L)->minor)

static void test_every_version_has_an_entry(void **state)
{
	int minor;

	(void)state;
	for (minor = 8; minor <= 15; minor++) {
		const struct py_layout *L = py_layout_for_version(3, minor);
		int frame_end;

		assert_non_null(L);
		assert_int_equal(L->major, 3);
		assert_int_equal(L->minor, minor);
		assert_non_null(L->source);
		assert_non_null(strstr(L->source, "gen-layout.sh"));

		/* What the kernel walk and its configuration need. */
		CHECK_OFF(L, runtime_interpreters_head);
		CHECK_OFF(L, interp_threads_head);
		CHECK_OFF(L, tstate_next);
		CHECK_OFF(L, tstate_thread_id);
		CHECK_OFF(L, tstate_frame);
		CHECK_OFF(L, frame_previous);
		CHECK_OFF(L, frame_code);
		CHECK_OFF(L, frame_instr);
		CHECK_OFF(L, code_firstlineno);
		CHECK_OFF(L, gc_collecting);
		CHECK_OFF(L, gil_locked);
		CHECK_OFF(L, gil_last_holder);
		assert_true(L->gil_locked + 4 <= L->gil_size);
		assert_true(L->gil_last_holder + 8 <= L->gil_size);

		/* The symbolizer's. */
		CHECK_OFF(L, code_filename);
		CHECK_OFF(L, code_name);
		CHECK_OFF(L, code_linetable);
		CHECK_OFF(L, interp_modules);
		CHECK_OFF(L, unicode_length);
		CHECK_OFF(L, unicode_state);
		CHECK_OFF(L, bytes_size);
		CHECK_OFF(L, bytes_data);
		assert_true(L->unicode_ascii_size > L->unicode_state);
		assert_true(L->unicode_compact_size > L->unicode_ascii_size);

		/* Exactly one home for the GC state and for the GIL. */
		assert_true((L->runtime_gc >= 0) != (L->interp_gc >= 0));
		assert_int_equal(L->runtime_gc >= 0, minor == 8);
		assert_true((L->runtime_ceval_gil >= 0) != (L->interp_ceval_gil >= 0));
		assert_int_equal(L->interp_ceval_gil >= 0, minor >= 12);

		assert_int_equal(L->cframe_current_frame >= 0, minor == 11 || minor == 12);
		assert_int_equal(L->tstate_native_thread_id >= 0, minor >= 11);
		assert_int_equal(L->code_qualname >= 0, minor >= 11);

		if (minor >= 11) {
			CHECK_OFF(L, frame_owner);
			CHECK_OFF(L, code_adaptive);
			assert_int_equal(L->instr_kind, EP_INSTR_POINTER);
			assert_int_equal(L->linetable_format, PY_LINETABLE_LOCATIONS);
		} else {
			assert_int_equal(L->frame_owner, -1);
			assert_int_equal(L->code_adaptive, -1);
			assert_int_equal(L->instr_kind, minor == 10 ? EP_INSTR_LASTI_UNITS :
					 EP_INSTR_LASTI_BYTES);
			assert_int_equal(L->linetable_format, minor == 10 ? PY_LINETABLE_310 :
					 PY_LINETABLE_LNOTAB);
		}
		/* 3.12+: C-stack shims; 3.14 adds FRAME_OWNED_BY_INTERPRETER (3) below
		 * them; 3.15 drops FRAME_OWNED_BY_CSTACK and keeps 3 as the highest. */
		assert_int_equal(L->owner_skip_min, minor >= 12 ? 3 : 0);
		assert_int_equal(L->code_tag_mask, minor >= 14 ? 3 : 0);

		/* The kernel reads each frame in one go of EP_FRAME_READ_MAX. */
		frame_end = L->frame_previous + 8;
		if (L->frame_code + 8 > frame_end)
			frame_end = L->frame_code + 8;
		if (L->frame_instr + 8 > frame_end)
			frame_end = L->frame_instr + 8;
		if (L->frame_owner + 1 > frame_end)
			frame_end = L->frame_owner + 1;
		assert_true(frame_end <= EP_FRAME_READ_MAX);
	}
}

static void test_unsupported_versions(void **state)
{
	(void)state;
	assert_null(py_layout_for_version(3, 7));
	assert_null(py_layout_for_version(3, 16));
	assert_null(py_layout_for_version(2, 7));
	assert_null(py_layout_for_version(4, 0));
}

/* py_objects.c's object layouts cover exactly the versions of the main table:
 * a new version cannot be added to one and forgotten in the other. */
static void test_object_layouts_match_versions(void **state)
{
	int major, minor;

	(void)state;
	for (major = 2; major <= 4; major++) {
		for (minor = 0; minor <= 20; minor++) {
			const struct py_layout *L = py_layout_for_version(major, minor);
			const struct py_obj_layout *O = py_obj_layout_for_version(major, minor);

			assert_int_equal(L != NULL, O != NULL);
			if (!O)
				continue;
			assert_int_equal(O->minor, minor);
			assert_true(O->tp_flags > 0 && O->md_dict > 0 && O->ma_keys > 0);
			assert_true(O->dk_indices > O->dk_nentries);
			assert_true((O->dk_size >= 0) != (O->dk_log2_size >= 0));
			assert_int_equal(O->attr_kind == PY_ATTR_DICTOFFSET, minor <= 10);
		}
	}
}

static void test_supported_versions_string(void **state)
{
	char want[128] = "";
	int minor;

	(void)state;
	for (minor = 0; minor < 100; minor++) {
		if (!py_layout_for_version(3, minor))
			continue;
		snprintf(want + strlen(want), sizeof(want) - strlen(want), "%s3.%d",
			 want[0] ? ", " : "", minor);
	}
	assert_string_equal(py_supported_versions(), want);
}

/*
 * Field by field, not memcmp: struct copies need not carry the padding.
 * Every field but .source.
 */
#define LAYOUT_INT_FIELDS(X)						\
	X(major) X(minor) X(runtime_interpreters_head) X(runtime_gc)	\
	X(runtime_ceval_gil) X(interp_threads_head) X(interp_gc)	\
	X(interp_ceval_gil) X(interp_modules) X(gc_collecting)		\
	X(gil_size) X(gil_locked) X(gil_last_holder) X(tstate_next)	\
	X(tstate_thread_id) X(tstate_native_thread_id) X(tstate_frame)	\
	X(cframe_current_frame) X(frame_previous) X(frame_code)	\
	X(frame_instr) X(frame_owner) X(instr_kind) X(owner_skip_min)	\
	X(code_filename) X(code_name) X(code_qualname)			\
	X(code_firstlineno) X(code_linetable) X(code_adaptive)		\
	X(linetable_format) X(unicode_length) X(unicode_state)		\
	X(unicode_ascii_size) X(unicode_compact_size) X(bytes_size)	\
	X(bytes_data)

static void assert_same_figures(const struct py_layout *a, const struct py_layout *b)
{
#define X(f)								\
	if (a->f != b->f)						\
		fail_msg("3.%d: %s is %d, table says %d", b->minor, #f,	\
			 (int)a->f, (int)b->f);
	LAYOUT_INT_FIELDS(X)
#undef X
	assert_int_equal(a->code_tag_mask, b->code_tag_mask);
}

/* A writable, aligned copy of a blob, posing as the target's _PyRuntime. */
static uint64_t runtime[1024 / 8];

static uint64_t load(const unsigned char *blob, size_t len)
{
	assert_true(len <= sizeof(runtime));
	memcpy(runtime, blob, len);
	return (uintptr_t)runtime;
}

/*
 * Every figure the debug offsets provide must equal the header-generated
 * table's, and the rest must be the table's untouched: in short, the whole
 * layout equals the table entry but for .source.
 */
static void check_blob(const unsigned char *blob, size_t len, int minor)
{
	const struct py_layout *T = py_layout_for_version(3, minor);
	struct py_layout l = *T;
	uint64_t addr = load(blob, len);

	assert_int_equal(py_debug_offsets_read(getpid(), addr, &l), 0);
	assert_non_null(l.source);
	assert_ptr_not_equal(l.source, T->source);
	assert_non_null(strstr(l.source, "_Py_DebugOffsets"));
	assert_same_figures(&l, T);
}

static void test_debug_offsets_313(void **state)
{
	(void)state;
	check_blob(blob_313, sizeof(blob_313), 13);
	check_blob(blob_313_trixie, sizeof(blob_313_trixie), 13);
}

static void test_debug_offsets_314(void **state)
{
	(void)state;
	check_blob(blob_314, sizeof(blob_314), 14);
	check_blob(blob_314_dbg, sizeof(blob_314_dbg), 14);
}

/* 3.15 moved thread_id and what follows it in the thread state section. */
static void test_debug_offsets_315(void **state)
{
	(void)state;
	check_blob(blob_315, sizeof(blob_315), 15);
	check_blob(blob_315_dbg, sizeof(blob_315_dbg), 15);
}

/* On every rejection the caller's layout is left as it was. */
static void expect_rejected_as(uint64_t addr, int minor, int rc)
{
	const struct py_layout *T = py_layout_for_version(3, minor);
	struct py_layout l = *T;

	assert_int_equal(py_debug_offsets_read(getpid(), addr, &l), rc);
	assert_ptr_equal(l.source, T->source);
	assert_same_figures(&l, T);
}

static void expect_rejected(uint64_t addr, int minor)
{
	expect_rejected_as(addr, minor, -1);
}

static void test_rejects_bad_cookie(void **state)
{
	uint64_t addr;

	(void)state;
	addr = load(blob_313, sizeof(blob_313));
	((unsigned char *)runtime)[1] ^= 0x20;		/* "xDebugpy" */
	expect_rejected(addr, 13);
	addr = load(blob_314, sizeof(blob_314));
	memset(runtime, 0, 8);
	expect_rejected(addr, 14);
}

static void test_rejects_version_mismatch(void **state)
{
	uint64_t addr;

	(void)state;
	/* A 3.14 runtime must not be read with 3.13's index table, nor back. */
	expect_rejected(load(blob_314, sizeof(blob_314)), 13);
	expect_rejected(load(blob_313, sizeof(blob_313)), 14);
	addr = load(blob_313, sizeof(blob_313));
	runtime[W_VERSION] = 0x030c07f0;
	expect_rejected(addr, 13);
}

static void test_rejects_free_threaded(void **state)
{
	uint64_t addr;

	(void)state;
	addr = load(blob_314, sizeof(blob_314));
	runtime[W_FREE_THREADED] = 1;
	expect_rejected(addr, 14);
}

static void test_rejects_absurd_offsets(void **state)
{
	uint64_t addr;

	(void)state;
	/* cookie and version right, offsets not: forged, not just unusable */
	addr = load(blob_313, sizeof(blob_313));
	runtime[W_THREADS_HEAD] = 64 * 1024 + 8;
	expect_rejected_as(addr, 13, PY_DEBUG_OFFSETS_FORGED);
	addr = load(blob_314, sizeof(blob_314));
	runtime[W_THREADS_HEAD] = ~0ull;
	expect_rejected_as(addr, 14, PY_DEBUG_OFFSETS_FORGED);
}

/* Issue 9 item 2: offsets under 0xffff that steer a read out of the buffer
 * it indexes (a frame is EP_FRAME_READ_MAX bytes, a str header 64). */
static void test_rejects_offsets_past_their_buffer(void **state)
{
	static const struct { int word; uint64_t value; } forged[] = {
		{ 29, 0xfffc },		/* frame.previous: wrapped the 16-bit read size */
		{ 29, EP_FRAME_READ_MAX - 7 },
		{ 33, EP_FRAME_READ_MAX },	/* frame.owner */
		{ 69, 0xff00 },		/* unicode.length */
		{ 70, 4096 },		/* unicode.asciiobject_size */
		{ 68, 40 },		/* unicode.state at the characters */
		{ 65, 0xfff8 },		/* bytes.ob_size */
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(forged) / sizeof(forged[0]); i++) {
		uint64_t addr = load(blob_313, sizeof(blob_313));

		runtime[forged[i].word] = forged[i].value;
		expect_rejected_as(addr, 13, PY_DEBUG_OFFSETS_FORGED);
	}
}

static void test_rejects_unreadable_and_old(void **state)
{
	(void)state;
	expect_rejected(0, 13);
	/* Before 3.13 there are no debug offsets to read. */
	expect_rejected(load(blob_313, sizeof(blob_313)), 12);
	expect_rejected(load(blob_313, sizeof(blob_313)), 8);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_version_has_an_entry),
		cmocka_unit_test(test_unsupported_versions),
		cmocka_unit_test(test_object_layouts_match_versions),
		cmocka_unit_test(test_supported_versions_string),
		cmocka_unit_test(test_debug_offsets_313),
		cmocka_unit_test(test_debug_offsets_314),
		cmocka_unit_test(test_debug_offsets_315),
		cmocka_unit_test(test_rejects_bad_cookie),
		cmocka_unit_test(test_rejects_version_mismatch),
		cmocka_unit_test(test_rejects_free_threaded),
		cmocka_unit_test(test_rejects_absurd_offsets),
		cmocka_unit_test(test_rejects_unreadable_and_old),
		cmocka_unit_test(test_rejects_offsets_past_their_buffer),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
