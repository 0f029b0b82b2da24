/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Maps shared by every program of ebpfprof. The BPF objects are linked into
 * one (bpftool gen object): gc.bpf.c defines them (see there why), every
 * other file sees them as extern through this header.
 */
#ifndef EP_MAPS_BPF_H
#define EP_MAPS_BPF_H

#ifdef EP_DEFINE_MAPS
#define EP_MAP
#else
#define EP_MAP extern
#endif

/* The kernel's features, set by the loader (see settings.bpf.c). */
extern const volatile __u8 ep_has_task_storage;
extern const volatile __u8 ep_has_task_pt_regs;
extern const volatile __u8 ep_has_current_task_btf;

/*
 * How a program loops over threads (and, before 5.17, frames): bpf_loop
 * (Linux 5.17), or, on older kernels, bounded loops. A compile-time
 * constant: each walking program is built twice, and the loader keeps the
 * one the kernel takes (a bpf_loop call cannot even be loaded as dead code
 * before 5.13, which rejects its callback's address).
 *
 * The frame walk is a budget of its own at load: inlined in each program,
 * a walk's frame is verified again for every state its caller reaches it in
 * (a bpf_loop callback, on 6.x, again until its states converge): 225,000
 * instructions a program, the switch program 955,000 of the 1M allowed.
 * So a frame is walked by a global function, which the verifier checks once
 * per program from no knowledge of its caller (bpf/walk.bpf.c), called in a
 * bounded loop: ep_walk_frames from 5.17 (pointer arguments, 5.12+),
 * EP_WALK_FRAMES_A_CALL frames a call, the walk's state on the caller's
 * stack, read and written through its pointer (a copy in and out, a frame
 * a call, made a 30-frame sample 13% dearer; kept in registers, each frame
 * more a call multiplied the states: 4 a call, 33,000 instructions more a
 * program; through the pointer, 1,500); before, ep_walk_chunk, which takes
 * scalars only (5.10), EP_WALK_CHUNK frames a call, the state waiting in the
 * scratch between calls.
 */
#define EP_WALK_BPF_LOOP	1
#define EP_WALK_BOUNDED		0
#define EP_WALK_CHUNK		2
#ifndef EP_WALK_FRAMES_A_CALL
#define EP_WALK_FRAMES_A_CALL	2
#endif
/* Threads a bounded scan reaches (EP_MAX_THREADS_SCAN with bpf_loop). */
#define EP_MAX_THREADS_SCAN_BOUNDED	32

/* A walk between two frames (struct frame_walk without its pointers, which
 * neither a map nor a global function's argument can hold). */
struct ep_walk_state {
	__u64 frame;		/* the next frame to walk, 0: none */
	__u64 last_code;	/* the previous frame's code and identity: */
	__u64 win_base;		/* target address of sc->window[0]; win_room 0 and */
				/* win_base 0: no window (any frame is past it) */
	__u32 last_ident;	/* recursion repeats them, and skips the cache */
	__u32 ident_tag;	/* ident_tag() of this walk */
	__u32 win_room;		/* bytes past frame_read_size the window holds from win_base */
	__u32 span;		/* bytes a read reaches below a frame's end (<= EP_WINDOW_BYTES) */
};

/* ... and before 5.17, in the scratch, with the process's configuration. */
struct ep_walk_resume {
	struct ep_proc_cfg cfg;		/* the process's, copied once a walk */
	struct ep_walk_state st;
};

struct ep_scratch;
struct ep_ident_cache;
/* Up to EP_WALK_FRAMES_A_CALL frames of a walk into sc->ev (5.12+); 1 when
 * the walk has ended. */
int ep_walk_frames(struct ep_walk_state *st, struct ep_scratch *sc, const struct ep_proc_cfg *cfg,
		  struct ep_ident_cache *idents);
/* The current thread's PyThreadState in process pid (tid its thread), 0:
 * none; scanning up to EP_MAX_THREADS_SCAN threads with bpf_loop, or
 * EP_MAX_THREADS_SCAN_BOUNDED in a bounded loop (before 5.17). */
__u64 ep_find_tstate(__u32 pid, __u32 tid);
__u64 ep_find_tstate_bounded(__u32 pid, __u32 tid);
/* Walks up to EP_WALK_CHUNK frames of the walk resumed from scratch slot
 * `slot`; 1 when the walk has ended. */
int ep_walk_chunk(__u32 slot);
/* --label: reads the value at sc->label.obj into sc->label.blob, for
 * scratch slot `slot` (bpf/label.bpf.c); a global function, verified once. */
int ep_label_read(__u32 slot);

/* PyASCIIObject.state, for the strs read in the kernel (label values, code
 * names): kind in bits 2-4 (1: latin-1), compact, ascii. */
#define EP_STR_KIND(s)	(((s) >> 2) & 7)
#define EP_STR_COMPACT	(1u << 5)
#define EP_STR_ASCII	(1u << 6)

/* Sends the names of scratch slot `slot`'s stack's code objects not sent
 * before (bpf/code_names.bpf.c); a global function, with bpf_loop only. */
int ep_code_names(__u32 slot);

/* Which scratch slot a program uses: programs of different kinds can nest on one CPU
 * (a cpu-clock sample can interrupt a uprobe), so each kind has its own. */
enum ep_scratch_slot {
	EP_SCRATCH_SAMPLE = 0,
	EP_SCRATCH_OFFCPU = 1,
	EP_SCRATCH_GC = 2,
	EP_SCRATCH_SLOTS = 3,
};

/* A code object's identity (ep_code_ident), reused within one epoch of
 * 2^EP_IDENT_EPOCH_SHIFT ns (~67 ms) so a frame costs no probe read of its
 * own. Code objects are freed and their addresses reused; the epoch bounds
 * how long a stale identity could name a new object there. One 32-bit tag
 * holds the process (another one can have other code at that address: pids
 * stay below 2^22) and the epoch's low 10 bits, so a lookup is two compares.
 * 2048 slots: a 300-frame stack of distinct functions missed ~70% of a 256-slot
 * cache on every walk, at two probe reads a miss (68 us a sample). */
#define EP_IDENT_CACHE_BITS	11
#define EP_IDENT_CACHE		(1u << EP_IDENT_CACHE_BITS)
#define EP_IDENT_EPOCH_SHIFT	26

struct ep_ident_slot {
	__u64 key;		/* the code's address mixed with the frame's globals */
	__u32 ident;
	__u32 tag;		/* ident_tag() */
};

/* One per scratch slot (programs on one CPU can nest), per CPU: 32 KiB,
 * the most a per-CPU value may hold. */
struct ep_ident_cache {
	struct ep_ident_slot slots[EP_IDENT_CACHE];
};

/* Bytes of a code object read at once for its first line and file name
 * (40 to 120 bytes in, in every version). */
#define EP_CODE_SPAN		128

/* Bytes read at most below a frame in one probe read (a power of two, at
 * most a page): 3.11+ allocates frames on the thread's data stack, callers
 * below callees, so one read of the frame's page below it holds ~30 of them. */
#define EP_WINDOW_BYTES		4096
/* ... and for the fingerprint of a switch-out's two innermost frames. */
#define EP_KEY_WINDOW_BYTES	512

struct ep_scratch {
	struct ep_stack_event ev;
	/* the memory below and including the frame being walked: on 3.11+ the
	 * callers' frames sit there, so one read serves many frames; sized so
	 * a masked frame offset plus a masked field offset + 8 stays inside */
	__u8 window[EP_WINDOW_BYTES + EP_FRAME_READ_MAX + 16];
	__u8 code_span[EP_CODE_SPAN + 8];	/* see read_code_ident */
	__u32 slot;		/* this scratch's index: its identity cache's too */
	struct ep_walk_resume resume;	/* a bounded walk's (kernels without bpf_loop) */
	/* --label: the innermost labelled frame the walk found (frame 0:
	 * none), and the value read from it */
	struct {
		__u64 frame;
		__u64 obj;
		__u8 slot;	/* its index in the cfg's label_code[] */
		struct ep_label_offsets lo;
		__u8 long_tagged;
		struct ep_label_blob blob;
	} label;
};

/* tgid (in the profiler's PID namespace) -> how to walk its stacks */
EP_MAP struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, __u32);
	__type(value, struct ep_proc_cfg);
} procs SEC(".maps");

/* tid -> its PyThreadState, so a sample needs no walk of the thread list */
EP_MAP struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, __u64);
} tstates SEC(".maps");

EP_MAP struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, EP_RINGBUF_BYTES);
} events SEC(".maps");

EP_MAP struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, EP_SCRATCH_SLOTS);
	__type(key, __u32);
	__type(value, struct ep_scratch);
} scratch SEC(".maps");

/* direct-mapped by code address, one per scratch slot */
EP_MAP struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, EP_SCRATCH_SLOTS);
	__type(key, __u32);
	__type(value, struct ep_ident_cache);
} ident_cache SEC(".maps");

EP_MAP struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, EP_CNT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

/* (pid, stack id) of the stacks samples have sent whole: a later sample at
 * the same stack sends only the id, ~100 bytes instead of 16 per frame (the
 * copy into the ring buffer cost more than the walk). LRU: a forgotten stack
 * is simply sent whole again. */
EP_MAP struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct ep_sent_key);
	__type(value, __u8);
} sent_stacks SEC(".maps");

/* The code objects whose names the kernel sent (bpf/code_names.bpf.c).
 * LRU: one forgotten is simply sent again, with the next new stack it is in. */
struct ep_named_key {
	__u64 code;
	__u32 ident;
	__u32 pid;
};

EP_MAP struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct ep_named_key);
	__type(value, __u8);
} named_codes SEC(".maps");

/* The code names record being filled, per CPU (too big for the BPF stack). */
EP_MAP struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ep_code_event);
} code_event_buf SEC(".maps");

/* tid -> the collection it is running now (from the GC probes); LRU: a
 * process killed mid-collection leaves an entry nobody deletes */
struct ep_gc_running {
	__u64 start_ts;
	__s32 generation;
	__u32 pad;
};

EP_MAP struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct ep_gc_running);
} gc_running SEC(".maps");

/* cfg->gc_slot - 1 -> the GC clock (ep_gc_clock_*) of a process whose
 * collections are probed: userspace fills the slot when it attaches the
 * probes (struct ep_gc_clock) */
EP_MAP struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, EP_GC_CLOCK_SLOTS);
	__type(key, __u32);
	__type(value, struct ep_gc_clock);
} gc_clocks SEC(".maps");

/* pid's GC clock in its slot (cfg->gc_slot), NULL if it has none. */
static __always_inline __u64 *gc_clock_of(__u32 pid, __u16 gc_slot)
{
	__u32 i = (__u32)gc_slot - 1;
	struct ep_gc_clock *c;

	if (!gc_slot)
		return NULL;
	c = bpf_map_lookup_elem(&gc_clocks, &i);
	return c && c->pid == pid ? &c->clock : NULL;
}

/*
 * Per CPU: the sampler's clocks (sample.bpf.c). A sample of a profiled
 * thread weighs that thread's own on-CPU time since its previous sample: the
 * switch program notes here which profiled thread runs on the CPU, since
 * when, and its time not yet sampled from earlier runs (kept in its task
 * storage while it is off the CPU). A thread whose switch-in was not seen
 * (running when profiling began) falls back to the CPU's busy time since
 * the previous tick, for which the switch program notes when the CPU goes
 * idle and comes back (offcpu.bpf.c), so idle time is left out.
 */
struct ep_cpu_clock {
	__u64 last_tick;	/* the CPU's previous sampler tick, 0: none yet */
	__u64 idle_ns;		/* time idle since then */
	__u64 idle_since;	/* when it went idle, 0: busy (or not seen to go) */
	__u64 run_from;		/* since when run_tid's time is not in a sample */
	__u64 run_carry_ns;	/* ... plus this much from its earlier runs */
	__u32 run_tid;		/* the profiled thread on the CPU (host tid), 0: none seen */
	__u32 pad;
};

EP_MAP struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ep_cpu_clock);
} cpu_clock SEC(".maps");

#endif
