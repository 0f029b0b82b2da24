/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The one string and byte hash (64-bit FNV-1a). The hash tables of userspace
 * are all hash_index.h, over these hashes; a direct-mapped cache (one slot a
 * key, a new key evicts the old) picks its slot by hash_cache_slot. Keys
 * from the target are hostile: a hash covers all of its key.
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

/* The slot of hash h in a direct-mapped cache of nslots (a power of two):
 * the high bits folded into the low ones, which alone pick the slot. */
static inline size_t hash_cache_slot(uint64_t h, size_t nslots)
{
	return (size_t)(h ^ (h >> 29)) & (nslots - 1);
}

#endif
