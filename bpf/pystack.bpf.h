/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Walking a CPython thread's stack from the kernel: which process and thread
 * is this (in the profiler's PID namespace), which PyThreadState belongs to
 * it, and the (code object, instruction offset) of each frame. Used by the
 * sampler, the off-CPU tracker and the GC probes alike.
 */
#ifndef EP_PYSTACK_BPF_H
#define EP_PYSTACK_BPF_H

#include <bpf/bpf_core_read.h>
#include "ep_frame.h"

extern const volatile __u64 ep_pidns_dev;
extern const volatile __u64 ep_pidns_ino;
/* --native (sample.bpf.c): mark each eval-loop C call's first frame */
extern const volatile __u8 ep_native;
/* --label (settings.bpf.c): without it the label code is dead and never verified */
extern const volatile __u8 ep_labels;

/* a benchmark build without the counters (bench/switch_pieces.py) */
#ifndef EP_BENCH_NO_COUNT
#define EP_BENCH_NO_COUNT 0
#endif
static __always_inline void count(enum ep_counter which)
{
	__u32 key = which;
	__u64 *n;

	if (EP_BENCH_NO_COUNT)
		return;
	n = bpf_map_lookup_elem(&counters, &key);
	if (n)
		(*n)++;
}

/*
 * tgid and tid of the current task as the profiler sees them: host ids, or,
 * when the profiler runs inside a PID namespace, ids in that namespace.
 * Returns 0 when the task is not visible there.
 */
static __always_inline int current_ids(__u32 *pid, __u32 *tid)
{
	if (ep_pidns_ino) {
		struct bpf_pidns_info ns = {};

		if (bpf_get_ns_current_pid_tgid(ep_pidns_dev, ep_pidns_ino, &ns, sizeof(ns)))
			return 0;
		*pid = ns.tgid;
		*tid = ns.pid;
		return 1;
	}
	__u64 id = bpf_get_current_pid_tgid();

	*pid = id >> 32;
	*tid = (__u32)id;
	return 1;
}

/* pthread_self() of the current thread: on x86-64 glibc and musl it is the
 * thread pointer, which the kernel keeps as fsbase. CPython records it in
 * every PyThreadState (thread_id), in every version and every namespace. */
static __always_inline __u64 current_pthread_id(void)
{
	struct task_struct *task;

	if (!ep_has_current_task_btf)	/* before 5.11: a probe read */
		return BPF_CORE_READ((struct task_struct *)bpf_get_current_task(), thread.fsbase);
	task = bpf_get_current_task_btf();
	return task->thread.fsbase;	/* a trusted BTF pointer: a plain load */
}

static __always_inline __u64 read_u64(__u64 addr)
{
	__u64 v = 0;

	bpf_probe_read_user(&v, sizeof(v), (void *)addr);
	return v;
}

static __always_inline __s32 read_s32(__u64 addr)
{
	__s32 v = 0;

	bpf_probe_read_user(&v, sizeof(v), (void *)addr);
	return v;
}

struct tstate_scan {
	const struct ep_proc_cfg *cfg;
	__u64 tstate;
	__u64 pthread_id;
	__u64 found;
};

static long tstate_scan_one(__u32 i, struct tstate_scan *s)
{
	if (!s->tstate)
		return 1;
	if (read_u64(s->tstate + s->cfg->tstate_thread_id) == s->pthread_id) {
		s->found = s->tstate;
		return 1;
	}
	s->tstate = read_u64(s->tstate + s->cfg->tstate_next);
	return 0;
}

/* A cached "none" (tstates): odd, unlike a thread state's address, with
 * the time of the scan that found none. */
#define EP_TSTATE_NONE	1ull

/* The current thread's PyThreadState, or 0 if it has none. A cached answer is
 * checked with one read, since thread states are freed and reused; a cached
 * "none" holds for EP_TSTATE_RESCAN_NS, so a thread without one (a C
 * library's, or one not bound yet) does not scan the list at every sample.
 * loop: EP_WALK_BPF_LOOP or EP_WALK_BOUNDED (maps.bpf.h), a constant. The
 * body of ep_find_tstate (bpf/walk.bpf.c), a global function. */
static __always_inline __u64 find_tstate_here(const struct ep_proc_cfg *cfg, __u32 tid, int loop)
{
	__u64 pthread_id = current_pthread_id();
	__u64 *cached = bpf_map_lookup_elem(&tstates, &tid);
	struct tstate_scan s = { .cfg = cfg, .pthread_id = pthread_id };
	__u64 now;

	if (cached && (*cached & EP_TSTATE_NONE)) {
		now = bpf_ktime_get_ns();
		if (now - (*cached & ~EP_TSTATE_NONE) < EP_TSTATE_RESCAN_NS)
			return 0;
	} else if (cached && *cached &&
		   read_u64(*cached + cfg->tstate_thread_id) == pthread_id) {
		return *cached;
	}
	s.tstate = read_u64(cfg->interp_addr + cfg->interp_threads_head);
	if (loop == EP_WALK_BPF_LOOP) {
		bpf_loop(EP_MAX_THREADS_SCAN, tstate_scan_one, &s, 0);
	} else {
		for (int i = 0; i < EP_MAX_THREADS_SCAN_BOUNDED; i++)
			if (tstate_scan_one(i, &s))
				break;
	}
	if (!s.found)
		s.tstate = bpf_ktime_get_ns() | EP_TSTATE_NONE;
	bpf_map_update_elem(&tstates, &tid, s.found ? &s.found : &s.tstate, BPF_ANY);
	return s.found;
}

/* The same, verified once per program (bpf/walk.bpf.c): process pid's
 * configuration is looked up again there, on this rarer path only. */
static __always_inline __u64 find_tstate(__u32 pid, __u32 tid, int loop)
{
	if (loop == EP_WALK_BPF_LOOP)
		return ep_find_tstate(pid, tid);
	return ep_find_tstate_bounded(pid, tid);
}

/* The innermost frame from the value of the thread state's frame field:
 * through the C frame on 3.11 and 3.12, the frame itself elsewhere. */
static __always_inline __u64 frame_from_field(const struct ep_proc_cfg *cfg, __u64 field)
{
	if (cfg->cframe_current_frame != EP_NO_OFFSET && field)
		return read_u64(field + cfg->cframe_current_frame);
	return field;
}

/* The frame the thread is executing now (innermost), or 0. */
static __always_inline __u64 current_frame(const struct ep_proc_cfg *cfg, __u64 tstate)
{
	return frame_from_field(cfg, read_u64(tstate + cfg->tstate_frame));
}

/* Bytes of a thread state read at once for its thread id and frame field,
 * which sit 100 to 160 bytes apart in every version (3.8-3.14). */
#define EP_TSTATE_SPAN	256

/*
 * The frame field of `tstate` if it still belongs to the current thread: one
 * probe read covers both fields (each read costs ~0.1 us in a VM, the
 * largest part of a switch-out). 0 when it is someone else's now (thread
 * states are freed and reused) or unreadable.
 */
static __always_inline int tstate_frame_field(const struct ep_proc_cfg *cfg, struct ep_scratch *sc,
					      __u64 tstate, __u64 *field)
{
	__u32 id_off = cfg->tstate_thread_id, frame_off = cfg->tstate_frame;
	__u32 lo = id_off < frame_off ? id_off : frame_off;
	__u32 len = (id_off < frame_off ? frame_off : id_off) + 8 - lo;
	const __u8 *buf = sc->window;

	if (len > EP_TSTATE_SPAN) {
		if (read_u64(tstate + id_off) != current_pthread_id())
			return 0;
		*field = read_u64(tstate + frame_off);
		return 1;
	}
	barrier_var(len);	/* see frame_bytes: 6.1 loses the bound over a spill */
	if (len > EP_TSTATE_SPAN || bpf_probe_read_user(sc->window, len, (void *)(tstate + lo)))
		return 0;
	if (*(const __u64 *)(buf + ((id_off - lo) & (EP_WINDOW_BYTES - 1))) != current_pthread_id())
		return 0;
	*field = *(const __u64 *)(buf + ((frame_off - lo) & (EP_WINDOW_BYTES - 1)));
	return 1;
}

/*
 * A walk: its pointers, and its state between frames (which a global
 * function's caller keeps). The frame count lives in the event (a map
 * value), not here: a counter the verifier tracks exactly makes each turn a
 * new state.
 */
struct frame_walk {
	const struct ep_proc_cfg *cfg;
	struct ep_scratch *sc;
	struct ep_ident_cache *idents;	/* NULL: every identity read afresh */
	struct ep_walk_state *st;	/* the caller's, or the scratch's */
};

/* The identity cache's tag for process pid at time now (see ep_ident_slot). */
static __always_inline __u32 ident_tag(__u32 pid, __u64 now)
{
	return pid | (__u32)(now >> EP_IDENT_EPOCH_SHIFT) << 22;
}

/* ep_code_ident() of the code object at `code`, read from it: one read
 * covers both fields. A field that cannot be read counts as 0. */
static __always_inline __u32 read_code_ident(const struct ep_proc_cfg *cfg, struct ep_scratch *sc,
					     __u64 code)
{
	__u32 line_off = cfg->code_firstlineno, file_off = cfg->code_filename;
	__u32 lo = line_off < file_off ? line_off : file_off;
	__u32 len = (line_off < file_off ? file_off : line_off) + 8 - lo;
	const __u8 *buf = sc->code_span;

	if (len > EP_CODE_SPAN)
		return ep_code_ident(read_s32(code + line_off), read_u64(code + file_off));
	barrier_var(len);	/* see frame_bytes: 6.1 loses the bound over a spill */
	if (len > EP_CODE_SPAN || bpf_probe_read_user(sc->code_span, len, (void *)(code + lo)))
		return ep_code_ident(0, 0);
	return ep_code_ident(*(const __s32 *)(buf + ((line_off - lo) & (EP_CODE_SPAN - 1))),
			     *(const __u64 *)(buf + ((file_off - lo) & (EP_CODE_SPAN - 1))));
}

/* The cache slot of a code object: a multiplicative hash, since code objects
 * sit at regular strides (224 bytes apart for a run of small functions) that
 * the address bits alone fold onto a few slots (300 such functions: 144). */
static __always_inline __u32 ident_slot(__u64 code)
{
	return (code * 0x9e3779b97f4a7c15ull) >> (64 - EP_IDENT_CACHE_BITS);
}

/*
 * The identity of the code object at `code`: the previous frame's when it
 * runs the same code, else cached per CPU within the epoch, under the code's
 * address and the frame's globals. A code object freed and another made at
 * its address within the epoch would otherwise take the old identity, and
 * its name: each import's module body is made, run and freed in turn, and
 * same-sized ones all landed at one address (a module's samples went to the
 * module before it); each module has globals of its own.
 */
static __always_inline __u32 code_ident(struct frame_walk *w, __u64 code, __u64 globals)
{
	__u64 key = code ^ globals * 0x9e3779b97f4a7c15ull;
	struct ep_ident_slot *slot;

	if (code == w->st->last_code)
		return w->st->last_ident;
	w->st->last_code = code;
	if (!w->idents) {
		w->st->last_ident = read_code_ident(w->cfg, w->sc, code);
		return w->st->last_ident;
	}
	slot = &w->idents->slots[ident_slot(code)];
	if (slot->key != key || slot->tag != w->st->ident_tag) {
		slot->ident = read_code_ident(w->cfg, w->sc, code);
		slot->key = key;
		slot->tag = w->st->ident_tag;
	}
	w->st->last_ident = slot->ident;
	return slot->ident;
}

/*
 * Where to read from so that one read holds the frame at `frame` and as much
 * of the memory below it as is useful: on 3.11+ frames live on the thread's
 * data stack, each caller just below its callee, so the read reaches down to
 * span bytes below the frame's end, but not below the frame's own page:
 * the page before a data-stack chunk may be unmapped, and a failed read
 * costs more than the one it saves. Before 3.11 frames are heap objects,
 * read one at a time.
 */
static __always_inline __u64 window_base(const struct ep_proc_cfg *cfg, __u64 frame, __u64 end,
					 __u64 span)
{
	__u64 page = frame & ~4095ull;

	if (cfg->instr_kind != EP_INSTR_POINTER)
		return frame;
	if (end < span || end - span < page)
		return page;
	return end - span;
}

static __always_inline __u64 frame_read_size(const struct ep_proc_cfg *cfg)
{
	__u64 size = cfg->frame_read_size;

	return size > EP_FRAME_READ_MAX ? EP_FRAME_READ_MAX : size;
}

/* The bytes of the frame at w->st->frame: from the last read when it holds them
 * (one compare: below win_base the offset wraps past any room), else from a
 * new read (see window_base); NULL when it cannot be read. */
static __always_inline const __u8 *frame_bytes(struct frame_walk *w, __u64 size)
{
	__u64 frame = w->st->frame, len;
	__u8 *window = w->sc->window;

	if (frame - w->st->win_base > w->st->win_room) {
		w->st->win_base = window_base(w->cfg, frame, frame + size, w->st->span);
		len = frame + size - w->st->win_base;
		/* the compiler spills len; 6.1's verifier does not carry a bound
		 * checked before the spill to the reloaded copy */
		barrier_var(len);
		if (len > EP_WINDOW_BYTES)
			len = EP_WINDOW_BYTES;
		w->st->win_room = 0;
		if (len < size || bpf_probe_read_user(window, len, (void *)w->st->win_base)) {
			w->st->win_base = 0;
			return NULL;
		}
		w->st->win_room = len - size;
	}
	return window + ((frame - w->st->win_base) & (EP_WINDOW_BYTES - 1));
}

/* --label: notes the frame at `at` if it runs a labelled function's code
 * (the innermost such frame is the one read). A few compares a frame, and
 * only for processes with labelled functions seen. */
static __always_inline void match_label(const struct ep_proc_cfg *cfg, struct ep_scratch *sc,
					__u64 at, __u64 code, __u32 ident)
{
	for (int j = 0; j < EP_LABEL_CODES; j++) {
		if (j >= cfg->nlabel_codes)
			return;
		if (cfg->label_code[j] == code && cfg->label_ident[j] == ident) {
			sc->label.frame = at;
			sc->label.slot = j;
			return;
		}
	}
}

/* One frame of the walk into sc->ev; 1 when the walk ends. The body of
 * the walk's global functions (bpf/walk.bpf.c), inlined nowhere else.
 * (Several frames a call saved ~4% of a deep walk, but tripled the time the
 * verifier takes to load the programs.) */
static __always_inline int frame_walk_one(struct frame_walk *w)
{
	const struct ep_proc_cfg *cfg = w->cfg;
	struct ep_stack_event *ev = &w->sc->ev;
	struct ep_frame *out;
	const __u8 *buf;
	__u32 depth = ev->depth;
	__u64 at = w->st->frame, code;
	__s64 instr;

	if (!w->st->frame)
		return 1;
	if (depth >= EP_MAX_FRAMES) {
		ev->flags |= EP_F_TRUNCATED;
		return 1;
	}
	/* the compiler spills depth before the check; 6.1's verifier does not
	 * carry the bound to the reloaded copy (6.12's does), so restate it */
	barrier_var(depth);
	depth &= EP_MAX_FRAMES - 1;
	buf = frame_bytes(w, frame_read_size(cfg));
	if (!buf) {
		ev->flags |= EP_F_READ_ERROR;
		return 1;
	}
	/* the last one seen is the outermost: an asyncio task's own coroutine */
	if (cfg->frame_owner != EP_NO_OFFSET &&
	    buf[cfg->frame_owner & (EP_FRAME_READ_MAX - 1)] == EP_FRAME_OWNED_BY_GENERATOR) {
		ev->task_frame = w->st->frame;
		ev->task_depth = depth;
	}
	w->st->frame = ep_frame_previous(cfg, buf);
	if (ep_frame_is_shim(cfg, buf)) {
		/* 3.12+: the frame above a shim is the first of its C call */
		if (ep_native && depth)
			ev->frames[(depth - 1) & (EP_MAX_FRAMES - 1)].instr |= EP_INSTR_ENTRY;
		return 0;
	}
	code = ep_frame_code(cfg, buf);
	if (!code)
		return 0;
	instr = ep_frame_instr_offset(cfg, buf, code);
	if (!ep_frame_started(cfg, instr))
		return 0;
	out = &ev->frames[depth];
	out->code = code;
	out->instr = instr < 0 ? ~0u : (__u32)instr;
	out->ident = code_ident(w, code, ep_frame_globals(cfg, buf));
	if (ep_labels && cfg->nlabel_codes && !w->sc->label.frame)
		match_label(cfg, w->sc, at, code, out->ident);
	ev->stack_id = ep_stack_mix(ev->stack_id, code, out->instr, out->ident);
	ev->depth = depth + 1;
	if (ep_native && cfg->frame_is_entry != EP_NO_OFFSET &&
	    buf[cfg->frame_is_entry & (EP_FRAME_READ_MAX - 1)])
		out->instr |= EP_INSTR_ENTRY;	/* 3.11 */
	return 0;
}

/*
 * --label: reads the labelled frame's argument (its fast locals start at
 * lo.frame_localsplus in the frame, arguments first, in every version) and
 * appends the value after the frames, mixed into the stack's id. The cost
 * is paid only by walks that found a labelled frame. A stack too deep to
 * take it goes without.
 */
static __always_inline void add_label(const struct ep_proc_cfg *cfg, struct ep_scratch *sc)
{
	__u32 j = sc->label.slot & (EP_LABEL_CODES - 1), depth = sc->ev.depth, k;
	const __u64 *words = (const __u64 *)&sc->label.blob;
	__u64 h = sc->ev.stack_id;
	struct ep_frame *out;

	if (depth > EP_MAX_FRAMES - EP_LABEL_FRAMES || cfg->lo.frame_localsplus == EP_NO_OFFSET)
		return;
	sc->label.obj = read_u64(sc->label.frame + cfg->lo.frame_localsplus +
				 8 * (__u64)(cfg->label_arg[j] & EP_LABEL_MAX_ARG)) & ~cfg->code_tag_mask;
	sc->label.lo = cfg->lo;
	sc->label.long_tagged = cfg->long_tagged;
	ep_label_read(sc->slot);
	sc->label.blob.label = cfg->label_index[j];
	barrier_var(depth);
	depth &= EP_MAX_FRAMES - 1;
	for (k = 0; k < EP_LABEL_FRAMES; k++) {
		out = &sc->ev.frames[(depth + k) & (EP_MAX_FRAMES - 1)];
		out->code = words[2 * k];
		out->instr = (__u32)words[2 * k + 1];
		out->ident = words[2 * k + 1] >> 32;
		h = ep_stack_mix(h, out->code, out->instr, out->ident);
	}
	sc->ev.stack_id = h;
	sc->ev.depth = depth + EP_LABEL_FRAMES;
	sc->ev.flags |= EP_F_LABEL;
}

/* The walk's start: nothing found yet. */
static __always_inline void walk_reset(struct ep_scratch *sc)
{
	sc->ev.depth = 0;
	sc->ev.stack_id = 0;
	sc->ev.task_frame = 0;
	sc->ev.task_depth = 0;
	sc->label.frame = 0;
}

/* A walk's state at its start, from `frame`. */
static __always_inline struct ep_walk_state walk_start(const struct ep_scratch *sc, __u64 frame)
{
	return (struct ep_walk_state){ .frame = frame, .span = EP_WINDOW_BYTES,
				       .ident_tag = ident_tag(sc->ev.pid, bpf_ktime_get_ns()) };
}

/* The frames from `frame` into sc->ev, EP_WALK_FRAMES_A_CALL a call of
 * ep_walk_frames (5.17+), the walk's state here between them. One extra
 * frame notices a stack deeper than EP_MAX_FRAMES. */
static __always_inline void walk_frames_loop(const struct ep_proc_cfg *cfg, struct ep_scratch *sc,
					     __u64 frame)
{
	struct ep_walk_state st = walk_start(sc, frame);
	__u32 slot = sc->slot;
	struct ep_ident_cache *idents = bpf_map_lookup_elem(&ident_cache, &slot);

	walk_reset(sc);
	for (int i = 0; i < EP_MAX_FRAMES / EP_WALK_FRAMES_A_CALL + 1; i++)
		if (ep_walk_frames(&st, sc, cfg, idents))
			break;
}

/* The same before 5.17: EP_WALK_CHUNK frames a call of ep_walk_chunk, which
 * takes no pointers (5.10), the walk's state in the scratch between calls. */
static __always_inline void walk_frames_bounded(const struct ep_proc_cfg *cfg,
						struct ep_scratch *sc, __u64 frame)
{
	__u32 slot = sc->slot;

	walk_reset(sc);
	sc->resume.cfg = *cfg;
	sc->resume.st = walk_start(sc, frame);
	for (int i = 0; i < EP_MAX_FRAMES / EP_WALK_CHUNK + 1; i++)
		if (ep_walk_chunk(slot))
			break;
}

/* Fills sc->ev.frames (innermost first, from `frame`), depth, and the
 * stack_id that names the stack in later records (emit_stack_by_id, the
 * off-CPU tracker's stack records); flags a truncated stack. The frames
 * are walked by global functions (bpf/walk.bpf.c), verified once per
 * program whatever its callers: ep_walk_frames from 5.17, ep_walk_chunk
 * before (the loop kind is the program's, see maps.bpf.h). */
static __always_inline void walk_frames(const struct ep_proc_cfg *cfg, struct ep_scratch *sc,
					__u64 frame, int loop)
{
	if (loop == EP_WALK_BPF_LOOP)
		walk_frames_loop(cfg, sc, frame);
	else
		walk_frames_bounded(cfg, sc, frame);
	if (ep_labels && sc->label.frame)
		add_label(cfg, sc);
	sc->ev.stack_id = ep_stack_id(sc->ev.stack_id, sc->ev.flags);
}

static __always_inline void walk_python_stack(const struct ep_proc_cfg *cfg,
					      struct ep_scratch *sc, __u64 tstate, int loop)
{
	walk_frames(cfg, sc, current_frame(cfg, tstate), loop);
}

/*
 * A fingerprint of where the thread stands, from its two innermost frames
 * (address, code, current instruction, caller's address): one or two probe
 * reads instead of a walk. The same fingerprint as at the last walk means the
 * same stack in practice: the frames below could only differ if other
 * callers had placed frames at exactly the same addresses, running exactly
 * the same instructions. 0: no frame.
 */
static __always_inline __u64 stack_key(const struct ep_proc_cfg *cfg, struct ep_scratch *sc,
				       __u64 frame)
{
	/* a small window: the caller's frame usually sits within it, below */
	struct ep_walk_state ks = { .span = EP_KEY_WINDOW_BYTES };
	struct frame_walk w = { .cfg = cfg, .sc = sc, .st = &ks };
	const __u8 *buf;
	__u64 key = 0;
	int i;

	w.st->frame = frame;
	for (i = 0; i < 2 && w.st->frame; i++) {
		buf = frame_bytes(&w, frame_read_size(cfg));
		if (!buf)
			return 0;
		key = ep_stack_mix(key, w.st->frame, (__u32)ep_frame_u64(buf, cfg->frame_instr),
				   (__u32)ep_frame_u64(buf, cfg->frame_code));
		w.st->frame = ep_frame_previous(cfg, buf);
	}
	/* the labelled functions known so far, too: a stack walked before
	 * its function was known to be labelled has no label, and reused it
	 * kept a sleeping thread's every wait unlabelled */
	return ep_stack_mix(key, w.st->frame, cfg->nlabel_codes, 0) | 1;
}

static __always_inline struct ep_scratch *scratch_slot(enum ep_scratch_slot slot)
{
	__u32 key = slot;
	struct ep_scratch *sc = bpf_map_lookup_elem(&scratch, &key);

	if (sc)
		sc->slot = key;
	return sc;
}

/* Who holds the GIL now: its PyThreadState, or 0 when it is free. The flag
 * and the holder sit side by side in every version (8 bytes apart): one
 * read for both. */
static __always_inline __u64 gil_holder(const struct ep_proc_cfg *cfg)
{
	__u64 locked = cfg->gil_locked_addr, holder = cfg->gil_holder_addr;
	__u64 pair[2] = {};

	if (!locked)
		return 0;
	if (holder + 8 == locked) {
		if (bpf_probe_read_user(pair, sizeof(pair), (void *)holder) || !(__s32)pair[1])
			return 0;
		return pair[0];
	}
	if (!read_s32(locked))
		return 0;
	return read_u64(holder);
}

/* A fresh record of `kind` for the current thread in scratch slot sc. */
static __always_inline struct ep_stack_event *start_stack_event(struct ep_scratch *sc,
								__u32 kind, __u32 pid,
								__u32 tid, __u64 ts)
{
	struct ep_stack_event *ev = &sc->ev;

	ev->kind = kind;
	ev->pid = pid;
	ev->tid = tid;
	ev->cpu = bpf_get_smp_processor_id();
	ev->flags = 0;
	ev->ts = ts;
	ev->end_ts = 0;
	ev->tstate = 0;
	ev->gil_holder = 0;
	ev->depth = 0;
	ev->gc_gen = 0;
	ev->reason = 0;
	ev->collected = -1;
	ev->stack_id = 0;
	return ev;
}

/* Fills tstate, the stack and its stack_id of the current thread (or flags
 * it has none). The thread state cached for the thread is checked and its
 * frame field read in one probe read; the lookup runs only when it fails. */
static __always_inline void capture_python_stack(const struct ep_proc_cfg *cfg,
						 struct ep_scratch *sc, __u32 tid, int loop)
{
	__u64 *cached = bpf_map_lookup_elem(&tstates, &tid);
	__u64 field, frame;

	if (cached && *cached && !(*cached & EP_TSTATE_NONE) &&
	    tstate_frame_field(cfg, sc, *cached, &field)) {
		sc->ev.tstate = *cached;
		frame = frame_from_field(cfg, field);
	} else {
		sc->ev.tstate = find_tstate(sc->ev.pid, tid, loop);
		if (!sc->ev.tstate) {
			sc->ev.flags |= EP_F_NO_TSTATE;
			return;
		}
		frame = current_frame(cfg, sc->ev.tstate);
	}
	walk_frames(cfg, sc, frame, loop);
}

/*
 * Sends a record without waking the reader: it drains the buffer on its own
 * every EP_DRAIN_MS. A wake-up per record made a feedback loop: every
 * switch-out of the target woke ebpfprof, which, woken on the target's CPU,
 * preempted it, which was another switch-out (22,000 switches a second for
 * a target that makes 200). Only a filling buffer wakes the reader early.
 */
static __always_inline long ring_output_flags(void *data, __u64 size, __u64 flags)
{
	long err;

	if (bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) > EP_WAKEUP_BYTES)
		flags = BPF_RB_FORCE_WAKEUP;
	err = bpf_ringbuf_output(&events, data, size, flags);
	if (err)
		count(EP_CNT_LOST);
	return err;
}

static __always_inline long ring_output(void *data, __u64 size)
{
	return ring_output_flags(data, size, BPF_RB_NO_WAKEUP);
}

/* When a record with frames last woke the reader (settings.bpf.c). */
extern __u64 ep_frames_woke_ns;

/* Sends the header and the walked frames, with the ring buffer's flags; 0
 * when sent. */
static __always_inline long emit_frames(struct ep_stack_event *ev, __u64 flags)
{
	__u64 depth = ev->depth;

	if (depth > EP_MAX_FRAMES)
		depth = EP_MAX_FRAMES;
	return ring_output_flags(ev, EP_STACK_EVENT_HDR_SIZE + depth * sizeof(struct ep_frame),
				 flags);
}

static __always_inline long emit_stack_event(struct ep_stack_event *ev)
{
	return emit_frames(ev, BPF_RB_NO_WAKEUP);
}

/*
 * The same for a sample's or a collection's new stack, which wakes the
 * reader at once, at most every EP_FRAMES_WAKEUP_NS: it names the code
 * objects from the target's memory, and must find them alive. A module's
 * body is freed once its import ends, an exec()'d string's code when it
 * returns, often well within the drain period. Once a program runs on, a
 * new stack is rare; and no loop as above: a sample is not a switch-out.
 */
static __always_inline long emit_new_stack(struct ep_stack_event *ev)
{
	__u64 flags = BPF_RB_NO_WAKEUP;

	if (ev->depth && ev->ts - ep_frames_woke_ns >= EP_FRAMES_WAKEUP_NS) {
		ep_frames_woke_ns = ev->ts;
		flags = BPF_RB_FORCE_WAKEUP;
	}
	return emit_frames(ev, flags);
}

/* The stack's key in sent_stacks: the reader has its frames if it is there. */
static __always_inline struct ep_sent_key sent_key(const struct ep_stack_event *ev)
{
	return (struct ep_sent_key){ .stack_id = ev->stack_id, .pid = ev->pid };
}

/* Sends a stack not seen before, with its frames (waking the reader), and
 * marks it sent only once its record is in the ring buffer, so the reader
 * always has the frames first. */
static __always_inline void emit_first_stack(struct ep_stack_event *ev, const struct ep_sent_key *key)
{
	__u8 sent = 1;

	if (!emit_new_stack(ev) && ev->depth &&
	    bpf_map_update_elem(&sent_stacks, key, &sent, BPF_ANY))
		count(EP_CNT_MAP_FULL);
}

/* Sends a sample or a collection: with its frames the first time its stack
 * is seen, by stack id after that. */
static __always_inline void emit_stack_by_id(struct ep_stack_event *ev)
{
	struct ep_sent_key key = sent_key(ev);

	if (ev->depth && bpf_map_lookup_elem(&sent_stacks, &key)) {
		ev->flags |= EP_F_STACK_BY_ID;
		ev->depth = 0;
		ring_output(ev, EP_STACK_EVENT_HDR_SIZE);
		return;
	}
	emit_first_stack(ev, &key);
}

#endif
