/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The search table of .eh_frame_hdr: the start of every function that has
 * unwind information, sorted. It names code that no symbol covers (a library
 * stripped to .dynsym keeps its static functions' CFI): the function holding
 * an address is the last table entry at or below it. The section comes from
 * the target's file and is hostile: every count and offset is checked
 * against its bytes.
 */
#ifndef EP_EH_FRAME_HDR_H
#define EP_EH_FRAME_HDR_H
#include <stddef.h>
#include <stdint.h>

/* The start of the function holding pc, from the .eh_frame_hdr section
 * (hdr, len bytes, loaded at link-time address hdr_vaddr); pc is a
 * link-time address too. 0, or -1 if the table is unusable or pc precedes it. */
int eh_frame_hdr_function(const uint8_t *hdr, size_t len, uint64_t hdr_vaddr, uint64_t pc,
			  uint64_t *start);

#endif
