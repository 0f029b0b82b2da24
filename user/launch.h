/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Starting the command to profile, and watching processes end. */
#ifndef EP_LAUNCH_H
#define EP_LAUNCH_H
#include <stddef.h>
#include <sys/types.h>

/* Forks and execs argv. Returns the child's pid once exec has succeeded, or
 * -1 with err filled (the command could not be run). */
pid_t launch_command(char *const argv[], char *err, size_t errlen);
/* A pidfd for pid that becomes readable when it exits, or -1. */
int watch_process(pid_t pid);
/* 1 if the process has exited (reaping it if it is our child). */
int process_exited(pid_t pid, int pidfd, int is_child, int *status);

#endif
