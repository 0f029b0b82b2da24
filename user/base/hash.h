/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The one string and byte hash (64-bit FNV-1a) and the probing of the
 * open-addressing tables that use it: each table keeps its own slots (an
 * index + 1, or a pointer; 0 is empty) in a power-of-two array, and finds a
 * key's slot by hash_first_slot then hash_next_slot until the slot is empty
 * or holds the key. Keys from the target are hostile: the tables grow at a
 * bounded load, and a string's hash covers all of it.
 */
#ifndef EP_HASH_H
#define EP_HASH_H
#include <stddef.h>
#include <stdint.h>

#define FNV1A_BASIS	0xcbf29ce484222325ull	/* 14695981039346656037 */
#define FNV1A_PRIME	0x100000001b3ull	/* 1099511628211 */

/* FNV-1a continued from h (FNV1A_BASIS to start) over len bytes. */
static inline uint64_t fnv1a(uint64_t h, const void *data, size_t len)
{
	const unsigned char *b = data;
	size_t i;

	for (i = 0; i < len; i++)
		h = (h ^ b[i]) * FNV1A_PRIME;
	return h;
}

/* ... over the string s, without its NUL. */
static inline uint64_t fnv1a_str(uint64_t h, const char *s)
{
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * FNV1A_PRIME;
	return h;
}

/* ... of an address or other 64-bit key (the same hash, over its bytes). */
static inline uint64_t hash_u64(uint64_t key)
{
	return fnv1a(FNV1A_BASIS, &key, sizeof(key));
}

/* The first slot of hash h in a table of nslots (a power of two): the high
 * bits folded into the low ones, which alone pick the slot. */
static inline size_t hash_first_slot(uint64_t h, size_t nslots)
{
	return (size_t)(h ^ (h >> 29)) & (nslots - 1);
}

/* The slot probed after i (linear probing). */
static inline size_t hash_next_slot(size_t i, size_t nslots)
{
	return (i + 1) & (nslots - 1);
}

#endif
