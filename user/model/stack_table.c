// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <stdlib.h>
#include <string.h>
#include "grow.h"
#include "hash.h"
#include "hash_index.h"
#include "stack_table.h"

void stack_table_free(struct stack_table *t)
{
	size_t i;

	for (i = 0; i < t->n; i++)
		free(t->v[i].frames);
	free(t->v);
	hash_index_free(&t->index);
	memset(t, 0, sizeof(*t));
}

static uint64_t key_hash(int pid, uint64_t id)
{
	return fnv1a(fnv1a(FNV1A_BASIS, &pid, sizeof(pid)), &id, sizeof(id));
}

/* The entry of (pid, id) in t->v, or HASH_INDEX_NONE. */
static size_t entry_of(const struct stack_table *t, int pid, uint64_t id, uint64_t h)
{
	struct hash_probe p;
	size_t e;

	for (e = hash_index_first(&t->index, h, &p); e != HASH_INDEX_NONE; e = hash_index_next(&p))
		if (t->v[e].id == id && t->v[e].pid == pid)
			break;
	return e;
}

const struct stack_entry *stack_table_get(const struct stack_table *t, int pid, uint64_t id)
{
	size_t e;

	if (!id)
		return NULL;
	e = entry_of(t, pid, id, key_hash(pid, id));
	return e != HASH_INDEX_NONE ? &t->v[e] : NULL;
}

int stack_table_put(struct stack_table *t, int pid, uint64_t id, const uint32_t *frames,
		    uint32_t nframes)
{
	uint64_t h = key_hash(pid, id);
	uint32_t *copy;
	size_t e;

	if (!id)
		return -1;
	e = entry_of(t, pid, id, h);
	if (e == HASH_INDEX_NONE &&
	    (GROW_ARRAY(t->v, t->cap, t->n + 1) || hash_index_reserve(&t->index, t->n + 1)))
		return -1;
	copy = malloc((nframes ? nframes : 1) * sizeof(*copy));
	if (!copy)
		return -1;
	memcpy(copy, frames, nframes * sizeof(*copy));
	if (e != HASH_INDEX_NONE) {
		free(t->v[e].frames);
	} else {
		e = t->n++;
		hash_index_add(&t->index, h, e);	/* reserved */
	}
	t->v[e] = (struct stack_entry){ .pid = pid, .id = id, .frames = copy, .nframes = nframes };
	return 0;
}

void stack_table_delete(struct stack_table *t, int pid, uint64_t id)
{
	uint64_t h = key_hash(pid, id);
	size_t e, last;

	if (!id)
		return;
	e = entry_of(t, pid, id, h);
	if (e == HASH_INDEX_NONE)
		return;
	free(t->v[e].frames);
	hash_index_remove(&t->index, h, e);
	/* the last entry fills the hole: the array stays dense */
	last = --t->n;
	if (e != last) {
		t->v[e] = t->v[last];
		hash_index_move(&t->index, key_hash(t->v[e].pid, t->v[e].id), last, e);
	}
}

void stack_table_drop_pid(struct stack_table *t, int pid)
{
	size_t i, kept = 0;

	for (i = 0; i < t->n; i++) {
		if (t->v[i].pid == pid)
			free(t->v[i].frames);
		else
			t->v[kept++] = t->v[i];
	}
	t->n = kept;
	/* the index has room for more than these: adding cannot fail */
	hash_index_clear(&t->index);
	for (i = 0; i < t->n; i++)
		hash_index_add(&t->index, key_hash(t->v[i].pid, t->v[i].id), i);
}
