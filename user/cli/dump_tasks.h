/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* ebpfprof dump --tasks: the asyncio tasks of a process, as text or JSON. */
#ifndef EP_DUMP_TASKS_H
#define EP_DUMP_TASKS_H
#include <stdio.h>
#include "py_target.h"

/* Prints every task of t (prepared) to f. 0, or -1 with err in one line. */
int dump_tasks(FILE *f, const struct py_target *t, int json, char *err, size_t errlen);

#endif
