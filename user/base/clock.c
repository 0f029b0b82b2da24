// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <time.h>
#include "clock.h"

uint64_t monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}
