// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The recorded profile: interned frames, threads and their samples.
 *
 * Frames are interned through an index of frame ids (hash_index.h),
 * because every stack of every sample is resolved through it: a long
 * session interns millions of frames against a few thousand distinct ones.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "grow.h"
#include "hash.h"
#include "hash_index.h"
#include "profile.h"

/* What profile_frame() returns when it cannot allocate. */
#define FRAME_NONE	UINT32_MAX
/* What stack_id() returns when it cannot allocate. */
#define STACK_NONE	UINT32_MAX

void profile_init(struct profile *p)
{
	memset(p, 0, sizeof(*p));
}

/*
 * Every distinct stack of the samples, once, by id: a sample costs its own
 * few bytes whatever its depth (a long recording keeps millions of samples
 * of a few thousand stacks). Id 0 is the empty stack.
 */
struct stored_stack {
	uint32_t *frames;
	uint32_t nframes;
};

struct stack_store {
	struct stored_stack *v;	/* by id */
	size_t n, cap;
	struct hash_index index;	/* v[1..] by frames */
};

static void stack_store_free(struct stack_store *st)
{
	size_t i;

	if (!st)
		return;
	for (i = 0; i < st->n; i++)
		free(st->v[i].frames);
	free(st->v);
	hash_index_free(&st->index);
	free(st);
}

static void thread_free(struct thread_profile *t)
{
	/* sample frames belong to the stack store */
	sample_log_free(&t->log);
	free(t->name);
	free(t->process);
}

static void drop_labels(struct profile *p)
{
	for (size_t i = 0; i < p->nlabels; i++) {
		free(p->labels[i].name);
		free(p->labels[i].process);
	}
	p->nlabels = 0;
}

void profile_free(struct profile *p)
{
	struct hash_index *idx = p->frame_index;
	size_t i;

	stack_store_free(p->stack_store);

	for (i = 0; i < p->nframes; i++) {
		free(p->frames[i].name);
		free(p->frames[i].file);
	}
	free(p->frames);
	if (idx)
		hash_index_free(idx);
	free(idx);
	for (i = 0; i < p->nthreads; i++)
		thread_free(&p->threads[i]);
	free(p->threads);
	drop_labels(p);
	free(p->labels);
	task_spans_free(&p->tasks);
	profile_init(p);
}


static uint64_t frame_hash(const char *name, const char *file, int line, int kind)
{
	uint64_t h = FNV1A_BASIS;

	/* The NULs keep ("ab", "c") and ("a", "bc") apart. */
	h = fnv1a(h, name, strlen(name) + 1);
	if (file)
		h = fnv1a(h, file, strlen(file) + 1);
	h = fnv1a(h, &line, sizeof(line));
	h = fnv1a(h, &kind, sizeof(kind));
	/* A marker has no file; "" would otherwise hash like no file. */
	return fnv1a(h, file ? "f" : "m", 1);
}

static int same_str(const char *a, const char *b)
{
	if (!a || !b)
		return a == b;
	return strcmp(a, b) == 0;
}

static int frame_equal(const struct frame_info *f, const char *name,
		       const char *file, int line, int kind)
{
	return f->line == line && f->kind == kind &&
	       strcmp(f->name, name) == 0 && same_str(f->file, file);
}

static struct hash_index *index_get(struct profile *p)
{
	if (!p->frame_index)
		p->frame_index = calloc(1, sizeof(struct hash_index));
	return p->frame_index;
}

static uint32_t frame_append(struct profile *p, const char *name,
			     const char *file, int line, int kind)
{
	struct frame_info *f;
	char *name_copy, *file_copy = NULL;

	if (GROW_ARRAY(p->frames, p->frames_cap, p->nframes + 1))
		return FRAME_NONE;
	name_copy = strdup(name);
	if (file)
		file_copy = strdup(file);
	if (!name_copy || (file && !file_copy)) {
		free(name_copy);
		free(file_copy);
		return FRAME_NONE;
	}
	f = &p->frames[p->nframes];
	f->name = name_copy;
	f->file = file_copy;
	f->line = line;
	f->kind = kind;
	return p->nframes++;
}

/*
 * Returns the frame's id, or UINT32_MAX (errno ENOMEM) if it could not be
 * stored. A NULL name is interned as "".
 */
uint32_t profile_frame(struct profile *p, const char *name, const char *file,
		       int line, int kind)
{
	struct hash_index *idx = index_get(p);
	struct hash_probe probe;
	uint64_t hash;
	size_t id;

	if (!idx)
		return FRAME_NONE;
	if (!name)
		name = "";
	hash = frame_hash(name, file, line, kind);
	for (id = hash_index_first(idx, hash, &probe); id != HASH_INDEX_NONE;
	     id = hash_index_next(&probe))
		if (frame_equal(&p->frames[id], name, file, line, kind))
			return id;
	if (hash_index_reserve(idx, p->nframes + 1))
		return FRAME_NONE;
	id = frame_append(p, name, file, line, kind);
	if (id != FRAME_NONE)
		hash_index_add(idx, hash, id);	/* reserved */
	return id;
}

/*
 * The thread (pid, tid), created empty if new; NULL if out of memory.
 * Creating a thread may move the array: earlier pointers from here are then
 * stale, so callers look a thread up again rather than keep its pointer.
 */
void profile_drop_threads(struct profile *p)
{
	for (size_t i = 0; i < p->nthreads; i++)
		thread_free(&p->threads[i]);
	p->nthreads = 0;
	drop_labels(p);
	task_spans_clear(&p->tasks);
}

int profile_label_thread(struct profile *p, int pid, int tid, const char *name,
			 const char *process)
{
	struct thread_label *l;
	char *copy = strdup(name), *proc = strdup(process);
	size_t i;

	for (i = 0; i < p->nlabels; i++)
		if (p->labels[i].pid == pid && p->labels[i].tid == tid)
			break;
	if (!copy || !proc ||
	    (i == p->nlabels && GROW_ARRAY(p->labels, p->labels_cap, p->nlabels + 1))) {
		free(copy);
		free(proc);
		return -1;
	}
	if (i == p->nlabels)
		p->labels[p->nlabels++] = (struct thread_label){ pid, tid, NULL, NULL };
	l = &p->labels[i];
	free(l->name);
	free(l->process);
	l->name = copy;
	l->process = proc;
	return 0;
}

static const struct thread_label *find_label(const struct profile *p, int pid, int tid)
{
	for (size_t i = 0; i < p->nlabels; i++)
		if (p->labels[i].pid == pid && p->labels[i].tid == tid)
			return &p->labels[i];
	return NULL;
}

const char *profile_thread_process(const struct profile *p, int pid, int tid)
{
	const struct thread_profile *t = profile_find_thread(p, pid, tid);
	const struct thread_label *l = find_label(p, pid, tid);

	if (t && t->process)
		return t->process;
	return l ? l->process : NULL;
}

const char *profile_thread_name(const struct profile *p, int pid, int tid)
{
	const struct thread_profile *t = profile_find_thread(p, pid, tid);
	const struct thread_label *l = find_label(p, pid, tid);

	if (t && t->name)
		return t->name;
	return l ? l->name : NULL;
}

const char *thread_display_name(const char *py_name, const char *comm, int pid, int tid)
{
	if (py_name && py_name[0])
		return py_name;
	if (tid != pid && comm && comm[0])
		return comm;
	return tid == pid ? "MainThread" : NULL;
}

struct thread_profile *profile_thread(struct profile *p, int pid, int tid)
{
	struct thread_profile *t;
	size_t i;

	/* Newest first: samples tend to come in runs from recent threads. */
	for (i = p->nthreads; i-- > 0;) {
		t = &p->threads[i];
		if (t->pid == pid && t->tid == tid)
			return t;
	}
	return profile_new_thread(p, pid, tid);
}

struct thread_profile *profile_new_thread(struct profile *p, int pid, int tid)
{
	struct thread_profile *t;

	if (GROW_ARRAY(p->threads, p->threads_cap, p->nthreads + 1))
		return NULL;
	t = &p->threads[p->nthreads++];
	memset(t, 0, sizeof(*t));
	t->pid = pid;
	t->tid = tid;
	/* an on-CPU sample's weight, the common case, costs no bytes */
	sample_log_init(&t->log, p->rate_hz ? 1000000000ull / p->rate_hz : 0);
	return t;
}

static uint64_t stack_hash(const uint32_t *frames, uint32_t n)
{
	return fnv1a(FNV1A_BASIS, frames, n * sizeof(*frames));
}

static struct stack_store *stack_store_get(struct profile *p)
{
	struct stack_store *st = p->stack_store;

	if (st)
		return st;
	st = calloc(1, sizeof(*st));
	if (!st)
		return NULL;
	st->v = calloc(16, sizeof(*st->v));	/* v[0]: the empty stack */
	if (!st->v) {
		free(st);
		return NULL;
	}
	st->n = 1;
	st->cap = 16;
	p->stack_store = st;
	return st;
}

/* The id of the stack, stored now if new; STACK_NONE if out of memory. */
static uint32_t stack_id(struct profile *p, const uint32_t *frames, uint32_t n)
{
	uint64_t h = stack_hash(frames, n);
	const struct stored_stack *e;
	struct stack_store *st;
	struct hash_probe probe;
	uint32_t *copy;
	size_t id;

	if (!n)
		return 0;
	st = stack_store_get(p);
	if (!st)
		return STACK_NONE;
	for (id = hash_index_first(&st->index, h, &probe); id != HASH_INDEX_NONE;
	     id = hash_index_next(&probe)) {
		e = &st->v[id];
		if (e->nframes == n && !memcmp(e->frames, frames, n * sizeof(*frames)))
			return id;
	}
	if (GROW_ARRAY(st->v, st->cap, st->n + 1) || hash_index_reserve(&st->index, st->n))
		return STACK_NONE;
	if (st->n >= STACK_NONE || !(copy = malloc(n * sizeof(*copy))))
		return STACK_NONE;
	memcpy(copy, frames, n * sizeof(*copy));
	st->v[st->n] = (struct stored_stack){ .frames = copy, .nframes = n };
	hash_index_add(&st->index, h, st->n);	/* reserved */
	return st->n++;
}

const struct thread_profile *profile_find_thread(const struct profile *p, int pid, int tid)
{
	size_t i;

	for (i = 0; i < p->nthreads; i++)
		if (p->threads[i].pid == pid && p->threads[i].tid == tid)
			return &p->threads[i];
	return NULL;
}

int profile_add_sample(struct profile *p, struct thread_profile *t,
		       const struct sample *s)
{
	struct sample_record r = { .start_ns = s->start_ns, .weight_ns = s->weight_ns,
				   .state = s->state, .holds_gil = s->holds_gil,
				   .exact = s->exact, .label = s->label };

	r.stack = stack_id(p, s->frames, s->nframes);
	if (r.stack == STACK_NONE) {
		errno = ENOMEM;
		return -1;
	}
	if (sample_log_append(&t->log, &r))
		return -1;
	t->nsamples = t->log.n;
	return 0;
}

/* The sample a record stands for. */
static void sample_of(const struct profile *p, const struct sample_record *r,
		      struct sample *s)
{
	const struct stack_store *st = p->stack_store;

	memset(s, 0, sizeof(*s));	/* its padding too: samples are compared whole */
	s->start_ns = r->start_ns;
	s->weight_ns = r->weight_ns;
	s->frames = NULL;
	s->nframes = 0;
	if (r->stack && st && r->stack < st->n) {
		s->frames = st->v[r->stack].frames;
		s->nframes = st->v[r->stack].nframes;
	}
	s->state = r->state;
	s->holds_gil = r->holds_gil;
	s->exact = r->exact;
	s->label = r->label;
}

static void iter_advance(struct sample_iter *it)
{
	struct sample_record r;

	it->has_ahead = sample_log_read(&it->rd, &r);
	if (it->has_ahead)
		sample_of(it->p, &r, &it->ahead);
}

void sample_iter_init(struct sample_iter *it, const struct profile *p,
		      const struct thread_profile *t)
{
	it->p = p;
	sample_log_reader_init(&it->rd, &t->log);
	iter_advance(it);
}

int sample_iter_next(struct sample_iter *it, struct sample *s)
{
	if (!it->has_ahead)
		return 0;
	*s = it->ahead;
	iter_advance(it);
	return 1;
}

const struct sample *sample_iter_peek(const struct sample_iter *it)
{
	return it->has_ahead ? &it->ahead : NULL;
}

struct sample *profile_thread_samples(const struct profile *p, const struct thread_profile *t)
{
	struct sample *v = malloc((t->nsamples ? t->nsamples : 1) * sizeof(*v));
	struct sample_iter it;
	size_t n = 0;

	if (!v) {
		errno = ENOMEM;
		return NULL;
	}
	sample_iter_init(&it, p, t);
	while (n < t->nsamples && sample_iter_next(&it, &v[n]))
		n++;
	return v;
}

int profile_thread_set_samples(struct profile *p, struct thread_profile *t,
			       const struct sample *v, size_t n)
{
	struct thread_profile fresh;
	size_t i;

	memset(&fresh, 0, sizeof(fresh));
	sample_log_init(&fresh.log, t->log.nominal_ns);
	for (i = 0; i < n; i++) {
		if (profile_add_sample(p, &fresh, &v[i])) {
			sample_log_free(&fresh.log);
			return -1;
		}
	}
	sample_log_free(&t->log);
	t->log = fresh.log;
	t->nsamples = fresh.nsamples;
	return 0;
}

int profile_thread_forget(struct profile *p, struct thread_profile *t, size_t n)
{
	struct sample *v;
	int rc;

	if (n >= t->nsamples) {
		sample_log_free(&t->log);
		t->nsamples = 0;
		return 0;
	}
	v = profile_thread_samples(p, t);
	if (!v)
		return -1;
	rc = profile_thread_set_samples(p, t, v + n, t->nsamples - n);
	free(v);
	return rc;
}

static int sorted_by_start(const struct sample *s, size_t n)
{
	size_t i;

	for (i = 1; i < n; i++)
		if (s[i].start_ns < s[i - 1].start_ns)
			return 0;
	return 1;
}

/* Merges the sorted runs a[lo, mid) and a[mid, hi) through tmp. */
static void merge(struct sample *a, struct sample *tmp, size_t lo, size_t mid,
		  size_t hi)
{
	size_t i = lo, j = mid, k = lo;

	while (i < mid && j < hi) {
		/* "<=" takes the left run first on ties: that keeps it stable. */
		if (a[i].start_ns <= a[j].start_ns)
			tmp[k++] = a[i++];
		else
			tmp[k++] = a[j++];
	}
	while (i < mid)
		tmp[k++] = a[i++];
	while (j < hi)
		tmp[k++] = a[j++];
	memcpy(a + lo, tmp + lo, (hi - lo) * sizeof(*a));
}

/* Stable and in place, for when there is no memory for a merge sort. */
static void insertion_sort(struct sample *a, size_t n)
{
	struct sample key;
	size_t i, j;

	for (i = 1; i < n; i++) {
		key = a[i];
		for (j = i; j > 0 && a[j - 1].start_ns > key.start_ns; j--)
			a[j] = a[j - 1];
		a[j] = key;
	}
}

/* Stable, so that samples with the same start keep their recorded order. */
void profile_sort_samples(struct sample *a, size_t n)
{
	struct sample *tmp;
	size_t width, lo, mid, hi;

	/* Samples mostly arrive in order: don't allocate for nothing. */
	if (sorted_by_start(a, n))
		return;
	tmp = malloc(n * sizeof(*tmp));
	if (!tmp) {
		insertion_sort(a, n);
		return;
	}
	for (width = 1; width < n; width *= 2) {
		for (lo = 0; lo + width < n; lo += 2 * width) {
			mid = lo + width;
			hi = mid + width < n ? mid + width : n;
			merge(a, tmp, lo, mid, hi);
		}
	}
	free(tmp);
}

/* Without the memory to sort a thread, its samples stay in recorded order:
 * the writers cut overlapping samples, they do not need an order to work. */
void profile_sort(struct profile *p)
{
	struct thread_profile *t;
	struct sample *v;
	size_t i;

	for (i = 0; i < p->nthreads; i++) {
		t = &p->threads[i];
		if (!t->log.unsorted || !(v = profile_thread_samples(p, t)))
			continue;
		profile_sort_samples(v, t->nsamples);
		profile_thread_set_samples(p, t, v, t->nsamples);
		free(v);
	}
}

uint64_t sample_end(const struct sample *s)
{
	uint64_t end = s->start_ns + s->weight_ns;

	return end < s->start_ns ? UINT64_MAX : end;
}

/*
 * Where a sample laid from `start` (its own start, or the previous sample's
 * end if later) ends on its thread's timeline. A sampled one keeps its whole
 * weight: it was once cut where the next sample began, which lost time
 * (a 100 ms ticker read 10% short at 97 Hz, any recording ~3% at 400 Hz),
 * as a sample's weight is time before its tick, not after. An exact one (an interval the kernel timed) is
 * where it was measured: it ends at its end, or where the next one starts.
 */
uint64_t sample_placed_end(const struct sample *s, uint64_t start, const struct sample *next)
{
	uint64_t end;

	if (!s->exact) {
		end = start + s->weight_ns;
		return end < start ? UINT64_MAX : end;
	}
	end = sample_end(s);
	return next && next->start_ns < end ? next->start_ns : end;
}

int profile_stack_cmp(const uint32_t *a, uint32_t na, const uint32_t *b, uint32_t nb)
{
	uint32_t i, n = na < nb ? na : nb;

	for (i = 0; i < n; i++)
		if (a[i] != b[i])
			return a[i] < b[i] ? -1 : 1;
	return na < nb ? -1 : na > nb;
}

uint64_t profile_sample_count(const struct profile *p, const struct sample *s)
{
	uint64_t period, n;

	if (!p->rate_hz || !(period = 1000000000ull / p->rate_hz))
		return 1;
	n = (s->weight_ns + period / 2) / period;
	return n ? n : 1;
}

static int thread_cmp(const void *a, const void *b)
{
	const struct thread_profile *x = *(const struct thread_profile *const *)a;
	const struct thread_profile *y = *(const struct thread_profile *const *)b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if ((x->tid == x->pid) != (y->tid == y->pid))
		return x->tid == x->pid ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

const struct thread_profile **profile_sorted_threads(const struct profile *p)
{
	const struct thread_profile **order;
	size_t i;

	order = calloc(p->nthreads ? p->nthreads : 1, sizeof(*order));
	if (!order) {
		errno = ENOMEM;
		return NULL;
	}
	for (i = 0; i < p->nthreads; i++)
		order[i] = &p->threads[i];
	qsort(order, p->nthreads, sizeof(*order), thread_cmp);
	return order;
}

int profile_many_processes(const struct profile *p)
{
	size_t i;

	for (i = 1; i < p->nthreads; i++)
		if (p->threads[i].pid != p->threads[0].pid)
			return 1;
	return 0;
}
