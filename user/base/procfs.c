// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "clock.h"
#include "line_read.h"
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

pid_t procfs_task_inner_tid(pid_t pid, pid_t tid)
{
	FILE *f = open_task_file(pid, tid, "status");
	char line[256], *p, *end;
	long v, inner = tid;

	if (!f)
		return tid;
	while (line_read(f, line, sizeof(line), NULL) >= 0) {
		if (strncmp(line, "NSpid:", 6))
			continue;
		for (p = line + 6; (v = strtol(p, &end, 10)) > 0 && end != p; p = end)
			inner = v;
		break;
	}
	fclose(f);
	return inner;
}

/* The fields of a task's stat after its comm, into buf (NUL-terminated);
 * NULL if unreadable. The comm may hold spaces and parentheses: the fields
 * start after its last ')'. */
static char *stat_after_comm(pid_t pid, pid_t tid, char *buf, size_t len)
{
	FILE *f = open_task_file(pid, tid, "stat");
	char *close;
	size_t n;

	if (!f)
		return NULL;
	n = fread(buf, 1, len - 1, f);
	fclose(f);
	buf[n] = 0;
	close = strrchr(buf, ')');
	return close && close[1] == ' ' ? close + 1 : NULL;
}

char procfs_task_state(pid_t pid, pid_t tid)
{
	char buf[512], *fields = stat_after_comm(pid, tid, buf, sizeof(buf));

	return fields ? fields[1] : 0;
}

int procfs_task_wchan(pid_t pid, pid_t tid, char *out, size_t len)
{
	FILE *f = open_task_file(pid, tid, "wchan");
	size_t n;

	if (!f)
		return -1;
	n = fread(out, 1, len - 1, f);
	fclose(f);
	out[n] = 0;
	/* "0": running, or the address hidden */
	return n && strcmp(out, "0") ? 0 : -1;
}

uint64_t procfs_cpu_ns(pid_t pid)
{
	char buf[1024], *fields = stat_after_comm(pid, 0, buf, sizeof(buf));
	unsigned long long utime, stime;

	/* fields 14 and 15, utime and stime, in clock ticks */
	if (!fields || sscanf(fields, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
			      &utime, &stime) != 2)
		return 0;
	return (utime + stime) * (1000000000ull / sysconf(_SC_CLK_TCK));
}

long procfs_task_syscall(pid_t pid, pid_t tid, uint64_t *arg0)
{
	uint64_t args[6];
	long nr = procfs_task_syscall_args(pid, tid, args);

	*arg0 = args[0];
	return nr;
}

long procfs_task_syscall_args(pid_t pid, pid_t tid, uint64_t args[6])
{
	FILE *f = open_task_file(pid, tid, "syscall");
	unsigned long a[6] = { 0 };
	long nr = -1;
	int i;

	if (f && fscanf(f, "%ld 0x%lx 0x%lx 0x%lx 0x%lx 0x%lx 0x%lx",
			&nr, &a[0], &a[1], &a[2], &a[3], &a[4], &a[5]) < 2)
		nr = -1;
	if (f)
		fclose(f);
	for (i = 0; i < 6; i++)
		args[i] = a[i];
	return nr;
}

/* se.exec_start of a task's sched file, in ns of the scheduler's task clock; 0 if unknown. */
static uint64_t task_exec_start_ns(pid_t pid, pid_t tid)
{
	FILE *f = open_task_file(pid, tid, "sched");
	char line[256];
	double ms = 0;

	if (!f)
		return 0;
	while (line_read(f, line, sizeof(line), NULL) >= 0)
		if (sscanf(line, "se.exec_start : %lf", &ms) == 1)
			break;
	fclose(f);
	return ms > 0 ? (uint64_t)(ms * 1e6) : 0;
}

/* The CPU a task last ran on (field 39 of its stat), or -1. */
static int task_last_cpu(pid_t pid, pid_t tid)
{
	char buf[1024], *p = stat_after_comm(pid, tid, buf, sizeof(buf));
	int field, cpu = -1;

	for (field = 3; p && field < 39; field++)
		p = strchr(p + 1, ' ');
	if (!p || sscanf(p + 1, "%d", &cpu) != 1)
		return -1;
	return cpu;
}

#define LAG_CPUS 1024
#define LAG_FRESH_NS 10000000000ull

/*
 * How far a CPU's task clock (rq_clock_task, which se.exec_start is on) is
 * behind CLOCK_MONOTONIC: it leaves out the time the CPU spent in interrupts
 * and, in a VM, stolen, so the gap grows with uptime and differs per CPU
 * (0.35 and 0.48 s here after 7 minutes). Measured by running this thread on
 * that CPU just after a sleep: its own exec_start is then its switch-in, now.
 * 0 (no correction) if this thread may not run there.
 */
static int64_t task_clock_lag_ns(int cpu)
{
	static int64_t lag[LAG_CPUS];
	static uint64_t measured[LAG_CPUS];
	struct timespec nap = { 0, 100000 };
	cpu_set_t was, only;
	uint64_t start, now = monotonic_ns();

	if (cpu < 0 || cpu >= LAG_CPUS || cpu >= CPU_SETSIZE)
		return 0;
	if (measured[cpu] && now - measured[cpu] < LAG_FRESH_NS)
		return lag[cpu];
	if (sched_getaffinity(0, sizeof(was), &was))
		return 0;
	CPU_ZERO(&only);
	CPU_SET(cpu, &only);
	if (sched_setaffinity(0, sizeof(only), &only))
		return 0;
	nanosleep(&nap, NULL);
	start = task_exec_start_ns(getpid(), gettid());
	now = monotonic_ns();
	sched_setaffinity(0, sizeof(was), &was);
	if (!start || start > now)
		return 0;
	lag[cpu] = (int64_t)(now - start);
	measured[cpu] = now;
	return lag[cpu];
}

uint64_t procfs_task_last_ran_ns(pid_t pid, pid_t tid)
{
	uint64_t start = task_exec_start_ns(pid, tid);

	return start ? start + task_clock_lag_ns(task_last_cpu(pid, tid)) : 0;
}

int procfs_each_task(pid_t pid, int (*fn)(pid_t tid, void *ctx), void *ctx)
{
	char path[64];
	struct dirent *de;
	DIR *dir;
	int tid;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	dir = opendir(path);
	if (!dir)
		return -1;
	while ((de = readdir(dir))) {
		tid = atoi(de->d_name);
		if (tid > 0 && fn(tid, ctx))
			break;
	}
	closedir(dir);
	return 0;
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
	buf[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/cmdline", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n <= 0) {
		buf[0] = '\0';
		return -1;
	}
	return cmdline_to_line(buf, n) ? 0 : -1;
}

unsigned long long procfs_start_time(pid_t pid)
{
	char buf[1024], *p = stat_after_comm(pid, 0, buf, sizeof(buf));
	unsigned long long start = 0;
	int field;

	/* p is at the space before field 3 (state); start time is field 22 */
	for (field = 3; p && field < 22; field++)
		p = strchr(p + 1, ' ');
	if (!p || sscanf(p + 1, "%llu", &start) != 1)
		start = 0;
	return start;
}
