// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The userspace frame walk (blocked threads at the start, dump) against
 * frames made in this process's own memory: it ends, whatever the chain.
 * A thread state read while CPython was still making it once led to a
 * "frame" whose caller was itself (3.13's PyType_Type read as a frame: its
 * type, at the caller's offset, is itself) and the walk held the recorder
 * until the target exited.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include "ebpfprof.h"
#include "py_stack.h"

/* A 3.11-like frame: code, caller, instruction pointer. */
struct fake_frame {
	uint64_t code;
	uint64_t previous;
	uint64_t instr;
};

struct fake_tstate {
	uint64_t frame;
};

/* A code object: only its address and the bytes its identity reads. */
struct fake_code {
	int32_t firstlineno;
	uint32_t pad;
	uint64_t filename;
	uint8_t adaptive[64];
};

static struct py_target *fake_target(void)
{
	struct py_target *t = calloc(1, sizeof(*t));
	struct ep_proc_cfg *c;

	assert_non_null(t);
	c = &t->cfg;
	t->pid = getpid();	/* our own memory: read directly */
	c->tstate_frame = offsetof(struct fake_tstate, frame);
	c->cframe_current_frame = EP_NO_OFFSET;
	c->frame_previous = offsetof(struct fake_frame, previous);
	c->frame_code = offsetof(struct fake_frame, code);
	c->frame_instr = offsetof(struct fake_frame, instr);
	c->frame_owner = EP_NO_OFFSET;
	c->frame_globals = EP_NO_OFFSET;
	c->frame_is_entry = EP_NO_OFFSET;
	c->frame_read_size = sizeof(struct fake_frame);
	c->instr_kind = EP_INSTR_POINTER;
	c->code_adaptive = offsetof(struct fake_code, adaptive);
	c->code_firstlineno = offsetof(struct fake_code, firstlineno);
	c->code_filename = offsetof(struct fake_code, filename);
	return t;
}

static struct ep_stack_event *walk(struct py_target *t, struct fake_frame *top)
{
	struct fake_tstate ts = { (uintptr_t)top };
	struct ep_stack_event *ev = calloc(1, sizeof(*ev));

	assert_non_null(ev);
	alarm(10);	/* a walk that does not end fails here, not the whole run */
	py_stack_walk(t, (uintptr_t)&ts, ev);
	alarm(0);
	return ev;
}

/* No code, its caller itself: nothing kept, and the walk ends. */
static void test_a_frame_that_is_its_own_caller_ends_the_walk(void **state)
{
	struct py_target *t = fake_target();
	struct fake_frame f = { 0 };
	struct ep_stack_event *ev;

	(void)state;
	f.previous = (uintptr_t)&f;
	ev = walk(t, &f);
	assert_int_equal(ev->depth, 0);
	free(ev);
	free(t);
}

/* Code that has not started (instruction before its first): the same. */
static void test_a_cycle_of_unstarted_frames_ends_the_walk(void **state)
{
	struct py_target *t = fake_target();
	struct fake_code code = { .firstlineno = 3 };
	struct fake_frame a = { 0 }, b = { 0 };
	struct ep_stack_event *ev;

	(void)state;
	a.code = b.code = (uintptr_t)&code;
	a.instr = b.instr = (uintptr_t)&code;	/* before adaptive: not started */
	a.previous = (uintptr_t)&b;
	b.previous = (uintptr_t)&a;
	ev = walk(t, &a);
	assert_int_equal(ev->depth, 0);
	free(ev);
	free(t);
}

/* A cycle of running frames is cut at EP_MAX_FRAMES, and said truncated. */
static void test_a_cycle_of_running_frames_is_truncated(void **state)
{
	struct py_target *t = fake_target();
	struct fake_code code = { .firstlineno = 3 };
	struct fake_frame f = { 0 };
	struct ep_stack_event *ev;

	(void)state;
	f.code = (uintptr_t)&code;
	f.instr = (uintptr_t)&code.adaptive[4];
	f.previous = (uintptr_t)&f;
	ev = walk(t, &f);
	assert_int_equal(ev->depth, EP_MAX_FRAMES);
	assert_true(ev->flags & EP_F_TRUNCATED);
	free(ev);
	free(t);
}

/* A real chain, shims and unstarted frames between: each running frame kept
 * in order, innermost first, with its instruction offset. */
static void test_a_chain_keeps_its_running_frames(void **state)
{
	struct py_target *t = fake_target();
	struct fake_code inner = { .firstlineno = 10 }, outer = { .firstlineno = 1 };
	struct fake_frame f[3] = { 0 };
	struct ep_stack_event *ev;

	(void)state;
	f[0].code = (uintptr_t)&inner;
	f[0].instr = (uintptr_t)&inner.adaptive[6];
	f[0].previous = (uintptr_t)&f[1];
	f[1].previous = (uintptr_t)&f[2];	/* no code: skipped */
	f[2].code = (uintptr_t)&outer;
	f[2].instr = (uintptr_t)&outer.adaptive[2];
	ev = walk(t, &f[0]);
	assert_int_equal(ev->depth, 2);
	assert_int_equal(ev->frames[0].code, (uintptr_t)&inner);
	assert_int_equal(ev->frames[0].instr, 6);
	assert_int_equal(ev->frames[1].code, (uintptr_t)&outer);
	assert_int_equal(ev->frames[1].instr, 2);
	assert_false(ev->flags & EP_F_TRUNCATED);
	free(ev);
	free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a_frame_that_is_its_own_caller_ends_the_walk),
		cmocka_unit_test(test_a_cycle_of_unstarted_frames_ends_the_walk),
		cmocka_unit_test(test_a_cycle_of_running_frames_is_truncated),
		cmocka_unit_test(test_a_chain_keeps_its_running_frames),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
