/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The files a target maps, opened safely: through /proc/PID/map_files (the
 * very file mapped, even deleted; needs CAP_SYS_ADMIN), else by name with
 * openat2(RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS) under the target's
 * /proc/PID/root, else by name from ours (chroots). Every candidate is opened
 * O_PATH and fstat'ed first: only a regular file with the inode (and, by
 * name, the device) /proc/PID/maps shows, at most ELF_FILE_MAX bytes, is
 * then opened for reading (O_NONBLOCK) through that descriptor.
 */
#ifndef EP_MAPPED_FILE_H
#define EP_MAPPED_FILE_H
#include <limits.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#define MAPPED_DELETED_SUFFIX	" (deleted)"

struct mapped_file {
	uint64_t start, end, offset;
	unsigned long inode;
	dev_t dev;
	int exec;		/* mapped executable (x in its permissions) */
	int deleted;		/* the path ended in " (deleted)" (kept in path) */
	char path[PATH_MAX];
};

/* Parses one /proc/PID/maps line; 0 for a file-backed mapping. */
int mapped_file_parse(const char *line, struct mapped_file *m);
/* A readable descriptor of the file of mapping m of process pid, or -1;
 * *st is its fstat. */
int mapped_file_open(pid_t pid, const struct mapped_file *m, struct stat *st);

#endif
