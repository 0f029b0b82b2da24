/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Bounded reads of another process's memory (process_vm_readv). Target
 * memory is untrusted: every read may fail and every length is capped. */
#ifndef EP_REMOTE_H
#define EP_REMOTE_H
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Reads exactly len bytes at addr; 0 on success, -1 on any failure. Only a
 * pid given to remote_track() (or this process's own) is read: any other
 * read fails. */
int remote_read(pid_t pid, uint64_t addr, void *buf, size_t len);
int remote_read_u64(pid_t pid, uint64_t addr, uint64_t *out);
int remote_read_i32(pid_t pid, uint64_t addr, int32_t *out);
/*
 * From now on, reads of pid are of the process pid names now: once it
 * exits they fail, even if another process gets the pid. A pid already
 * tracked whose process still lives keeps its pidfd (it is the same
 * process); one whose process exited is tracked anew. 0, or -1 with errno:
 * ESRCH when the process is gone already, EMFILE when remote_track_max()
 * processes are tracked already (then remote_full() is 1).
 */
int remote_track(pid_t pid);
/* Forgets pid (its process exited, or it will not be read again). */
void remote_untrack(pid_t pid);
/* 1 if pid is tracked (or is this very process) and its process lives;
 * 0 otherwise: a pid not tracked is not known to be anyone's. */
int remote_same_process(pid_t pid);
/* Processes tracked now; the most at once (each holds a descriptor: the
 * open-file limit less REMOTE_FD_RESERVE for everything else). */
size_t remote_tracked(void);
size_t remote_track_max(void);
/* 1 once a track was refused because remote_track_max() were tracked. */
int remote_full(void);
/* Descriptors left to the rest of ebpfprof (outputs, BPF maps, perf events). */
#define REMOTE_FD_RESERVE	256
/* Reads of a process that may time out (remote_reader.h) before it is not
 * read at all: each cost REMOTE_READ_TIMEOUT_NS. */
#define REMOTE_HUNG_MAX		3
/* Reads given up on so far, every process (a page that never arrived). */
unsigned long remote_timeouts(void);
/* Why reads failed so far, every process, as one line of counts (the
 * summary's, when code objects could not be read). */
void remote_why_failed(char *out, size_t len);
/* The kernel function the last read given up on waited in, or "". */
const char *remote_last_wait(void);

#endif
