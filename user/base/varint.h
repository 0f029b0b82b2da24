/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* LEB128 varints (protobuf's, and the sample log's): 7 bits a byte, low
 * first, the high bit set on every byte but the last. */
#ifndef EP_VARINT_H
#define EP_VARINT_H
#include <stdint.h>

#define VARINT_MAX	10	/* bytes of a uint64_t at most */

/* Writes v at p (VARINT_MAX bytes room); returns the byte after it. */
static inline uint8_t *varint_put(uint8_t *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t)v;
	return p;
}

/* Reads one at p, written by varint_put (the caller's own bytes: not
 * checked for length); returns the byte after it. */
static inline const uint8_t *varint_get(const uint8_t *p, uint64_t *v)
{
	unsigned shift = 0;

	*v = 0;
	do {
		*v |= (uint64_t)(*p & 0x7f) << shift;
		shift += 7;
	} while (*p++ & 0x80);
	return p;
}

#endif
