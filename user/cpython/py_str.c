// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * CPython str objects (PEP 393) to UTF-8. The characters come from target
 * memory: any values, any alignment, and a length that may not match the
 * bytes that could be read.
 */
#include <limits.h>
#include <string.h>
#include "py_str.h"
#include "utf8.h"

/*
 * PyASCIIObject.state: interned:2, kind:3, compact:1, ascii:1 from bit 0
 * in every default (GIL) build from 3.8 to 3.15. Bit 7 changed meaning
 * (ready up to 3.11, statically_allocated since 3.12) and the 24 bits
 * above are padding that CPython leaves uninitialised: neither is looked at.
 */
#define STATE_KIND_SHIFT	2
#define STATE_KIND_MASK		0x7u
#define STATE_COMPACT		(1u << 5)
#define STATE_ASCII		(1u << 6)

int py_str_parse_state(uint32_t state, struct py_str_state *out)
{
	unsigned int kind = (state >> STATE_KIND_SHIFT) & STATE_KIND_MASK;
	int ascii = !!(state & STATE_ASCII);

	memset(out, 0, sizeof(*out));
	/*
	 * Kind 0 is a legacy string that is not "ready" (<= 3.11) and has no
	 * canonical data to read; an ASCII string is always of kind 1.
	 */
	if (kind != 1 && kind != 2 && kind != 4)
		return -1;
	if (ascii && kind != 1)
		return -1;
	out->kind = kind;
	out->compact = !!(state & STATE_COMPACT);
	out->ascii = ascii;
	return 0;
}

/* Character i of the data; memcpy as target data need not be aligned. */
static uint32_t read_char(unsigned int kind, const uint8_t *data, size_t i)
{
	uint16_t c2;
	uint32_t c4;

	switch (kind) {
	case 1:
		return data[i];
	case 2:
		memcpy(&c2, data + i * 2, sizeof(c2));
		return c2;
	default:
		memcpy(&c4, data + i * 4, sizeof(c4));
		return c4;
	}
}

int py_str_to_utf8(unsigned kind, const void *data, size_t data_len,
		   size_t length, char *out, size_t out_size)
{
	/* Room for the bytes, the NUL kept aside; the count must fit an int. */
	size_t room, used = 0, i;

	if (!out || !out_size)
		return -1;
	out[0] = '\0';
	if (kind != 1 && kind != 2 && kind != 4)
		return -1;
	if (length > data_len / kind || (length && !data))
		return -1;
	room = out_size - 1 < INT_MAX ? out_size - 1 : INT_MAX;
	for (i = 0; i < length; i++) {
		uint8_t buf[4];
		size_t n = utf8_encode(read_char(kind, data, i), buf);

		/* Never half a character: cut before one that does not fit. */
		if (n > room - used)
			break;
		memcpy(out + used, buf, n);
		used += n;
	}
	out[used] = '\0';
	return (int)used;
}
