/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* JSON string output shared by the writers. */
#ifndef EP_JSON_H
#define EP_JSON_H
#include <stdio.h>
#include <stddef.h>

/*
 * Writes s (bytes, assumed UTF-8) as a quoted JSON string: escapes " \ and
 * control characters, and replaces invalid UTF-8 sequences by U+FFFD so the
 * output is always valid JSON. Returns 0, or -1 on a write error.
 */
int json_write_string(FILE *f, const char *s);

/* Same, into a buffer: the escaped, quoted string, NUL-terminated, cut to fit
 * at a character boundary with the closing quote kept. Returns its length. */
size_t json_escape(const char *s, char *out, size_t out_size);


#endif
