// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <string.h>
#include "ep_frame.h"
#include "py_stack.h"
#include "remote.h"

#define MAX_THREADS_SCAN EP_MAX_THREADS_SCAN

uint64_t py_tstate_of_tid(const struct py_target *t, int tid)
{
	const struct py_layout *L = &t->layout;
	uint64_t tstate = 0, native;
	int i;

	if (L->tstate_native_thread_id < 0 ||
	    remote_read_u64(t->pid, t->interp_addr + L->interp_threads_head, &tstate))
		return 0;
	for (i = 0; tstate && i < MAX_THREADS_SCAN; i++) {
		if (!remote_read_u64(t->pid, tstate + L->tstate_native_thread_id, &native) &&
		    (int)native == tid)
			return tstate;
		if (remote_read_u64(t->pid, tstate + L->tstate_next, &tstate))
			return 0;
	}
	return 0;
}

/* The configuration's frame fields lie inside the bytes read of a frame
 * (py_target_prepare() checks it; a cfg may come from elsewhere). */
static int frame_fields_fit(const struct ep_proc_cfg *c)
{
	unsigned size = c->frame_read_size;

	return size <= EP_FRAME_READ_MAX && c->frame_previous + 8u <= size &&
	       c->frame_code + 8u <= size && c->frame_instr + 8u <= size &&
	       (c->frame_owner == EP_NO_OFFSET || c->frame_owner + 1u <= size);
}

/* One frame: appends it unless it is a shim or not started, and, with
 * entry, marks the frames that begin a C call of the eval loop as the kernel
 * does for --native. Returns the previous frame's address, or 0 to stop. */
static uint64_t walk_one(const struct py_target *t, uint64_t frame, struct ep_stack_event *ev,
			 uint8_t *entry)
{
	const struct ep_proc_cfg *c = &t->cfg;
	uint8_t buf[EP_FRAME_READ_MAX + 16] = { 0 };
	uint64_t code, prev, filename = 0;
	int32_t firstlineno = 0;
	int64_t instr;

	if (remote_read(t->pid, frame, buf, c->frame_read_size)) {
		ev->flags |= EP_F_READ_ERROR;
		return 0;
	}
	prev = ep_frame_previous(c, buf);
	if (ep_frame_is_shim(c, buf)) {
		if (entry && ev->depth)
			entry[ev->depth - 1] = 1;
		return prev;
	}
	code = ep_frame_code(c, buf);
	if (!code)
		return prev;
	instr = ep_frame_instr_offset(c, buf, code);
	if (!ep_frame_started(c, instr))
		return prev;
	remote_read_i32(t->pid, code + c->code_firstlineno, &firstlineno);
	remote_read_u64(t->pid, code + c->code_filename, &filename);
	ev->frames[ev->depth].code = code;
	ev->frames[ev->depth].instr = instr < 0 ? ~0u : (uint32_t)instr;
	ev->frames[ev->depth].ident = ep_code_ident(firstlineno, filename);
	if (entry)
		entry[ev->depth] = c->instr_kind != EP_INSTR_POINTER ||
				   (c->frame_is_entry != EP_NO_OFFSET &&
				    buf[c->frame_is_entry & (EP_FRAME_READ_MAX - 1)]);
	ev->depth++;
	return prev;
}

void py_stack_walk(const struct py_target *t, uint64_t tstate, struct ep_stack_event *ev)
{
	py_stack_walk_entries(t, tstate, ev, NULL);
}

void py_stack_walk_entries(const struct py_target *t, uint64_t tstate, struct ep_stack_event *ev,
			   uint8_t *entry)
{
	const struct ep_proc_cfg *c = &t->cfg;
	uint64_t frame = 0;
	unsigned visits;

	ev->depth = 0;
	if (!frame_fields_fit(c) ||
	    remote_read_u64(t->pid, tstate + c->tstate_frame, &frame))
		return;
	if (c->cframe_current_frame != EP_NO_OFFSET && frame &&
	    remote_read_u64(t->pid, frame + c->cframe_current_frame, &frame))
		return;
	/* Frames visited, not only those kept, are bounded as in the kernel's
	 * walk (EP_MAX_FRAMES + 1 turns): shims and frames not started keep
	 * none, and a chain that leads back to itself (a frame read from a
	 * thread state still being made, or a hostile target's) would
	 * otherwise hold the recorder until the target exits. */
	for (visits = 0; frame && visits < EP_MAX_FRAMES + 1; visits++) {
		if (ev->depth >= EP_MAX_FRAMES) {
			ev->flags |= EP_F_TRUNCATED;
			return;
		}
		frame = walk_one(t, frame, ev, entry);
	}
}
