// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <time.h>
#include "clock.h"

/* When this process began running its own code (after the dynamic
 * loader): start-up is measured from here. */
static uint64_t started_ns;

__attribute__((constructor)) static void note_started(void)
{
	started_ns = monotonic_ns();
}

uint64_t process_started_ns(void)
{
	return started_ns;
}

uint64_t monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

uint64_t realtime_of_monotonic(uint64_t mono_ns)
{
	struct timespec rt;
	uint64_t now = monotonic_ns(), real, ago;

	if (clock_gettime(CLOCK_REALTIME, &rt) || mono_ns > now)
		return 0;
	real = rt.tv_sec * 1000000000ull + rt.tv_nsec;
	ago = now - mono_ns;
	return real > ago ? real - ago : 0;
}
