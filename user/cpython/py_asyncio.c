// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * asyncio tasks of a target, read from outside (py_asyncio.h).
 *
 * A task's coroutine is a generator object with its frame inside it
 * (gi_iframe); suspended in `await x`, that frame's value stack holds x's
 * iterator on top (3.15: one slot below the top). Followed down through
 * coroutines and generators it ends at a FutureIter whose future is what
 * the task waits for. Nothing read is trusted: every object on the way is
 * checked by its type's name before its fields are read, and the walk is
 * bounded in tasks, depth, reads and time.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "clock.h"
#include "ebpfprof.h"
#include "ep_frame.h"
#include "grow.h"
#include "hash.h"
#include "hash_index.h"
#include "py_asyncio.h"
#include "py_objects.h"
#include "py_symbolizer.h"
#include "remote.h"

/*
 * What the debug offsets do not say, per version: where the task's coro
 * and name are before 3.14 (TaskObj in Modules/_asynciomodule.c), where a
 * generator keeps its frame (gi_iframe: PyGenObject in genobject.h, 3.11;
 * pycore_interpframe_structs.h, 3.14), and how the frame's value stack
 * ends: an int index from localsplus (stacktop, 3.11 to 3.13) or a pointer
 * (stackpointer, 3.14+). Checked against the same builds with ctypes: a
 * suspended task's get_coro(), get_name() and cr_await found at these.
 */
struct aio_layout {
	int minor;
	int task_coro, task_name;	/* -1: from .AsyncioDebug */
	int gen_iframe;
	int frame_stacktop;		/* int; -1 if a pointer */
	int frame_stackpointer;		/* _PyStackRef *; -1 if an index */
	int frame_localsplus;
	int await_slot;			/* the awaited iterator: this many below the top */
	const char *list;		/* asyncio.tasks attribute holding the tasks */
};

static const struct aio_layout aio_layouts[] = {
	{ 11, 136, 144, 80, 64, -1, 72, 1, "_all_tasks" },
	{ 12, 136, 144, 72, 64, -1, 72, 1, "_scheduled_tasks" },
	{ 13, 120, 128, 72, 64, -1, 72, 1, "_scheduled_tasks" },
	{ 14, -1, -1, 72, -1, 64, 80, 1, NULL },
	{ 15, -1, -1, 72, -1, 64, 80, 2, NULL },
};

#define TASK_TYPE	"_asyncio.Task"
#define FUTURE_TYPE	"_asyncio.Future"
#define FUTURE_ITER	"_asyncio.FutureIter"
#define FUTURE_ITER_FUT	16		/* futureiterobject.future */
#define WEAKREF_OBJECT	16		/* PyWeakReference.wr_object */
#define STACKREF_TAGS	7ull		/* low bits of a 3.14+ _PyStackRef */
#define VALUE_STACK_MAX	(1 << 16)	/* slots: no frame is deeper */
#define THREADS_MAX	4096
#define TIME_CHECK_EVERY 64

/* Code objects are shared by every task running the same coroutine: their
 * check and ident are read once a walk. */
struct code_seen {
	uint64_t code;
	uint32_t ident;
};
#define CODE_CACHE	1024		/* a power of two (hash.h) */
/* the tasks seen in one walk: room past PY_TASKS_MAX for those skipped */
#define SEEN_MAX	174762

struct walk {
	const struct py_target *t;
	const struct aio_layout *A;
	struct py_asyncio_offsets off;	/* 3.14+ */
	struct py_reader r;
	struct py_tasks *out;
	uint64_t deadline_ns;
	uint64_t *seen;			/* the task addresses seen, SEEN_MAX at most */
	size_t seen_cap, nseen;
	struct hash_index seen_index;	/* seen by address */
	unsigned calls;
	unsigned flags;
	size_t skip;			/* tasks found but passed over, left */
	struct code_seen *codes;	/* CODE_CACHE of them */
};

static const struct aio_layout *aio_layout_for(int minor)
{
	size_t i;

	for (i = 0; i < sizeof(aio_layouts) / sizeof(aio_layouts[0]); i++)
		if (aio_layouts[i].minor == minor)
			return &aio_layouts[i];
	return NULL;
}

/* Bounds hit: the walk ends and says so. */
static int over_budget(struct walk *w)
{
	if (w->out->n >= PY_TASKS_MAX || !w->r.reads_left ||
	    (++w->calls % TIME_CHECK_EVERY == 0 && monotonic_ns() > w->deadline_ns)) {
		w->out->truncated = 1;
		return 1;
	}
	return 0;
}

/* 1 if addr was seen already; else remembers it. -1: the set holds all it
 * may (SEEN_MAX), more distinct tasks than a walk keeps, or no memory. */
static int seen_before(struct walk *w, uint64_t addr)
{
	uint64_t h = hash_u64(addr);
	struct hash_probe p;
	size_t e;

	for (e = hash_index_first(&w->seen_index, h, &p); e != HASH_INDEX_NONE;
	     e = hash_index_next(&p))
		if (w->seen[e] == addr)
			return 1;
	if (GROW_ARRAY(w->seen, w->seen_cap, w->nseen + 1) ||
	    hash_index_add(&w->seen_index, h, w->nseen))
		return -1;
	w->seen[w->nseen++] = addr;
	return 0;
}

static void task_name(struct walk *w, uint64_t task, char *out, size_t len)
{
	uint64_t name, counter;
	int off = w->A->task_name >= 0 ? w->A->task_name : (int)w->off.task_name;

	snprintf(out, len, "?");
	if (py_rd_u64(&w->r, task + off, &name) || !name)
		return;
	if (py_type_is(&w->r, name, "str")) {
		py_symbolizer_read_str(w->t->pid, &w->t->layout, name, out, len);
		return;
	}
	/* 3.13+: a counter until someone asks, then "Task-N" */
	if (py_type_is(&w->r, name, "int") && !py_long_u64(&w->r, name, &counter))
		snprintf(out, len, "Task-%llu", (unsigned long long)counter);
}

/* 0 and the ident of a code object (checked to be one), or -1. */
static int code_ident(struct walk *w, uint64_t code, uint32_t *ident)
{
	const struct ep_proc_cfg *c = &w->t->cfg;
	struct code_seen *e = &w->codes[hash_cache_slot(hash_u64(code), CODE_CACHE)];
	int32_t firstlineno = 0;
	uint64_t filename = 0;

	if (code && e->code == code) {
		*ident = e->ident;
		return 0;
	}
	if (!code || !py_type_is(&w->r, code, "code"))
		return -1;
	py_rd(&w->r, code + c->code_firstlineno, &firstlineno, sizeof(firstlineno));
	py_rd_u64(&w->r, code + c->code_filename, &filename);
	*e = (struct code_seen){ .code = code, .ident = ep_code_ident(firstlineno, filename) };
	*ident = e->ident;
	return 0;
}

/* The frame of generator gen: its code and instruction into *f, and the
 * object its value stack holds await_slot below the top (0 if none). */
static int coro_frame(struct walk *w, uint64_t gen, struct py_coro_frame *f, uint64_t *awaited)
{
	const struct ep_proc_cfg *c = &w->t->cfg;
	uint8_t buf[EP_FRAME_READ_MAX + 16] = { 0 };
	uint64_t frame = gen + w->A->gen_iframe, top = 0, slot;
	int32_t stacktop;
	int64_t instr;

	*awaited = 0;
	if (c->frame_read_size > EP_FRAME_READ_MAX || py_rd(&w->r, frame, buf, c->frame_read_size))
		return -1;
	f->code = ep_frame_code(c, buf);
	if (code_ident(w, f->code, &f->ident))
		return -1;
	instr = ep_frame_instr_offset(c, buf, f->code);
	f->instr = instr < 0 || !ep_frame_started(c, instr) ? ~0u : (uint32_t)instr;
	if (w->A->frame_stacktop >= 0) {
		if (py_rd(&w->r, frame + w->A->frame_stacktop, &stacktop, sizeof(stacktop)) ||
		    stacktop < w->A->await_slot || stacktop > VALUE_STACK_MAX)
			return 0;
		top = frame + w->A->frame_localsplus + (uint64_t)stacktop * 8;
	} else if (py_rd_u64(&w->r, frame + w->A->frame_stackpointer, &top) ||
		   top < frame + w->A->frame_localsplus + w->A->await_slot * 8ull ||
		   top > frame + w->A->frame_localsplus + VALUE_STACK_MAX * 8ull) {
		return 0;
	}
	if (!py_rd_u64(&w->r, top - w->A->await_slot * 8ull, &slot))
		*awaited = slot & ~STACKREF_TAGS;
	return 0;
}

/* A gathering future's _children (a list attribute of the Python subclass). */
static void gather_children(struct walk *w, uint64_t fut, struct py_task *task)
{
	struct py_dict_view attrs;
	uint64_t list;
	int n;

	if (py_instance_view(&w->r, fut, &attrs) ||
	    py_view_lookup(&w->r, &attrs, "_children", &list) != 1 ||
	    !py_type_is(&w->r, list, "list"))
		return;
	n = py_list_items(&w->r, list, task->children, PY_TASK_CHILDREN);
	task->nchildren = n > 0 ? n : 0;
}

/* obj's ob_type, or 0. */
static uint64_t type_of(struct walk *w, uint64_t obj)
{
	uint64_t type;

	return obj && !py_rd_u64(&w->r, obj + OB_TYPE, &type) ? type : 0;
}

/* What the innermost coroutine awaits (of type `type`): the future behind
 * its iterator. */
static void classify_await(struct walk *w, uint64_t obj, uint64_t type, struct py_task *task)
{
	uint64_t fut;

	py_type_name(&w->r, obj, task->await_type, sizeof(task->await_type));
	task->await_obj = obj;
	task->await_kind = PY_AWAIT_OTHER;
	if (!py_type_chain_is(&w->r, type, FUTURE_ITER) ||
	    py_rd_u64(&w->r, obj + FUTURE_ITER_FUT, &fut) || !(type = type_of(w, fut)) ||
	    !py_type_chain_is(&w->r, type, FUTURE_TYPE))
		return;
	py_type_name(&w->r, fut, task->await_type, sizeof(task->await_type));
	task->await_obj = fut;
	if (py_type_chain_is(&w->r, type, TASK_TYPE)) {
		task->await_kind = PY_AWAIT_TASK;
	} else if (py_type_chain_is(&w->r, type, "_GatheringFuture")) {
		task->await_kind = PY_AWAIT_GATHER;
		gather_children(w, fut, task);
	} else {
		task->await_kind = PY_AWAIT_FUTURE;
	}
}

static int is_generator(struct walk *w, uint64_t type)
{
	return py_type_chain_is(&w->r, type, "coroutine") ||
	       py_type_chain_is(&w->r, type, "generator");
}

/* The task's coroutines from its own down to the innermost, then stored
 * innermost first. A running task shows its own coroutine only: the rest
 * of its stack is the thread's. */
static void await_chain(struct walk *w, uint64_t coro, struct py_task *task)
{
	struct py_coro_frame chain[PY_TASK_DEPTH];
	uint64_t awaited = 0, type;
	int n = 0, i;

	type = type_of(w, coro);
	while (type && is_generator(w, type)) {
		if (n == PY_TASK_DEPTH) {
			task->truncated = 1;
			break;
		}
		if (coro_frame(w, coro, &chain[n], &awaited))
			break;
		n++;
		if (task->running)
			break;
		coro = awaited;
		type = type_of(w, coro);
		if (type && !is_generator(w, type)) {
			classify_await(w, coro, type, task);
			break;
		}
	}
	task->frames = calloc(n ? n : 1, sizeof(*task->frames));
	if (!task->frames)
		return;
	for (i = 0; i < n; i++)
		task->frames[i] = chain[n - 1 - i];
	task->nframes = n;
}

static struct py_task *new_task(struct walk *w)
{
	struct py_tasks *o = w->out;
	struct py_task *grown;
	size_t cap;

	if (o->n == o->cap) {
		cap = o->cap ? o->cap * 2 : 64;
		grown = realloc(o->tasks, cap * sizeof(*grown));
		if (!grown)
			return NULL;
		o->tasks = grown;
		o->cap = cap;
	}
	memset(&o->tasks[o->n], 0, sizeof(o->tasks[0]));
	return &o->tasks[o->n];
}

static void read_awaited_by(struct walk *w, uint64_t addr, struct py_task *task);

/* One task found: 1 to stop the walk, else 0 (bad entries are skipped). */
static int add_task(struct walk *w, uint64_t addr, int running)
{
	struct py_task *task;
	uint64_t coro = 0;
	int off, seen;

	if (over_budget(w))
		return 1;
	/* only tasks enter the set: a forged list of anything else does not
	 * fill it */
	if (!addr || !py_type_is(&w->r, addr, TASK_TYPE))
		return 0;
	seen = seen_before(w, addr);
	if (seen < 0) {
		w->out->truncated = 1;
		w->out->seen_full = 1;
		return 1;
	}
	if (seen)
		return 0;
	if (w->skip) {
		w->skip--;
		w->out->skipped++;
		return 0;
	}
	task = new_task(w);
	if (!task)
		return 1;
	task->addr = addr;
	task->running = running;
	task_name(w, addr, task->name, sizeof(task->name));
	off = w->A->task_coro >= 0 ? w->A->task_coro : (int)w->off.task_coro;
	if (!py_rd_u64(&w->r, addr + off, &coro))
		task->coro = coro;
	if (w->flags & PY_TASKS_NAMES_ONLY) {
		w->out->n++;
		return 0;
	}
	if (coro)
		await_chain(w, coro, task);
	if (w->A->task_coro < 0)
		read_awaited_by(w, addr, task);
	w->out->n++;
	return 0;
}

static void note_awaiter(struct py_task *task, uint64_t by)
{
	int i;

	for (i = 0; i < task->nawaited_by; i++)
		if (task->awaited_by[i] == by)
			return;
	if (task->nawaited_by < PY_TASK_CHILDREN)
		task->awaited_by[task->nawaited_by++] = by;
}

static int note_awaiter_in_set(struct py_reader *r, uint64_t key, uint64_t value, void *arg)
{
	struct py_task *task = arg;

	(void)value;
	if (py_type_is(r, key, TASK_TYPE))
		note_awaiter(task, key);
	return task->nawaited_by >= PY_TASK_CHILDREN;
}

/* 3.14+: the task's fut_awaited_by, one future or a set of them. */
static void read_awaited_by(struct walk *w, uint64_t addr, struct py_task *task)
{
	uint64_t by;
	uint8_t is_set;

	if (py_rd_u64(&w->r, addr + w->off.task_awaited_by, &by) || !by ||
	    py_rd(&w->r, addr + w->off.task_awaited_by_is_set, &is_set, 1))
		return;
	if (!is_set) {
		if (py_type_is(&w->r, by, TASK_TYPE))
			note_awaiter(task, by);
	} else if (py_type_is(&w->r, by, "set")) {
		py_set_for_each(&w->r, by, note_awaiter_in_set, task);
	}
}

static int cmp_addr(const void *a, const void *b)
{
	uint64_t x = ((const struct py_task_index *)a)->addr;
	uint64_t y = ((const struct py_task_index *)b)->addr;

	return x < y ? -1 : x > y;
}

static struct py_task *find(const struct py_tasks *o, uint64_t addr)
{
	struct py_task_index key = { .addr = addr }, *hit;

	hit = o->index && o->n ? bsearch(&key, o->index, o->n, sizeof(key), cmp_addr) : NULL;
	return hit ? &o->tasks[hit->i] : NULL;
}

/* The tasks by address, kept for py_asyncio_task_at (a scan per lookup was
 * quadratic in a walk of thousands of tasks). */
static void index_tasks(struct py_tasks *o)
{
	size_t i;

	o->index = calloc(o->n ? o->n : 1, sizeof(*o->index));
	if (!o->index)
		return;
	for (i = 0; i < o->n; i++)
		o->index[i] = (struct py_task_index){ o->tasks[i].addr, i };
	qsort(o->index, o->n, sizeof(*o->index), cmp_addr);
}

/* A task awaiting a task, or a gather of tasks, is their awaiter. */
static void link_awaiters(struct py_tasks *o)
{
	struct py_task *awaited;
	size_t i;
	int j;

	for (i = 0; i < o->n; i++) {
		struct py_task *t = &o->tasks[i];

		if (t->await_kind == PY_AWAIT_TASK && (awaited = find(o, t->await_obj)))
			note_awaiter(awaited, t->addr);
		for (j = 0; t->await_kind == PY_AWAIT_GATHER && j < t->nchildren; j++)
			if ((awaited = find(o, t->children[j])))
				note_awaiter(awaited, t->addr);
	}
}

/* 3.14+: a circular list of llist_node, the head inside a thread or
 * interpreter state, each other node inside a task at task_node. A cycle
 * that skips the head repeats tasks already seen: the steps are bounded. */
static void walk_list(struct walk *w, uint64_t head)
{
	uint64_t node;
	size_t steps;

	if (py_rd_u64(&w->r, head, &node))
		return;
	for (steps = 0; node && node != head; steps++) {
		if (steps >= PY_TASKS_MAX) {
			w->out->truncated = 1;
			return;
		}
		if (add_task(w, node - w->off.task_node, 0) || py_rd_u64(&w->r, node, &node))
			return;
	}
}

static void walk_threads_314(struct walk *w)
{
	const struct py_layout *L = &w->t->layout;
	uint64_t tstate, running;
	int i;

	if (py_rd_u64(&w->r, w->t->interp_addr + L->interp_threads_head, &tstate))
		return;
	for (i = 0; tstate && i < THREADS_MAX && !w->out->truncated; i++) {
		if (!py_rd_u64(&w->r, tstate + w->off.tstate_running_task, &running) && running) {
			if (add_task(w, running, 1))
				return;
		}
		walk_list(w, tstate + w->off.tstate_tasks_head);
		if (py_rd_u64(&w->r, tstate + L->tstate_next, &tstate))
			return;
	}
	walk_list(w, w->t->interp_addr + w->off.interp_tasks_head);
}

static int add_task_entry_value(struct py_reader *r, uint64_t key, uint64_t value, void *arg)
{
	(void)r;
	(void)key;
	return add_task(arg, value, 1);
}

static int add_task_entry(struct py_reader *r, uint64_t key, uint64_t value, void *arg)
{
	(void)r;
	(void)value;
	return add_task(arg, key, 0);
}

/* A WeakSet's keys are weak references: their referents are the tasks. */
static int add_weak_entry(struct py_reader *r, uint64_t ref, uint64_t value, void *arg)
{
	uint64_t task;

	(void)value;
	if (py_rd_u64(r, ref + WEAKREF_OBJECT, &task))
		return 0;
	return add_task(arg, task, 0);
}

/* Before 3.14: _current_tasks ({loop: task}) first, then the task sets. */
static int walk_sets(struct walk *w, char *err, size_t errlen)
{
	uint64_t interp = w->t->interp_addr, current, weakset, data, eager;
	struct py_dict_view v;
	int r;

	r = py_module_attr(&w->r, interp, "asyncio.tasks", w->A->list, &weakset);
	if (r <= 0) {
		if (r < 0)
			snprintf(err, errlen, "cannot read asyncio.tasks.%s", w->A->list);
		return r;
	}
	if (py_module_attr(&w->r, interp, "asyncio.tasks", "_current_tasks", &current) == 1 &&
	    !py_dict_view(&w->r, current, &v))
		py_view_for_each(&w->r, &v, add_task_entry_value, w);
	if (py_instance_view(&w->r, weakset, &v) || py_view_lookup(&w->r, &v, "data", &data) != 1 ||
	    !py_type_is(&w->r, data, "set")) {
		snprintf(err, errlen, "asyncio.tasks.%s is not a WeakSet", w->A->list);
		return -1;
	}
	if (py_set_for_each(&w->r, data, add_weak_entry, w) == PY_SET_CUT)
		w->out->truncated = 1;
	if (w->A->minor >= 12 &&
	    py_module_attr(&w->r, interp, "asyncio.tasks", "_eager_tasks", &eager) == 1 &&
	    py_type_is(&w->r, eager, "set") &&
	    py_set_for_each(&w->r, eager, add_task_entry, w) == PY_SET_CUT)
		w->out->truncated = 1;
	return 0;
}

int py_asyncio_gen_iframe(int minor)
{
	const struct aio_layout *A = aio_layout_for(minor);

	return A ? A->gen_iframe : -1;
}

int py_asyncio_tasks(const struct py_target *t, unsigned flags, struct py_tasks *out,
		     char *err, size_t errlen)
{
	return py_asyncio_tasks_from(t, flags, 0, out, err, errlen);
}

int py_asyncio_tasks_from(const struct py_target *t, unsigned flags, size_t skip,
			  struct py_tasks *out, char *err, size_t errlen)
{
	struct walk w = { .t = t, .out = out, .flags = flags, .skip = skip };
	int r = 0;

	memset(out, 0, sizeof(*out));
	w.A = aio_layout_for(t->minor);
	if (t->major != 3 || !w.A) {
		snprintf(err, errlen, "asyncio tasks are read for Python 3.11 to 3.15, not %d.%d",
			 t->major, t->minor);
		return -1;
	}
	if (py_reader_init(&w.r, t->pid, &t->layout, PY_TASKS_READS)) {
		snprintf(err, errlen, "no object layout for Python %d.%d", t->major, t->minor);
		return -1;
	}
	w.seen_index.max_entries = SEEN_MAX;
	w.r.types = calloc(PY_TYPE_CACHE, sizeof(*w.r.types));
	w.codes = calloc(CODE_CACHE, sizeof(*w.codes));
	if (!w.r.types || !w.codes) {
		free(w.r.types);
		free(w.codes);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	w.deadline_ns = monotonic_ns() +
			(flags & PY_TASKS_NAMES_ONLY ? PY_TASKS_QUICK_NS :
			 flags & PY_TASKS_QUICK ? PY_TASKS_WALK_NS : PY_TASKS_BUDGET_NS);
	if (!w.A->list) {
		/* no .AsyncioDebug mapped: asyncio was never imported */
		if (!py_asyncio_offsets_read(t, w.deadline_ns, &w.off)) {
			out->source = "the thread states' task lists (.AsyncioDebug offsets)";
			walk_threads_314(&w);
		}
	} else {
		out->source = w.A->minor == 11 ? "asyncio.tasks._all_tasks" :
			      "asyncio.tasks._scheduled_tasks and _eager_tasks";
		r = walk_sets(&w, err, errlen);
	}
	free(w.seen);
	hash_index_free(&w.seen_index);
	free(w.r.types);
	free(w.codes);
	out->reads = PY_TASKS_READS - w.r.reads_left;
	if (r < 0) {
		py_asyncio_tasks_free(out);
		return -1;
	}
	index_tasks(out);
	link_awaiters(out);
	return 0;
}

void py_asyncio_tasks_free(struct py_tasks *tasks)
{
	size_t i;

	for (i = 0; i < tasks->n; i++)
		free(tasks->tasks[i].frames);
	free(tasks->tasks);
	free(tasks->index);
	memset(tasks, 0, sizeof(*tasks));
}

const struct py_task *py_asyncio_task_at(const struct py_tasks *tasks, uint64_t addr)
{
	return addr ? find(tasks, addr) : NULL;
}

const char *py_asyncio_task_name(const struct py_tasks *tasks, uint64_t addr)
{
	const struct py_task *t = py_asyncio_task_at(tasks, addr);

	return t ? t->name : NULL;
}
