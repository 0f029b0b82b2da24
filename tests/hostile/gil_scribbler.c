// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The C side of target_gil_scribbler.py: a thread that keeps rewriting the
 * interpreter's gil.last_holder with values no thread state has, and holds
 * gil.switch_number still, the way a hostile target can make every GIL wait
 * name a holder never seen before (a wait during which the GIL seems not to
 * change hands is put on the holder its start read). Debian's python3.11
 * exports _PyRuntime; the GIL is its ceval.gil (offset 360 in 3.11),
 * last_holder that struct's second word, switch_number its fourth. */
#include <pthread.h>
#include <stdint.h>
#include <time.h>

#define GIL_LAST_HOLDER (360 + 8)
#define GIL_SWITCH_NUMBER (360 + 24)
#ifndef HOLD_NS
#define HOLD_NS 200000
#endif

extern char _PyRuntime[];

static volatile uintptr_t *last_holder(void)
{
	return (volatile uintptr_t *)(_PyRuntime + GIL_LAST_HOLDER);
}

static unsigned long long written;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* Each value is held for HOLD_NS, against the interpreter's own writes at
 * every switch, so that the GIL waits of that time read it at both ends: a
 * new holder every 0.2 ms (thousands of distinct ones a second). */
static void *scribble(void *arg)
{
	uintptr_t value = (uintptr_t)arg;
	uint64_t until;

	for (;;) {
		value += 64;	/* aligned like a pointer, never the same twice */
		until = now_ns() + HOLD_NS;
		while (now_ns() < until) {
			*last_holder() = value;
			*(volatile unsigned long *)(_PyRuntime + GIL_SWITCH_NUMBER) = 7;
		}
		__atomic_fetch_add(&written, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

/* 1 if the offset is right: called with the GIL held, last_holder is the
 * caller's own thread state. */
int scribbler_offset_ok(uintptr_t tstate)
{
	return *last_holder() == tstate;
}

int scribbler_start(void)
{
	pthread_t t;

	return pthread_create(&t, NULL, scribble, (void *)(uintptr_t)0x7f0000000000ull);
}

unsigned long long scribbler_written(void)
{
	return __atomic_load_n(&written, __ATOMIC_RELAXED);
}
