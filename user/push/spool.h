/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * --push's spool: each period's request, kept on disk until the backend
 * took it, so that a backend down for a while loses nothing and the
 * recording never waits for it. One file per request, "push-PID-SEQ" (PID:
 * this ebpfprof's), holding "ebpfprof-push 1\n", the request's query string,
 * "\n" and the body; written atomically, mode 0600. The directory may be
 * shared or chosen by someone else: it must be a real directory (no
 * symlink), owned by the effective user and writable by no one else, and
 * files are opened with O_NOFOLLOW and must be regular files of ours. The
 * bound (bytes) drops the oldest requests first; every drop is counted.
 * Another ebpfprof's files are left alone while it runs; once it is gone
 * (an earlier run, a recording that crashed), spool_adopt() takes them over.
 * Thread-safe: the recording adds, the pusher thread takes.
 */
#ifndef EP_SPOOL_H
#define EP_SPOOL_H
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

struct spool_entry {
	unsigned long seq;
	size_t bytes;
};

struct spool {
	char *dir;
	int temporary;		/* made by spool_open (no --spool): removed at close */
	uint64_t max_bytes;
	pthread_mutex_t lock;
	struct spool_entry *entries;	/* oldest first */
	size_t n, cap;
	uint64_t bytes;
	unsigned long next_seq;
	unsigned long in_flight;	/* seq the pusher is sending; 0: none */
	unsigned long added, dropped, sent, rejected, failed_writes;
	unsigned long adopted;		/* left by a writer gone, taken over */
};

/* dir NULL: a private temporary directory, removed at spool_close. 0, or -1
 * with a one-line reason in err. */
int spool_open(struct spool *s, const char *dir, uint64_t max_bytes, char *err, size_t len);
/* Takes over the requests another ebpfprof left in the directory and is no
 * longer running to send (at most SPOOL_ADOPT_MAX), oldest first, ahead of
 * this run's, within the bound. Each is renamed to one of our names first:
 * two runs starting together never both send one. */
#define SPOOL_ADOPT_MAX	65536
int spool_adopt(struct spool *s);
/* Stores a request, first dropping the oldest to make room within the bound
 * (never the one being sent unless it is all there is). 0, or -1 (larger
 * than the bound alone, disk full: dropped and counted too). */
int spool_add(struct spool *s, const char *query, const void *body, size_t len);
/* The oldest request, read back into *query and *body (malloc'ed), marked
 * as in flight: 1, 0 if the spool is empty, -1 if it could not be read
 * (then dropped and counted). */
int spool_take_oldest(struct spool *s, unsigned long *seq, char **query, char **body, size_t *len);
/* The request in flight is done: delivered (sent), refused for good by the
 * backend (rejected), unreadable (dropped), or still to be sent (retry: kept). */
enum spool_outcome { SPOOL_SENT, SPOOL_REJECTED, SPOOL_UNREADABLE, SPOOL_RETRY };
void spool_done(struct spool *s, unsigned long seq, enum spool_outcome outcome);
size_t spool_pending(struct spool *s);
/* Closes; a temporary spool's files and directory are removed. */
void spool_close(struct spool *s);

#endif
