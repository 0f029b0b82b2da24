// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include "elf_syms.h"
#include "mapped_file.h"

/* Parses one /proc/PID/maps line; 0 for a file-backed mapping. */
int mapped_file_parse(const char *line, struct mapped_file *m)
{
	unsigned long long start, end, off;
	unsigned int major, minor;
	unsigned long inode;
	char perms[5] = "";
	int path_at = 0;
	size_t len;

	if (sscanf(line, "%llx-%llx %4s %llx %x:%x %lu %n",
		   &start, &end, perms, &off, &major, &minor, &inode, &path_at) < 7 || !path_at)
		return -1;
	if (line[path_at] != '/' || !inode)
		return -1;
	m->start = start;
	m->end = end;
	m->offset = off;
	m->inode = inode;
	m->exec = perms[2] == 'x';
	m->dev = makedev(major, minor);
	len = strcspn(line + path_at, "\n");
	if (len >= sizeof(m->path))
		return -1;	/* cut, it would name another file */
	memcpy(m->path, line + path_at, len);
	m->path[len] = 0;
	m->deleted = len > strlen(MAPPED_DELETED_SUFFIX) &&
		     !strcmp(m->path + len - strlen(MAPPED_DELETED_SUFFIX), MAPPED_DELETED_SUFFIX);
	return 0;
}

/* An O_PATH descriptor of path, resolved under dirfd without following
 * magic links (and, with in_root, with dirfd as "/" for absolute symlinks). */
static int open_path_beneath(int dirfd, const char *path, int in_root)
{
	struct open_how how = {
		.flags = O_PATH | O_CLOEXEC,
		.resolve = RESOLVE_NO_MAGICLINKS | (in_root ? RESOLVE_IN_ROOT : 0),
	};

	return syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
}

/*
 * Checks an O_PATH descriptor: a regular file with the mapping's inode
 * (and device, where the descriptor was reached by name). Then opens it
 * for reading through the descriptor itself: nothing is opened before
 * it is known to be a regular file, so a FIFO or a device node is never
 * opened at all. Returns the readable descriptor, or -1.
 */
static int reopen_checked(int pathfd, const struct mapped_file *m, int check_dev, struct stat *st)
{
	char self[64];
	struct stat again;
	int fd;

	if (pathfd < 0)
		return -1;
	if (fstat(pathfd, st) || !S_ISREG(st->st_mode) || st->st_ino != m->inode ||
	    (check_dev && st->st_dev != m->dev) || (uint64_t)st->st_size > ELF_FILE_MAX) {
		close(pathfd);
		return -1;
	}
	snprintf(self, sizeof(self), "/proc/self/fd/%d", pathfd);
	fd = open(self, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	close(pathfd);
	if (fd >= 0 && (fstat(fd, &again) || again.st_ino != st->st_ino ||
			again.st_dev != st->st_dev || !S_ISREG(again.st_mode))) {
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * A readable descriptor of the mapped file: through map_files (the very
 * file mapped, deleted or not; needs CAP_SYS_ADMIN), else by its name
 * under the target's root (containers), else by its name from ours
 * (chroots: /proc/PID/maps shows names from our root).
 */
int mapped_file_open(pid_t pid, const struct mapped_file *m, struct stat *st)
{
	char path[PATH_MAX + 64];
	int fd, rootfd;

	snprintf(path, sizeof(path), "/proc/%d/map_files/%llx-%llx", pid,
		 (unsigned long long)m->start, (unsigned long long)m->end);
	fd = reopen_checked(open(path, O_PATH | O_CLOEXEC), m, 0, st);
	if (fd >= 0 || m->deleted)
		return fd;
	snprintf(path, sizeof(path), "/proc/%d/root", pid);
	rootfd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rootfd >= 0) {
		fd = reopen_checked(open_path_beneath(rootfd, m->path, 1), m, 1, st);
		close(rootfd);
		if (fd >= 0)
			return fd;
	}
	return reopen_checked(open_path_beneath(AT_FDCWD, m->path, 0), m, 1, st);
}

