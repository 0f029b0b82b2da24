/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Checks made before anything is loaded, each failing with one clear line. */
#ifndef EP_PREFLIGHT_H
#define EP_PREFLIGHT_H
#include <stddef.h>
#include <sys/types.h>

/* 0 if the kernel exposes BTF (CO-RE needs it). */
int preflight_btf(char *err, size_t errlen);
/* 0 if we have CAP_BPF, CAP_PERFMON and CAP_SYS_PTRACE (or CAP_SYS_ADMIN for the first two). */
int preflight_privileges(char *err, size_t errlen);
/* 1 if we have CAP_SYS_ADMIN: without it the kernel refuses uprobes
 * (perf_event_open of the uprobe PMU), even with CAP_PERFMON, and GC
 * pauses are then only seen by the samples. */
int preflight_sys_admin(void);
/* 0 if process pid exists. */
int preflight_pid(pid_t pid, char *err, size_t errlen);
/* 0 if a file can be created at path (checked by creating and removing a temp file beside it). */
int preflight_output(const char *path, char *err, size_t errlen);

#endif
