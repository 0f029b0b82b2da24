/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * --push: each period's profile, one pprof per process, handed to a thread
 * of its own that sends it (push_http.h). The recording only encodes and
 * spools (spool.h): it never waits for the network. The thread sends the
 * oldest request first; a failure is retried after a back-off that doubles
 * from PUSH_BACKOFF_MIN_MS to PUSH_BACKOFF_MAX_MS, while later periods wait
 * in the spool behind it (in order).
 */
#ifndef EP_PUSHER_H
#define EP_PUSHER_H
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include "push_http.h"
#include "push_labels.h"
#include "spool.h"

#define PUSH_BACKOFF_MIN_MS	500
#define PUSH_BACKOFF_MAX_MS	30000
#define PUSH_SPOOL_DEFAULT_MB	64
/* At the end, what the thread may still take to send what is left. */
#define PUSH_FINAL_S		10

struct writer_options;
struct profile;

struct push_config {
	const char *url;
	const char *app;		/* NULL: each process's name */
	const char *const *tags;	/* "k=v", checked with push_tag_invalid() */
	size_t ntags;
	const char *spool_dir;		/* NULL: a temporary one */
	uint64_t spool_max_bytes;
	const char *basic_auth_file, *token_file;
	const char *ca_file;		/* NULL: the system's CA certificates */
	const char *tenant;		/* X-Scope-OrgID; NULL: none */
	unsigned rate_hz;
	int verbose;
};

/* A process's labels, kept from its first period: it may have exited by its last. */
struct push_process {
	pid_t pid;
	char app[PUSH_LABEL_VALUE_MAX + 1];
	char container[80], pod[48];
};

struct pusher {
	struct push_config cfg;
	struct push_http http;
	struct spool spool;
	char host[256];
	struct push_process *procs;
	size_t nprocs, procs_cap;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	int started, final_round;
	unsigned long submitted;	/* requests spooled: wakes an idle thread */
	unsigned long retries;
	char last_error[256];
};

/* Checks the options, reads the credentials, opens the spool: everything
 * that can be refused is refused here, before the recording. 0, or -1 with
 * a one-line reason. */
int pusher_open(struct pusher *p, const struct push_config *cfg, char *err, size_t len);
/* Starts the thread (every signal blocked in it). */
int pusher_start(struct pusher *p, char *err, size_t len);
/* One period [from_s, until_s) of wall-clock time: a request per process of
 * the profile, spooled. wo: the writer options of the period's files. */
void pusher_period(struct pusher *p, const struct profile *prof, const struct writer_options *wo,
		   double from_s, double until_s);
/* Forgets the labels noted for pid: its process ended (a new process may
 * get the pid, and a run of many processes must not keep them all). */
void pusher_forget(struct pusher *p, pid_t pid);
/* Ends the thread after one last try of what is spooled (at most
 * PUSH_FINAL_S), and closes everything. */
void pusher_stop(struct pusher *p);
/* The summary's line: sent, pending, dropped. */
void pusher_print(struct pusher *p, FILE *f);
void pusher_close(struct pusher *p);

#endif
