/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The confinement of --native's helper (native_cage.h), applied to the
 * calling process for good: resource limits, an unused uid and gid of its
 * own (when root), no capability, no file system (Landlock), and a seccomp
 * filter refusing (EPERM) whatever opens a path, starts a process, or
 * reaches another one.
 */
#ifndef EP_NATIVE_SANDBOX_H
#define EP_NATIVE_SANDBOX_H

/* The helper's address space and CPU time (seconds; a new one then). */
#define NATIVE_SANDBOX_AS_MAX	(192ull << 20)
#define NATIVE_SANDBOX_CPU_S	600

/* The uids (and gids) of helpers: this plus the helper's pid modulo 65536,
 * a range no distribution hands out. */
#define NATIVE_SANDBOX_ID_BASE	0x7ffe0000u
/* Where a user namespace does not map those: its overflow id. */
#define NATIVE_SANDBOX_NOBODY	65534u

/* 0, or -1 with a reason in *why (a static string): the helper then exits. */
int native_sandbox_enter(const char **why);

#endif
