/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * UTF-8 as the target hands it over: any bytes. One decoder of a character's
 * length (json.c replaces what it rejects, printable.c escapes it), and the
 * fitting of names to columns for the terminal (report.c's tables, top): a
 * cut never falls inside a character, and widths count characters, one
 * column each (no double-width or combining characters are told apart).
 */
#ifndef EP_UTF8_H
#define EP_UTF8_H
#include <stddef.h>
#include <stdint.h>

#define UTF8_REPLACEMENT	0xfffdu	/* U+FFFD, for what cannot be encoded */

/* Length of the valid UTF-8 character at s (NUL-terminated), or 0; when 0,
 * *bad is the length of the maximal invalid subpart (at least 1), so that a
 * truncated sequence counts as one character, not several. */
size_t utf8_len(const unsigned char *s, size_t *bad);
/* UTF-8 of code point c into buf (4 bytes), returning its length; a
 * surrogate or a value above U+10FFFF is written as U+FFFD. */
size_t utf8_encode(uint32_t c, uint8_t buf[4]);
/* Bytes of the character at s: an invalid one by its maximal invalid subpart. */
size_t utf8_char_bytes(const char *s);
/* Characters in s. */
size_t utf8_chars(const char *s);
/* Bytes of the longest start of s with at most max_chars characters and
 * max_bytes bytes. */
size_t utf8_prefix(const char *s, size_t max_chars, size_t max_bytes);
/* s cut to at most width characters and padded with spaces to width, into
 * out (of outlen bytes, never overrun: a short buffer cuts sooner). */
char *utf8_fit(const char *s, size_t width, char *out, size_t outlen);

#endif
