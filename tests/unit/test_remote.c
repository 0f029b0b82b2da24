// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Unit tests of user/base/remote.c: bounded reads of another process, and issue 9
 * item 12: a pid reused by another process mid-recording is not read.
 * The reuse is made for real: a child exits and is reaped, and the next
 * child is given its pid through /proc/sys/kernel/ns_last_pid (root).
 * Issue 18 item 9: every process is held, however many (the table was 64
 * entries, the oldest silently unguarded), a pid not held is not read, and
 * the bound (the open-file limit) refuses new ones, never forgets old ones.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <signal.h>
#include <errno.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>
#include "cannot_run.h"
#include "remote.h"

static volatile uint64_t marker = 0x1122334455667788ull;

/* A child that keeps our memory image (and marker's address) and waits;
 * returned once it has set marker (it says so through a pipe: a fixed
 * sleep was too short on a loaded machine). */
static pid_t spawn_sleeper(uint64_t value)
{
	int ready[2];
	char byte;
	pid_t pid;

	if (pipe(ready))
		return -1;
	pid = fork();
	if (pid == 0) {
		marker = value;
		alarm(30);	/* never outlives a failed test */
		if (write(ready[1], "", 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	close(ready[1]);
	if (pid > 0 && read(ready[0], &byte, 1) != 1)
		pid = -1;
	close(ready[0]);
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
		cannot_run("needs root (spawns a process at a chosen pid)");
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
		cannot_run("another process took the reused pid in 20 tries");
	usleep(20000);
	/* the pid is alive again, but it is not the process tracked */
	assert_int_equal(remote_read_u64(second, (uintptr_t)&marker, &v), -1);
	/* tracked anew, it is read */
	assert_int_equal(remote_track(second), 0);
	assert_int_equal(remote_read_u64(second, (uintptr_t)&marker, &v), 0);
	assert_int_equal(v, 2);
	reap(second);
}

#define MANY	70	/* more than the 64 the table used to hold */

static void spawn_many(pid_t *pids, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		pids[i] = spawn_sleeper(1000 + i);
		assert_true(pids[i] > 0);
	}
	usleep(50000);
}

static void reap_many(const pid_t *pids, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		reap(pids[i]);
}

static void test_every_process_is_held(void **state)
{
	pid_t pids[MANY];
	size_t i, before = remote_tracked();
	uint64_t v;

	(void)state;
	spawn_many(pids, MANY);
	for (i = 0; i < MANY; i++)
		assert_int_equal(remote_track(pids[i]), 0);
	assert_int_equal(remote_tracked(), before + MANY);
	/* the first ones too: none was forgotten to make room */
	for (i = 0; i < MANY; i++) {
		v = 0;
		assert_int_equal(remote_read_u64(pids[i], (uintptr_t)&marker, &v), 0);
		assert_int_equal(v, 1000 + i);
	}
	/* tracked again while it lives: the same entry */
	assert_int_equal(remote_track(pids[0]), 0);
	assert_int_equal(remote_tracked(), before + MANY);
	/* let go, it is not read, though it lives */
	remote_untrack(pids[0]);
	assert_int_equal(remote_tracked(), before + MANY - 1);
	assert_int_equal(remote_read_u64(pids[0], (uintptr_t)&marker, &v), -1);
	assert_int_equal(remote_same_process(pids[0]), 0);
	/* held again, read again */
	assert_int_equal(remote_track(pids[0]), 0);
	assert_int_equal(remote_read_u64(pids[0], (uintptr_t)&marker, &v), 0);
	assert_int_equal(v, 1000);
	reap_many(pids, MANY);
	for (i = 0; i < MANY; i++) {
		assert_int_equal(remote_read_u64(pids[i], (uintptr_t)&marker, &v), -1);
		remote_untrack(pids[i]);
	}
	assert_int_equal(remote_tracked(), before);
}

static void test_untracked_pid_is_not_read(void **state)
{
	pid_t child = spawn_sleeper(7);
	uint64_t v = 0;

	(void)state;
	assert_true(child > 0);
	usleep(20000);
	assert_int_equal(remote_read_u64(child, (uintptr_t)&marker, &v), -1);
	assert_int_equal(v, 0);
	/* our own process is never anyone else's */
	assert_int_equal(remote_read_u64(getpid(), (uintptr_t)&marker, &v), 0);
	assert_int_equal(v, marker);
	reap(child);
}

/* At the bound a new process is refused (EMFILE); those held stay held. */
static void test_bound_refuses_new_keeps_old(void **state)
{
	struct rlimit saved, lim;
	pid_t pids[21];
	uint64_t v;
	size_t i, room = 20, before = remote_tracked();

	(void)state;
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &saved), 0);
	lim = saved;
	lim.rlim_cur = REMOTE_FD_RESERVE + before + room;
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &lim), 0);
	assert_int_equal(remote_track_max(), before + room);
	assert_int_equal(remote_full(), 0);
	spawn_many(pids, room + 1);
	for (i = 0; i < room; i++)
		assert_int_equal(remote_track(pids[i]), 0);
	errno = 0;
	assert_int_equal(remote_track(pids[room]), -1);
	assert_int_equal(errno, EMFILE);
	assert_int_equal(remote_full(), 1);
	assert_int_equal(remote_read_u64(pids[room], (uintptr_t)&marker, &v), -1);
	for (i = 0; i < room; i++) {
		assert_int_equal(remote_read_u64(pids[i], (uintptr_t)&marker, &v), 0);
		assert_int_equal(v, 1000 + i);
	}
	/* one let go makes room for one more */
	remote_untrack(pids[0]);
	assert_int_equal(remote_track(pids[room]), 0);
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &saved), 0);
	reap_many(pids, room + 1);
	for (i = 0; i <= room; i++)
		remote_untrack(pids[i]);
	assert_int_equal(remote_tracked(), before);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reads_and_bounds),
		cmocka_unit_test(test_reused_pid_is_not_read),
		cmocka_unit_test(test_every_process_is_held),
		cmocka_unit_test(test_untracked_pid_is_not_read),
		cmocka_unit_test(test_bound_refuses_new_keeps_old),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
