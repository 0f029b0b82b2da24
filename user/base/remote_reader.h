/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Reads of another process's memory that a page which never arrives cannot
 * hold (issue 28 item 5). process_vm_readv faults the target's pages in
 * like the target would: a page backed by a userfaultfd nobody serves, or
 * by a FUSE file whose daemon never answers, leaves the reading thread in a
 * wait only SIGKILL ends. So the reads are made by a reader process of our
 * own (a fork, no exit signal, dying with us) into memory shared with it,
 * each answered within REMOTE_READ_TIMEOUT_NS or given up on: the reader
 * is then killed and left to be reaped, the pages of that read are
 * remembered as never to be read again, and the next read starts a new one.
 */
#ifndef EP_REMOTE_READER_H
#define EP_REMOTE_READER_H
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* How long one read may wait for a page: one from swap or disk takes
 * milliseconds, but a read also sleeps on the target's mmap lock while the
 * target maps or unmaps (a starting interpreter does it all the time), and
 * on a loaded host the holder may wait long for a CPU: at 250 ms a launched
 * target's first read was given up on once in a loaded test run, and the
 * recording refused. Only a reader waiting where a page may never come (a
 * userfaultfd, FUSE: its wchan) is given up on then; one waiting for a CPU,
 * a lock or I/O gets up to REMOTE_READ_GRACE times as long. */
#define REMOTE_READ_TIMEOUT_NS	(1000ull * 1000000)
#define REMOTE_READ_GRACE	4
/* Readers killed but not yet gone (a wait not even SIGKILL ends): past
 * this many, reads fail at once rather than start another. */
#define REMOTE_STUCK_MAX	8
/* The reader's name (comm), to tell it from recordings among our children. */
#define REMOTE_READER_COMM	"ebpfprof-read"
/* Ranges that timed out, remembered (the oldest forgotten first). */
#define REMOTE_BAD_RANGES	64

enum remote_reader_status {
	RR_OK = 0,		/* all len bytes read */
	RR_FAILED = -1,		/* not all read (unmapped, gone, a range that timed out before) */
	RR_TIMED_OUT = -2,	/* not answered in time */
};

/* Reads len bytes at addr of process pid into buf, through the reader. */
int remote_reader_read(pid_t pid, uint64_t addr, void *buf, size_t len);
/* Reads given up on so far (each killed a reader). */
unsigned long remote_reader_timeouts(void);
/* Reads that failed without a timeout, by why: to tell, when a whole
 * recording's frames could not be read, which way it was. */
struct remote_reader_failures {
	unsigned long refused;		/* process_vm_readv failed (last_errno) */
	unsigned long short_reads;	/* fewer bytes than asked (an unmapped page) */
	unsigned long no_reader;	/* no reader could be started */
	int last_errno;
};
void remote_reader_failures(struct remote_reader_failures *out);
/* Where the last reader given up on waited (a kernel function), or "". */
const char *remote_reader_last_wait(void);
/* Ends the reader (at exit; it also dies with its parent). */
void remote_reader_stop(void);

#endif
