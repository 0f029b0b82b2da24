/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Every file ebpfprof writes (profiles, GC logs, diff reports) is written
 * here, and only here, so that each gets the same guarantees:
 *  - never half a file: written to a hidden temporary file in the same
 *    directory, fsync'ed, then renamed over the name;
 *  - never anything but a regular file replaced: an existing device, FIFO,
 *    socket, symlink or directory at the name is refused (-o /dev/null as
 *    root must not replace the system's device node);
 *  - a file created gets mode 0666 less the umask, and run as root under
 *    sudo, the user who ran sudo (SUDO_UID/SUDO_GID) as its owner;
 *  - a file replaced keeps its owner, group and permissions: under sudo,
 *    -o /etc/passwd must not hand root's file to the user who ran sudo.
 *    Only a file ebpfprof created (the name did not exist when it was
 *    renamed into place, RENAME_NOREPLACE) or one that user owned already
 *    ends up theirs.
 */
#ifndef EP_ATOMIC_FILE_H
#define EP_ATOMIC_FILE_H
#include <stdio.h>

/*
 * Writes path: fn writes the whole content to f and returns 0, or -1 with
 * errno set. Returns 0, or -1 with errno set (EEXIST: path exists and is
 * not a regular file; EISDIR: it is a directory); path is then untouched.
 */
int atomic_file_write(const char *path, int binary,
		      int (*fn)(FILE *f, void *ctx), void *ctx);

/*
 * As atomic_file_write(), for a file only ebpfprof reads back (--push's
 * spool): mode 0600, owned by the effective user (never handed to the sudo
 * user), binary, and a new name only: anything at path already, a file
 * included, is left alone and the write fails with EEXIST.
 */
int atomic_file_write_private(const char *path, int (*fn)(FILE *f, void *ctx), void *ctx);

/* 0 if path may be written: it does not exist or is a regular file; else
 * -1 with errno EISDIR (a directory), EEXIST (something else) or ENOENT (""). */
int atomic_file_check(const char *path);

/* Why path cannot be written, for an errno atomic_file_*() set. */
const char *atomic_file_strerror(int err);

/* Removes the temporary file of a write under way (async-signal-safe). */
void atomic_file_abandon(void);

#endif
