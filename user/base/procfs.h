/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* What /proc tells about a target's tasks, read without stopping them. */
#ifndef EP_PROCFS_H
#define EP_PROCFS_H
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The kernel's name (comm) of task tid of process pid (tid 0: the process);
 * empty if unreadable. */
void procfs_comm(pid_t pid, pid_t tid, char *out, size_t len);
/* The task's id in the innermost PID namespace it lives in (the last NSpid
 * of its status), the id its own process knows it by; tid if unknown. */
pid_t procfs_task_inner_tid(pid_t pid, pid_t tid);
/* The one-letter state of a task (R running, S sleeping, D uninterruptible), or 0. */
char procfs_task_state(pid_t pid, pid_t tid);
/* The kernel function a sleeping task waits in (its wchan), into out; 0,
 * or -1 if unknown (running, gone, or the kernel does not say). */
int procfs_task_wchan(pid_t pid, pid_t tid, char *out, size_t len);
/* CPU time process pid has used (utime + stime), in ns; 0 if unknown. */
uint64_t procfs_cpu_ns(pid_t pid);
/* The syscall a blocked task is in, and its first argument; -1 if none. */
long procfs_task_syscall(pid_t pid, pid_t tid, uint64_t *arg0);
/* Same, with all six arguments. */
long procfs_task_syscall_args(pid_t pid, pid_t tid, uint64_t args[6]);
/* When the task last ran, on the CLOCK_MONOTONIC axis in ns (se.exec_start
 * of /proc/.../sched, moved from its CPU's task clock by that clock's lag),
 * or 0 if unknown. Briefly runs the caller on that CPU to measure the lag. */
uint64_t procfs_task_last_ran_ns(pid_t pid, pid_t tid);
/* Calls fn(tid, ctx) for each task of pid now, until fn returns nonzero.
 * -1 if the task list cannot be read (the process is gone), else 0. */
int procfs_each_task(pid_t pid, int (*fn)(pid_t tid, void *ctx), void *ctx);

/* The longest command line read (the rest is cut). */
#define PROCFS_CMDLINE_MAX 4096
/* Turns a raw /proc/PID/cmdline (NUL-separated, maybe unterminated) of n
 * bytes in buf (of at least n + 1) into one printable line, in place: NULs
 * become spaces, control bytes '?'. Returns the line's length. */
size_t cmdline_to_line(char *buf, size_t n);
/* The command line of pid, arguments joined by spaces, into buf (at most
 * len - 1 bytes, cut there): the one reader of /proc/PID/cmdline. -1 and
 * an empty buf if the process is gone or a kernel thread (empty). */
int procfs_cmdline(pid_t pid, char *buf, size_t len);
/* When pid started (field 22 of /proc/PID/stat, clock ticks since boot):
 * with the pid, names one process even after its pid is reused. 0 if gone. */
unsigned long long procfs_start_time(pid_t pid);

#endif
