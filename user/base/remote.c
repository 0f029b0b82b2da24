// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Reads of the target's memory. process_vm_readv needs no ptrace attach and
 * never stops the target; a read of an unmapped range simply fails.
 *
 * A pid is only a number: the target can exit and another process get its
 * pid while we read. A pid given to remote_track() is held by a pidfd of
 * the process it named then, and every read of that pid is checked, after
 * it completes, against that pidfd: if the process has exited, the bytes
 * may come from a stranger and the read fails. (Before the check the read
 * was of a live process, which keeps its pid: it was ours.) A pid never
 * tracked is not read at all: there is nothing to tell whose it is. Every
 * process followed is tracked, however many: the table grows, bounded only
 * by the descriptors the open-file limit allows.
 *
 * The reads themselves are made by a reader process (remote_reader.c),
 * each within a deadline: a page that never arrives (a userfaultfd nobody
 * serves, a FUSE daemon that never answers) costs one read its deadline,
 * never the recording. A process that held REMOTE_HUNG_MAX reads so is
 * not read again. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>
#include "grow.h"
#include "remote.h"
#include "remote_reader.h"

/* Nothing in a code object or frame is larger; a bigger request is a bug or
 * corrupt target data and must not turn into a huge read. */
#define REMOTE_READ_MAX	(16u << 20)
/* However high the open-file limit, this many at most (the kernel follows
 * 4096 processes per recording: this is never what stops us). */
#define TRACKED_HARD_MAX	(1u << 20)

struct tracked {
	pid_t pid;
	int pidfd;
	unsigned timeouts;	/* reads of it given up on */
};

/* sorted by pid: a read looks its pid up without scanning */
static struct tracked *tracked;
static size_t ntracked, tracked_cap;
static int told_full;

/* The index pid has, or would have, in the table. */
static size_t slot_of(pid_t pid)
{
	size_t lo = 0, hi = ntracked;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (tracked[mid].pid < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static struct tracked *find_tracked(pid_t pid)
{
	size_t i = slot_of(pid);

	return i < ntracked && tracked[i].pid == pid ? &tracked[i] : NULL;
}

/* readable: the process the pidfd holds has exited */
static int has_exited(int pidfd)
{
	struct pollfd pfd = { .fd = pidfd, .events = POLLIN };

	return poll(&pfd, 1, 0) != 0;
}

size_t remote_track_max(void)
{
	struct rlimit lim;
	size_t max = TRACKED_HARD_MAX;

	if (getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY &&
	    lim.rlim_cur < max + REMOTE_FD_RESERVE)
		max = lim.rlim_cur > REMOTE_FD_RESERVE + 16 ? lim.rlim_cur - REMOTE_FD_RESERVE : 16;
	return max;
}

size_t remote_tracked(void)
{
	return ntracked;
}

int remote_full(void)
{
	return told_full;
}

/* A new entry for pid (not tracked) holding fd; -1 when out of memory. */
static int insert(pid_t pid, int fd)
{
	size_t i;

	if (GROW_ARRAY(tracked, tracked_cap, ntracked + 1))
		return -1;
	i = slot_of(pid);
	memmove(&tracked[i + 1], &tracked[i], (ntracked - i) * sizeof(*tracked));
	tracked[i] = (struct tracked){ pid, fd, 0 };
	ntracked++;
	return 0;
}

int remote_track(pid_t pid)
{
	struct tracked *t = find_tracked(pid);
	int fd, saved;

	/* a live process keeps its pid: the pidfd held is still of it */
	if (t && !has_exited(t->pidfd))
		return 0;
	if (!t && ntracked >= remote_track_max()) {
		told_full = 1;
		errno = EMFILE;
		return -1;
	}
	fd = syscall(SYS_pidfd_open, pid, 0);
	if (fd < 0) {
		if (t)
			remote_untrack(pid);
		return -1;
	}
	if (t) {
		close(t->pidfd);
		t->pidfd = fd;
		t->timeouts = 0;	/* another process */
		return 0;
	}
	if (insert(pid, fd)) {
		saved = errno;
		close(fd);
		errno = saved;
		return -1;
	}
	return 0;
}

void remote_untrack(pid_t pid)
{
	struct tracked *t = find_tracked(pid);
	size_t i;

	if (!t)
		return;
	close(t->pidfd);
	i = t - tracked;
	memmove(&tracked[i], &tracked[i + 1], (ntracked - i - 1) * sizeof(*tracked));
	ntracked--;
}

int remote_same_process(pid_t pid)
{
	struct tracked *t = find_tracked(pid);

	if (!t)
		return pid == getpid();	/* ours is never anyone else's */
	return !has_exited(t->pidfd);
}

/* Our own memory: read directly (no page of ours waits for anyone). */
static int read_own(uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { .iov_base = buf, .iov_len = len };
	struct iovec remote = { .iov_base = (void *)(uintptr_t)addr, .iov_len = len };

	return process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == (ssize_t)len ? 0 : -1;
}

/* Reads refused before the reader was asked, by why (remote_why_failed). */
static unsigned long refused_untracked, refused_exited, refused_closed, refused_hung;

int remote_read(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct tracked *t;
	int rc;

	if (len == 0)
		return 0;
	if (len > REMOTE_READ_MAX || addr == 0 || addr + len < addr)
		return -1;
	/* not tracked, or gone: whoever has the pid now is not read at all */
	if (!remote_same_process(pid)) {
		t = find_tracked(pid);
		if (!t)
			refused_untracked++;
		else if (fcntl(t->pidfd, F_GETFD) < 0)
			refused_closed++;	/* a bug of ours: its pidfd closed */
		else
			refused_exited++;
		return -1;
	}
	t = find_tracked(pid);
	if (!t)
		return read_own(addr, buf, len);
	if (t->timeouts >= REMOTE_HUNG_MAX) {
		refused_hung++;
		return -1;
	}
	rc = remote_reader_read(pid, addr, buf, len);
	if (rc == RR_TIMED_OUT && (t = find_tracked(pid)))
		t->timeouts++;
	if (rc)
		return -1;
	return remote_same_process(pid) ? 0 : -1;
}

unsigned long remote_timeouts(void)
{
	return remote_reader_timeouts();
}

void remote_why_failed(char *out, size_t len)
{
	struct remote_reader_failures f;

	remote_reader_failures(&f);
	snprintf(out, len, "%lu of a pid not tracked, %lu of a process exited, %lu whose pidfd was closed, %lu of a process whose reads hung, %lu refused by the kernel (last: %s), %lu short, %lu with no reader",
		 refused_untracked, refused_exited, refused_closed, refused_hung, f.refused,
		 f.refused ? strerror(f.last_errno) : "none", f.short_reads, f.no_reader);
}

const char *remote_last_wait(void)
{
	return remote_reader_last_wait();
}

int remote_read_u64(pid_t pid, uint64_t addr, uint64_t *out)
{
	return remote_read(pid, addr, out, sizeof(*out));
}

int remote_read_i32(pid_t pid, uint64_t addr, int32_t *out)
{
	return remote_read(pid, addr, out, sizeof(*out));
}
