// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libFuzzer target of py_debug_offsets_parse(), the validation of a 3.13+
 * target's _Py_DebugOffsets. Input: byte 0 picks a real blob captured from
 * CPython 3.13/3.14 (tests/unit/debug_offsets_blobs.h) and the version it is
 * read as (3.13 or 3.14, so mismatches are tried too); then 9-byte records
 * (word index, u64 little-endian value) patch it. With bit 7 of byte 0 set,
 * the rest of the input is the blob itself. Whatever the blob, an accepted
 * layout must keep every read it steers inside its buffer (abort otherwise).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "ebpfprof.h"
#include "py_layout.h"
#include "debug_offsets_blobs.h"

static const unsigned char *const blobs[] = { blob_313, blob_313_trixie, blob_314, blob_314_dbg };

static void check_accepted(const struct py_layout *l)
{
	int owner = l->frame_owner < 0 ? 0 : l->frame_owner;

	if (l->frame_previous < 0 || l->frame_previous + 8 > EP_FRAME_READ_MAX ||
	    l->frame_code < 0 || l->frame_code + 8 > EP_FRAME_READ_MAX ||
	    l->frame_instr < 0 || l->frame_instr + 8 > EP_FRAME_READ_MAX ||
	    owner + 1 > EP_FRAME_READ_MAX)
		abort();
	if (l->unicode_length < 0 || l->unicode_state < 0 ||
	    l->unicode_length + 8 > l->unicode_ascii_size ||
	    l->unicode_state + 4 > l->unicode_ascii_size || l->unicode_ascii_size > 64)
		abort();
	if (l->bytes_size < 0 || l->bytes_size + 8 > l->bytes_data || l->bytes_data > 64)
		abort();
	if (l->interp_threads_head < 0 || l->interp_threads_head >= EP_NO_OFFSET - 8 ||
	    l->tstate_next < 0 || l->tstate_next >= EP_NO_OFFSET - 8 ||
	    l->runtime_interpreters_head < 0 || l->runtime_interpreters_head >= EP_NO_OFFSET - 8)
		abort();
	if (l->gil_locked < 0 || l->gil_last_holder < 0)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t words[1024 / 8];
	const struct py_layout *table;
	struct py_layout l;
	char err[128];
	size_t i;

	if (size < 1)
		return 0;
	table = py_layout_for_version(3, data[0] & 1 ? 14 : 13);
	if (!table)
		abort();
	l = *table;
	if (data[0] & 0x80) {
		/* the raw input, at its exact size: ASan sees any read past it */
		uint8_t *raw = malloc(size - 1 ? size - 1 : 1);

		if (!raw)
			return 0;
		memcpy(raw, data + 1, size - 1);
		if (py_debug_offsets_parse(raw, size - 1, &l, err, sizeof(err)) == 0)
			check_accepted(&l);
		free(raw);
		return 0;
	}
	memcpy(words, blobs[(data[0] >> 1) & 3], sizeof(words));
	for (i = 1; i + 9 <= size; i += 9) {
		uint64_t v;

		memcpy(&v, data + i + 1, 8);
		words[data[i] % (sizeof(words) / 8)] = v;
	}
	if (py_debug_offsets_parse(words, sizeof(words), &l, err, sizeof(err)) == 0)
		check_accepted(&l);
	return 0;
}
