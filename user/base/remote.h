/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Bounded reads of another process's memory (process_vm_readv). Target
 * memory is untrusted: every read may fail and every length is capped. */
#ifndef EP_REMOTE_H
#define EP_REMOTE_H
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Reads exactly len bytes at addr; 0 on success, -1 on any failure. */
int remote_read(pid_t pid, uint64_t addr, void *buf, size_t len);
int remote_read_u64(pid_t pid, uint64_t addr, uint64_t *out);
int remote_read_i32(pid_t pid, uint64_t addr, int32_t *out);
/* From now on, reads of pid are of the process pid names now: once it
 * exits they fail, even if another process gets the pid. 0, or -1 if the
 * process is gone already. */
int remote_track(pid_t pid);
/* 0 if pid is tracked and its process has exited; 1 otherwise. */
int remote_same_process(pid_t pid);

#endif
