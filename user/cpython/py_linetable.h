/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Decoders of CPython's code-object line tables: bytecode offset -> line.
 * Inputs come from target memory: any length, any content, never trusted. */
#ifndef EP_PY_LINETABLE_H
#define EP_PY_LINETABLE_H
#include <stddef.h>
#include <stdint.h>

enum py_linetable_format {
	PY_LINETABLE_LNOTAB = 0,	/* 3.8, 3.9: co_lnotab (byte incr, signed line incr) pairs */
	PY_LINETABLE_310 = 1,		/* 3.10: co_linetable (byte delta, line delta; -128 none) */
	PY_LINETABLE_LOCATIONS = 2,	/* 3.11+: co_linetable location table (varint entries) */
};

/*
 * Line of the instruction at byte offset `byte_offset` of the code object's
 * bytecode, given co_firstlineno and the raw table. Returns the line (>= 0)
 * or -1 when the table says the instruction has no line or the table is
 * malformed or ends before the offset.
 */
int py_linetable_line_for_offset(enum py_linetable_format fmt, const uint8_t *table,
				 size_t table_len, int firstlineno,
				 uint32_t byte_offset);

#endif
