// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The walk (the thread's state, its frames), as global functions: the verifier checks each once per
 * program that calls it, from no knowledge of its caller, rather than
 * inlined at every call site and again for every state a caller reaches it
 * in (see maps.bpf.h). Their callers loop over them (walk_frames).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "ebpfprof.h"
#include "maps.bpf.h"
#include "pystack.bpf.h"

/* 5.12+ (pointer arguments): EP_WALK_FRAMES_A_CALL frames, the walk's
 * state in the caller's *st. The pointers may be NULL as far as the
 * verifier knows. */
__noinline int ep_walk_frames(struct ep_walk_state *st, struct ep_scratch *sc,
			      const struct ep_proc_cfg *cfg, struct ep_ident_cache *idents)
{
	struct frame_walk w;
	int i, done = 0;

	if (!st || !sc || !cfg)
		return 1;
	w = (struct frame_walk){ .cfg = cfg, .sc = sc, .idents = idents, .st = st };
	for (i = 0; i < EP_WALK_FRAMES_A_CALL && !done; i++)
		done = frame_walk_one(&w);
	return done;
}

/* Before 5.17 (scalar arguments only, 5.10): EP_WALK_CHUNK frames of the
 * walk resumed from scratch slot `slot`, with the configuration copied
 * there. Only the *_bounded programs call it; the loader loads those only
 * there. */
__noinline int ep_walk_chunk(__u32 slot)
{
	struct ep_scratch *sc = bpf_map_lookup_elem(&scratch, &slot);
	struct frame_walk w;
	int i, done = 0;

	if (!sc)
		return 1;
	w = (struct frame_walk){ .cfg = &sc->resume.cfg, .sc = sc, .st = &sc->resume.st,
				 .idents = bpf_map_lookup_elem(&ident_cache, &slot) };
	for (i = 0; i < EP_WALK_CHUNK && !done; i++)
		done = frame_walk_one(&w);
	return done;
}

static __always_inline __u64 find_tstate_of(__u32 pid, __u32 tid, int loop)
{
	const struct ep_proc_cfg *cfg = bpf_map_lookup_elem(&procs, &pid);

	return cfg ? find_tstate_here(cfg, tid, loop) : 0;
}

__noinline __u64 ep_find_tstate(__u32 pid, __u32 tid)
{
	return find_tstate_of(pid, tid, EP_WALK_BPF_LOOP);
}

__noinline __u64 ep_find_tstate_bounded(__u32 pid, __u32 tid)
{
	return find_tstate_of(pid, tid, EP_WALK_BOUNDED);
}
