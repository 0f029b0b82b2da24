// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "procfs.h"
#include "py_threads.h"
#include "recorder.h"
#include "remote.h"
#include "symbolizer.h"

#define MAX_NAMED_THREADS	1024

struct rec_thread {
	int tid;
	uint64_t tstate;
	uint64_t ident;			/* tstate->thread_id: threading.get_ident() */
	char py_name[128];
	char comm[16];
	/* the stack it left the CPU with, until it is back */
	uint32_t *off_frames;
	uint32_t off_nframes;
	uint64_t off_ts;
	int off_reason;
	int off_pending;
};

struct rec_process {
	struct py_target target;
	struct symbolizer *sym;
	char comm[16];
	struct rec_thread *threads;
	size_t nthreads, cap;
};

uint64_t monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

int recorder_init(struct recorder *r, const struct recorder_opts *o)
{
	memset(r, 0, sizeof(*r));
	r->opts = *o;
	profile_init(&r->profile);
	analysis_init(&r->analysis);
	r->profile.rate_hz = o->rate_hz;
	r->ids = calloc(EP_MAX_FRAMES + 8, sizeof(*r->ids));
	return r->ids ? 0 : -1;
}

void recorder_free(struct recorder *r)
{
	size_t i;

	for (i = 0; i < r->nprocs; i++) {
		size_t j;

		for (j = 0; j < r->procs[i]->nthreads; j++)
			free(r->procs[i]->threads[j].off_frames);
		symbolizer_free(r->procs[i]->sym);
		free(r->procs[i]->threads);
		free(r->procs[i]);
	}
	free(r->procs);
	free(r->changes);
	free(r->ids);
	analysis_free(&r->analysis);
	profile_free(&r->profile);
}

static struct rec_process *find_process(struct recorder *r, int pid);

int recorder_add_process(struct recorder *r, const struct py_target *t)
{
	struct rec_process *p = find_process(r, t->pid), **procs;

	if (p) {
		/* a new program in a known process: new interpreter, new code objects */
		symbolizer_free(p->sym);
		p->target = *t;
		p->sym = symbolizer_new(t->pid, &t->layout);
		procfs_comm(t->pid, 0, p->comm, sizeof(p->comm));
		return p->sym ? 0 : -1;
	}
	p = calloc(1, sizeof(*p));

	procs = realloc(r->procs, (r->nprocs + 1) * sizeof(*procs));
	if (!p || !procs) {
		free(p);
		return -1;
	}
	r->procs = procs;
	p->target = *t;
	p->sym = symbolizer_new(t->pid, &t->layout);
	procfs_comm(t->pid, 0, p->comm, sizeof(p->comm));
	r->procs[r->nprocs++] = p;
	return p->sym ? 0 : -1;
}

const struct py_target *recorder_target(struct recorder *r, int pid)
{
	struct rec_process *p = find_process(r, pid);

	return p ? &p->target : NULL;
}

static void push_change(struct recorder *r, const struct proc_change *c)
{
	if (r->nchanges == r->changes_cap) {
		size_t cap = r->changes_cap ? r->changes_cap * 2 : 16;
		struct proc_change *v = realloc(r->changes, cap * sizeof(*v));

		if (!v)
			return;
		r->changes = v;
		r->changes_cap = cap;
	}
	r->changes[r->nchanges++] = *c;
}

size_t recorder_take_changes(struct recorder *r, struct proc_change **out)
{
	size_t n = r->nchanges;

	*out = r->changes;
	r->changes = NULL;
	r->nchanges = r->changes_cap = 0;
	return n;
}

/* A forked child is a copy of its parent: same interpreter, same addresses;
 * it gets its own symbolizer since new code objects will differ. */
static void on_proc_event(struct recorder *r, const struct ep_proc_event *e)
{
	struct proc_change c = { .kind = e->kind, .pid = e->pid, .ppid = e->ppid };
	struct rec_process *parent = e->kind == EP_EV_FORK ? find_process(r, e->ppid) : NULL;

	if (parent) {
		struct py_target child = parent->target;

		child.pid = e->pid;
		c.python = !recorder_add_process(r, &child);
	}
	push_change(r, &c);
}

static struct rec_process *find_process(struct recorder *r, int pid)
{
	size_t i;

	for (i = 0; i < r->nprocs; i++)
		if (r->procs[i]->target.pid == pid)
			return r->procs[i];
	return NULL;
}

/* Per-thread facts, gathered the first time a thread (or a new thread
 * state of it) shows up, while the target surely still runs. */
static struct rec_thread *note_thread(struct rec_process *p, int tid, uint64_t tstate)
{
	struct rec_thread *t;
	size_t i;

	for (i = 0; i < p->nthreads; i++)
		if (p->threads[i].tid == tid)
			break;
	if (i == p->nthreads) {
		if (p->nthreads == p->cap) {
			size_t cap = p->cap ? p->cap * 2 : 16;
			struct rec_thread *n = realloc(p->threads, cap * sizeof(*n));

			if (!n)
				return NULL;
			p->threads = n;
			p->cap = cap;
		}
		t = &p->threads[p->nthreads++];
		memset(t, 0, sizeof(*t));
		t->tid = tid;
		procfs_comm(p->target.pid, tid, t->comm, sizeof(t->comm));
	}
	t = &p->threads[i];
	if (tstate && tstate != t->tstate) {
		t->tstate = tstate;
		remote_read_u64(p->target.pid, tstate + p->target.layout.tstate_thread_id, &t->ident);
	}
	return t;
}

static uint32_t marker(struct recorder *r, const char *name)
{
	return profile_frame(&r->profile, name, NULL, 0, FRAME_MARKER);
}

static uint32_t python_frame(struct recorder *r, struct rec_process *p,
			     const struct ep_frame *f)
{
	struct sym_frame sf;

	symbolizer_frame(p->sym, f->code, f->ident, f->instr, &sf);
	return profile_frame(&r->profile, sf.name, sf.file,
			     r->opts.by_function ? sf.firstlineno : sf.line, FRAME_PYTHON);
}

/* Root-first frame ids of the event's stack, with its markers. */
static uint32_t build_stack(struct recorder *r, struct rec_process *p,
			    const struct ep_stack_event *ev)
{
	uint32_t n = 0;
	int i;

	if (ev->flags & EP_F_TRUNCATED)
		r->ids[n++] = marker(r, "[truncated]");
	for (i = ev->depth - 1; i >= 0; i--)
		r->ids[n++] = python_frame(r, p, &ev->frames[i]);
	if (ev->flags & EP_F_IN_GC) {
		char name[32];

		if (ev->flags & EP_F_GC_GEN_KNOWN)
			snprintf(name, sizeof(name), "[GC gen %u]", ev->gc_gen);
		else
			snprintf(name, sizeof(name), "[GC]");
		r->ids[n++] = marker(r, name);
	}
	return n;
}

static uint64_t since_start(struct recorder *r, uint64_t ts)
{
	return ts > r->t0_ns ? ts - r->t0_ns : 0;
}

static void on_sample(struct recorder *r, const struct ep_stack_event *ev)
{
	struct rec_process *p = find_process(r, ev->pid);
	struct thread_profile *tp;
	struct sample s = { 0 };

	r->samples++;
	if (!p || (ev->flags & EP_F_NO_TSTATE))
		return;		/* not a Python thread: no Python frames to show */
	note_thread(p, ev->tid, ev->tstate);
	s.holds_gil = ev->gil_holder && ev->gil_holder == ev->tstate;
	if (r->opts.gil_only && !s.holds_gil)
		return;
	s.nframes = build_stack(r, p, ev);
	if (!s.nframes)
		return;
	s.frames = r->ids;
	s.start_ns = since_start(r, ev->ts);
	s.weight_ns = 1000000000ull / r->opts.rate_hz;
	s.state = (ev->flags & EP_F_IN_GC) ? STATE_GC : STATE_ON_CPU;
	tp = profile_thread(&r->profile, ev->pid, ev->tid);
	if (tp && !profile_add_sample(&r->profile, tp, &s))
		r->kept++;
}

static int reason_state(int reason)
{
	switch (reason) {
	case EP_OFF_PREEMPTED: return STATE_PREEMPTED;
	case EP_OFF_GIL: return STATE_GIL_WAIT;
	case EP_OFF_GIL_GC: return STATE_GIL_WAIT_GC;
	case EP_OFF_LOCK: return STATE_LOCK_WAIT;
	case EP_OFF_IO: return STATE_IO;
	case EP_OFF_SLEEP: return STATE_SLEEP;
	default: return STATE_OTHER;
	}
}

/* A thread left the CPU: keep its stack until it comes back. */
static void on_offcpu(struct recorder *r, const struct ep_stack_event *ev)
{
	struct rec_process *p = find_process(r, ev->pid);
	struct rec_thread *t;
	uint32_t n, *copy;

	r->offcpu_events++;
	if (!p || (ev->flags & EP_F_NO_TSTATE))
		return;
	t = note_thread(p, ev->tid, ev->tstate);
	if (!t)
		return;
	n = build_stack(r, p, ev);
	copy = realloc(t->off_frames, (n ? n : 1) * sizeof(*copy));
	if (!copy)
		return;
	memcpy(copy, r->ids, n * sizeof(*copy));
	t->off_frames = copy;
	t->off_nframes = n;
	t->off_ts = ev->ts;
	t->off_reason = ev->reason;
	t->off_pending = 1;
}

/* ... and is back: the interval is complete. */
static void on_offcpu_end(struct recorder *r, const struct ep_offcpu_end *end)
{
	struct rec_process *p = find_process(r, end->pid);
	struct interval iv = { 0 };
	size_t i;

	for (i = 0; p && i < p->nthreads; i++) {
		struct rec_thread *t = &p->threads[i];

		if (t->tid != (int)end->tid || !t->off_pending || t->off_ts != end->start_ts)
			continue;
		t->off_pending = 0;
		iv.pid = end->pid;
		iv.tid = end->tid;
		iv.start_ns = since_start(r, end->start_ts);
		iv.end_ns = since_start(r, end->end_ts);
		iv.state = reason_state(end->reason);
		iv.frames = t->off_frames;
		iv.nframes = t->off_nframes;
		if (iv.end_ns > iv.start_ns)
			analysis_add(&r->analysis.waits, &iv);
		return;
	}
}

static void on_gc(struct recorder *r, const struct ep_stack_event *ev)
{
	struct rec_process *p = find_process(r, ev->pid);
	struct interval iv = { 0 };

	r->gc_events++;
	if (!p)
		return;
	if (ev->tstate)
		note_thread(p, ev->tid, ev->tstate);
	iv.pid = ev->pid;
	iv.tid = ev->tid;
	iv.start_ns = since_start(r, ev->ts);
	iv.end_ns = since_start(r, ev->end_ts);
	iv.state = STATE_GC;
	iv.generation = ev->gc_gen;
	iv.collected = ev->collected;
	iv.nframes = (ev->flags & EP_F_NO_TSTATE) ? 0 : build_stack(r, p, ev);
	iv.frames = r->ids;
	analysis_add(&r->analysis.gcs, &iv);
}

int recorder_on_event(void *ctx, void *data, size_t len)
{
	struct recorder *r = ctx;
	const struct ep_stack_event *ev = data;

	r->events++;
	if (len < sizeof(__u32))
		return 0;
	if (ev->kind == EP_EV_FORK || ev->kind == EP_EV_EXEC || ev->kind == EP_EV_EXIT) {
		if (len >= sizeof(struct ep_proc_event))
			on_proc_event(r, data);
		return 0;
	}
	if (ev->kind == EP_EV_OFFCPU_END) {
		if (len >= sizeof(struct ep_offcpu_end))
			on_offcpu_end(r, data);
		return 0;
	}
	if (len < EP_STACK_EVENT_HDR_SIZE ||
	    len < EP_STACK_EVENT_HDR_SIZE + ev->depth * sizeof(struct ep_frame))
		return 0;
	switch (ev->kind) {
	case EP_EV_SAMPLE:
		on_sample(r, ev);
		break;
	case EP_EV_OFFCPU:
		on_offcpu(r, ev);
		break;
	case EP_EV_GC:
		on_gc(r, ev);
		break;
	}
	return 0;
}

static void refresh_process_names(struct rec_process *p)
{
	struct py_thread_name *names = calloc(MAX_NAMED_THREADS, sizeof(*names));
	size_t i;
	int n, j;

	if (!names)
		return;
	n = py_thread_names(p->target.pid, &p->target.layout, p->target.interp_addr,
			    names, MAX_NAMED_THREADS);
	for (i = 0; i < p->nthreads; i++)
		for (j = 0; j < n; j++)
			if (p->threads[i].ident && names[j].ident == p->threads[i].ident)
				snprintf(p->threads[i].py_name, sizeof(p->threads[i].py_name),
					 "%s", names[j].name);
	free(names);
}

void recorder_refresh_names(struct recorder *r)
{
	size_t i;

	for (i = 0; i < r->nprocs; i++)
		refresh_process_names(r->procs[i]);
}

static void name_thread(struct recorder *r, struct thread_profile *tp)
{
	struct rec_process *p = find_process(r, tp->pid);
	const char *name = NULL;
	size_t i;

	for (i = 0; p && i < p->nthreads; i++) {
		if (p->threads[i].tid != tp->tid)
			continue;
		if (p->threads[i].py_name[0])
			name = p->threads[i].py_name;
		else if (tp->tid != tp->pid && p->threads[i].comm[0])
			name = p->threads[i].comm;
	}
	if (!name && tp->tid == tp->pid)
		name = "MainThread";
	free(tp->name);
	tp->name = strdup(name ? name : "?");
	free(tp->process);
	tp->process = strdup(p && p->comm[0] ? p->comm : "python");
}

/* Threads still off the CPU when the recording ends: their interval ends now.
 * keep: at the end of a period, the interval also goes on in the next one. */
static void close_pending(struct recorder *r, uint64_t end_ns, int keep)
{
	size_t i, j;

	for (i = 0; i < r->nprocs; i++) {
		for (j = 0; j < r->procs[i]->nthreads; j++) {
			struct rec_thread *t = &r->procs[i]->threads[j];
			struct ep_offcpu_end end = { .pid = r->procs[i]->target.pid, .tid = t->tid,
						     .start_ts = t->off_ts, .end_ts = end_ns,
						     .reason = t->off_reason };

			if (!t->off_pending)
				continue;
			on_offcpu_end(r, &end);
			t->off_pending = keep;
		}
	}
}

static void finish(struct recorder *r, uint64_t end_ns, int keep_pending)
{
	size_t i;

	close_pending(r, end_ns, keep_pending);
	analysis_split_gc_waits(&r->analysis);
	if (r->opts.idle) {
		profile_sort(&r->profile);
		analysis_fit_on_cpu_samples(&r->analysis, &r->profile);
		analysis_add_idle_samples(&r->analysis, &r->profile);
	}

	for (i = 0; i < r->profile.nthreads; i++)
		name_thread(r, &r->profile.threads[i]);
	r->profile.duration_ns = since_start(r, end_ns);
	r->profile.start_monotonic_ns = r->t0_ns;
	profile_sort(&r->profile);
}

void recorder_finish(struct recorder *r, uint64_t end_ns)
{
	finish(r, end_ns, 0);
}

void recorder_cut_period(struct recorder *r, uint64_t end_ns)
{
	finish(r, end_ns, 1);
}

void recorder_next_period(struct recorder *r, uint64_t start_ns)
{
	/* frames stay: the stacks of threads now off the CPU use their ids,
	 * and a program's frames are few and come back in every period */
	profile_drop_threads(&r->profile);
	analysis_free(&r->analysis);
	r->t0_ns = start_ns;
	r->samples = r->kept = 0;
}
