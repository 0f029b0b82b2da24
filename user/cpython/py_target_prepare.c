// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * py_target_prepare(), the second half of py_target.h: once py_target.c
 * has found the interpreter, turns its version's layout and the target's
 * addresses into the per-process configuration the kernel walk uses
 * (struct ep_proc_cfg): absolute addresses of the GC flag and the GIL, and
 * the offsets of the frame walk.
 */
#include <stdio.h>
#include <string.h>
#include "py_target.h"
#include "remote.h"

static uint16_t off16(int off)
{
	return off < 0 || off >= EP_NO_OFFSET ? EP_NO_OFFSET : (uint16_t)off;
}

static int max4(int a, int b, int c, int d)
{
	int m = a > b ? a : b;

	m = m > c ? m : c;
	return m > d ? m : d;
}

/*
 * The main interpreter: _PyRuntime.interpreters.main, the word after
 * .head in every version (struct pyinterpreters: mutex, head, main,
 * next_id). Not .head: that is the newest interpreter, a subinterpreter
 * (3.14's InterpreterPoolExecutor, say) if one is alive, whose threads,
 * GIL, GC and modules are not the main program's. .head while .main is
 * not set (both are set together at start-up); 0 before either.
 */
static int main_interpreter(const struct py_target *t, uint64_t *interp)
{
	uint64_t at = t->runtime_addr + t->layout.runtime_interpreters_head;

	if (remote_read_u64(t->pid, at + 8, interp))
		return -1;
	return *interp ? 0 : remote_read_u64(t->pid, at, interp);
}

/* Where the GC's `collecting` flag is: the runtime's GC state in 3.8, the
 * interpreter's from 3.9 on. */
static uint64_t gc_collecting_addr(const struct py_target *t)
{
	const struct py_layout *L = &t->layout;

	if (L->gc_collecting < 0)
		return 0;
	if (L->runtime_gc >= 0)
		return t->runtime_addr + L->runtime_gc + L->gc_collecting;
	if (L->interp_gc >= 0)
		return t->interp_addr + L->interp_gc + L->gc_collecting;
	return 0;
}

/* The GIL: inline in the runtime up to 3.11, behind interp->ceval.gil after. */
static uint64_t gil_addr(const struct py_target *t)
{
	const struct py_layout *L = &t->layout;
	uint64_t gil = 0;

	if (L->runtime_ceval_gil >= 0)
		return t->runtime_addr + L->runtime_ceval_gil;
	if (L->interp_ceval_gil >= 0 &&
	    remote_read_u64(t->pid, t->interp_addr + L->interp_ceval_gil, &gil))
		return 0;
	return gil;
}

/* Fills the frame walk's offsets; -1 if a field is missing or lies past the
 * EP_FRAME_READ_MAX bytes read of each frame (BPF and py_stack.c). */
static int fill_frame_walk(struct ep_proc_cfg *c, const struct py_layout *L)
{
	int owner = L->frame_owner < 0 ? 0 : L->frame_owner;
	int read_size = max4(L->frame_previous + 8, L->frame_code + 8,
			     L->frame_instr + 8, owner + 1);

	/* within what is read anyway, or not used */
	if (L->frame_globals >= 0 && L->frame_globals + 8 <= read_size)
		c->frame_globals = off16(L->frame_globals);
	else
		c->frame_globals = EP_NO_OFFSET;

	if (L->frame_previous < 0 || L->frame_code < 0 || L->frame_instr < 0 ||
	    read_size > EP_FRAME_READ_MAX)
		return -1;
	c->interp_threads_head = off16(L->interp_threads_head);
	c->tstate_next = off16(L->tstate_next);
	c->tstate_thread_id = off16(L->tstate_thread_id);
	c->tstate_frame = off16(L->tstate_frame);
	c->cframe_current_frame = off16(L->cframe_current_frame);
	c->frame_previous = off16(L->frame_previous);
	c->frame_code = off16(L->frame_code);
	c->frame_instr = off16(L->frame_instr);
	c->frame_owner = off16(L->frame_owner);
	c->frame_read_size = read_size;
	c->code_adaptive = off16(L->code_adaptive);
	c->code_firstlineno = off16(L->code_firstlineno);
	c->code_filename = off16(L->code_filename);
	c->code_tag_mask = L->code_tag_mask;
	c->instr_kind = L->instr_kind;
	c->owner_skip_min = L->owner_skip_min;
	/* 3.11 marks the first frame of each C call of the eval loop with
	 * `bool is_entry`, just before `char owner`; 3.12+ puts a shim frame
	 * (skipped by owner_skip_min) below it instead; before 3.11 each
	 * frame is a C call of its own */
	c->frame_is_entry = L->instr_kind == EP_INSTR_POINTER && !L->owner_skip_min &&
			    L->frame_owner > 0 ? off16(L->frame_owner - 1) : EP_NO_OFFSET;
	return 0;
}

/* Where the kernel reads a new stack's code object names (bpf/code_names.bpf.c):
 * none unless every offset it needs is known. */
static void fill_code_names(struct ep_proc_cfg *c, const struct py_layout *L)
{
	int name = L->code_qualname >= 0 ? L->code_qualname : L->code_name;

	c->code_qualname = EP_NO_OFFSET;
	if (name < 0 || L->unicode_state < 0 || L->unicode_length < 0 ||
	    L->unicode_ascii_size < 0 || L->unicode_compact_size < 0)
		return;
	c->lo.unicode_length = off16(L->unicode_length);
	c->lo.unicode_state = off16(L->unicode_state);
	c->lo.unicode_ascii_size = off16(L->unicode_ascii_size);
	c->lo.unicode_compact_size = off16(L->unicode_compact_size);
	c->code_qualname = off16(name);
}

/* --label: where the kernel reads a labelled frame's argument and how it
 * reads the value (bpf/label.bpf.c): the fast locals from the target's debug
 * offsets (3.13+), else from the table; not known (3.14+ without debug
 * offsets): no label is read. */
static void fill_label_offsets(struct ep_proc_cfg *c, const struct py_layout *L)
{
	const struct py_obj_layout *O = py_obj_layout_for_version(L->major, L->minor);
	struct ep_label_offsets *lo = &c->lo;
	int localsplus = L->frame_localsplus > 0 ? L->frame_localsplus :
			 O ? O->frame_localsplus : -1;

	lo->frame_localsplus = EP_NO_OFFSET;
	if (!O || localsplus < 0 || O->tp_flags < 0 || L->unicode_state < 0 ||
	    L->unicode_length < 0 || L->unicode_ascii_size < 0 || L->unicode_compact_size < 0)
		return;
	lo->tp_flags = off16(O->tp_flags);
	lo->unicode_length = off16(L->unicode_length);
	lo->unicode_state = off16(L->unicode_state);
	lo->unicode_ascii_size = off16(L->unicode_ascii_size);
	lo->unicode_compact_size = off16(L->unicode_compact_size);
	lo->long_size = off16(O->long_size);
	lo->long_digits = off16(O->long_digits);
	lo->tuple_items = off16(O->tuple_items);
	c->long_tagged = O->long_tagged;
	lo->frame_localsplus = off16(localsplus);
}

int py_target_label_ready(const struct py_target *t)
{
	return t->cfg.lo.frame_localsplus != EP_NO_OFFSET;
}

int py_target_prepare(struct py_target *t, char *err, size_t errlen)
{
	const struct py_layout *L = &t->layout;
	struct ep_proc_cfg *c = &t->cfg;
	uint64_t interp = 0, tstate = 0, gil;
	int rc = 0;

	if (L->major == 3 && L->minor >= 13)
		rc = py_debug_offsets_read(t->pid, t->runtime_addr, &t->layout);
	if (rc == PY_DEBUG_OFFSETS_FORGED) {
		snprintf(err, errlen, "process %d: its _Py_DebugOffsets (CPython %d.%d) hold offsets no CPython has; not profiling a process that misdescribes itself",
			 t->pid, t->major, t->minor);
		return PY_TARGET_UNSUPPORTED;
	}
	if (rc && !L->source) {
		snprintf(err, errlen, "process %d: CPython %d.%d's debug offsets are unreadable",
			 t->pid, t->major, t->minor);
		return PY_TARGET_UNSUPPORTED;
	}
	if (main_interpreter(t, &interp)) {
		snprintf(err, errlen, "process %d: cannot read its memory at _PyRuntime", t->pid);
		return PY_TARGET_GONE;
	}
	if (!interp || remote_read_u64(t->pid, interp + L->interp_threads_head, &tstate) || !tstate)
		return PY_TARGET_NOT_READY;
	t->interp_addr = interp;
	memset(c, 0, sizeof(*c));
	c->interp_addr = interp;
	c->gc_collecting_addr = gc_collecting_addr(t);
	gil = gil_addr(t);
	if (gil && L->gil_locked >= 0 && L->gil_last_holder >= 0) {
		c->gil_locked_addr = gil + L->gil_locked;
		c->gil_holder_addr = gil + L->gil_last_holder;
		c->gil_start = gil;
		c->gil_end = gil + (L->gil_size > 0 ? L->gil_size : 256);
	}
	fill_label_offsets(c, L);
	fill_code_names(c, L);
	if (fill_frame_walk(c, L)) {
		snprintf(err, errlen, "process %d: CPython %d.%d's frame layout does not fit the %d bytes read of each frame",
			 t->pid, t->major, t->minor, EP_FRAME_READ_MAX);
		return PY_TARGET_UNSUPPORTED;
	}
	return PY_TARGET_OK;
}

int py_target_open(pid_t pid, struct py_target *t, char *err, size_t errlen)
{
	int rc = py_target_find(pid, t, err, errlen);

	if (rc == PY_TARGET_OK)
		rc = py_target_prepare(t, err, errlen);
	if (rc != PY_TARGET_OK && strstr(err, "Permission denied"))
		snprintf(err, errlen, "cannot read process %d's files and memory: Permission denied "
			 "(this needs CAP_SYS_PTRACE: run it as root, e.g. with sudo)", pid);
	return rc;
}
