/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The session's clock: CLOCK_MONOTONIC, which is also bpf_ktime_get_ns()'s
 * and Python's time.monotonic()'s, so all three line up. */
#ifndef EP_CLOCK_H
#define EP_CLOCK_H
#include <stdint.h>

uint64_t monotonic_ns(void);
/* monotonic_ns() when this process started (its constructors ran). */
uint64_t process_started_ns(void);
/* The wall-clock time (CLOCK_REALTIME, ns since the epoch) of monotonic time
 * mono_ns, as far as both clocks agree now; 0 if unknown. Lines up the
 * recordings of several hosts' processes (the Dask cluster report). */
uint64_t realtime_of_monotonic(uint64_t mono_ns);

#endif
