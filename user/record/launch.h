/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Starting the command to profile, and watching processes end. */
#ifndef EP_LAUNCH_H
#define EP_LAUNCH_H
#include <stddef.h>
#include <sys/types.h>

/* Forks and execs argv, in a new session (so a new process group, pgid =
 * pid, and no controlling terminal). Run as root under sudo (SUDO_UID, SUDO_GID set), the
 * command runs as that user, with their groups and HOME, unless keep_root.
 * Returns the child's pid once exec has succeeded, or -1 with err filled
 * (the command could not be run). */
pid_t launch_command(char *const argv[], int keep_root, char *err, size_t errlen);
/* A pidfd for pid that becomes readable when it exits, or -1. */
int watch_process(pid_t pid);
/* 1 if the process has exited (our child is left a zombie, for
 * end_launched to reap). */
int process_exited(pid_t pid, int pidfd, int is_child, int *status);
/* The end of a launched command: SIGTERM to its whole process group (what it
 * started too), then reaps it. */
void end_launched(pid_t pid, int *status);

#endif
