// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Escaping of control characters in everything printed (see printable.h). */
#include <stdio.h>
#include <string.h>
#include "printable.h"
#include "utf8.h"

/*
 * 1 for Unicode's Bidi_Control characters: U+061C, U+200E, U+200F,
 * U+202A..U+202E, U+2066..U+2069. Not terminal controls, but an override
 * in a name reorders what follows it on the line ("Trojan Source"): a
 * function could show as another, or push the file name out of sight.
 */
static int is_bidi_control(const unsigned char *s, size_t n)
{
	if (n == 2)
		return s[0] == 0xd8 && s[1] == 0x9c;
	if (n != 3 || s[0] != 0xe2)
		return 0;
	if (s[1] == 0x80)
		return s[2] == 0x8e || s[2] == 0x8f || (s[2] >= 0xaa && s[2] <= 0xae);
	return s[1] == 0x81 && s[2] >= 0xa6 && s[2] <= 0xa9;
}

/* Length of the valid UTF-8 character at s that is neither a C1 control
 * (U+0080..U+009F, which terminals obey as well) nor a bidi control, or 0. */
static size_t printable_utf8_len(const unsigned char *s)
{
	size_t bad, n = utf8_len(s, &bad);

	if (n == 2 && s[0] == 0xc2 && s[1] < 0xa0)
		return 0;
	return is_bidi_control(s, n) ? 0 : n;
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
