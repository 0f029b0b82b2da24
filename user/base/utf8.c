// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* UTF-8 decoding and column fitting (see utf8.h). */
#include <string.h>
#include "utf8.h"

static int is_cont(unsigned char c)
{
	return (c & 0xc0) == 0x80;
}

size_t utf8_len(const unsigned char *s, size_t *bad)
{
	unsigned char c = s[0];
	unsigned char lo = 0x80, hi = 0xbf;	/* allowed range of byte 2 */
	size_t need, i;

	*bad = 1;
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		need = 2;
	} else if (c >= 0xe0 && c <= 0xef) {
		need = 3;
		if (c == 0xe0)
			lo = 0xa0;	/* overlong */
		else if (c == 0xed)
			hi = 0x9f;	/* UTF-16 surrogates */
	} else if (c >= 0xf0 && c <= 0xf4) {
		need = 4;
		if (c == 0xf0)
			lo = 0x90;	/* overlong */
		else if (c == 0xf4)
			hi = 0x8f;	/* above U+10FFFF */
	} else {
		return 0;	/* continuation byte, C0, C1 or F5..FF */
	}
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (i = 2; i < need; i++) {
		if (!is_cont(s[i])) {
			*bad = i;
			return 0;
		}
	}
	return need;
}

/*
 * UTF-8 of code point c into buf (see utf8.h). A Python str may hold lone
 * surrogates, which UTF-8 cannot carry, and a torn read may give values
 * above U+10FFFF: both become U+FFFD.
 */
size_t utf8_encode(uint32_t c, uint8_t buf[4])
{
	if ((c >= 0xd800 && c <= 0xdfff) || c > 0x10ffff)
		c = UTF8_REPLACEMENT;
	if (c < 0x80) {
		buf[0] = c;
		return 1;
	}
	if (c < 0x800) {
		buf[0] = 0xc0 | c >> 6;
		buf[1] = 0x80 | (c & 0x3f);
		return 2;
	}
	if (c < 0x10000) {
		buf[0] = 0xe0 | c >> 12;
		buf[1] = 0x80 | (c >> 6 & 0x3f);
		buf[2] = 0x80 | (c & 0x3f);
		return 3;
	}
	buf[0] = 0xf0 | c >> 18;
	buf[1] = 0x80 | (c >> 12 & 0x3f);
	buf[2] = 0x80 | (c >> 6 & 0x3f);
	buf[3] = 0x80 | (c & 0x3f);
	return 4;
}

size_t utf8_char_bytes(const char *s)
{
	size_t bad, n = utf8_len((const unsigned char *)s, &bad);

	return n ? n : bad;
}

size_t utf8_chars(const char *s)
{
	size_t chars = 0;

	for (; *s; s += utf8_char_bytes(s))
		chars++;
	return chars;
}

size_t utf8_prefix(const char *s, size_t max_chars, size_t max_bytes)
{
	size_t n = 0, chars = 0, len;

	while (s[n] && chars < max_chars && n + (len = utf8_char_bytes(s + n)) <= max_bytes) {
		n += len;
		chars++;
	}
	return n;
}

char *utf8_fit(const char *s, size_t width, char *out, size_t outlen)
{
	size_t n, chars;

	if (!outlen)
		return out;
	n = utf8_prefix(s, width, outlen - 1);
	memcpy(out, s, n);
	out[n] = 0;
	for (chars = utf8_chars(out); chars < width && n + 1 < outlen; chars++)
		out[n++] = ' ';
	out[n] = 0;
	return out;
}
