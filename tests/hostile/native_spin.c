// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The C code of the --native cage's hostile targets (test_native_cage.py):
 * a function that spins for a while, so that samples and dumps find their
 * pc in this file, and a counter of the real-time signals the process got. */
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>

static unsigned long signals_seen;

static void count_signal(int sig)
{
	(void)sig;
	/* two threads may run it at once */
	__atomic_fetch_add(&signals_seen, 1, __ATOMIC_RELAXED);
}

int cage_count_signals(int sig)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = count_signal;
	sa.sa_flags = SA_RESTART;
	return sigaction(sig, &sa, NULL);
}

unsigned long cage_signals_seen(void)
{
	return __atomic_load_n(&signals_seen, __ATOMIC_RELAXED);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Busy for the given seconds; returns a value so the loop is not removed. */
unsigned long cage_spin(double seconds)
{
	double end = now() + seconds;
	unsigned long x = 1;

	while (now() < end)
		for (int i = 0; i < 10000; i++)
			x = x * 6364136223846793005ul + 1442695040888963407ul;
	return x;
}

/* Blocks the calling thread in vfork until its child has slept the given
 * seconds; returns how long the thread was away (a thread left seized by a
 * tracer stays stopped on its way back, so this grows). */
double cage_vfork_hold(double seconds)
{
	struct timespec ts = { (time_t)seconds, (long)((seconds - (time_t)seconds) * 1e9) };
	double t0 = now();
	pid_t child = vfork();

	if (child == 0) {
		nanosleep(&ts, NULL);
		_exit(0);
	}
	if (child > 0)
		waitpid(child, NULL, 0);
	return now() - t0;
}
