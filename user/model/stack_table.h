/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Stacks by id: the kernel names an off-CPU interval's stack by a hash of its
 * frames (ep_stack_id) and sends the frames once; this table keeps them,
 * symbolized as profile frame ids, per process. Its size is the number of
 * distinct stacks, not of records.
 */
#ifndef EP_STACK_TABLE_H
#define EP_STACK_TABLE_H
#include <stddef.h>
#include <stdint.h>
#include "hash_index.h"

struct stack_entry {
	int pid;
	uint64_t id;
	uint32_t *frames;	/* profile frame ids, root first */
	uint32_t nframes;
};

struct stack_table {
	struct stack_entry *v;		/* the stacks kept, in no order */
	size_t n, cap;
	struct hash_index index;	/* v by (pid, id) */
};

void stack_table_free(struct stack_table *t);
/* The stack (pid, id), or NULL. */
const struct stack_entry *stack_table_get(const struct stack_table *t, int pid, uint64_t id);
/* Adds or replaces (pid, id) with a copy of frames. 0 or -1. */
int stack_table_put(struct stack_table *t, int pid, uint64_t id, const uint32_t *frames,
		    uint32_t nframes);
/* Forgets the stack (pid, id), if kept. */
void stack_table_delete(struct stack_table *t, int pid, uint64_t id);
/* Forgets every stack of pid (its program changed: new code objects). */
void stack_table_drop_pid(struct stack_table *t, int pid);

#endif
