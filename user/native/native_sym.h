/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What a native frame is named by, and the bounds of a native stack: shared
 * by the unwinder's two sides (native_unwind.h in ebpfprof, the cage's helper)
 * and the messages between them (native_proto.h).
 */
#ifndef EP_NATIVE_SYM_H
#define EP_NATIVE_SYM_H
#include <limits.h>
#include <stdint.h>

/* Frames of one native stack at most; deeper ones are cut at the root. */
#define NATIVE_MAX_FRAMES	256
/* Files of one process reported to the unwinder at most. */
#define NATIVE_MAX_MODULES	1024

struct native_sym {
	char name[256];		/* function, or "FILE+0xOFF", or "[unknown]" */
	char file[PATH_MAX];	/* the ELF's path as the target sees it, "" if none */
	int line;		/* from DWARF line tables, 0 if none */
	uint64_t mod_low, mod_high;	/* the module's addresses, 0 if none */
	unsigned long mod_inode;	/* its file's inode (/proc/PID/maps), 0 if none */
};

#endif
