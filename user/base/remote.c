// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Reads of the target's memory. process_vm_readv needs no ptrace attach and
 * never stops the target; a read of an unmapped range simply fails.
 *
 * A pid is only a number: the target can exit and another process get its
 * pid while we read. A pid given to remote_track() is held by a pidfd of
 * the process it named then, and every read of that pid is checked, after
 * it completes, against that pidfd: if the process has exited, the bytes
 * may come from a stranger and the read fails. (Before the check the read
 * was of a live process, which keeps its pid: it was ours.) */
#define _GNU_SOURCE
#include <poll.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>
#include "remote.h"

/* Nothing in a code object or frame is larger; a bigger request is a bug or
 * corrupt target data and must not turn into a huge read. */
#define REMOTE_READ_MAX	(16u << 20)
/* Processes tracked at once (the target and followed children); the oldest
 * is forgotten when full (its reads are then unchecked, as before). */
#define TRACKED_MAX	64

static struct tracked {
	pid_t pid;
	int pidfd;
} tracked[TRACKED_MAX];
static unsigned tracked_next;

static struct tracked *find_tracked(pid_t pid)
{
	int i;

	for (i = 0; i < TRACKED_MAX; i++)
		if (tracked[i].pid == pid && tracked[i].pidfd > 0)
			return &tracked[i];
	return NULL;
}

int remote_track(pid_t pid)
{
	struct tracked *t = find_tracked(pid);
	int fd = syscall(SYS_pidfd_open, pid, 0);

	if (fd < 0)
		return -1;
	if (!t) {
		t = &tracked[tracked_next++ % TRACKED_MAX];
		if (t->pidfd > 0)
			close(t->pidfd);
	} else {
		close(t->pidfd);
	}
	t->pid = pid;
	t->pidfd = fd;
	return 0;
}

int remote_same_process(pid_t pid)
{
	struct tracked *t = find_tracked(pid);
	struct pollfd pfd;

	if (!t)
		return 1;
	pfd = (struct pollfd){ .fd = t->pidfd, .events = POLLIN };
	/* readable: the process tracked has exited */
	return poll(&pfd, 1, 0) == 0;
}

int remote_read(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { .iov_base = buf, .iov_len = len };
	struct iovec remote = { .iov_base = (void *)(uintptr_t)addr, .iov_len = len };

	if (len == 0)
		return 0;
	if (len > REMOTE_READ_MAX || addr == 0 || addr + len < addr)
		return -1;
	if (process_vm_readv(pid, &local, 1, &remote, 1, 0) != (ssize_t)len)
		return -1;
	return remote_same_process(pid) ? 0 : -1;
}

int remote_read_u64(pid_t pid, uint64_t addr, uint64_t *out)
{
	return remote_read(pid, addr, out, sizeof(*out));
}

int remote_read_i32(pid_t pid, uint64_t addr, int32_t *out)
{
	return remote_read(pid, addr, out, sizeof(*out));
}
