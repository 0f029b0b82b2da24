// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The names of the code objects of a stack sampled for the first time, read
 * here, in the sample's own context, and sent before the stack itself
 * (struct ep_code_event). Userspace names code objects from the target's
 * memory when their stack arrives; a module's body or an exec()'d string is
 * freed once it returns, and a short script exits, often before userspace
 * reads them (a profiler late by a second named none of a 1.2 s script's
 * frames). Only on a new stack, only code objects not sent before
 * (named_codes), at most EP_CODE_NAMES_MAX per stack: once a program runs
 * on, this runs rarely. Every address is the target's: a read that fails,
 * or a str that is not compact latin-1 or does not fit, sends nothing, and
 * the code object is left to userspace as before. A global function: the
 * verifier checks it once. Only with bpf_loop (5.17+): before, the sampler
 * does not call it.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "ebpfprof.h"
#include "maps.bpf.h"
#include "pystack.bpf.h"

/* Names read for one new stack at most: its innermost frames first. */
#define EP_CODE_NAMES_MAX	16

struct names_walk {
	const struct ep_stack_event *ev;
	const struct ep_proc_cfg *cfg;
	struct ep_code_event *out;
	__u32 depth;
	__u32 sent;
};

/* A compact latin-1 str at obj, whole, into out (room cap, a power of
 * two; cap - 1 bytes at most): its length, or -1. */
static __always_inline int read_latin1(const struct ep_proc_cfg *cfg, __u64 obj, __u8 *out,
				       __u32 cap)
{
	__u32 state = 0;
	__s64 length = 0;
	__u64 data;

	if (bpf_probe_read_user(&state, sizeof(state), (void *)(obj + cfg->lo.unicode_state)) ||
	    bpf_probe_read_user(&length, sizeof(length), (void *)(obj + cfg->lo.unicode_length)))
		return -1;
	if (!(state & EP_STR_COMPACT) || EP_STR_KIND(state) != 1 || length <= 0 || length >= cap)
		return -1;
	data = obj + ((state & EP_STR_ASCII) ? cfg->lo.unicode_ascii_size :
					      cfg->lo.unicode_compact_size);
	barrier_var(length);
	if (bpf_probe_read_user(out, length & (cap - 1), (void *)data))
		return -1;
	return length;
}

/* Fills w->out with the code object at code, if it is still the one the
 * walk saw (its identity); 0 when its name was read. */
static __always_inline int read_code(struct names_walk *w, __u64 code, __u32 ident)
{
	const struct ep_proc_cfg *cfg = w->cfg;
	struct ep_code_event *out = w->out;
	__u64 name = 0, file = 0;
	__s32 line = 0;
	int n;

	if (bpf_probe_read_user(&line, sizeof(line), (void *)(code + cfg->code_firstlineno)) ||
	    bpf_probe_read_user(&file, sizeof(file), (void *)(code + cfg->code_filename)) ||
	    bpf_probe_read_user(&name, sizeof(name), (void *)(code + cfg->code_qualname)) ||
	    ep_code_ident(line, file) != ident)
		return -1;
	n = read_latin1(cfg, name, out->name, EP_CODE_NAME_MAX);
	if (n < 0)
		return -1;
	out->name_len = n;
	n = read_latin1(cfg, file, out->file, EP_CODE_FILE_MAX);
	out->file_len = n < 0 ? 0 : n;
	out->code = code;
	out->ident = ident;
	out->firstlineno = line;
	return 0;
}

/* bpf_loop's callback: frame i of the stack; 1 stops. */
static long name_one(__u32 i, void *ctx)
{
	struct names_walk *w = ctx;
	const struct ep_frame *f;
	struct ep_named_key key;
	__u8 one = 1;

	if (i >= w->depth || i >= EP_MAX_FRAMES || w->sent >= EP_CODE_NAMES_MAX)
		return 1;
	/* the compiler indexes with a copy of i it did not bound */
	barrier_var(i);
	f = &w->ev->frames[i & (EP_MAX_FRAMES - 1)];
	key = (struct ep_named_key){ .code = f->code, .ident = f->ident, .pid = w->ev->pid };
	if (!f->code || bpf_map_lookup_elem(&named_codes, &key))
		return 0;
	if (read_code(w, f->code, f->ident))
		return 0;
	if (bpf_ringbuf_output(&events, w->out, sizeof(*w->out), BPF_RB_NO_WAKEUP)) {
		count(EP_CNT_LOST);
		return 1;
	}
	bpf_map_update_elem(&named_codes, &key, &one, BPF_ANY);
	w->sent++;
	return 0;
}

__noinline int ep_code_names(__u32 slot)
{
	struct ep_scratch *sc = bpf_map_lookup_elem(&scratch, &slot);
	struct names_walk w = { 0 };
	struct ep_proc_cfg *cfg;
	__u32 zero = 0, pid;

	if (!sc)
		return 0;
	pid = sc->ev.pid;
	cfg = bpf_map_lookup_elem(&procs, &pid);
	w.out = bpf_map_lookup_elem(&code_event_buf, &zero);
	if (!cfg || !w.out || cfg->code_qualname == EP_NO_OFFSET)
		return 0;
	w.out->kind = EP_EV_CODE;
	w.out->pid = pid;
	w.ev = &sc->ev;
	w.cfg = cfg;
	w.depth = sc->ev.depth;
	/* a label's value rides as the last frames: not code objects */
	if ((sc->ev.flags & EP_F_LABEL) && w.depth >= EP_LABEL_FRAMES)
		w.depth -= EP_LABEL_FRAMES;
	bpf_loop(EP_MAX_FRAMES, name_one, &w, 0);
	return 0;
}
