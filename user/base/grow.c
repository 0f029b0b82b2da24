// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include "grow.h"

/* Out of line on purpose: callers pass their typed array as a void **, and
 * the store through it stays behind a call the compiler cannot see into. */
int grow_array(void **items, size_t *cap, size_t need, size_t item_size)
{
	size_t grown_cap = *cap ? *cap : GROW_MIN_ITEMS;
	void *grown;

	if (need <= *cap)
		return 0;
	if (!item_size) {
		errno = EINVAL;
		return -1;
	}
	while (grown_cap < need) {
		if (grown_cap > SIZE_MAX / 2) {
			errno = ENOMEM;
			return -1;
		}
		grown_cap *= 2;
	}
	if (grown_cap > SIZE_MAX / item_size) {
		errno = ENOMEM;
		return -1;
	}
	grown = realloc(*items, grown_cap * item_size);
	if (!grown)
		return -1;	/* realloc set ENOMEM; *items is untouched */
	*items = grown;
	*cap = grown_cap;
	return 0;
}
