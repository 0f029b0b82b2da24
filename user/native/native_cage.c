// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include "native_cage.h"
#include "native_dwfl.h"
#include "native_proto.h"
#include "native_sandbox.h"

/* The helper's descriptors: its end of the socket, the shared progress page. */
#define CAGE_SOCK_FD		3
#define CAGE_PROGRESS_FD	4
#define CAGE_PAGE		4096

extern char **environ;

/* In the fork: the two descriptors at 3 and 4, stdin and stdout on
 * /dev/null (stdout may be dump's output), stderr kept for a failed setup,
 * nothing else open, out of the terminal's session (a Ctrl-C is ebpfprof's
 * to handle), no new privileges from the exec (file capabilities), then
 * ebpfprof again, as the helper. */
static void exec_helper(int sock, int progress)
{
	char *argv[] = { "ebpfprof", NATIVE_CAGE_ARG, NULL };
	int s = fcntl(sock, F_DUPFD, 10), p = fcntl(progress, F_DUPFD, 10);
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);

	if (s < 0 || p < 0 || null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 ||
	    dup2(s, CAGE_SOCK_FD) < 0 || dup2(p, CAGE_PROGRESS_FD) < 0)
		_exit(127);
	syscall(SYS_close_range, CAGE_PROGRESS_FD + 1, ~0u, 0);
	setsid();
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
	execve("/proc/self/exe", argv, environ);
	_exit(127);
}

static int shared_page(volatile uint64_t **page)
{
	int fd = memfd_create("ebpfprof-native-progress", MFD_CLOEXEC);
	void *p;

	if (fd < 0 || ftruncate(fd, CAGE_PAGE)) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	p = mmap(NULL, CAGE_PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		close(fd);
		return -1;
	}
	*page = p;
	return fd;
}

int native_cage_start(struct native_cage *c)
{
	int sv[2], progress;

	memset(c, 0, sizeof(*c));
	c->sock = -1;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv))
		return -1;
	progress = shared_page(&c->progress);
	if (progress < 0)
		goto fail;
	c->pid = fork();
	if (c->pid == 0)
		exec_helper(sv[1], progress);
	close(progress);
	if (c->pid < 0)
		goto fail;
	close(sv[1]);
	c->sock = sv[0];
	return 0;
fail:
	if (c->progress)
		munmap((void *)c->progress, CAGE_PAGE);
	close(sv[0]);
	close(sv[1]);
	memset(c, 0, sizeof(*c));
	c->sock = -1;
	return -1;
}

void native_cage_stop(struct native_cage *c)
{
	if (c->pid > 0) {
		kill(c->pid, SIGKILL);
		while (waitpid(c->pid, NULL, 0) < 0 && errno == EINTR)
			;
	}
	if (c->sock >= 0)
		close(c->sock);
	if (c->progress)
		munmap((void *)c->progress, CAGE_PAGE);
	memset(c, 0, sizeof(*c));
	c->sock = -1;
}

/* ---- the helper's side ---- */

static uint8_t request_buf[NP_MSG_MAX], reply_buf[NP_MSG_MAX], aux_buf[NP_MSG_MAX];

/* The next message from the parent (blocking): its length, or -1 (gone). */
static ssize_t next_message(uint8_t *buf, int *fd)
{
	struct pollfd pfd = { CAGE_SOCK_FD, POLLIN, 0 };

	while (poll(&pfd, 1, -1) < 0)
		if (errno != EINTR)
			return -1;
	return np_recv(CAGE_SOCK_FD, buf, fd);
}

/* libdwfl wants module id's file: asked of the parent, which sends its
 * descriptor (or none). */
static int file_of(void *arg, uint32_t id)
{
	struct np_request req;
	ssize_t n;
	int fd;

	(void)arg;
	if (np_send(CAGE_SOCK_FD, aux_buf, np_encode_u32(aux_buf, NP_ASK_FD, id), -1))
		exit(0);
	n = next_message(aux_buf, &fd);
	if (n < 0 || np_decode_request(aux_buf, n, &req) || req.type != NP_FD)
		exit(0);
	if (req.fd_ok && fd >= 0)
		return fd;
	if (fd >= 0)
		close(fd);
	return -1;
}

/* One request answered: 0, or -1 when the helper should end. */
static int serve(struct native_dwfl *d, const uint8_t *msg, size_t len)
{
	static struct np_reply rep;
	struct np_request req;
	size_t out;

	if (np_decode_request(msg, len, &req))
		return -1;
	switch (req.type) {
	case NP_REPORT:
		native_dwfl_report(d, &req);
		/* the type alone */
		out = np_encode_u32(reply_buf, NP_REPORTED, 0) - sizeof(uint32_t);
		break;
	case NP_UNWIND:
		native_dwfl_unwind(d, &req, &rep);
		out = np_encode_unwound(reply_buf, &rep);
		break;
	case NP_SYMBOLIZE:
		native_dwfl_symbolize(d, req.pc, &rep);
		out = np_encode_symbol(reply_buf, &rep);
		break;
	default:
		return -1;
	}
	return np_send(CAGE_SOCK_FD, reply_buf, out, -1);
}

int native_cage_main(void)
{
	volatile uint64_t *progress;
	struct native_dwfl *d;
	const char *why = "";
	ssize_t n;

	progress = mmap(NULL, CAGE_PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, CAGE_PROGRESS_FD, 0);
	close(CAGE_PROGRESS_FD);
	if (progress == MAP_FAILED || native_sandbox_enter(&why)) {
		fprintf(stderr, "ebpfprof: the native unwinder's cage cannot be set up (%s): %s\n",
			why, strerror(errno));
		return 1;
	}
	prctl(PR_SET_PDEATHSIG, SIGKILL);	/* cleared by the change of uid */
	d = native_dwfl_new(file_of, NULL, progress);
	if (!d)
		return 1;
	while ((n = next_message(request_buf, NULL)) >= 0)
		if (serve(d, request_buf, n))
			break;
	return 0;
}
