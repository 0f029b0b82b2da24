// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "match.h"
#include "parse_num.h"

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

int matcher_valid(const char *pattern, char *err, size_t errlen)
{
	struct proc_matcher m;

	if (matcher_init(&m, pattern, err, errlen))
		return -1;
	matcher_free(&m);
	return 0;
}

int matcher_matches(const struct proc_matcher *m, const char *cmdline)
{
	return regexec(&m->re, cmdline, 0, NULL, 0) == 0;
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
		pid_t pid;

		if (parse_pid(de->d_name, &pid) || pid == self || pid == parent)
			continue;
		if (procfs_cmdline(pid, cmdline, sizeof(cmdline)))
			continue;
		if (matcher_matches(m, cmdline))
			fn(ctx, pid, cmdline);
	}
	closedir(d);
	return 0;
}
