// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "parse_num.h"
#include "preflight.h"
#include "target_pick.h"

void target_cmdline(pid_t pid, char *out, size_t len)
{
	char path[64];
	size_t n = 0, i;
	FILE *f;

	out[0] = 0;
	snprintf(path, sizeof(path), "/proc/%d/cmdline", pid);
	f = fopen(path, "re");
	if (!f || len < 2) {
		if (f)
			fclose(f);
		return;
	}
	n = fread(out, 1, len - 1, f);
	fclose(f);
	while (n && out[n - 1] == 0)
		n--;
	for (i = 0; i < n; i++)
		if (out[i] == 0 || (unsigned char)out[i] < 0x20)
			out[i] = ' ';
	out[n] = 0;
}

pid_t target_match(const char *pattern, char *err, size_t errlen)
{
	char cmd[4096];
	pid_t self = getpid(), found = -1, pid;
	struct dirent *de;
	int matches = 0;
	DIR *dir = opendir("/proc");

	if (!dir) {
		snprintf(err, errlen, "cannot list /proc");
		return -1;
	}
	while ((de = readdir(dir))) {
		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		pid = atoi(de->d_name);
		if (pid == self || pid == getppid())
			continue;
		target_cmdline(pid, cmd, sizeof(cmd));
		if (!cmd[0] || !strstr(cmd, pattern))
			continue;
		if (!matches++)
			found = pid;
	}
	closedir(dir);
	if (matches == 1)
		return found;
	if (matches == 0)
		snprintf(err, errlen, "no process's command line contains '%s'", pattern);
	else
		snprintf(err, errlen, "%d processes' command lines contain '%s' (the first is %d): give --pid",
			 matches, pattern, found);
	return -1;
}

int target_open(pid_t pid, struct py_target *t, char *err, size_t errlen)
{
	if (preflight_pid(pid, err, errlen))
		return -1;
	if (py_target_find(pid, t, err, errlen) == PY_TARGET_OK &&
	    py_target_prepare(t, err, errlen) == PY_TARGET_OK)
		return 0;
	if (strstr(err, "Permission denied"))
		snprintf(err, errlen, "cannot read process %d's files and memory: Permission denied "
			 "(this needs CAP_SYS_PTRACE: run it as root, e.g. with sudo)", pid);
	return -1;
}

error_t target_pick_option(int key, char *arg, struct argp_state *state,
			   pid_t *pid, const char **match)
{
	switch (key) {
	case 'p':
		if (parse_pid(arg, pid))
			argp_error(state, "invalid pid: %s", arg);
		return 0;
	case 'm':
		if (!arg[0])
			argp_error(state, "empty --match pattern");
		*match = arg;
		return 0;
	case ARGP_KEY_END:
		if (!*pid == !*match)
			argp_error(state, "give one of --pid PID or --match PATTERN");
		return 0;
	default:
		return ARGP_ERR_UNKNOWN;
	}
}
