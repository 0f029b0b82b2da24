// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <string.h>
#include "eh_frame_hdr.h"

/* The encodings GNU ld and lld write (DW_EH_PE_*): the only ones read. */
#define PE_UDATA4		0x03
#define PE_SDATA4_PCREL		0x1b
#define PE_SDATA4_DATAREL	0x3b
#define HDR_FIXED		12	/* version, 3 encodings, eh_frame_ptr, fde_count */

static int32_t s32_at(const uint8_t *p)
{
	int32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

int eh_frame_hdr_function(const uint8_t *hdr, size_t len, uint64_t hdr_vaddr, uint64_t pc,
			  uint64_t *start)
{
	size_t lo = 0, hi, mid, count;
	uint32_t fde_count;
	const uint8_t *table = hdr + HDR_FIXED;

	if (!hdr || len < HDR_FIXED || hdr[0] != 1 || hdr[1] != PE_SDATA4_PCREL ||
	    hdr[2] != PE_UDATA4 || hdr[3] != PE_SDATA4_DATAREL)
		return -1;
	memcpy(&fde_count, hdr + 8, sizeof(fde_count));
	count = fde_count;
	/* 8 bytes an entry: (initial location, FDE address), each datarel */
	if (!count || count > (len - HDR_FIXED) / 8)
		return -1;
	if (pc < hdr_vaddr + (int64_t)s32_at(table))
		return -1;
	hi = count;	/* entries [lo, hi) hold the answer: the last start <= pc */
	while (hi - lo > 1) {
		mid = lo + (hi - lo) / 2;
		if (hdr_vaddr + (int64_t)s32_at(table + mid * 8) <= pc)
			lo = mid;
		else
			hi = mid;
	}
	*start = hdr_vaddr + (int64_t)s32_at(table + lo * 8);
	return 0;
}
