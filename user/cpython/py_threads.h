/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Python-level thread names (threading.current_thread().name) of a running
 * target, read from its memory only: no ptrace stop, no code injected.
 */
#ifndef EP_PY_THREADS_H
#define EP_PY_THREADS_H
#include <stdint.h>
#include <sys/types.h>
#include "py_layout.h"

struct py_thread_name {
	uint64_t ident;		/* threading.get_ident() = pthread_self() */
	char name[128];		/* UTF-8, cut at a character boundary */
	int native_id;		/* Thread._native_id (the kernel's tid), 0 if unknown */
};

/*
 * Reads threading._active (ident -> Thread) of the main interpreter at
 * interp_addr and the _name of each Thread. Returns the number filled
 * (0 if threading was never imported), or -1 if memory could not be read.
 * A thread whose entry cannot be read is left out. Never crashes on garbage.
 */
int py_thread_names(pid_t pid, const struct py_layout *L, uint64_t interp_addr,
		    struct py_thread_name *out, int max);

#endif
