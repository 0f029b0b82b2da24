// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <string.h>
#include "native_weave.h"

static void push(uint32_t *out, uint32_t max, uint32_t *n, uint32_t id)
{
	if (*n < max)
		out[(*n)++] = id;
}

static void reverse(uint32_t *v, uint32_t n)
{
	uint32_t i, t;

	for (i = 0; i < n / 2; i++) {
		t = v[i];
		v[i] = v[n - 1 - i];
		v[n - 1 - i] = t;
	}
}

/*
 * Eval calls of another interpreter: a thread running a subinterpreter's
 * code (concurrent.interpreters) has that interpreter's eval calls inner to
 * its own, and their frames are in a thread state the walk did not read.
 * With the whole native stack, eval frames beyond the Python entry frames
 * are those, the innermost: how many.
 */
static uint32_t foreign_evals(const uint8_t *py_entry, uint32_t npy,
			      const struct native_ref *nat, uint32_t nnat, int complete)
{
	uint32_t evals = 0, entries = 0, i;

	if (!complete || !npy)
		return 0;
	for (i = 0; i < nnat; i++)
		evals += nat[i].kind == NATIVE_EVAL;
	for (i = 0; i < npy; i++)
		entries += !!py_entry[i];
	return evals > entries ? evals - entries : 0;
}

uint32_t native_weave(const uint32_t *py, const uint8_t *py_entry, uint32_t npy,
		      const struct native_ref *nat, uint32_t nnat, int complete, uint32_t *out,
		      uint32_t max)
{
	uint32_t n = 0, p = 0, i, outer_end = 0;
	uint32_t foreign = foreign_evals(py_entry, npy, nat, nnat, complete);
	int inner_seen = 0, claimed = 0;

	/* leaf first, reversed at the end */
	for (i = 0; i < nnat; i++) {
		switch (nat[i].kind) {
		case NATIVE_EVAL:
			if (foreign) {	/* kept: time in another interpreter's code */
				foreign--;
				push(out, max, &n, nat[i].id);
				inner_seen = 1;
				break;
			}
			while (p < npy) {
				push(out, max, &n, py[p]);
				if (py_entry[p++])
					break;
			}
			claimed = 1;
			outer_end = n;
			inner_seen = 1;
			break;
		case NATIVE_INTERP:
			if (!inner_seen)
				push(out, max, &n, nat[i].id);
			break;
		case NATIVE_ANON:
			/* the caller of an eval call: 3.12+'s perf trampoline
			 * (-X perf), plumbing; a JIT's code calls in through
			 * the call machinery, not straight into the loop */
			if (i && nat[i - 1].kind == NATIVE_EVAL)
				break;
			push(out, max, &n, nat[i].id);
			inner_seen = 1;
			break;
		default:
			push(out, max, &n, nat[i].id);
			inner_seen = 1;
		}
	}
	/* beyond the outermost eval frame: main, the thread's start: plumbing */
	if (claimed && npy)
		n = outer_end;
	while (p < npy)
		push(out, max, &n, py[p++]);
	reverse(out, n);
	return n;
}

uint8_t native_kind_of(const struct native_sym *sym, uint64_t interp_ino)
{
	if (!strncmp(sym->name, "_PyEval_EvalFrameDefault", 24))
		return NATIVE_EVAL;
	if (!sym->mod_inode && !sym->file[0])
		return NATIVE_ANON;
	return sym->mod_inode && sym->mod_inode == interp_ino ? NATIVE_INTERP : NATIVE_FOREIGN;
}
