// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* hash_index: the one open-addressing table, with keys in the caller's array. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <cmocka.h>
#include "hash.h"
#include "hash_index.h"

/* The caller's side: keys in an array, each with the hash it is indexed by. */
struct keys {
	uint64_t *key, *hash;
	size_t n;
};

static size_t find(const struct hash_index *ix, const struct keys *k, uint64_t key, uint64_t h)
{
	struct hash_probe p;
	size_t e;

	for (e = hash_index_first(ix, h, &p); e != HASH_INDEX_NONE; e = hash_index_next(&p))
		if (k->key[e] == key)
			return e;
	return HASH_INDEX_NONE;
}

static struct keys keys_new(size_t n)
{
	struct keys k = { calloc(n, sizeof(uint64_t)), calloc(n, sizeof(uint64_t)), 0 };

	assert_non_null(k.key);
	assert_non_null(k.hash);
	return k;
}

static void keys_free(struct keys *k)
{
	free(k->key);
	free(k->hash);
}

/* Adds key with hash h unless it is there; its entry number. */
static size_t find_or_add(struct hash_index *ix, struct keys *k, uint64_t key, uint64_t h)
{
	size_t e = find(ix, k, key, h);

	if (e != HASH_INDEX_NONE)
		return e;
	k->key[k->n] = key;
	k->hash[k->n] = h;
	assert_int_equal(hash_index_add(ix, h, k->n), 0);
	return k->n++;
}

static void empty_index_finds_nothing(void **state)
{
	struct hash_index ix = { 0 };
	struct hash_probe p;

	(void)state;
	assert_int_equal(hash_index_first(&ix, hash_u64(1), &p), HASH_INDEX_NONE);
	assert_int_equal(hash_index_next(&p), HASH_INDEX_NONE);
	assert_int_equal(hash_index_remove(&ix, hash_u64(1), 0), -1);
	hash_index_clear(&ix);
	hash_index_free(&ix);
}

/* 100,000 keys: the index doubles many times, stays at most half full, and
 * every key keeps its entry number. */
static void grows_and_keeps_every_entry(void **state)
{
	struct hash_index ix = { 0 };
	struct keys k = keys_new(100000);
	size_t i;

	(void)state;
	for (i = 0; i < 100000; i++) {
		assert_int_equal(find_or_add(&ix, &k, i * 7919, hash_u64(i * 7919)), i);
		assert_true(ix.n * 2 <= ix.nslots);
	}
	assert_int_equal(ix.n, 100000);
	assert_int_equal(ix.nslots, 262144);
	for (i = 0; i < 100000; i++) {
		assert_int_equal(find_or_add(&ix, &k, i * 7919, hash_u64(i * 7919)), i);
		assert_int_equal(find(&ix, &k, i * 7919 + 1, hash_u64(i * 7919 + 1)),
				 HASH_INDEX_NONE);
	}
	assert_int_equal(k.n, 100000);
	hash_index_free(&ix);
	keys_free(&k);
}

/* Hashes equal in the bits that pick a slot but not in the rest, and keys
 * that differ with one hash: the caller's compare tells them apart. */
static void collisions_are_told_apart(void **state)
{
	struct hash_index ix = { 0 };
	struct keys k = keys_new(64);
	size_t i;

	(void)state;
	for (i = 0; i < 16; i++)	/* one hash, 16 keys */
		assert_int_equal(find_or_add(&ix, &k, 1000 + i, 42), i);
	for (i = 0; i < 16; i++)	/* the low bits one, the high ones not */
		assert_int_equal(find_or_add(&ix, &k, 2000 + i, (uint64_t)i << 40), 16 + i);
	for (i = 0; i < 16; i++) {
		assert_int_equal(find(&ix, &k, 1000 + i, 42), i);
		assert_int_equal(find(&ix, &k, 2000 + i, (uint64_t)i << 40), 16 + i);
		assert_int_equal(find(&ix, &k, 1000 + i, 43), HASH_INDEX_NONE);
	}
	hash_index_free(&ix);
	keys_free(&k);
}

/* A hostile target's keys, all of one hash: each look-up walks the whole
 * run, but every key is found, growth keeps the load bounded, and a probe
 * for an absent key ends. */
static void many_equal_hashes(void **state)
{
	struct hash_index ix = { 0 };
	struct keys k = keys_new(5000);
	uint64_t h = fnv1a_str(FNV1A_BASIS, "same");
	size_t i;

	(void)state;
	for (i = 0; i < 5000; i++)
		assert_int_equal(find_or_add(&ix, &k, i, h), i);
	assert_true(ix.n * 2 <= ix.nslots);
	for (i = 0; i < 5000; i += 97)
		assert_int_equal(find(&ix, &k, i, h), i);
	assert_int_equal(find(&ix, &k, 5000, h), HASH_INDEX_NONE);
	assert_int_equal(find(&ix, &k, 5000, h + 1), HASH_INDEX_NONE);
	hash_index_free(&ix);
	keys_free(&k);
}

/* Removing moves the entries that probed past the gap back: each remaining
 * key is still found, whichever of a run goes, with the runs wrapping round
 * the end of the slots. */
static void remove_keeps_runs_whole(void **state)
{
	struct hash_index ix = { 0 };
	struct keys k = keys_new(40);
	uint64_t top = 0;
	size_t i, j, gone;

	(void)state;
	/* 24 hashes whose tags pick the last two of 64 slots: a run that
	 * wraps round to slot 0 (the tag's top 6 bits pick the slot) */
	for (i = 0; i < 24; i++) {
		while ((uint32_t)((top * 0x9e3779b97f4a7c15ull) >> 32) >> 26 != 62 + i % 2)
			top++;
		find_or_add(&ix, &k, 500 + i, top++);
	}
	assert_int_equal(ix.nslots, 64);
	for (gone = 0; gone < k.n; gone += 3) {
		assert_int_equal(hash_index_remove(&ix, k.hash[gone], gone), 0);
		assert_int_equal(hash_index_remove(&ix, k.hash[gone], gone), -1);
		for (j = 0; j < k.n; j++)
			assert_int_equal(find(&ix, &k, k.key[j], k.hash[j]),
					 j % 3 == 0 && j <= gone ? HASH_INDEX_NONE : j);
	}
	for (i = 0, j = 0; i < ix.nslots; i++)
		j += ix.slots[i].ref != 0;
	assert_int_equal(j, ix.n);
	hash_index_free(&ix);
	keys_free(&k);
}

/* The caller's cap: the add past it fails with E2BIG, the index unchanged. */
static void cap_is_reported(void **state)
{
	struct hash_index ix = { .max_entries = 100 };
	struct keys k = keys_new(101);
	size_t i;

	(void)state;
	for (i = 0; i < 100; i++)
		find_or_add(&ix, &k, i, hash_u64(i));
	errno = 0;
	assert_int_equal(hash_index_add(&ix, hash_u64(100), 100), -1);
	assert_int_equal(errno, E2BIG);
	assert_int_equal(ix.n, 100);
	for (i = 0; i < 100; i++)
		assert_int_equal(find(&ix, &k, i, hash_u64(i)), i);
	assert_int_equal(hash_index_add(&ix, 1, UINT32_MAX), -1);
	assert_int_equal(errno, EINVAL);
	ix.max_entries = 0;
	assert_int_equal(hash_index_add(&ix, 1, UINT32_MAX - 1), 0);
	hash_index_free(&ix);
	keys_free(&k);
}

/* Clear empties it for indexing again, without freeing the slots. */
static void clear_then_index_again(void **state)
{
	struct hash_index ix = { 0 };
	struct keys k = keys_new(300);
	size_t i, nslots;

	(void)state;
	for (i = 0; i < 300; i++)
		find_or_add(&ix, &k, i, hash_u64(i));
	nslots = ix.nslots;
	hash_index_clear(&ix);
	assert_int_equal(ix.n, 0);
	assert_int_equal(ix.nslots, nslots);
	assert_int_equal(find(&ix, &k, 5, hash_u64(5)), HASH_INDEX_NONE);
	for (i = 0; i < 300; i++)
		assert_int_equal(hash_index_add(&ix, k.hash[i], i), 0);
	for (i = 0; i < 300; i++)
		assert_int_equal(find(&ix, &k, i, hash_u64(i)), i);
	hash_index_free(&ix);
	keys_free(&k);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(empty_index_finds_nothing),
		cmocka_unit_test(grows_and_keeps_every_entry),
		cmocka_unit_test(collisions_are_told_apart),
		cmocka_unit_test(many_equal_hashes),
		cmocka_unit_test(remove_keeps_runs_whole),
		cmocka_unit_test(cap_is_reported),
		cmocka_unit_test(clear_then_index_again),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
