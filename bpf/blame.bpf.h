/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Who held the GIL (docs/DESIGN.md, "Who held the GIL: the mechanics"): a
 * GIL wait's exact time put on the holder read at its start and at its end,
 * split where the GIL was seen to change hands, kept in the waiter's task
 * storage (four holders, a map past that), drained with its totals and at
 * its exit; and the GIL's read, at a wait's start and at its end. Included
 * by the off-CPU files whose programs settle or drain blame (the switch,
 * the return to user mode, the drain and the exit), after the totals'
 * helpers (add_key_map, add_blame_map, offcpu_totals.bpf.h) it uses.
 */
#ifndef EP_BLAME_BPF_H
#define EP_BLAME_BPF_H

/* Where the GIL's last holder, flag and switch number are read from (in
 * that order, 8 bytes apart, as in every version), 0: unknown. */
static __always_inline __u64 gil_addr(const struct ep_proc_cfg *cfg)
{
	return cfg->gil_holder_addr + 8 == cfg->gil_locked_addr ? cfg->gil_holder_addr : 0;
}

/* The GIL's last holder and switch number (see ep_gil_blame), in one read
 * at addr (gil_addr()) of the current task's memory; holder 0 when not known. */
static __always_inline void read_gil(__u64 addr, struct ep_gil_seen *seen)
{
	__u64 w[3];

	seen->holder = 0;
	seen->switch_number = 0;
	seen->locked = 0;
	if (!addr || bpf_probe_read_user(w, sizeof(w), (void *)addr))
		return;
	seen->holder = w[0];
	seen->locked = (__u32)w[1];	/* an int */
	seen->switch_number = w[2];
}

static __always_inline int blame_slot_empty(const struct ep_blame_slot *b)
{
	return !b->t[0].count && !b->t[0].ns && !b->t[1].count && !b->t[1].ns;
}

/* The holder's slot in the thread's storage: its own, else one without
 * time (the drain reads a slot's time before its holder, and takes a slot's
 * time out only after reading both, so a slot it reads as holding time
 * keeps its holder until then). NULL when all are taken: the map then. */
static __always_inline struct ep_blame_slot *blame_slot(struct ep_offcpu_task *st, __u64 holder)
{
	int i;

	for (i = 0; i < EP_BLAME_SLOTS; i++)
		if (st->blame[i].holder == holder)
			return &st->blame[i];
	for (i = 0; i < EP_BLAME_SLOTS; i++) {
		if (blame_slot_empty(&st->blame[i])) {
			EP_ONCE(st->blame[i].holder) = holder;
			return &st->blame[i];
		}
	}
	return NULL;
}

/* Adds a GIL wait's time, plain (ns[0]) and behind a collection (ns[1]),
 * under its holder: in the thread's storage as its totals are, else (an
 * exiting thread, a process without a drain iterator, slots full) the map. */
static __always_inline void add_blame(struct task_struct *task, struct ep_offcpu_task *st,
				      __u64 holder, const __u64 ns[2])
{
	struct ep_blame_slot *slot = NULL;
	int kind;

	if (st->totals_in_task && !(task->flags & PF_EXITING))
		slot = blame_slot(st, holder);
	for (kind = 0; kind < 2; kind++) {
		if (!ns[kind])
			continue;
		if (!slot) {
			add_blame_map(st, holder, kind, 1, ns[kind]);
			continue;
		}
		__sync_fetch_and_add(&slot->t[kind].count, 1);
		__sync_fetch_and_add(&slot->t[kind].ns, ns[kind]);
	}
}

/* Per process (slot pid % EP_HANDOFF_SLOTS, the pid in it): when waiters
 * of its GIL went to take it, by the switch number their taking makes (4
 * latest): the moment of a hand-over, approximately (a waiter woken with
 * another may lose the GIL to it). An array: its lookup is inlined, where a
 * hash lookup on every GIL wait cost ~50 ns. Two processes sharing a slot
 * take it from each other (a split then not made). */
#define EP_HANDOFF_SLOTS	1024

struct ep_gil_handoffs {
	__u32 pid;
	__u32 pad;
	__u64 switch_number[4];
	__u64 ts[4];
};

EP_OFFCPU_MAP struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, EP_HANDOFF_SLOTS);
	__type(key, __u32);
	__type(value, struct ep_gil_handoffs);
} gil_handoffs SEC(".maps");

static __always_inline struct ep_gil_handoffs *handoffs_of(__u32 pid)
{
	__u32 slot = pid % EP_HANDOFF_SLOTS;

	return bpf_map_lookup_elem(&gil_handoffs, &slot);
}

/* A waiter returns to take the GIL (in: as it is now): its switch number
 * becomes in's + 1 about now. */
static __always_inline void note_taking(__u32 pid, const struct ep_gil_seen *in, __u64 now)
{
	struct ep_gil_handoffs *h = handoffs_of(pid);
	__u64 sn = in->switch_number + 1;

	if (!in->holder || !h)
		return;
	if (h->pid != pid) {
		h->pid = pid;
		h->switch_number[0] = h->switch_number[1] = 0;
		h->switch_number[2] = h->switch_number[3] = 0;
	}
	h->switch_number[sn & 3] = sn;
	h->ts[sn & 3] = now;
}

/* When the GIL went to the holder that made switch number sn; 0: not seen. */
static __always_inline __u64 handoff_at(__u32 pid, __u64 sn)
{
	struct ep_gil_handoffs *h = handoffs_of(pid);

	return h && h->pid == pid && h->switch_number[sn & 3] == sn ? h->ts[sn & 3] : 0;
}

static __always_inline __u64 min_u64(__u64 a, __u64 b)
{
	return a < b ? a : b;
}

/*
 * A wait across exactly one hand-over whose moment a waiter's taking showed:
 * the part before it to the holder at the start, the rest to the one at the
 * end, the part behind a collection where it was (first, or last). 0 when
 * it cannot be split.
 */
static __always_inline int split_at_handoff(struct task_struct *task, struct ep_offcpu_task *st,
					    const struct ep_gil_seen *in, const __u64 ns[2])
{
	__u64 at, before, a[2], b[2];

	if (in->switch_number != st->gil_out.switch_number + 1 || !st->gil_out.locked)
		return 0;
	at = handoff_at(st->pid, in->switch_number);
	if (at <= st->blame_start || at >= st->blame_end)
		return 0;
	before = at - st->blame_start;
	/* constant indexes: the verifier refuses a variable one on the stack */
	if (st->blame_gc_first) {
		a[1] = min_u64(ns[1], before);
		a[0] = min_u64(ns[0], before - a[1]);
	} else {
		a[0] = min_u64(ns[0], before);
		a[1] = min_u64(ns[1], before - a[0]);
	}
	b[0] = ns[0] - a[0];
	b[1] = ns[1] - a[1];
	add_blame(task, st, st->gil_out.holder, a);
	add_blame(task, st, in->holder, b);
	count(EP_CNT_GIL_SPLIT);
	return 1;
}

/* The GIL wait whose end is seen now (in: the GIL then) goes to its
 * holder(s); a record still waiting for its stack names the one at its
 * end. taking: the waiter returns to take the GIL now. Returns the holder. */
static __always_inline __u64 settle_blame(struct task_struct *task, struct ep_offcpu_task *st,
					  const struct ep_gil_seen *in, int taking)
{
	__u64 ns[2] = { st->blame_ns[0], st->blame_ns[1] }, holder;

	if (!ns[0] && !ns[1])
		return EP_BLAME_UNKNOWN;
	st->blame_ns[0] = st->blame_ns[1] = 0;
	count(EP_CNT_GIL_BLAMED);
	holder = ep_gil_blame(&st->gil_out, in);
	if (holder == EP_BLAME_CHANGED && split_at_handoff(task, st, in, ns))
		holder = in->holder;
	else
		add_blame(task, st, holder, ns);
	if (taking)
		note_taking(st->pid, in, st->blame_end);
	if (st->pending.kind)
		st->pending.holder = holder;
	return holder;
}

/* A GIL wait whose GIL was not read (gil_read_due; or no GIL to read):
 * its time, plain and behind a collection, for the drain to spread over the
 * holders of the waits read (drain_blame); to no holder in the map where
 * there is no drain. */
static __always_inline void add_unread(struct task_struct *task, struct ep_offcpu_task *st,
				       __u64 plain_ns, __u64 gc_ns)
{
	__u64 ns[2] = { plain_ns, gc_ns };
	int kind;

	for (kind = 0; kind < 2; kind++) {
		if (!ns[kind])
			continue;
		if (!st->totals_in_task || (task->flags & PF_EXITING)) {
			add_blame_map(st, EP_BLAME_UNKNOWN, kind, 1, ns[kind]);
			continue;
		}
		__sync_fetch_and_add(&st->blame_unread[kind].count, 1);
		__sync_fetch_and_add(&st->blame_unread[kind].ns, ns[kind]);
	}
}

/*
 * A GIL wait ends: its time goes to the holder once the GIL is read again,
 * in the waiter's own address space: on its return to user mode when its
 * stack is taken then (EP_IV_STACK_LATER), else now if gil_readable (the
 * thread leaving the CPU, whose memory a read here reaches, is of the same
 * process), else not at all (holder unknown). Returns the holder if decided now.
 */
static __always_inline __u64 blame_at_switch_in(struct task_struct *next, struct ep_offcpu_task *st,
						__u64 len, __u64 gc_ns, int gil_readable)
{
	struct ep_gil_seen in = {};

	if (EP_BENCH_NO_GIL)
		return EP_BLAME_UNKNOWN;
	if ((st->reason != EP_OFF_GIL && st->reason != EP_OFF_GIL_GC) ||
	    (st->flags & EP_IV_OWN_GC))
		return EP_BLAME_UNKNOWN;
	EP_GIL_WAIT_BLAME_GC(st->reason, len, gc_ns);
	if (!st->gil_addr) {
		count(EP_CNT_GIL_UNREAD);
		add_unread(next, st, len - gc_ns, gc_ns);
		return EP_BLAME_UNKNOWN;
	}
	st->blame_ns[0] += len - gc_ns;
	st->blame_ns[1] += gc_ns;
	st->blame_start = st->off_ts;
	st->blame_end = st->off_ts + len;
	st->blame_gc_first = !!(st->flags & EP_IV_GC_FIRST);
	if (st->flags & EP_IV_STACK_LATER)
		return EP_BLAME_UNKNOWN;
	if (gil_readable)
		read_gil(st->gil_addr, &in);
	return settle_blame(next, st, &in, 1);
}

/* The part of the unread waits' u a slot of ns gets, of sum over the
 * slots read: in proportion (to 2^-20), the last slot what is left, so the
 * parts add up to u exactly. */
static __always_inline __u64 unread_part(__u64 u, __u64 ns, __u64 sum, __u64 *left, int last)
{
	__u64 part = *left;

	if (!last)	/* sum > 0: a slot with time is last */
		part = min_u64(part, (u * ((ns << 20) / sum)) >> 20);
	*left -= part;
	return part;
}

/* One EP_TK_BLAME record of the thread's, taken out of where it came from
 * (slot: one of its blame slots, or NULL) and its unread part once written. */
static __always_inline int put_blame(struct seq_file *seq, struct ep_offcpu_task *st,
				     struct ep_totals_entry *e, int kind, struct ep_totals *slot,
				     const struct ep_totals *got, const struct ep_totals *part)
{
	e->key.reason = kind ? EP_OFF_GIL_GC : EP_OFF_GIL;
	e->val.count = got->count + part->count;
	e->val.ns = got->ns + part->ns;
	if (bpf_seq_write(seq, e, sizeof(*e)))
		return -1;
	if (slot) {
		__sync_fetch_and_add(&slot->count, -got->count);
		__sync_fetch_and_add(&slot->ns, -got->ns);
	}
	__sync_fetch_and_add(&st->blame_unread[kind].count, -part->count);
	__sync_fetch_and_add(&st->blame_unread[kind].ns, -part->ns);
	return 0;
}

/* Takes out the thread's GIL blame of one kind as EP_TK_BLAME records: each
 * slot's time read before its holder (see blame_slot), the waits not read
 * spread over the slots in proportion to their time, or to no holder when
 * no wait of the period was read. */
static __always_inline void drain_blame_kind(struct seq_file *seq, struct ep_offcpu_task *st,
					     struct ep_totals_entry *e, int kind)
{
	struct ep_totals got[EP_BLAME_SLOTS], unread, part;
	__u64 holder[EP_BLAME_SLOTS], sum = 0, left_ns, left_n;
	int i, last = -1;

	unread.count = EP_ONCE(st->blame_unread[kind].count);
	unread.ns = EP_ONCE(st->blame_unread[kind].ns);
#pragma unroll
	for (i = 0; i < EP_BLAME_SLOTS; i++) {
		got[i].count = EP_ONCE(st->blame[i].t[kind].count);
		got[i].ns = EP_ONCE(st->blame[i].t[kind].ns);
		if (got[i].ns) {
			sum += got[i].ns;
			last = i;
		}
	}
#pragma unroll
	for (i = 0; i < EP_BLAME_SLOTS; i++)
		holder[i] = EP_ONCE(st->blame[i].holder);
	left_ns = unread.ns;
	left_n = unread.count;
#pragma unroll
	for (i = 0; i < EP_BLAME_SLOTS; i++) {
		if (!got[i].count && !got[i].ns)
			continue;
		part = (struct ep_totals){};
		if (last >= 0) {
			part.ns = unread_part(unread.ns, got[i].ns, sum, &left_ns, i == last);
			part.count = unread_part(unread.count, got[i].ns, sum, &left_n, i == last);
		}
		e->key.holder = holder[i];
		if (put_blame(seq, st, e, kind, &st->blame[i].t[kind], &got[i], &part))
			return;
	}
	if (last >= 0 || (!unread.count && !unread.ns))
		return;
	e->key.holder = EP_BLAME_UNKNOWN;
	part = (struct ep_totals){};
	put_blame(seq, st, e, kind, NULL, &part, &unread);	/* the unread whole */
}

/* Takes out the thread's GIL blame as EP_TK_BLAME records. */
static __always_inline void drain_blame(struct seq_file *seq, struct ep_offcpu_task *st,
					struct ep_totals_entry *e)
{
	e->key.flags = EP_TK_BLAME;
	drain_blame_kind(seq, st, e, 0);
	drain_blame_kind(seq, st, e, 1);
}

/* Takes out the totals of one thread as ep_totals_entry records: each
 * subtracted once written, so what a switch-in adds meanwhile stays for the
 * next drain. Userspace reads at most EP_DRAIN_READ_BYTES at a time, so one
 * task's records always fit the iterator's buffer: a record written is a
 * record delivered (the kernel would show a task again after an overflow,
 * and what was subtracted would be lost). */

/* Takes what t holds out of it and adds it to the map under *holder, read
 * after the time (see blame_slot). */
static __always_inline void move_blame_to_map(struct ep_offcpu_task *st, struct ep_totals *t,
					      const __u64 *holder, int kind)
{
	__u64 n = EP_ONCE(t->count), ns = EP_ONCE(t->ns);

	if (!n && !ns)
		return;
	__sync_fetch_and_add(&t->count, -n);
	__sync_fetch_and_add(&t->ns, -ns);
	add_blame_map(st, EP_ONCE(*holder), kind, n, ns);
}

/* An exiting thread's GIL blame to the map; a wait whose end was not seen,
 * and the last waits not read (no drain to spread them), go to no holder. */
static __always_inline void exit_blame(struct task_struct *task, struct ep_offcpu_task *st)
{
	struct ep_gil_seen none = {};
	const __u64 unknown = EP_BLAME_UNKNOWN;
	int i, kind;

	settle_blame(task, st, &none, 0);
	for (kind = 0; kind < 2; kind++) {
		move_blame_to_map(st, &st->blame_unread[kind], &unknown, kind);
		for (i = 0; i < EP_BLAME_SLOTS; i++)
			move_blame_to_map(st, &st->blame[i].t[kind], &st->blame[i].holder, kind);
	}
}

#endif
