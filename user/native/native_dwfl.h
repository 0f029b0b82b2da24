/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * --native's unwinder proper, with elfutils' libdwfl: it parses the target's
 * files, so it runs only inside the cage's helper process (native_cage.h),
 * never in ebpfprof's own (the fuzzer of tests/fuzz runs it in-process).
 * Modules come from the parent (np_module), their files through file_of:
 * a descriptor the parent opened the safe way (mapped_file.h), or -1.
 */
#ifndef EP_NATIVE_DWFL_H
#define EP_NATIVE_DWFL_H
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "native_proto.h"

struct native_dwfl;
typedef int (*native_file_fn)(void *arg, uint32_t id);

/* NULL if out of memory. *progress (if not NULL) is kept at the pc being
 * worked on, so that whoever watches knows which module hangs. */
struct native_dwfl *native_dwfl_new(native_file_fn file_of, void *arg, volatile uint64_t *progress);
void native_dwfl_free(struct native_dwfl *d);
/* The process's modules now (tables of modules reported again are kept). 0 or -1. */
int native_dwfl_report(struct native_dwfl *d, const struct np_request *report);
/* As native_unwind (native_unwind.h), against the modules last reported:
 * req's sample unwound into rep->unwound, with the walk's longest step
 * (slow_us) and the pc whose caller it looked for (slow_pc). */
void native_dwfl_unwind(struct native_dwfl *d, const struct np_request *req, struct np_reply *rep);
/* The name of pc: rep->symbol filled (kind, name or start, line, time). */
void native_dwfl_symbolize(struct native_dwfl *d, uint64_t pc, struct np_reply *rep);

#endif
