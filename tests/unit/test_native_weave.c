// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* native_weave: Python frames in place of the eval loop's C frames (--native),
 * and .eh_frame_hdr's search table. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "eh_frame_hdr.h"
#include "native_weave.h"

/* ids: Python frames 1xx, native 2xx; kinds F(oreign), I(nterpreter), E(val) */
#define F(id) { id, NATIVE_FOREIGN }
#define I(id) { id, NATIVE_INTERP }
#define E(id) { id, NATIVE_EVAL }
#define A(id) { id, NATIVE_ANON }

static void check(const uint32_t *got, uint32_t n, const uint32_t *want, uint32_t nwant)
{
	assert_int_equal(n, nwant);
	assert_memory_equal(got, want, nwant * sizeof(*want));
}

/* 3.11+: one eval call ran <module>, main, plan_route (plan_route innermost);
 * a C call from plan_route into an extension: the interpreter's plumbing
 * around it and below the eval call (main, Py_RunMain) is left out */
static void one_eval_call_runs_several_frames(void **state)
{
	uint32_t py[] = { 103, 102, 101 };		/* plan_route, main, <module> */
	uint8_t entry[] = { 0, 0, 1 };
	struct native_ref nat[] = { F(204), F(203), I(202), E(201), I(200), F(199) };
	uint32_t out[16], want[] = { 101, 102, 103, 203, 204 };

	(void)state;
	check(out, native_weave(py, entry, 3, nat, 6, 1, out, 16), want, 5);
}

/* two eval calls (a C function called back into Python): each takes its
 * frames up to its entry frame */
static void each_eval_call_takes_its_own_frames(void **state)
{
	uint32_t py[] = { 104, 103, 102, 101 };	/* key, sorter, main, <module> */
	uint8_t entry[] = { 1, 0, 0, 1 };
	struct native_ref nat[] = { E(205), I(204), I(203), E(202), I(201) };
	uint32_t out[16], want[] = { 101, 102, 103, 104 };

	(void)state;
	check(out, native_weave(py, entry, 4, nat, 5, 1, out, 16), want, 4);
}

/* the interpreter's own work inner to every Python frame (list.sort) stays */
static void interpreter_leaf_work_is_kept(void **state)
{
	uint32_t py[] = { 101 };
	uint8_t entry[] = { 1 };
	struct native_ref nat[] = { I(203), I(202), E(201) };
	uint32_t out[16], want[] = { 101, 202, 203 };

	(void)state;
	check(out, native_weave(py, entry, 1, nat, 3, 1, out, 16), want, 3);
}

/* the unwind stopped short of the eval loop: Python frames at the root */
static void unclaimed_python_frames_go_to_the_root(void **state)
{
	uint32_t py[] = { 102, 101 };
	uint8_t entry[] = { 0, 1 };
	struct native_ref nat[] = { F(202), F(201) };
	uint32_t out[16], want[] = { 101, 102, 201, 202 };

	(void)state;
	check(out, native_weave(py, entry, 2, nat, 2, 1, out, 16), want, 4);
}

/* -X perf: each eval call is called by a trampoline in no file, which is
 * plumbing; code in no file called by anything else (a JIT's) is kept */
static void perf_trampolines_are_plumbing(void **state)
{
	uint32_t py[] = { 102, 101 };			/* body, <module> */
	uint8_t entry[] = { 1, 1 };
	struct native_ref nat[] = { A(206), F(205), E(204), A(203), I(202), E(201), A(200) };
	uint32_t out[16], want[] = { 101, 102, 205, 206 };

	(void)state;
	check(out, native_weave(py, entry, 2, nat, 7, 1, out, 16), want, 4);
}

/* a thread running a subinterpreter's code: its eval call (201) is inner to
 * ours and runs frames of another thread state; ours (203) takes our frames,
 * the other stays a frame of its own, above the C call into it (202) */
static void another_interpreters_eval_call_claims_none(void **state)
{
	uint32_t py[] = { 102, 101 };			/* Interpreter.exec, run */
	uint8_t entry[] = { 0, 1 };
	struct native_ref nat[] = { F(205), E(201), F(202), I(204), E(203), I(200) };
	uint32_t out[16], want[] = { 101, 102, 202, 201, 205 };
	uint32_t cut_want[] = { 101, 102, 205 };

	(void)state;
	check(out, native_weave(py, entry, 2, nat, 6, 1, out, 16), want, 5);
	/* an unwind cut short cannot tell: the innermost eval call takes them */
	check(out, native_weave(py, entry, 2, nat, 3, 0, out, 16), cut_want, 3);
}

/* no room: never past max */
static void output_is_bounded(void **state)
{
	uint32_t py[] = { 102, 101 };
	uint8_t entry[] = { 1, 1 };
	struct native_ref nat[] = { F(203), E(202), E(201) };
	uint32_t out[2];

	(void)state;
	assert_int_equal(native_weave(py, entry, 2, nat, 3, 1, out, 2), 2);
}

/* .eh_frame_hdr: version 1, pcrel sdata4, udata4, datarel sdata4; three
 * functions at 0x100, 0x200, 0x280 from the section */
static void eh_frame_hdr_finds_the_function(void **state)
{
	uint8_t hdr[12 + 3 * 8] = { 1, 0x1b, 0x03, 0x3b };
	int32_t starts[] = { 0x100, 0x200, 0x280 };
	uint32_t count = 3;
	uint64_t start = 0;
	int i;

	(void)state;
	memcpy(hdr + 8, &count, 4);
	for (i = 0; i < 3; i++)
		memcpy(hdr + 12 + i * 8, &starts[i], 4);
	assert_int_equal(eh_frame_hdr_function(hdr, sizeof(hdr), 0x4000, 0x4250, &start), 0);
	assert_int_equal(start, 0x4200);
	assert_int_equal(eh_frame_hdr_function(hdr, sizeof(hdr), 0x4000, 0x4fff, &start), 0);
	assert_int_equal(start, 0x4280);
	assert_int_equal(eh_frame_hdr_function(hdr, sizeof(hdr), 0x4000, 0x40ff, &start), -1);
	/* a count past the section's bytes is refused */
	count = 4;
	memcpy(hdr + 8, &count, 4);
	assert_int_equal(eh_frame_hdr_function(hdr, sizeof(hdr), 0x4000, 0x4250, &start), -1);
	hdr[3] = 0x1b;	/* an encoding it does not read */
	assert_int_equal(eh_frame_hdr_function(hdr, sizeof(hdr), 0x4000, 0x4250, &start), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(one_eval_call_runs_several_frames),
		cmocka_unit_test(each_eval_call_takes_its_own_frames),
		cmocka_unit_test(interpreter_leaf_work_is_kept),
		cmocka_unit_test(unclaimed_python_frames_go_to_the_root),
		cmocka_unit_test(perf_trampolines_are_plumbing),
		cmocka_unit_test(another_interpreters_eval_call_claims_none),
		cmocka_unit_test(output_is_bounded),
		cmocka_unit_test(eh_frame_hdr_finds_the_function),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
