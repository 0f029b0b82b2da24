/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* One Python frame as dump prints it, for the thread stacks (cmd_dump.c)
 * and the task stacks (dump_tasks.c) alike. */
#ifndef EP_DUMP_FRAMES_H
#define EP_DUMP_FRAMES_H
#include <stdio.h>
#include "py_symbolizer.h"

/* "    name (file:line)\n", the target's names made printable. */
void dump_print_frame(FILE *f, const struct py_sym_frame *fr);
/* {"function": ..., "file": ..., "line": N}, the names exact. */
void dump_json_frame(FILE *f, const struct py_sym_frame *fr);
/* "KEY": "VAL" (VAL NULL: ""). */
void dump_json_kv_str(FILE *f, const char *key, const char *val);

#endif
