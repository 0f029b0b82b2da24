// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "launch.h"
#include "sudo_user.h"

/*
 * In the child, before exec: become the user who ran sudo, with their
 * groups and HOME, as the command would run without sudo. Any failure is
 * fatal: running it as root instead is what must not happen.
 */
static int drop_to_sudo_user(uid_t uid, gid_t gid)
{
	struct passwd *pw = getpwuid(uid);

	if (pw ? initgroups(pw->pw_name, gid) : setgroups(0, NULL))
		return -1;
	if (setgid(gid) || setuid(uid))
		return -1;
	if (setuid(0) == 0)
		return -1;	/* root could be regained: not dropped */
	if (pw) {
		setenv("HOME", pw->pw_dir, 1);
		setenv("USER", pw->pw_name, 1);
		setenv("LOGNAME", pw->pw_name, 1);
	}
	return 0;
}

pid_t launch_command(char *const argv[], int keep_root, char *err, size_t errlen)
{
	uid_t uid = 0;
	gid_t gid = 0;
	int drop = !keep_root && sudo_user(&uid, &gid);
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
		/* a session of its own: no controlling terminal, so it cannot push
		 * input into the caller's (TIOCSTI) nor get its Ctrl-C; and a process
		 * group that ebpfprof ends whole, grandchildren included */
		if (setsid() < 0) {
			child_errno = errno;
			if (write(pipefd[1], &child_errno, sizeof(child_errno)) < 0)
				_exit(127);
			_exit(127);
		}
		if (drop && drop_to_sudo_user(uid, gid)) {
			child_errno = errno ? errno : EPERM;
			if (write(pipefd[1], &child_errno, sizeof(child_errno)) < 0)
				_exit(127);
			_exit(127);
		}
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

void end_launched(pid_t pid, int *status)
{
	kill(-pid, SIGTERM);
	while (waitpid(pid, status, 0) < 0 && errno == EINTR)
		;
}

int watch_process(pid_t pid)
{
	return syscall(SYS_pidfd_open, pid, 0);
}

int process_exited(pid_t pid, int pidfd, int is_child, int *status)
{
	struct pollfd pfd = { .fd = pidfd, .events = POLLIN };
	siginfo_t info = { 0 };
	char path[64];

	(void)status;
	/* not reaped (WNOWAIT): while it is a zombie its pid, which is its
	 * process group's id, cannot be reused, so ending the group later
	 * cannot reach a stranger */
	if (is_child)
		return !waitid(P_PID, pid, &info, WEXITED | WNOHANG | WNOWAIT) && info.si_pid == pid;
	if (pidfd >= 0)
		return poll(&pfd, 1, 0) > 0;
	snprintf(path, sizeof(path), "/proc/%d", pid);
	return access(path, F_OK) != 0;
}
