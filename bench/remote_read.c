// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The cost of one read of a target's memory (user/base/remote.c), as the
 * symbolizer makes them: 8 bytes, 64 bytes, 4 KiB, from a child process.
 * bench/remote_read.sh builds it against this tree's remote.c and against
 * another's (main's: process_vm_readv in the caller, no deadline) and runs
 * both, to put the memory-read deadline's cost in docs/benchmarks.md.
 *   remote_read N: N reads of each size, wall time per read
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "remote.h"

static unsigned char block[4096];

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	static const size_t sizes[] = { 8, 64, 4096 };
	unsigned char buf[4096];
	long i, n = argc > 1 ? atol(argv[1]) : 100000;
	pid_t child = fork();
	size_t s;

	if (child == 0) {
		alarm(60);
		for (;;)
			pause();
	}
	usleep(20000);
	if (remote_track(child))
		return 1;
	for (s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		double t0 = now();

		for (i = 0; i < n; i++) {
			if (remote_read(child, (uintptr_t)block, buf, sizes[s])) {
				fprintf(stderr, "read %ld of %zu bytes failed\n", i, sizes[s]);
				return 1;
			}
		}
		printf("%5zu bytes: %.2f us per read\n", sizes[s], (now() - t0) / n * 1e6);
	}
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	return 0;
}
