// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The recorded profile: interned frames, threads and their samples.
 *
 * Frames are interned through an open-addressing hash table of frame ids,
 * because every stack of every sample is resolved through it: a long
 * session interns millions of frames against a few thousand distinct ones.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "profile.h"
#include "stack_table.h"

/* What profile_frame() returns when it cannot allocate. */
#define FRAME_NONE	UINT32_MAX

struct frame_index {
	uint32_t *slots;	/* frame id + 1; 0 marks an empty slot */
	size_t cap;		/* a power of two */
};

void profile_init(struct profile *p)
{
	memset(p, 0, sizeof(*p));
}

static void thread_free(struct thread_profile *t)
{
	/* sample frames belong to the stack store */
	free(t->samples);
	free(t->name);
	free(t->process);
}

void profile_free(struct profile *p)
{
	struct frame_index *idx = p->frame_index;

	if (p->stack_store) {
		stack_table_free(p->stack_store);
		free(p->stack_store);
	}
	size_t i;

	for (i = 0; i < p->nframes; i++) {
		free(p->frames[i].name);
		free(p->frames[i].file);
	}
	free(p->frames);
	if (idx)
		free(idx->slots);
	free(idx);
	for (i = 0; i < p->nthreads; i++)
		thread_free(&p->threads[i]);
	free(p->threads);
	profile_init(p);
}

/* Grows *arr (of *cap elements of size elem) to hold at least want. */
static int grow(void **arr, size_t *cap, size_t want, size_t elem)
{
	size_t n = *cap ? *cap : 16;
	void *a;

	if (want <= *cap)
		return 0;
	while (n < want)
		n *= 2;
	a = realloc(*arr, n * elem);
	if (!a)
		return -1;
	*arr = a;
	*cap = n;
	return 0;
}

/* FNV-1a, continued from h over len bytes. */
static uint64_t fnv(uint64_t h, const void *data, size_t len)
{
	const unsigned char *b = data;
	size_t i;

	for (i = 0; i < len; i++) {
		h ^= b[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

static uint64_t frame_hash(const char *name, const char *file, int line, int kind)
{
	uint64_t h = 0xcbf29ce484222325ull;

	/* The NULs keep ("ab", "c") and ("a", "bc") apart. */
	h = fnv(h, name, strlen(name) + 1);
	if (file)
		h = fnv(h, file, strlen(file) + 1);
	h = fnv(h, &line, sizeof(line));
	h = fnv(h, &kind, sizeof(kind));
	/* A marker has no file; "" would otherwise hash like no file. */
	return fnv(h, file ? "f" : "m", 1);
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

/* The slot holding the frame, or the empty slot where it belongs. */
static uint32_t *index_slot(const struct profile *p, const struct frame_index *idx,
			    uint64_t hash, const char *name, const char *file,
			    int line, int kind)
{
	size_t mask = idx->cap - 1;
	size_t i = hash & mask;
	uint32_t *slot;

	for (;;) {
		slot = &idx->slots[i];
		if (!*slot || frame_equal(&p->frames[*slot - 1], name, file, line, kind))
			return slot;
		i = (i + 1) & mask;
	}
}

/* Rebuilds the index with room for twice as many frames as it holds now. */
static int index_grow(struct profile *p, struct frame_index *idx)
{
	struct frame_index bigger;
	const struct frame_info *f;
	uint32_t id;

	bigger.cap = idx->cap ? idx->cap * 2 : 1024;
	bigger.slots = calloc(bigger.cap, sizeof(*bigger.slots));
	if (!bigger.slots)
		return -1;
	for (id = 0; id < p->nframes; id++) {
		f = &p->frames[id];
		*index_slot(p, &bigger, frame_hash(f->name, f->file, f->line, f->kind),
			    f->name, f->file, f->line, f->kind) = id + 1;
	}
	free(idx->slots);
	*idx = bigger;
	return 0;
}

static struct frame_index *index_get(struct profile *p)
{
	if (!p->frame_index)
		p->frame_index = calloc(1, sizeof(struct frame_index));
	return p->frame_index;
}

static uint32_t frame_append(struct profile *p, const char *name,
			     const char *file, int line, int kind)
{
	struct frame_info *f;
	char *name_copy, *file_copy = NULL;

	if (grow((void **)&p->frames, &p->frames_cap, p->nframes + 1, sizeof(*f)))
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
	struct frame_index *idx = index_get(p);
	uint64_t hash;
	uint32_t *slot, id;

	if (!idx)
		return FRAME_NONE;
	if (!name)
		name = "";
	/* Keep the table at most half full so that probe runs stay short. */
	if ((p->nframes + 1) * 2 > idx->cap && index_grow(p, idx))
		return FRAME_NONE;
	hash = frame_hash(name, file, line, kind);
	slot = index_slot(p, idx, hash, name, file, line, kind);
	if (*slot)
		return *slot - 1;
	id = frame_append(p, name, file, line, kind);
	if (id != FRAME_NONE)
		*slot = id + 1;
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
	if (grow((void **)&p->threads, &p->threads_cap, p->nthreads + 1, sizeof(*t)))
		return NULL;
	t = &p->threads[p->nthreads++];
	memset(t, 0, sizeof(*t));
	t->pid = pid;
	t->tid = tid;
	return t;
}

/*
 * The one stored copy of a stack: samples share it, so a sample costs its
 * own fields only, whatever its depth (a long recording keeps millions of
 * samples of a few thousand stacks). Keyed by a hash of the frame ids; a
 * collision moves on to the next key.
 */
static uint32_t *stored_stack(struct profile *p, const uint32_t *frames, uint32_t n)
{
	const struct stack_entry *e;
	uint64_t h = 0x2545f4914f6cdd1dull;
	uint32_t i;

	if (!p->stack_store && !(p->stack_store = calloc(1, sizeof(struct stack_table))))
		return NULL;
	for (i = 0; i < n; i++)
		h = (h ^ frames[i]) * 0x100000001b3ull;
	for (h |= 1;; h++) {
		e = stack_table_get(p->stack_store, 0, h);
		if (!e)
			break;
		if (e->nframes == n && !memcmp(e->frames, frames, n * sizeof(*frames)))
			return e->frames;
	}
	if (stack_table_put(p->stack_store, 0, h, frames, n))
		return NULL;
	return stack_table_get(p->stack_store, 0, h)->frames;
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
	struct sample *dst;
	uint32_t *frames = NULL;

	if (grow((void **)&t->samples, &t->cap, t->nsamples + 1, sizeof(*dst))) {
		errno = ENOMEM;
		return -1;
	}
	if (s->nframes) {
		frames = stored_stack(p, s->frames, s->nframes);
		if (!frames) {
			errno = ENOMEM;
			return -1;
		}
	}
	dst = &t->samples[t->nsamples++];
	*dst = *s;
	dst->frames = frames;
	return 0;
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
static void sort_samples(struct sample *a, size_t n)
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

void profile_sort(struct profile *p)
{
	size_t i;

	for (i = 0; i < p->nthreads; i++)
		sort_samples(p->threads[i].samples, p->threads[i].nsamples);
}

uint64_t sample_end(const struct sample *s)
{
	uint64_t end = s->start_ns + s->weight_ns;

	return end < s->start_ns ? UINT64_MAX : end;
}

/*
 * An on-CPU sample's extent is one period by assumption; the next sample's
 * start is a measurement, so it wins.
 */
uint64_t sample_clipped_end(const struct sample *s, const struct sample *next)
{
	uint64_t end = sample_end(s);

	if (next && next->start_ns < end)
		end = next->start_ns;
	return end;
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

const char *sample_state_name(enum sample_state s)
{
	static const char *const names[STATE_MAX] = {
		[STATE_ON_CPU] = "on-cpu",
		[STATE_GC] = "gc",
		[STATE_GIL_WAIT] = "gil-wait",
		[STATE_GIL_WAIT_GC] = "waiting-for-gc",
		[STATE_LOCK_WAIT] = "lock-wait",
		[STATE_IO] = "io",
		[STATE_SLEEP] = "sleep",
		[STATE_PREEMPTED] = "preempted",
		[STATE_OTHER] = "other",
		[STATE_IDLE] = "idle",
	};

	if ((unsigned)s >= STATE_MAX)
		return "other";
	return names[s];
}
