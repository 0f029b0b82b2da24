/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
#ifndef EBPFPROF_COMMANDS_H
#define EBPFPROF_COMMANDS_H
#include <string.h>

/*
 * The subcommands. main() picks one by the first bare word of the command
 * line ("record" when there is none) and hands it argv with argv[0] set to
 * "ebpfprof SUBCOMMAND". Each returns the process's exit status: 0 done,
 * 1 failed at run time, 2 bad usage.
 */
int cmd_record(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_dump(int argc, char **argv);
int cmd_top(int argc, char **argv);

/* 1 if s ends with suffix (a file name with a format's ending). */
static inline int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && !strcmp(s + n - m, suffix);
}

#endif
