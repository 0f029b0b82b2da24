// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Off-CPU intervals: threads seeded as blocked, intervals closed at a cut or
 * a removal, the kernel's exact totals drained. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "clock.h"
#include "grow.h"
#include "remote.h"
#include "session_priv.h"

struct drain_iter *session_find_iter(struct session *s, pid_t pid)
{
	size_t i;

	for (i = 0; i < s->niters; i++)
		if (s->iters[i].pid == pid)
			return &s->iters[i];
	return NULL;
}

/* prog as a task iterator over the threads of process pid (Linux 6.1+);
 * before 6.1, over every task (the programs skip those without state). */
static struct bpf_link *attach_task_iter(struct session *s, struct bpf_program *prog, pid_t pid)
{
	DECLARE_LIBBPF_OPTS(bpf_iter_attach_opts, opts);
	union bpf_iter_link_info linfo = { 0 };

	if (!s->kf.has[KF_ITER_TASK_PID])
		return bpf_program__attach_iter(prog, NULL);
	linfo.task.pid = pid;
	opts.link_info = &linfo;
	opts.link_info_len = sizeof(linfo);
	return bpf_program__attach_iter(prog, &opts);
}

/* The iterator of pid's threads for offcpu_drain_totals: 0 once it exists,
 * so the kernel keeps their totals in task storage. */
int session_attach_drain_iter(struct session *s, pid_t pid)
{
	struct bpf_link *link;

	if (session_find_iter(s, pid))
		return 0;
	if (!s->thread_exit_attached || !s->kf.has[KF_TASK_STORAGE] || !s->kf.has[KF_ATOMICS])
		return -1;
	if (!s->kf.has[KF_ITER_TASK_PID]) {	/* one iterator drains every process */
		if (!s->all_tasks_drain)
			s->all_tasks_drain = attach_task_iter(s, s->skel->progs.offcpu_drain_totals, 0);
		return s->all_tasks_drain ? 0 : -1;
	}
	if (GROW_ARRAY(s->iters, s->iters_cap, s->niters + 1))
		return -1;
	link = attach_task_iter(s, s->skel->progs.offcpu_drain_totals, pid);
	if (!link)
		return -1;
	s->iters[s->niters++] = (struct drain_iter){ pid, link };
	return 0;
}

void session_drain_task_totals(struct session *s, struct drain_iter *it);

/* The GC clock of pid at now into *out; -1 if its collections are not probed. */
static int gc_clock_now(struct session *s, pid_t pid, uint64_t now, uint64_t *out)
{
	struct ep_gc_clock c;
	__u32 key = session_gc_slot(s, pid);

	if (!key-- || bpf_map_lookup_elem(bpf_map__fd(s->skel->maps.gc_clocks), &key, &c) ||
	    c.pid != (__u32)pid)
		return -1;
	*out = ep_gc_clock_read(c.clock, now);
	return 0;
}

/* Reads the records of size rec_size an iterator link writes, each to fn
 * (if any); 0, or -1 if the iterator could not be run or read to its end.
 * A record cut by a read is put back together. */
static int read_iter(struct bpf_link *link, size_t rec_size,
		     void (*fn)(void *arg, const void *rec), void *arg)
{
	char buf[EP_DRAIN_READ_BYTES];
	size_t have = 0, at;
	ssize_t n;
	int fd = bpf_iter_create(bpf_link__fd(link));

	if (fd < 0)
		return -1;
	while ((n = read(fd, buf + have, sizeof(buf) - have)) > 0 || (n < 0 && errno == EINTR)) {
		if (n < 0)
			continue;
		have += n;
		for (at = 0; at + rec_size <= have; at += rec_size)
			if (fn)
				fn(arg, buf + at);
		memmove(buf, buf + at, have - at);
		have -= at;
	}
	close(fd);
	return n < 0 ? -1 : 0;
}

/* Forgets the operations left in offcpu_task_ops: their threads are gone. */
static void clear_task_ops(struct session *s)
{
	int fd = bpf_map__fd(s->skel->maps.offcpu_task_ops);
	__u32 key;

	while (!bpf_map_get_next_key(fd, NULL, &key))
		if (bpf_map_delete_elem(fd, &key))
			break;
}

/* Runs offcpu_task_io over pid's threads: the operations queued in
 * offcpu_task_ops are applied, and each thread's storage (struct
 * ep_task_dump) goes to fn. Task iterators reach every thread on every
 * kernel we support; a pidfd of a thread, the other way to its storage,
 * needs Linux 6.9. */
static int task_io(struct session *s, pid_t pid, void (*fn)(void *arg, const void *rec), void *arg)
{
	struct bpf_link *link = attach_task_iter(s, s->skel->progs.offcpu_task_io, pid);
	int rc;

	if (!link) {
		clear_task_ops(s);
		return -1;
	}
	rc = read_iter(link, sizeof(struct ep_task_dump), fn, arg);
	bpf_link__destroy(link);
	clear_task_ops(s);
	return rc;
}

/* The GIL of pid as the kernel reads it (see ep_gil_blame); holder 0 when
 * it cannot be read. */
static struct ep_gil_seen gil_now(struct session *s, pid_t pid, uint64_t *addr)
{
	struct ep_gil_seen seen = { 0 };
	struct ep_proc_cfg cfg;
	__u32 key = pid;
	uint64_t w[3];

	*addr = 0;
	if (bpf_map_lookup_elem(bpf_map__fd(s->skel->maps.procs), &key, &cfg) ||
	    !cfg.gil_holder_addr || cfg.gil_holder_addr + 8 != cfg.gil_locked_addr)
		return seen;
	*addr = cfg.gil_holder_addr;
	if (remote_read(pid, cfg.gil_holder_addr, w, sizeof(w)))
		return seen;
	seen.holder = w[0];
	seen.locked = (uint32_t)w[1];
	seen.switch_number = w[2];
	return seen;
}

/* Runs the seeds queued for pid's threads: one iterator run for all, so
 * that each thread's state, read just before, is still its own. */
void session_apply_seeds(struct session *s, pid_t pid)
{
	if (s->seeds_queued && task_io(s, pid, NULL, NULL))
		s->seed_failed += s->seeds_queued;
	s->seeds_queued = 0;
}

int session_queue_seed(struct session *s, int tid, const struct ep_offcpu_task *st)
{
	struct ep_task_op op = { .op = EP_TASK_SEED, .seed = *st };
	int fd = bpf_map__fd(s->skel->maps.offcpu_task_ops);
	__u32 key = tid;
	/* the GC clock as the kernel would have read it at the switch-out */
	uint64_t clock = 0, addr;

	gc_clock_now(s, st->pid, st->off_ts, &clock);
	op.seed.gc_clock_out = clock;
	op.seed.gc_slot = session_gc_slot(s, st->pid);
	/* its holder: the one now, as though it had begun to wait now */
	if (st->reason == EP_OFF_GIL || st->reason == EP_OFF_GIL_GC) {
		op.seed.gil_out = gil_now(s, st->pid, &addr);
		op.seed.gil_addr = addr;
	}
	if (bpf_map_update_elem(fd, &key, &op, BPF_ANY)) {
		/* the queue is full: run it, then queue this one */
		session_apply_seeds(s, st->pid);
		if (bpf_map_update_elem(fd, &key, &op, BPF_ANY)) {
			s->seed_failed++;
			return -1;
		}
	}
	s->seeds_queued++;
	return 0;
}

/* A GIL wait's time, plain and behind a collection, under its holder
 * (ep_gil_blame() of the GIL at its start and at its end), as the kernel would. */
static void deliver_blame(struct session *s, const struct ep_offcpu_task *st,
			  const struct ep_gil_seen *end, uint64_t plain_ns, uint64_t gc_ns)
{
	struct ep_totals_key key = { .pid = st->pid, .tid = st->tid, .flags = EP_TK_BLAME,
				     .holder = ep_gil_blame(&st->gil_out, end) };
	struct ep_totals val = { 1, 0 };

	if (!s->on_totals)
		return;
	if (plain_ns) {
		key.reason = EP_OFF_GIL;
		val.ns = plain_ns;
		s->on_totals(s->ctx, &key, &val);
	}
	if (gc_ns) {
		key.reason = EP_OFF_GIL_GC;
		val.ns = gc_ns;
		s->on_totals(s->ctx, &key, &val);
	}
}

/* An interval open at a cut: the thread's storage as read, what it is up
 * to the cut, and what the kernel is to be told. */
struct open_interval {
	struct ep_offcpu_task st;
	uint64_t gc_ns;			/* its part behind a collection */
	struct ep_gil_seen gil_end;	/* the GIL at the cut, for a GIL wait's blame */
	uint64_t end;			/* the cut, or where an unseen switch-in put it back */
	int unseen;			/* ... that: it is on a CPU, its interval over */
	__u32 tid;
	int applied;			/* the kernel took the cut: ours to deliver */
	struct ep_task_op op;
};

static int is_gil_wait(const struct ep_offcpu_task *st)
{
	return st->reason == EP_OFF_GIL || st->reason == EP_OFF_GIL_GC;
}

/* Thread iv->st.tid is off the CPU at now, or was until iv->end (unseen):
 * what the kernel would find at its switch-in (its time behind a
 * collection, the GIL), and the restart that cuts the interval there. keep:
 * the interval goes on from now (--rotate's cut), else it is closed (off_ts
 * 0), as it is when the thread is back on a CPU. */
static void prepare_open_interval(struct session *s, struct open_interval *iv, uint64_t now,
				  int keep)
{
	struct ep_offcpu_task *st = &iv->st;
	uint64_t clock_end = 0, addr;
	int have_clock;

	keep = keep && !iv->unseen;
	/* the kernel's switch-in arithmetic (ep_gil_wait_*), on a clock that
	 * must have moved forward: a read here is not ordered with the probes */
	have_clock = !gc_clock_now(s, st->pid, iv->end, &clock_end);
	if (EP_GIL_WAIT_MAY_BE_GC(st->reason, st->flags) && have_clock &&
	    clock_end > st->gc_clock_out)
		iv->gc_ns = clock_end - st->gc_clock_out;
	EP_GIL_WAIT_GC_CAP(iv->gc_ns, iv->end - st->off_ts);
	/* back on a CPU, unseen: the GIL now says nothing of its wait's end
	 * (the kernel's close leaves its holder unknown too) */
	if (is_gil_wait(st) && !(st->flags & EP_IV_OWN_GC) && !iv->unseen)
		iv->gil_end = gil_now(s, st->pid, &addr);
	iv->op = (struct ep_task_op){ .op = EP_TASK_RESTART, .expect_off_ts = st->off_ts,
				      .off_ts = keep ? now : 0, .gc_clock_out = st->gc_clock_out,
				      .on_ts = iv->unseen ? now : 0 };
	if (keep && EP_GIL_WAIT_MAY_BE_GC(st->reason, st->flags) && have_clock)
		iv->op.gc_clock_out = clock_end;
}

/* A thread back on a CPU since iv->end, unseen: its run up to now, which
 * its switch-out would have counted from its CPU time; the kernel counts
 * the rest, from now (the restart's on_ts). */
static void deliver_unseen_run(struct session *s, const struct open_interval *iv, uint64_t now)
{
	struct ep_totals_key key = { .pid = iv->st.pid, .tid = iv->st.tid,
				     .reason = EP_TOTAL_ON_CPU,
				     .flags = iv->st.flags & EP_IV_OWN_GC };
	struct ep_totals val = { 1, now - iv->end };

	s->unseen_closed++;
	if (now > iv->end && s->on_totals)
		s->on_totals(s->ctx, &key, &val);
}

/* Delivers an interval the kernel let us cut at now (or that ended
 * unseen), as the kernel would have at the thread's switch-in: its record
 * with its stack (its stack is taken when it returns to user mode: walked
 * from here), and totals. */
static void deliver_open_interval(struct session *s, struct open_interval *iv, uint64_t now)
{
	struct ep_offcpu_task *st = &iv->st;
	struct ep_offcpu_record rec;
	struct ep_totals_key key;
	struct ep_totals val = { 1, 0 };
	uint64_t gc_ns = iv->gc_ns;

	if (iv->unseen)
		deliver_unseen_run(s, iv, now);
	if (iv->end <= st->off_ts)
		return;
	if (!st->stack_id && (st->flags & EP_IV_STACK_LATER) && s->stack_of_blocked)
		s->stack_of_blocked(s->ctx, st->pid, st->tid, &st->stack_id);
	rec = (struct ep_offcpu_record){
		.kind = EP_EV_OFFCPU, .pid = st->pid, .tid = st->tid, .reason = st->reason,
		.flags = st->flags | EP_IV_EXACT | (iv->unseen ? 0 : EP_IV_OPEN),
		.gc_gen = st->gc_gen, .start_ts = st->off_ts, .end_ts = iv->end,
		.weight_ns = iv->end - st->off_ts, .gc_ns = gc_ns, .stack_id = st->stack_id };
	key = (struct ep_totals_key){ .pid = st->pid, .tid = st->tid,
				      .flags = st->flags & EP_IV_OWN_GC };
	if (gc_ns && s->on_totals) {
		key.reason = EP_OFF_GIL_GC;
		val.ns = gc_ns;
		s->on_totals(s->ctx, &key, &val);
	}
	if (rec.weight_ns > gc_ns && s->on_totals) {
		key.reason = st->reason;
		val.ns = rec.weight_ns - gc_ns;
		s->on_totals(s->ctx, &key, &val);
	}
	if (is_gil_wait(st) && !(st->flags & EP_IV_OWN_GC)) {
		uint64_t blame_gc = gc_ns;

		EP_GIL_WAIT_BLAME_GC(st->reason, rec.weight_ns, blame_gc);
		deliver_blame(s, st, &iv->gil_end, rec.weight_ns - blame_gc, blame_gc);
	}
	if (s->on_event)
		s->on_event(s->ctx, &rec, sizeof(rec));
}

struct closing {
	struct session *s;
	pid_t pid;
	uint64_t now;
	int keep;
	struct open_interval *open;
	size_t nopen, open_cap;
	size_t next;		/* where note_applied looks first */
	int failed;
};

/*
 * The thread gained CPU time since it left the CPU, its interval still open:
 * its switch-in went unseen (refused task storage; the kernel closes such
 * an interval at the next switch-out, end_unseen_interval) and it has not
 * left the CPU since. Left open, a CPU-bound thread counted the rest of the
 * recording off the CPU. It came back at now less the CPU time gained, not
 * before the interval began; 0 if it has not run.
 */
static uint64_t unseen_return(const struct ep_task_dump *d, uint64_t now)
{
	return ep_unseen_return(d->st.off_ts, d->st.ran_ns, d->ran_now_ns, now);
}

static void find_open(void *arg, const void *rec)
{
	struct closing *c = arg;
	const struct ep_task_dump *d = rec;
	struct open_interval *iv;

	/* a GIL wait ended, its holder not yet settled (the thread has not
	 * returned to user mode): at the end, nothing else will */
	if (!c->keep && (pid_t)d->st.pid == c->pid && (d->st.blame_ns[0] || d->st.blame_ns[1])) {
		uint64_t addr;
		struct ep_gil_seen end = gil_now(c->s, c->pid, &addr);

		deliver_blame(c->s, &d->st, &end, d->st.blame_ns[0], d->st.blame_ns[1]);
	}
	if (!d->st.off_ts || (pid_t)d->st.pid != c->pid || c->now <= d->st.off_ts)
		return;
	if (GROW_ARRAY(c->open, c->open_cap, c->nopen + 1)) {
		c->failed = 1;
		return;
	}
	iv = &c->open[c->nopen++];
	memset(iv, 0, sizeof(*iv));
	iv->st = d->st;
	iv->tid = d->tid;
	iv->end = unseen_return(d, c->now);
	iv->unseen = !!iv->end;
	if (!iv->unseen)
		iv->end = c->now;
	/* back on a CPU: the stack it blocked with is gone (as at the kernel's
	 * close of such an interval) */
	if (iv->unseen)
		iv->st.flags &= ~EP_IV_STACK_LATER;
	prepare_open_interval(c->s, iv, c->now, c->keep);
}

static void note_applied(void *arg, const void *rec)
{
	struct closing *c = arg;
	const struct ep_task_dump *d = rec;
	size_t i, at;

	/* the second run meets the threads in the first's order: one step
	 * each, not a search (a pool of thousands of threads) */
	if (!d->applied)
		return;
	for (i = 0; i < c->nopen; i++) {
		at = (c->next + i) % c->nopen;
		if (c->open[at].tid == d->tid) {
			c->open[at].applied = 1;
			c->next = at + 1;
			return;
		}
	}
}

/*
 * Reads the storage of pid's threads and has the kernel cut the intervals
 * open now (closed, or with keep restarted now): two iterator runs, the
 * second applying what the first found. A thread that ran between the two
 * has had its interval delivered by its switch-in, up to then: delivering
 * it here too counted it twice (a sleeper waking meanwhile had 4.2 s of
 * states in a 4 s window).
 */
static void cut_open_intervals(struct session *s, struct closing *c)
{
	int fd = bpf_map__fd(s->skel->maps.offcpu_task_ops);
	size_t i;

	if (task_io(s, c->pid, find_open, c))
		c->failed = 1;
	for (i = 0; i < c->nopen; i++)
		if (bpf_map_update_elem(fd, &c->open[i].tid, &c->open[i].op, BPF_ANY))
			c->failed = 1;
	if (c->nopen && task_io(s, c->pid, note_applied, c))
		c->failed = 1;
}

/* Delivers what cut_open_intervals cut. Only after the kernel's totals are
 * drained: the stacks walked here take a millisecond or more a thread, and
 * what the kernel adds meanwhile is the next period's (80 threads moved
 * 0.12 s each of sleep from a period to the one before). */
static void deliver_cut_intervals(struct session *s, struct closing *c)
{
	size_t i;

	for (i = 0; i < c->nopen; i++)
		if (c->open[i].applied)
			deliver_open_interval(s, &c->open[i], c->now);
	if (c->failed)
		s->drain_failed++;
	free(c->open);
	c->open = NULL;
}

/* Reads and deletes one entry of a hash map: in one step from Linux 5.14;
 * before, a lookup then a delete (what a switch-in adds between the two,
 * microseconds apart, is lost). */
static int take_entry(int fd, const void *key, void *val)
{
	if (!bpf_map_lookup_and_delete_elem(fd, key, val))
		return 0;
	if (errno != EINVAL && errno != ENOTSUP && errno != 524 /* ENOTSUPP */)
		return -1;
	if (bpf_map_lookup_elem(fd, key, val))
		return -1;
	bpf_map_delete_elem(fd, key);
	return 0;
}

/*
 * Moves the kernel's off-CPU totals to on_totals: the keys first, then each
 * entry, read and deleted in one step so that nothing added meanwhile is lost.
 * A switch-heavy thread re-creates its entry microseconds after it is taken
 * out, so taking entries one by one from the first key chased those
 * re-creations, up to the map's size each drain (59% of a CPU on a pinned
 * ping-pong); a snapshot of the keys bounds a drain by the entries it found.
 */
static void drain_totals(struct session *s)
{
	int fd = bpf_map__fd(s->skel->maps.offcpu_totals);
	unsigned int max = bpf_map__max_entries(s->skel->maps.offcpu_totals), n = 0, i;
	struct ep_totals_key *prev = NULL;
	struct ep_totals val;

	if (!s->drain_keys) {
		s->drain_keys = calloc(max, sizeof(*s->drain_keys));
		if (!s->drain_keys) {
			s->drain_failed++;
			return;
		}
	}
	while (n < max && !bpf_map_get_next_key(fd, prev, &s->drain_keys[n]))
		prev = &s->drain_keys[n++];
	for (i = 0; i < n; i++) {
		if (take_entry(fd, &s->drain_keys[i], &val)) {
			if (errno != ENOENT)
				s->drain_failed++;
			continue;
		}
		if (s->on_totals)
			s->on_totals(s->ctx, &s->drain_keys[i], &val);
	}
}

static void deliver_totals_entry(void *arg, const void *rec)
{
	struct session *s = arg;
	struct ep_totals_entry e;

	memcpy(&e, rec, sizeof(e));
	if (s->on_totals)
		s->on_totals(s->ctx, &e.key, &e.val);
}

/* Runs the process's drain iterator: each ep_totals_entry read is taken out
 * of the kernel (offcpu_drain_totals), so each goes to on_totals once. */
void session_drain_task_totals(struct session *s, struct drain_iter *it)
{
	if (read_iter(it->link, sizeof(struct ep_totals_entry), deliver_totals_entry, s))
		s->drain_failed++;
}

/* The drain iterator over every task (kernels before 6.1), if any. */
static void drain_all_tasks(struct session *s)
{
	if (s->all_tasks_drain &&
	    read_iter(s->all_tasks_drain, sizeof(struct ep_totals_entry), deliver_totals_entry, s))
		s->drain_failed++;
}

void session_drain_all(struct session *s)
{
	size_t i;

	drain_all_tasks(s);
	for (i = 0; i < s->niters; i++)
		session_drain_task_totals(s, &s->iters[i]);
	drain_totals(s);
}

void session_remove_process(struct session *s, pid_t pid)
{
	struct drain_iter *it = session_find_iter(s, pid);
	struct closing c = { .s = s, .pid = pid, .now = monotonic_ns(), .keep = 0 };
	__u32 key = pid;

	cut_open_intervals(s, &c);
	bpf_map_delete_elem(bpf_map__fd(s->skel->maps.procs), &key);
	session_free_gc_slot(s, pid);
	if (it) {
		session_drain_task_totals(s, it);
		bpf_link__destroy(it->link);
		*it = s->iters[--s->niters];
	}
	drain_all_tasks(s);
	drain_totals(s);
	deliver_cut_intervals(s, &c);
}

void session_cut_period(struct session *s, pid_t pid)
{
	struct drain_iter *it = session_find_iter(s, pid);
	struct closing c = { .s = s, .pid = pid, .now = monotonic_ns(), .keep = 1 };

	cut_open_intervals(s, &c);
	if (it)
		session_drain_task_totals(s, it);
	drain_all_tasks(s);
	drain_totals(s);
	deliver_cut_intervals(s, &c);
}

