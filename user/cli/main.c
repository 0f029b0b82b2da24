// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ebpfprof: profile CPython processes from the kernel with eBPF. This file
 * only picks the subcommand; each lives in its own cmd_*.c.
 *
 *   ebpfprof [record] --pid PID | -- COMMAND...   (recording is the default)
 *   ebpfprof diff BASE NEW
 *   ebpfprof dump --pid PID
 *   ebpfprof top --pid PID
 */
#include <argp.h>
#include <stdio.h>
#include <string.h>
#include "commands.h"
#include "version.h"

const char *argp_program_version = "ebpfprof " EP_VERSION;
const char *argp_program_bug_address = NULL;

struct subcommand {
	const char *name;
	int (*run)(int argc, char **argv);
};

static const struct subcommand subcommands[] = {
	{ "record", cmd_record },
	{ "diff", cmd_diff },
	{ "dump", cmd_dump },
	{ "top", cmd_top },
};

#define NSUBCOMMANDS (sizeof(subcommands) / sizeof(subcommands[0]))

static void list_subcommands(FILE *f)
{
	for (size_t i = 0; i < NSUBCOMMANDS; i++)
		fprintf(f, "%s%s", i ? ", " : "", subcommands[i].name);
}

int main(int argc, char **argv)
{
	static char argv0[64];

	argp_err_exit_status = 2;
	/* no bare word first: options of the default subcommand, or "-- COMMAND" */
	if (argc < 2 || argv[1][0] == '-')
		return cmd_record(argc, argv);
	for (size_t i = 0; i < NSUBCOMMANDS; i++) {
		if (strcmp(argv[1], subcommands[i].name))
			continue;
		/* argp prints argv[0] in its messages: "ebpfprof diff: ..." */
		snprintf(argv0, sizeof(argv0), "ebpfprof %s", subcommands[i].name);
		argv[1] = argv0;
		return subcommands[i].run(argc - 1, argv + 1);
	}
	fprintf(stderr, "ebpfprof: unknown subcommand '%s' (subcommands: ", argv[1]);
	list_subcommands(stderr);
	fprintf(stderr, "; a command to launch goes after --, as in: ebpfprof -- python3 app.py)\n");
	return 2;
}
