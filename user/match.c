// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "match.h"

int matcher_init(struct proc_matcher *m, const char *pattern, char *err, size_t errlen)
{
	char why[256];
	int rc = regcomp(&m->re, pattern, REG_EXTENDED | REG_NOSUB);

	if (!rc)
		return 0;
	regerror(rc, &m->re, why, sizeof(why));
	snprintf(err, errlen, "invalid --match regular expression '%s': %s", pattern, why);
	return -1;
}

void matcher_free(struct proc_matcher *m)
{
	regfree(&m->re);
}

int matcher_matches(const struct proc_matcher *m, const char *cmdline)
{
	return regexec(&m->re, cmdline, 0, NULL, 0) == 0;
}

size_t cmdline_to_line(char *buf, size_t n)
{
	/* the last argument's terminating NUL is not a separator */
	while (n && buf[n - 1] == '\0')
		n--;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = buf[i];

		if (c == '\0')
			buf[i] = ' ';
		else if (c < 0x20 || c == 0x7f)
			buf[i] = '?';
	}
	buf[n] = '\0';
	return n;
}

int procfs_cmdline(pid_t pid, char *buf, size_t len)
{
	char path[64];
	ssize_t n;
	int fd;

	if (len < 2)
		return -1;
	snprintf(path, sizeof(path), "/proc/%d/cmdline", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n <= 0)
		return -1;
	return cmdline_to_line(buf, n) ? 0 : -1;
}

static pid_t parse_pid(const char *name)
{
	char *end;
	long v = strtol(name, &end, 10);

	return *end || end == name || v <= 0 ? 0 : (pid_t)v;
}

int matcher_scan(const struct proc_matcher *m,
		 void (*fn)(void *ctx, pid_t pid, const char *cmdline), void *ctx)
{
	char cmdline[MATCH_CMDLINE_MAX];
	pid_t self = getpid(), parent = getppid();
	struct dirent *de;
	DIR *d = opendir("/proc");

	if (!d)
		return -1;
	while ((de = readdir(d))) {
		pid_t pid = parse_pid(de->d_name);

		if (!pid || pid == self || pid == parent)
			continue;
		if (procfs_cmdline(pid, cmdline, sizeof(cmdline)))
			continue;
		if (matcher_matches(m, cmdline))
			fn(ctx, pid, cmdline);
	}
	closedir(d);
	return 0;
}
