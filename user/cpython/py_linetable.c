// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Decoders of CPython's line tables, bytecode byte offset -> source line.
 *
 * The tables are copied out of a live target and may be torn, stale or not a
 * line table at all, so every decoder bounds each read by the table length,
 * makes progress of at least one byte per step (no endless loop) and keeps
 * lines in 64 bits, rejecting any that leaves the range of an int, so that a
 * hostile table cannot overflow them.
 */
#include <limits.h>
#include "py_linetable.h"

/* A line still within the range of an int, as CPython keeps it. */
static int line_in_range(int64_t line)
{
	return line >= INT_MIN && line <= INT_MAX;
}

/* Lines below 0 exist only in broken tables: report them as none. */
static int line_result(int64_t line)
{
	return line >= 0 && line <= INT_MAX ? (int)line : -1;
}

/*
 * 3.8, 3.9 co_lnotab: (unsigned byte increment, int8 line increment)
 * pairs. A pair's line increment applies from the instruction at the
 * address reached by its byte increment onwards. The table does not know
 * where the bytecode ends, so an offset past its last pair gets the last
 * line, as CPython's own PyCode_Addr2Line() answers.
 */
static int lnotab_line(const uint8_t *t, size_t len, int firstlineno,
		       uint32_t off)
{
	int64_t line = firstlineno;
	uint64_t addr = 0;
	size_t i;

	/* Always written in pairs: an odd length is not a co_lnotab. */
	if (len % 2)
		return -1;
	for (i = 0; i < len; i += 2) {
		addr += t[i];
		if (addr > off)
			break;
		line += (int8_t)t[i + 1];
		if (!line_in_range(line))
			return -1;
	}
	return line_result(line);
}

/*
 * 3.10 co_linetable: (unsigned byte length, int8 line delta) pairs, each
 * one a range following the previous one. A delta of -128 marks a range
 * without a line and leaves the running line alone; ranges of length 0
 * only move the line. Offsets past the last range have no line.
 */
static int linetable310_line(const uint8_t *t, size_t len, int firstlineno,
			     uint32_t off)
{
	int64_t line = firstlineno;
	uint64_t end = 0;
	size_t i;

	if (len % 2)
		return -1;
	for (i = 0; i < len; i += 2) {
		int8_t delta = (int8_t)t[i + 1];

		if (delta != -128) {
			line += delta;
			if (!line_in_range(line))
				return -1;
		}
		/* Ranges follow each other from 0: off is past earlier ones. */
		end += t[i];
		if (off < end)
			return delta == -128 ? -1 : line_result(line);
	}
	return -1;
}

/* 3.11+ location table: see CPython's InternalDocs/locations.md. */
enum {
	LOC_ONE_LINE0 = 10,	/* 10..12: line delta 0..2, 2 column bytes */
	LOC_NO_COLUMNS = 13,	/* svarint line delta */
	LOC_LONG = 14,		/* svarint line delta, then 3 varints */
	LOC_NONE = 15,		/* no location at all */
};

/* Read position in a location table. */
struct loc_cursor {
	const uint8_t *p;
	const uint8_t *end;
};

/*
 * Unsigned varint: 6-bit chunks, least significant first, bit 6 set on all
 * but the last. Only the first byte of an entry has bit 7 set, so meeting
 * one here means the entry is cut short. Six chunks hold any int-sized
 * line; more is garbage, and would overflow the shift besides.
 */
static int loc_varint(struct loc_cursor *c, uint64_t *out)
{
	uint64_t val = 0;
	unsigned int shift;
	uint8_t b;

	for (shift = 0; shift <= 30; shift += 6) {
		if (c->p >= c->end || (*c->p & 0x80))
			return -1;
		b = *c->p++;
		val |= (uint64_t)(b & 0x3f) << shift;
		if (!(b & 0x40)) {
			*out = val;
			return 0;
		}
	}
	return -1;
}

/* Signed varint: the magnitude shifted left by one, the sign in bit 0. */
static int loc_svarint(struct loc_cursor *c, int64_t *out)
{
	uint64_t val;

	if (loc_varint(c, &val))
		return -1;
	*out = (val & 1) ? -(int64_t)(val >> 1) : (int64_t)(val >> 1);
	return 0;
}

/* Skips n bytes of column data, which never have bit 7 set. */
static int loc_skip(struct loc_cursor *c, unsigned int n)
{
	while (n--) {
		if (c->p >= c->end || (*c->p & 0x80))
			return -1;
		c->p++;
	}
	return 0;
}

/*
 * Reads the rest of an entry of the given code (its first byte already
 * consumed) and its line delta into *delta. Returns 0, or nonzero if the
 * entry is cut short or malformed. Entries are parsed to their exact size,
 * so that a table that is not one is noticed at the first entry that does
 * not end where the next one begins.
 */
static int loc_entry_rest(struct loc_cursor *c, unsigned int code,
			  int64_t *delta)
{
	uint64_t ignored;

	*delta = 0;
	switch (code) {
	case LOC_NONE:
		return 0;
	case LOC_LONG:
		/* Then end line delta, column + 1, end column + 1: unused. */
		return loc_svarint(c, delta) || loc_varint(c, &ignored) ||
		       loc_varint(c, &ignored) || loc_varint(c, &ignored);
	case LOC_NO_COLUMNS:
		return loc_svarint(c, delta);
	case LOC_ONE_LINE0:
	case LOC_ONE_LINE0 + 1:
	case LOC_ONE_LINE0 + 2:
		*delta = code - LOC_ONE_LINE0;
		return loc_skip(c, 2);
	default:
		/* Short forms 0..9: same line, one byte of columns. */
		return loc_skip(c, 1);
	}
}

/*
 * Entries cover (first byte & 7) + 1 code units of 2 bytes each, one after
 * the other from offset 0. The line of an entry is relative to that of the
 * previous entry with a line; "no location" entries leave it alone.
 */
static int locations_line(const uint8_t *t, size_t len, int firstlineno,
			  uint32_t off)
{
	struct loc_cursor c;
	int64_t line = firstlineno;
	uint64_t end = 0;

	/* No entry covers anything; also keeps NULL + 0 out of the cursor. */
	if (!len)
		return -1;
	c.p = t;
	c.end = t + len;
	while (c.p < c.end) {
		uint8_t first = *c.p++;
		unsigned int code = (first >> 3) & 0xf;
		int64_t delta;

		if (!(first & 0x80) || loc_entry_rest(&c, code, &delta))
			return -1;
		line += delta;
		if (!line_in_range(line))
			return -1;
		end += ((first & 7) + 1) * 2;
		if (off < end)
			return code == LOC_NONE ? -1 : line_result(line);
	}
	return -1;
}

int py_linetable_line_for_offset(enum py_linetable_format fmt, const uint8_t *table,
				 size_t table_len, int firstlineno,
				 uint32_t byte_offset)
{
	if (!table)
		table_len = 0;
	switch (fmt) {
	case PY_LINETABLE_LNOTAB:
		return lnotab_line(table, table_len, firstlineno, byte_offset);
	case PY_LINETABLE_310:
		return linetable310_line(table, table_len, firstlineno,
					 byte_offset);
	case PY_LINETABLE_LOCATIONS:
		return locations_line(table, table_len, firstlineno,
				      byte_offset);
	}
	return -1;
}
