// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <stdint.h>
#include <lzma.h>
#include "xz_bound.h"

/* The decoder's own memory (its dictionary) at most. */
#define XZ_DECODER_MEM	(64u << 20)

int xz_inflates_within(const void *buf, size_t len, size_t cap)
{
	lzma_stream strm = LZMA_STREAM_INIT;
	static uint8_t sink[64 << 10];
	size_t out = 0;
	lzma_ret ret;

	if (lzma_stream_decoder(&strm, XZ_DECODER_MEM, 0) != LZMA_OK)
		return -1;
	strm.next_in = buf;
	strm.avail_in = len;
	do {
		strm.next_out = sink;
		strm.avail_out = sizeof(sink);
		ret = lzma_code(&strm, LZMA_FINISH);
		out += sizeof(sink) - strm.avail_out;
	} while (ret == LZMA_OK && out <= cap);
	lzma_end(&strm);
	return out <= cap ? 0 : -1;
}
