/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Decoding of CPython str objects (PEP 393: 1-, 2- and 4-byte kinds) to UTF-8. */
#ifndef EP_PY_STR_H
#define EP_PY_STR_H
#include <stddef.h>
#include <stdint.h>

/* Bits of PyASCIIObject.state (the same in 3.8 to 3.15). */
struct py_str_state {
	unsigned kind;		/* 1, 2 or 4 bytes per character */
	int compact;
	int ascii;
};

/* Decodes the low bits of the `state` word. Returns 0, or -1 if the kind is invalid. */
int py_str_parse_state(uint32_t state, struct py_str_state *out);

/*
 * Encodes `length` characters of `kind` bytes each from `data` (data_len bytes
 * available) as NUL-terminated UTF-8 into out (out_size bytes, > 0). Surrogates
 * and code points above U+10FFFF become U+FFFD. Output that does not fit is cut
 * at a character boundary. Returns the number of bytes written (without the
 * NUL), or -1 if data_len is too short for length characters.
 */
int py_str_to_utf8(unsigned kind, const void *data, size_t data_len,
		   size_t length, char *out, size_t out_size);

#endif
