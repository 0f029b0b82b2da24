// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gil_blame.h"
#include "grow.h"
#include "interval.h"
#include "states.h"

static void free_stacks(struct gil_blame *b)
{
	size_t i;

	for (i = 0; i < b->nstacks; i++)
		free(b->stacks[i].frames);
	free(b->stacks);
	b->stacks = NULL;
	b->nstacks = b->stacks_cap = 0;
}

void gil_blame_free(struct gil_blame *b)
{
	size_t i;

	free_stacks(b);
	free(b->v);
	free(b->unnamed);
	free(b->summary);
	for (i = 0; i < b->nrecent; i++)
		free(b->recent[i].v);
	free(b->recent);
	free(b->spread);
	memset(b, 0, sizeof(*b));
}

/* Opens a slot at `at` of a sorted array of *n items of `size` bytes: its
 * address, or NULL (out of memory, the array unchanged). */
static void *open_slot(void **v, size_t *cap, size_t *n, size_t at, size_t size)
{
	char *p;

	if (grow_array(v, cap, *n + 1, size))
		return NULL;
	p = *v;
	memmove(p + (at + 1) * size, p + at * size, (*n - at) * size);
	(*n)++;
	return p + at * size;
}

/* Whether tstate may be kept apart: among the distinct values kept, or
 * added to them while fewer than GB_UNNAMED_MAX. -1: out of memory. */
static int unnamed_kept(struct gil_blame *b, uint64_t tstate)
{
	size_t lo = 0, hi = b->nunnamed;
	uint64_t *slot;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (b->unnamed[mid] < tstate)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < b->nunnamed && b->unnamed[lo] == tstate)
		return 1;
	if (b->nunnamed >= GB_UNNAMED_MAX)
		return 0;
	slot = open_slot((void **)&b->unnamed, &b->unnamed_cap, &b->nunnamed, lo,
			 sizeof(*b->unnamed));
	if (!slot)
		return -1;
	*slot = tstate;
	return 1;
}

/* What a holder did that a wait can be spread over. */
enum item_kind {
	IT_GIL = 1 << 0,	/* an on-CPU sample holding the GIL */
	IT_CPU = 1 << 1,	/* an on-CPU sample not seen holding it */
	IT_GC_SAMPLE = 1 << 2,	/* a sample inside a collection (its stack has [GC]) */
	IT_GC = 1 << 3,		/* a collection, timed exactly, with its stack */
};

#define IT_SAMPLES	(IT_GIL | IT_CPU | IT_GC_SAMPLE)

/* A sample's kind; 0: not running (--idle's off-CPU samples). */
static int sample_kind(const struct sample *s)
{
	if (s->state == STATE_ON_CPU)
		return s->holds_gil ? IT_GIL : IT_CPU;
	return s->state == STATE_GC ? IT_GC_SAMPLE : 0;
}

/* Neither spread over samples nor named later: only its sums are used
 * (settle_unattributed, gil_blame_of), never its time. */
static int is_timeless(const struct blame_chunk *c)
{
	return !c->gc && !c->tstate && (c->holder == GB_CHANGED || c->holder == GB_HANDOFF ||
					c->holder == GB_UNKNOWN);
}

/* Behind a PyThreadState not (yet) named, not behind a collection. */
static int is_unnamed(const struct blame_chunk *c)
{
	return !c->gc && c->holder == GB_UNKNOWN && c->tstate;
}

/* Whether c stands for all the chunks of its key (see gil_blame.h). */
static int is_summary(const struct blame_chunk *c)
{
	return is_timeless(c) || ((c->holder > 0 || is_unnamed(c)) && c->at_ns >= GB_AT_WHOLE);
}

static int summary_cmp(const struct blame_chunk *a, const struct blame_chunk *c)
{
	uint64_t at_a = a->holder > 0 ? a->at_ns : 0, at_c = c->holder > 0 ? c->at_ns : 0;

	if (a->pid != c->pid)
		return a->pid < c->pid ? -1 : 1;
	if (a->waiter != c->waiter)
		return a->waiter < c->waiter ? -1 : 1;
	if (a->holder != c->holder)
		return a->holder < c->holder ? -1 : 1;
	if (a->tstate != c->tstate)
		return a->tstate < c->tstate ? -1 : 1;
	return (at_a > at_c) - (at_a < at_c);
}

/* Where c's key is (*found) or goes in b->summary. */
static size_t summary_find(const struct gil_blame *b, const struct blame_chunk *c, int *found)
{
	size_t lo = 0, hi = b->nsummary;
	int cmp;

	*found = 0;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		cmp = summary_cmp(&b->v[b->summary[mid]], c);
		if (!cmp) {
			*found = 1;
			return mid;
		}
		if (cmp < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int summary_insert(struct gil_blame *b, size_t at, size_t index)
{
	size_t *slot = open_slot((void **)&b->summary, &b->summary_cap, &b->nsummary, at,
				 sizeof(*b->summary));

	if (!slot)
		return -1;
	*slot = index;
	return 0;
}

static void fold(struct blame_chunk *into, const struct blame_chunk *c)
{
	into->count += c->count;
	into->ns += c->ns;
}

/* Adds timeless chunk c to the first of its key (kept in place, so the
 * order of first appearance, which the settled stacks follow, is kept). */
static int add_timeless(struct gil_blame *b, const struct blame_chunk *c)
{
	int found;
	size_t at = summary_find(b, c, &found);

	if (found) {
		fold(&b->v[b->summary[at]], c);
		return 0;
	}
	if (GROW_ARRAY(b->v, b->cap, b->n + 1) || summary_insert(b, at, b->n))
		return -1;
	b->v[b->n++] = *c;
	return 0;
}

/* The recent samples of (pid, tid); add: made when missing (NULL: no memory). */
static struct blame_recent *recent_of(struct gil_blame *b, int pid, int tid, int add)
{
	size_t lo = 0, hi = b->nrecent;
	struct blame_recent *r;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		r = &b->recent[mid];
		if (r->pid == pid && r->tid == tid)
			return r;
		if (r->pid < pid || (r->pid == pid && r->tid < tid))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!add)
		return NULL;
	r = open_slot((void **)&b->recent, &b->recent_cap, &b->nrecent, lo, sizeof(*b->recent));
	if (r)
		*r = (struct blame_recent){ .pid = pid, .tid = tid };
	return r;
}

static int maybe_pass(struct gil_blame *b, uint64_t now);

int gil_blame_note_sample(struct gil_blame *b, int pid, int tid, const struct sample *s,
			  uint32_t stack)
{
	struct blame_recent *r;
	int kind = sample_kind(s);

	if (!kind)
		return 0;
	r = recent_of(b, pid, tid, 1);
	if (!r || GROW_ARRAY(r->v, r->cap, r->n + 1))
		return -1;
	r->v[r->n++] = (struct recent_sample){ .start = s->start_ns, .weight = s->weight_ns,
					       .stack = stack, .kind = kind };
	/* also here: a recording without GIL waits must not keep its samples */
	return maybe_pass(b, s->start_ns);
}

/* Forgets the samples no chunk still to spread can reach: those before the
 * window of a chunk drained GB_LATE_NS ago (a second more for late ones). */
static void prune_recent(struct gil_blame *b, uint64_t now)
{
	uint64_t keep = GB_WINDOW_BEFORE_NS + GB_WINDOW_AFTER_NS + 2 * GB_LATE_NS;
	uint64_t from = now > keep ? now - keep : 0;
	size_t i, j, k;

	for (i = 0; i < b->nrecent; i++) {
		struct blame_recent *r = &b->recent[i];

		for (j = k = 0; j < r->n; j++)
			if (r->v[j].start >= from)
				r->v[k++] = r->v[j];
		r->n = k;
		if (!k) {	/* an ended thread keeps no buffer */
			free(r->v);
			r->v = NULL;
			r->cap = 0;
		}
	}
}

static int spread_cmp(const struct blame_spread *a, int pid, int holder, int waiter, uint32_t stack)
{
	if (a->pid != pid)
		return a->pid < pid ? -1 : 1;
	if (a->holder != holder)
		return a->holder < holder ? -1 : 1;
	if (a->waiter != waiter)
		return a->waiter < waiter ? -1 : 1;
	return (a->stack > stack) - (a->stack < stack);
}

static int add_spread(struct gil_blame *b, const struct blame_chunk *c, uint32_t stack, double ns)
{
	size_t lo = 0, hi = b->nspread;
	struct blame_spread *e;
	int cmp;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		cmp = spread_cmp(&b->spread[mid], c->pid, c->holder, c->waiter, stack);
		if (!cmp) {
			b->spread[mid].ns += ns;
			return 0;
		}
		if (cmp < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	e = open_slot((void **)&b->spread, &b->spread_cap, &b->nspread, lo, sizeof(*b->spread));
	if (!e)
		return -1;
	*e = (struct blame_spread){ .pid = c->pid, .holder = c->holder, .waiter = c->waiter,
				    .stack = stack, .ns = ns };
	return 0;
}

static int in_window(const struct recent_sample *s, int kinds, uint64_t from, uint64_t to)
{
	return (s->kind & kinds) && s->start >= from && s->start < to;
}

/* Spreads chunk c over its holder's samples in its window as place_chunk
 * would at the end, and marks it GB_AT_SPREAD; GB_AT_WHOLE with none. */
static int spread_early(struct gil_blame *b, struct blame_chunk *c)
{
	static const int tiers[] = { IT_GIL, IT_SAMPLES };
	const struct blame_recent *r = recent_of(b, c->pid, c->holder, 0);
	uint64_t from = c->at_ns > GB_WINDOW_BEFORE_NS ? c->at_ns - GB_WINDOW_BEFORE_NS : 0;
	uint64_t to = c->at_ns + GB_WINDOW_AFTER_NS;
	double total;
	size_t i;
	int t, rc = 0;

	for (t = 0; t < 2; t++) {
		for (total = 0, i = 0; r && i < r->n; i++)
			if (in_window(&r->v[i], tiers[t], from, to))
				total += (double)r->v[i].weight;
		if (!(total > 0))
			continue;
		for (i = 0; i < r->n; i++)
			if (in_window(&r->v[i], tiers[t], from, to) &&
			    add_spread(b, c, r->v[i].stack, (double)c->ns * (double)r->v[i].weight / total))
				rc = -1;
		c->at_ns = GB_AT_SPREAD;
		return rc;
	}
	c->at_ns = GB_AT_WHOLE;
	return 0;
}

/* Whether c's holder's samples around it are surely in. */
static int spread_due(const struct blame_chunk *c, uint64_t now)
{
	return c->holder > 0 && !c->gc && c->at_ns < GB_AT_WHOLE &&
	       c->at_ns + GB_WINDOW_AFTER_NS + GB_LATE_NS <= now;
}

/* Spreads the chunks that are due, each into the summary of its key; a
 * new summary takes its first chunk's place, so the order of first
 * appearance (which the settled stacks follow) stays. */
static int spread_pass(struct gil_blame *b, uint64_t now)
{
	size_t i, j = 0, at;
	int found, rc = 0;

	for (i = 0; i < b->n; i++) {
		struct blame_chunk c = b->v[i];

		if (spread_due(&c, now) && spread_early(b, &c))
			rc = -1;	/* what could not be kept is lost, as a record */
		if (is_unnamed(&c) && c.at_ns < GB_AT_WHOLE && c.at_ns + GB_UNNAMED_AGE_NS <= now)
			c.at_ns = GB_AT_WHOLE;
		if (is_summary(&c)) {
			at = summary_find(b, &c, &found);
			if (found && b->summary[at] != i) {
				fold(&b->v[b->summary[at]], &c);
				continue;
			}
			if (found)
				b->summary[at] = j;
			else if (summary_insert(b, at, j))
				rc = -1;
		}
		b->v[j++] = c;
	}
	b->n = j;
	prune_recent(b, now);
	return rc;
}

/* A spreading pass every GB_PASS_NS; none while no sample was told (then
 * everything is spread at the end, as for the unit tests and other users). */
static int maybe_pass(struct gil_blame *b, uint64_t now)
{
	if (!b->nrecent || now < b->pass_ns + GB_PASS_NS)
		return 0;
	b->pass_ns = now;
	return spread_pass(b, now);
}

/* Adds c, merged into an equal one of the same drain. */
static int add_chunk(struct gil_blame *b, const struct blame_chunk *c)
{
	size_t i;

	/* one drain's entries come together: an equal one is among the last */
	for (i = b->n; i > 0 && b->n - i < 16 && b->v[i - 1].at_ns == c->at_ns; i--) {
		struct blame_chunk *o = &b->v[i - 1];

		if (o->pid == c->pid && o->waiter == c->waiter && o->holder == c->holder &&
		    o->gc == c->gc && o->tstate == c->tstate) {
			o->count += c->count;
			o->ns += c->ns;
			return 0;
		}
	}
	if (GROW_ARRAY(b->v, b->cap, b->n + 1))
		return -1;
	b->v[b->n++] = *c;
	return 0;
}

int gil_blame_add(struct gil_blame *b, const struct blame_chunk *in)
{
	const struct blame_chunk *c = in;
	struct blame_chunk folded;
	int kept;

	if (in->holder == GB_UNKNOWN && in->tstate) {
		kept = unnamed_kept(b, in->tstate);
		if (kept < 0)
			return -1;
		if (!kept) {
			folded = *in;
			folded.tstate = 0;
			c = &folded;
			b->folded_count += in->count;
			b->folded_ns += in->ns;
		}
	}
	if (is_timeless(c))
		return add_timeless(b, c);
	if (add_chunk(b, c))
		return -1;
	return maybe_pass(b, c->at_ns);
}

const char *gil_blame_marker(int holder)
{
	if (holder == GB_HANDOFF)
		return "[GIL handed over]";
	return holder == GB_CHANGED ? "[GIL changed hands]" : "[GIL holder unknown]";
}

/* The one thread whose collections overlap [from, to) in pid; 0: none or several. */
static int sole_collector(const struct interval_list *gcs, int pid, uint64_t from, uint64_t to)
{
	int tid = 0;
	size_t i;

	for (i = 0; gcs && i < gcs->n; i++) {
		const struct interval *g = &gcs->v[i];

		if (g->pid != pid || g->end_ns <= from || g->start_ns >= to)
			continue;
		if (tid && g->tid != tid)
			return 0;
		tid = g->tid;
	}
	return tid;
}

void gil_blame_name_collectors(struct gil_blame *b, const struct interval_list *gcs,
			       struct interval_list *waits)
{
	size_t i;
	int tid;

	for (i = 0; waits && i < waits->n; i++) {
		struct interval *w = &waits->v[i];

		if (w->state != STATE_GIL_WAIT_GC || w->holder > 0)
			continue;
		tid = sole_collector(gcs, w->pid, w->start_ns, w->end_ns);
		if (tid && tid != w->tid)
			w->holder = tid;
	}
	for (i = 0; i < b->n; i++) {
		struct blame_chunk *c = &b->v[i];

		if (!c->gc || c->holder > 0)
			continue;
		tid = sole_collector(gcs, c->pid, c->at_ns > GB_WINDOW_BEFORE_NS ?
				     c->at_ns - GB_WINDOW_BEFORE_NS : 0, c->at_ns + GB_WINDOW_AFTER_NS);
		if (tid && tid != c->waiter) {
			c->holder = tid;
			c->tstate = 0;
		}
	}
}

struct item {
	uint64_t start, end;
	const uint32_t *frames;
	uint32_t nframes;
	int gen;		/* IT_GC: its generation */
	int kind;
	uint32_t stack;		/* a sample's stack store id; IT_GC: NO_STACK */
	double w;
};

#define NO_STACK	UINT32_MAX

/* A holder's chunks are spread over its items: its samples, its collections. */
struct holder_work {
	struct profile *p;
	int pid, holder;
	struct item *items;
	size_t nitems, items_cap;
	struct sample *samples;		/* the holder's, decoded (frames: the profile's) */
	struct { int waiter, gc; } *slots;	/* the (waiter, gc) pairs blaming it */
	size_t nslots, slots_cap;
	int merged;			/* one slot per kind for every waiter (too many) */
	double *acc;			/* [item][slot] */
	double *unplaced;		/* [slot]: no item to spread over */
};

static int by_item_start(const void *x, const void *y)
{
	const struct item *a = x, *b = y;

	return a->start < b->start ? -1 : a->start > b->start;
}

static int add_item(struct holder_work *w, const struct item *it)
{
	if (GROW_ARRAY(w->items, w->items_cap, w->nitems + 1))
		return -1;
	w->items[w->nitems++] = *it;
	return 0;
}

/* The holder's samples as items, with their stack ids (read from its log
 * alongside: the early spread names stacks by id). */
static int sample_items(struct holder_work *w, const struct thread_profile *t)
{
	struct sample_log_reader rd;
	struct sample_record rec;
	size_t i;

	w->samples = profile_thread_samples(w->p, t);
	if (!w->samples)
		return -1;
	sample_log_reader_init(&rd, &t->log);
	for (i = 0; i < t->nsamples; i++) {
		const struct sample *s = &w->samples[i];
		struct item it = { .start = s->start_ns, .end = sample_end(s), .frames = s->frames,
				   .nframes = s->nframes, .gen = -1, .w = s->weight_ns,
				   .kind = sample_kind(s), .stack = NO_STACK };

		if (sample_log_read(&rd, &rec))
			it.stack = rec.stack;
		if (it.kind && add_item(w, &it))
			return -1;
	}
	return 0;
}

static int collect_items(struct holder_work *w, const struct interval_list *gcs)
{
	const struct thread_profile *t = profile_find_thread(w->p, w->pid, w->holder);
	size_t i;

	if (t && t->nsamples && sample_items(w, t))
		return -1;
	for (i = 0; gcs && i < gcs->n; i++) {
		const struct interval *g = &gcs->v[i];
		struct item it = { .start = g->start_ns, .end = g->end_ns, .frames = g->frames,
				   .nframes = g->nframes, .gen = g->generation, .kind = IT_GC,
				   .stack = NO_STACK,
				   .w = g->end_ns > g->start_ns ? g->end_ns - g->start_ns : 1 };

		if (g->pid == w->pid && g->tid == w->holder && add_item(w, &it))
			return -1;
	}
	qsort(w->items, w->nitems, sizeof(*w->items), by_item_start);
	return 0;
}

/* The first item starting at or after t (items sorted by start). */
static size_t first_from(const struct holder_work *w, uint64_t t)
{
	size_t lo = 0, hi = w->nitems;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (w->items[mid].start < t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Adds ns over the items of `kinds` in [from, to) (all when whole), in
 * proportion to their weight; 0 if there are none. */
static int spread(struct holder_work *w, size_t slot, double ns, int kinds, uint64_t from,
		  uint64_t to, int whole)
{
	size_t i, lo = whole ? 0 : first_from(w, from), hi = w->nitems;
	double total = 0;

	for (i = lo; i < hi && (whole || w->items[i].start < to); i++)
		if (w->items[i].kind & kinds)
			total += w->items[i].w;
	if (!(total > 0))
		return 0;
	for (i = lo; i < hi && (whole || w->items[i].start < to); i++)
		if (w->items[i].kind & kinds)
			w->acc[i * w->nslots + slot] += ns * w->items[i].w / total;
	return 1;
}

/* A chunk over the items nearest in kind and time: for a plain wait the
 * holder's samples holding the GIL around the chunk's drain, else any of
 * its samples there, else the same over the whole recording; behind a
 * collection its collections first, then its samples inside one. */
static void place_chunk(struct holder_work *w, const struct blame_chunk *c, size_t slot)
{
	static const int plain[] = { IT_GIL, IT_SAMPLES };
	static const int gc[] = { IT_GC, IT_GC_SAMPLE, IT_GIL, IT_SAMPLES };
	const int *tiers = c->gc ? gc : plain;
	int ntiers = c->gc ? 4 : 2, whole, i;
	uint64_t from = c->at_ns > GB_WINDOW_BEFORE_NS ? c->at_ns - GB_WINDOW_BEFORE_NS : 0;
	uint64_t to = c->at_ns + GB_WINDOW_AFTER_NS;

	if (c->at_ns == GB_AT_SPREAD)
		return;		/* place_spread() */
	for (whole = c->at_ns == GB_AT_WHOLE; whole < 2; whole++)
		for (i = 0; i < ntiers; i++)
			if (spread(w, slot, (double)c->ns, tiers[i], from, to, whole))
				return;
	w->unplaced[slot] += (double)c->ns;
}

/* The slot of (waiter, gc); (size_t)-1: none. */
static size_t slot_find(const struct holder_work *w, int waiter, int gc)
{
	size_t i;

	if (w->merged)
		waiter = 0;
	for (i = 0; i < w->nslots; i++)
		if (w->slots[i].waiter == waiter && w->slots[i].gc == gc)
			return i;
	return (size_t)-1;
}

static size_t slot_of(struct holder_work *w, int waiter, int gc)
{
	size_t i = slot_find(w, waiter, gc);

	if (i != (size_t)-1)
		return i;
	if (GROW_ARRAY(w->slots, w->slots_cap, w->nslots + 1))
		return (size_t)-1;
	w->slots[w->nslots].waiter = w->merged ? 0 : waiter;
	w->slots[w->nslots].gc = gc;
	return w->nslots++;
}

static int add_stack(struct gil_blame *b, const struct blame_stack *bs, const uint32_t *head,
		     uint32_t nhead, const uint32_t *body, uint32_t nbody, const uint32_t *tail,
		     uint32_t ntail)
{
	struct blame_stack *out;
	uint32_t *frames = malloc((nhead + nbody + ntail) * sizeof(*frames) + 1);

	if (!frames || GROW_ARRAY(b->stacks, b->stacks_cap, b->nstacks + 1)) {
		free(frames);
		return -1;
	}
	memcpy(frames, head, nhead * sizeof(*frames));
	if (nbody)
		memcpy(frames + nhead, body, nbody * sizeof(*frames));
	if (ntail)
		memcpy(frames + nhead + nbody, tail, ntail * sizeof(*frames));
	out = &b->stacks[b->nstacks++];
	*out = *bs;
	out->frames = frames;
	out->nframes = nhead + nbody + ntail;
	return 0;
}

static int item_cmp(const void *x, const void *y, void *arg)
{
	const struct item *items = arg, *a = &items[*(const size_t *)x], *b = &items[*(const size_t *)y];
	int c = profile_stack_cmp(a->frames, a->nframes, b->frames, b->nframes);

	if (c)
		return c;
	if ((a->kind == IT_GC) != (b->kind == IT_GC))
		return a->kind == IT_GC ? 1 : -1;
	return a->kind == IT_GC ? (a->gen > b->gen) - (a->gen < b->gen) : 0;
}

/* The accumulated shares as stacks: one per distinct stack and slot. */
static int emit_holder(struct gil_blame *b, struct holder_work *w)
{
	const char *name = profile_thread_name(w->p, w->pid, w->holder);
	char root_name[320], gen_name[32];
	uint32_t root, tail[1], nosamples;
	size_t *order = malloc((w->nitems + 1) * sizeof(*order)), i, j, k, s;
	int rc = 0;

	if (!order)
		return -1;
	snprintf(root_name, sizeof(root_name), "Thread %d \"%s\"", w->holder, name ? name : "?");
	root = profile_frame(w->p, root_name, NULL, 0, FRAME_MARKER);
	for (i = 0; i < w->nitems; i++)
		order[i] = i;
	qsort_r(order, w->nitems, sizeof(*order), item_cmp, w->items);
	for (i = 0; i < w->nitems && !rc; i = j) {
		const struct item *it = &w->items[order[i]];

		for (j = i + 1; j < w->nitems && !item_cmp(&order[i], &order[j], w->items); j++)
			;
		if (it->kind == IT_GC) {
			state_gc_marker(it->gen, gen_name, sizeof(gen_name));
			tail[0] = profile_frame(w->p, gen_name, NULL, 0, FRAME_MARKER);
		}
		for (s = 0; s < w->nslots && !rc; s++) {
			struct blame_stack bs = { .pid = w->pid, .holder = w->holder,
						  .waiter = w->slots[s].waiter, .gc = w->slots[s].gc };

			for (k = i; k < j; k++)
				bs.ns += w->acc[order[k] * w->nslots + s];
			if (bs.ns > 0)
				rc = add_stack(b, &bs, &root, 1, it->frames, it->nframes, tail,
					       it->kind == IT_GC);
		}
	}
	nosamples = profile_frame(w->p, "[no samples]", NULL, 0, FRAME_MARKER);
	for (s = 0; s < w->nslots && !rc; s++) {
		struct blame_stack bs = { .pid = w->pid, .holder = w->holder, .ns = w->unplaced[s],
					  .waiter = w->slots[s].waiter, .gc = w->slots[s].gc };

		if (bs.ns > 0)
			rc = add_stack(b, &bs, &root, 1, NULL, 0, &nosamples, 1);
	}
	free(order);
	return rc;
}

static uint64_t overlap(const struct item *it, uint64_t from, uint64_t to)
{
	uint64_t lo = it->start > from ? it->start : from, hi = it->end < to ? it->end : to;

	return hi > lo ? hi - lo : 0;
}

/* How far it is from [from, to): 0 when it overlaps. */
static uint64_t distance(const struct item *it, uint64_t from, uint64_t to)
{
	if (it->end <= from)
		return from - it->end + 1;
	return it->start >= to ? it->start - to + 1 : 0;
}

/* The holder's stack during wait iv: its item overlapping the wait most (a
 * collection first for waiting-for-GC), else the nearest within a second. */
static void wait_holder_stack(const struct holder_work *w, struct interval *iv)
{
	uint64_t from = iv->start_ns > 1000000000 ? iv->start_ns - 1000000000 : 0;
	uint64_t until = iv->end_ns + 1000000000, score, best_score = 0, dist, best_dist = 0;
	const struct item *best = NULL;
	size_t i;
	int pass, kinds;

	for (pass = iv->state == STATE_GIL_WAIT_GC ? 0 : 1; pass < 2 && !best; pass++) {
		kinds = pass ? IT_SAMPLES : IT_GC;
		/* items start in order; one may reach from up to a second before */
		for (i = first_from(w, from); i < w->nitems && w->items[i].start < until; i++) {
			const struct item *it = &w->items[i];

			if (!(it->kind & kinds) || !it->nframes)
				continue;
			score = overlap(it, iv->start_ns, iv->end_ns);
			dist = distance(it, iv->start_ns, iv->end_ns);
			if (!best || score > best_score || (!score && !best_score && dist < best_dist)) {
				best = it;
				best_score = score;
				best_dist = dist;
			}
		}
		if (!pass && best && !best_score)
			best = NULL;	/* no collection during the wait: its samples */
	}
	if (!best)
		return;
	iv->holder_frames = malloc(best->nframes * sizeof(*iv->holder_frames));
	if (!iv->holder_frames)
		return;
	memcpy(iv->holder_frames, best->frames, best->nframes * sizeof(*iv->holder_frames));
	iv->holder_nframes = best->nframes;
}

/* The holder's early-spread amounts, each on an item of its stack (the
 * stacks are then summed over items alike). */
static int place_spread(const struct gil_blame *b, struct holder_work *w)
{
	uint32_t top = 0;
	size_t i, slot, *item_of;

	for (i = 0; i < b->nspread; i++)
		if (b->spread[i].pid == w->pid && b->spread[i].holder == w->holder &&
		    b->spread[i].stack > top)
			top = b->spread[i].stack;
	item_of = malloc(((size_t)top + 1) * sizeof(*item_of));
	if (!item_of)
		return -1;
	for (i = 0; i <= top; i++)
		item_of[i] = (size_t)-1;
	for (i = w->nitems; i > 0; i--)
		if (w->items[i - 1].stack <= top)
			item_of[w->items[i - 1].stack] = i - 1;
	for (i = 0; i < b->nspread; i++) {
		const struct blame_spread *e = &b->spread[i];

		if (e->pid != w->pid || e->holder != w->holder)
			continue;
		/* its summary chunk made the slot */
		slot = slot_find(w, e->waiter, 0);
		if (slot == (size_t)-1)
			continue;
		if (item_of[e->stack] != (size_t)-1)
			w->acc[item_of[e->stack] * w->nslots + slot] += e->ns;
		else
			w->unplaced[slot] += e->ns;
	}
	free(item_of);
	return 0;
}

static int settle_holder(struct gil_blame *b, struct holder_work *w, const struct interval_list *gcs,
			 struct interval_list *waits)
{
	size_t i, slot;

	if (collect_items(w, gcs))
		return -1;
	for (i = 0; i < b->n; i++)
		if (b->v[i].pid == w->pid && b->v[i].holder == w->holder &&
		    slot_of(w, b->v[i].waiter, b->v[i].gc) == (size_t)-1)
			return -1;
	/* a holder many threads waited behind, over a long recording: its
	 * stacks for all of them at once (waiter 0), in bounded memory */
	if (w->nslots > 2 && w->nitems * w->nslots > GB_MAX_CELLS) {
		w->merged = 1;
		w->nslots = 0;
		if (slot_of(w, 0, 0) == (size_t)-1 || slot_of(w, 0, 1) == (size_t)-1)
			return -1;
	}
	w->acc = calloc(w->nitems * w->nslots + 1, sizeof(*w->acc));
	w->unplaced = calloc(w->nslots + 1, sizeof(*w->unplaced));
	if (!w->acc || !w->unplaced)
		return -1;
	for (i = 0; i < b->n; i++) {
		if (b->v[i].pid != w->pid || b->v[i].holder != w->holder)
			continue;
		slot = slot_of(w, b->v[i].waiter, b->v[i].gc);
		place_chunk(w, &b->v[i], slot);
	}
	if (b->nspread && place_spread(b, w))
		return -1;
	for (i = 0; waits && i < waits->n; i++)
		if (waits->v[i].pid == w->pid && waits->v[i].holder == w->holder &&
		    !waits->v[i].holder_frames)
			wait_holder_stack(w, &waits->v[i]);
	return emit_holder(b, w);
}

/* Unattributed time: one marker stack per waiter and kind. */
static int settle_unattributed(struct gil_blame *b, struct profile *p, const struct blame_chunk *c)
{
	struct blame_stack bs = { .pid = c->pid, .waiter = c->waiter, .holder = c->holder,
				  .gc = c->gc, .ns = (double)c->ns };
	uint32_t marker;
	size_t i;

	for (i = 0; i < b->nstacks; i++) {
		struct blame_stack *o = &b->stacks[i];

		if (o->holder == c->holder && o->pid == c->pid && o->waiter == c->waiter &&
		    o->gc == c->gc) {
			o->ns += (double)c->ns;
			return 0;
		}
	}
	marker = profile_frame(p, gil_blame_marker(c->holder), NULL, 0, FRAME_MARKER);
	return add_stack(b, &bs, &marker, 1, NULL, 0, NULL, 0);
}

/* Whether (pid, holder) is among done[0..n), else adds it; -1: no memory. */
static int holder_done(struct blame_chunk **done, size_t *n, size_t *cap, const struct blame_chunk *c)
{
	size_t i;

	for (i = 0; i < *n; i++)
		if ((*done)[i].pid == c->pid && (*done)[i].holder == c->holder)
			return 1;
	if (grow_array((void **)done, cap, *n + 1, sizeof(**done)))
		return -1;
	(*done)[(*n)++] = *c;
	return 0;
}

int gil_blame_settle(struct gil_blame *b, struct profile *p, const struct interval_list *gcs,
		     struct interval_list *waits)
{
	struct blame_chunk *done = NULL;
	size_t i, ndone = 0, done_cap = 0;
	int rc = 0, seen;

	free_stacks(b);
	/* unattributed time first: its few marker stacks are found among few */
	for (i = 0; i < b->n && !rc; i++)
		if (b->v[i].holder <= 0 && b->v[i].holder != GB_HANDOFF)
			rc = settle_unattributed(b, p, &b->v[i]);
	for (i = 0; i < b->n && !rc; i++) {
		const struct blame_chunk *c = &b->v[i];
		struct holder_work w = { .p = p, .pid = c->pid, .holder = c->holder };

		if (c->holder <= 0)
			continue;	/* above; a hand-over: no thread held the GIL */
		seen = holder_done(&done, &ndone, &done_cap, c);
		if (seen) {
			rc = seen < 0 ? -1 : 0;
			continue;
		}
		rc = settle_holder(b, &w, gcs, waits);
		free(w.items);
		free(w.samples);
		free(w.slots);
		free(w.acc);
		free(w.unplaced);
	}
	free(done);
	return rc;
}

static int by_share(const void *x, const void *y)
{
	const struct blame_share *a = x, *b = y;

	if ((a->holder > 0) != (b->holder > 0))
		return a->holder > 0 ? -1 : 1;
	return a->ns > b->ns ? -1 : a->ns < b->ns;
}

struct leaf {
	uint32_t frame;
	double ns;
};

static int by_leaf(const void *x, const void *y)
{
	const struct leaf *a = x, *b = y;

	return (a->frame > b->frame) - (a->frame < b->frame);
}

/* The innermost Python frame of a stack (under [GC gen N]: the code that
 * triggered the collection); 0 with none. */
static int python_leaf(const struct profile *p, const struct blame_stack *s, uint32_t *frame)
{
	uint32_t i;

	for (i = s->nframes; i > 0; i--) {
		if (s->frames[i - 1] < p->nframes && p->frames[s->frames[i - 1]].kind == FRAME_PYTHON) {
			*frame = s->frames[i - 1];
			return 1;
		}
	}
	return 0;
}

/* The heaviest innermost Python frame of the holder's stacks for the waiter. */
static void top_frame(const struct gil_blame *b, const struct profile *p, struct blame_share *sh,
		      int pid, int waiter, int gc)
{
	struct leaf *v = NULL;
	size_t i, j, n = 0, cap = 0;
	double sum;

	for (i = 0; i < b->nstacks; i++) {
		const struct blame_stack *s = &b->stacks[i];
		uint32_t frame;

		/* waiter 0: every waiter's (a holder with too many, see settle_holder) */
		if (s->pid != pid || (s->waiter != waiter && s->waiter) || s->holder != sh->holder ||
		    s->gc != gc || !python_leaf(p, s, &frame))
			continue;
		if (GROW_ARRAY(v, cap, n + 1))
			break;
		v[n].frame = frame;
		v[n++].ns = s->ns;
	}
	if (n)
		qsort(v, n, sizeof(*v), by_leaf);
	for (i = 0; i < n; i = j) {
		for (sum = 0, j = i; j < n && v[j].frame == v[i].frame; j++)
			sum += v[j].ns;
		if (sum > sh->top_ns) {
			sh->top_ns = sum;
			sh->top_frame = v[i].frame;
		}
	}
	free(v);
}

size_t gil_blame_of(const struct gil_blame *b, const struct profile *p, int pid, int waiter,
		    int gc, struct blame_share **out)
{
	struct blame_share *v = NULL;
	size_t i, j, n = 0, cap = 0;

	*out = NULL;
	for (i = 0; i < b->n; i++) {
		const struct blame_chunk *c = &b->v[i];

		if (c->pid != pid || c->waiter != waiter || c->gc != gc || !c->ns)
			continue;
		for (j = 0; j < n && v[j].holder != c->holder; j++)
			;
		if (j == n) {
			if (GROW_ARRAY(v, cap, n + 1))
				break;
			memset(&v[n++], 0, sizeof(*v));
			v[j].holder = c->holder;
		}
		v[j].ns += c->ns;
	}
	for (i = 0; p && i < n; i++)
		if (v[i].holder > 0)
			top_frame(b, p, &v[i], pid, waiter, gc);
	if (n)
		qsort(v, n, sizeof(*v), by_share);
	*out = v;
	return n;
}
