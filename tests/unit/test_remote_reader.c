// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Unit tests of user/base/remote_reader.c (issue 28 item 5): reads of a
 * process whose pages never arrive end at their deadline. A child backs
 * pages with a userfaultfd it never serves (as root: no
 * UFFD_USER_MODE_ONLY, so the reader's remote fault waits, as a hostile
 * target's would); a read of them is given up on in REMOTE_READ_TIMEOUT_NS,
 * not read again, and after REMOTE_HUNG_MAX such reads the process is not
 * read at all. A reader killed by someone else is replaced unnoticed.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <linux/userfaultfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include "cannot_run.h"
#include "remote.h"
#include "remote_reader.h"

#define PAGES	4

static volatile uint64_t marker = 0x5eed;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A child whose PAGES pages at *hung wait on a userfaultfd for ever; -1 if
 * userfaultfd is refused here. */
static pid_t spawn_hung(uint64_t *hung)
{
	uint8_t *area = mmap(NULL, PAGES * 4096, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int ready[2];
	pid_t pid;
	char ok = 0;

	assert_true(area != MAP_FAILED);
	assert_int_equal(pipe(ready), 0);
	pid = fork();
	if (pid == 0) {
		struct uffdio_api api = { .api = UFFD_API };
		struct uffdio_register reg = { .range = { (uintptr_t)area, PAGES * 4096 },
					       .mode = UFFDIO_REGISTER_MODE_MISSING };
		int uffd = syscall(SYS_userfaultfd, O_CLOEXEC);

		ok = uffd >= 0 && !ioctl(uffd, UFFDIO_API, &api) && !ioctl(uffd, UFFDIO_REGISTER, &reg);
		if (write(ready[1], &ok, 1) != 1)
			_exit(1);
		alarm(30);	/* never outlives a failed test */
		for (;;)
			pause();
	}
	close(ready[1]);
	if (read(ready[0], &ok, 1) != 1 || !ok) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		pid = -1;
	}
	close(ready[0]);
	*hung = (uintptr_t)area;
	return pid;
}

static void test_hung_pages_end_at_the_deadline(void **state)
{
	uint64_t hung, v = 0;
	unsigned long before = remote_timeouts();
	double t0, took;
	pid_t child;
	int i;

	(void)state;
	if (geteuid() != 0)
		cannot_run("needs root (userfaultfd for a page nobody serves)");
	child = spawn_hung(&hung);
	if (child < 0)
		cannot_run("no userfaultfd here (a page nobody serves cannot be made)");
	assert_int_equal(remote_track(child), 0);
	assert_int_equal(remote_read_u64(child, (uintptr_t)&marker, &v), 0);
	assert_int_equal(v, 0x5eed);
	t0 = now();
	assert_int_equal(remote_read_u64(child, hung, &v), -1);
	took = now() - t0;
	assert_true(took >= REMOTE_READ_TIMEOUT_NS / 1e9 * 0.9 && took < 3);
	assert_int_equal(remote_timeouts(), before + 1);
	/* given up on at the first deadline for where it waited, which the
	 * summary names */
	assert_string_equal(remote_last_wait(), "handle_userfault");
	/* that page is not read again: at once, no timeout more */
	t0 = now();
	assert_int_equal(remote_read_u64(child, hung + 8, &v), -1);
	assert_true(now() - t0 < 0.05);
	assert_int_equal(remote_timeouts(), before + 1);
	/* the rest of the process is, through a new reader */
	assert_int_equal(remote_read_u64(child, (uintptr_t)&marker, &v), 0);
	/* REMOTE_HUNG_MAX hung reads: the process is not read at all */
	for (i = 1; i < REMOTE_HUNG_MAX; i++)
		assert_int_equal(remote_read_u64(child, hung + i * 4096, &v), -1);
	assert_int_equal(remote_timeouts(), before + REMOTE_HUNG_MAX);
	t0 = now();
	assert_int_equal(remote_read_u64(child, (uintptr_t)&marker, &v), -1);
	assert_true(now() - t0 < 0.05);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	remote_untrack(child);
}

/* Our reader of target memory: our child named REMOTE_READER_COMM. */
static pid_t find_reader(void)
{
	char path[64], buf[256];
	struct dirent *de;
	pid_t found = -1;
	DIR *d = opendir("/proc");
	FILE *f;
	int ppid;

	while (d && (de = readdir(d))) {
		snprintf(path, sizeof(path), "/proc/%s/stat", de->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(buf, sizeof(buf), f) && strstr(buf, "(" REMOTE_READER_COMM ") ") &&
		    sscanf(strrchr(buf, ')') + 4, "%d", &ppid) == 1 && ppid == getpid())
			found = atoi(de->d_name);
		fclose(f);
	}
	if (d)
		closedir(d);
	return found;
}

static void test_a_reader_killed_by_someone_is_replaced(void **state)
{
	unsigned long before = remote_timeouts();
	uint64_t v = 0;
	pid_t child = fork(), reader;

	(void)state;
	if (child == 0) {
		alarm(30);
		for (;;)
			pause();
	}
	assert_int_equal(remote_track(child), 0);
	assert_int_equal(remote_read_u64(child, (uintptr_t)&marker, &v), 0);
	reader = find_reader();
	assert_true(reader > 0);
	kill(reader, SIGKILL);
	usleep(20000);
	v = 0;
	assert_int_equal(remote_read_u64(child, (uintptr_t)&marker, &v), 0);
	assert_int_equal(v, 0x5eed);
	assert_int_equal(remote_timeouts(), before);
	assert_true(find_reader() > 0 && find_reader() != reader);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	remote_untrack(child);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hung_pages_end_at_the_deadline),
		cmocka_unit_test(test_a_reader_killed_by_someone_is_replaced),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
