/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The one growable array of userspace: capacity doubled as items are added. */
#ifndef EP_GROW_H
#define EP_GROW_H
#include <stddef.h>

/* The capacity an empty array first gets (items). */
#define GROW_MIN_ITEMS	16

/*
 * Makes room for `need` items of item_size bytes in *items, whose capacity
 * is *cap items: doubles the capacity (from GROW_MIN_ITEMS) until it holds
 * need. 0 when there is room (*items and *cap updated if they grew); -1
 * with errno ENOMEM when out of memory or when the size would overflow, and
 * then *items and *cap are left as they were: the old array stays valid.
 */
int grow_array(void **items, size_t *cap, size_t need, size_t item_size);

/* grow_array for an array `arr` of any type and its capacity `cap`. */
#define GROW_ARRAY(arr, cap, need) \
	grow_array((void **)&(arr), &(cap), (need), sizeof(*(arr)))

#endif
