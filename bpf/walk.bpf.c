// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The stack walk of kernels without bpf_loop (before 5.17): a global
 * function, which the verifier checks once, walks EP_WALK_CHUNK frames a
 * call, resuming from the walk's state in the scratch (see maps.bpf.h).
 * Only the *_bounded programs call it; the loader loads those only there.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "ebpfprof.h"
#include "maps.bpf.h"
#include "pystack.bpf.h"

__noinline int ep_walk_chunk(__u32 slot)
{
	struct ep_scratch *sc = bpf_map_lookup_elem(&scratch, &slot);
	struct frame_walk w = { 0 };
	struct ep_walk_resume *r;
	int i, done = 0;

	if (!sc)
		return 1;
	r = &sc->resume;
	w.cfg = &r->cfg;
	w.sc = sc;
	w.idents = bpf_map_lookup_elem(&ident_cache, &slot);
	w.frame = r->frame;
	w.last_code = r->last_code;
	w.last_ident = r->last_ident;
	w.ident_tag = r->ident_tag;
	w.win_base = r->win_base;
	w.win_room = r->win_room;
	w.span = r->span;
	for (i = 0; i < EP_WALK_CHUNK && !done; i++)
		done = frame_walk_one(i, &w);
	r->frame = w.frame;
	r->last_code = w.last_code;
	r->last_ident = w.last_ident;
	r->win_base = w.win_base;
	r->win_room = w.win_room;
	return done;
}
