// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libFuzzer target of the text escapers: json_write_string() and
 * json_escape() (user/base/json.c), printable() (user/base/printable.c). Names reach
 * them from the target's memory: any bytes. Input: 2 bytes buffer size,
 * then the string (cut at its first NUL). The JSON must be one quoted
 * string without raw control characters; the printable text must have no
 * control character at all (abort otherwise).
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "json.h"
#include "printable.h"

static void check_json(const char *s, size_t n)
{
	size_t i;

	if (n < 2 || s[0] != '"' || s[n - 1] != '"')
		abort();
	for (i = 1; i + 1 < n; i++) {
		if ((unsigned char)s[i] < 0x20)
			abort();
		if (s[i] == '\\')
			i++;	/* the escaped character */
		else if (s[i] == '"')
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s, *out, *mem = NULL;
	size_t memlen = 0, n, i;
	uint16_t out_size;
	FILE *f;

	if (size < 2)
		return 0;
	memcpy(&out_size, data, 2);
	s = strndup((const char *)data + 2, size - 2);
	out = malloc(out_size ? out_size : 1);
	if (!s || !out)
		goto done;
	f = open_memstream(&mem, &memlen);
	if (!f)
		goto done;
	if (json_write_string(f, s) || fclose(f))
		abort();
	check_json(mem, memlen);
	n = json_escape(s, out, out_size);
	if (out_size >= 3)
		check_json(out, n);
	if (out_size && (n >= out_size || out[n]))
		abort();
	if (out_size) {
		printable(s, out, out_size);
		for (i = 0; out[i]; i++)
			if ((unsigned char)out[i] < 0x20 || out[i] == 0x7f)
				abort();
		if (i >= out_size)
			abort();
	}
done:
	free(mem);
	free(s);
	free(out);
	return 0;
}
