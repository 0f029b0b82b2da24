// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <stdlib.h>
#include <string.h>
#include "hash.h"
#include "stack_table.h"

void stack_table_free(struct stack_table *t)
{
	size_t i;

	for (i = 0; i < t->cap; i++)
		free(t->slots[i].frames);
	free(t->slots);
	memset(t, 0, sizeof(*t));
}

static size_t home_of(const struct stack_table *t, int pid, uint64_t id)
{
	return hash_first_slot(fnv1a(fnv1a(FNV1A_BASIS, &pid, sizeof(pid)), &id, sizeof(id)),
			       t->cap);
}

static size_t slot_of(const struct stack_table *t, int pid, uint64_t id)
{
	size_t i = home_of(t, pid, id);

	while (t->slots[i].id && (t->slots[i].id != id || t->slots[i].pid != pid))
		i = hash_next_slot(i, t->cap);
	return i;
}

const struct stack_entry *stack_table_get(const struct stack_table *t, int pid, uint64_t id)
{
	const struct stack_entry *e;

	if (!t->cap || !id)
		return NULL;
	e = &t->slots[slot_of(t, pid, id)];
	return e->id ? e : NULL;
}

static int grow(struct stack_table *t)
{
	struct stack_table bigger = { .cap = t->cap ? t->cap * 2 : 256 };
	size_t i;

	bigger.slots = calloc(bigger.cap, sizeof(*bigger.slots));
	if (!bigger.slots)
		return -1;
	for (i = 0; i < t->cap; i++)
		if (t->slots[i].id)
			bigger.slots[slot_of(&bigger, t->slots[i].pid, t->slots[i].id)] = t->slots[i];
	bigger.n = t->n;
	free(t->slots);
	*t = bigger;
	return 0;
}

int stack_table_put(struct stack_table *t, int pid, uint64_t id, const uint32_t *frames,
		    uint32_t nframes)
{
	struct stack_entry *e;
	uint32_t *copy;

	if (!id)
		return -1;
	if ((t->n + 1) * 4 > t->cap * 3 && grow(t))
		return -1;
	copy = malloc((nframes ? nframes : 1) * sizeof(*copy));
	if (!copy)
		return -1;
	memcpy(copy, frames, nframes * sizeof(*copy));
	e = &t->slots[slot_of(t, pid, id)];
	if (e->id)
		free(e->frames);
	else
		t->n++;
	*e = (struct stack_entry){ .pid = pid, .id = id, .frames = copy, .nframes = nframes };
	return 0;
}

/* x in (from, to], going round the table. */
static int cyclic_between(size_t from, size_t x, size_t to)
{
	return from <= to ? from < x && x <= to : from < x || x <= to;
}

void stack_table_delete(struct stack_table *t, int pid, uint64_t id)
{
	size_t i, j;

	if (!t->cap || !id)
		return;
	i = slot_of(t, pid, id);
	if (!t->slots[i].id)
		return;
	free(t->slots[i].frames);
	t->n--;
	/* linear probing without tombstones: the entries after the hole that
	 * would no longer be found move back into it */
	for (j = hash_next_slot(i, t->cap); t->slots[j].id; j = hash_next_slot(j, t->cap)) {
		if (cyclic_between(i, home_of(t, t->slots[j].pid, t->slots[j].id), j))
			continue;
		t->slots[i] = t->slots[j];
		i = j;
	}
	memset(&t->slots[i], 0, sizeof(t->slots[i]));
}

void stack_table_drop_pid(struct stack_table *t, int pid)
{
	struct stack_table kept = { .cap = t->cap };
	size_t i;

	if (!t->cap)
		return;
	kept.slots = calloc(kept.cap, sizeof(*kept.slots));
	if (!kept.slots)
		return;
	for (i = 0; i < t->cap; i++) {
		if (!t->slots[i].id)
			continue;
		if (t->slots[i].pid == pid) {
			free(t->slots[i].frames);
			continue;
		}
		kept.slots[slot_of(&kept, t->slots[i].pid, t->slots[i].id)] = t->slots[i];
		kept.n++;
	}
	free(t->slots);
	*t = kept;
}
