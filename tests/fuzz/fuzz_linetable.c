// clang -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -Iinclude -Iuser/{base,cpython,model,output,diff,record,live,cli} tests/fuzz/fuzz_linetable.c user/cpython/py_linetable.c -o build/fuzz_linetable
// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libFuzzer target of py_linetable_line_for_offset(). Input: 1 byte format
 * (mod 3), 4 bytes firstlineno, 4 bytes offset (both little-endian), the
 * rest the table. The table is copied to a buffer of its exact size so that
 * ASan catches a read one byte past it.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "py_linetable.h"

static uint32_t le32(const uint8_t *p)
{
	return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	enum py_linetable_format fmt;
	uint32_t offset;
	uint8_t *table;
	size_t len;
	int first, line;

	if (size < 9)
		return 0;
	fmt = (enum py_linetable_format)(data[0] % 3);
	first = (int)le32(data + 1);
	offset = le32(data + 5);
	len = size - 9;
	table = malloc(len ? len : 1);
	if (!table)
		return 0;
	memcpy(table, data + 9, len);
	line = py_linetable_line_for_offset(fmt, table, len, first, offset);
	/* The contract: a line, never below 0, or -1. */
	if (line < -1)
		abort();
	free(table);
	return 0;
}
