// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * JSON string escaping. Names and file names come out of the target's
 * memory and may be any bytes, so the output must be valid JSON whatever
 * the input: invalid UTF-8 becomes U+FFFD, one per maximal invalid subpart
 * (the Unicode recommendation), so a reader sees where the damage was.
 */
#include <string.h>
#include "json.h"
#include "utf8.h"

/* The UTF-8 of U+FFFD. */
#define REPLACEMENT	"\xef\xbf\xbd"

/* Longest escaped form of one input character: \u00XX. */
#define PIECE_MAX	6

/* The two-character escape JSON has for c, or NULL. */
static const char *short_escape(unsigned char c)
{
	switch (c) {
	case '"':
		return "\\\"";
	case '\\':
		return "\\\\";
	case '\b':
		return "\\b";
	case '\f':
		return "\\f";
	case '\n':
		return "\\n";
	case '\r':
		return "\\r";
	case '\t':
		return "\\t";
	}
	return NULL;
}

/*
 * Escapes the character at s into piece (not NUL-terminated). Returns the
 * piece's length and stores how many input bytes it stands for in *used.
 */
static size_t escape_one(const unsigned char *s, char *piece, size_t *used)
{
	static const char hex[] = "0123456789abcdef";
	const char *esc = short_escape(s[0]);
	size_t n, bad;
	unsigned cp;

	*used = 1;
	if (esc) {
		memcpy(piece, esc, 2);
		return 2;
	}
	n = utf8_len(s, &bad);
	if (!n) {
		*used = bad;
		memcpy(piece, REPLACEMENT, 3);
		return 3;
	}
	/* C0, DEL and C1 as \u00XX: valid JSON either way, but a file shown
	 * on a terminal (dump --json, cat) must not carry a raw CSI */
	cp = n == 1 ? s[0] : n == 2 ? ((s[0] & 0x1f) << 6 | (s[1] & 0x3f)) : 0x100;
	if (cp < 0x20 || (cp >= 0x7f && cp <= 0x9f)) {
		*used = n;
		memcpy(piece, "\\u00", 4);
		piece[4] = hex[cp >> 4];
		piece[5] = hex[cp & 0xf];
		return 6;
	}
	*used = n;
	memcpy(piece, s, n);
	return n;
}

int json_write_string(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	char buf[512];
	size_t len = 0, used;

	buf[len++] = '"';
	while (*p) {
		if (len + PIECE_MAX + 1 > sizeof(buf)) {
			if (fwrite(buf, 1, len, f) != len)
				return -1;
			len = 0;
		}
		len += escape_one(p, buf + len, &used);
		p += used;
	}
	buf[len++] = '"';
	if (fwrite(buf, 1, len, f) != len)
		return -1;
	return 0;
}

size_t json_escape(const char *s, char *out, size_t out_size)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	char piece[PIECE_MAX];
	size_t len = 0, n, used;

	if (out_size == 0)
		return 0;
	/* Not even "" fits: an empty C string says nothing false. */
	if (out_size < 3) {
		out[0] = '\0';
		return 0;
	}
	out[len++] = '"';
	while (*p) {
		n = escape_one(p, piece, &used);
		/* Keep room for the closing quote and the NUL. */
		if (len + n + 2 > out_size)
			break;
		memcpy(out + len, piece, n);
		len += n;
		p += used;
	}
	out[len++] = '"';
	out[len] = '\0';
	return len;
}
