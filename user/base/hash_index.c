// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Linear probing over a power-of-two array of slots. A key's slot is the
 * top bits of its tag, the tag the hash multiplied by 2^64 / phi (its high
 * half): every bit of the 64-bit hash moves the tag, and the slot of a tag
 * is known without the key, for growing and for removing.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "hash_index.h"

static uint32_t tag_of(uint64_t h)
{
	return (uint32_t)((h * 0x9e3779b97f4a7c15ull) >> 32);
}

/* The top log2(nslots) bits of tag: nslots is a power of two, 2^6..2^31. */
static size_t home_slot(uint32_t tag, size_t nslots)
{
	return tag >> (32 - __builtin_ctzll(nslots));
}

static size_t next_slot(size_t i, size_t nslots)
{
	return (i + 1) & (nslots - 1);
}

size_t hash_index_first(const struct hash_index *ix, uint64_t h, struct hash_probe *p)
{
	p->ix = ix;
	p->tag = tag_of(h);
	p->slot = 0;
	if (!ix->nslots)
		return HASH_INDEX_NONE;
	p->slot = home_slot(p->tag, ix->nslots);
	for (; ix->slots[p->slot].ref; p->slot = next_slot(p->slot, ix->nslots))
		if (ix->slots[p->slot].tag == p->tag)
			return ix->slots[p->slot].ref - 1;
	return HASH_INDEX_NONE;
}

size_t hash_index_next(struct hash_probe *p)
{
	const struct hash_index *ix = p->ix;

	if (!ix->nslots || !ix->slots[p->slot].ref)
		return HASH_INDEX_NONE;
	for (p->slot = next_slot(p->slot, ix->nslots); ix->slots[p->slot].ref;
	     p->slot = next_slot(p->slot, ix->nslots))
		if (ix->slots[p->slot].tag == p->tag)
			return ix->slots[p->slot].ref - 1;
	return HASH_INDEX_NONE;
}

/* Puts (ref, tag) in the first empty slot of its run: the index has room. */
static void place(struct hash_index_slot *slots, size_t nslots, uint32_t ref, uint32_t tag)
{
	size_t i = home_slot(tag, nslots);

	while (slots[i].ref)
		i = next_slot(i, nslots);
	slots[i] = (struct hash_index_slot){ .ref = ref, .tag = tag };
}

static size_t entry_cap(const struct hash_index *ix)
{
	return ix->max_entries && ix->max_entries < HASH_INDEX_MAX_ENTRIES ?
	       ix->max_entries : HASH_INDEX_MAX_ENTRIES;
}

int hash_index_reserve(struct hash_index *ix, size_t need)
{
	size_t nslots = ix->nslots ? ix->nslots : HASH_INDEX_MIN_SLOTS, i;
	struct hash_index_slot *slots;

	if (need > entry_cap(ix)) {
		errno = E2BIG;
		return -1;
	}
	while (need > nslots / 2)
		nslots *= 2;	/* need <= 2^30, so nslots <= 2^31 */
	if (nslots == ix->nslots)
		return 0;
	slots = calloc(nslots, sizeof(*slots));
	if (!slots)
		return -1;	/* calloc set ENOMEM; the old slots stay */
	for (i = 0; i < ix->nslots; i++)
		if (ix->slots[i].ref)
			place(slots, nslots, ix->slots[i].ref, ix->slots[i].tag);
	free(ix->slots);
	ix->slots = slots;
	ix->nslots = nslots;
	return 0;
}

int hash_index_add(struct hash_index *ix, uint64_t h, size_t entry)
{
	if (entry >= UINT32_MAX) {	/* its ref, entry + 1, is 32 bits */
		errno = EINVAL;
		return -1;
	}
	if (hash_index_reserve(ix, ix->n + 1))
		return -1;
	place(ix->slots, ix->nslots, (uint32_t)entry + 1, tag_of(h));
	ix->n++;
	return 0;
}

/* The slot of entry, indexed under h, in p; 0, or -1 if not there. */
static int slot_of_entry(const struct hash_index *ix, uint64_t h, size_t entry,
			 struct hash_probe *p)
{
	size_t e;

	for (e = hash_index_first(ix, h, p); e != HASH_INDEX_NONE && e != entry;
	     e = hash_index_next(p))
		;
	return e == HASH_INDEX_NONE ? -1 : 0;
}

int hash_index_move(struct hash_index *ix, uint64_t h, size_t from, size_t to)
{
	struct hash_probe p;

	if (to >= UINT32_MAX || slot_of_entry(ix, h, from, &p))
		return -1;
	ix->slots[p.slot].ref = (uint32_t)to + 1;
	return 0;
}

/* 1 if slot `at` lies cyclically in (gap, home]: its entry may not move back to gap. */
static int stays(size_t gap, size_t home, size_t at)
{
	if (gap <= at)
		return gap < home && home <= at;
	return gap < home || home <= at;
}

int hash_index_remove(struct hash_index *ix, uint64_t h, size_t entry)
{
	struct hash_probe p;
	size_t gap, i;

	if (slot_of_entry(ix, h, entry, &p))
		return -1;
	/* backward shift: each entry after the gap in its run moves into the
	 * gap unless its home slot lies after the gap (it would be unreachable) */
	gap = p.slot;
	for (i = next_slot(gap, ix->nslots); ix->slots[i].ref; i = next_slot(i, ix->nslots)) {
		if (stays(gap, home_slot(ix->slots[i].tag, ix->nslots), i))
			continue;
		ix->slots[gap] = ix->slots[i];
		gap = i;
	}
	ix->slots[gap] = (struct hash_index_slot){ 0 };
	ix->n--;
	return 0;
}

void hash_index_clear(struct hash_index *ix)
{
	if (ix->slots)
		memset(ix->slots, 0, ix->nslots * sizeof(*ix->slots));
	ix->n = 0;
}

void hash_index_free(struct hash_index *ix)
{
	free(ix->slots);
	ix->slots = NULL;
	ix->nslots = ix->n = 0;
}
