/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The session's clock: CLOCK_MONOTONIC, which is also bpf_ktime_get_ns()'s
 * and Python's time.monotonic()'s, so all three line up. */
#ifndef EP_CLOCK_H
#define EP_CLOCK_H
#include <stdint.h>

uint64_t monotonic_ns(void);

#endif
