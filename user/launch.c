// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "launch.h"

pid_t launch_command(char *const argv[], char *err, size_t errlen)
{
	int pipefd[2], child_errno = 0;
	pid_t pid;
	ssize_t n;

	/* close-on-exec pipe: EOF tells the parent exec succeeded, an errno that it failed */
	if (pipe2(pipefd, O_CLOEXEC)) {
		snprintf(err, errlen, "pipe: %s", strerror(errno));
		return -1;
	}
	pid = fork();
	if (pid < 0) {
		snprintf(err, errlen, "fork: %s", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		close(pipefd[0]);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		execvp(argv[0], argv);
		child_errno = errno;
		if (write(pipefd[1], &child_errno, sizeof(child_errno)) < 0)
			_exit(127);
		_exit(127);
	}
	close(pipefd[1]);
	do
		n = read(pipefd[0], &child_errno, sizeof(child_errno));
	while (n < 0 && errno == EINTR);
	close(pipefd[0]);
	if (n > 0) {
		waitpid(pid, NULL, 0);
		snprintf(err, errlen, "cannot run %s: %s", argv[0], strerror(child_errno));
		return -1;
	}
	return pid;
}

int watch_process(pid_t pid)
{
	return syscall(SYS_pidfd_open, pid, 0);
}

int process_exited(pid_t pid, int pidfd, int is_child, int *status)
{
	struct pollfd pfd = { .fd = pidfd, .events = POLLIN };
	char path[64];

	if (is_child)
		return waitpid(pid, status, WNOHANG) == pid;
	if (pidfd >= 0)
		return poll(&pfd, 1, 0) > 0;
	snprintf(path, sizeof(path), "/proc/%d", pid);
	return access(path, F_OK) != 0;
}
