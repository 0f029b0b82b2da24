/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * --match REGEX: which processes' command lines match, read from /proc. A
 * command line is the process's arguments joined by spaces, read with a
 * bound (the target chooses its bytes: it is only ever matched, never
 * trusted).
 */
#ifndef EP_MATCH_H
#define EP_MATCH_H
#include <regex.h>
#include <stddef.h>
#include <sys/types.h>

#define MATCH_CMDLINE_MAX 4096

struct proc_matcher {
	regex_t re;
};

/* Compiles an extended regular expression. 0, or -1 with err filled. */
int matcher_init(struct proc_matcher *m, const char *pattern, char *err, size_t errlen);
void matcher_free(struct proc_matcher *m);
int matcher_matches(const struct proc_matcher *m, const char *cmdline);

/* Turns a raw /proc/PID/cmdline (NUL-separated, maybe unterminated) of n
 * bytes in buf into one printable line, in place: NULs become spaces,
 * control bytes '?'. Returns the line's length. */
size_t cmdline_to_line(char *buf, size_t n);
/* The command line of pid into buf (at most len - 1 bytes, truncated);
 * -1 if the process is gone or a kernel thread (empty command line). */
int procfs_cmdline(pid_t pid, char *buf, size_t len);

/* Calls fn for every process in /proc (but the caller and its parent)
 * whose command line matches. -1 if /proc cannot be read. */
int matcher_scan(const struct proc_matcher *m,
		 void (*fn)(void *ctx, pid_t pid, const char *cmdline), void *ctx);

#endif
