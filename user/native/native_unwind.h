/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * --native: C and C++ frames of a sample, unwound in userspace from the
 * registers and the copy of the user stack the kernel took (perf's way), with
 * elfutils' libdwfl: .eh_frame (and .debug_frame) CFI where the code has it,
 * frame pointers where it has none. The target's files are opened the safe way
 * (mapped_file.h) here, and parsed only in the cage's helper process
 * (native_cage.h), which gets their descriptors; nothing is read from the
 * target's memory but the stack copy. Symbols from .symtab, else .dynsym;
 * a function with neither is named by its CFI entry ("libz.so.1+0x3a40"),
 * and one in a file the helper was lost in by its offset.
 */
#ifndef EP_NATIVE_UNWIND_H
#define EP_NATIVE_UNWIND_H
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "native_sym.h"

struct native_unwinder;

/* An unwinder for process pid (held by remote.h's pidfd elsewhere). NULL if
 * out of memory. Files are opened when first needed. */
struct native_unwinder *native_unwinder_new(pid_t pid);
void native_unwinder_free(struct native_unwinder *u);
/*
 * Unwinds a sample of thread tid: regs in DWARF order (rax, rdx, rcx, rbx, rsi,
 * rdi, rbp, rsp, r8-r15, rip) and len bytes of its stack copied from rsp.
 * Fills pcs innermost first (the interrupted pc, then each return address
 * less one, inside its call); returns how many (at most max, 0 if none).
 * *complete (if not NULL) says whether the walk reached the thread's first
 * frame, rather than the end of the copy or of the unwind information.
 */
int native_unwind(struct native_unwinder *u, pid_t tid, const uint64_t *regs,
		  const uint8_t *stack, size_t len, uint64_t *pcs, int max, int *complete);
/* Names the code at pc (one of native_unwind's): 0, or -1 when no file maps it. */
int native_symbolize(struct native_unwinder *u, uint64_t pc, struct native_sym *out);

#endif
