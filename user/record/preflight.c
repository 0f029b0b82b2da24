// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#define _GNU_SOURCE
#include <errno.h>
#include <libgen.h>
#include <linux/capability.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "preflight.h"
#include "atomic_file.h"
#include "line_read.h"

#ifndef CAP_PERFMON
#define CAP_PERFMON	38
#endif
#ifndef CAP_BPF
#define CAP_BPF		39
#endif

int preflight_btf(char *err, size_t errlen)
{
	if (access("/sys/kernel/btf/vmlinux", R_OK) == 0)
		return 0;
	snprintf(err, errlen, "this kernel has no BTF (/sys/kernel/btf/vmlinux is missing): ebpfprof needs a kernel built with CONFIG_DEBUG_INFO_BTF=y (5.8 or later)");
	return -1;
}

static int has_cap(const struct __user_cap_data_struct *d, int cap)
{
	return (d[cap / 32].effective >> (cap % 32)) & 1;
}

/* This process's capabilities: 0, or -1 with errno. */
static int read_caps(struct __user_cap_data_struct data[2])
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };

	memset(data, 0, 2 * sizeof(*data));
	return syscall(SYS_capget, &hdr, data) ? -1 : 0;
}

int preflight_sys_admin(void)
{
	struct __user_cap_data_struct data[2];

	return read_caps(data) == 0 && has_cap(data, CAP_SYS_ADMIN);
}

int preflight_privileges(char *err, size_t errlen)
{
	struct __user_cap_data_struct data[2];
	char missing[128] = "";
	int admin;

	if (read_caps(data)) {
		snprintf(err, errlen, "cannot read this process's capabilities: %s", strerror(errno));
		return -1;
	}
	admin = has_cap(data, CAP_SYS_ADMIN);
	if (!has_cap(data, CAP_BPF) && !admin)
		strcat(missing, ", CAP_BPF");
	if (!has_cap(data, CAP_PERFMON) && !admin)
		strcat(missing, ", CAP_PERFMON");
	if (!has_cap(data, CAP_SYS_PTRACE))
		strcat(missing, ", CAP_SYS_PTRACE");
	if (!missing[0])
		return 0;
	snprintf(err, errlen, "missing privileges: ebpfprof needs CAP_BPF, CAP_PERFMON and CAP_SYS_PTRACE; this process lacks %s (run it as root, e.g. with sudo)",
		 missing + 2);
	return -1;
}

/* The thread group (process) task tid belongs to, or -1. /proc/TID exists
 * for every thread, though it is not listed. */
static pid_t thread_group_of(pid_t tid)
{
	char path[64], line[128];
	pid_t tgid = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", tid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (line_read(f, line, sizeof(line), NULL) >= 0)
		if (sscanf(line, "Tgid: %d", &tgid) == 1)
			break;
	fclose(f);
	return tgid;
}

int preflight_pid(pid_t pid, char *err, size_t errlen)
{
	pid_t tgid = pid > 0 ? thread_group_of(pid) : -1;

	if (tgid == pid)
		return 0;
	if (tgid > 0)
		snprintf(err, errlen, "%d is a thread of process %d, not a process: give --pid %d",
			 pid, tgid, tgid);
	else
		snprintf(err, errlen, "no such process: %d", pid);
	return -1;
}

int preflight_output(const char *path, char *err, size_t errlen)
{
	char *copy = strdup(path), *dir, tmp[4096];
	struct stat st;
	int fd, saved;

	if (!copy)
		return -1;
	dir = dirname(copy);
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "cannot write %s: it is a directory", path);
		free(copy);
		return -1;
	}
	if (atomic_file_check(path)) {
		snprintf(err, errlen, "cannot write %s: it exists and is not a regular file (devices, FIFOs, sockets and symlinks are never replaced)",
			 path);
		free(copy);
		return -1;
	}
	snprintf(tmp, sizeof(tmp), "%s/.ebpfprof-check-XXXXXX", dir);
	fd = mkstemp(tmp);
	saved = errno;
	free(copy);
	if (fd < 0) {
		snprintf(err, errlen, "cannot write %s: %s", path, strerror(saved));
		return -1;
	}
	close(fd);
	unlink(tmp);
	return 0;
}
