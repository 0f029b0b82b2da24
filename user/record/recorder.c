// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "clock.h"
#include "dask_key.h"
#include "grow.h"
#include "hash.h"
#include "native_unwind.h"
#include "native_weave.h"
#include "procfs.h"
#include "py_asyncio.h"
#include "py_symbolizer.h"
#include "py_threads.h"
#include "recorder.h"
#include "remote.h"
#include "report.h"
#include "states.h"
#include "task_frames.h"
#include "task_walk.h"

#define MAX_NAMED_THREADS	1024
/* A sample's weight beyond this many mean periods is no tick's (a CPU back
 * from offline): the mean period then. A thread's time between its samples
 * is one period on average, and past 64 once in ~e^64 with Poisson ticks. */
#define MAX_SAMPLE_PERIODS	64
/* frame ids of one stack at most: Python frames, native ones, markers */
#define RECORDER_MAX_IDS	(EP_MAX_FRAMES + NATIVE_MAX_FRAMES + 8)

struct rec_thread {
	int tid;
	uint64_t tstate;
	uint64_t ident;			/* tstate->thread_id: threading.get_ident() */
	char py_name[128];
	char comm[16];
	uint64_t last_stack;		/* its last on-CPU sample's stack (stack table) */
	uint32_t last_label;		/* ... and its label value, LABEL_NONE: none */
};

/* A label value's id among a stack's frame ids (the stack table keeps it as
 * the root; samples and intervals take it out before the profile sees them). */
#define LABEL_ID_BIT	(1u << 31)

/* --native: a pc's frame, cached per process (direct-mapped) */
#define NATIVE_PC_CACHE		16384

struct native_pc {
	uint64_t pc;
	struct native_ref ref;
};

/* --native: a sample's native frames, unwound when its registers arrived,
 * waiting for the sample record that follows (same tid and ts) */
#define NATIVE_PENDING		64

struct native_pending {
	int tid;
	uint64_t ts;
	uint32_t n;
	int complete;		/* the unwind reached the thread's first frame */
	struct native_ref frames[NATIVE_MAX_FRAMES];
};

struct rec_process {
	struct py_target target;
	struct py_symbolizer *sym;
	struct native_unwinder *unwinder;	/* --native */
	struct native_pc *pcs;			/* NATIVE_PC_CACHE, --native */
	struct task_frames *tasks;		/* 3.11+: <task NAME> frames */
	struct task_walk *walk;			/* --tasks, 3.11+ */
	char comm[16];
	struct rec_thread *threads;
	size_t nthreads, cap;
	struct label_codes label_codes;	/* --label: code objects the kernel reads labels under */
	int label_codes_changed;	/* ... not yet given to the kernel */
	int label_codes_full;		/* ... a code object found no room (said once) */
};

static void derive_dask_prefix(const char *key, char *out, size_t len)
{
	dask_key_split(key, out, len);
}

/* The label table's names: one per name of --label (several functions may
 * give one label), and dask_prefix for --dask, derived from dask_key. */
static int labels_setup(struct recorder *r)
{
	struct label_table *t = &r->analysis.labels;
	int i, j, key = -1, to;

	if (r->opts.nlabels > EP_MAX_LABELS)
		return -1;
	for (i = 0; i < r->opts.nlabels; i++) {
		for (j = 0; j < t->nnames; j++)
			if (!strcmp(t->names[j], r->opts.labels[i].name))
				break;
		if (j == t->nnames && label_table_add_name(t, r->opts.labels[i].name) != j)
			return -1;
		r->label_of_spec[i] = j;
		if (!strcmp(r->opts.labels[i].name, "dask_key"))
			key = j;
	}
	if (!r->opts.dask || key < 0)
		return 0;
	to = label_table_add_name(t, "dask_prefix");
	if (to < 0)
		return -1;
	label_table_derive(t, key, to, derive_dask_prefix);
	return 0;
}

int recorder_init(struct recorder *r, const struct recorder_opts *o)
{
	memset(r, 0, sizeof(*r));
	r->opts = *o;
	profile_init(&r->profile);
	analysis_init(&r->analysis);
	r->profile.rate_hz = o->rate_hz;
	r->ids = calloc(RECORDER_MAX_IDS, sizeof(*r->ids));
	if (labels_setup(r))
		return -1;
	if (o->native)
		r->native = calloc(NATIVE_PENDING, sizeof(*r->native));
	return r->ids && (!o->native || r->native) ? 0 : -1;
}

void recorder_free(struct recorder *r)
{
	size_t i;

	for (i = 0; i < r->nprocs; i++) {
		native_unwinder_free(r->procs[i]->unwinder);
		free(r->procs[i]->pcs);
		py_symbolizer_free(r->procs[i]->sym);
		task_frames_free(r->procs[i]->tasks);
		task_walk_free(r->procs[i]->walk);
		free(r->procs[i]->threads);
		free(r->procs[i]);
	}
	free(r->procs);
	free(r->changes);
	free(r->native);
	free(r->labelled);
	free(r->ids);
	stack_table_free(&r->stacks);
	analysis_free(&r->analysis);
	profile_free(&r->profile);
}

static struct rec_process *find_process(struct recorder *r, int pid);
static int holder_tid(struct recorder *r, int pid, int waiter, __u64 holder);

/* --native: a fresh unwinder and pc cache (a new process, or a new program) */
static int native_setup(struct recorder *r, struct rec_process *p)
{
	native_unwinder_free(p->unwinder);
	free(p->pcs);
	p->unwinder = NULL;
	p->pcs = NULL;
	if (!r->opts.native)
		return 0;
	p->unwinder = native_unwinder_new(p->target.pid);
	p->pcs = calloc(NATIVE_PC_CACHE, sizeof(*p->pcs));
	return p->unwinder && p->pcs ? 0 : -1;
}

int recorder_add_process(struct recorder *r, const struct py_target *t)
{
	struct rec_process *p = find_process(r, t->pid);

	if (r->opts.nlabels && !py_target_label_ready(t))
		fprintf(stderr, "ebpfprof: warning: process %d: where CPython %d.%d keeps a frame's arguments is not known here (its debug offsets unread); no labels\n",
			t->pid, t->major, t->minor);

	if (p) {
		/* a new program in a known process: new interpreter, new code objects */
		stack_table_drop_pid(&r->stacks, t->pid);
		py_symbolizer_free(p->sym);
		task_frames_free(p->tasks);
		task_walk_free(p->walk);
		p->target = *t;
		p->sym = py_symbolizer_new(t->pid, &t->layout);
		p->tasks = task_frames_new(&p->target);
		p->walk = r->opts.tasks ? task_walk_new(&p->target) : NULL;
		procfs_comm(t->pid, 0, p->comm, sizeof(p->comm));
		return p->sym && !native_setup(r, p) ? 0 : -1;
	}
	p = calloc(1, sizeof(*p));
	if (!p || GROW_ARRAY(r->procs, r->procs_cap, r->nprocs + 1)) {
		free(p);
		return -1;
	}
	p->target = *t;
	p->sym = py_symbolizer_new(t->pid, &t->layout);
	p->tasks = task_frames_new(&p->target);
	p->walk = r->opts.tasks ? task_walk_new(&p->target) : NULL;
	procfs_comm(t->pid, 0, p->comm, sizeof(p->comm));
	r->procs[r->nprocs++] = p;
	return p->sym && !native_setup(r, p) ? 0 : -1;
}

const struct py_target *recorder_target(struct recorder *r, int pid)
{
	struct rec_process *p = find_process(r, pid);

	return p ? &p->target : NULL;
}

static void push_change(struct recorder *r, const struct proc_change *c)
{
	if (GROW_ARRAY(r->changes, r->changes_cap, r->nchanges + 1))
		return;
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

/* Holds the child a fork event names (event time fork_ns, CLOCK_MONOTONIC)
 * by a pidfd: 0, or -1 if it cannot be held. The event is read a little
 * after the fork: if the child is gone already and its pid reused, the
 * process found started after the fork, and is not it (to the clock tick). */
static int track_child(pid_t pid, uint64_t fork_ns)
{
	struct timespec boot, mono;
	unsigned long long start_ticks;
	uint64_t start_ns, fork_boot_ns;

	if (remote_track(pid))
		return -1;
	start_ticks = procfs_start_time(pid);
	clock_gettime(CLOCK_BOOTTIME, &boot);
	clock_gettime(CLOCK_MONOTONIC, &mono);
	/* /proc's start time counts clock ticks of CLOCK_BOOTTIME */
	start_ns = start_ticks * (1000000000ull / sysconf(_SC_CLK_TCK));
	fork_boot_ns = fork_ns + (boot.tv_sec - mono.tv_sec) * 1000000000ull +
		       boot.tv_nsec - mono.tv_nsec;
	/* a start time read while the pidfd's process lived is that process's */
	if (!start_ticks || start_ns > fork_boot_ns + 1000000 || !remote_same_process(pid)) {
		remote_untrack(pid);
		return -1;
	}
	return 0;
}

/* A forked child is a copy of its parent: same interpreter, same addresses;
 * it gets its own symbolizer since new code objects will differ. Every
 * process followed is held by a pidfd from its fork on (its samples come
 * right after this event), and let go at its exit: its pid is then free for
 * anyone. A child that cannot be held is not read (the driver stops
 * following it). */
static void on_proc_event(struct recorder *r, const struct ep_proc_event *e)
{
	struct proc_change c = { .kind = e->kind, .pid = e->pid, .ppid = e->ppid };
	struct rec_process *parent = NULL;

	if (e->kind == EP_EV_EXIT)
		remote_untrack(e->pid);
	if (e->kind == EP_EV_FORK && track_child(e->pid, e->ts) == 0)
		parent = find_process(r, e->ppid);
	if (parent) {
		struct py_target child = parent->target;

		child.pid = e->pid;
		c.python = !recorder_add_process(r, &child);
	}
	push_change(r, &c);
}

int recorder_pid(const struct recorder *r, size_t i)
{
	return r->procs[i]->target.pid;
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
		if (GROW_ARRAY(p->threads, p->cap, p->nthreads + 1))
			return NULL;
		t = &p->threads[p->nthreads++];
		memset(t, 0, sizeof(*t));
		t->tid = tid;
		t->last_label = LABEL_NONE;
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

/* --label: a code object of a labelled function, seen for the first time,
 * is given to the kernel (at most EP_LABEL_CODES a process). */
static void note_label_code(struct recorder *r, struct rec_process *p, const struct ep_frame *f,
			    const char *name)
{
	struct label_codes *lc = &p->label_codes;
	int i, j;

	for (i = 0; i < r->opts.nlabels; i++) {
		if (!label_function_matches(r->opts.labels[i].function, name))
			continue;
		for (j = 0; j < lc->n; j++)
			if (lc->code[j] == f->code && lc->ident[j] == f->ident)
				return;
		if (lc->n >= EP_LABEL_CODES) {
			if (!p->label_codes_full++)
				fprintf(stderr, "ebpfprof: warning: process %d: more than %d code objects of labelled functions; %s at 0x%llx is not labelled\n",
					p->target.pid, EP_LABEL_CODES, r->opts.labels[i].function,
					(unsigned long long)f->code);
			return;
		}
		lc->code[lc->n] = f->code;
		lc->ident[lc->n] = f->ident;
		lc->arg[lc->n] = r->opts.labels[i].arg;
		lc->index[lc->n] = i;
		lc->n++;
		p->label_codes_changed = 1;
		return;
	}
}

int recorder_next_label_codes(void *ctx, __u32 *pid, struct label_codes *out)
{
	struct recorder *r = ctx;
	size_t i;

	for (i = 0; i < r->nprocs; i++) {
		if (!r->procs[i]->label_codes_changed)
			continue;
		r->procs[i]->label_codes_changed = 0;
		*pid = r->procs[i]->target.pid;
		*out = r->procs[i]->label_codes;
		return 1;
	}
	return 0;
}

/* The label value after the frames of a full stack event, interned; its id,
 * or LABEL_NONE. */
static uint32_t event_label(struct recorder *r, const struct ep_stack_event *ev)
{
	struct ep_label_blob b;
	char text[LABEL_TEXT_MAX], source[LABEL_TEXT_MAX];

	if (!(ev->flags & EP_F_LABEL) || ev->depth < EP_LABEL_FRAMES ||
	    ev->depth > EP_MAX_FRAMES)
		return LABEL_NONE;
	memcpy(&b, &ev->frames[ev->depth - EP_LABEL_FRAMES], sizeof(b));
	if (b.label >= r->opts.nlabels)
		return LABEL_NONE;
	label_format(&b, text, sizeof(text));
	return label_intern(&r->analysis.labels, r->label_of_spec[b.label], text,
			    label_source(&b, source, sizeof(source)));
}

/* The event's Python frames: all but the label's. */
static uint32_t python_depth(const struct ep_stack_event *ev)
{
	uint32_t depth = ev->depth > EP_MAX_FRAMES ? EP_MAX_FRAMES : ev->depth;

	if ((ev->flags & EP_F_LABEL) && depth >= EP_LABEL_FRAMES)
		depth -= EP_LABEL_FRAMES;
	return depth;
}

/* Takes the label value out of the root of the n ids in r->ids; its id, or
 * LABEL_NONE. */
static uint32_t take_label(struct recorder *r, uint32_t *n)
{
	uint32_t id;

	if (!*n || !(r->ids[0] & LABEL_ID_BIT))
		return LABEL_NONE;
	id = r->ids[0] & ~LABEL_ID_BIT;
	memmove(r->ids, r->ids + 1, (*n - 1) * sizeof(*r->ids));
	(*n)--;
	return id;
}

static uint32_t python_frame(struct recorder *r, struct rec_process *p,
			     const struct ep_frame *f)
{
	struct py_sym_frame sf;

	/* the entry mark of --native is no part of the offset */
	py_symbolizer_frame(p->sym, f->code, f->ident,
			    f->instr == ~0u ? ~0u : f->instr & ~EP_INSTR_ENTRY, &sf);
	if (r->opts.nlabels)
		note_label_code(r, p, f, sf.name);
	return profile_frame(&r->profile, sf.name, sf.file,
			     r->opts.by_function ? sf.firstlineno : sf.line, FRAME_PYTHON);
}

/* Root-first frame ids of the event's Python frames into r->ids, after a
 * [truncated] marker when the kernel cut the stack; returns how many. */
static uint32_t build_python_stack(struct recorder *r, struct rec_process *p,
				   const struct ep_stack_event *ev)
{
	uint32_t n = 0, label = event_label(r, ev);
	int i;

	if (label != LABEL_NONE)
		r->ids[n++] = label | LABEL_ID_BIT;
	if (ev->flags & EP_F_TRUNCATED)
		r->ids[n++] = marker(r, "[truncated]");
	for (i = (int)python_depth(ev) - 1; i >= 0; i--)
		r->ids[n++] = python_frame(r, p, &ev->frames[i]);
	return n;
}

/* Appends the [GC] marker of a sample taken inside a collection to the n
 * ids in r->ids; returns the new count. */
static uint32_t add_gc_marker(struct recorder *r, const struct ep_stack_event *ev, uint32_t n)
{
	char name[32];

	if (!(ev->flags & EP_F_IN_GC))
		return n;
	state_gc_marker(ev->flags & EP_F_GC_GEN_KNOWN ? ev->gc_gen : -1, name, sizeof(name));
	r->ids[n++] = marker(r, name);
	return n;
}

static uint32_t build_stack(struct recorder *r, struct rec_process *p,
			    const struct ep_stack_event *ev)
{
	return add_gc_marker(r, ev, build_python_stack(r, p, ev));
}

/* Remembers a stack to have the kernel send whole again; a full list waits
 * for the next drain (the same stack comes back and is noted then). */
static void note_lost_stack(struct recorder *r, int pid, uint64_t id)
{
	unsigned i;

	for (i = 0; i < r->nlost; i++)
		if (r->lost[i].pid == (__u32)pid && r->lost[i].id == id)
			return;
	if (r->nlost < sizeof(r->lost) / sizeof(r->lost[0])) {
		r->lost[r->nlost].pid = pid;
		r->lost[r->nlost++].id = id;
	}
}

int recorder_next_lost_stack(void *ctx, __u32 *pid, __u64 *stack_id)
{
	struct recorder *r = ctx;

	if (!r->nlost)
		return 0;
	r->nlost--;
	*pid = r->lost[r->nlost].pid;
	*stack_id = r->lost[r->nlost].id;
	return 1;
}

/*
 * Keeps the kernel's stack id -> the n ids in r->ids. A labelled stack is a
 * stack per value (every Dask task's key makes new ones): the table keeps
 * the last LABELLED_STACKS_KEPT of them, the oldest forgotten. A record that
 * names a forgotten one later has it sent again (note_lost_stack), at the
 * cost of that record. 0, or -1 (out of memory).
 */
static int keep_stack(struct recorder *r, int pid, uint64_t id, uint32_t n)
{
	struct kept_stack *slot;

	if (stack_table_put(&r->stacks, pid, id, r->ids, n))
		return -1;
	if (!n || !(r->ids[0] & LABEL_ID_BIT))
		return 0;
	if (!r->labelled && !(r->labelled = calloc(LABELLED_STACKS_KEPT, sizeof(*r->labelled))))
		return 0;	/* kept, just not bounded: the next one tries again */
	slot = &r->labelled[r->labelled_next++ % LABELLED_STACKS_KEPT];
	if (slot->id && (slot->pid != pid || slot->id != id))
		stack_table_delete(&r->stacks, slot->pid, slot->id);
	slot->pid = pid;
	slot->id = id;
	return 0;
}

/*
 * A sample's or a collection's stack into r->ids. The kernel sends a stack's
 * frames with the first record at it and its id alone after that: the frames
 * are kept here (symbolized, without the GC marker, which is per sample)
 * under that id. Returns the number of ids, 0 when there is nothing to show.
 */
static uint32_t event_stack(struct recorder *r, struct rec_process *p,
			     const struct ep_stack_event *ev)
{
	const struct stack_entry *st;
	uint32_t n;

	if (ev->flags & EP_F_STACK_BY_ID) {
		st = stack_table_get(&r->stacks, ev->pid, ev->stack_id);
		if (!st || st->nframes > RECORDER_MAX_IDS - 4) {
			r->unknown_stacks++;
			note_lost_stack(r, ev->pid, ev->stack_id);
			return 0;
		}
		memcpy(r->ids, st->frames, st->nframes * sizeof(*r->ids));
		n = st->nframes;
	} else {
		n = build_python_stack(r, p, ev);
		if (ev->stack_id && keep_stack(r, ev->pid, ev->stack_id, n))
			r->failed++;
	}
	return n ? add_gc_marker(r, ev, n) : 0;
}

static uint64_t since_start(struct recorder *r, uint64_t ts)
{
	return ts > r->t0_ns ? ts - r->t0_ns : 0;
}

static uint64_t remember_stack(struct recorder *r, int pid, const uint32_t *ids, uint32_t n);

/* --native: the frame of pc, through the process's cache. */
static struct native_ref native_frame(struct recorder *r, struct rec_process *p, uint64_t pc)
{
	struct native_pc *slot = &p->pcs[hash_cache_slot(fnv1a(FNV1A_BASIS, &pc, sizeof(pc)),
							 NATIVE_PC_CACHE)];
	struct native_sym sym;

	if (slot->pc == pc && pc)
		return slot->ref;
	native_symbolize(p->unwinder, pc, &sym);
	slot->pc = pc;
	slot->ref.id = profile_frame(&r->profile, sym.name, sym.file[0] ? sym.file : NULL,
				     sym.line, FRAME_PYTHON);
	slot->ref.kind = native_kind_of(&sym, p->target.elf_ino);
	return slot->ref;
}

/* --native: unwinds a sample's registers and stack now (the sample record
 * follows) and keeps its frames for it. */
static void on_native(struct recorder *r, const struct ep_native_event *ev, size_t len)
{
	struct rec_process *p = find_process(r, ev->pid);
	struct native_pending *pend;
	uint64_t pcs[NATIVE_MAX_FRAMES];
	size_t stack_len = ev->stack_len;
	int n, i, complete;
	struct timespec t0, t1;

	if (!p || !p->unwinder || !r->native || (ev->flags & EP_NATIVE_F_NO_REGS))
		return;
	if (stack_len > EP_NATIVE_STACK_MAX || len < EP_NATIVE_EVENT_HDR_SIZE + stack_len)
		return;
	pend = &r->native[(unsigned)ev->tid % NATIVE_PENDING];
	pend->tid = ev->tid;
	pend->ts = ev->ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
	n = native_unwind(p->unwinder, ev->tid, (const uint64_t *)ev->regs, ev->stack, stack_len, pcs,
			  NATIVE_MAX_FRAMES, &complete);
	r->native_unwound++;
	r->native_complete += complete;
	r->native_frames += n;
	for (i = 0; i < n; i++)
		pend->frames[i] = native_frame(r, p, pcs[i]);
	pend->n = n;
	pend->complete = complete;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
	r->native_cpu_ns += (t1.tv_sec - t0.tv_sec) * 1000000000ull + t1.tv_nsec - t0.tv_nsec;
}

/* --native: the sample's stack, its Python frames woven into its native
 * ones (native_weave.h), into r->ids; returns the number of ids. */
static uint32_t native_stack(struct recorder *r, struct rec_process *p,
			     const struct ep_stack_event *ev)
{
	struct native_pending *pend = &r->native[(unsigned)ev->tid % NATIVE_PENDING];
	uint32_t py[EP_MAX_FRAMES], n = 0, npy = python_depth(ev);
	uint8_t entry[EP_MAX_FRAMES];
	/* before 3.11 every frame is a C call of the eval loop of its own */
	int every_entry = p->target.cfg.instr_kind != EP_INSTR_POINTER;
	uint32_t i;

	for (i = 0; i < npy; i++) {
		py[i] = python_frame(r, p, &ev->frames[i]);
		entry[i] = every_entry || (ev->frames[i].instr != ~0u &&
					   (ev->frames[i].instr & EP_INSTR_ENTRY));
	}
	if (pend->tid != (int)ev->tid || pend->ts != ev->ts) {
		r->native_unpaired++;
		pend = NULL;
	}
	if (ev->flags & EP_F_TRUNCATED)
		r->ids[n++] = marker(r, "[truncated]");
	n += native_weave(py, entry, npy, pend ? pend->frames : NULL, pend ? pend->n : 0,
			  pend && pend->complete, r->ids + n, RECORDER_MAX_IDS - 4 - n);
	if (pend)
		pend->tid = 0;
	return add_gc_marker(r, ev, n);
}

/* A sample just added: GIL waits behind its thread are spread over it
 * during the recording, not all kept until the end (gil_blame.h). */
static void note_blame_sample(struct recorder *r, const struct thread_profile *tp,
			      const struct sample *s)
{
	if (gil_blame_note_sample(&r->analysis.blame, tp->pid, tp->tid, s, tp->log.last_stack))
		r->failed++;
}

/* 3.11+: a <task NAME> frame just above the running task's own coroutine
 * frame (task_frames.h) in the n ids of r->ids; returns the new count. */
static uint32_t add_task_frame(struct recorder *r, struct rec_process *p,
			       const struct ep_stack_event *ev, uint32_t n)
{
	uint32_t python = n - !!(ev->flags & EP_F_IN_GC), at;
	const char *label;

	if (!ev->task_frame || ev->task_depth >= python || n >= RECORDER_MAX_IDS)
		return n;
	label = task_frames_name(p->tasks, ev->task_frame, monotonic_ns());
	if (!label)
		return n;
	at = python - 1 - ev->task_depth;	/* frames are innermost first, ids root first */
	memmove(r->ids + at + 1, r->ids + at, (n - at) * sizeof(*r->ids));
	r->ids[at] = marker(r, label);
	return n + 1;
}

static void on_sample(struct recorder *r, const struct ep_stack_event *ev)
{
	struct rec_process *p = find_process(r, ev->pid);
	struct thread_profile *tp;
	struct rec_thread *t;
	struct sample s = { 0 };
	uint32_t label;

	if (!p || (ev->flags & EP_F_NO_TSTATE))
		return;		/* not a Python thread: no Python frames to show */
	t = note_thread(p, ev->tid, ev->tstate);
	if (r->native && !(ev->flags & EP_F_STACK_BY_ID)) {
		s.nframes = native_stack(r, p, ev);
		label = event_label(r, ev);
	} else {
		s.nframes = event_stack(r, p, ev);	/* first: a stack sent whole is kept for later */
		label = take_label(r, &s.nframes);
		if (s.nframes)
			s.nframes = add_task_frame(r, p, ev, s.nframes);
	}
	s.holds_gil = ev->gil_holder && ev->gil_holder == ev->tstate;
	if (r->opts.gil_only && !s.holds_gil)
		return;
	if (!s.nframes)
		return;
	s.frames = r->ids;
	if (t && r->opts.idle)		/* for its preemptions, which need no walk */
		t->last_stack = remember_stack(r, ev->pid, s.frames, s.nframes);
	/* the thread's on-CPU time since its previous sample (sample.bpf.c):
	 * the sample stands for the time before it */
	s.weight_ns = ev->weight_ns;
	if (!s.weight_ns || s.weight_ns > MAX_SAMPLE_PERIODS * (1000000000ull / r->opts.rate_hz))
		s.weight_ns = 1000000000ull / r->opts.rate_hz;
	s.start_ns = since_start(r, ev->ts);
	s.start_ns = s.start_ns > s.weight_ns ? s.start_ns - s.weight_ns : 0;
	s.state = (ev->flags & EP_F_IN_GC) ? STATE_GC : STATE_ON_CPU;
	if (t)
		t->last_label = label;
	label_add_time(&r->analysis.labels, label, s.state, s.start_ns, s.weight_ns, 1);
	s.label = label == LABEL_NONE ? 0 : label + 1;
	tp = profile_thread(&r->profile, ev->pid, ev->tid);
	if (tp && !profile_add_sample(&r->profile, tp, &s)) {
		r->kept++;
		note_blame_sample(r, tp, &s);
	}
}

/* Interns the sample's stack in the stack table under a hash of its frame
 * ids; returns the id, 0 if it could not be kept. */
static uint64_t remember_stack(struct recorder *r, int pid, const uint32_t *ids, uint32_t n)
{
	uint64_t h = 0x5a3c;
	uint32_t i;

	for (i = 0; i < n; i++)
		h = ep_stack_mix(h, ids[i], 0, 0);
	h = ep_stack_id(h, 0) | 1ull << 63;	/* apart from the kernel's ids */
	if (!stack_table_get(&r->stacks, pid, h) && stack_table_put(&r->stacks, pid, h, ids, n))
		return 0;
	return h;
}

/* A stack the kernel walked at a switch-out: later records name it by id. */
static void on_stack(struct recorder *r, const struct ep_stack_event *ev)
{
	struct rec_process *p = find_process(r, ev->pid);
	uint32_t n;

	if (!p || !ev->stack_id || stack_table_get(&r->stacks, ev->pid, ev->stack_id))
		return;
	if (ev->tstate)
		note_thread(p, ev->tid, ev->tstate);
	n = build_stack(r, p, ev);
	if (keep_stack(r, ev->pid, ev->stack_id, n))
		r->failed++;
}

/* Adds a sampled short interval to the profile: weight_ns of `state`. */
static void add_sampled(struct recorder *r, const struct ep_offcpu_record *rec,
			const struct stack_entry *st, int state, uint64_t weight_ns, uint32_t label)
{
	struct thread_profile *tp = profile_thread(&r->profile, rec->pid, rec->tid);
	struct sample s = { .start_ns = since_start(r, rec->start_ts), .weight_ns = weight_ns,
			    .state = state, .frames = r->ids,
			    .label = label == LABEL_NONE ? 0 : label + 1 };
	int gen = rec->flags & EP_IV_OWN_GC ? rec->gc_gen : -1;

	if (!tp || !weight_ns)
		return;
	s.nframes = st ? st->nframes : 0;
	if (s.nframes > RECORDER_MAX_IDS - 4)
		return;
	if (st)
		memcpy(r->ids, st->frames, s.nframes * sizeof(*r->ids));
	s.nframes = analysis_idle_markers(&r->profile, r->ids, s.nframes, state, gen);
	if (profile_add_sample(&r->profile, tp, &s))
		r->failed++;
	else
		note_blame_sample(r, tp, &s);
}

/* An interval over the threshold: kept whole, in pieces when part of a GIL
 * wait was spent behind a collection (first if one ran at switch-out). */
static void add_exact(struct recorder *r, const struct ep_offcpu_record *rec,
		      const struct stack_entry *st, int state, uint32_t label)
{
	struct interval iv = { .pid = rec->pid, .tid = rec->tid, .state = state,
			       .start_ns = since_start(r, rec->start_ts),
			       .end_ns = since_start(r, rec->end_ts),
			       .generation = rec->flags & EP_IV_OWN_GC ? rec->gc_gen : -1,
			       .collected = -1,
			       .holder = holder_tid(r, rec->pid, rec->tid, rec->holder),
			       .label = label == LABEL_NONE ? 0 : label + 1 };
	uint64_t gc_ns = rec->gc_ns < iv.end_ns - iv.start_ns ? rec->gc_ns : iv.end_ns - iv.start_ns;
	struct interval gc_part;

	if (st) {
		iv.frames = st->frames;
		iv.nframes = st->nframes;
	}
	/* the series need no more than which part came first */
	if (rec->flags & EP_IV_GC_FIRST) {
		label_add_time(&r->analysis.labels, label, STATE_GIL_WAIT_GC, iv.start_ns, gc_ns, 0);
		label_add_time(&r->analysis.labels, label, state, iv.start_ns + gc_ns,
			       iv.end_ns - iv.start_ns - gc_ns, 0);
	} else {
		label_add_time(&r->analysis.labels, label, state, iv.start_ns,
			       iv.end_ns - iv.start_ns - gc_ns, 0);
		label_add_time(&r->analysis.labels, label, STATE_GIL_WAIT_GC, iv.end_ns - gc_ns,
			       gc_ns, 0);
	}
	gc_part = iv;
	gc_part.state = STATE_GIL_WAIT_GC;
	if (gc_ns && rec->flags & EP_IV_GC_FIRST) {
		gc_part.end_ns = iv.start_ns += gc_ns;
	} else if (gc_ns) {
		gc_part.start_ns = iv.end_ns -= gc_ns;
	}
	if ((gc_ns && analysis_add(&r->analysis.waits, &gc_part)) ||
	    (iv.end_ns > iv.start_ns && analysis_add(&r->analysis.waits, &iv)))
		r->failed++;
}

/* An off-CPU interval sent with its stack: whole, or sampled and weighted. */
static void on_offcpu(struct recorder *r, const struct ep_offcpu_record *rec)
{
	struct rec_process *p = find_process(r, rec->pid);
	const struct stack_entry *st = NULL;
	struct stack_entry unlabelled;
	int state = analysis_reason_state(rec->reason);
	uint32_t label = LABEL_NONE;
	uint64_t gc_w;

	if (!p || rec->end_ts < rec->start_ts)
		return;
	if (rec->stack_id) {
		st = stack_table_get(&r->stacks, rec->pid, rec->stack_id);
		if (!st)
			r->unknown_stacks++;
	} else if (rec->reason == EP_OFF_PREEMPTED) {
		/* preempted: the thread was running Python; its last sample shows where */
		struct rec_thread *t = note_thread(p, rec->tid, 0);

		st = t ? stack_table_get(&r->stacks, rec->pid, t->last_stack) : NULL;
		label = t ? t->last_label : LABEL_NONE;
	}
	/* else a blocked thread whose stack was not taken (its switch-in
	 * unseen, no thread state found on its return): shown without one.
	 * Its last sample is no guide: a nap's wait came out under the
	 * Thread.start a thousand threads before it */
	if (st && st->nframes && (st->frames[0] & LABEL_ID_BIT)) {
		label = st->frames[0] & ~LABEL_ID_BIT;
		unlabelled = *st;
		unlabelled.frames++;
		unlabelled.nframes--;
		st = &unlabelled;
	}
	if (rec->flags & EP_IV_EXACT) {
		add_exact(r, rec, st, state, label);
		return;
	}
	/* the part behind a collection, in proportion */
	gc_w = rec->end_ts > rec->start_ts ?
	       (uint64_t)((long double)rec->weight_ns * rec->gc_ns / (rec->end_ts - rec->start_ts)) : 0;
	if (gc_w > rec->weight_ns)
		gc_w = rec->weight_ns;
	/* the label table takes sampled waits without --idle too */
	label_add_time(&r->analysis.labels, label, STATE_GIL_WAIT_GC, since_start(r, rec->start_ts),
		       gc_w, 0);
	label_add_time(&r->analysis.labels, label, state, since_start(r, rec->start_ts) + gc_w,
		       rec->weight_ns - gc_w, 0);
	if (!r->opts.idle)
		return;
	add_sampled(r, rec, st, STATE_GIL_WAIT_GC, gc_w, label);
	add_sampled(r, rec, st, state, rec->weight_ns - gc_w, label);
}

/* The thread whose PyThreadState the kernel saw holding the GIL: GB_* for
 * none, GB_UNKNOWN for the waiter itself or a thread state not (yet) seen
 * in a sample of the process. */
static int holder_tid(struct recorder *r, int pid, int waiter, __u64 holder)
{
	struct rec_process *p = find_process(r, pid);
	size_t i;

	if (holder == EP_BLAME_CHANGED)
		return GB_CHANGED;
	if (holder == EP_BLAME_HANDOFF)
		return GB_HANDOFF;
	for (i = 0; p && holder != EP_BLAME_UNKNOWN && i < p->nthreads; i++)
		if (p->threads[i].tstate == holder)
			return p->threads[i].tid == waiter ? GB_UNKNOWN : p->threads[i].tid;
	return GB_UNKNOWN;
}

static int is_own_tstate(struct recorder *r, int pid, int tid, uint64_t tstate)
{
	struct rec_process *p = find_process(r, pid);
	size_t i;

	for (i = 0; p && i < p->nthreads; i++)
		if (p->threads[i].tid == tid)
			return p->threads[i].tstate == tstate;
	return 0;
}

/* A GIL wait's time under its holder, as drained now. */
static void on_blame(struct recorder *r, const struct ep_totals_key *key, const struct ep_totals *val)
{
	struct blame_chunk c = { .pid = key->pid, .waiter = key->tid, .gc = key->reason == EP_OFF_GIL_GC,
				 .at_ns = since_start(r, monotonic_ns()), .count = val->count,
				 .ns = val->ns };

	c.holder = holder_tid(r, key->pid, key->tid, key->holder);
	/* named at the end if a sample shows it; the waiter's own PyThreadState
	 * (it waited behind itself) stays unknown: no time stamp to keep */
	if (c.holder == GB_UNKNOWN && key->holder != EP_BLAME_UNKNOWN &&
	    !is_own_tstate(r, key->pid, key->tid, key->holder))
		c.tstate = key->holder;
	if (gil_blame_add(&r->analysis.blame, &c))
		r->failed++;
}

/* Holders named since their time was drained: the chunks that wait. */
static void name_late_holders(struct recorder *r)
{
	struct gil_blame *b = &r->analysis.blame;
	size_t i;

	for (i = 0; i < b->n; i++) {
		if (b->v[i].holder != GB_UNKNOWN || !b->v[i].tstate)
			continue;
		b->v[i].holder = holder_tid(r, b->v[i].pid, b->v[i].waiter, b->v[i].tstate);
		if (b->v[i].holder != GB_UNKNOWN)
			b->v[i].tstate = 0;
	}
}

void recorder_on_totals(void *ctx, const struct ep_totals_key *key, const struct ep_totals *val)
{
	struct recorder *r = ctx;
	struct rec_process *p;

	if (key->flags & EP_TK_BLAME) {
		on_blame(r, key, val);
		return;
	}

	/* a thread first heard of here (it may never be sampled): its comm
	 * now, while it surely lives, and its Python name by its tid later */
	if (!analysis_has_thread(&r->analysis, key->pid, key->tid)) {
		p = find_process(r, key->pid);
		if (p)
			note_thread(p, key->tid, 0);
	}
	if (analysis_add_totals(&r->analysis, key->pid, key->tid, analysis_reason_state(key->reason),
				key->flags & EP_IV_OWN_GC, val->count, val->ns))
		r->failed++;
}

void recorder_set_exact_gc(struct recorder *r, int pid)
{
	if (analysis_set_exact_gc(&r->analysis, pid))
		r->failed++;
}

static void on_gc(struct recorder *r, const struct ep_stack_event *ev)
{
	struct rec_process *p = find_process(r, ev->pid);
	struct interval iv = { 0 };

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
	iv.nframes = (ev->flags & EP_F_NO_TSTATE) ? 0 : event_stack(r, p, ev);
	iv.frames = r->ids;
	label_add_gc(&r->analysis.labels, take_label(r, &iv.nframes), iv.end_ns - iv.start_ns);
	if (analysis_add(&r->analysis.gcs, &iv))
		r->failed++;
}

/* A code object's names, read by the kernel just before its stack's first
 * sample (bpf/code_names.bpf.c). */
static void on_code(struct recorder *r, const struct ep_code_event *ev)
{
	struct rec_process *p = find_process(r, ev->pid);

	if (p && p->sym)
		py_symbolizer_seed(p->sym, ev);
}

int recorder_on_event(void *ctx, void *data, size_t len)
{
	struct recorder *r = ctx;
	const struct ep_stack_event *ev = data;

	if (len < sizeof(__u32))
		return 0;
	if (ev->kind == EP_EV_FORK || ev->kind == EP_EV_EXEC || ev->kind == EP_EV_EXIT) {
		if (len >= sizeof(struct ep_proc_event))
			on_proc_event(r, data);
		return 0;
	}
	if (ev->kind == EP_EV_OFFCPU) {
		if (len >= sizeof(struct ep_offcpu_record))
			on_offcpu(r, data);
		return 0;
	}
	if (ev->kind == EP_EV_NATIVE) {
		if (len >= EP_NATIVE_EVENT_HDR_SIZE)
			on_native(r, data, len);
		return 0;
	}
	if (ev->kind == EP_EV_CODE) {
		if (len >= sizeof(struct ep_code_event))
			on_code(r, data);
		return 0;
	}
	if (len < EP_STACK_EVENT_HDR_SIZE ||
	    len < EP_STACK_EVENT_HDR_SIZE + ev->depth * sizeof(struct ep_frame))
		return 0;
	switch (ev->kind) {
	case EP_EV_SAMPLE:
		on_sample(r, ev);
		break;
	case EP_EV_STACK:
		on_stack(r, ev);
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
	for (i = 0; i < p->nthreads; i++) {
		/* by its thread state's ident, else (never sampled) by its tid */
		int inner = p->threads[i].ident ? 0 :
			    procfs_task_inner_tid(p->target.pid, p->threads[i].tid);

		for (j = 0; j < n; j++)
			if ((p->threads[i].ident && names[j].ident == p->threads[i].ident) ||
			    (inner > 0 && names[j].native_id == inner))
				snprintf(p->threads[i].py_name, sizeof(p->threads[i].py_name),
					 "%s", names[j].name);
	}
	free(names);
}

void recorder_refresh_names(struct recorder *r)
{
	size_t i;

	for (i = 0; i < r->nprocs; i++)
		refresh_process_names(r->procs[i]);
}

/* The walks of recorder_walk_tasks; revisit: task_walk_step's. */
static void walk_tasks(struct recorder *r, int all, int revisit)
{
	uint64_t now = monotonic_ns();
	struct rec_process *p;
	size_t i;

	for (i = 0; i < r->nprocs; i++) {
		p = r->procs[i];
		if (!p->walk || (!all && !task_walk_due(p->walk, now)))
			continue;
		if (task_spans_name_process(&r->profile.tasks, p->target.pid,
					    p->comm[0] ? p->comm : "python"))
			r->failed++;
		task_walk_step(p->walk, p->sym, &r->profile, r->t0_ns, r->opts.by_function, revisit);
	}
}

void recorder_walk_tasks(struct recorder *r, int all)
{
	walk_tasks(r, all, all);
}

void recorder_release_tasks(struct recorder *r)
{
	task_spans_clear(&r->profile.tasks);
	for (size_t i = 0; i < r->nprocs; i++)
		task_walk_next_period(r->procs[i]->walk);
}

void recorder_live_tasks(struct recorder *r)
{
	uint64_t now = monotonic_ns();
	size_t i;

	for (i = 0; i < r->nprocs && !task_walk_due(r->procs[i]->walk, now); i++)
		;
	if (i == r->nprocs)
		return;
	recorder_release_tasks(r);
	walk_tasks(r, 1, 0);	/* on through a long list: a view has no end to prepare */
}

/* What the recorder knows thread tid of process pid (p, if known) as
 * (thread_display_name), else NULL. */
static const char *known_name(const struct rec_process *p, int pid, int tid)
{
	const char *py_name = NULL, *comm = NULL;
	size_t i;

	for (i = 0; p && i < p->nthreads; i++) {
		if (p->threads[i].tid == tid) {
			py_name = p->threads[i].py_name;
			comm = p->threads[i].comm;
		}
	}
	return thread_display_name(py_name, comm, pid, tid);
}

static void name_thread(struct recorder *r, struct thread_profile *tp)
{
	struct rec_process *p = find_process(r, tp->pid);
	const char *name = known_name(p, tp->pid, tp->tid);

	free(tp->name);
	tp->name = strdup(name ? name : "?");
	free(tp->process);
	tp->process = strdup(p && p->comm[0] ? p->comm : "python");
}

/* Threads with no samples (only off-CPU time, without --idle) have no
 * profile to carry their name: the thread table finds it in a label. */
static void label_threads(struct recorder *r)
{
	const struct rec_process *p;
	const char *name;
	size_t i, j;

	for (i = 0; i < r->nprocs; i++) {
		p = r->procs[i];
		for (j = 0; j < p->nthreads; j++) {
			if (profile_find_thread(&r->profile, p->target.pid, p->threads[j].tid))
				continue;
			name = known_name(p, p->target.pid, p->threads[j].tid);
			if (name && profile_label_thread(&r->profile, p->target.pid, p->threads[j].tid,
							 name, p->comm[0] ? p->comm : "python"))
				r->failed++;
		}
	}
}

static int by_start(const void *x, const void *y)
{
	const struct interval *a = x, *b = y;

	return a->start_ns < b->start_ns ? -1 : a->start_ns > b->start_ns;
}

static void finish(struct recorder *r, uint64_t end_ns)
{
	size_t i;

	if (r->analysis.waits.n)
		qsort(r->analysis.waits.v, r->analysis.waits.n, sizeof(*r->analysis.waits.v), by_start);
	if (r->opts.idle) {
		if (analysis_add_idle_samples(&r->analysis, &r->profile))
			r->failed++;
		if (analysis_fit_timeline(&r->profile))
			r->failed++;
	}

	for (i = 0; i < r->profile.nthreads; i++)
		name_thread(r, &r->profile.threads[i]);
	label_threads(r);
	r->profile.duration_ns = since_start(r, end_ns);
	r->profile.start_monotonic_ns = r->t0_ns;
	r->profile.start_realtime_ns = realtime_of_monotonic(r->t0_ns);
	profile_sort(&r->profile);
	name_late_holders(r);
	gil_blame_name_collectors(&r->analysis.blame, &r->analysis.gcs, &r->analysis.waits);
	if (gil_blame_settle(&r->analysis.blame, &r->profile, &r->analysis.gcs, &r->analysis.waits))
		r->failed++;
}

/* --tasks: the walks and their time (with -v); a walk that stopped at a
 * bound missed tasks (a warning). */
static void print_walks(const struct rec_process *p, FILE *f, int verbose)
{
	unsigned walks;
	uint64_t ns;
	int truncated;

	task_walk_cost(p->walk, &walks, &ns, &truncated);
	if (walks && verbose)
		fprintf(f, "ebpfprof: --tasks: process %d: %u walks of its asyncio tasks, %.1f ms each\n",
			p->target.pid, walks, ns / 1e6 / walks);
	if (truncated)
		fprintf(f, "ebpfprof: warning: --tasks: process %d: a walk of its asyncio tasks stopped at a bound (%d tasks, %d coroutines a task, %llu ms): the walks took turns over its tasks, each seen every few walks (those beyond %d walks' reach missed)\n",
			p->target.pid, PY_TASKS_MAX, PY_TASK_DEPTH, PY_TASKS_WALK_NS / 1000000,
			TASK_WALK_MISSES_MAX + 1);
}

static int has_unnamed_frame(const uint8_t *unnamed_id, const struct sample *s)
{
	for (uint32_t i = 0; i < s->nframes; i++)
		if (unnamed_id[s->frames[i]])
			return 1;
	return 0;
}

/* The share of the process's recorded time (sampled and off-CPU weights)
 * under a frame without a name: how much of its profile <unknown> hides.
 * The frames so named are found once: a long recording has millions of
 * samples. 0 when out of memory. */
static double unnamed_share(const struct recorder *r, int pid)
{
	const struct profile *prof = &r->profile;
	uint64_t all = 0, unnamed = 0;
	struct sample_iter it;
	struct sample s;
	uint8_t *unnamed_id = calloc(prof->nframes ? prof->nframes : 1, 1);

	if (!unnamed_id)
		return 0;
	for (size_t i = 0; i < prof->nframes; i++)
		unnamed_id[i] = prof->frames[i].kind == FRAME_PYTHON &&
				!strcmp(prof->frames[i].name, PY_SYM_UNNAMED);
	for (size_t i = 0; i < prof->nthreads; i++) {
		if (prof->threads[i].pid != pid)
			continue;
		sample_iter_init(&it, prof, &prof->threads[i]);
		while (sample_iter_next(&it, &s)) {
			all += s.weight_ns;
			if (has_unnamed_frame(unnamed_id, &s))
				unnamed += s.weight_ns;
		}
	}
	free(unnamed_id);
	return all ? 100.0 * unnamed / all : 0;
}

/* Code objects without a name: the share of the profile under <unknown>
 * frames (by default from LOSS_SHOWN_PERCENT: a code object freed before it
 * was read is often module code run once, at the start); with -v any, and
 * why they have none, so that a profile of <unknown> frames says
 * whether they were freed before they were read (short-lived code), or the
 * target's memory could not be read. */
static void print_unnamed(const struct recorder *r, const struct rec_process *p, FILE *f,
			  int verbose)
{
	struct py_sym_unnamed u;
	size_t unnamed;
	double share;

	py_symbolizer_unnamed(p->sym, &u);
	unnamed = u.unread + u.replaced + u.nameless;
	if (!unnamed)
		return;
	share = unnamed_share(r, p->target.pid);
	if (share >= LOSS_SHOWN_PERCENT || verbose)
		fprintf(f, "ebpfprof: loss: process %d: %.1f%% of its profile's time is under <unknown> frames (%zu of %zu code objects have no name)\n",
			p->target.pid, share, unnamed, u.held);
	if (!verbose)
		return;
	fprintf(f, "ebpfprof: process %d: %zu of %zu code objects have no name (<unknown>): %zu freed before they were read (%zu of them unreadable to the kernel), %zu whose memory could not be read, %zu whose name could not be read; %zu named by the kernel\n",
		p->target.pid, unnamed, u.held, u.replaced,
		u.kernel_unread, u.unread, u.nameless, u.seeded);
	if (u.unread) {
		char why[256];

		remote_why_failed(why, sizeof(why));
		fprintf(f, "ebpfprof: reads of target memory that failed: %s\n", why);
	}
}

void recorder_print_losses(const struct recorder *r, FILE *f, int verbose)
{
	if (r->unknown_stacks || r->failed)
		fprintf(f, "ebpfprof: warning: %lu records named a stack whose frames were lost (off-CPU intervals shown without frames, samples dropped), %lu records not kept (out of memory)\n",
			r->unknown_stacks, r->failed);
	if (r->native_unwound && verbose)
		fprintf(f, "ebpfprof: native: %lu stacks unwound, %.0f%% to the thread's first frame (the others stop where the stack copy or the unwind information ends), %.1f native frames and %.1f us of CPU a stack\n",
			r->native_unwound, 100.0 * r->native_complete / r->native_unwound,
			(double)r->native_frames / r->native_unwound,
			r->native_cpu_ns / 1e3 / r->native_unwound);
	if (r->profile.tasks.dropped)
		fprintf(f, "ebpfprof: warning: --tasks: %lu places of suspended tasks not kept (more than %u in the recording)\n",
			r->profile.tasks.dropped, TASK_SPANS_MAX);
	for (size_t i = 0; i < r->nprocs; i++) {
		print_walks(r->procs[i], f, verbose);
		print_unnamed(r, r->procs[i], f, verbose);
	}
	if (r->native_unpaired)
		fprintf(f, "ebpfprof: warning: %lu samples shown without native frames (their registers and stack were lost)\n",
			r->native_unpaired);
}

void recorder_finish(struct recorder *r, uint64_t end_ns)
{
	finish(r, end_ns);
}

/* A thread off the CPU at the cut needs nothing here: the kernel holds its
 * switch-out and sends the interval when it ends, so the interval counts in
 * the period in which it ends (from that period's start). */
void recorder_cut_period(struct recorder *r, uint64_t end_ns)
{
	finish(r, end_ns);
}

void recorder_next_period(struct recorder *r, uint64_t start_ns)
{
	/* frames stay: the stacks of threads now off the CPU use their ids,
	 * and a program's frames are few and come back in every period */
	profile_drop_threads(&r->profile);
	analysis_next_period(&r->analysis);
	recorder_release_tasks(r);
	r->t0_ns = start_ns;
	r->kept = 0;
}
