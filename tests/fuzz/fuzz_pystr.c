// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libFuzzer target of the PyUnicode reader (user/cpython/py_str.c): the state word,
 * kind and length come from the target and may be anything. Input: 4 bytes
 * state, 4 bytes length, 2 bytes output size, the rest the characters
 * (copied to a buffer of their exact size). The output must be n bytes of
 * valid UTF-8 (U+0000 included: the count tells it from the end) and a NUL,
 * within the buffer (abort otherwise).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "py_str.h"

static int valid_utf8(const unsigned char *s, size_t n)
{
	size_t i = 0, k, need;

	while (i < n) {
		unsigned char c = s[i];

		if (c < 0x80) {
			i++;
			continue;
		}
		need = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 ? 2 : 0;
		if (!need || c > 0xf4 || i + need > n)
			return 0;
		for (k = 1; k < need; k++)
			if ((s[i + k] & 0xc0) != 0x80)
				return 0;
		i += need;
	}
	return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct py_str_state st;
	uint32_t state, length;
	uint16_t out_size;
	uint8_t *chars;
	char *out;
	size_t len;
	int n;

	if (size < 10)
		return 0;
	memcpy(&state, data, 4);
	memcpy(&length, data + 4, 4);
	memcpy(&out_size, data + 8, 2);
	len = size - 10;
	chars = malloc(len ? len : 1);
	out = malloc(out_size ? out_size : 1);
	if (!chars || !out)
		goto done;
	memcpy(chars, data + 10, len);
	if (py_str_parse_state(state, &st) == 0) {
		if (st.kind != 1 && st.kind != 2 && st.kind != 4)
			abort();
		if (st.ascii && st.kind != 1)
			abort();
	} else {
		st.kind = 1 + (state & 3);	/* try invalid kinds (3) too */
	}
	n = py_str_to_utf8(st.kind, len ? chars : NULL, len, length, out, out_size);
	if (n >= 0) {
		if (!out_size || (size_t)n >= out_size || out[n] ||
		    !valid_utf8((unsigned char *)out, n))
			abort();
	}
done:
	free(chars);
	free(out);
	return 0;
}
