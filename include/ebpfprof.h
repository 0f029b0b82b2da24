/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Records and per-process configuration shared by the BPF programs (bpf/)
 * and the userspace loader (user/). Only fixed-width kernel types here:
 * this header is compiled both against vmlinux.h and against libc.
 */
#ifndef EBPFPROF_H
#define EBPFPROF_H

#ifndef __VMLINUX_H__
#include <linux/types.h>	/* userspace; BPF code has these from vmlinux.h */
#endif
#include "ep_states.h"

/* Frames walked in the kernel per stack; a deeper stack is kept truncated. */
#define EP_MAX_FRAMES		512
/* Threads of one interpreter scanned when a thread's PyThreadState is unknown
 * (newest first: a thread pool of 200 left the main thread out at 128). */
#define EP_MAX_THREADS_SCAN	4096
/* A thread found to have none is scanned for again after this long (its
 * thread state may be bound later; a scan of thousands costs a millisecond). */
#define EP_TSTATE_RESCAN_NS	(100ull * 1000 * 1000)
/* The reader drains the ring buffer every EP_DRAIN_MS; records do not wake
 * it unless more than EP_WAKEUP_BYTES wait (a quarter of the buffer). */
#define EP_RINGBUF_BYTES	(16u << 20)
#define EP_WAKEUP_BYTES		(EP_RINGBUF_BYTES / 4)
#define EP_DRAIN_MS		50
/* ... except a record with frames (a new stack), which wakes it at most
 * this often: its code objects may be freed soon (bpf/pystack.bpf.h). */
#define EP_FRAMES_WAKEUP_NS	1000000ull
/* One read() of the totals' drain iterator: far below the kernel's iterator
 * buffer (8 pages), so one task's records (at most 16 totals and 8 of GIL
 * blame, 40 bytes each) always fit after it. */
#define EP_DRAIN_READ_BYTES	8192
/* Bytes of one interpreter frame read in a single probe read. */
#define EP_FRAME_READ_MAX	128

/* How the frame's current instruction is stored (struct ep_proc_cfg.instr_kind). */
enum ep_instr_kind {
	EP_INSTR_LASTI_BYTES = 0,	/* 3.8, 3.9: int f_lasti, a byte offset */
	EP_INSTR_LASTI_UNITS = 1,	/* 3.10: int f_lasti, in 2-byte code units */
	EP_INSTR_POINTER = 2,		/* 3.11+: pointer into co_code_adaptive */
};

#define EP_NO_OFFSET	0xffff

/* --label NAME=FUNCTION:ARGUMENT: labels at most, code objects of their
 * functions per process (a function defined twice has two), the argument
 * index at most, and a tuple's items read at most. */
#define EP_MAX_LABELS		8
#define EP_USER_LABELS		4	/* --label; --dask takes the other 4 */
#define EP_LABEL_CODES		8
#define EP_LABEL_MAX_ARG	31
#define EP_LABEL_ITEMS		4
#define EP_LABEL_FIRST_BYTES	64	/* a str alone, or a tuple's first item */
#define EP_LABEL_ITEM_BYTES	16	/* a tuple's other items */

/* Where a labelled argument's value is, and how objects are laid out
 * (struct ep_proc_cfg.lo, copied into the scratch for bpf/label.bpf.c). */
struct ep_label_offsets {
	__u16 frame_localsplus;		/* the frame's fast locals; EP_NO_OFFSET: not known */
	__u16 tp_flags;			/* PyTypeObject.tp_flags */
	__u16 unicode_length;
	__u16 unicode_state;
	__u16 unicode_ascii_size;	/* data of a compact ASCII str */
	__u16 unicode_compact_size;	/* data of a compact non-ASCII str */
	__u16 long_size;		/* ob_size, or lv_tag (3.12+) */
	__u16 long_digits;
	__u16 tuple_items;		/* PyTupleObject.ob_item (3.14+: after a cached hash) */
	__u16 pad;
};

/* What an item of a label value is (struct ep_label_blob.tag). */
enum ep_label_tag {
	EP_LT_NONE = 0,
	EP_LT_STR = 1,		/* latin-1 bytes, whole */
	EP_LT_STR_CUT = 2,	/* ... cut to the item's room */
	EP_LT_INT = 3,		/* a signed 64-bit value, little-endian */
	EP_LT_BIG_INT = 4,	/* an int of more than two 30-bit digits */
	EP_LT_TYPE = 5,		/* anything else: its type's tp_name */
	EP_LT_WIDE_STR = 6,	/* a str with characters beyond latin-1: not read */
	EP_LT_UNREADABLE = 7,
};

/*
 * A label's value as the kernel read it when it walked the stack: a str, an
 * int, or a tuple of up to EP_LABEL_ITEMS of them, in fixed places. It goes
 * as the last EP_LABEL_FRAMES entries of a stack's frames (EP_F_LABEL), and
 * its bytes are mixed into the stack's id: a stack with another value is
 * another stack, so records sent by id keep their value.
 */
struct ep_label_blob {
	__u8 label;		/* which --label */
	__u8 tuple;		/* 1: a tuple of nitems read items; 0: one item */
	__u8 nitems;
	__u8 more;		/* the tuple had more items than read */
	__u8 tag[EP_LABEL_ITEMS];	/* enum ep_label_tag */
	__u8 len[EP_LABEL_ITEMS];	/* bytes of each item's data */
	__u8 pad[4];
	__u8 first[EP_LABEL_FIRST_BYTES];
	__u8 rest[EP_LABEL_ITEMS - 1][EP_LABEL_ITEM_BYTES];
};

/*
 * Everything the kernel side needs to walk one target's Python stacks.
 * Filled per process by userspace (user/cpython/py_target_prepare.c), keyed by tgid
 * as seen in the profiler's PID namespace. Addresses are in the target's
 * memory.
 */
struct ep_proc_cfg {
	__u64 interp_addr;		/* main PyInterpreterState */
	__u64 gc_collecting_addr;	/* int gc.collecting, 0 if unknown */
	__u64 gil_locked_addr;		/* int gil.locked, 0 if unknown */
	__u64 gil_holder_addr;		/* PyThreadState *gil.last_holder */
	__u64 gil_start;		/* [gil_start, gil_end): futexes of the GIL */
	__u64 gil_end;
	__u64 code_tag_mask;		/* bits to clear from the code pointer (3.14 stackrefs) */
	__u64 start_ts;			/* profiled since (bpf_ktime_get_ns): on-CPU time counts from here */
	__u16 interp_threads_head;
	__u16 tstate_next;
	__u16 tstate_thread_id;		/* pthread_t, equal to the thread's fsbase */
	__u16 tstate_frame;		/* ->frame, ->cframe or ->current_frame */
	__u16 cframe_current_frame;	/* EP_NO_OFFSET when tstate_frame is the frame */
	__u16 frame_previous;
	__u16 frame_code;
	__u16 frame_globals;		/* its globals, part of the identity cache's key */
	__u16 frame_instr;
	__u16 frame_owner;		/* EP_NO_OFFSET before 3.11 */
	__u16 frame_read_size;		/* bytes covering all the frame fields above */
	__u16 code_adaptive;		/* offsetof(PyCodeObject, co_code_adaptive), 3.11+ */
	__u16 code_firstlineno;
	__u16 code_filename;
	__u16 code_qualname;		/* co_qualname, or co_name before 3.11 (ep_code_names) */
	__u8 instr_kind;		/* enum ep_instr_kind */
	__u8 owner_skip_min;		/* skip frames with owner >= this (C-stack shims), 0: none */
	__u8 totals_in_task;		/* its threads' totals are drained by offcpu_drain_totals */
	__u16 gc_slot;			/* its GC clock: gc_clocks[gc_slot - 1], 0: none */
	__u16 frame_is_entry;		/* 3.11: bool is_entry, else EP_NO_OFFSET (--native) */
	/* --label: the code objects of labelled functions userspace has seen
	 * (by their names) and, for each, which argument and which label */
	__u8 nlabel_codes;
	__u8 long_tagged;		/* 3.12+: an int's size is lv_tag */
	__u64 label_code[EP_LABEL_CODES];
	__u32 label_ident[EP_LABEL_CODES];
	__u8 label_arg[EP_LABEL_CODES];
	__u8 label_index[EP_LABEL_CODES];
	struct ep_label_offsets lo;
};

enum ep_event_kind {
	EP_EV_SAMPLE = 1,	/* an on-CPU sample */
	EP_EV_STACK = 2,	/* a stack walked at switch-out, named by its stack_id */
	EP_EV_GC = 3,		/* one garbage collection, with the stack that triggered it */
	EP_EV_OFFCPU = 4,	/* an off-CPU interval, exact or sampled (struct ep_offcpu_record) */
	EP_EV_FORK = 5,		/* a followed process forked a child (struct ep_proc_event) */
	EP_EV_EXEC = 6,		/* a followed process exec'ed a new program */
	EP_EV_EXIT = 7,		/* a followed process exited */
	EP_EV_NATIVE = 8,	/* --native: a sample's registers and user stack (struct ep_native_event) */
	EP_EV_CODE = 9,		/* a code object's names, read in the kernel (struct ep_code_event) */
};

/*
 * The names of a code object of a stack sampled for the first time, read by
 * the kernel in the sample's own context and sent before the stack: a
 * module's body or an exec()'d string is freed once it returns, and a
 * short-lived target exits, often before userspace reads them. Only a
 * compact latin-1 str is read, and only whole; a name that is not leaves
 * the code object for userspace to read.
 */
#define EP_CODE_NAME_MAX	128
#define EP_CODE_FILE_MAX	256
struct ep_code_event {
	__u32 kind;		/* EP_EV_CODE */
	__u32 pid;
	__u64 code;
	__u32 ident;		/* ep_code_ident() of firstlineno and the file name's address */
	__s32 firstlineno;
	__u16 name_len;		/* latin-1 bytes of co_qualname in name[] */
	__u16 file_len;		/* ... of co_filename in file[]; 0: not read */
	__u32 pad;
	__u8 name[EP_CODE_NAME_MAX];
	__u8 file[EP_CODE_FILE_MAX];
};

/* --subprocesses: a child appeared, or a followed process changed program. */
struct ep_proc_event {
	__u32 kind;		/* EP_EV_FORK, EP_EV_EXEC or EP_EV_EXIT */
	__u32 pid;
	__u32 ppid;		/* FORK: the parent */
	__u32 pad;
	__u64 ts;
};

/* Sample flags. */
#define EP_F_TRUNCATED	(1u << 0)	/* stack deeper than EP_MAX_FRAMES */
#define EP_F_IN_GC	(1u << 1)	/* interpreter was collecting garbage */
#define EP_F_NO_TSTATE	(1u << 2)	/* thread has no Python thread state (yet) */
#define EP_F_GC_GEN_KNOWN (1u << 3)	/* gc_gen is valid (from the GC probes) */
#define EP_F_READ_ERROR	(1u << 4)	/* a frame could not be read; stack cut there */
#define EP_F_STACK_BY_ID (1u << 5)	/* SAMPLE, GC: no frames follow; stack_id names a stack sent before */
#define EP_F_LABEL	(1u << 6)	/* the last EP_LABEL_FRAMES frames are a struct ep_label_blob */

struct ep_frame {
	__u64 code;		/* PyCodeObject * in the target */
	__u32 instr;		/* byte offset of the current instruction, ~0 if unknown;
				 * with --native on 3.11+, EP_INSTR_ENTRY marks the first
				 * frame of a C call of the interpreter (not in stack ids) */
	__u32 ident;		/* ep_code_ident(): tells a reused code address apart */
};

/*
 * Identity of a code object beyond its address, which the allocator reuses:
 * its first line and the address of its file name string. Module-level code
 * always starts at line 1, so the line alone would let a freed <string> code
 * object name the next module's code.
 */
static inline __u32 ep_code_ident(__s32 firstlineno, __u64 filename)
{
	return (__u32)firstlineno * 2654435761u ^ (__u32)(filename >> 3);
}

struct ep_stack_event {
	__u32 kind;		/* EP_EV_SAMPLE, EP_EV_STACK or EP_EV_GC */
	__u32 pid;		/* tgid, in the profiler's PID namespace */
	__u32 tid;
	__u16 cpu;
	__u16 flags;		/* EP_F_* */
	__u64 ts;		/* bpf_ktime_get_ns(): sample, switch-out or GC start */
	__u64 end_ts;		/* GC: its end; else 0 */
	__u64 tstate;		/* this thread's PyThreadState, 0 if none */
	__u64 gil_holder;	/* PyThreadState holding the GIL, 0 if unlocked */
	__u16 depth;		/* frames that follow, innermost first */
	__u8 gc_gen;		/* with EP_F_GC_GEN_KNOWN */
	__u8 reason;		/* unused, 0 */
	__u32 task_depth;	/* frames[task_depth] is at task_frame (below) */
	__s64 collected;	/* GC: objects collected, -1 if unknown */
	__u64 stack_id;		/* STACK: ep_stack_id() of the frames */
	__u64 weight_ns;	/* SAMPLE: time since its CPU's previous sample (its weight) */
	__u64 task_frame;	/* 3.11+: address of the outermost frame a generator or
				 * coroutine owns (an asyncio task's own coroutine,
				 * user/record/task_frames.c), 0 if none; per sample */
	struct ep_frame frames[EP_MAX_FRAMES];
};

/* _PyInterpreterFrame.owner of a frame inside a generator or coroutine
 * (FRAME_OWNED_BY_GENERATOR: 1 in 3.11 to 3.15, checked with ctypes). */
#define EP_FRAME_OWNED_BY_GENERATOR	1

/* --native (3.11+): the frame is the first one its C call of the eval loop
 * ran (its caller is in another C call of _PyEval_EvalFrameDefault). */
#define EP_INSTR_ENTRY	(1u << 31)

/*
 * --native: the user registers of a sample (DWARF numbering of x86-64: rax,
 * rdx, rcx, rbx, rsi, rdi, rbp, rsp, r8-r15, rip) and a copy of the user
 * stack from rsp, sent just before the EP_EV_SAMPLE of the same tid and ts.
 * Userspace unwinds it with the target's .eh_frame (user/native/).
 */
#define EP_NATIVE_REGS		17
#define EP_NATIVE_STACK_MAX	32768	/* bytes of stack copied at most */
#define EP_NATIVE_F_NO_REGS	(1u << 0)	/* in the kernel, user registers unknown */

struct ep_native_event {
	__u32 kind;		/* EP_EV_NATIVE */
	__u32 pid;
	__u32 tid;
	__u32 stack_len;	/* bytes of stack[] that follow */
	__u64 ts;		/* the sample's */
	__u32 flags;		/* EP_NATIVE_F_* */
	__u32 pad;
	__u64 regs[EP_NATIVE_REGS];
	__u8 stack[EP_NATIVE_STACK_MAX];
};

#define EP_NATIVE_EVENT_HDR_SIZE ((unsigned long)&((struct ep_native_event *)0)->stack)

#define EP_LABEL_FRAMES	(sizeof(struct ep_label_blob) / sizeof(struct ep_frame))

#define EP_STACK_EVENT_HDR_SIZE	((unsigned long)&((struct ep_stack_event *)0)->frames)

/*
 * Why a thread left the CPU: one reason per OFF(R) row of the states
 * (include/ep_states.h), EP_OFF_<R>, in row order (EP_OFF_GIL_GC: a GIL
 * wait while the holder was collecting). The numbers are this build's own,
 * shared by its kernel side and userspace only.
 */
#define EP_REASON_ENUM_OFF(r)	EP_OFF_##r,
#define EP_REASON_ENUM_ON_CPU
#define EP_REASON_ENUM_NONE
#define EP_REASON_ENUM(id, reason, ...)	EP_REASON_ENUM_##reason
enum ep_offcpu_reason {
	EP_STATES(EP_REASON_ENUM)
	EP_OFF_REASONS,
};

/* The kernel's per-thread totals also hold the thread's exact on-CPU time
 * (switch-in to switch-out), under this reason after the off-CPU ones. */
#define EP_TOTAL_ON_CPU		EP_OFF_REASONS
#define EP_TOTAL_KINDS		(EP_OFF_REASONS + 1)

/* x86-64 syscall numbers the off-CPU classifier knows */
#define EP_NR_read		0
#define EP_NR_write		1
#define EP_NR_poll		7
#define EP_NR_pread64		17
#define EP_NR_readv		19
#define EP_NR_select		23
#define EP_NR_nanosleep		35
#define EP_NR_connect		42
#define EP_NR_accept		43
#define EP_NR_sendto		44
#define EP_NR_recvfrom		45
#define EP_NR_sendmsg		46
#define EP_NR_recvmsg		47
#define EP_NR_wait4		61
#define EP_NR_futex		202
#define EP_NR_io_getevents	208
#define EP_NR_clock_nanosleep	230
#define EP_NR_epoll_wait	232
#define EP_NR_pselect6		270
#define EP_NR_ppoll		271
#define EP_NR_epoll_pwait	281
#define EP_NR_accept4		288
#define EP_NR_preadv		295
#define EP_NR_recvmmsg		299
#define EP_NR_io_uring_enter	426
#define EP_NR_epoll_pwait2	441
#define EP_NR_futex_waitv	449

static inline int ep_is_io_syscall(long nr)
{
	switch (nr) {
	case EP_NR_read: case EP_NR_write: case EP_NR_poll: case EP_NR_pread64:
	case EP_NR_readv: case EP_NR_connect: case EP_NR_accept: case EP_NR_sendto:
	case EP_NR_recvfrom: case EP_NR_sendmsg: case EP_NR_recvmsg:
	case EP_NR_io_getevents: case EP_NR_epoll_wait: case EP_NR_ppoll:
	case EP_NR_epoll_pwait: case EP_NR_accept4: case EP_NR_preadv:
	case EP_NR_recvmmsg: case EP_NR_io_uring_enter: case EP_NR_epoll_pwait2:
		return 1;
	}
	return 0;
}

/*
 * Why a thread that is not runnable is off the CPU, from the syscall it is
 * blocked in (-1: none) and that syscall's first argument. Used by the
 * kernel at switch-out and by userspace for threads already blocked when a
 * recording starts, so both agree.
 */
static inline __u8 ep_classify_blocked(long nr, __u64 arg0, int uninterruptible,
				       __u64 gil_start, __u64 gil_end)
{
	if (nr == EP_NR_futex || nr == EP_NR_futex_waitv) {
		if (nr == EP_NR_futex && arg0 >= gil_start && arg0 < gil_end)
			return EP_OFF_GIL;
		return EP_OFF_LOCK;
	}
	if (nr == EP_NR_nanosleep || nr == EP_NR_clock_nanosleep)
		return EP_OFF_SLEEP;
	/* select() and pselect() with no descriptors are how older Pythons sleep */
	if (nr == EP_NR_select || nr == EP_NR_pselect6)
		return arg0 == 0 ? EP_OFF_SLEEP : EP_OFF_IO;
	if (ep_is_io_syscall(nr) || uninterruptible)	/* uninterruptible: page faults, disk */
		return EP_OFF_IO;
	return EP_OFF_OTHER;
}

/*
 * Stack ids: a hash of the walked frames, computed the same way by the kernel
 * (bpf/pystack.bpf.h) and by userspace for the stacks it walks itself, so an
 * off-CPU record names its stack in a few bytes. 0 means no stack.
 */
static inline __u64 ep_stack_mix(__u64 h, __u64 code, __u32 instr, __u32 ident)
{
	/* the frame's own word is mixed off the chain through h, which then
	 * waits on one xor and one multiply per frame (a bijection of h for a
	 * given frame: stacks that differ in one frame never share an id) */
	__u64 v = code * 0x9e3779b97f4a7c15ull + ((__u64)instr << 32 | ident);

	return (h ^ v) * 0xff51afd7ed558ccdull;
}

static inline __u64 ep_stack_id(__u64 h, __u16 flags)
{
	h ^= h >> 29;		/* the multiplies leave the low bits weak */
	h ^= flags & (EP_F_TRUNCATED | EP_F_READ_ERROR | EP_F_LABEL);
	return h ? h : 1;
}

/*
 * A process's garbage-collection clock, in one word so that a reader on
 * another CPU never sees half an update: the GC time of every finished
 * collection, or, while one runs, (its start - that total) with the top bit
 * set. gccum(t) is then the process's GC time up to t, and the part of a GIL
 * wait [a, b] spent behind a collection is gccum(b) - gccum(a): collections
 * of one process never overlap (the collector holds the GIL).
 */
#define EP_GC_RUNNING	(1ull << 63)

/* The GC clocks are an array, one slot per process whose collections are
 * probed (its cfg->gc_slot): a hash look-up by pid cost ~15 ns a switch on
 * the switch path (docs/benchmarks.md), an array's is inlined. The pid
 * tells a slot given to another process since from the process's own. */
#define EP_GC_CLOCK_SLOTS	256

struct ep_gc_clock {
	__u32 pid;		/* 0: free */
	__u32 pad;
	__u64 clock;		/* ep_gc_clock_* */
};

static inline __u64 ep_gc_clock_read(__u64 clock, __u64 t)
{
	__u64 base = clock & ~EP_GC_RUNNING;

	if (!(clock & EP_GC_RUNNING))
		return base;
	return t > base ? t - base : 0;
}

static inline __u64 ep_gc_clock_start(__u64 clock, __u64 now)
{
	if (clock & EP_GC_RUNNING)	/* a start without its end: keep the earlier */
		return clock;
	return (now - clock) | EP_GC_RUNNING;
}

static inline __u64 ep_gc_clock_stop(__u64 clock, __u64 now)
{
	return ep_gc_clock_read(clock, now) & ~EP_GC_RUNNING;
}

/* Flags of an off-CPU record and of the kernel's per-thread totals. */
#define EP_IV_EXACT	(1u << 0)	/* weight is the interval itself, over the threshold */
#define EP_IV_OWN_GC	(1u << 1)	/* the thread was itself collecting (the pause's time) */
#define EP_IV_GC_FIRST	(1u << 2)	/* a collection ran at switch-out: GC part comes first */
#define EP_IV_SEEDED	(1u << 3)	/* opened by userspace at the start of the recording */
#define EP_IV_OPEN	(1u << 4)	/* still off the CPU when userspace looked */
#define EP_IV_STACK_LATER (1u << 5)	/* stack taken on the thread's return to user mode */

/*
 * The GIL/GC split of a wait, the one arithmetic of the kernel's switch-in
 * (bpf/offcpu.bpf.c, bpf/blame.bpf.h) and of userspace closing a wait still
 * open (user/record/session_offcpu.c). Macros, not functions: the switch
 * program then compiles to the instructions it had when they were written
 * out there (an inline function's call changed its code: -13 and +5
 * instructions). A plain GIL wait (not of a thread itself collecting) may
 * have been spent behind a collection of its process:
 */
#define EP_GIL_WAIT_MAY_BE_GC(reason, flags) \
	((reason) == EP_OFF_GIL && !((flags) & EP_IV_OWN_GC))

/* ... that part is the growth of the process's GC clock over the wait
 * (gccum at its end less gccum at its start, 0 if unknown), at most the
 * wait's len: gc_ns is cut to it in place. */
#define EP_GIL_WAIT_GC_CAP(gc_ns, len)		\
	do {					\
		if ((gc_ns) > (len))		\
			(gc_ns) = (len);	\
	} while (0)

/* The part of a GIL wait of len ns put on its holder as waiting for GC (the
 * rest is plain GIL wait): all of a wait classified as waiting for GC, else
 * the part behind a collection, gc_ns, which is set to it in place. */
#define EP_GIL_WAIT_BLAME_GC(reason, len, gc_ns)	\
	do {						\
		if ((reason) == EP_OFF_GIL_GC)		\
			(gc_ns) = (len);		\
	} while (0)

/* A stack a sample or collection has sent whole (bpf/maps.bpf.h, sent_stacks);
 * userspace deletes one to have it sent again. */
struct ep_sent_key {
	__u64 stack_id;
	__u32 pid;
	__u32 pad;
};

/*
 * An off-CPU interval sent to userspace: every one over the threshold
 * (EP_IV_EXACT, weight = end - start), and shorter ones sampled at points
 * spread over the thread's short off-CPU time, one period apart on average
 * (weight = the period times the points the interval holds), so each
 * stack's off-CPU weight is an unbiased measure of its time.
 */
struct ep_offcpu_record {
	__u32 kind;		/* EP_EV_OFFCPU */
	__u32 pid;
	__u32 tid;
	__u8 reason;		/* enum ep_offcpu_reason, GIL split by gc_ns */
	__u8 flags;		/* EP_IV_* */
	__u8 gc_gen;
	__u8 pad;
	__u64 start_ts;
	__u64 end_ts;
	__u64 weight_ns;
	__u64 gc_ns;		/* of a GIL wait: the part behind a collection */
	__u64 stack_id;		/* 0: not walked (preempted) */
	__u64 holder;		/* of a GIL wait: ep_gil_blame(), the holder's PyThreadState */
};

/* Exact time per thread and reason, summed in the kernel and drained by
 * userspace: in the thread's task storage, taken out by the drain iterator
 * (offcpu_drain_totals, one struct ep_totals_entry per nonzero total), or
 * in the map offcpu_totals for threads exiting, and processes without an
 * iterator. A GIL wait is split into its GIL-wait and waiting-for-GC parts. */
struct ep_totals_key {
	__u32 pid;
	__u32 tid;
	__u8 reason;		/* enum ep_offcpu_reason */
	__u8 flags;		/* EP_IV_OWN_GC or 0; EP_TK_BLAME */
	__u8 pad[6];
	__u64 holder;		/* with EP_TK_BLAME: ep_gil_blame() of the waits; else 0 */
};

/*
 * Who held the GIL during a GIL wait ("blame"). The GIL's last holder and
 * its switch number (incremented by every change of holder: take_gil bumps
 * it only when the taker is not the last holder) sit side by side after
 * each other in every version (last_holder, locked, switch_number: 8 bytes
 * apart), read in one probe read at the waiter's switch-out and again once
 * the wait ends, in the waiter's own address space: on its return to user
 * mode (rseq_update), or at the switch-in when the thread switched out is of
 * the same process. The same holder and switch number at both ends: that
 * holder held the GIL the whole wait (a wait ends before the waiter takes
 * the GIL, so the last holder is still the one it waited behind). A
 * different one: the GIL changed hands during the wait, at a moment not
 * observed: the wait is counted as changed hands, not split by a guess;
 * unless the GIL was free when the wait began, which is how CPython's forced
 * switch waits (the thread that dropped the GIL on request waits until the
 * requester has taken it): no thread held the GIL then, a hand-over.
 * A GIL wait's exact time, plain and behind a collection, is added under its
 * holder next to the thread's totals (EP_TK_BLAME totals), so the blame of a
 * thread adds up exactly to its GIL waits.
 */
#define EP_TK_BLAME		(1u << 6)	/* a totals key of GIL blame: holder is set */
#define EP_BLAME_UNKNOWN	0		/* holder not observed (no GIL address, unreadable) */
#define EP_BLAME_CHANGED	1		/* the GIL changed hands during the wait */
#define EP_BLAME_HANDOFF	2		/* the GIL was free, then taken by another */
#define EP_BLAME_SLOTS		4		/* holders a thread's storage keeps between drains */

struct ep_gil_seen {
	__u64 holder;		/* gil.last_holder, 0: not read */
	__u64 switch_number;	/* gil.switch_number */
	__u64 locked;		/* gil.locked */
};

static inline __u64 ep_gil_blame(const struct ep_gil_seen *out, const struct ep_gil_seen *in)
{
	if (!out->holder || !in->holder)
		return EP_BLAME_UNKNOWN;
	if (out->holder == in->holder && out->switch_number == in->switch_number)
		return out->holder;
	return out->locked ? EP_BLAME_CHANGED : EP_BLAME_HANDOFF;
}

struct ep_totals {
	__u64 count;
	__u64 ns;
};

struct ep_totals_entry {
	struct ep_totals_key key;
	struct ep_totals val;
};

/* A GIL holder's share of a thread's GIL waits: [0] plain, [1] behind a collection. */
struct ep_blame_slot {
	__u64 holder;		/* ep_gil_blame(); a slot with no time may be taken by another */
	struct ep_totals t[2];
};

/*
 * What the kernel keeps per profiled thread while it is off the CPU (task
 * storage, freed with the task). Userspace writes one for a thread already
 * blocked when the recording starts, and reads them when it ends.
 */
struct ep_offcpu_task {
	__u64 off_ts;		/* switch-out time, 0: on the CPU */
	__u64 on_ts;		/* switch-in time (or the last drain's), 0: off the CPU */
	__u64 ran_ns;		/* its CPU time (se.sum_exec_runtime) at the last switch-out */
	__u64 gc_clock_out;	/* gccum at switch-out */
	__u64 stack_id;		/* stack at switch-out, 0 if not walked */
	__u64 stack_key;	/* fingerprint of the innermost frames at the last walk */
	__u64 stack_id_cached;	/* ... and the stack that walk found */
	__u64 tstate;		/* the thread's PyThreadState when last found, 0: unknown */
	__u64 short_due_ns;	/* short off-CPU time left to the next sampling point, 0: none drawn */
	__u64 unsampled_ns;	/* on-CPU time since its last sample, up to its last switch-out */
	__u32 pid, tid;		/* ids in the profiler's namespace */
	__u8 reason;		/* enum ep_offcpu_reason */
	__u8 flags;		/* EP_IV_OWN_GC, EP_IV_GC_FIRST, EP_IV_SEEDED, EP_IV_STACK_LATER */
	__u8 gc_gen;		/* with EP_IV_OWN_GC */
	__u8 totals_in_task;	/* the process's cfg->totals_in_task at switch-out */
	__u8 primed;		/* made by the drain iterator; no switch-out since */
	__u8 pad;
	__u16 gc_slot;		/* the process's cfg->gc_slot at switch-out */
	/* kind != 0: a record to send once the stack is known, on the thread's
	 * return to user mode (EP_IV_STACK_LATER) */
	struct ep_offcpu_record pending;
	/* exact time per [own collection][reason, or EP_TOTAL_ON_CPU] not yet
	 * drained: taken out by the drain iterator, or at the thread's exit
	 * into offcpu_totals */
	struct ep_totals totals[2][EP_TOTAL_KINDS];
	/* a GIL wait: the GIL as the switch-out saw it, and the wait's time
	 * (plain, behind a collection) whose holder is decided on the thread's
	 * return to user mode, where its end is read (EP_IV_STACK_LATER) */
	struct ep_gil_seen gil_out;
	__u64 blame_ns[2];
	__u64 blame_start, blame_end;	/* ... the wait they are of */
	__u8 blame_gc_first;		/* ... whose part behind a collection came first */
	__u8 blame_pad[7];
	__u64 gil_addr;			/* where the wait's end reads the GIL, 0: nowhere */
	/* GIL blame not yet drained, per holder (see ep_gil_blame) */
	struct ep_blame_slot blame[EP_BLAME_SLOTS];
	/* GIL waits whose GIL was not read (the thread's waits are read at most
	 * one per ep_gil_read_gap_ns on average), [0] plain, [1] behind a
	 * collection: the drain spreads them over the holders of the waits
	 * read in the same period, in proportion */
	struct ep_totals blame_unread[2];
	__u64 gil_read_due_ts;		/* its next GIL wait from this time on is read */
};

/*
 * Userspace reaches a thread's off-CPU storage through the task iterator
 * offcpu_task_io, not through a pidfd of the thread (Linux 6.9+ only): it
 * queues an operation under the thread's tid (map offcpu_task_ops), and the
 * iterator applies it, then writes an ep_task_dump per thread with storage.
 */
enum ep_task_op_kind {
	EP_TASK_SEED = 1,	/* open seed's interval, unless the thread has storage */
	EP_TASK_RESTART = 2,	/* interval at expect_off_ts: now starts at off_ts (0: closed);
				 * on_ts: the run since an unseen switch-in starts there */
};

#define EP_TASK_OP_TRIED	1	/* ep_task_op.done: run, not applied */
#define EP_TASK_OP_APPLIED	2	/* ... run and applied */

struct ep_task_op {
	__u32 op;		/* enum ep_task_op_kind */
	__u32 done;		/* 0 (userspace), then EP_TASK_OP_TRIED or _APPLIED */
	__u64 expect_off_ts;
	__u64 off_ts;
	__u64 gc_clock_out;
	__u64 on_ts;		/* EP_TASK_RESTART: back on a CPU, unseen: its run counts from here (else 0) */
	struct ep_offcpu_task seed;
};

struct ep_task_dump {
	__u32 tid;		/* in the profiler's PID namespace */
	__u32 applied;		/* 1: this run applied the thread's queued operation */
	__u64 ran_now_ns;	/* its CPU time (se.sum_exec_runtime) as the dump read it */
	struct ep_offcpu_task st;
};

/*
 * A thread whose switch-in went unseen (task storage refused then), with
 * its interval off the CPU still open at now: it came back at now less the
 * CPU time it gained since its last switch-out (ran_then, ran_now: its
 * se.sum_exec_runtime then and now), not before the interval began at
 * off_ts. 0 if it gained none: it has not run. The switch-out that finds
 * such an interval and the end of a recording close it there alike.
 */
static inline __u64 ep_unseen_return(__u64 off_ts, __u64 ran_then, __u64 ran_now, __u64 now)
{
	__u64 ran;

	if (!ran_then || ran_now <= ran_then)
		return 0;
	ran = ran_now - ran_then;
	return now > off_ts && now - off_ts > ran ? now - ran : off_ts;
}

/* Per-CPU counters, indexed by enum ep_counter. */
enum ep_counter {
	EP_CNT_SAMPLES = 0,	/* on-CPU samples taken */
	EP_CNT_LOST = 1,	/* ring buffer full: record dropped */
	EP_CNT_NO_TSTATE = 2,	/* samples of threads without a Python thread state */
	EP_CNT_GC_LOST = 3,	/* collection ends with no start seen */
	EP_CNT_OFFCPU = 4,	/* off-CPU intervals timed in the kernel */
	EP_CNT_OFFCPU_SENT = 5,	/* ... sent with their stack (exact or sampled) */
	EP_CNT_MAP_FULL = 6,	/* a map update failed: totals, task storage, GC state */
	EP_CNT_STACK_WALKS = 7,	/* full stack walks at switch-out */
	EP_CNT_STACK_REUSED = 8,	/* switch-outs that reused the thread's last walk */
	EP_CNT_STACK_LATER = 9,		/* stacks of sent intervals taken on return to user mode */
	EP_CNT_STACK_LATER_LOST = 10,	/* ... sent without: a second record, or the thread's exit, came first */
	EP_CNT_GIL_SPLIT = 11,		/* GIL waits split between two holders at a hand-over seen */
	EP_CNT_GIL_BLAMED = 12,		/* GIL waits whose holder was settled in the kernel */
	EP_CNT_STORAGE_BUSY = 13,	/* switch-outs refused task storage: its lock was held */
	EP_CNT_SWITCH_IN_UNSEEN = 14,	/* switch-ins refused it: their interval closed at the next switch-out */
	EP_CNT_GIL_UNREAD = 15,		/* GIL waits not read (gil_read_due): spread by the drain */
	EP_CNT_MAX = 16,
};

#endif /* EBPFPROF_H */
