/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * How much an xz stream inflates to, found by inflating it with a cap: the
 * sizes an xz file declares need not be there nor be true. For
 * .gnu_debugdata ("MiniDebugInfo"), which libdwfl would inflate whole into
 * memory: 1.5 MB of xz can hold 8 GiB of zeros.
 */
#ifndef EP_XZ_BOUND_H
#define EP_XZ_BOUND_H
#include <stddef.h>

/* 0 if the first xz stream of buf inflates to at most cap bytes (or stops
 * on an error before: whoever inflates it then stops there too), else -1. */
int xz_inflates_within(const void *buf, size_t len, size_t cap);

#endif
