// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libFuzzer target of --native's unwind glue (user/native/): random stack
 * bytes and registers unwound against real modules (this process's own, as
 * libdwfl finds them through /proc/self/maps and the safe open), every pc
 * symbolized; and .eh_frame_hdr's search table parsed from the same bytes.
 * The input: 8 bytes choose the pc (an offset into this very function, so the
 * CFI lookup starts in real code), 8 the frame pointer, the rest is the stack.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "eh_frame_hdr.h"
#include "native_unwind.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct native_unwinder *u;
	uint64_t regs[17] = { 0 }, pcs[NATIVE_MAX_FRAMES], pick, bp, start;
	struct native_sym sym;
	int n, i;

	if (!u)
		u = native_unwinder_new(getpid());
	if (!u || size < 16)
		return 0;
	eh_frame_hdr_function(data, size, 0x1000, (uint64_t)data[0] << 12 | data[1], &start);
	memcpy(&pick, data, 8);
	memcpy(&bp, data + 8, 8);
	regs[16] = (uint64_t)(uintptr_t)LLVMFuzzerTestOneInput + pick % 512;
	/* rsp: where the stack copy would sit in the target (any address: it
	 * is only compared, never dereferenced) */
	regs[7] = 0x7ffd00000000ull + (pick >> 20 & 0xfff8);
	regs[6] = bp;
	n = native_unwind(u, getpid(), regs, data + 16, size - 16, pcs, NATIVE_MAX_FRAMES, NULL);
	if (n < 0 || n > NATIVE_MAX_FRAMES)
		abort();
	for (i = 0; i < n; i++)
		if (native_symbolize(u, pcs[i], &sym) == 0 && !memchr(sym.name, 0, sizeof(sym.name)))
			abort();
	return 0;
}
