// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Escaping of control characters in everything printed (see printable.h). */
#include <stdio.h>
#include <string.h>
#include "json.h"
#include "printable.h"

/* Length of the valid UTF-8 character at s that is not a C1 control
 * (U+0080..U+009F, which terminals obey as well), or 0. */
static size_t printable_utf8_len(const unsigned char *s)
{
	size_t bad, n = json_utf8_len(s, &bad);

	return n == 2 && s[0] == 0xc2 && s[1] < 0xa0 ? 0 : n;
}

char *printable(const char *s, char *out, size_t out_size)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	size_t len = 0, n, used;

	if (!out_size)
		return out;
	while (*p) {
		char piece[5];

		if (*p >= 0x20 && *p < 0x7f && *p != '\\') {
			piece[0] = *p;
			n = used = 1;
		} else if (*p >= 0x80 && (n = printable_utf8_len(p))) {
			memcpy(piece, p, n);
			used = n;
		} else {
			snprintf(piece, sizeof(piece), "\\x%02x", *p);
			n = 4;
			used = 1;
		}
		if (len + n + 1 > out_size)
			break;
		memcpy(out + len, piece, n);
		len += n;
		p += used;
	}
	out[len] = 0;
	return out;
}
