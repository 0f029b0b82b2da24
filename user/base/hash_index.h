/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The one open-addressing hash table of userspace: an index of entries the
 * caller keeps in its own array (in the order it added them, which is the
 * order its output iterates), found by a key's 64-bit hash (hash.h). The
 * index holds, per slot, an entry number + 1 (0 is empty) and 32 bits of
 * the hash, so growing and removing never call back into the caller; the
 * caller compares keys itself, for the candidates whose 32 bits match:
 *
 *	for (e = hash_index_first(ix, h, &p); e != HASH_INDEX_NONE; e = hash_index_next(&p))
 *		if (same_key(&v[e], key))
 *			return e;
 *	... append v[n], then hash_index_add(ix, h, n) ...
 *
 * Keys come from the target, so they are hostile: the index is at most half
 * full (a probe for an absent key always ends), it grows by doubling up to
 * max_entries (0: HASH_INDEX_MAX_ENTRIES), a failed growth is reported
 * (ENOMEM, E2BIG at the cap) and leaves the index as it was. Keys that share
 * a hash all probe the same run of slots: slower, never wrong.
 */
#ifndef EP_HASH_INDEX_H
#define EP_HASH_INDEX_H
#include <stddef.h>
#include <stdint.h>

/* At most 2^30 entries (so at most 2^31 slots), each numbered below
 * UINT32_MAX: a slot holds the number + 1 in 32 bits. */
#define HASH_INDEX_MAX_ENTRIES	((size_t)1 << 30)
#define HASH_INDEX_MIN_SLOTS	64
#define HASH_INDEX_NONE		((size_t)-1)

struct hash_index_slot {
	uint32_t ref;		/* entry number + 1, 0 empty */
	uint32_t tag;		/* the key's hash folded to 32 bits: picks its slot */
};

struct hash_index {
	struct hash_index_slot *slots;	/* NULL until the first add */
	size_t nslots;			/* 0 or a power of two */
	size_t n;			/* entries indexed */
	size_t max_entries;		/* 0: HASH_INDEX_MAX_ENTRIES */
};

/* Where a look-up is: filled by hash_index_first, read by hash_index_next. */
struct hash_probe {
	const struct hash_index *ix;
	size_t slot;
	uint32_t tag;
};

/* The first entry whose hash may be h, or HASH_INDEX_NONE. */
size_t hash_index_first(const struct hash_index *ix, uint64_t h, struct hash_probe *p);

/* The next such entry after the one p is at, or HASH_INDEX_NONE. */
size_t hash_index_next(struct hash_probe *p);

/*
 * Indexes entry (the caller's, not in the index yet) under hash h, growing
 * the slots first if that would fill more than half of them. 0; or -1 with
 * errno ENOMEM (out of memory), E2BIG (max_entries reached) or EINVAL (an
 * entry number of UINT32_MAX or more), the index unchanged. After
 * hash_index_reserve made room, it fails only on the last.
 */
int hash_index_add(struct hash_index *ix, uint64_t h, size_t entry);

/* Makes room for `need` entries at most, so adds up to that never grow: for
 * a caller that must not fail half-way. 0, or -1 and errno as above. */
int hash_index_reserve(struct hash_index *ix, size_t need);

/* Takes entry, indexed under h, out of the index (entries that probed past
 * it are moved back: no tombstones). 0, or -1 if it was not there. */
int hash_index_remove(struct hash_index *ix, uint64_t h, size_t entry);

/* Entry `from`, indexed under h, is now numbered `to` (the caller moved it
 * in its array, e.g. its last entry into a removed one's place). 0, or -1
 * if from was not there or to is UINT32_MAX or more. */
int hash_index_move(struct hash_index *ix, uint64_t h, size_t from, size_t to);

/* Empties the index, keeping its slots: to index the entries again after
 * the caller renumbered them (dropped some, compacted its array). */
void hash_index_clear(struct hash_index *ix);

/* Frees the slots; the index is empty and may be used again. */
void hash_index_free(struct hash_index *ix);

#endif
