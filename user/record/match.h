/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * --match REGEX, the one matcher of every subcommand (record, dump, top):
 * which processes' command lines match the extended regular expression. A
 * command line is the process's arguments joined by spaces, read with a
 * bound by procfs_cmdline() (the target chooses its bytes: it is only ever
 * matched, never trusted).
 */
#ifndef EP_MATCH_H
#define EP_MATCH_H
#include <regex.h>
#include <stddef.h>
#include <sys/types.h>

#include "procfs.h"

#define MATCH_CMDLINE_MAX PROCFS_CMDLINE_MAX

struct proc_matcher {
	regex_t re;
};

/* Compiles an extended regular expression. 0, or -1 with err filled. */
int matcher_init(struct proc_matcher *m, const char *pattern, char *err, size_t errlen);
void matcher_free(struct proc_matcher *m);
/* 0 if pattern compiles, else -1 with err filled (for option parsing). */
int matcher_valid(const char *pattern, char *err, size_t errlen);
int matcher_matches(const struct proc_matcher *m, const char *cmdline);

/* Calls fn for every process in /proc (but the caller and its parent)
 * whose command line matches. -1 if /proc cannot be read. */
int matcher_scan(const struct proc_matcher *m,
		 void (*fn)(void *ctx, pid_t pid, const char *cmdline), void *ctx);

#endif
