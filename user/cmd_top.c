// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* ebpfprof top: not built yet (placeholder so the dispatcher can name it). */
#include <stdio.h>
#include "commands.h"

int cmd_top(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "ebpfprof top: not available yet in this build\n");
	return 2;
}
