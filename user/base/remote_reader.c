// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The reader process (see remote_reader.h). One request at a time: the
 * caller fills the shared page's request and bumps `req`; the reader reads
 * into the shared bounce buffer, sets `done` to `req` and wakes the caller,
 * who waits on `done` for at most REMOTE_READ_TIMEOUT_NS. The bounce buffer
 * is the reader's to write, never the caller's memory: a reader killed (or
 * stuck) in the middle of a read can write nothing of ours afterwards.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <linux/futex.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "procfs.h"
#include "remote_reader.h"

#ifndef P_PIDFD
#define P_PIDFD	3
#endif

/* Bytes one request reads at most; a longer read is several requests. */
#define BOUNCE_BYTES	(256u << 10)

struct shared {
	uint32_t req;		/* futex: the caller's request number */
	uint32_t done;		/* futex: the last request answered */
	uint32_t taken;		/* the last request the reader began */
	pid_t pid;
	uint64_t addr, len;
	int64_t got;		/* bytes read, or -errno */
	unsigned char data[BOUNCE_BYTES] __attribute__((aligned(64)));
};

static struct {
	struct shared *sh;
	pid_t owner;		/* the process that started it (a fork of ours is not it) */
	pid_t pid;
	int pidfd;
} reader = { .pidfd = -1 };

/* Readers killed and not yet reaped (their pidfds). */
static int stuck[REMOTE_STUCK_MAX];
static unsigned nstuck;

static struct bad_range {
	pid_t pid;
	uint64_t from, to;
} bad[REMOTE_BAD_RANGES];
static unsigned nbad, bad_next;
static unsigned long timeouts;

static long futex(uint32_t *word, int op, uint32_t val, const struct timespec *timeout)
{
	return syscall(SYS_futex, word, op, val, timeout, NULL, 0);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* The reader's whole life: nothing but these system calls, no allocation. */
static __attribute__((noreturn)) void serve(struct shared *sh, uint32_t seen)
{
	struct iovec local = { .iov_base = sh->data }, remote;
	uint32_t req;
	ssize_t n;

	for (;;) {
		req = __atomic_load_n(&sh->req, __ATOMIC_ACQUIRE);
		if (req == seen) {
			futex(&sh->req, FUTEX_WAIT, seen, NULL);
			continue;
		}
		__atomic_store_n(&sh->taken, req, __ATOMIC_RELEASE);
		local.iov_len = sh->len;
		remote.iov_base = (void *)(uintptr_t)sh->addr;
		remote.iov_len = sh->len;
		n = process_vm_readv(sh->pid, &local, 1, &remote, 1, 0);
		sh->got = n < 0 ? -errno : n;
		seen = req;
		__atomic_store_n(&sh->done, req, __ATOMIC_RELEASE);
		futex(&sh->done, FUTEX_WAKE, 1, NULL);
	}
}

/* In the reader, first: it dies with us, holds none of our descriptors and
 * runs none of our signal handlers (every signal stays blocked). */
static void become_reader(struct shared *sh, pid_t parent)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(0);
	prctl(PR_SET_NAME, REMOTE_READER_COMM);	/* not taken for a recording in ps */
	syscall(SYS_close_range, 0, ~0u, 0);
	serve(sh, 0);	/* a fresh page: requests count from 1 */
}

/* Reaps the readers killed before that are gone by now. */
static void reap_stuck(void)
{
	siginfo_t info;
	unsigned i = 0;

	while (i < nstuck) {
		memset(&info, 0, sizeof(info));
		if (waitid(P_PIDFD, stuck[i], &info, WEXITED | WNOHANG | __WALL) == 0 && info.si_pid) {
			close(stuck[i]);
			stuck[i] = stuck[--nstuck];
		} else {
			i++;
		}
	}
}

/* Forgets a reader inherited through a fork: it is our parent's. */
static void forget_inherited(void)
{
	unsigned i;

	if (!reader.sh || reader.owner == getpid())
		return;
	munmap(reader.sh, sizeof(*reader.sh));
	close(reader.pidfd);
	reader.sh = NULL;
	reader.pidfd = -1;
	for (i = 0; i < nstuck; i++)
		close(stuck[i]);
	nstuck = 0;
}

/* Starts a reader: a fork with no exit signal (a waitpid(-1) of ours never
 * takes it), held by a pidfd. 0, or -1. */
static int start_reader(void)
{
	struct clone_args args = { .flags = CLONE_PIDFD, .exit_signal = 0 };
	struct shared *sh;
	sigset_t all, old;
	pid_t parent = getpid(), pid;
	int pidfd = -1;

	reap_stuck();
	if (nstuck >= REMOTE_STUCK_MAX)
		return -1;
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		return -1;
	args.pidfd = (uintptr_t)&pidfd;
	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, &old);
	pid = syscall(SYS_clone3, &args, sizeof(args));
	/* container runtimes' seccomp profiles refuse clone3 (ENOSYS) so that
	 * libc falls back to clone: so do we (flags, stack, &pidfd, ...) */
	if (pid < 0 && errno == ENOSYS)
		pid = syscall(SYS_clone, CLONE_PIDFD, NULL, &pidfd, NULL, NULL);
	if (pid == 0)
		become_reader(sh, parent);
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (pid < 0) {
		munmap(sh, sizeof(*sh));
		return -1;
	}
	reader.sh = sh;
	reader.owner = parent;
	reader.pid = pid;
	reader.pidfd = pidfd;
	return 0;
}

/* Kills the reader (it did not answer in time) and forgets it: reaped later. */
static void give_up_reader(void)
{
	syscall(SYS_pidfd_send_signal, reader.pidfd, SIGKILL, NULL, 0);
	munmap(reader.sh, sizeof(*reader.sh));
	reader.sh = NULL;
	stuck[nstuck++] = reader.pidfd;
	reader.pidfd = -1;
	reap_stuck();
}

static int in_bad_range(pid_t pid, uint64_t addr, uint64_t len)
{
	unsigned i;

	for (i = 0; i < nbad; i++)
		if (bad[i].pid == pid && addr < bad[i].to && addr + len > bad[i].from)
			return 1;
	return 0;
}

/* The pages of a read that timed out: not read again. */
static void note_bad_range(pid_t pid, uint64_t addr, uint64_t len)
{
	uint64_t page = 4096;

	bad[bad_next] = (struct bad_range){ pid, addr & ~(page - 1), (addr + len + page - 1) & ~(page - 1) };
	bad_next = (bad_next + 1) % REMOTE_BAD_RANGES;
	if (nbad < REMOTE_BAD_RANGES)
		nbad++;
}

enum reader_verdict {
	READER_BUSY,		/* only waiting for a CPU, a lock or I/O: more time */
	READER_STUCK,		/* asleep in its read: a page that does not come */
	READER_GONE,		/* dead (killed by someone, or its parent thread ended) */
};

/* Reads that failed in the reader, by why (the summary's account of them). */
static struct remote_reader_failures failures;

/* Where the last reader given up on was waiting (its wchan), for the summary. */
static char given_up_in[48];

/*
 * Whether a reader asleep in its read waits for a page only the target (or
 * a daemon) may never serve: a userfaultfd's handler, a FUSE request. Any
 * other wait (the target's mmap lock, a page from disk, memory reclaim)
 * ends by itself, but may outlast the deadline on a loaded host: those get
 * up to the hard limit. A wait the kernel does not name counts as stuck.
 */
static int waits_for_unserved_page(pid_t pid)
{
	if (procfs_task_wchan(pid, 0, given_up_in, sizeof(given_up_in)))
		snprintf(given_up_in, sizeof(given_up_in), "an unnamed wait");
	return !strcmp(given_up_in, "handle_userfault") ||
	       !strcmp(given_up_in, "request_wait_answer") ||
	       !strncmp(given_up_in, "fuse_", 5) ||
	       !strcmp(given_up_in, "an unnamed wait");
}

/* At the deadline: whether the reader is waiting for a page that may never
 * come (asleep in its read, in a wait only the target ends), or for a CPU
 * (the request not begun yet, or the reader runnable), a lock or I/O on a
 * loaded machine, which get more time, up to the hard limit. */
static enum reader_verdict judge_reader(uint32_t req, uint64_t now, uint64_t hard_deadline)
{
	/* R running or waiting for a CPU; D, S asleep; 0 gone */
	char state = procfs_task_state(reader.pid, 0);

	if (!state || state == 'Z' || state == 'X')
		return READER_GONE;
	if (now >= hard_deadline) {
		waits_for_unserved_page(reader.pid);	/* where, for the summary */
		return READER_STUCK;
	}
	if (__atomic_load_n(&reader.sh->taken, __ATOMIC_ACQUIRE) != req || state == 'R')
		return READER_BUSY;
	return waits_for_unserved_page(reader.pid) ? READER_STUCK : READER_BUSY;
}

/* Waits until the reader answered request req, at most until deadline
 * (later while it only waits for a CPU): 0, or READER_STUCK or _GONE. */
static int wait_answer(uint32_t req, uint64_t deadline)
{
	enum reader_verdict verdict;
	uint64_t hard_deadline = deadline + REMOTE_READ_TIMEOUT_NS * (REMOTE_READ_GRACE - 1), now;
	uint32_t done;

	while ((done = __atomic_load_n(&reader.sh->done, __ATOMIC_ACQUIRE)) != req) {
		struct timespec left;

		now = now_ns();
		if (now >= deadline) {
			verdict = judge_reader(req, now, hard_deadline);
			if (verdict != READER_BUSY)
				return verdict;
			deadline = now + REMOTE_READ_TIMEOUT_NS / 10;
		}
		left.tv_sec = (deadline - now) / 1000000000ull;
		left.tv_nsec = (deadline - now) % 1000000000ull;
		futex(&reader.sh->done, FUTEX_WAIT, done, &left);
	}
	return 0;
}

/* One request of at most BOUNCE_BYTES; READER_GONE if the reader died. */
static int ask_reader(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct shared *sh;
	uint32_t req;
	int waited;

	forget_inherited();
	if (!reader.sh && start_reader()) {
		failures.no_reader++;
		return RR_FAILED;
	}
	sh = reader.sh;
	sh->pid = pid;
	sh->addr = addr;
	sh->len = len;
	req = sh->req + 1;
	__atomic_store_n(&sh->req, req, __ATOMIC_RELEASE);
	futex(&sh->req, FUTEX_WAKE, 1, NULL);
	waited = wait_answer(req, now_ns() + REMOTE_READ_TIMEOUT_NS);
	if (waited == READER_GONE) {
		give_up_reader();	/* reaped; the next request starts another */
		return READER_GONE;
	}
	if (waited == READER_STUCK) {
		timeouts++;
		note_bad_range(pid, addr, len);
		give_up_reader();
		return RR_TIMED_OUT;
	}
	if (sh->got != (int64_t)len) {
		if (sh->got < 0) {
			failures.refused++;
			failures.last_errno = -sh->got;
		} else {
			failures.short_reads++;
		}
		return RR_FAILED;
	}
	memcpy(buf, sh->data, len);
	return RR_OK;
}

/* One request, asked again of a new reader if the first died before it
 * answered (killed by someone else: not the target's doing). */
static int read_chunk(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	int rc = ask_reader(pid, addr, buf, len);

	if (rc == READER_GONE)
		rc = ask_reader(pid, addr, buf, len);
	return rc == READER_GONE ? RR_FAILED : rc;
}

int remote_reader_read(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	size_t off, n;
	int rc;

	if (in_bad_range(pid, addr, len))
		return RR_FAILED;	/* at once: its time was spent the first time */
	for (off = 0; off < len; off += n) {
		n = len - off < BOUNCE_BYTES ? len - off : BOUNCE_BYTES;
		rc = read_chunk(pid, addr + off, (char *)buf + off, n);
		if (rc)
			return rc;
	}
	return RR_OK;
}

unsigned long remote_reader_timeouts(void)
{
	return timeouts;
}

void remote_reader_failures(struct remote_reader_failures *out)
{
	*out = failures;
}

const char *remote_reader_last_wait(void)
{
	return given_up_in;
}

void remote_reader_stop(void)
{
	forget_inherited();
	if (reader.sh)
		give_up_reader();
}
