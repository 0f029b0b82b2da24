// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <stdio.h>
#include <string.h>
#include "procfs.h"

static FILE *open_task_file(pid_t pid, pid_t tid, const char *name)
{
	char path[96];

	if (tid)
		snprintf(path, sizeof(path), "/proc/%d/task/%d/%s", pid, tid, name);
	else
		snprintf(path, sizeof(path), "/proc/%d/%s", pid, name);
	return fopen(path, "re");
}

void procfs_comm(pid_t pid, pid_t tid, char *out, size_t len)
{
	FILE *f = open_task_file(pid, tid, "comm");

	out[0] = 0;
	if (!f)
		return;
	if (fgets(out, len, f))
		out[strcspn(out, "\n")] = 0;
	fclose(f);
}

char procfs_task_state(pid_t pid, pid_t tid)
{
	FILE *f = open_task_file(pid, tid, "stat");
	char buf[512], *close;
	size_t n;

	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	close = strrchr(buf, ')');	/* the comm may contain spaces and parentheses */
	return close && close[1] == ' ' ? close[2] : 0;
}

long procfs_task_syscall(pid_t pid, pid_t tid, uint64_t *arg0)
{
	FILE *f = open_task_file(pid, tid, "syscall");
	unsigned long a0 = 0;
	long nr = -1;

	if (!f)
		return -1;
	if (fscanf(f, "%ld 0x%lx", &nr, &a0) != 2)
		nr = -1;
	fclose(f);
	*arg0 = a0;
	return nr;
}
