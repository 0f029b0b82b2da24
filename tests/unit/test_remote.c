// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Unit tests of user/base/remote.c: bounded reads of another process, and issue 9
 * item 12: a pid reused by another process mid-recording is not read.
 * The reuse is made for real: a child exits and is reaped, and the next
 * child is given its pid through /proc/sys/kernel/ns_last_pid (root).
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>
#include "remote.h"

static volatile uint64_t marker = 0x1122334455667788ull;

/* A child that keeps our memory image (and marker's address) and waits. */
static pid_t spawn_sleeper(uint64_t value)
{
	pid_t pid = fork();

	if (pid == 0) {
		marker = value;
		alarm(30);	/* never outlives a failed test */
		for (;;)
			pause();
	}
	return pid;
}

/* Ends a sleeper and reaps it. */
static void reap(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

static void test_reads_and_bounds(void **state)
{
	uint64_t v = 0;
	pid_t child = spawn_sleeper(42);

	(void)state;
	assert_true(child > 0);
	usleep(20000);
	assert_int_equal(remote_track(child), 0);
	assert_int_equal(remote_read_u64(child, (uintptr_t)&marker, &v), 0);
	assert_int_equal(v, 42);
	assert_int_equal(remote_read(child, 0, &v, 8), -1);
	assert_int_equal(remote_read(child, ~0ull - 3, &v, 8), -1);
	assert_int_equal(remote_read(child, (uintptr_t)&marker, &v, 1u << 30), -1);
	reap(child);
	assert_int_equal(remote_read_u64(child, (uintptr_t)&marker, &v), -1);
	assert_int_equal(remote_same_process(child), 0);
}

/* A child with exactly pid `want`, or -1 if another process took it first. */
static pid_t spawn_with_pid(pid_t want, uint64_t value)
{
	FILE *f = fopen("/proc/sys/kernel/ns_last_pid", "w");
	pid_t pid;

	if (!f)
		return -1;
	fprintf(f, "%d", want - 1);
	if (fclose(f))
		return -1;
	pid = spawn_sleeper(value);
	if (pid != want) {
		reap(pid);
		return -1;
	}
	return pid;
}

static void test_reused_pid_is_not_read(void **state)
{
	uint64_t v = 0;
	pid_t first, second = -1;
	int tries;

	(void)state;
	if (geteuid() != 0)
		skip();
	for (tries = 0; tries < 20 && second < 0; tries++) {
		first = spawn_sleeper(1);
		usleep(20000);
		assert_int_equal(remote_track(first), 0);
		assert_int_equal(remote_read_u64(first, (uintptr_t)&marker, &v), 0);
		assert_int_equal(v, 1);
		reap(first);
		second = spawn_with_pid(first, 2);
	}
	if (second < 0)
		skip();		/* the machine took the pid each time */
	usleep(20000);
	/* the pid is alive again, but it is not the process tracked */
	assert_int_equal(remote_read_u64(second, (uintptr_t)&marker, &v), -1);
	/* tracked anew, it is read */
	assert_int_equal(remote_track(second), 0);
	assert_int_equal(remote_read_u64(second, (uintptr_t)&marker, &v), 0);
	assert_int_equal(v, 2);
	reap(second);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reads_and_bounds),
		cmocka_unit_test(test_reused_pid_is_not_read),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
